// Job routes: listing with filters and paging, one job with its events and
// progress, CANCEL / RESOLVE / WAIT, and a job's progress as server-sent
// events. Each runs the matching SQL statement as the caller, so a job the
// caller may not see reads exactly like a missing one.
#include <thread>

#include "server/api_internal.h"
#include "vigil/common/cancellation.h"
#include "vigil/jobs/job_state.h"

namespace vigil::server {

namespace {

constexpr int kMaxJobPage = 1000;
constexpr std::chrono::milliseconds kEventPoll{250};
constexpr std::chrono::seconds kEventKeepAlive{15};

// The job listing's SELECT for the request's filters (values as SQL literals).
Result<std::string> ListingSql(const HttpRequest& req, int64_t after, int64_t limit) {
  std::string where = "JobId > " + std::to_string(after);
  for (const auto& [param, column] : {std::pair<std::string_view, std::string_view>{"state", "State"},
                                      {"database", "DatabaseName"},
                                      {"table", "TableName"},
                                      {"index", "IndexName"},
                                      {"outcome", "Outcome"}}) {
    if (std::optional<std::string> v = req.Query(param)) {
      VIGIL_ASSIGN_OR_RETURN(std::string lit, SqlString(*v));
      where += " AND " + std::string(column) + " = " + lit;
    }
  }
  return "SELECT * FROM vigil_index_jobs WHERE " + where + " ORDER BY JobId LIMIT " + std::to_string(limit);
}

// A job listing request: its SELECT and page size.
struct Listing {
  std::string sql;
  int64_t limit = 100;
};

Result<Listing> ParseListing(const HttpRequest& req) {
  VIGIL_ASSIGN_OR_RETURN(const int64_t after, IntQuery(req, "after", 0, 0, INT64_MAX / 2));
  Listing l;
  VIGIL_ASSIGN_OR_RETURN(l.limit, IntQuery(req, "limit", 100, 1, kMaxJobPage));
  VIGIL_ASSIGN_OR_RETURN(l.sql, ListingSql(req, after, l.limit));
  return l;
}

// {"jobs": [...], "next_after": the last id when the page is full, else null}.
nlohmann::json ListingPage(const sql::ResultSet& r, int64_t limit) {
  nlohmann::json jobs = RowObjects(r);
  nlohmann::json next = nullptr;
  if (static_cast<int64_t>(jobs.size()) == limit) next = jobs.back()["JobId"];
  return nlohmann::json{{"jobs", std::move(jobs)}, {"next_after", next}};
}

std::string SseEvent(std::string_view event, const std::string& data) {
  return "event: " + std::string(event) + "\ndata: " + data + "\n\n";
}

// One job's detail (SHOW INDEX JOB's Item / Value rows) as JSON for `who`:
// {"job": {Item: Value...}, "events": ["..."], "warnings": ["..."], "may_alter": bool}, where
// may_alter says whether `who` holds ALTER on the job's table (CANCEL and RESOLVE need it).
nlohmann::json JobDetail(const sql::ResultSet& r, const auth::Principal& who) {
  nlohmann::json job = nlohmann::json::object();
  nlohmann::json events = nlohmann::json::array();
  const nlohmann::json rows = RowObjects(r);
  for (const nlohmann::json& row : rows) {
    if (!row.contains("Item") || !row["Item"].is_string()) continue;
    const std::string item = row["Item"].get<std::string>();
    if (item.rfind("Event ", 0) == 0) {
      events.push_back(row["Value"]);
    } else if (item != "Warning") {
      job[item] = row["Value"];
    }
  }
  const auto text = [&job](const char* item) {
    return job.contains(item) && job[item].is_string() ? job[item].get<std::string>() : std::string();
  };
  const bool may_alter = who.Has(auth::Privilege::kAlter, text("CatalogName"), text("DatabaseName"), text("TableName"));
  // What each resolution warns of, from the job store's own wording, to show before confirming.
  jobs::JobRecord record;
  record.job_id = job.contains("JobId") && job["JobId"].is_number_integer() ? job["JobId"].get<int64_t>() : 0;
  record.spec.index_name = text("IndexName");
  record.spec.table_name = text("TableName");
  nlohmann::json resolve_warnings = {{"ACKNOWLEDGED", nlohmann::json::array()},
                                     {"FORCE_RELEASE", jobs::ForceWarnings(record, false)},
                                     {"FORCE_RELEASE_WITHOUT_REFRESH", jobs::ForceWarnings(record, true)}};
  // The job-state vocabulary, from the job store's own rules, so no client spells it again:
  // `final` (WAIT returns), `settled` (nothing can change it any more: streams end there).
  const bool final = jobs::IsFinalStateName(text("State"));
  const bool settled = jobs::IsSettledStateName(text("State"), text("Disposition"));
  return {{"job", std::move(job)},
          {"final", final},
          {"settled", settled},
          {"events", std::move(events)},
          {"warnings", r.warnings},
          {"may_alter", may_alter},
          {"resolve_warnings", std::move(resolve_warnings)}};
}

// A user may hold at most half of the server's event streams (at least one).
int64_t StreamShare(int64_t max_streams) { return std::max<int64_t>(1, max_streams / 2); }

}  // namespace

HttpResponse ApiServer::Impl::EventStream(
    const Call& call, std::function<Result<std::pair<std::string, bool>>(const auth::Principal&)> poll,
    std::string event) {
  const int64_t max_streams = static_cast<int64_t>(config_.server.sse_max_subscribers);
  const std::string user = UserKeyRealm({call.caller.realm, call.caller.principal.name, call.caller.incarnation});
  {
    MutexLock lock(&sse_mu_);
    if (sse_subscribers_ >= max_streams) {
      return ProblemResponse(Status::Busy("too many event streams are open (" + std::to_string(max_streams) +
                                          ", [server] sse_max_subscribers)"));
    }
    if (sse_by_user_[user] >= StreamShare(max_streams)) {
      return ProblemResponse(Status::Busy(
          "user " + call.caller.principal.name + " has " + std::to_string(StreamShare(max_streams)) +
          " event streams open, its share (half of [server] sse_max_subscribers = " + std::to_string(max_streams) +
          "); close one first"));
    }
    ++sse_subscribers_;
    ++sse_by_user_[user];
  }
  HttpResponse resp;
  resp.headers.emplace_back("Content-Type", "text/event-stream");
  resp.stream = [this, poll = std::move(poll), event = std::move(event), user, start = call.caller,
                 token = std::string(call.token)](ChunkSink& sink) -> Status {
    struct Release {
      Impl* impl;
      const std::string& user;
      ~Release() {
        MutexLock lock(&impl->sse_mu_);
        --impl->sse_subscribers_;
        if (--impl->sse_by_user_[user] == 0) impl->sse_by_user_.erase(user);
      }
    } release{this, user};
    std::string last;
    Env* env = options_.env;
    const int64_t keep_alive_ms = std::chrono::duration_cast<std::chrono::milliseconds>(kEventKeepAlive).count();
    int64_t since_write_ms = env->MonotonicMs();
    while (!sink.Stopping() && CheckCancellation().ok()) {
      auth::Authenticated now;
      if (std::optional<HttpResponse> lost = RightsLost(token, start, &now)) {
        return sink.Write(SseEvent("revoked", lost->body));
      }
      Result<std::pair<std::string, bool>> polled = poll(now.principal);
      if (!polled.ok()) return sink.Write(SseEvent("error", ProblemResponse(polled.status()).body));
      const auto& [data, final] = *polled;
      if (data != last) {
        VIGIL_RETURN_IF_ERROR(sink.Write(SseEvent(event, data)));
        last = data;
        since_write_ms = env->MonotonicMs();
        if (final) return sink.Write(SseEvent("end", data));
      } else if (env->MonotonicMs() - since_write_ms > keep_alive_ms) {
        VIGIL_RETURN_IF_ERROR(sink.Write(": keep-alive\n\n"));
        since_write_ms = env->MonotonicMs();
      }
      env->SleepForMs(kEventPoll.count());
    }
    return Status::OK();
  };
  return resp;
}

void ApiServer::Impl::AddJobRoutes() {
  Add({"GET", "/v1/jobs", false, false, false, [this](Call& call) {
         Result<Listing> listing = ParseListing(call.req);
         if (!listing.ok()) return ProblemResponse(listing.status());
         Result<sql::ResultSet> r = RunSql(call, listing->sql);
         if (!r.ok()) return ProblemResponse(r.status());
         return JsonResponse(ListingPage(*r, listing->limit).dump());
       }});

  // The listing as server-sent events: a `jobs` event with the page whenever it changes
  // (polled every 250 ms as the caller), keep-alive comments in between.
  Add({"GET", "/v1/jobs/stream", false, false, false, [this](Call& call) {
         Result<Listing> listing = ParseListing(call.req);
         if (!listing.ok()) return ProblemResponse(listing.status());
         if (Result<sql::ResultSet> first = RunSql(call, listing->sql); !first.ok()) {
           return ProblemResponse(first.status());
         }
         return EventStream(
             call,
             [this, listing = *listing](const auth::Principal& who) -> Result<std::pair<std::string, bool>> {
               VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, sessions_->Acquire(who, kSessionWait));
               VIGIL_ASSIGN_OR_RETURN(sql::ResultSet r, session->Execute(listing.sql));
               return std::make_pair(ListingPage(r, listing.limit).dump(), false);
             },
             "jobs");
       }});

  Add({"GET", "/v1/jobs/{id}", false, false, false, [this](Call& call) {
         Result<int64_t> id = JobIdParam(call);
         if (!id.ok()) return ProblemResponse(id.status());
         Result<sql::ResultSet> r = RunSql(call, "SHOW INDEX JOB " + std::to_string(*id));
         if (!r.ok()) return ProblemResponse(r.status());
         return JsonResponse(
             JobDetail(*r, call.caller.principal).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
       }});

  Add({"POST", "/v1/jobs/{id}/cancel", false, true, true, [this](Call& call) {
         Result<int64_t> id = JobIdParam(call);
         if (!id.ok()) return ProblemResponse(id.status());
         Result<sql::ResultSet> r = RunSql(call, "CANCEL INDEX JOB " + std::to_string(*id));
         if (!r.ok()) return ProblemResponse(r.status());
         return JsonResponse(ResultJson(*r).dump());
       }});

  Add({"POST", "/v1/jobs/{id}/resolve", false, true, true, [this](Call& call) {
         Result<int64_t> id = JobIdParam(call);
         if (!id.ok()) return ProblemResponse(id.status());
         Result<nlohmann::json> body = JsonBody(call);
         if (!body.ok()) return ProblemResponse(body.status());
         const nlohmann::json action_field = body->value("action", nlohmann::json());
         const std::string action = action_field.is_string() ? action_field.get<std::string>() : "";
         if (body->contains("comment") && !(*body)["comment"].is_string()) {
           return ProblemResponse(400, "INVALID_ARGUMENT", "comment must be a string");
         }
         const std::string comment = body->value("comment", "");
         std::string as;
         if (action == "ACKNOWLEDGED")
           as = "ACKNOWLEDGED";
         else if (action == "FORCE_RELEASE")
           as = "FORCE_RELEASE";
         else if (action == "FORCE_RELEASE_WITHOUT_REFRESH")
           as = "FORCE_RELEASE WITHOUT REFRESH";
         else {
           return ProblemResponse(400, "INVALID_ARGUMENT",
                                  "action must be ACKNOWLEDGED, FORCE_RELEASE or FORCE_RELEASE_WITHOUT_REFRESH");
         }
         Result<std::string> note = SqlString(comment);
         if (!note.ok()) return ProblemResponse(note.status());
         Result<sql::ResultSet> r =
             RunSql(call, "RESOLVE INDEX JOB " + std::to_string(*id) + " AS " + as + " COMMENT " + *note);
         if (!r.ok()) return ProblemResponse(r.status());
         return JsonResponse(
             JobDetail(*r, call.caller.principal).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
       }});

  Add({"POST", "/v1/jobs/{id}/wait", false, false, false, [this](Call& call) {
         Result<int64_t> id = JobIdParam(call);
         Result<int64_t> timeout = IntQuery(call.req, "timeout_s", 30, 0, 3600);
         if (!id.ok()) return ProblemResponse(id.status());
         if (!timeout.ok()) return ProblemResponse(timeout.status());
         Result<sql::ResultSet> r =
             RunSql(call, "WAIT INDEX JOB " + std::to_string(*id) + " TIMEOUT " + std::to_string(*timeout));
         if (!r.ok()) return ProblemResponse(r.status());
         Result<sql::ResultSet> detail = RunSql(call, "SHOW INDEX JOB " + std::to_string(*id));
         if (!detail.ok()) return ProblemResponse(detail.status());
         return JsonResponse(
             JobDetail(*detail, call.caller.principal).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
       }});

  Add({"GET", "/v1/jobs/{id}/events", false, false, false, [this](Call& call) {
         Result<int64_t> id = JobIdParam(call);
         if (!id.ok()) return ProblemResponse(id.status());
         // Visible (or the same NOT_FOUND as a missing job) before the stream starts.
         Result<sql::ResultSet> first = RunSql(call, "SHOW INDEX JOB " + std::to_string(*id));
         if (!first.ok()) return ProblemResponse(first.status());
         const int64_t job = *id;
         return EventStream(
             call,
             [this, job](const auth::Principal& who) -> Result<std::pair<std::string, bool>> {
               VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, sessions_->Acquire(who, kSessionWait));
               VIGIL_ASSIGN_OR_RETURN(sql::ResultSet r, session->Execute("SHOW INDEX JOB " + std::to_string(job)));
               const nlohmann::json detail = JobDetail(r, who);
               return std::make_pair(detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                     detail["settled"].get<bool>());
             },
             "job");
       }});
}

}  // namespace vigil::server

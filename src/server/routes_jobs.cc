// Job routes: listing with filters and paging, one job with its events and
// progress, CANCEL / RESOLVE / WAIT, and a job's progress as server-sent
// events. Each goes through the caller's session: a job comes back typed
// (Session::ShowJob, ResolveJob) under SHOW INDEX JOB's rules, so a job the
// caller may not see reads exactly like a missing one; the listing is one SELECT
// on vigil_index_jobs with the filters bound as parameters. Every job JSON
// carries the state vocabulary of jobs/job_state.h (`final`, `settled`,
// `holds_fence`, `resolvable`), so no client spells the states again.
#include <thread>

#include "server/api_internal.h"
#include "vigil/common/cancellation.h"
#include "vigil/jobs/job_state.h"
#include "vigil/sql/job_detail.h"

namespace vigil::server {

namespace {

constexpr int kMaxJobPage = 1000;
constexpr std::chrono::milliseconds kEventPoll{250};
constexpr std::chrono::seconds kEventKeepAlive{15};

// A job listing request: its SELECT, the values bound to it and the page size.
struct Listing {
  std::string sql;
  std::vector<sql::Value> params;
  int64_t limit = 100;
};

// The listing's SELECT for the request's filters, each value bound as a parameter.
Result<Listing> ParseListing(const HttpRequest& req) {
  VIGIL_ASSIGN_OR_RETURN(const int64_t after, IntQuery(req, "after", 0, 0, INT64_MAX / 2));
  Listing l;
  VIGIL_ASSIGN_OR_RETURN(l.limit, IntQuery(req, "limit", 100, 1, kMaxJobPage));
  std::string where = "JobId > ?";
  l.params.emplace_back(after);
  for (const auto& [param, column] : {std::pair<std::string_view, std::string_view>{"state", "State"},
                                      {"database", "DatabaseName"},
                                      {"table", "TableName"},
                                      {"index", "IndexName"},
                                      {"outcome", "Outcome"}}) {
    if (std::optional<std::string> v = req.Query(param)) {
      where += " AND " + std::string(column) + " = ?";
      l.params.emplace_back(*v);
    }
  }
  l.sql = "SELECT * FROM vigil_index_jobs WHERE " + where + " ORDER BY JobId LIMIT ?";
  l.params.emplace_back(l.limit);
  return l;
}

std::string StringItem(const nlohmann::json& o, const char* key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
}

// {"jobs": [...], "next_after": the last id when the page is full, else null}; each job
// with its vocabulary flags (from its State and Disposition).
nlohmann::json ListingPage(const sql::ResultSet& r, int64_t limit) {
  nlohmann::json jobs = RowObjects(r);
  for (nlohmann::json& job : jobs) {
    const std::string state = StringItem(job, "State"), disposition = StringItem(job, "Disposition");
    job["final"] = jobs::IsFinalStateName(state);
    job["holds_fence"] = jobs::HoldsFenceStateName(state, disposition);
    job["resolvable"] = jobs::IsResolvableStateName(state, disposition);
  }
  nlohmann::json next = nullptr;
  if (static_cast<int64_t>(jobs.size()) == limit) next = jobs.back()["JobId"];
  return nlohmann::json{{"jobs", std::move(jobs)}, {"next_after", next}};
}

std::string SseEvent(std::string_view event, const std::string& data) {
  return "event: " + std::string(event) + "\ndata: " + data + "\n\n";
}

// What each resolution warns of, from the job store's own wording, to show before confirming.
nlohmann::json ResolveWarnings(const jobs::JobRecord& job) {
  return {{"ACKNOWLEDGED", nlohmann::json::array()},
          {"FORCE_RELEASE", jobs::ForceWarnings(job, false)},
          {"FORCE_RELEASE_WITHOUT_REFRESH", jobs::ForceWarnings(job, true)}};
}

// One job's detail as JSON for `who`: {"job": {Item: Value...}, "events": ["..."], "warnings":
// ["..."], "may_alter": bool, "resolve_warnings": {...}} with the job-state vocabulary: `final`
// (WAIT returns), `settled` (nothing can change it any more: streams end there), `holds_fence`
// and `resolvable` (a RESOLVE would be taken). may_alter says whether `who` holds ALTER on the
// job's table (CANCEL and RESOLVE need it).
nlohmann::json JobJson(const jobs::JobDetail& d, const auth::Principal& who) {
  nlohmann::json job = nlohmann::json::object();
  for (const sql::JobItem& item : sql::JobDetailItems(d)) job[item.name] = ValueJson(item.value);
  nlohmann::json events = nlohmann::json::array();
  for (const jobs::JobEvent& e : d.events) events.push_back(sql::JobEventText(e));
  const jobs::JobSpec& s = d.job.spec;
  const jobs::JobState& state = d.job.state;
  return {{"job", std::move(job)},
          {"final", jobs::IsFinal(state)},
          {"settled", jobs::IsSettledStateName(jobs::DerivedState(state), jobs::Name(state.disposition))},
          {"holds_fence", jobs::HoldsFence(state)},
          {"resolvable", jobs::IsResolvable(state)},
          {"events", std::move(events)},
          {"warnings", d.warnings},
          {"may_alter", who.Has(auth::Privilege::kAlter, s.catalog_name, s.database_name, s.table_name)},
          {"resolve_warnings", ResolveWarnings(d.job)}};
}

std::string Dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// The job `id` as `who` may see it, as JSON.
Result<nlohmann::json> ShowJob(ApiServer::Impl& api, const auth::Principal& who, int64_t id) {
  VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, api.SessionOf(who));
  VIGIL_ASSIGN_OR_RETURN(jobs::JobDetail d, session->ShowJob(id));
  return JobJson(d, who);
}

// A RESOLVE request's action ("ACKNOWLEDGED", "FORCE_RELEASE", "FORCE_RELEASE_WITHOUT_REFRESH").
Result<jobs::ResolveAction> ResolveActionOf(const nlohmann::json& body) {
  const nlohmann::json field = body.value("action", nlohmann::json());
  const std::string action = field.is_string() ? field.get<std::string>() : "";
  if (action == "ACKNOWLEDGED") return jobs::ResolveAction::kAcknowledge;
  if (action == "FORCE_RELEASE") return jobs::ResolveAction::kForceRelease;
  if (action == "FORCE_RELEASE_WITHOUT_REFRESH") return jobs::ResolveAction::kForceReleaseWithoutRefresh;
  return Status::InvalidArgument("action must be ACKNOWLEDGED, FORCE_RELEASE or FORCE_RELEASE_WITHOUT_REFRESH");
}

// A RESOLVE request's comment: a string without control characters but tab and newline.
Result<std::string> ResolveComment(const nlohmann::json& body) {
  if (body.contains("comment") && !body["comment"].is_string()) {
    return Status::InvalidArgument("comment must be a string");
  }
  std::string comment = body.value("comment", "");
  for (char c : comment) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
      return Status::InvalidArgument("a text value contains a control character");
    }
  }
  return comment;
}

HttpResponse ListJobs(ApiServer::Impl& api, Call& call) {
  Result<Listing> listing = ParseListing(call.req);
  if (!listing.ok()) return ProblemResponse(listing.status());
  Result<sql::ResultSet> r = [&]() -> Result<sql::ResultSet> {
    VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, api.SessionOf(call.caller.principal));
    return session->Select(listing->sql, listing->params);
  }();
  if (!r.ok()) return ProblemResponse(r.status());
  return JsonResponse(ListingPage(*r, listing->limit).dump());
}

// The listing as server-sent events: a `jobs` event with the page whenever it changes
// (polled every 250 ms as the caller), keep-alive comments in between.
HttpResponse StreamJobs(ApiServer::Impl& api, Call& call) {
  Result<Listing> listing = ParseListing(call.req);
  if (!listing.ok()) return ProblemResponse(listing.status());
  const auto page = [&api, listing = *listing](const auth::Principal& who) -> Result<std::pair<std::string, bool>> {
    VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, api.SessionOf(who));
    VIGIL_ASSIGN_OR_RETURN(sql::ResultSet r, session->Select(listing.sql, listing.params));
    return std::make_pair(ListingPage(r, listing.limit).dump(), false);
  };
  if (Result<std::pair<std::string, bool>> first = page(call.caller.principal); !first.ok()) {
    return ProblemResponse(first.status());
  }
  return api.EventStream(call, page, "jobs");
}

HttpResponse GetJob(ApiServer::Impl& api, Call& call) {
  Result<int64_t> id = JobIdParam(call);
  if (!id.ok()) return ProblemResponse(id.status());
  Result<nlohmann::json> job = ShowJob(api, call.caller.principal, *id);
  return job.ok() ? JsonResponse(Dump(*job)) : ProblemResponse(job.status());
}

HttpResponse CancelJob(ApiServer::Impl& api, Call& call) {
  Result<int64_t> id = JobIdParam(call);
  if (!id.ok()) return ProblemResponse(id.status());
  Result<sql::ResultSet> r = api.RunStatement(call, sql::CancelIndexJobStatement{*id});
  return r.ok() ? JsonResponse(ResultJson(*r).dump()) : ProblemResponse(r.status());
}

HttpResponse ResolveJob(ApiServer::Impl& api, Call& call) {
  Result<int64_t> id = JobIdParam(call);
  if (!id.ok()) return ProblemResponse(id.status());
  Result<nlohmann::json> body = api.JsonBody(call);
  if (!body.ok()) return ProblemResponse(body.status());
  Result<jobs::ResolveAction> action = ResolveActionOf(*body);
  if (!action.ok()) return ProblemResponse(action.status());
  Result<std::string> comment = ResolveComment(*body);
  if (!comment.ok()) return ProblemResponse(comment.status());
  Result<jobs::JobDetail> d = [&]() -> Result<jobs::JobDetail> {
    VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, api.SessionOf(call.caller.principal));
    return session->ResolveJob(*id, *action, *comment);
  }();
  return d.ok() ? JsonResponse(Dump(JobJson(*d, call.caller.principal))) : ProblemResponse(d.status());
}

HttpResponse WaitJob(ApiServer::Impl& api, Call& call) {
  Result<int64_t> id = JobIdParam(call);
  Result<int64_t> timeout = IntQuery(call.req, "timeout_s", 30, 0, 3600);
  if (!id.ok()) return ProblemResponse(id.status());
  if (!timeout.ok()) return ProblemResponse(timeout.status());
  Result<sql::ResultSet> r = api.RunStatement(call, sql::WaitIndexJobStatement{*id, static_cast<double>(*timeout)});
  if (!r.ok()) return ProblemResponse(r.status());
  Result<nlohmann::json> job = ShowJob(api, call.caller.principal, *id);
  return job.ok() ? JsonResponse(Dump(*job)) : ProblemResponse(job.status());
}

// The job's detail as server-sent events until it is settled.
HttpResponse StreamJobEvents(ApiServer::Impl& api, Call& call) {
  Result<int64_t> id = JobIdParam(call);
  if (!id.ok()) return ProblemResponse(id.status());
  // Visible (or the same NOT_FOUND as a missing job) before the stream starts.
  if (Result<nlohmann::json> first = ShowJob(api, call.caller.principal, *id); !first.ok()) {
    return ProblemResponse(first.status());
  }
  const int64_t job = *id;
  return api.EventStream(
      call,
      [&api, job](const auth::Principal& who) -> Result<std::pair<std::string, bool>> {
        VIGIL_ASSIGN_OR_RETURN(nlohmann::json detail, ShowJob(api, who, job));
        return std::make_pair(Dump(detail), detail["settled"].get<bool>());
      },
      "job");
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
  const auto bind = [this](HttpResponse (*handler)(Impl&, Call&)) {
    return [this, handler](Call& call) { return handler(*this, call); };
  };
  Add({"GET", "/v1/jobs", false, false, false, bind(&ListJobs)});
  Add({"GET", "/v1/jobs/stream", false, false, false, bind(&StreamJobs)});
  Add({"GET", "/v1/jobs/{id}", false, false, false, bind(&GetJob)});
  Add({"POST", "/v1/jobs/{id}/cancel", false, true, true, bind(&CancelJob)});
  Add({"POST", "/v1/jobs/{id}/resolve", false, true, true, bind(&ResolveJob)});
  Add({"POST", "/v1/jobs/{id}/wait", false, false, false, bind(&WaitJob)});
  Add({"GET", "/v1/jobs/{id}/events", false, false, false, bind(&StreamJobEvents)});
}

}  // namespace vigil::server

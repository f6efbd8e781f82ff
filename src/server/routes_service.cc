// Service routes: liveness, readiness, Prometheus metrics, the OpenAPI
// document and the settings a client needs (GET /v1/config).
#include "server/api_internal.h"
#include "server/openapi_document.h"
#include "vigil/generations/version_pins.h"
#include "vigil/jobs/job_state.h"
#include "vigil/jobs/reconciler.h"

namespace vigil::server {

namespace {

// Jobs by the outcome their attempt recorded (the worker outcomes), and the OUTCOME_UNKNOWN
// jobs by where their reconciliation stands (its backlog: WATCHING, RETRY_PENDING,
// FINAL_READ_PENDING). A count the store cannot give is left out of the page.
std::string OutcomeMetrics(jobs::JobStore& store) {
  std::string out =
      "# HELP vigil_index_job_outcomes Index jobs listed, by the outcome of their attempt.\n"
      "# TYPE vigil_index_job_outcomes gauge\n";
  for (jobs::Outcome o : {jobs::Outcome::kCommitted, jobs::Outcome::kNotCommitted, jobs::Outcome::kNoop,
                          jobs::Outcome::kCancelledBeforeDispatch, jobs::Outcome::kUnknown}) {
    jobs::JobFilter f;
    f.outcome = o;
    Result<int64_t> n = store.Count(f);
    if (n.ok())
      out += "vigil_index_job_outcomes{outcome=\"" + std::string(jobs::Name(o)) + "\"} " + std::to_string(*n) + "\n";
  }
  jobs::JobFilter unknown;
  unknown.state = "OUTCOME_UNKNOWN";
  unknown.limit = jobs::kMaxListLimit;
  std::map<std::string, int64_t> by_state;
  for (jobs::ReconcileState r :
       {jobs::ReconcileState::kWatching, jobs::ReconcileState::kRetryPending, jobs::ReconcileState::kFinalReadPending,
        jobs::ReconcileState::kStoppedTerminationProven, jobs::ReconcileState::kStoppedByForce}) {
    by_state[std::string(jobs::Name(r))] = 0;
  }
  Status listed = store.ForEach(unknown, [&by_state](const jobs::JobRecord& j) {
    if (j.state.reconcile != jobs::ReconcileState::kNone) ++by_state[std::string(jobs::Name(j.state.reconcile))];
    return Status::OK();
  });
  if (!listed.ok()) return out;
  out +=
      "# HELP vigil_index_job_reconcile OUTCOME_UNKNOWN index jobs, by reconcile state.\n"
      "# TYPE vigil_index_job_reconcile gauge\n";
  for (const auto& [state, n] : by_state) {
    out += "vigil_index_job_reconcile{state=\"" + state + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

// What this process's reconciler wrote to UNKNOWN jobs, since it started.
std::string ReconcileResultMetrics(const jobs::ReconcileResults& results) {
  std::string out =
      "# HELP vigil_index_job_reconcile_results_total What the reconciler of this process recorded for index jobs "
      "whose outcome was unknown, by result.\n"
      "# TYPE vigil_index_job_reconcile_results_total counter\n";
  for (const auto& [result, n] : results.Snapshot()) {
    out +=
        "vigil_index_job_reconcile_results_total{result=\"" + std::string(result) + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

// The version pins of every serving process (generations readers hold): live pins and the
// distinct table versions they keep.
std::string PinMetrics(jobs::JobStore& store, int64_t now_ms) {
  Result<std::unique_ptr<generations::VersionPinStore>> pins =
      generations::VersionPinStore::Open(&store.database(), now_ms);
  if (!pins.ok()) return "";
  Result<generations::PinCounts> n = (*pins)->CountLive(now_ms);
  if (!n.ok()) return "";
  return "# HELP vigil_version_pins Live version pins (a reader's generation), and the versions they hold.\n"
         "# TYPE vigil_version_pins gauge\n"
         "vigil_version_pins{of=\"pins\"} " +
         std::to_string(n->pins) + "\nvigil_version_pins{of=\"versions\"} " + std::to_string(n->versions) + "\n";
}

HttpResponse Text(std::string body, std::string type) {
  HttpResponse r;
  r.headers.emplace_back("Content-Type", std::move(type));
  r.body = std::move(body);
  return r;
}

// The job-state vocabulary of jobs/job_state.h, as /v1/config sends it: every derived state,
// the final ones, those in which a job may hold its fence, those a RESOLVE may apply to.
nlohmann::json JobStateVocabulary() {
  const auto names = [](const std::vector<std::string_view>& v) {
    nlohmann::json out = nlohmann::json::array();
    for (std::string_view n : v) out.push_back(std::string(n));
    return out;
  };
  return {{"all", names(jobs::DerivedStateNames())},
          {"final", names(jobs::FinalStateNames())},
          {"fence_holding", names(jobs::FenceHoldingStateNames())},
          {"resolvable", names(jobs::ResolvableStateNames())}};
}

// GET /metrics: the Prometheus text page of this server and its root.
// This server's connections, sessions, event streams and leadership, as metrics.
std::string ServerMetrics(ApiServer::Impl& api) {
  std::string out;
  const HttpServerStats s = api.http_->stats();
  out += "# HELP vigil_http_connections_open Connections open now.\n# TYPE vigil_http_connections_open gauge\n";
  out += "vigil_http_connections_open " + std::to_string(s.open_connections) + "\n";
  out += "# HELP vigil_http_connections_total Connections by fate.\n# TYPE vigil_http_connections_total counter\n";
  out += "vigil_http_connections_total{fate=\"accepted\"} " + std::to_string(s.accepted) + "\n";
  out += "vigil_http_connections_total{fate=\"rejected_busy\"} " + std::to_string(s.rejected_busy) + "\n";
  out += "vigil_http_connections_total{fate=\"timed_out\"} " + std::to_string(s.timed_out) + "\n";
  out += "vigil_http_connections_total{fate=\"too_large\"} " + std::to_string(s.too_large) + "\n";
  out += "# HELP vigil_sql_sessions_open SQL sessions opened ([server] sessions bounds them).\n";
  out += "# TYPE vigil_sql_sessions_open gauge\n";
  out += "vigil_sql_sessions_open " + std::to_string(api.sessions_->open_count()) + "\n";
  out += "# HELP vigil_sql_sessions_in_use SQL sessions serving a request now.\n";
  out += "# TYPE vigil_sql_sessions_in_use gauge\n";
  out += "vigil_sql_sessions_in_use " + std::to_string(api.sessions_->in_use_count()) + "\n";
  out +=
      "# HELP vigil_sql_sessions_waiting Requests waiting for a SQL session (all taken, or their user "
      "holds its share: half of [server] sessions).\n";
  out += "# TYPE vigil_sql_sessions_waiting gauge\n";
  out += "vigil_sql_sessions_waiting " + std::to_string(api.sessions_->waiting_count()) + "\n";
  out += "# HELP vigil_sse_subscribers Job event streams open now.\n# TYPE vigil_sse_subscribers gauge\n";
  int64_t streams = 0;
  {
    MutexLock lock(&api.sse_mu_);
    streams = api.sse_subscribers_;
  }
  out += "vigil_sse_subscribers " + std::to_string(streams) + "\n";
  if (api.options_.leader_running) {
    out +=
        "# HELP vigil_leader Whether this server holds the root's leader lease (dispatcher, reconciler, "
        "archive).\n# TYPE vigil_leader gauge\n";
    out += std::string("vigil_leader ") + (api.options_.leader_running() ? "1" : "0") + "\n";
  }
  return out;
}

HttpResponse MetricsPage(ApiServer::Impl& api) {
  std::string out = api.metrics_.Render();
  out += "# HELP vigil_index_jobs Index jobs listed (not archived), by derived state.\n";
  out += "# TYPE vigil_index_jobs gauge\n";
  for (std::string_view state : jobs::DerivedStateNames()) {
    jobs::JobFilter f;
    f.state = std::string(state);
    Result<int64_t> n = api.jobs_->Count(f);
    if (n.ok()) out += "vigil_index_jobs{state=\"" + *f.state + "\"} " + std::to_string(*n) + "\n";
  }
  out += OutcomeMetrics(*api.jobs_);
  if (api.options_.reconcile_results != nullptr) out += ReconcileResultMetrics(*api.options_.reconcile_results);
  out += PinMetrics(*api.jobs_, api.root_.env()->NowMs());
  out += ServerMetrics(api);
  return Text(std::move(out), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace

void ApiServer::Impl::AddServiceRoutes() {
  Add({"GET", "/healthz", true, false, false, [](Call&) { return JsonResponse(R"({"status":"ok"})"); }});

  Add({"GET", "/readyz", true, false, false, [this](Call&) {
         nlohmann::json checks = nlohmann::json::object();
         Result<int64_t> reachable = jobs_->Count(jobs::JobFilter{});
         checks["metadata_store"] = reachable.ok() ? "ok" : reachable.status().ToString();
         bool ready = reachable.ok();
         if (options_.leader_running) {
           // With a shared store another node may lead: this one stands by and serves.
           const bool leader = options_.leader_running();
           const bool shared = !config_.meta.url.empty();
           const bool drained = options_.node_draining && options_.node_draining();
           checks["leader"] = leader ? "ok" : drained ? "drained" : shared ? "standby" : "not running";
           ready = ready && (leader || shared || drained);
         }
         return JsonResponse(nlohmann::json{{"status", ready ? "ready" : "not ready"}, {"checks", checks}}.dump(),
                             ready ? 200 : 503);
       }});

  Add({"GET", "/metrics", true, false, false, [this](Call&) { return MetricsPage(*this); }});

  Add({"GET", "/v1/openapi.json", true, false, false,
       [](Call&) { return JsonResponse(std::string(kOpenApiDocument)); }});

  Add({"GET", "/v1/me", false, false, false, [](Call& call) {
         const auth::Principal& who = call.caller.principal;
         nlohmann::json grants = nlohmann::json::array();
         for (const auto& [object, privileges] : who.grants) {
           nlohmann::json names = nlohmann::json::array();
           for (auth::Privilege p : privileges) names.push_back(std::string(auth::PrivilegeName(p)));
           grants.push_back({{"object", object}, {"privileges", std::move(names)}});
         }
         return JsonResponse(
             nlohmann::json{{"user", who.name}, {"admin", who.admin}, {"grants", std::move(grants)}}.dump());
       }});

  Add({"GET", "/v1/config", false, false, false, [this](Call&) {
         nlohmann::json j = {{"idempotency",
                              {{"ttl_seconds", config_.server.idempotency_ttl_seconds},
                               {"required_on_resource_mutations", config_.server.require_idempotency_key},
                               {"max_key_bytes", idempotency::kMaxKeyBytes}}},
                             {"limits",
                              {{"max_body_bytes", options_.http.max_body_bytes},
                               {"max_connections", options_.http.max_connections},
                               {"sessions", config_.server.sessions},
                               {"sse_max_subscribers", config_.server.sse_max_subscribers},
                               {"requests_per_second_per_user", config_.server.requests_per_second_per_user},
                               {"header_timeout_ms", options_.http.header_timeout.count()},
                               {"body_grace_ms", options_.http.body_grace.count()},
                               {"min_body_bytes_per_second", options_.http.min_body_bytes_per_second},
                               {"write_timeout_ms", options_.http.write_timeout.count()}}},
                             {"job_states", JobStateVocabulary()}};
         return JsonResponse(j.dump());
       }});
}

}  // namespace vigil::server

// Service routes: liveness, readiness, Prometheus metrics, the OpenAPI
// document and the settings a client needs (GET /v1/config).
#include "server/api_internal.h"
#include "server/openapi_document.h"
#include "vigil/jobs/job_state.h"

namespace vigil::server {

namespace {

// Every value of jobs::DerivedState.
constexpr const char* kJobStates[] = {"PENDING",
                                      "RUNNING",
                                      "FINISHED",
                                      "FAILED",
                                      "CANCELLED",
                                      "OUTCOME_UNKNOWN",
                                      "REFRESHING",
                                      "COMMITTED_REFRESH_PENDING",
                                      "FAILED_REFRESH_PENDING",
                                      "COMMITTED_REFRESH_SKIPPED",
                                      "FAILED_REFRESH_SKIPPED"};

HttpResponse Text(std::string body, std::string type) {
  HttpResponse r;
  r.headers.emplace_back("Content-Type", std::move(type));
  r.body = std::move(body);
  return r;
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

  Add({"GET", "/metrics", true, false, false, [this](Call&) {
         std::string out = metrics_.Render();
         out += "# HELP vigil_index_jobs Index jobs listed (not archived), by derived state.\n";
         out += "# TYPE vigil_index_jobs gauge\n";
         for (const char* state : kJobStates) {
           jobs::JobFilter f;
           f.state = state;
           Result<int64_t> n = jobs_->Count(f);
           if (n.ok()) out += std::string("vigil_index_jobs{state=\"") + state + "\"} " + std::to_string(*n) + "\n";
         }
         const HttpServerStats s = http_->stats();
         out += "# HELP vigil_http_connections_open Connections open now.\n# TYPE vigil_http_connections_open gauge\n";
         out += "vigil_http_connections_open " + std::to_string(s.open_connections) + "\n";
         out +=
             "# HELP vigil_http_connections_total Connections by fate.\n# TYPE vigil_http_connections_total counter\n";
         out += "vigil_http_connections_total{fate=\"accepted\"} " + std::to_string(s.accepted) + "\n";
         out += "vigil_http_connections_total{fate=\"rejected_busy\"} " + std::to_string(s.rejected_busy) + "\n";
         out += "vigil_http_connections_total{fate=\"timed_out\"} " + std::to_string(s.timed_out) + "\n";
         out += "vigil_http_connections_total{fate=\"too_large\"} " + std::to_string(s.too_large) + "\n";
         out += "# HELP vigil_sql_sessions_open SQL sessions opened ([server] sessions bounds them).\n";
         out += "# TYPE vigil_sql_sessions_open gauge\n";
         out += "vigil_sql_sessions_open " + std::to_string(sessions_->open_count()) + "\n";
         out += "# HELP vigil_sse_subscribers Job event streams open now.\n# TYPE vigil_sse_subscribers gauge\n";
         out += "vigil_sse_subscribers " + std::to_string(sse_subscribers_.load()) + "\n";
         return Text(std::move(out), "text/plain; version=0.0.4; charset=utf-8");
       }});

  Add({"GET", "/v1/openapi.json", true, false, false,
       [](Call&) { return JsonResponse(std::string(kOpenApiDocument)); }});

  Add({"GET", "/v1/me", false, false, false, [](Call& call) {
         const jobs::Principal& who = call.caller.principal;
         nlohmann::json grants = nlohmann::json::array();
         for (const auto& [object, privileges] : who.grants) {
           nlohmann::json names = nlohmann::json::array();
           for (jobs::Privilege p : privileges) names.push_back(std::string(jobs::PrivilegeName(p)));
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
                               {"sse_max_subscribers", config_.server.sse_max_subscribers}}}};
         return JsonResponse(j.dump());
       }});
}

}  // namespace vigil::server

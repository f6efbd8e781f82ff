// `vigil serve`'s HTTP API over one root (DESIGN.md section 11): JSON routes
// under /v1 translated into statements run by a pool of SQL sessions, each
// bound to the caller's principal, so every privilege rule and error of the
// SQL surface holds over HTTP unchanged. Bearer tokens authenticate callers
// (auth::PrincipalStore); mutating requests carry Idempotency-Key (seed 003);
// errors are RFC 9457 problem documents with Vigil's typed codes; GET /metrics
// speaks Prometheus text; GET /v1/openapi.json is the API's description.
// The job leader is not run here: `vigil serve` runs it beside the server.
// Thread safety: thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vigil/common/env.h"
#include "vigil/common/status.h"
#include "vigil/server/http_server.h"

namespace vigil::jobs {
struct ReconcileResults;
}  // namespace vigil::jobs

namespace vigil::server {

struct ApiServerOptions {
  std::string root_dir;
  HttpServerOptions http;  // listen address, limits, TLS (from [server] unless overridden)
  // Whether this process's job leader runs (GET /readyz); empty: not checked.
  std::function<bool()> leader_running;
  // Whether this node is drained (DRAIN NODE; GET /readyz says so); empty: never.
  std::function<bool()> node_draining;
  // Called after a request admitted index jobs (a leader picks them up); may be empty.
  std::function<void()> jobs_admitted;
  // What this process's reconciler did (GET /metrics); null: not shown. Outlives the server.
  const jobs::ReconcileResults* reconcile_results = nullptr;
  // Clocks and sleeps of the API (idempotency expiry and staleness, request latency, event
  // polling) and the file system request bodies are spooled through. Must outlive the server.
  Env* env = Env::Default();
};

// One route of the API as ApiServer registers it.
struct ApiRoute {
  std::string method;         // "GET", "POST", "DELETE"
  std::string pattern;        // "/v1/jobs/{id}"
  bool public_route = false;  // answered without a bearer token
  bool mutating = false;      // takes an Idempotency-Key
  bool key_required = false;  // a missing key is 400 under [server] require_idempotency_key
};

// The routes the API serves on the root at `root_dir`, in registration order: exactly the
// list ApiServer::Start registers (nothing is opened but the root's marker). For tests and
// tools that hold the OpenAPI document to the router.
Result<std::vector<ApiRoute>> ApiRoutes(const std::string& root_dir);

class ApiServer {
 public:
  // Opens the root's stores (principals, idempotency, jobs) and starts serving. The [server]
  // settings of the root's vigil.toml apply, except the listen address and the limits given
  // in options.http.
  static Result<std::unique_ptr<ApiServer>> Start(ApiServerOptions options);
  ~ApiServer();

  uint16_t port() const;
  // Stops accepting, lets requests in flight finish within `grace`, then closes the rest.
  void Shutdown(std::chrono::milliseconds grace);

  class Impl;

 private:
  explicit ApiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::server

// Internals of the HTTP API (api_server.h): the server's shared state, the
// context a route handler receives, and the route families, each registered
// by its own file (routes_*.cc). Internal to the server layer.
// Thread safety: ApiServer::Impl is thread-safe once Open returned (handlers run
// concurrently on connection threads); Call is one request's, on its thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/auth_cache.h"
#include "server/idempotency_gate.h"
#include "server/metrics.h"
#include "server/query/query_request.h"
#include "server/rate_limiter.h"
#include "server/session_pool.h"
#include "server/upload_spool.h"
#include "vigil/auth/principal_store.h"
#include "vigil/common/config.h"
#include "vigil/common/mutex.h"
#include "vigil/idempotency/store.h"
#include "vigil/jobs/job_store.h"
#include "vigil/server/api_server.h"
#include "vigil/server/router.h"
#include "vigil/sql/result.h"
#include "vigil/storage/root.h"

namespace vigil::server {

// How often reservations of a stopped server are settled and expired records purged.
constexpr std::chrono::seconds kKeyReconcileInterval{30};
// The largest JSON body any route takes (JSON rows); each route applies its own bound too.
constexpr size_t kMaxJsonBodyBytes = 64 << 20;
// The bound of an ordinary JSON request body (everything but rows and scripts).
constexpr size_t kMaxRequestBodyBytes = 16 << 20;
// How long a request waits for a free SQL session before 503.
constexpr std::chrono::milliseconds kSessionWait{30'000};

// A body already in memory, handed to a handler in place of the socket's.
class StringBody : public BodySource {
 public:
  explicit StringBody(std::string text) : text_(std::move(text)) {}
  Result<size_t> Read(char* buf, size_t max) override;

 private:
  std::string text_;
  size_t pos_ = 0;
};

// One request as a handler sees it.
struct Call {
  HttpRequest& req;
  const PathParams& params;
  const auth::Authenticated& caller;
  std::shared_ptr<Spooled> spooled;  // set when the body was spooled before the handler ran
  // The request's reservation when it carries a key: its token marks the effect, its confirm
  // fences it (jobs::RequestClaim).
  jobs::RequestClaim claim;
  // The bearer token the caller authenticated with (empty on public routes): a request or stream
  // that lives on re-checks the caller's rights with it (RightsLost).
  std::string_view token;
};

// The token of an `Authorization: Bearer <token>` header (the scheme in any case, RFC 9110
// section 11.1); nullopt when the header holds none.
std::optional<std::string_view> BearerToken(std::string_view header);

// The media type of a Content-Type value: its type/subtype without parameters, lower-case
// (media types are case-insensitive, RFC 9110 section 8.3.1).
std::string MediaType(std::string_view content_type);
// Whether the request body is an upload (CSV, JSON Lines, .fvecs, .npy) rather than JSON.
bool IsUpload(const HttpRequest& req);

// Which requests a route accepts without a bearer token, and whether it mutates (and so
// takes an Idempotency-Key; `key_required` when a missing key is a 400 under
// [server] require_idempotency_key).
struct RouteSpec {
  std::string method;
  std::string pattern;
  bool public_route = false;
  bool mutating = false;
  bool key_required = false;
  std::function<HttpResponse(Call&)> handler;
  // Looks for the effect of the keyed request `token` to this route with `params` whose server
  // died mid-request (SettleFn); empty: such a request is finished as outcome unknown.
  std::function<Result<std::optional<HttpResponse>>(const PathParams& params, const std::string& token)> settle;
};

class ApiServer::Impl {
 public:
  Impl(ApiServerOptions options, Root root, Config config);

  Status Open();
  HttpResponse Handle(HttpRequest& req);

  // Runs a statement the route built (no SQL text) as the caller in a pooled session.
  Result<sql::ResultSet> RunStatement(const Call& call, sql::StatementNode statement);
  // A pooled session of `who` (at most kSessionWait for a free one).
  Result<SessionPool::Lease> SessionOf(const auth::Principal& who);
  // POST .../query on `db.table` as the caller: `q` without a "select" answers DefaultSelect
  // of the table's newest schema.
  Result<sql::ResultSet> RunQuery(const Call& call, const std::string& db, const std::string& table, QueryRequest q);
  // The body as JSON (an object); InvalidArgument naming what is wrong.
  Result<nlohmann::json> JsonBody(Call& call, size_t limit = kMaxRequestBodyBytes);
  // The body saved to a private spool file (the one spooled before the handler, if any).
  Result<std::shared_ptr<Spooled>> SpoolBody(Call& call);

  // What the caller of a request or stream that began as `start` (authenticated by `token`) may
  // do now: nullopt while it holds every right it held then (`*now` is set to the caller as the
  // principal store has it now); otherwise the answer to end with: 401 when the token
  // authenticates no more (the user was dropped or disabled, or the token revoked), 403 when a
  // grant or ADMIN was revoked.
  std::optional<HttpResponse> RightsLost(std::string_view token, const auth::Authenticated& start,
                                         auth::Authenticated* now);

  // A server-sent event stream of `call`'s caller (at most [server] sse_max_subscribers at once,
  // and at most half of them (at least 1) per user, else 503 Busy): every 250 ms the caller's
  // rights are re-checked (a `revoked` event with the 401 or 403 problem ends the stream once
  // one was lost), then `poll`, given the caller's principal as it is now, gives the data and
  // whether it is final; an `event` is sent when the data changed (then `end` once final), a
  // keep-alive comment after 15 s of silence, and an `error` event with the problem document
  // when `poll` fails, which ends the stream.
  HttpResponse EventStream(const Call& call,
                           std::function<Result<std::pair<std::string, bool>>(const auth::Principal&)> poll,
                           std::string event);

  void Add(RouteSpec spec);
  void AddServiceRoutes();  // routes_service.cc: health, readiness, metrics, OpenAPI, config
  void AddSqlRoutes();      // routes_sql.cc: POST /v1/sql
  void AddTableRoutes();    // routes_tables.cc: databases, tables, rows, indexes, queries, VACUUM
  void AddJobRoutes();      // routes_jobs.cc: jobs, their events
  void AddConsoleRoutes();  // routes_console.cc: the web console's page and files
  // The caller a bearer token authenticates (AuthCache first, then the principal store).
  Result<auth::Authenticated> Authenticate(std::string_view token);
  // The committed version of an append to the table of `params` carrying `token`, as the
  // response; nullopt when the table's history has none.
  Result<std::optional<HttpResponse>> AppendEffect(const PathParams& params, const std::string& token);
  // GET /v1/databases/{db}/tables/{table} of an external Lance table (its location, version,
  // LanceDB's fields and rows, SHOW INDEX); nullopt for a table Vigil owns.
  Result<std::optional<HttpResponse>> ExternalTableDetail(Call& call, const std::string& db, const std::string& table);
  // The job admitted by the request `token` (one transaction with its admission), as the
  // 202 response; nullopt when none was.
  Result<std::optional<HttpResponse>> AdmissionEffect(const std::string& token);

  ApiServerOptions options_;
  Root root_;
  Config config_;
  std::unique_ptr<auth::PrincipalStore> principals_;
  std::unique_ptr<AuthCache> auth_cache_;
  std::unique_ptr<idempotency::IdempotencyStore> idempotency_;
  std::unique_ptr<jobs::JobStore> jobs_;
  std::unique_ptr<SessionPool> sessions_;
  std::unique_ptr<UploadSpool> spool_;  // outlives http_: requests in flight hold its files
  Metrics metrics_;
  RateLimiter limiter_;  // [server] requests_per_second_per_user
  std::unique_ptr<IdempotencyGate> gate_;
  Mutex sse_mu_;
  int64_t sse_subscribers_ VIGIL_GUARDED_BY(sse_mu_) = 0;
  std::map<std::string, int64_t> sse_by_user_ VIGIL_GUARDED_BY(sse_mu_);  // open streams by UserKeyRealm
  std::string executor_id_;
  Router router_;
  std::vector<RouteSpec> routes_;  // by Route index in router_
  std::unique_ptr<HttpServer> http_;

  // Runs ReconcileKeys now and then until the server stops.
  void PurgeLoop();
  // One pass: settles stopped servers' reservations (when leading), purges expired records.
  void ReconcileKeys();
  // One purge pass over every realm of the idempotency store: its expired finished records,
  // or all its finished records when its user was dropped; how many went.
  Result<int64_t> PurgeExpiredKeys();
  // Whether the user incarnation of an idempotency realm (UserKeyRealm) no longer exists.
  Result<bool> KeyRealmUserGone(const std::string& key_realm);
  // Settles the reservations of every realm of the idempotency store whose server died
  // (IdempotencyGate::SettleStale, by the route each record names); how many were settled.
  // Only the leader.
  Result<int64_t> SettleStaleKeys();
  // The settle function of the route and resource a record names; empty when none can tell.
  SettleFn SettleOf(const idempotency::IdempotencyRecord& record);
  Mutex purge_mu_;
  std::condition_variable purge_cv_;
  bool stopping_ VIGIL_GUARDED_BY(purge_mu_) = false;
  std::thread purge_thread_;

 private:
  HttpResponse Authorized(HttpRequest& req, const RouteSpec& spec, const PathParams& params,
                          const auth::Authenticated& caller, std::string_view token);
};

// A result set as JSON: {"columns": [...], "rows": [[...]], "message", "notices", "warnings",
// "admitted_jobs"}.
nlohmann::json ResultJson(const sql::ResultSet& r);
// The rows of a result as objects keyed by column name.
nlohmann::json RowObjects(const sql::ResultSet& r);
// A result cell as JSON (a blob as base64, a vector as an array of numbers).
nlohmann::json ValueJson(const sql::Value& v);
// A decimal query parameter in [lo, hi]; `fallback` when absent, InvalidArgument naming it otherwise.
Result<int64_t> IntQuery(const HttpRequest& req, std::string_view name, int64_t fallback, int64_t lo, int64_t hi);
// A path parameter checked as a database / table / index name (names.h allowlist).
Result<std::string> DatabaseParam(const PathParams& params);
Result<std::string> TableParam(const PathParams& params, std::string_view key = "table");
inline Result<std::string> DatabaseParam(const Call& call) { return DatabaseParam(call.params); }
inline Result<std::string> TableParam(const Call& call, std::string_view key = "table") {
  return TableParam(call.params, key);
}
Result<std::string> IdentifierParam(const Call& call, std::string_view key, std::string_view what);
// A positive job id path parameter.
Result<int64_t> JobIdParam(const Call& call);

}  // namespace vigil::server

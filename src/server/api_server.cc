#include "vigil/server/api_server.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "server/api_internal.h"
#include "server/query_json.h"
#include "vigil/auth/root_auth.h"
#include "vigil/auth/server_secret.h"
#include "vigil/common/ascii.h"
#include "vigil/common/bounds.h"
#include "vigil/common/cancellation.h"
#include "vigil/common/json_nesting.h"
#include "vigil/common/logging.h"
#include "vigil/common/names.h"
#include "vigil/common/uuid.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/result_format.h"

namespace vigil::server {

namespace {

std::string HostName() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "localhost";
  return host;
}

HttpResponse Unauthenticated(std::string_view detail) {
  HttpResponse r = ProblemResponse(401, "UNAUTHENTICATED", detail);
  r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"vigil\"");
  return r;
}

// 429 for a user past [server] requests_per_second_per_user, who may retry in `wait_us`.
HttpResponse RateLimited(int64_t wait_us, uint64_t per_second) {
  const std::string retry_after = std::to_string((wait_us + 999'999) / 1'000'000);
  HttpResponse r = ProblemResponse(
      429, "RATE_LIMITED",
      "this user's requests passed [server] requests_per_second_per_user = " + std::to_string(per_second) +
          "; nothing was done; retry after " + retry_after + " s");
  r.headers.emplace_back("Retry-After", retry_after);
  return r;
}

}  // namespace

Result<size_t> StringBody::Read(char* buf, size_t max) {
  const size_t n = std::min(max, text_.size() - pos_);
  std::copy_n(text_.data() + pos_, n, buf);
  pos_ += n;
  return n;
}

std::string MediaType(std::string_view content_type) {
  std::string_view base = content_type.substr(0, content_type.find(';'));
  while (!base.empty() && (base.back() == ' ' || base.back() == '\t')) base.remove_suffix(1);
  while (!base.empty() && (base.front() == ' ' || base.front() == '\t')) base.remove_prefix(1);
  return AsciiLowered(base);
}

bool IsUpload(const HttpRequest& req) {
  const std::string type = MediaType(req.Header("content-type"));
  return !type.empty() && type != "application/json";
}

Result<int64_t> IntQuery(const HttpRequest& req, std::string_view name, int64_t fallback, int64_t lo, int64_t hi) {
  std::optional<std::string> text = req.Query(name);
  if (!text) return fallback;
  int64_t v = 0;
  const bool digits = !text->empty() && text->size() <= 18 &&
                      std::all_of(text->begin(), text->end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) v = std::stoll(*text);
  if (!digits || v < lo || v > hi) {
    return Status::InvalidArgument("query parameter " + std::string(name) + " must be an integer in " +
                                   std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

nlohmann::json ValueJson(const sql::Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return nullptr;
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  std::string text;  // a BLOB as its table text x'<hex>', a vector as an array
  sql::AppendJsonValue(text, v);
  return nlohmann::json::parse(text);
}

nlohmann::json RowObjects(const sql::ResultSet& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json o = nlohmann::json::object();
    for (size_t i = 0; i < r.columns.size(); ++i) o[r.columns[i]] = ValueJson(row[i]);
    rows.push_back(std::move(o));
  }
  return rows;
}

nlohmann::json ResultJson(const sql::ResultSet& r) { return nlohmann::json::parse(ResultDocument(r)); }

Result<std::string> IdentifierParam(const Call& call, std::string_view key, std::string_view what) {
  auto it = call.params.find(std::string(key));
  if (it == call.params.end()) return Status::Internal("route has no parameter " + std::string(key));
  VIGIL_RETURN_IF_ERROR(ValidateIdentifier(it->second, what));
  return it->second;
}

Result<std::string> DatabaseParam(const PathParams& params) {
  auto it = params.find("db");
  if (it == params.end()) return Status::Internal("route has no parameter db");
  VIGIL_RETURN_IF_ERROR(ValidateDatabaseName(it->second));
  return it->second;
}

Result<std::string> TableParam(const PathParams& params, std::string_view key) {
  auto it = params.find(std::string(key));
  if (it == params.end()) return Status::Internal("route has no parameter " + std::string(key));
  VIGIL_RETURN_IF_ERROR(ValidateTableName(it->second));
  return it->second;
}

Result<int64_t> JobIdParam(const Call& call) {
  auto it = call.params.find("id");
  const std::string text = it == call.params.end() ? "" : it->second;
  int64_t id = 0;
  if (text.empty() || text.size() > 18) return Status::InvalidArgument("job id must be a positive integer");
  for (char c : text) {
    if (c < '0' || c > '9') return Status::InvalidArgument("job id must be a positive integer");
    id = id * 10 + (c - '0');
  }
  if (id <= 0) return Status::InvalidArgument("job id must be a positive integer");
  return id;
}

// How long an authenticated token is trusted without asking the principal store again, and
// how many such tokens are remembered (AuthCache).
constexpr int64_t kAuthCacheMs = 1000;
constexpr size_t kAuthCacheEntries = 4096;

ApiServer::Impl::Impl(ApiServerOptions options, Root root, Config config)
    : options_(std::move(options)),
      root_(std::move(root)),
      config_(std::move(config)),
      limiter_(config_.server.requests_per_second_per_user) {}

Status ApiServer::Impl::Open() {
  VIGIL_ASSIGN_OR_RETURN(principals_, auth::OpenRootPrincipalStore(root_));
  auth_cache_ = std::make_unique<AuthCache>(options_.env, kAuthCacheMs, kAuthCacheEntries);
  VIGIL_ASSIGN_OR_RETURN(jobs_, jobs::OpenRootJobStore(root_));
  idempotency::StoreOptions io;
  VIGIL_ASSIGN_OR_RETURN(jobs::RootMetaStore meta, jobs::RootMeta(root_));
  io.uri = std::move(meta.uri);
  io.database = meta.database;
  io.env = options_.env;
  VIGIL_ASSIGN_OR_RETURN(idempotency_, idempotency::IdempotencyStore::Open(io));
  executor_id_ =
      "serve:" + HostName() + ":" + std::to_string(::getpid()) + ":" + Uuid::Generate().ToString().substr(0, 8);
  VIGIL_ASSIGN_OR_RETURN(auth::ServerSecret secret, auth::LoadOrCreateServerSecret(root_.path()));
  gate_ = std::make_unique<IdempotencyGate>(idempotency_.get(), &metrics_, executor_id_,
                                            static_cast<int64_t>(config_.server.idempotency_ttl_seconds) * 1000,
                                            std::move(secret), kHeartbeatMs, options_.env);
  sql::SessionOptions so;
  so.file_access = sql::FileAccess::kServer;
  so.principal = auth::Principal{};
  so.statement_timeout_is_ceiling = true;
  so.generation_pool = sql::GenerationPool::Create(root_, config_.generations);  // one for the process
  sessions_ = std::make_unique<SessionPool>(root_.path(), so, config_.server.sessions, options_.env);
  VIGIL_ASSIGN_OR_RETURN(spool_, UploadSpool::Open(root_.path(), options_.env));
  AddServiceRoutes();
  AddSqlRoutes();
  AddTableRoutes();
  AddJobRoutes();
  AddConsoleRoutes();
  return Status::OK();
}

void ApiServer::Impl::Add(RouteSpec spec) {
  router_.Add(spec.method, spec.pattern, nullptr);
  routes_.push_back(std::move(spec));
}

std::optional<std::string_view> BearerToken(std::string_view header) {
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || !AsciiEqualsIgnoreCase(header.substr(0, kScheme.size()), kScheme) ||
      header[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

namespace {

// Whether `now` lacks a right `start` held: ADMIN, or a privilege on an object.
bool LostAGrant(const auth::Principal& start, const auth::Principal& now) {
  if (start.IsAdmin() && !now.IsAdmin()) return true;
  if (now.IsAdmin()) return false;
  for (const auto& [object, privileges] : start.grants) {
    auto it = now.grants.find(object);
    for (auth::Privilege p : privileges) {
      if (it == now.grants.end() || it->second.count(p) == 0) return true;
    }
  }
  return false;
}

}  // namespace

std::optional<HttpResponse> ApiServer::Impl::RightsLost(std::string_view token, const auth::Authenticated& start,
                                                        auth::Authenticated* now) {
  Result<auth::Authenticated> caller = Authenticate(token);
  if (!caller.ok() && caller.status().code() != StatusCode::kPermissionDenied) return ProblemResponse(caller.status());
  if (!caller.ok() || caller->realm != start.realm || caller->incarnation != start.incarnation ||
      caller->principal.name != start.principal.name) {
    return Unauthenticated("user " + start.principal.name +
                           " was dropped or disabled, or its token revoked, while the request ran; nothing more "
                           "is sent");
  }
  if (LostAGrant(start.principal, caller->principal)) {
    return ProblemResponse(
        403, "PERMISSION_DENIED",
        "a right of user " + start.principal.name + " was revoked while the request ran; nothing more is sent");
  }
  *now = std::move(*caller);
  return std::nullopt;
}

HttpResponse ApiServer::Impl::Handle(HttpRequest& req) {
  const int64_t start_us = options_.env->MonotonicMicros();
  const ScopedCancellation cancellation(req.cancelled);
  RouteMatch m = router_.Find(req);
  HttpResponse resp;
  std::string pattern;
  if (!m.route) {
    resp = std::move(m.error);
  } else {
    const RouteSpec& spec = routes_[static_cast<size_t>(m.route - router_.routes().data())];
    pattern = spec.pattern;
    if (spec.public_route) {
      const auth::Authenticated nobody;
      Call call{req, m.params, nobody, nullptr};
      resp = spec.handler(call);
    } else {
      const std::optional<std::string_view> token = BearerToken(req.Header("authorization"));
      if (!token) {
        resp = Unauthenticated("a bearer token is required: Authorization: Bearer <token>");
      } else {
        Result<auth::Authenticated> caller = Authenticate(*token);
        const int64_t wait_us =
            caller.ok() ? limiter_.Admit(UserKeyRealm({caller->realm, caller->principal.name, caller->incarnation}),
                                         options_.env->MonotonicMicros())
                        : 0;
        if (caller.ok() && wait_us > 0) {
          resp = RateLimited(wait_us, config_.server.requests_per_second_per_user);
        } else if (caller.ok()) {
          resp = Authorized(req, spec, m.params, *caller, *token);
          // Any mutation may have changed users, tokens or grants.
          if (spec.mutating) auth_cache_->Clear();
        } else if (caller.status().code() == StatusCode::kPermissionDenied) {
          resp = Unauthenticated(caller.status().message());
        } else {
          resp = ProblemResponse(caller.status());
        }
      }
    }
  }
  resp.headers.emplace_back("Cache-Control", "no-store");
  const double secs = static_cast<double>(options_.env->MonotonicMicros() - start_us) / 1e6;
  metrics_.ObserveRequest(pattern, req.method, resp.status, secs);
  return resp;
}

Result<auth::Authenticated> ApiServer::Impl::Authenticate(std::string_view token) {
  if (std::optional<auth::Authenticated> known = auth_cache_->Find(token)) return std::move(*known);
  const uint64_t generation = auth_cache_->Generation();
  Result<auth::Authenticated> caller = principals_->Authenticate(token);
  if (caller.ok()) auth_cache_->Insert(token, *caller, generation);
  return caller;
}

HttpResponse ApiServer::Impl::Authorized(HttpRequest& req, const RouteSpec& spec, const PathParams& params,
                                         const auth::Authenticated& caller, std::string_view token) {
  Call call{req, params, caller, nullptr, {}, token};
  if (!spec.mutating) return spec.handler(call);
  Result<std::optional<std::string>> key = ParseIdempotencyKey(req.Header("idempotency-key"));
  if (!key.ok()) return ProblemResponse(400, "IDEMPOTENCY_KEY_INVALID", key.status().message());
  if (!*key) {
    if (spec.key_required && config_.server.require_idempotency_key) {
      metrics_.CountIdempotency("missing_key");
      return ProblemResponse(400, "IDEMPOTENCY_KEY_MISSING",
                             spec.method + " " + spec.pattern +
                                 " requires an Idempotency-Key header (a unique value per request, reused "
                                 "only to retry it)");
    }
    return spec.handler(call);
  }
  // The fingerprint covers the body: read (JSON, canonical form) or spooled (uploads) first.
  std::string digest_input;
  std::unique_ptr<StringBody> json_body;
  if (IsUpload(req)) {
    Result<std::shared_ptr<Spooled>> spooled = SpoolBody(call);
    if (!spooled.ok()) return ProblemResponse(spooled.status());
    call.spooled = *spooled;
    digest_input = std::string(req.Header("content-type")) + "\n" + call.spooled->sha256;
  } else {
    Result<std::string> body = req.body->ReadAll(kMaxJsonBodyBytes);
    if (!body.ok()) return ProblemResponse(body.status());
    // The canonical form is a recursive dump: only of a document within the nesting bound.
    if (Status depth = CheckJsonNesting(*body, bounds::kMaxJsonDepth, "the request body"); !depth.ok()) {
      return ProblemResponse(depth);
    }
    auto parsed = nlohmann::json::parse(*body, nullptr, false);
    digest_input = parsed.is_discarded() ? *body : parsed.dump();
    json_body = std::make_unique<StringBody>(std::move(*body));
    req.body = json_body.get();
  }
  std::string query;
  for (const auto& [k, v] : req.query) query += k + "=" + v + "&";
  IdempotentRequest ireq{UserKeyRealm({caller.realm, caller.principal.name, caller.incarnation}), **key,
                         spec.method + " " + spec.pattern, req.path,
                         RequestFingerprint(req.method, req.path, query, digest_input)};
  // Settling takes over a stale reservation of another server: only the leader does, so that
  // two servers never settle one key at once. An owner that only stalled and resumes cannot add
  // its effect afterwards (the effect's transaction confirms the reservation).
  SettleFn settle;
  const bool leads = !options_.leader_running || options_.leader_running();
  if (spec.settle && leads) settle = [&](const std::string& token) { return spec.settle(params, token); };
  return gate_->Run(
      ireq,
      [&](const jobs::RequestClaim& claim) {
        call.claim = claim;
        return spec.handler(call);
      },
      settle);
}

SettleFn ApiServer::Impl::SettleOf(const idempotency::IdempotencyRecord& record) {
  for (const RouteSpec& spec : routes_) {
    if (!spec.settle || record.operation_type != spec.method + " " + spec.pattern) continue;
    HttpRequest probe;
    probe.method = spec.method;
    probe.path = record.resource_id;
    RouteMatch m = router_.Find(probe);
    if (!m.route || m.route->pattern != spec.pattern) return nullptr;
    return [&spec, params = std::move(m.params)](const std::string& token) { return spec.settle(params, token); };
  }
  return nullptr;
}

Result<sql::ResultSet> ApiServer::Impl::RunStatement(const Call& call, sql::StatementNode statement) {
  VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, SessionOf(call.caller.principal));
  Result<sql::ResultSet> r = session->Execute(sql::Statement{std::move(statement)}, call.claim);
  if (r.ok() && !r->admitted_jobs.empty() && options_.jobs_admitted) options_.jobs_admitted();
  return r;
}

Result<SessionPool::Lease> ApiServer::Impl::SessionOf(const auth::Principal& who) {
  return sessions_->Acquire(who, kSessionWait);
}

Result<sql::ResultSet> ApiServer::Impl::RunQuery(const Call& call, const std::string& db, const std::string& table,
                                                 QueryRequest q) {
  VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, sessions_->Acquire(call.caller.principal, kSessionWait));
  if (q.select.empty()) {
    VIGIL_ASSIGN_OR_RETURN(SchemaPtr schema, session->SelectSchema({"", db, table}));
    q.select = DefaultSelect(*schema, q);
  }
  VIGIL_ASSIGN_OR_RETURN(BoundQuery query, QueryStatement(db + "." + table, q));
  return session->Select(query.sql, query.params);
}

Result<nlohmann::json> ApiServer::Impl::JsonBody(Call& call, size_t limit) {
  VIGIL_ASSIGN_OR_RETURN(std::string text, call.req.body->ReadAll(limit));
  if (text.empty()) return nlohmann::json::object();
  VIGIL_RETURN_IF_ERROR(CheckJsonNesting(text, bounds::kMaxJsonDepth, "the request body"));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument("the request body is not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument("the request body must be a JSON object");
  return j;
}

Result<std::shared_ptr<Spooled>> ApiServer::Impl::SpoolBody(Call& call) {
  if (call.spooled) return call.spooled;
  VIGIL_ASSIGN_OR_RETURN(call.spooled, spool_->Spool(*call.req.body));
  return call.spooled;
}

namespace {

// Realms asked of the idempotency store at a time.
constexpr int kKeyRealmPage = 256;

// Calls fn with every realm the idempotency store holds records of, a dropped user's
// included; the sum of its results.
Result<int64_t> SumOverKeyRealms(idempotency::IdempotencyStore& store,
                                 const std::function<Result<int64_t>(const std::string&)>& fn) {
  int64_t sum = 0;
  std::string after;
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> realms, store.ListRealms(after, kKeyRealmPage));
    for (const std::string& realm : realms) {
      VIGIL_ASSIGN_OR_RETURN(int64_t n, fn(realm));
      sum += n;
    }
    if (realms.size() < static_cast<size_t>(kKeyRealmPage)) return sum;
    after = realms.back();
  }
}

}  // namespace

Result<bool> ApiServer::Impl::KeyRealmUserGone(const std::string& key_realm) {
  const std::optional<KeyRealmOwner> owner = ParseUserKeyRealm(key_realm);
  if (!owner) return false;
  VIGIL_ASSIGN_OR_RETURN(std::optional<auth::UserInfo> info, principals_->GetUser(owner->realm, owner->user));
  return !info.has_value() || info->incarnation != owner->incarnation;
}

Result<int64_t> ApiServer::Impl::PurgeExpiredKeys() {
  const int64_t now = options_.env->NowMs();
  return SumOverKeyRealms(*idempotency_, [&](const std::string& realm) -> Result<int64_t> {
    // A dropped user's finished requests can be replayed to nobody: they all go now, so a user
    // created again under the name starts with no keys.
    VIGIL_ASSIGN_OR_RETURN(bool gone, KeyRealmUserGone(realm));
    VIGIL_ASSIGN_OR_RETURN(int64_t n, idempotency_->PurgeExpired(realm, gone ? INT64_MAX : now));
    metrics_.CountPurgedKeys(n);
    return n;
  });
}

Result<int64_t> ApiServer::Impl::SettleStaleKeys() {
  return SumOverKeyRealms(*idempotency_, [&](const std::string& realm) {
    return gate_->SettleStale(realm, [this](const idempotency::IdempotencyRecord& r) { return SettleOf(r); });
  });
}

void ApiServer::Impl::ReconcileKeys() {
  if (!options_.leader_running || options_.leader_running()) {
    Result<int64_t> settled = SettleStaleKeys();
    if (!settled.ok()) {
      VIGIL_LOG_WARN("idempotency: settling stale requests failed: {}", settled.status().ToString());
    } else if (*settled > 0) {
      VIGIL_LOG_INFO("idempotency: settled {} requests of a server that stopped", *settled);
    }
  }
  Result<int64_t> n = PurgeExpiredKeys();
  if (!n.ok()) VIGIL_LOG_WARN("idempotency: purging expired keys failed: {}", n.status().ToString());
}

void ApiServer::Impl::PurgeLoop() {
  // The first pass comes as soon as a stopped server's last reservations can be stale.
  std::chrono::milliseconds next(kStaleReservationMs + 1000);
  for (;;) {
    {
      MutexLock lock(&purge_mu_);
      if (options_.env->WaitForMs(lock, purge_cv_, next.count(),
                                  [this]() VIGIL_REQUIRES(purge_mu_) { return stopping_; })) {
        return;
      }
    }
    ReconcileKeys();
    next = kKeyReconcileInterval;
  }
}

ApiServer::ApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ApiServer::~ApiServer() {
  if (impl_->http_) impl_->http_->Shutdown(std::chrono::milliseconds(0));
  {
    MutexLock lock(&impl_->purge_mu_);
    impl_->stopping_ = true;
  }
  impl_->purge_cv_.notify_all();
  if (impl_->purge_thread_.joinable()) impl_->purge_thread_.join();
}

Result<std::unique_ptr<ApiServer>> ApiServer::Start(ApiServerOptions options) {
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(options.root_dir));
  VIGIL_ASSIGN_OR_RETURN(Config config, LoadConfig(root.path()));
  auto impl = std::make_unique<Impl>(std::move(options), std::move(root), std::move(config));
  VIGIL_RETURN_IF_ERROR(impl->Open());
  Impl* raw = impl.get();
  HttpServerOptions http = raw->options_.http;
  http.env = raw->options_.env;  // one clock for the whole API
  VIGIL_ASSIGN_OR_RETURN(raw->http_,
                         HttpServer::Start(std::move(http), [raw](HttpRequest& req) { return raw->Handle(req); }));
  raw->purge_thread_ = std::thread([raw] { raw->PurgeLoop(); });
  return std::unique_ptr<ApiServer>(new ApiServer(std::move(impl)));
}

uint16_t ApiServer::port() const { return impl_->http_->port(); }

void ApiServer::Shutdown(std::chrono::milliseconds grace) { impl_->http_->Shutdown(grace); }

}  // namespace vigil::server

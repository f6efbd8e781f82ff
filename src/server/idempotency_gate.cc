#include "server/idempotency_gate.h"

#include <openssl/evp.h>

#include <atomic>
#include <condition_variable>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "vigil/auth/sealed_text.h"
#include "vigil/common/ascii.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/hex.h"
#include "vigil/common/logging.h"
#include "vigil/common/mutex.h"
#include "vigil/idempotency/record.h"
#include "vigil/server/router.h"
#include "vigil/sql/result.h"

namespace vigil::server {

namespace {

// Renews a reservation's heartbeat until stopped, or until the reservation is found to be
// another's (taken over after this server stalled) or gone.
class Heartbeat {
 public:
  Heartbeat(idempotency::IdempotencyStore* store, const IdempotentRequest& req, const std::string& executor,
            int64_t interval_ms)
      : thread_([=, this] {
          while (!Stopping(std::chrono::milliseconds(interval_ms))) {
            auto r = store->UpdateHeartbeat(req.realm, req.key, executor);
            if (r.ok() && (r->status == idempotency::HeartbeatStatus::kLostOwnership ||
                           r->status == idempotency::HeartbeatStatus::kNotFound)) {
              VIGIL_LOG_WARN(
                  "idempotency key of {} lost its reservation while the request ran; its effect is "
                  "refused where the route confirms it",
                  req.operation);
              return;
            }
          }
        }) {}
  ~Heartbeat() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  // Waits up to `interval` for the destructor; true once it has asked to stop.
  bool Stopping(std::chrono::milliseconds interval) {
    MutexLock lock(&mu_);
    return lock.WaitFor(cv_, interval, [this]() VIGIL_REQUIRES(mu_) { return stop_; });
  }

  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ VIGIL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// The problem "code" of a JSON problem body, as the record's error subtype.
std::optional<std::string> ErrorSubtype(const HttpResponse& resp) {
  if (resp.status < 400) return std::nullopt;
  auto j = nlohmann::json::parse(resp.body, nullptr, false);
  if (j.is_object() && j.contains("code") && j["code"].is_string()) {
    return j["code"].get<std::string>().substr(0, idempotency::kMaxErrorSubtypeBytes);
  }
  return std::nullopt;
}

bool IsJson(const HttpResponse& resp) {
  for (const auto& [name, value] : resp.headers) {
    if ((name == "Content-Type" || name == "content-type") && value.find("json") != std::string::npos) return true;
  }
  return false;
}

// The member of a stored summary that holds a sealed body (no route answers with it).
constexpr char kSealedMember[] = "sealed_response";

// What a sealed body of (realm, key) is bound to: it opens for that record only.
std::string SealContext(const std::string& realm, const std::string& key) {
  return "idempotency-replay:" + std::to_string(realm.size()) + ":" + realm + key;
}

// The summary of a body that holds a bearer token: the body sealed under `secret`, or a note
// when it cannot be (too large); never the body in clear.
std::string SealedSummary(const auth::ServerSecret& secret, const std::string& realm, const std::string& key,
                          const std::string& body) {
  const size_t wrapped = auth::SealedTextSize(body.size()) + sizeof(kSealedMember) + 8;
  if (wrapped <= idempotency::kMaxResponseSummaryBytes) {
    Result<std::string> sealed = auth::SealText(secret, SealContext(realm, key), body);
    if (sealed.ok()) return nlohmann::json{{kSealedMember, *sealed}}.dump();
    VIGIL_LOG_WARN("idempotency: a response could not be sealed: {}", sealed.status().ToString());
  }
  return nlohmann::json{{"replayed_summary", true},
                        {"note",
                         "the original response held a bearer token that could not be kept; its effect "
                         "stands: ALTER USER name ROTATE TOKEN issues a new one"}}
      .dump();
}

// The record of `resp` as the stored outcome of (realm, key) by `executor`: the body when it
// is JSON and small enough (sealed under `secret` when it holds a bearer token), else a note;
// the headers on the replay allowlist.
idempotency::FinalizeRequest FinalizeFor(const std::string& realm, const std::string& key, const std::string& executor,
                                         const HttpResponse& resp, const auth::ServerSecret& secret) {
  idempotency::FinalizeRequest fin;
  fin.realm_id = realm;
  fin.idempotency_key = key;
  fin.executor_id = executor;
  fin.http_status = resp.status;
  fin.error_subtype = ErrorSubtype(resp);
  if (resp.holds_secret) {
    fin.response_summary = SealedSummary(secret, realm, key, resp.body);
  } else if (IsJson(resp) && resp.body.size() <= idempotency::kMaxResponseSummaryBytes &&
             nlohmann::json::accept(resp.body)) {
    fin.response_summary = resp.body;
  } else {
    nlohmann::json summary = {{"replayed_summary", true},
                              {"note", "the original response body was too large to keep; its effect stands"}};
    fin.response_summary = summary.dump();
  }
  for (const auto& [name, value] : resp.headers) {
    const std::string lower = AsciiLowered(name);
    if (idempotency::IsAllowedResponseHeader(lower)) fin.response_headers[lower] = value;
  }
  return fin;
}

// The stored answer of a request whose server stopped and whose effect no evidence can show.
HttpResponse OutcomeUnknown(const idempotency::IdempotencyRecord& record) {
  return ProblemResponse(409, "IDEMPOTENCY_OUTCOME_UNKNOWN",
                         "the server that ran this request (" + record.operation_type + " " + record.resource_id +
                             ") stopped before it answered, and nothing recorded tells whether it took effect; "
                             "check the resource, and send the request again under a new Idempotency-Key if it "
                             "is still needed");
}

}  // namespace

bool IsStoredStatus(int status) {
  return !(status == 401 || status == 403 || status == 408 || status == 429 || status >= 500);
}

const EVP_MD* Sha256Digest() {
  static const EVP_MD* const fetched = [] {
    const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    VIGIL_CHECK(md != nullptr);
    return md;
  }();
  return fetched;
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, Sha256Digest(), nullptr);
  return vigil::LowerHex(std::string_view(reinterpret_cast<const char*>(md), len));
}

std::string RequestFingerprint(std::string_view method, std::string_view path, std::string_view query,
                               std::string_view body_digest_input) {
  std::string text;
  for (std::string_view part : {method, path, query, body_digest_input}) {
    text += std::to_string(part.size()) + ":";
    text += part;
  }
  return Sha256Hex(text);
}

Result<std::optional<std::string>> ParseIdempotencyKey(std::string_view header) {
  if (header.empty()) return std::optional<std::string>();
  std::string_view key = header;
  if (key.size() >= 2 && key.front() == '"' && key.back() == '"') {
    key = key.substr(1, key.size() - 2);
    if (key.find('"') != std::string_view::npos || key.find('\\') != std::string_view::npos) {
      return Status::InvalidArgument("Idempotency-Key: a quoted key must not contain '\"' or '\\'");
    }
  } else if (key.front() == '"' || key.back() == '"') {
    return Status::InvalidArgument("Idempotency-Key: unbalanced quotes");
  }
  Status st = idempotency::ValidateKey("realm", key);
  if (!st.ok()) {
    return Status::InvalidArgument("Idempotency-Key must be 1 to 255 printable ASCII characters");
  }
  return std::optional<std::string>(std::string(key));
}

IdempotencyGate::IdempotencyGate(idempotency::IdempotencyStore* store, Metrics* metrics, std::string executor_id,
                                 int64_t ttl_ms, auth::ServerSecret seal_secret, int64_t heartbeat_ms, Env* env)
    : store_(store),
      metrics_(metrics),
      executor_id_(std::move(executor_id)),
      ttl_ms_(ttl_ms),
      seal_secret_(std::move(seal_secret)),
      heartbeat_ms_(heartbeat_ms),
      env_(env) {}

std::string UserKeyRealm(const KeyRealmOwner& owner) {
  std::string out = owner.realm;
  out.append(":").append(owner.user);
  if (!owner.incarnation.empty()) out.append(":").append(owner.incarnation);
  return out;
}

std::optional<KeyRealmOwner> ParseUserKeyRealm(std::string_view key_realm) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t colon = key_realm.find(':', start);
    parts.push_back(key_realm.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  for (std::string_view part : parts) {
    if (part.empty()) return std::nullopt;
  }
  return KeyRealmOwner{std::string(parts[0]), std::string(parts[1]),
                       parts.size() == 3 ? std::string(parts[2]) : std::string()};
}

std::string RequestToken(const idempotency::IdempotencyRecord& record) {
  return record.realm_id + "/" + record.idempotency_key + "/" + std::to_string(record.created_at_ms);
}

jobs::RequestClaim IdempotencyGate::ClaimOf(const idempotency::IdempotencyRecord& owned,
                                            std::shared_ptr<std::atomic<bool>> lost) {
  jobs::RequestClaim claim;
  claim.token = RequestToken(owned);
  claim.confirm = [store = store_, owned, lost = std::move(lost)](meta::Connection& conn) {
    Status st =
        store->ConfirmOwner(conn, owned.realm_id, owned.idempotency_key, owned.executor_id, owned.created_at_ms);
    if (st.code() == StatusCode::kFailedPrecondition) lost->store(true);
    return st;
  };
  return claim;
}

HttpResponse IdempotencyGate::Run(const IdempotentRequest& req, const RunFn& run, const SettleFn& settle) {
  idempotency::ReserveRequest reserve{req.realm,       req.key,      req.operation, req.resource,
                                      req.fingerprint, executor_id_, ttl_ms_};
  Result<idempotency::ReserveResult> reserved = store_->Reserve(reserve);
  if (!reserved.ok()) return ProblemResponse(reserved.status());
  idempotency::IdempotencyRecord owned = reserved->record;
  std::optional<idempotency::IdempotencyRecord> rerun;
  if (reserved->status == idempotency::ReserveStatus::kDuplicate) {
    const idempotency::IdempotencyRecord& record = reserved->record;
    if (record.operation_type != req.operation || record.resource_id != req.resource ||
        record.request_fingerprint != req.fingerprint) {
      metrics_->CountIdempotency("mismatch");
      return ProblemResponse(422, "IDEMPOTENCY_KEY_REUSED",
                             "this Idempotency-Key was used for a different request (" + record.operation_type + " " +
                                 record.resource_id + "); use a new key for a new request");
    }
    if (!record.in_progress()) {
      metrics_->CountIdempotency("replayed");
      return Replay(record);
    }
    HttpResponse resp = InProgress(req, record, settle, &rerun);
    if (!rerun) return resp;
    owned = *rerun;
  }
  metrics_->CountIdempotency(rerun ? "settled_rerun" : "reserved");
  HttpResponse resp;
  auto lost = std::make_shared<std::atomic<bool>>(false);
  try {
    Heartbeat heartbeat(store_, req, executor_id_, heartbeat_ms_);
    // Crash cut: the key is reserved, nothing of the request has happened yet.
    if (Status fp = failpoint::Hit("idempotency.after_reserve"); !fp.ok()) {
      resp = ProblemResponse(fp);
    } else {
      resp = run(ClaimOf(owned, lost));
    }
  } catch (...) {
    // The request failed inside the server (the HTTP layer answers 500): free the key, as for
    // any 5xx, rather than leave it reserved until it expires.
    Finish(req, ProblemResponse(500, "INTERNAL", "the request failed inside the server"));
    throw;
  }
  if (lost->load()) {
    // The effect was refused in its own transaction: the server that took the key over owns
    // the request and its answer now.
    metrics_->CountIdempotency("lost_ownership");
    HttpResponse taken = ProblemResponse(
        409, "IDEMPOTENCY_REQUEST_TAKEN_OVER",
        "this server stalled while it ran the request and another server took its Idempotency-Key over; "
        "nothing was changed here: retry with the same key to get that server's response");
    taken.headers.emplace_back("Retry-After", "1");
    return taken;
  }
  resp = Keepable(std::move(resp));
  Finish(req, resp);
  return resp;
}

HttpResponse IdempotencyGate::Keepable(HttpResponse resp) {
  if (resp.stream || resp.holds_secret || resp.body.size() <= idempotency::kMaxResponseSummaryBytes) return resp;
  if (!IsStoredStatus(resp.status) && !resp.committed) return resp;
  const std::string size = std::to_string(resp.body.size());
  HttpResponse refused = ProblemResponse(Status::ResourceExhausted(
      std::string(sql::kResultTooLarge) + ": the answer to this keyed request is " + size +
      " bytes; an Idempotency-Key keeps answers of up to " + std::to_string(idempotency::kMaxResponseSummaryBytes) +
      " bytes for replay, so it is not sent: narrow the request (LIMIT, fewer columns) or send it without a key" +
      (resp.committed ? "; what it committed stands" : "")));
  refused.committed = resp.committed;
  return refused;
}

void IdempotencyGate::Finish(const IdempotentRequest& req, const HttpResponse& resp) {
  // A commit conflict committed nothing and says so: the same key may run the request again.
  const bool transient = ErrorSubtype(resp) == std::optional<std::string>("COMMIT_CONFLICT");
  if ((!IsStoredStatus(resp.status) && !resp.committed) || resp.stream || (transient && !resp.committed)) {
    metrics_->CountIdempotency("not_stored");
    auto cancelled = store_->CancelInProgressReservation(req.realm, req.key, executor_id_);
    if (!cancelled.ok()) VIGIL_LOG_WARN("idempotency: cancel failed: {}", cancelled.status().ToString());
    return;
  }
  auto done = store_->Finalize(FinalizeFor(req.realm, req.key, executor_id_, resp, seal_secret_));
  if (!done.ok()) VIGIL_LOG_WARN("idempotency: finalize failed: {}", done.status().ToString());
}

Result<idempotency::IdempotencyRecord> IdempotencyGate::FinishAsOwner(const idempotency::IdempotencyRecord& record,
                                                                      const HttpResponse& found, const char* outcome) {
  VIGIL_ASSIGN_OR_RETURN(
      idempotency::FinalizeResult done,
      store_->Finalize(FinalizeFor(record.realm_id, record.idempotency_key, record.executor_id, found, seal_secret_)));
  if (!done.record || done.record->in_progress()) {
    return Status::Busy("the reservation of " + record.operation_type + " changed while it was settled");
  }
  metrics_->CountIdempotency(outcome);
  return std::move(*done.record);
}

HttpResponse IdempotencyGate::InProgress(const IdempotentRequest& req, const idempotency::IdempotencyRecord& record,
                                         const SettleFn& settle, std::optional<idempotency::IdempotencyRecord>* rerun) {
  const int64_t now = env_->NowMs();
  const bool owner_dead = record.executor_id != executor_id_ && now - record.heartbeat_at_ms > kStaleReservationMs;
  if (owner_dead && settle) {
    Result<std::optional<HttpResponse>> found = settle(RequestToken(record));
    if (found.ok() && *found) {
      // The effect is in place: finish the record as the dead owner's result.
      Result<idempotency::IdempotencyRecord> done = FinishAsOwner(record, **found, "settled_found");
      if (done.ok()) return Replay(*done);
    } else if (found.ok()) {
      // Provably not done and its owner is gone: take the key over and run the request. The
      // release holds only while the owner's heartbeat is still stale: an owner that confirmed
      // its effect meanwhile keeps the key.
      auto cancelled = store_->ReleaseStale(req.realm, req.key, record.executor_id, now - kStaleReservationMs);
      idempotency::ReserveRequest again{req.realm,       req.key,      req.operation, req.resource,
                                        req.fingerprint, executor_id_, ttl_ms_};
      auto reserved = cancelled.ok() && *cancelled ? store_->Reserve(again)
                                                   : Result<idempotency::ReserveResult>(Status::Busy("taken over"));
      if (reserved.ok() && reserved->status == idempotency::ReserveStatus::kOwned) {
        *rerun = reserved->record;
        return HttpResponse{};
      }
    } else {
      VIGIL_LOG_WARN("idempotency: settling {} failed: {}", req.operation, found.status().ToString());
    }
  }
  metrics_->CountIdempotency("conflict_in_progress");
  HttpResponse resp = ProblemResponse(
      409, "IDEMPOTENCY_REQUEST_IN_PROGRESS",
      owner_dead ? "the original request with this Idempotency-Key was running on a server that stopped; its "
                   "outcome is not known yet: check for its effect before sending the request under a new key"
                 : "the original request with this Idempotency-Key is still running; retry later to get its "
                   "response");
  resp.headers.emplace_back("Retry-After", "1");
  return resp;
}

Result<int64_t> IdempotencyGate::SettleStale(
    const std::string& realm, const std::function<SettleFn(const idempotency::IdempotencyRecord&)>& settle_of) {
  constexpr int kBatch = 100;
  const int64_t now = env_->NowMs();
  VIGIL_ASSIGN_OR_RETURN(std::vector<idempotency::IdempotencyRecord> stale,
                         store_->ListStale(realm, now - kStaleReservationMs, kBatch));
  int64_t settled = 0;
  for (const idempotency::IdempotencyRecord& record : stale) {
    if (record.executor_id == executor_id_) continue;  // this server's own request, still running
    const SettleFn settle = settle_of(record);
    if (!settle) {
      // Nothing can tell whether the request took effect (seed 003, case 2): a stable answer
      // for every retry instead of a 409 that never ends, and never a second run.
      if (FinishAsOwner(record, OutcomeUnknown(record), "settled_unknown").ok()) ++settled;
      continue;
    }
    Result<std::optional<HttpResponse>> found = settle(RequestToken(record));
    if (!found.ok()) {
      VIGIL_LOG_WARN("idempotency: settling {} {} failed: {}", record.operation_type, record.resource_id,
                     found.status().ToString());
      continue;
    }
    if (*found) {
      if (FinishAsOwner(record, **found, "settled_found").ok()) ++settled;
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(bool released, store_->ReleaseStale(record.realm_id, record.idempotency_key,
                                                               record.executor_id, now - kStaleReservationMs));
    if (released) {
      metrics_->CountIdempotency("settled_released");
      ++settled;
    }
  }
  return settled;
}

HttpResponse IdempotencyGate::Replay(const idempotency::IdempotencyRecord& record) {
  HttpResponse resp;
  resp.status = record.http_status.value_or(200);
  resp.body = record.response_summary.value_or("{}");
  const auto summary = nlohmann::json::parse(resp.body, nullptr, false);
  if (summary.is_object() && summary.size() == 1 && summary.contains(kSealedMember)) {
    const nlohmann::json& sealed = summary[kSealedMember];
    Result<std::string> body =
        sealed.is_string() ? auth::OpenSealedText(seal_secret_, SealContext(record.realm_id, record.idempotency_key),
                                                  sealed.get<std::string>())
                           : Result<std::string>(Status::Corruption("a sealed response is not text"));
    if (!body.ok()) {
      return ProblemResponse(Status::Corruption("the stored response of this Idempotency-Key does not open (" +
                                                body.status().message() + ")"));
    }
    resp.body = std::move(*body);
    resp.holds_secret = true;
  }
  bool has_type = false;
  for (const auto& [name, value] : record.response_headers) {
    resp.headers.emplace_back(name == "content-type" ? "Content-Type" : name == "location" ? "Location" : name, value);
    has_type = has_type || name == "content-type";
  }
  if (!has_type) resp.headers.emplace_back("Content-Type", "application/json");
  resp.headers.emplace_back("Idempotency-Replayed", "true");
  return resp;
}

}  // namespace vigil::server

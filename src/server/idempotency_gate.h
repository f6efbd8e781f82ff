// Idempotency-Key handling of the HTTP API (seed 003; the IETF
// httpapi-idempotency-key-header draft): a mutating request with a key is
// reserved under (realm, key) with its operation, resource and a fingerprint
// of the request; the first runs, a duplicate of a finished one is replayed
// (original status and body, `Idempotency-Replayed: true`; a body that holds a
// bearer token is stored sealed under the server secret), a duplicate of one
// still running is 409, the same key with another request is 422. Responses
// that prove nothing happened or that must not stick (401, 403, 408, 429, 5xx)
// are not stored (the reservation is cancelled and the key is free again) unless
// part of the request committed (HttpResponse::committed). A replay is the
// original answer byte for byte: one too large to keep is never sent at all.
// While a request runs, its reservation's heartbeat is renewed. A reservation
// whose owner stopped heart-beating (its server died mid-request) is settled
// from evidence when the route can look for its effect (an append finds its key
// in the table's history): found, it is finished with that result; provably
// absent, the request runs again; otherwise it stays a 409 that says so. An
// owner that was only stalled cannot then add its effect: appends and admissions
// confirm the reservation in the effect's own transaction (RequestClaim) and the
// takeover releases a reservation only while its heartbeat is stale.
// Thread safety: thread-safe.
#pragma once

#include <openssl/evp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/metrics.h"
#include "vigil/auth/server_secret.h"
#include "vigil/common/env.h"
#include "vigil/idempotency/store.h"
#include "vigil/jobs/request_claim.h"
#include "vigil/server/http_server.h"

namespace vigil::server {

// What identifies a request for its key.
struct IdempotentRequest {
  std::string realm;
  std::string key;          // the Idempotency-Key value, unquoted
  std::string operation;    // "POST /v1/databases/{db}/tables"
  std::string resource;     // "/v1/databases/d/tables"
  std::string fingerprint;  // RequestFingerprint(...)
};

// The Idempotency-Key header: nullopt when absent; InvalidArgument when malformed (empty,
// longer than 255 bytes, not printable ASCII, or a badly quoted structured-field string).
Result<std::optional<std::string>> ParseIdempotencyKey(std::string_view header);

// Lower-case hex SHA-256 of method, path, the canonical query and `body_digest_input`
// (a JSON body in canonical form, or the digest of an uploaded body).
std::string RequestFingerprint(std::string_view method, std::string_view path, std::string_view query,
                               std::string_view body_digest_input);
// Lower-case hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);
// SHA-256 as OpenSSL's implementation, fetched once for the process: digests made with it skip
// the per-call lookup (a lock every serving thread would otherwise take). Never null.
const EVP_MD* Sha256Digest();

// Decides from evidence what became of the request `token` (RequestToken) whose owner died:
// its response when the effect is found, nullopt when the effect provably did not happen
// (the request may run again), an error when it cannot tell.
using SettleFn = std::function<Result<std::optional<HttpResponse>>(const std::string& token)>;
// Runs a reserved request; `claim` carries its token (RequestToken), which marks its effect,
// and the confirm that fences the effect on the reservation still being this request's.
using RunFn = std::function<HttpResponse(const jobs::RequestClaim& claim)>;

// Whose idempotency keys a realm of the store holds: one incarnation of one user.
struct KeyRealmOwner {
  std::string realm;
  std::string user;
  std::string incarnation;  // auth::UserInfo::incarnation; '' for users of schema version 1

  bool operator==(const KeyRealmOwner&) const = default;
};
// The idempotency realm of a user: "<realm>:<user>:<incarnation>" ("<realm>:<user>" for an
// empty incarnation), so keys are per user, and a user created again under a dropped user's
// name never meets the old user's keys (names are identifiers and hold no ':').
std::string UserKeyRealm(const KeyRealmOwner& owner);
// The owner of a UserKeyRealm; nullopt when `key_realm` is not one.
std::optional<KeyRealmOwner> ParseUserKeyRealm(std::string_view key_realm);

// What marks the effect of one reservation: "<realm>/<key>/<reserved at, ms>". A key reused
// after its record expired gets a new token, so an old effect never settles a new request.
std::string RequestToken(const idempotency::IdempotencyRecord& record);

// A reservation whose heartbeat is older than this belongs to a server that stopped.
constexpr int64_t kStaleReservationMs = 10'000;
// How often a running request renews its reservation's heartbeat.
constexpr int64_t kHeartbeatMs = 2'000;

class IdempotencyGate {
 public:
  // `env` (the store's) tells whether a reservation's heartbeat is stale. A response that holds
  // a bearer token (HttpResponse::holds_secret) is stored sealed under `seal_secret`.
  IdempotencyGate(idempotency::IdempotencyStore* store, Metrics* metrics, std::string executor_id, int64_t ttl_ms,
                  auth::ServerSecret seal_secret, int64_t heartbeat_ms = kHeartbeatMs, Env* env = Env::Default());

  // Runs `run` at most once for the request's key and returns its response, or the
  // replay / 409 / 422 answer for a duplicate. `settle` (may be empty) settles a
  // reservation left in progress by a dead owner.
  HttpResponse Run(const IdempotentRequest& req, const RunFn& run, const SettleFn& settle = nullptr);

  // The reconciler's pass over `realm`: each reservation whose owner stopped heart-beating
  // is settled from evidence by `settle_of(record)`: finished with the effect's response
  // when found, released (the key is free again) when the effect provably did not happen.
  // When no evidence exists for its route (`settle_of` empty) it is finished as 409
  // IDEMPOTENCY_OUTCOME_UNKNOWN, replayed to every retry. Returns how many were settled; those
  // whose evidence cannot be read now stay in progress.
  Result<int64_t> SettleStale(const std::string& realm,
                              const std::function<SettleFn(const idempotency::IdempotencyRecord&)>& settle_of);

  int64_t ttl_ms() const { return ttl_ms_; }

 private:
  HttpResponse Replay(const idempotency::IdempotencyRecord& record);
  // `resp` when a replay can give it back whole; else (a body past kMaxResponseSummaryBytes)
  // the 422 RESULT_TOO_LARGE that both the request and its replays answer.
  static HttpResponse Keepable(HttpResponse resp);
  // The claim of the reservation `owned`: its confirm sets *lost when the key was taken over.
  jobs::RequestClaim ClaimOf(const idempotency::IdempotencyRecord& owned, std::shared_ptr<std::atomic<bool>> lost);
  // The answer to a duplicate of a request in progress: settled when its owner is dead and
  // `settle` can tell, else 409. Sets *rerun to the new reservation when the request should
  // run again.
  HttpResponse InProgress(const IdempotentRequest& req, const idempotency::IdempotencyRecord& record,
                          const SettleFn& settle, std::optional<idempotency::IdempotencyRecord>* rerun);
  // Finishes a dead owner's reservation with `found` (the response its effect shows, or the
  // outcome-unknown answer), counted as `outcome`; the stored record.
  Result<idempotency::IdempotencyRecord> FinishAsOwner(const idempotency::IdempotencyRecord& record,
                                                       const HttpResponse& found, const char* outcome);
  void Finish(const IdempotentRequest& req, const HttpResponse& resp);

  idempotency::IdempotencyStore* store_;
  Metrics* metrics_;
  const std::string executor_id_;
  const int64_t ttl_ms_;
  const auth::ServerSecret seal_secret_;
  const int64_t heartbeat_ms_;
  Env* const env_;
};

// Whether a response is kept for replay (seed 003: not 401, 403, 408, 429 or 5xx).
bool IsStoredStatus(int status);

}  // namespace vigil::server

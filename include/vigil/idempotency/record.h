// The idempotency record (seed 003, DESIGN.md section 8): one row per
// (realm_id, idempotency_key) binding a request to the executor that runs it
// and, once finished, to the outcome replayed for duplicates. Also the
// requests that create and finish records, with their validation. Plain
// values; validation functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/common/status.h"

namespace vigil::idempotency {

constexpr size_t kMaxKeyBytes = 255;  // Idempotency-Key header value
constexpr size_t kMaxRealmBytes = 255;
constexpr size_t kMaxOperationTypeBytes = 64;
constexpr size_t kMaxResourceIdBytes = 1024;
constexpr size_t kMaxFingerprintBytes = 128;
constexpr size_t kMaxExecutorIdBytes = 255;
constexpr size_t kMaxErrorSubtypeBytes = 128;
// A keyed request's answer is kept whole up to this; a larger answer to a keyed request is
// refused (422 RESULT_TOO_LARGE) rather than replayed as anything else.
constexpr size_t kMaxResponseSummaryBytes = 1024 * 1024;
constexpr size_t kMaxHeaderValueBytes = 1024;

// Response headers a record may keep for replay (lower-case); any other is rejected.
bool IsAllowedResponseHeader(std::string_view lower_case_name);

struct IdempotencyRecord {
  // Tenant namespace of the key; every operation is scoped to one realm.
  std::string realm_id;
  // The client's Idempotency-Key: 1-255 printable ASCII bytes.
  std::string idempotency_key;
  // What the original request does, e.g. "create-index"; a duplicate with another is a 422.
  std::string operation_type;
  // What it acts on, e.g. "local.db.docs"; a duplicate with another is a 422.
  std::string resource_id;
  // Digest of the request body; a duplicate with another is a 422.
  std::string request_fingerprint;
  // The process (node id + epoch) that reserved the key and alone may heartbeat or finalize it.
  std::string executor_id;
  // HTTP status of the finished original; nullopt while the request is in progress.
  std::optional<int> http_status;
  // Vigil error subtype of a finished failure (e.g. "FENCE_BUSY"); nullopt for success.
  std::optional<std::string> error_subtype;
  // Compact JSON from which the response is rebuilt for a duplicate (<= 16 KiB); not the full body.
  std::optional<std::string> response_summary;
  // Allowlisted response headers to replay, names lower-case.
  std::map<std::string, std::string> response_headers;
  int64_t created_at_ms = 0;               // when reserved
  int64_t updated_at_ms = 0;               // last change of any kind
  int64_t heartbeat_at_ms = 0;             // last liveness proof of the owner; equals created_at at reserve
  std::optional<int64_t> finalized_at_ms;  // set together with http_status
  int64_t expires_at_ms = 0;               // after this the record may be purged (once finalized)

  bool in_progress() const { return !http_status.has_value(); }
  bool operator==(const IdempotencyRecord&) const = default;
};

struct ReserveRequest {
  std::string realm_id;
  std::string idempotency_key;
  std::string operation_type;
  std::string resource_id;
  std::string request_fingerprint;
  std::string executor_id;
  int64_t ttl_ms = 24 * 3600 * 1000;  // expires_at = now + ttl_ms
};

struct FinalizeRequest {
  std::string realm_id;
  std::string idempotency_key;
  std::string executor_id;
  int http_status = 200;  // 100-599
  std::optional<std::string> error_subtype;
  std::optional<std::string> response_summary;          // valid JSON when present
  std::map<std::string, std::string> response_headers;  // names matched case-insensitively
};

// InvalidArgument naming the first malformed field: an empty, oversized or non-printable key,
// realm, executor, operation type or fingerprint; a non-positive TTL.
Status ValidateReserve(const ReserveRequest& req);
// InvalidArgument for a malformed identity, an HTTP status outside 100-599, a summary over
// 16 KiB or not JSON, a header outside the allowlist or with a value containing CR/LF or over
// 1 KiB. On success lower-cases the header names in place.
Status ValidateFinalize(FinalizeRequest* req);
// InvalidArgument for an empty, oversized or non-printable realm id or key.
Status ValidateKey(std::string_view realm_id, std::string_view idempotency_key);

// Headers as stored in the database: a JSON object of name -> value.
std::string EncodeHeaders(const std::map<std::string, std::string>& headers);
// Corruption when `json` is not an object of strings.
Result<std::map<std::string, std::string>> DecodeHeaders(std::string_view json);

}  // namespace vigil::idempotency

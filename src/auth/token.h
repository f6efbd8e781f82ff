// Bearer-token mechanics of the principal store: the token format
// ("vgl_<16 hex id>_<64 hex secret>"), random ids and secrets from RAND_bytes,
// the stored HMAC-SHA256 of a secret under the server secret, and the
// constant-time comparison (CRYPTO_memcmp) every check goes through.
// Thread safety: pure functions (the comparison counter is atomic).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/auth/server_secret.h"
#include "vigil/common/status.h"

namespace vigil::auth::internal {

constexpr std::string_view kTokenPrefix = "vgl_";
constexpr size_t kTokenIdBytes = 8;       // 16 hex digits
constexpr size_t kTokenSecretBytes = 32;  // 64 hex digits
constexpr size_t kTokenIdHexLength = 2 * kTokenIdBytes;
constexpr size_t kTokenSecretHexLength = 2 * kTokenSecretBytes;
constexpr size_t kTokenLength = kTokenPrefix.size() + kTokenIdHexLength + 1 + kTokenSecretHexLength;

struct ParsedToken {
  std::string token_id;    // 16 lower-case hex digits
  std::string secret_hex;  // 64 lower-case hex digits
};

// The parts of a well-formed token; nullopt for anything else (no detail: callers answer
// every bad token alike).
std::optional<ParsedToken> ParseToken(std::string_view token);
// "vgl_" + id + "_" + secret.
std::string FormatToken(std::string_view token_id, std::string_view secret_hex);
// `bytes` random bytes as lower-case hex; Internal when RAND_bytes fails.
Result<std::string> RandomHex(size_t bytes);
// Lower-case hex of HMAC-SHA256 under `secret` of the token id and secret (bound together, so a
// stored value cannot be moved to another token id).
std::string TokenSecretHmac(const ServerSecret& secret, std::string_view token_id, std::string_view secret_hex);
// 16 hex digits naming `secret` (an HMAC of a fixed label, revealing nothing of the secret).
std::string ServerKeyId(const ServerSecret& secret);
// a == b in time independent of where they differ (CRYPTO_memcmp); different lengths are unequal.
bool ConstantTimeEquals(std::string_view a, std::string_view b);
// How many times ConstantTimeEquals ran in this process (tests check the paths use it).
uint64_t ConstantTimeCompareCount();

}  // namespace vigil::auth::internal

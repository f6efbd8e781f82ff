// Sealing a short text under the root's server secret, for a text that must be
// kept a while but never stored in clear: a response that issued a bearer token,
// kept for an idempotent replay. AES-256-GCM under a key derived from the
// secret (HMAC-SHA256 of a fixed label), a random 96-bit nonce per text; the
// caller's context (e.g. the record's realm and key) is authenticated with the
// text, so a sealed text opens only under the same secret and context.
// Thread safety: pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "vigil/auth/server_secret.h"
#include "vigil/common/status.h"

namespace vigil::auth {

// "v1:" and lower-case hex of nonce, ciphertext and tag (SealedTextSize(text.size()) characters).
Result<std::string> SealText(const ServerSecret& secret, std::string_view context, std::string_view text);

// The text `sealed` holds. Corruption when it is malformed, was sealed under another secret or
// context, or was altered; the message never quotes it.
Result<std::string> OpenSealedText(const ServerSecret& secret, std::string_view context, std::string_view sealed);

// The length of SealText's answer for a text of `text_bytes`.
size_t SealedTextSize(size_t text_bytes);

}  // namespace vigil::auth

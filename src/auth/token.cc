#include "auth/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <atomic>
#include <vector>

#include "vigil/common/hex.h"

namespace vigil::auth::internal {

namespace {

std::atomic<uint64_t> compare_count{0};

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string Hex(const unsigned char* data, size_t n) {
  return LowerHex(std::string_view(reinterpret_cast<const char*>(data), n));
}

std::string HmacHex(const ServerSecret& secret, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  unsigned char* done = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                             reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_len);
  VIGIL_CHECK(done != nullptr && mac_len == 32);
  std::string out = Hex(mac, mac_len);
  OPENSSL_cleanse(mac, sizeof(mac));
  return out;
}

}  // namespace

std::optional<ParsedToken> ParseToken(std::string_view token) {
  if (token.size() != kTokenLength) return std::nullopt;
  if (token.substr(0, kTokenPrefix.size()) != kTokenPrefix) return std::nullopt;
  std::string_view rest = token.substr(kTokenPrefix.size());
  std::string_view id = rest.substr(0, kTokenIdHexLength);
  if (rest[kTokenIdHexLength] != '_') return std::nullopt;
  std::string_view secret = rest.substr(kTokenIdHexLength + 1);
  if (!IsLowerHex(id) || !IsLowerHex(secret)) return std::nullopt;
  return ParsedToken{std::string(id), std::string(secret)};
}

std::string FormatToken(std::string_view token_id, std::string_view secret_hex) {
  std::string out(kTokenPrefix);
  out += token_id;
  out += '_';
  out += secret_hex;
  return out;
}

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) {
    return Status::Internal("RAND_bytes failed: no random bytes for a token");
  }
  std::string out = Hex(buf.data(), buf.size());
  OPENSSL_cleanse(buf.data(), buf.size());
  return out;
}

std::string TokenSecretHmac(const ServerSecret& secret, std::string_view token_id, std::string_view secret_hex) {
  std::string message = "vigil-token-v1:";
  message += token_id;
  message += ':';
  message += secret_hex;
  std::string out = HmacHex(secret, message);
  OPENSSL_cleanse(message.data(), message.size());
  return out;
}

std::string ServerKeyId(const ServerSecret& secret) { return HmacHex(secret, "vigil-server-key-id-v1").substr(0, 16); }

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  compare_count.fetch_add(1, std::memory_order_relaxed);
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

uint64_t ConstantTimeCompareCount() { return compare_count.load(std::memory_order_relaxed); }

}  // namespace vigil::auth::internal

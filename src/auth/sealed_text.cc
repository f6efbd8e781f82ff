#include "vigil/auth/sealed_text.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <memory>

#include "vigil/common/hex.h"

namespace vigil::auth {

namespace {

constexpr std::string_view kVersion = "v1:";
constexpr std::string_view kKeyLabel = "vigil-sealed-text-key-v1";
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;

// The AES-256 key of `secret`, wiped when it goes out of scope.
class SealKey {
 public:
  explicit SealKey(const ServerSecret& secret) {
    unsigned int len = 0;
    unsigned char* done =
        HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
             reinterpret_cast<const unsigned char*>(kKeyLabel.data()), kKeyLabel.size(), bytes_.data(), &len);
    VIGIL_CHECK(done != nullptr && len == bytes_.size());
  }
  ~SealKey() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }
  SealKey(const SealKey&) = delete;
  SealKey& operator=(const SealKey&) = delete;
  const unsigned char* data() const { return bytes_.data(); }

 private:
  std::array<unsigned char, 32> bytes_{};
};

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

const unsigned char* Bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

Status NotSealed() {
  return Status::Corruption(
      "a sealed text does not open: it is malformed, altered, or was sealed under another "
      "server secret");
}

}  // namespace

size_t SealedTextSize(size_t text_bytes) { return kVersion.size() + 2 * (kNonceBytes + text_bytes + kTagBytes); }

Result<std::string> SealText(const ServerSecret& secret, std::string_view context, std::string_view text) {
  if (!secret.is_set()) return Status::InvalidArgument("sealing a text needs the server secret");
  const SealKey key(secret);
  std::string out(kNonceBytes + text.size() + kTagBytes, '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(nonce, static_cast<int>(kNonceBytes)) != 1) return Status::Internal("RAND_bytes failed");
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  auto* sealed = nonce + kNonceBytes;
  bool ok = ctx != nullptr && EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nonce) == 1 &&
            EVP_EncryptUpdate(ctx.get(), nullptr, &len, Bytes(context), static_cast<int>(context.size())) == 1 &&
            EVP_EncryptUpdate(ctx.get(), sealed, &len, Bytes(text), static_cast<int>(text.size())) == 1 &&
            static_cast<size_t>(len) == text.size() && EVP_EncryptFinal_ex(ctx.get(), sealed + len, &len) == 1 &&
            len == 0 && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, sealed + text.size()) == 1;
  if (!ok) return Status::Internal("AES-256-GCM sealing failed");
  std::string hex(kVersion);
  AppendLowerHex(hex, out);
  return hex;
}

Result<std::string> OpenSealedText(const ServerSecret& secret, std::string_view context, std::string_view sealed) {
  if (!secret.is_set()) return Status::InvalidArgument("opening a sealed text needs the server secret");
  if (sealed.substr(0, kVersion.size()) != kVersion) return NotSealed();
  std::optional<std::string> raw = ParseHex(sealed.substr(kVersion.size()));
  if (!raw || raw->size() < kNonceBytes + kTagBytes) return NotSealed();
  const SealKey key(secret);
  const auto* nonce = Bytes(*raw);
  const size_t text_bytes = raw->size() - kNonceBytes - kTagBytes;
  std::string text(text_bytes, '\0');
  std::array<unsigned char, kTagBytes> tag{};
  std::copy(nonce + kNonceBytes + text_bytes, nonce + raw->size(), tag.begin());
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  auto* plain = reinterpret_cast<unsigned char*>(text.data());
  bool ok = ctx != nullptr && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nonce) == 1 &&
            EVP_DecryptUpdate(ctx.get(), nullptr, &len, Bytes(context), static_cast<int>(context.size())) == 1 &&
            EVP_DecryptUpdate(ctx.get(), plain, &len, nonce + kNonceBytes, static_cast<int>(text_bytes)) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1;
  int tail = 0;
  if (!ok || EVP_DecryptFinal_ex(ctx.get(), plain + len, &tail) != 1) {
    OPENSSL_cleanse(text.data(), text.size());
    return NotSealed();
  }
  return text;
}

}  // namespace vigil::auth

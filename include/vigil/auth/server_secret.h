// The server secret: 32 random bytes under which bearer-token secrets are
// stored (HMAC-SHA256), kept in `<root>/_meta/server.secret` (mode 0600, owned
// by the server's user). It is created once, atomically, and never overwritten;
// every node of a deployment must use the same file. A store opened with
// another secret cannot authenticate tokens issued under the old one: losing
// or replacing the file means issuing every token again (Bootstrap restores an
// administrator). The secret's bytes never appear in messages.
// Thread safety: ServerSecret is an immutable value; the functions are
// thread-safe and safe against concurrent processes creating the same file.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "vigil/common/status.h"

namespace vigil::auth {

// File name of the secret inside `<root>/_meta`.
constexpr std::string_view kServerSecretFileName = "server.secret";

class ServerSecret {
 public:
  static constexpr size_t kSize = 32;

  ServerSecret() = default;  // unset; a PrincipalStore refuses it
  ServerSecret(const ServerSecret&) = default;
  ServerSecret& operator=(const ServerSecret&) = default;
  ~ServerSecret();  // wipes the bytes

  // kSize bytes from OpenSSL's RAND_bytes; Internal when the generator fails.
  static Result<ServerSecret> Generate();
  // Exactly kSize bytes; InvalidArgument otherwise (the message gives the length only).
  static Result<ServerSecret> FromBytes(std::string_view bytes);

  bool is_set() const { return set_; }
  const unsigned char* data() const { return bytes_.data(); }
  static constexpr size_t size() { return kSize; }

 private:
  std::array<unsigned char, kSize> bytes_{};
  bool set_ = false;
};

// `<root_dir>/_meta/server.secret`.
std::string ServerSecretPath(const std::string& root_dir);

// Loads `<root_dir>/_meta/server.secret`, creating it first when missing (`_meta` is created
// 0700 when missing; the file is written 0600 and fsynced under a temporary name, then linked
// into place, so a concurrent creator's file wins and is read instead). Refuses a file that is
// not a regular file (symbolic links are not followed), is not owned by the effective user,
// grants group or other any access (FailedPrecondition, saying what to do), or is not exactly
// 32 bytes (Corruption).
Result<ServerSecret> LoadOrCreateServerSecret(const std::string& root_dir);

}  // namespace vigil::auth

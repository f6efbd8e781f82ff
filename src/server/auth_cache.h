// Bearer tokens this server authenticated recently, so that a burst of requests
// with one token costs one check of the principal store (HMAC, a read
// transaction and the user's grants) instead of one per request. An entry is
// used for at most `ttl_ms`; the server clears every entry after each request
// that can change users, tokens or grants, so such a change made through this
// server applies to its next request, and one made elsewhere (another server,
// the embedded shell) within `ttl_ms`. An authentication that read the store
// before a clear is not remembered (Generation). Keys are SHA-256 digests of the tokens,
// never the tokens. At most `capacity` entries; when full, expired entries go
// first, then all.
// Thread safety: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "vigil/auth/principal_store.h"
#include "vigil/common/env.h"
#include "vigil/common/mutex.h"

namespace vigil::server {

class AuthCache {
 public:
  AuthCache(Env* env, int64_t ttl_ms, size_t capacity);

  // The caller of `token` when it was authenticated less than ttl_ms ago and not cleared since.
  std::optional<auth::Authenticated> Find(std::string_view token);
  // Counts the clears; read it before authenticating and pass it to Insert.
  uint64_t Generation();
  // Remembers a successful authentication of `token` that began at `generation`; nothing when
  // the cache was cleared since (the store may have changed under it) or ttl_ms is 0.
  void Insert(std::string_view token, const auth::Authenticated& caller, uint64_t generation);
  // Forgets every entry (users, tokens or grants may have changed).
  void Clear();

 private:
  struct Entry {
    auth::Authenticated caller;
    int64_t expires_ms = 0;
  };

  Env* const env_;
  const int64_t ttl_ms_;
  const size_t capacity_;
  Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ VIGIL_GUARDED_BY(mu_);
  uint64_t generation_ VIGIL_GUARDED_BY(mu_) = 0;
};

}  // namespace vigil::server

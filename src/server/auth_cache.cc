#include "server/auth_cache.h"

#include "server/idempotency_gate.h"

namespace vigil::server {

AuthCache::AuthCache(Env* env, int64_t ttl_ms, size_t capacity) : env_(env), ttl_ms_(ttl_ms), capacity_(capacity) {}

std::optional<auth::Authenticated> AuthCache::Find(std::string_view token) {
  if (ttl_ms_ <= 0) return std::nullopt;
  const std::string key = Sha256Hex(token);
  const int64_t now = env_->MonotonicMs();
  MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  if (now >= it->second.expires_ms) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.caller;
}

uint64_t AuthCache::Generation() {
  MutexLock lock(&mu_);
  return generation_;
}

void AuthCache::Insert(std::string_view token, const auth::Authenticated& caller, uint64_t generation) {
  if (ttl_ms_ <= 0 || capacity_ == 0) return;
  const std::string key = Sha256Hex(token);
  const int64_t now = env_->MonotonicMs();
  MutexLock lock(&mu_);
  if (generation != generation_) return;
  if (entries_.size() >= capacity_) {
    std::erase_if(entries_, [now](const auto& e) { return now >= e.second.expires_ms; });
    if (entries_.size() >= capacity_) entries_.clear();
  }
  entries_[key] = Entry{caller, now + ttl_ms_};
}

void AuthCache::Clear() {
  MutexLock lock(&mu_);
  ++generation_;
  entries_.clear();
}

}  // namespace vigil::server

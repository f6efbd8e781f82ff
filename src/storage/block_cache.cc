#include <cstdlib>
#include <string>

#include "vigil/common/logging.h"
#include "vigil/storage/fragment.h"

namespace vigil {

namespace {

constexpr size_t kDefaultCacheMb = 256;
constexpr size_t kMaxCacheMb = size_t{1} << 30;

// VIGIL_BLOCK_CACHE_MB as a whole number of MiB (0 disables caching); the
// default when unset or malformed.
size_t CapacityFromEnvironment() {
  const char* env = std::getenv("VIGIL_BLOCK_CACHE_MB");
  if (env == nullptr || *env == '\0') return kDefaultCacheMb << 20;
  char* end = nullptr;
  unsigned long long mb = std::strtoull(env, &end, 10);
  if (*end != '\0' || env[0] == '-' || mb > kMaxCacheMb) {
    VIGIL_LOG_WARN("VIGIL_BLOCK_CACHE_MB='{}' is not a size in MiB; using {}", env, kDefaultCacheMb);
    return kDefaultCacheMb << 20;
  }
  return static_cast<size_t>(mb) << 20;
}

}  // namespace

BlockCache::BlockCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

BlockCache* BlockCache::Default() {
  static BlockCache* cache = new BlockCache(CapacityFromEnvironment());  // never destroyed
  return cache;
}

std::shared_ptr<const Column> BlockCache::Lookup(const std::string& key) {
  MutexLock lock(&mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->column;
}

void BlockCache::Insert(const std::string& key, std::shared_ptr<const Column> column) {
  const size_t bytes = column->MemoryBytes() + key.size() + sizeof(Node);
  MutexLock lock(&mu_);
  auto it = map_.find(key);
  if (it != map_.end()) {
    usage_ -= it->second->bytes;
    lru_.erase(it->second);
    map_.erase(it);
  }
  if (bytes > capacity_) return;  // would evict everything and still not fit
  lru_.push_front(Node{key, std::move(column), bytes});
  map_.emplace(key, lru_.begin());
  usage_ += bytes;
  while (usage_ > capacity_) {
    Node& victim = lru_.back();
    usage_ -= victim.bytes;
    map_.erase(victim.key);
    lru_.pop_back();
  }
}

void BlockCache::Erase(const std::string& key) {
  MutexLock lock(&mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return;
  usage_ -= it->second->bytes;
  lru_.erase(it->second);
  map_.erase(it);
}

size_t BlockCache::usage_bytes() const {
  MutexLock lock(&mu_);
  return usage_;
}

}  // namespace vigil

#include <cstdlib>
#include <string>

#include "vigil/common/logging.h"
#include "vigil/storage/fragment.h"

namespace vigil {

namespace {

constexpr size_t kDefaultCacheMb = 256;
constexpr size_t kMaxCacheMb = size_t{1} << 30;
// What an entry costs beside its column and key: its list node and map slot.
constexpr size_t kEntryOverheadBytes = 64;

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

BlockCache* BlockCache::Default() {
  static BlockCache* cache = new BlockCache(CapacityFromEnvironment());  // never destroyed
  return cache;
}

void BlockCache::Insert(const std::string& key, std::shared_ptr<const Column> column) {
  const size_t bytes = column->MemoryBytes() + key.size() + kEntryOverheadBytes;
  cache_.Put(key, std::move(column), bytes);
}

}  // namespace vigil

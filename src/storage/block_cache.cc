#include <string>

#include "vigil/common/config.h"
#include "vigil/storage/fragment.h"

namespace vigil {

namespace {

// What an entry costs beside its column and key: its list node and map slot.
constexpr size_t kEntryOverheadBytes = 64;

}  // namespace

BlockCache* BlockCache::Default() {
  static BlockCache* cache = new BlockCache(StorageConfig().block_cache_bytes);  // never destroyed
  return cache;
}

void BlockCache::Insert(const std::string& key, std::shared_ptr<const Column> column) {
  const size_t bytes = column->MemoryBytes() + key.size() + kEntryOverheadBytes;
  cache_.Put(key, std::move(column), bytes);
}

}  // namespace vigil

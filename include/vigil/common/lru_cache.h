// The one least-recently-used cache of decoded, immutable items (fragment
// blocks, BTREE pages, BITMAP bitmaps), bounded by the bytes its callers
// charge per item. Items are shared: an evicted item stays alive for whoever
// still holds it. Thread safety: every method is thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <unordered_map>

#include "vigil/common/mutex.h"

namespace vigil {

template <typename Key, typename T, typename Hash = std::hash<Key>>
class LruCache {
 public:
  explicit LruCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The item under `key`, now the most recently used; null when absent.
  std::shared_ptr<const T> Get(const Key& key) {
    MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->item;
  }

  // Stores `item` under `key` charged `bytes`, replacing an item already there, and evicts the
  // least recently used items until the total fits. An item larger than the whole capacity is
  // not stored (it would evict everything and still not fit).
  void Put(const Key& key, std::shared_ptr<const T> item, size_t bytes) {
    MutexLock lock(&mu_);
    EraseLocked(key);
    if (bytes > capacity_) return;
    lru_.push_front(Entry{key, std::move(item), bytes});
    map_.emplace(key, lru_.begin());
    usage_ += bytes;
    EvictToCapacityLocked();
  }

  // Bounds the cache by `capacity_bytes` from now on, evicting the least recently used items
  // until the total fits (0: nothing is kept).
  void SetCapacity(size_t capacity_bytes) {
    MutexLock lock(&mu_);
    capacity_ = capacity_bytes;
    EvictToCapacityLocked();
  }

  void Erase(const Key& key) {
    MutexLock lock(&mu_);
    EraseLocked(key);
  }

  // The bytes charged by the items held now (never above capacity_bytes()).
  size_t usage_bytes() const {
    MutexLock lock(&mu_);
    return usage_;
  }
  size_t capacity_bytes() const {
    MutexLock lock(&mu_);
    return capacity_;
  }

 private:
  struct Entry {
    Key key;
    std::shared_ptr<const T> item;
    size_t bytes;
  };

  void EvictToCapacityLocked() VIGIL_REQUIRES(mu_) {
    while (usage_ > capacity_) {
      usage_ -= lru_.back().bytes;
      map_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }

  void EraseLocked(const Key& key) VIGIL_REQUIRES(mu_) {
    auto it = map_.find(key);
    if (it == map_.end()) return;
    usage_ -= it->second->bytes;
    lru_.erase(it->second);
    map_.erase(it);
  }

  mutable Mutex mu_;
  size_t capacity_ VIGIL_GUARDED_BY(mu_);
  std::list<Entry> lru_ VIGIL_GUARDED_BY(mu_);  // front = most recent
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> map_ VIGIL_GUARDED_BY(mu_);
  size_t usage_ VIGIL_GUARDED_BY(mu_) = 0;
};

}  // namespace vigil

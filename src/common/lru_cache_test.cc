#include "vigil/common/lru_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace vigil {
namespace {

std::shared_ptr<const std::string> Item(const char* text) { return std::make_shared<const std::string>(text); }

TEST(LruCacheTest, GetReturnsWhatPutStoredUntilErased) {
  LruCache<int, std::string> cache(100);
  EXPECT_EQ(cache.Get(1), nullptr);
  auto a = Item("a");
  cache.Put(1, a, 10);
  EXPECT_EQ(cache.Get(1), a);
  EXPECT_EQ(cache.usage_bytes(), 10u);
  cache.Erase(1);
  EXPECT_EQ(cache.Get(1), nullptr);
  EXPECT_EQ(cache.usage_bytes(), 0u);
  cache.Erase(1);  // erasing a missing key changes nothing
  EXPECT_EQ(cache.usage_bytes(), 0u);
}

TEST(LruCacheTest, EvictsTheLeastRecentlyUsedUntilTheBytesFit) {
  LruCache<int, std::string> cache(30);
  cache.Put(1, Item("a"), 10);
  cache.Put(2, Item("b"), 10);
  cache.Put(3, Item("c"), 10);
  ASSERT_NE(cache.Get(1), nullptr);  // 2 is now the least recent
  cache.Put(4, Item("d"), 15);       // evicts 2, then 3
  EXPECT_EQ(cache.Get(2), nullptr);
  EXPECT_EQ(cache.Get(3), nullptr);
  EXPECT_NE(cache.Get(1), nullptr);
  EXPECT_NE(cache.Get(4), nullptr);
  EXPECT_EQ(cache.usage_bytes(), 25u);
}

TEST(LruCacheTest, ReplacingAKeyChargesOnlyTheNewItemAndTooLargeItemsAreNotKept) {
  LruCache<std::string, std::string> cache(50);
  cache.Put("k", Item("old"), 20);
  auto fresh = Item("new");
  cache.Put("k", fresh, 30);
  EXPECT_EQ(cache.Get("k"), fresh);
  EXPECT_EQ(cache.usage_bytes(), 30u);
  cache.Put("huge", Item("x"), 51);
  EXPECT_EQ(cache.Get("huge"), nullptr);
  EXPECT_EQ(cache.Get("k"), fresh);     // a refused item evicts nothing
  cache.Put("k", Item("too big"), 60);  // replacing with a too-large item drops the key
  EXPECT_EQ(cache.Get("k"), nullptr);
  EXPECT_EQ(cache.usage_bytes(), 0u);
}

TEST(LruCacheTest, AnEvictedItemStaysAliveForItsHolder) {
  LruCache<int, std::string> cache(10);
  std::shared_ptr<const std::string> held = Item("held");
  cache.Put(1, held, 10);
  held = cache.Get(1);
  cache.Put(2, Item("other"), 10);
  EXPECT_EQ(cache.Get(1), nullptr);
  EXPECT_EQ(*held, "held");
}

TEST(LruCacheTest, ConcurrentUseKeepsTheBound) {
  LruCache<int, std::string> cache(1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 5000; ++i) {
        const int key = (i * 7 + t) % 300;
        if (cache.Get(key) == nullptr) cache.Put(key, Item("v"), 10);
        if (i % 11 == 0) cache.Erase(key);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.usage_bytes(), 1000u);
  size_t held = 0;
  for (int key = 0; key < 300; ++key) held += cache.Get(key) != nullptr ? 10 : 0;
  EXPECT_EQ(held, cache.usage_bytes());
}

}  // namespace
}  // namespace vigil

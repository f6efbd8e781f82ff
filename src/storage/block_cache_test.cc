#include <gtest/gtest.h>

#include <thread>

#include "vigil/storage/fragment.h"

namespace vigil {
namespace {

std::shared_ptr<const Column> ColumnOf(size_t rows) {
  auto c = std::make_shared<Column>(DataType::Of(TypeId::kInt64));
  for (size_t i = 0; i < rows; ++i) c->AppendInt64(static_cast<int64_t>(i));
  return c;
}

TEST(BlockCacheTest, LookupReturnsInsertedColumn) {
  BlockCache cache(1 << 20);
  auto c = ColumnOf(10);
  EXPECT_EQ(cache.Lookup("k"), nullptr);
  cache.Insert("k", c);
  EXPECT_EQ(cache.Lookup("k"), c);
  EXPECT_GE(cache.usage_bytes(), c->MemoryBytes());
  cache.Erase("k");
  EXPECT_EQ(cache.Lookup("k"), nullptr);
  EXPECT_EQ(cache.usage_bytes(), 0u);
}

TEST(BlockCacheTest, EvictsLeastRecentlyUsedByBytes) {
  auto probe = ColumnOf(1000);
  BlockCache sizing(1 << 30);
  sizing.Insert("a", probe);
  const size_t entry = sizing.usage_bytes();
  BlockCache cache(entry * 3);  // room for exactly three entries
  cache.Insert("a", ColumnOf(1000));
  cache.Insert("b", ColumnOf(1000));
  cache.Insert("c", ColumnOf(1000));
  ASSERT_NE(cache.Lookup("a"), nullptr);  // "b" is now the least recent
  cache.Insert("d", ColumnOf(1000));
  EXPECT_EQ(cache.Lookup("b"), nullptr);
  EXPECT_NE(cache.Lookup("a"), nullptr);
  EXPECT_NE(cache.Lookup("c"), nullptr);
  EXPECT_NE(cache.Lookup("d"), nullptr);
  EXPECT_LE(cache.usage_bytes(), cache.capacity_bytes());
}

TEST(BlockCacheTest, ReplacingAKeyKeepsAccountingExact) {
  BlockCache cache(1 << 20);
  cache.Insert("k", ColumnOf(10));
  cache.Insert("k", ColumnOf(500));
  auto got = cache.Lookup("k");
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->size(), 500u);
  cache.Erase("k");
  EXPECT_EQ(cache.usage_bytes(), 0u);
}

TEST(BlockCacheTest, OversizedEntryIsNotKept) {
  BlockCache cache(64);
  cache.Insert("big", ColumnOf(1000));
  EXPECT_EQ(cache.Lookup("big"), nullptr);
  EXPECT_EQ(cache.usage_bytes(), 0u);
}

TEST(BlockCacheTest, DefaultIsSharedAndSized) {
  BlockCache* a = BlockCache::Default();
  EXPECT_EQ(a, BlockCache::Default());
  EXPECT_EQ(a->capacity_bytes(), size_t{256} << 20);  // StorageConfig's default
}

TEST(BlockCacheTest, ANewCapacityEvictsTheLeastRecentlyUsed) {
  BlockCache cache(1 << 20);
  cache.Insert("old", ColumnOf(1000));
  cache.Insert("new", ColumnOf(1000));
  const size_t both = cache.usage_bytes();
  cache.SetCapacity(both - 1);
  EXPECT_EQ(cache.Lookup("old"), nullptr);
  EXPECT_NE(cache.Lookup("new"), nullptr);
  EXPECT_EQ(cache.capacity_bytes(), both - 1);
  cache.SetCapacity(0);
  EXPECT_EQ(cache.usage_bytes(), 0u);
  cache.Insert("any", ColumnOf(10));
  EXPECT_EQ(cache.Lookup("any"), nullptr);
}

TEST(BlockCacheTest, ConcurrentUseStaysWithinCapacity) {
  BlockCache cache(1 << 16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        std::string key = std::to_string((i * 7 + t) % 50);
        if (auto c = cache.Lookup(key)) {
          EXPECT_EQ(c->size(), 100u);
        } else {
          cache.Insert(key, ColumnOf(100));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.usage_bytes(), cache.capacity_bytes());
}

}  // namespace
}  // namespace vigil

// vigil.toml's [storage] block_cache_bytes through SQL: a session sizes the
// process's block cache by its root's setting, so the blocks a SELECT decodes
// are kept (and found again) under a positive size and never under 0.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "testutil/temp_dir.h"
#include "vigil/common/config.h"
#include "vigil/sql/session.h"
#include "vigil/storage/fragment.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

class BlockCacheSettingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
    auto s = std::move(*Session::Open(root_dir_));
    ASSERT_TRUE(s->Execute("CREATE TABLE d.t (id BIGINT NOT NULL, name VARCHAR)").ok());
    ASSERT_TRUE(s->Execute("INSERT INTO d.t VALUES (1, 'a'), (2, 'b'), (3, 'c')").ok());
  }
  // The process's cache goes back to its default size (and empty) for the other tests.
  void TearDown() override {
    BlockCache::Default()->SetCapacity(0);
    BlockCache::Default()->SetCapacity(StorageConfig().block_cache_bytes);
  }

  // Opens a session under `config` and reads every row of d.t.
  void SelectUnder(const std::string& config) {
    std::ofstream(root_dir_ + "/vigil.toml") << config;
    auto s = Session::Open(root_dir_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto rows = (*s)->Execute("SELECT id, name FROM d.t ORDER BY id");
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  }

  testing::TempDir dir_;
  std::string root_dir_;
};

TEST_F(BlockCacheSettingTest, ASessionSizesTheProcessBlockCacheByItsRootsSetting) {
  ASSERT_NO_FATAL_FAILURE(SelectUnder("[storage]\nblock_cache_bytes = 0\n"));
  EXPECT_EQ(BlockCache::Default()->capacity_bytes(), 0u);
  EXPECT_EQ(BlockCache::Default()->usage_bytes(), 0u);  // nothing kept

  ASSERT_NO_FATAL_FAILURE(SelectUnder("[storage]\nblock_cache_bytes = \"1MiB\"\n"));
  EXPECT_EQ(BlockCache::Default()->capacity_bytes(), size_t{1} << 20);
  const size_t kept = BlockCache::Default()->usage_bytes();
  EXPECT_GT(kept, 0u);  // the blocks the SELECT decoded
  EXPECT_LE(kept, size_t{1} << 20);

  ASSERT_NO_FATAL_FAILURE(SelectUnder(""));  // the default
  EXPECT_EQ(BlockCache::Default()->capacity_bytes(), StorageConfig().block_cache_bytes);
  EXPECT_EQ(StorageConfig().block_cache_bytes, size_t{256} << 20);
}

}  // namespace
}  // namespace vigil::sql

// vigil.toml's [generations] budgets through SQL: the index segments a
// statement's generations open are charged to generations.memory_budget_bytes
// and generations.disk_budget_bytes; a table whose segments do not fit is
// refused with RESOURCE_EXHAUSTED naming the setting, and fits under the default.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "testutil/temp_dir.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

class GenerationBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
    SessionOptions client;
    client.file_access = FileAccess::kClient;  // COPY reads the test's own file
    auto s = std::move(*Session::Open(root_dir_, client));
    const std::string csv = dir_.Join("rows.csv");
    {
      std::ofstream out(csv);
      out << "id\n";
      for (int i = 0; i < 150'000; ++i) out << i << "\n";
    }
    Root root = *Root::Open(root_dir_);
    auto store = *jobs::OpenRootJobStore(root);
    catalog::TableCatalog catalog(&root, &store->catalog(), [] { return int64_t{1}; });
    // d.t and d.u: the same rows and the same BTREE, so their segments weigh the same.
    for (const std::string table : {"d.t", "d.u"}) {
      ASSERT_TRUE(s->Execute("CREATE TABLE " + table + " (id BIGINT NOT NULL)").ok());
      ASSERT_TRUE(s->Execute("COPY " + table + " FROM '" + csv + "'").ok());
      index::CreateIndexRequest req;
      const catalog::TableEntry entry = *catalog.Lookup(*ParseTableName(table));
      req.dataset_path = entry.locator;
      req.dataset = catalog.Options(entry);
      req.column = "id";
      req.name = "id_idx";
      req.type = index::IndexType::kBtree;
      auto built = index::CreateScalarIndex(req);
      ASSERT_TRUE(built.ok()) << built.status().ToString();
    }
  }
  Result<ResultSet> Count(const std::string& config) {
    std::ofstream(root_dir_ + "/vigil.toml") << config;
    VIGIL_ASSIGN_OR_RETURN(auto s, Session::Open(root_dir_));
    return s->Execute("SELECT count(*) FROM d.t WHERE id < 1000");
  }

  testing::TempDir dir_;
  std::string root_dir_;
};

TEST_F(GenerationBudgetTest, MemoryBudgetRefusesSegmentsThatDoNotFit) {
  auto fits = Count("");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(std::get<int64_t>(fits->rows[0][0]), 1000);
  auto refused = Count("[generations]\nmemory_budget_bytes = \"1MiB\"\n");
  ASSERT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), HasSubstr("generations.memory_budget_bytes"));
}

TEST_F(GenerationBudgetTest, DiskBudgetRefusesSegmentsThatDoNotFit) {
  auto refused = Count("[generations]\ndisk_budget_bytes = \"1MiB\"\n");
  ASSERT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), HasSubstr("generations.disk_budget_bytes"));
}

// One budget for the process: sessions given the same pool (as `vigil serve`'s sessions are)
// share one manager per table and one budget. Two sessions reading one table share its
// generation, so it is charged once; a second table that fits alone is refused while another
// session holds the first; with pools of their own each session would fit.
TEST_F(GenerationBudgetTest, SessionsSharingTheProcessPoolShareGenerationsAndBytes) {
  uint64_t segment_bytes = 0;
  {
    Root root = *Root::Open(root_dir_);
    auto store = *jobs::OpenRootJobStore(root);
    catalog::TableCatalog catalog(&root, &store->catalog(), [] { return int64_t{1}; });
    const catalog::TableEntry entry = *catalog.Lookup(*ParseTableName("d.t"));
    for (const auto& f : std::filesystem::recursive_directory_iterator(entry.locator + "/_indices")) {
      if (f.is_regular_file()) segment_bytes += f.file_size();
    }
  }
  ASSERT_GT(segment_bytes, 0u);
  std::ofstream(root_dir_ + "/vigil.toml")
      << "[generations]\nmemory_budget_bytes = " << segment_bytes * 3 / 2 << "\ndisk_budget_bytes = \"1TiB\"\n";
  const std::string count_t = "SELECT count(*) FROM d.t WHERE id < 1000";
  const std::string count_u = "SELECT count(*) FROM d.u WHERE id < 1000";
  // With pools of their own, each session's budget holds one table.
  auto own_t = Session::Open(root_dir_);
  ASSERT_TRUE((*own_t)->Execute(count_t).ok());
  auto own_u = Session::Open(root_dir_);
  ASSERT_TRUE((*own_u)->Execute(count_u).ok());
  own_t->reset();
  own_u->reset();

  GenerationsConfig sizes;
  sizes.memory_budget_bytes = segment_bytes * 3 / 2;
  sizes.disk_budget_bytes = uint64_t{1} << 40;
  SessionOptions shared;
  shared.generation_pool = GenerationPool::Create(*Root::Open(root_dir_), sizes);
  auto first = Session::Open(root_dir_, shared);
  auto second = Session::Open(root_dir_, shared);
  ASSERT_TRUE((*first)->Execute(count_t).ok());  // keeps d.t's generation, and its bytes
  auto same = (*second)->Execute(count_t);       // the same generation: nothing more is charged
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(std::get<int64_t>(same->rows[0][0]), 1000);
  auto refused = (*second)->Execute(count_u);
  ASSERT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), HasSubstr("generations.memory_budget_bytes"));
  first->reset();
  second->reset();  // d.t's generation goes with the last engine holding it, and its bytes too
  auto third = Session::Open(root_dir_, shared);
  auto fits = (*third)->Execute(count_u);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
}

// Sessions on one pool, each on its own thread, read one table through its shared manager while
// another session commits: every read succeeds and each reader's counts never go backwards.
TEST_F(GenerationBudgetTest, ConcurrentSessionsOnOnePoolReadWhileAWriterCommits) {
  SessionOptions shared;
  shared.generation_pool = GenerationPool::Create(*Root::Open(root_dir_), GenerationsConfig{});
  constexpr int kReaders = 3;
  constexpr int kInserts = 20;
  std::atomic<bool> writing{true};
  std::vector<std::thread> readers;
  std::vector<std::string> failures(kReaders);
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      auto s = Session::Open(root_dir_, shared);
      int64_t last = 0;
      do {
        auto counted = (*s)->Execute("SELECT count(*) FROM d.t");
        if (!counted.ok()) {
          failures[r] = counted.status().ToString();
          return;
        }
        const int64_t n = std::get<int64_t>(counted->rows[0][0]);
        if (n < last) failures[r] = "the count went back from " + std::to_string(last) + " to " + std::to_string(n);
        last = n;
      } while (writing.load() && failures[r].empty());
    });
  }
  auto writer = Session::Open(root_dir_, shared);
  for (int i = 0; i < kInserts; ++i) {
    ASSERT_TRUE((*writer)->Execute("INSERT INTO d.t VALUES (" + std::to_string(-1 - i) + ")").ok());
  }
  writing = false;
  for (auto& t : readers) t.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  auto final_count = (*writer)->Execute("SELECT count(*) FROM d.t");
  ASSERT_TRUE(final_count.ok());
  EXPECT_EQ(std::get<int64_t>(final_count->rows[0][0]), 150'000 + kInserts);
}

// A pool serves one root: an engine of another root refuses it.
TEST_F(GenerationBudgetTest, APoolOfAnotherRootIsRefused) {
  const std::string other = dir_.Join("other");
  ASSERT_TRUE(Root::Init(other).ok());
  SessionOptions shared;
  shared.generation_pool = GenerationPool::Create(*Root::Open(other), GenerationsConfig{});
  auto s = Session::Open(root_dir_, shared);
  ASSERT_TRUE(s.ok());
  auto refused = (*s)->Execute("SELECT count(*) FROM d.t");
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), HasSubstr("generation pool serves the root " + other));
}

}  // namespace
}  // namespace vigil::sql

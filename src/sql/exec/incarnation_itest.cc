// Table incarnations through SQL: a writer, an index commit or a COPY that
// opened a table before DROP TABLE + CREATE TABLE of the same name can never
// publish into the new table (its commit fails with STALE_INCARNATION), and a
// stress of racing writers, late index commits and re-creations leaves every
// incarnation holding exactly its own acknowledged rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/catalog/version_store.h"
#include "vigil/common/failpoint.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/session.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/filename.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

class IncarnationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
  }
  void TearDown() override { failpoint::DisarmAll(); }

  std::unique_ptr<Session> NewSession() {
    SessionOptions options;
    options.file_access = FileAccess::kClient;  // COPY reads the test's own files
    auto s = Session::Open(root_dir_, options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static void Ok(Session& s, const std::string& sql) {
    auto r = s.Execute(sql);
    ASSERT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  }
  static int64_t Count(Session& s, const std::string& table) {
    auto r = s.Execute("SELECT count(*) FROM " + table);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::get<int64_t>(r->rows.at(0).at(0)) : -1;
  }
  // The table's registered incarnation; an empty entry when it does not exist right now.
  Result<catalog::TableEntry> Find(const std::string& table) {
    VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(root_dir_));
    VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
    catalog::TableCatalog catalog(&root, &store->catalog(), [] { return int64_t{1}; });
    return catalog.Lookup(*ParseTableName(table));
  }
  // Options that commit to `e`'s dataset through its version catalog, as the root's writers do.
  DatasetOptions Versions(const catalog::TableEntry& e) {
    if (!store_) {
      root_ = std::make_unique<Root>(*Root::Open(root_dir_));
      store_ = std::move(*jobs::OpenRootJobStore(*root_));
    }
    return catalog::TableDatasetOptions(&store_->catalog(), e.table_incarnation);
  }
  catalog::TableEntry Entry(const std::string& table) {
    auto entry = Find(table);
    EXPECT_TRUE(entry.ok()) << entry.status().ToString();
    return entry.ok() ? *entry : catalog::TableEntry{};
  }

  testing::TempDir dir_;
  std::string root_dir_;
  std::unique_ptr<Root> root_;
  std::unique_ptr<jobs::JobStore> store_;
};

TEST_F(IncarnationTest, InsertThatOpenedTheDroppedTableIsRefusedAndChangesNothing) {
  auto main = NewSession();
  Ok(*main, "CREATE TABLE d.t (x BIGINT NOT NULL, note STRING)");
  Ok(*main, "INSERT INTO d.t VALUES (1, 'old'), (2, 'old')");
  const catalog::TableEntry old_entry = Entry("d.t");

  // The writer stops after writing its fragment, before it commits.
  failpoint::Arm("commit.after_fragments", failpoint::Action::kHang);
  Status stale_result;
  std::thread writer([&] {
    auto w = NewSession();
    stale_result = w->Execute("INSERT INTO d.t VALUES (3, 'stale')").status();
  });
  while (failpoint::HitCount("commit.after_fragments") == 0) std::this_thread::yield();
  Ok(*main, "DROP TABLE d.t");
  Ok(*main, "CREATE TABLE d.t (x BIGINT NOT NULL, note STRING)");
  failpoint::Disarm("commit.after_fragments");
  writer.join();
  Ok(*main, "INSERT INTO d.t VALUES (10, 'new')");

  EXPECT_EQ(stale_result.code(), StatusCode::kStaleIncarnation) << stale_result.ToString();
  EXPECT_THAT(stale_result.message(), HasSubstr("nothing was committed"));
  const catalog::TableEntry new_entry = Entry("d.t");
  EXPECT_NE(new_entry.table_incarnation, old_entry.table_incarnation);
  EXPECT_NE(new_entry.locator, old_entry.locator);
  EXPECT_EQ(Count(*main, "d.t"), 1);
  auto rows = main->Execute("SELECT x, note FROM d.t");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(std::get<std::string>(rows->rows[0][1]), "new");
  // VACUUM keeping one version never touches the new table's files.
  Ok(*main, "VACUUM d.t RETAIN 1 VERSIONS");
  EXPECT_EQ(Count(*main, "d.t"), 1);
  auto ds = Dataset::Open(new_entry.locator);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->manifest().dataset_id.ToString(), new_entry.table_incarnation);
}

TEST_F(IncarnationTest, CopyThatOpenedTheDroppedTableIsRefused) {
  auto main = NewSession();
  Ok(*main, "CREATE TABLE d.t (x BIGINT NOT NULL)");
  const std::string file = dir_.Join("rows.csv");
  {
    std::ofstream out(file);
    out << "x\n";
    for (int i = 0; i < 5000; ++i) out << i << "\n";
  }
  failpoint::Arm("commit.after_fragments", failpoint::Action::kHang);
  Status stale_result;
  std::thread copier([&] {
    auto w = NewSession();
    stale_result = w->Execute("COPY d.t FROM '" + file + "'").status();
  });
  while (failpoint::HitCount("commit.after_fragments") == 0) std::this_thread::yield();
  Ok(*main, "DROP TABLE d.t");
  Ok(*main, "CREATE TABLE d.t (x BIGINT NOT NULL, note STRING)");
  failpoint::Disarm("commit.after_fragments");
  copier.join();
  EXPECT_EQ(stale_result.code(), StatusCode::kStaleIncarnation) << stale_result.ToString();
  EXPECT_EQ(Count(*main, "d.t"), 0);
}

TEST_F(IncarnationTest, LateIndexCommitCannotReachTheRecreatedTable) {
  auto main = NewSession();
  Ok(*main, "CREATE TABLE d.t (x BIGINT NOT NULL)");
  Ok(*main, "INSERT INTO d.t VALUES (1), (2), (3)");
  const catalog::TableEntry old_entry = Entry("d.t");
  Ok(*main, "DROP TABLE d.t");
  Ok(*main, "CREATE TABLE d.t (x BIGINT NOT NULL)");
  Ok(*main, "INSERT INTO d.t VALUES (7)");
  // What a worker that outlived its job would do: commit at the locator it was given.
  index::CreateIndexRequest req;
  req.dataset_path = old_entry.locator;
  req.column = "x";
  req.name = "x_idx";
  req.type = index::IndexType::kBtree;
  auto late = index::CreateScalarIndex(req);
  EXPECT_FALSE(late.ok());
  EXPECT_THAT(late.status().code(), ::testing::AnyOf(StatusCode::kStaleIncarnation, StatusCode::kNotFound));
  auto indexes = main->Execute("SELECT count(*) FROM vigil_indexes('d.t')");
  ASSERT_TRUE(indexes.ok()) << indexes.status().ToString();
  EXPECT_EQ(std::get<int64_t>(indexes->rows[0][0]), 0);
  EXPECT_EQ(Count(*main, "d.t"), 1);
}

TEST_F(IncarnationTest, LegacyTableIsAdoptedAndItsDirectoryNeverReused) {
  Root root = *Root::Open(root_dir_);
  ASSERT_TRUE(root.CreateDatabase("d").ok());
  const std::string legacy = *root.LegacyTablePath(*ParseTableName("d.old"));
  auto schema = *Schema::Make({Field{-1, "x", DataType::Of(TypeId::kInt64), false}});
  ASSERT_TRUE(Dataset::Create(legacy, schema, {}).ok());
  auto main = NewSession();
  auto tables = main->Execute("SHOW TABLES FROM d");
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  ASSERT_EQ(tables->rows.size(), 1u);
  EXPECT_EQ(std::get<std::string>(tables->rows[0][0]), "old");
  Ok(*main, "INSERT INTO d.old VALUES (1)");
  EXPECT_EQ(Entry("d.old").locator, legacy);
  Ok(*main, "DROP TABLE d.old");
  EXPECT_FALSE(std::filesystem::exists(legacy));
  Ok(*main, "CREATE TABLE d.old (x BIGINT NOT NULL)");
  EXPECT_NE(Entry("d.old").locator, legacy);
  EXPECT_FALSE(std::filesystem::exists(legacy));
  EXPECT_EQ(Count(*main, "d.old"), 0);
}

// What one incarnation directory holds at its newest version.
struct DirContents {
  std::string identity;
  std::set<int64_t> ids;
  bool foreign_manifest = false;  // a manifest of another dataset in this directory
};

DirContents ReadDir(const std::string& dir) {
  DirContents out;
  std::ifstream in(JoinPath(dir, kIdentityFile));
  std::getline(in, out.identity);
  auto versions = Dataset::ListVersions(dir);
  if (!versions.ok() || versions->empty()) return out;
  for (const VersionInfo& v : *versions) {
    auto ds = Dataset::Open(dir, v.version);
    if (ds.ok() && "vigil-dataset " + (*ds)->manifest().dataset_id.ToString() != out.identity) {
      out.foreign_manifest = true;
    }
  }
  auto ds = Dataset::Open(dir);
  if (!ds.ok()) return out;
  ScanOptions scan;
  scan.columns = {"id"};
  auto reader = (*ds)->Scan(scan);
  for (auto b = (*reader)->Next(); b.ok() && *b; b = (*reader)->Next()) {
    for (size_t i = 0; i < (*b)->num_rows; ++i) out.ids.insert(std::get<int64_t>((*b)->columns[0].ValueAt(i)));
  }
  return out;
}

TEST_F(IncarnationTest, RacingWritersLateCommitsAndRecreationKeepEveryIncarnationToItself) {
  constexpr int kRounds = 200;
  constexpr int kWriters = 2;
  auto main = NewSession();
  Ok(*main, "CREATE TABLE d.t (id BIGINT NOT NULL, w BIGINT NOT NULL)");
  std::atomic<bool> stop{false};
  std::atomic<int64_t> next_id{0};
  std::mutex mu;
  std::set<int64_t> acked;
  std::map<StatusCode, int> refusals;
  std::map<StatusCode, std::string> examples;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto s = NewSession();
      std::mt19937 rng(static_cast<uint32_t>(w));
      while (!stop.load()) {
        const int64_t a = next_id.fetch_add(2), b = a + 1;
        auto r = s->Execute("INSERT INTO d.t VALUES (" + std::to_string(a) + ", " + std::to_string(w) + "), (" +
                            std::to_string(b) + ", " + std::to_string(w) + ")");
        {
          std::lock_guard<std::mutex> lock(mu);
          if (r.ok()) {
            acked.insert(a);
            acked.insert(b);
          } else {
            ++refusals[r.status().code()];
            examples[r.status().code()] = r.status().message();
          }
        }
        if (!r.ok()) std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 500));
      }
    });
  }
  // Late commits: an index build that opened whatever incarnation was current, then commits.
  threads.emplace_back([&] {
    std::mt19937 rng(7);
    int n = 0;
    while (!stop.load()) {
      Result<catalog::TableEntry> found = Find("d.t");
      if (!found.ok()) continue;  // between a DROP and its CREATE
      const catalog::TableEntry e = *found;
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
      index::CreateIndexRequest req;
      req.dataset_path = e.locator;
      req.dataset = Versions(e);
      req.column = "id";
      req.name = "id_idx_" + std::to_string(n++);
      req.type = index::IndexType::kBtree;
      auto r = index::CreateScalarIndex(req);
      std::lock_guard<std::mutex> lock(mu);
      if (!r.ok()) {
        ++refusals[r.status().code()];
        examples[r.status().code()] = r.status().message();
      }
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    std::this_thread::sleep_for(std::chrono::microseconds(1000 + (round % 7) * 1000));
    Ok(*main, "DROP TABLE d.t");
    Ok(*main, "CREATE TABLE d.t (id BIGINT NOT NULL, w BIGINT NOT NULL)");
  }
  stop = true;
  for (auto& t : threads) t.join();

  // Every incarnation directory, live or dropped, holds only its own manifests, and every
  // acknowledged row is in exactly one of them. A refused write is in no live table; it may
  // be in a dropped one when it was published as its directory was moved away.
  const catalog::TableEntry live = Entry("d.t");
  std::vector<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(root_dir_ + "/d")) dirs.push_back(e.path().string());
  ASSERT_EQ(dirs, std::vector<std::string>{live.locator});
  for (const auto& e : std::filesystem::directory_iterator(root_dir_ + "/_dropped")) dirs.push_back(e.path().string());
  ASSERT_EQ(dirs.size(), static_cast<size_t>(kRounds + 1));
  std::map<int64_t, int> seen;
  for (const std::string& d : dirs) {
    DirContents c = ReadDir(d);
    EXPECT_FALSE(c.foreign_manifest) << d;
    for (int64_t id : c.ids) ++seen[id];
  }
  for (int64_t id : acked) EXPECT_EQ(seen[id], 1) << "acknowledged id " << id;
  // The live table is the newest incarnation, with acknowledged rows only.
  DirContents c = ReadDir(live.locator);
  for (int64_t id : c.ids) EXPECT_TRUE(acked.count(id)) << "id " << id << " was never acknowledged";
  EXPECT_EQ(c.identity, "vigil-dataset " + live.table_incarnation);
  EXPECT_EQ(Count(*main, "d.t"), static_cast<int64_t>(c.ids.size()));
  EXPECT_GT(acked.size(), 0u);
  for (const auto& [code, n] : refusals) {
    EXPECT_THAT(code,
                ::testing::AnyOf(StatusCode::kStaleIncarnation, StatusCode::kNotFound, StatusCode::kCommitConflict))
        << StatusCodeName(code) << " x" << n << ": " << examples[code];
  }
  std::printf("acknowledged rows: %zu; refusals:", acked.size());
  for (const auto& [code, n] : refusals) std::printf(" %s=%d", std::string(StatusCodeName(code)).c_str(), n);
  std::printf("\n");
}

}  // namespace
}  // namespace vigil::sql

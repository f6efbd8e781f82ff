// Corruption through SQL never yields an older answer: a corrupt newest
// manifest is CORRUPTION naming the file and the newest good version, on the
// first statement of a process as on every later one; a corrupt index segment
// is left out, its rows are scanned (the answer stays exact for the current
// version), and the statement says so in a warning and in EXPLAIN.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "testutil/temp_dir.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/session.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/filename.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

class CorruptReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
    auto s = Session::Open(root_dir_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    setup_ = std::move(*s);
    Ok("CREATE TABLE d.t (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 4) NOT NULL)");
    std::string values;
    for (int i = 0; i < 400; ++i) {
      values += std::string(i ? ", " : "") + "(" + std::to_string(i) + ", '[" + std::to_string(i % 17) + ", " +
                std::to_string(i % 5) + ", " + std::to_string(i % 3) + ", 1]')";
    }
    Ok("INSERT INTO d.t VALUES " + values);
    Ok("DELETE FROM d.t WHERE id < 10");  // the newest version has 390 rows
  }

  ResultSet Ok(const std::string& sql, Session* s = nullptr) {
    auto r = (s ? s : setup_.get())->Execute(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    return r.ok() ? *r : ResultSet{};
  }
  std::string Locator() {
    Root root = *Root::Open(root_dir_);
    auto store = *jobs::OpenRootJobStore(root);
    catalog::TableCatalog catalog(&root, &store->catalog(), [] { return int64_t{1}; });
    return catalog.Lookup(*ParseTableName("d.t"))->locator;
  }
  // Builds `req` on d.t through its catalog, as the root's writers do.
  static void Build(const std::string& root_dir, index::CreateIndexRequest req) {
    Root root = *Root::Open(root_dir);
    auto store = *jobs::OpenRootJobStore(root);
    catalog::TableCatalog catalog(&root, &store->catalog(), [] { return int64_t{1}; });
    const catalog::TableEntry entry = *catalog.Lookup(*ParseTableName("d.t"));
    req.dataset_path = entry.locator;
    req.dataset = catalog.Options(entry);
    auto built = req.type == index::IndexType::kIvfPq ? index::CreateVectorIndex(req) : index::CreateScalarIndex(req);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
  }
  // Flips one bit in the middle of `path`, keeping its size.
  static void FlipBit(const std::string& path) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const std::streamoff mid = f.tellg() / 2;
    f.seekg(mid);
    char c = 0;
    f.get(c);
    f.seekp(mid);
    f.put(static_cast<char>(c ^ 0x04));
  }
  std::unique_ptr<Session> Fresh() { return std::move(*Session::Open(root_dir_)); }

  testing::TempDir dir_;
  std::string root_dir_;
  std::unique_ptr<Session> setup_;
};

TEST_F(CorruptReadTest, CorruptNewestManifestIsCorruptionOnEveryStatement) {
  const std::string locator = Locator();
  const uint64_t newest = *Dataset::LatestVersion(locator);
  FlipBit(JoinPath(locator, ManifestPath(newest)));
  auto s = Fresh();
  for (int i = 0; i < 2; ++i) {  // the first statement of a process and the next one agree
    auto r = s->Execute("SELECT count(*) FROM d.t");
    ASSERT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
    EXPECT_THAT(r.status().message(), HasSubstr(ManifestPath(newest)));
    EXPECT_THAT(r.status().message(), HasSubstr("newest good version is " + std::to_string(newest - 1)));
  }
  auto insert = s->Execute("INSERT INTO d.t VALUES (1000, '[1, 1, 1, 1]')");
  EXPECT_EQ(insert.status().code(), StatusCode::kCorruption) << insert.status().ToString();
}

TEST_F(CorruptReadTest, CorruptSegmentIsScannedExactlyAndSaysSo) {
  const std::string locator = Locator();
  index::CreateIndexRequest btree;
  btree.dataset_path = locator;
  btree.column = "id";
  btree.name = "id_idx";
  btree.type = index::IndexType::kBtree;
  Build(root_dir_, btree);
  index::CreateIndexRequest ivf = btree;
  ivf.column = "emb";
  ivf.name = "emb_idx";
  ivf.type = index::IndexType::kIvfPq;
  ivf.properties = {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "4"}, {"num_sub_vectors", "2"}};
  Build(root_dir_, ivf);
  const std::string query =
      "SELECT id, _distance FROM vector_search('d.t', 'emb', '[3, 2, 1, 1]', 5, "
      "'{\"nprobes\": 4}') ORDER BY _distance, id";
  const std::string exact =
      "SELECT id, _distance FROM vector_search('d.t', 'emb', '[3, 2, 1, 1]', 5, "
      "'{\"use_index\": false}') ORDER BY _distance, id";
  auto expected_exact = Ok(exact, Fresh().get());

  auto ds = *Dataset::Open(locator);
  for (const auto& seg : ds->manifest().segments) {
    for (const auto& f : seg.files) FlipBit(JoinPath(JoinPath(locator, SegmentDirPath(seg.uuid)), f.name));
  }
  auto s = Fresh();
  ResultSet count = Ok("SELECT count(*) FROM d.t WHERE id >= 100", s.get());
  EXPECT_EQ(std::get<int64_t>(count.rows.at(0).at(0)), 300);
  ASSERT_EQ(count.warnings.size(), 2u);
  EXPECT_THAT(count.warnings[0], HasSubstr("is unusable (CORRUPTION"));
  EXPECT_THAT(count.warnings[0], HasSubstr("the answer is exact"));
  ResultSet hits = Ok(query, s.get());
  EXPECT_EQ(hits.rows, expected_exact.rows);  // every row scanned: the exact answer
  EXPECT_FALSE(hits.warnings.empty());
  ResultSet plan = Ok("EXPLAIN SELECT count(*) FROM d.t WHERE id >= 100", s.get());
  std::string text;
  for (const auto& row : plan.rows) text += std::get<std::string>(row[1]) + "\n";
  EXPECT_THAT(text, HasSubstr("of id_idx unusable (CORRUPTION): its fragments are scanned"));
  EXPECT_THAT(text, HasSubstr("of emb_idx unusable (CORRUPTION)"));
}

}  // namespace
}  // namespace vigil::sql

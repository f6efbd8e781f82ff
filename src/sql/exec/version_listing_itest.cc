// SHOW VERSIONS and SHOW GENERATIONS through SQL: the history with the bytes
// each version references; the published version and an older one that another
// session's reader still holds (its version pin), with the bytes only it keeps;
// the older one leaves the listing once its reader has moved on; a principal without
// SHOW on the table reads it as missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "testutil/temp_dir.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

class VersionListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
    writer_ = std::move(*Session::Open(root_dir_));
    reader_ = std::move(*Session::Open(root_dir_));
    Ok(*writer_, "CREATE TABLE d.t (id BIGINT NOT NULL, s STRING)");
    Ok(*writer_, "INSERT INTO d.t VALUES (1, 'a'), (2, 'b'), (3, 'c')");
  }

  static ResultSet Ok(Session& s, const std::string& sql) {
    Result<ResultSet> r = s.Execute(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    return r.ok() ? *r : ResultSet{};
  }
  static int64_t Int(const ResultSet& r, size_t row, size_t col) { return std::get<int64_t>(r.rows.at(row).at(col)); }
  static std::string Text(const ResultSet& r, size_t row, size_t col) {
    return std::get<std::string>(r.rows.at(row).at(col));
  }

  // Builds (or with `replace`, rebuilds) BTREE index id_idx as one commit outside any session;
  // returns its segment's folder.
  std::string BuildIndex(bool replace) {
    Root root = *Root::Open(root_dir_);
    auto store = *jobs::OpenRootJobStore(root);
    catalog::TableCatalog catalog(&root, &store->catalog(), [] { return int64_t{1}; });
    const catalog::TableEntry entry = *catalog.Lookup(*ParseTableName("d.t"));
    index::CreateIndexRequest req;
    req.dataset_path = entry.locator;
    req.dataset = catalog.Options(entry);
    req.column = "id";
    req.name = "id_idx";
    req.type = index::IndexType::kBtree;
    req.replace = replace;
    const std::set<std::string> before = Folders(entry.locator + "/_indices");
    auto built = index::CreateScalarIndex(req);
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    for (const std::string& f : Folders(entry.locator + "/_indices")) {
      if (!before.contains(f)) return f;
    }
    ADD_FAILURE() << "no new segment folder";
    return "";
  }

  static std::set<std::string> Folders(const std::string& dir) {
    std::set<std::string> out;
    if (!std::filesystem::exists(dir)) return out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().string());
    return out;
  }

  static uint64_t FolderBytes(const std::string& dir) {
    uint64_t bytes = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) bytes += e.file_size();
    }
    return bytes;
  }

  testing::TempDir dir_;
  std::string root_dir_;
  std::unique_ptr<Session> writer_;
  std::unique_ptr<Session> reader_;
};

TEST_F(VersionListingTest, VersionsListTheHistoryWithTheBytesEachReferences) {
  const std::string segment = BuildIndex(false);
  Ok(*writer_, "DELETE FROM d.t WHERE id = 2");
  ResultSet all = Ok(*writer_, "SHOW VERSIONS FROM d.t");
  ASSERT_EQ(all.columns, (std::vector<std::string>{"Version", "ParentVersion", "CommitTime", "Operation", "JobId",
                                                   "Rows", "Fragments", "Bytes"}));
  ASSERT_EQ(all.rows.size(), 4u);
  EXPECT_EQ(Text(all, 0, 3), "CREATE_TABLE");
  EXPECT_EQ(Text(all, 1, 3), "INSERT");
  EXPECT_EQ(Text(all, 3, 3), "DELETE");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(all.rows[0][1]));  // no parent
  EXPECT_EQ(Int(all, 3, 1), 3);
  EXPECT_EQ(Int(all, 1, 5), 3);  // rows
  EXPECT_EQ(Int(all, 3, 5), 2);
  EXPECT_EQ(Int(all, 0, 7), 0);
  EXPECT_GT(Int(all, 1, 7), 0);
  // The index version references the data plus the segment's files, exactly what they take on disk.
  EXPECT_EQ(Int(all, 2, 7) - Int(all, 1, 7), static_cast<int64_t>(FolderBytes(segment)));
  EXPECT_EQ(Int(all, 3, 7), Int(all, 2, 7));  // a delete adds no counted file

  ResultSet newest = Ok(*writer_, "SHOW VERSIONS FROM d.t LIMIT 2");
  ASSERT_EQ(newest.rows.size(), 2u);
  EXPECT_EQ(Int(newest, 0, 0), 3);
  EXPECT_EQ(Int(newest, 1, 0), 4);
  EXPECT_THAT(writer_->Execute("SHOW VERSIONS FROM d.t LIMIT 0").status().message(), HasSubstr("LIMIT"));
  EXPECT_EQ(writer_->Execute("SHOW VERSIONS FROM d.none").status().code(), StatusCode::kNotFound);
}

TEST_F(VersionListingTest, GenerationsShowWhatAnotherReaderStillHolds) {
  const std::string first_segment = BuildIndex(false);
  Ok(*reader_, "SELECT count(*) FROM d.t WHERE id < 3");  // the reader's generation: version 3
  BuildIndex(true);                                       // version 4: a new segment replaces it
  Ok(*writer_, "INSERT INTO d.t VALUES (4, 'd')");        // version 5

  ResultSet held = Ok(*writer_, "SHOW GENERATIONS FROM d.t");
  ASSERT_EQ(held.columns, (std::vector<std::string>{"Version", "State", "Readers", "Processes", "CommitTime", "Rows",
                                                    "Bytes", "HeldBytes", "PinExpiresAt"}));
  ASSERT_EQ(held.rows.size(), 2u);
  EXPECT_EQ(Int(held, 0, 0), 3);
  EXPECT_EQ(Text(held, 0, 1), "RETIRED");
  EXPECT_EQ(Int(held, 0, 2), 1);  // one reader, in one process
  EXPECT_EQ(Int(held, 0, 3), 1);
  EXPECT_EQ(Int(held, 0, 5), 3);
  // Only the replaced segment is version 3's alone: what VACUUM frees once the reader moves on.
  EXPECT_EQ(Int(held, 0, 7), static_cast<int64_t>(FolderBytes(first_segment)));
  EXPECT_FALSE(std::holds_alternative<std::monostate>(held.rows[0][8]));
  EXPECT_EQ(Int(held, 1, 0), 5);
  EXPECT_EQ(Text(held, 1, 1), "PUBLISHED");
  EXPECT_EQ(Int(held, 1, 2), 0);  // nobody has read it yet
  EXPECT_EQ(Int(held, 1, 5), 4);
  EXPECT_EQ(Int(held, 1, 7), 0);

  // The reader moves to version 5; the pin of version 3, retired with no lease left, goes
  // with the reader's next refresh (or its maintenance, every 20 s).
  Ok(*reader_, "SELECT count(*) FROM d.t WHERE id < 3");
  Ok(*reader_, "SELECT count(*) FROM d.t WHERE id < 3");
  ResultSet moved = Ok(*writer_, "SHOW GENERATIONS FROM d.t");
  ASSERT_EQ(moved.rows.size(), 1u);
  EXPECT_EQ(Int(moved, 0, 0), 5);
  EXPECT_EQ(Int(moved, 0, 2), 1);
}

TEST_F(VersionListingTest, APrincipalWithoutShowReadsTheTableAsMissing) {
  SessionOptions as_bob;
  as_bob.principal = auth::Principal{"bob", false, {{"local.other.*", {auth::Privilege::kShow}}}};
  auto bob = std::move(*Session::Open(root_dir_, as_bob));
  for (const char* sql : {"SHOW VERSIONS FROM d.t", "SHOW GENERATIONS FROM d.t"}) {
    Result<ResultSet> r = bob->Execute(sql);
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << sql;
    EXPECT_EQ(r.status().message(), "table local.d.t does not exist");
  }
}

}  // namespace
}  // namespace vigil::sql

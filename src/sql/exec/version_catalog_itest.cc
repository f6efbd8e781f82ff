// A table's versions through SQL with the metadata store as their commit point:
// a version committed in the store but not yet linked as a manifest (its writer
// stopped between the two) is seen by a statement once the store is asked, which
// generations.catalog_staleness bounds; a linked version is seen at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testutil/temp_dir.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/catalog/version_store.h"
#include "vigil/common/failpoint.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/meta/database.h"
#include "vigil/sql/session.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/filename.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

class VersionCatalogSqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
    auto s = Open("");
    ASSERT_TRUE(s->Execute("CREATE TABLE d.t (id BIGINT NOT NULL)").ok());
    ASSERT_TRUE(s->Execute("INSERT INTO d.t VALUES (1), (2), (3)").ok());
  }
  void TearDown() override { failpoint::DisarmAll(); }

  // A session of the root under `config` as its vigil.toml.
  std::unique_ptr<Session> Open(const std::string& config) {
    std::ofstream(root_dir_ + "/vigil.toml") << config;
    auto s = Session::Open(root_dir_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static int64_t Count(Session& s) {
    auto r = s.Execute("SELECT count(*) FROM d.t");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::get<int64_t>(r->rows.at(0).at(0)) : -1;
  }
  // The newest version of d.t by its linked manifest files alone, and by its catalog.
  std::pair<uint64_t, uint64_t> Newest() {
    Root root = *Root::Open(root_dir_);
    auto store = *jobs::OpenRootJobStore(root);
    catalog::TableCatalog catalog(&root, &store->catalog());
    const catalog::TableEntry e = *catalog.Lookup(*ParseTableName("d.t"));
    auto catalogued = catalog::StoreVersionCatalog(&store->catalog(), e.table_incarnation, nullptr).Latest();
    EXPECT_TRUE(catalogued.ok() && catalogued->has_value());
    return {*Dataset::LatestVersion(e.locator), catalogued.ok() && *catalogued ? (*catalogued)->version : 0};
  }

  testing::TempDir dir_;
  std::string root_dir_;
};

TEST_F(VersionCatalogSqlTest, AVersionCommittedButNotLinkedIsSeenOnceTheStoreIsAskedWithinTheStaleness) {
  auto patient = Open("[generations]\ncatalog_staleness = \"1h\"\n");
  EXPECT_EQ(Count(*patient), 3);

  // A writer stops between its commit in the store and the link of its manifest.
  failpoint::Arm("commit.after_catalog_claim", failpoint::Action::kError, /*hit=*/1);
  auto writer = Open("");
  EXPECT_FALSE(writer->Execute("INSERT INTO d.t VALUES (4)").ok());
  failpoint::DisarmAll();
  auto [linked, committed] = Newest();
  EXPECT_EQ(committed, linked + 1);

  // Within its staleness a session reads the linked version ...
  EXPECT_EQ(Count(*patient), 3);
  // ... a session that asks the store every statement reads the committed one and links it,
  auto eager = Open("[generations]\ncatalog_staleness = \"0ms\"\n");
  EXPECT_EQ(Count(*eager), 4);
  EXPECT_EQ(Newest().first, committed);
  // ... and a linked version is read at once, whatever the staleness.
  EXPECT_EQ(Count(*patient), 4);
  ASSERT_TRUE(writer->Execute("INSERT INTO d.t VALUES (5)").ok());
  EXPECT_EQ(Count(*patient), 5);
}

TEST_F(VersionCatalogSqlTest, ADroppedOrReCreatedTableIsSeenAtOnceWhateverTheStaleness) {
  // The patient session keeps the catalog's answer for an hour; another session drops the
  // table (its directory moves aside) and then creates one of the same name.
  auto patient = Open("[generations]\ncatalog_staleness = \"1h\"\n");
  EXPECT_EQ(Count(*patient), 3);
  auto other = Open("");
  ASSERT_TRUE(other->Execute("DROP TABLE d.t").ok());
  auto gone = patient->Execute("SELECT count(*) FROM d.t");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << gone.status().ToString();
  EXPECT_THAT(gone.status().message(), ::testing::HasSubstr("d.t"));

  ASSERT_TRUE(other->Execute("CREATE TABLE d.t (id BIGINT NOT NULL)").ok());
  ASSERT_TRUE(other->Execute("INSERT INTO d.t VALUES (7)").ok());
  EXPECT_EQ(Count(*patient), 1);  // the new incarnation, never the old files
  ASSERT_TRUE(other->Execute("DROP TABLE d.t").ok());
  ASSERT_TRUE(other->Execute("CREATE TABLE d.t (id BIGINT NOT NULL)").ok());
  EXPECT_EQ(Count(*patient), 0);
}

TEST_F(VersionCatalogSqlTest, AStatementRunAgainReadsTheTableAsItIsNow) {
  // The same text through Session::Select (parsed once, rewritten while the schemas it read
  // stay) after another session re-creates the table with other columns.
  auto patient = Open("[generations]\ncatalog_staleness = \"1h\"\n");
  const std::string text = "SELECT * FROM d.t WHERE id >= ? ORDER BY id";
  auto first = patient->Select(text, {Value(int64_t{2})});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->columns, std::vector<std::string>{"id"});
  EXPECT_EQ(first->rows.size(), 2u);

  auto other = Open("");
  ASSERT_TRUE(other->Execute("DROP TABLE d.t").ok());
  ASSERT_TRUE(other->Execute("CREATE TABLE d.t (id BIGINT NOT NULL, w BIGINT NOT NULL)").ok());
  ASSERT_TRUE(other->Execute("INSERT INTO d.t VALUES (1, 10), (5, 50)").ok());
  auto second = patient->Select(text, {Value(int64_t{2})});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->columns, (std::vector<std::string>{"id", "w"}));
  ASSERT_EQ(second->rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(second->rows[0][1]), 50);

  // A text that no longer fits the table is refused as on its first run, and a text that is
  // not a SELECT is refused however often it comes.
  ASSERT_TRUE(other->Execute("DROP TABLE d.t").ok());
  ASSERT_TRUE(other->Execute("CREATE TABLE d.t (k BIGINT NOT NULL)").ok());
  auto third = patient->Select(text, {Value(int64_t{2})});
  ASSERT_FALSE(third.ok());
  EXPECT_THAT(third.status().message(), ::testing::HasSubstr("id"));
  for (int i = 0; i < 2; ++i) {
    auto insert = patient->Select("INSERT INTO d.t VALUES (?)", {Value(int64_t{1})});
    EXPECT_EQ(insert.status().code(), StatusCode::kInvalidArgument) << insert.status().ToString();
  }
}

TEST_F(VersionCatalogSqlTest, ATableFromBeforeTheCatalogIsAdoptedByItsFirstWrite) {
  std::string locator;
  {  // As a root written before its metadata store held versions: no rows, no mark.
    Root root = *Root::Open(root_dir_);
    auto store = *jobs::OpenRootJobStore(root);
    catalog::TableCatalog catalog(&root, &store->catalog());
    locator = catalog.Lookup(*ParseTableName("d.t"))->locator;
    auto txn = store->database().Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok()) << txn.status().ToString();
    ASSERT_TRUE(txn->conn().Execute("DELETE FROM table_versions", {}).ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  ASSERT_TRUE(std::filesystem::remove(JoinPath(locator, kCatalogMarkerFile)));
  const uint64_t before = *Dataset::LatestVersion(locator);

  auto s = Open("[generations]\ncatalog_staleness = \"0ms\"\n");
  EXPECT_EQ(Count(*s), 3);  // its newest manifest file is the table
  ASSERT_TRUE(s->Execute("INSERT INTO d.t VALUES (4)").ok());
  EXPECT_EQ(Count(*s), 4);
  auto [linked, committed] = Newest();
  EXPECT_EQ(committed, before + 1);  // the store continues the history the files started
  EXPECT_EQ(linked, committed);
  EXPECT_TRUE(std::filesystem::exists(JoinPath(locator, kCatalogMarkerFile)));
  auto history = Dataset::ListVersions(locator);
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  EXPECT_EQ(history->size(), before + 1);  // every version from before stays readable
}

TEST_F(VersionCatalogSqlTest, AStalenessOutOfRangeIsRefusedNamingTheSetting) {
  std::ofstream(root_dir_ + "/vigil.toml") << "[generations]\ncatalog_staleness = \"2h\"\n";
  auto s = Session::Open(root_dir_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), ::testing::HasSubstr("generations.catalog_staleness"));
}

}  // namespace
}  // namespace vigil::sql

// meta::Database on SQLite: the shared conformance suite plus what only SQLite
// has (busy handling between two processes' connections, WAL, URIs).
#include "vigil/meta/database.h"

#include <gtest/gtest.h>

#include "meta/database_conformance.h"
#include "testutil/temp_dir.h"
#include "testutil/test_database.h"

namespace vigil::meta {

INSTANTIATE_TEST_SUITE_P(Sqlite, DatabaseConformanceTest, ::testing::Values(testing::SqliteBackend()),
                         testing::BackendName);

namespace {

TEST(DatabaseUriTest, ParsesSchemes) {
  auto s = ParseDatabaseUri("sqlite:///var/lib/vigil/meta.db");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->first, Dialect::kSqlite);
  EXPECT_EQ(s->second, "/var/lib/vigil/meta.db");
  auto p = ParseDatabaseUri("postgresql://u@h:5432/db");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->first, Dialect::kPostgres);
  auto k = ParseDatabaseUri("host=/tmp dbname=x");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->first, Dialect::kPostgres);
  EXPECT_EQ(ParseDatabaseUri("mysql://x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDatabaseUri("sqlite://").status().code(), StatusCode::kInvalidArgument);
}

TEST(DatabaseOpenTest, UnreachableServerAndBadPathFailAtOpen) {
  auto pg = Database::Open("host=/nonexistent-vigil-socket-dir port=1 dbname=x");
  EXPECT_EQ(pg.status().code(), StatusCode::kIOError) << pg.status().ToString();
  auto lite = Database::Open("sqlite:///nonexistent-vigil-dir/sub/meta.db");
  EXPECT_EQ(lite.status().code(), StatusCode::kIOError) << lite.status().ToString();
}

class SqliteDatabaseTest : public ::testing::Test {
 protected:
  std::string Uri() const { return "sqlite://" + dir_.Join("meta.db"); }
  testing::TempDir dir_;
};

TEST_F(SqliteDatabaseTest, UsesWalAndFullSync) {
  auto db = Database::Open(Uri());
  ASSERT_TRUE(db.ok());
  auto conn = (*db)->Acquire();
  ASSERT_TRUE(conn.ok());
  EXPECT_EQ((*conn)->Query("PRAGMA journal_mode", {})->at(0).Text(0).value(), "wal");
  EXPECT_EQ((*conn)->Query("PRAGMA synchronous", {})->at(0).Int(0).value(), 2);  // FULL
}

// Two Database objects on one file behave like two processes: the second writer gets Busy
// once its busy timeout passes, readers are not blocked, and the lock frees at commit.
TEST_F(SqliteDatabaseTest, SecondWriterIsBusyUntilFirstCommits) {
  auto a = Database::Open(Uri());
  ASSERT_TRUE(a.ok());
  DatabaseOptions impatient;
  impatient.busy_timeout_ms = 0;
  auto b = Database::Open(Uri(), impatient);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(
      (*a)->Write([](Connection& c) { return c.ExecuteScript("CREATE TABLE t (id INTEGER PRIMARY KEY)"); }).ok());

  auto txn = (*a)->Begin(TxnMode::kWrite);
  ASSERT_TRUE(txn.ok());
  ASSERT_TRUE(txn->conn().Execute("INSERT INTO t (id) VALUES (1)", {}).ok());

  auto blocked = (*b)->Begin(TxnMode::kWrite);
  EXPECT_EQ(blocked.status().code(), StatusCode::kBusy) << blocked.status().ToString();
  Status write = (*b)->Write([](Connection& c) { return c.Execute("INSERT INTO t (id) VALUES (2)", {}).status(); });
  EXPECT_EQ(write.code(), StatusCode::kBusy) << write.ToString();
  {
    auto reader = (*b)->Acquire();
    ASSERT_TRUE(reader.ok());
    auto rows = (*reader)->Query("SELECT count(*) FROM t", {});
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(rows->at(0).Int(0).value(), 0);
  }

  ASSERT_TRUE(txn->Commit().ok());
  auto later = (*b)->Begin(TxnMode::kWrite);
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  ASSERT_TRUE(later->conn().Execute("INSERT INTO t (id) VALUES (2)", {}).ok());
  ASSERT_TRUE(later->Commit().ok());
  auto reader = (*a)->Acquire();
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Query("SELECT count(*) FROM t", {})->at(0).Int(0).value(), 2);
}

// Within one process a second write transaction waits for the writer slot instead of
// failing with Busy, and gets it when the first finishes.
TEST_F(SqliteDatabaseTest, WriteTransactionsInOneProcessQueue) {
  DatabaseOptions impatient;
  impatient.busy_timeout_ms = 0;
  impatient.acquire_timeout_ms = 0;
  auto db = Database::Open(Uri(), impatient);
  ASSERT_TRUE(db.ok());
  auto first = (*db)->Begin(TxnMode::kWrite);
  ASSERT_TRUE(first.ok());
  // With no wait allowed the slot is reported Busy, not a SQLite lock error.
  auto second = (*db)->Begin(TxnMode::kWrite);
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_NE(second.status().message().find("writer slot"), std::string::npos) << second.status().ToString();
  ASSERT_TRUE(first->Commit().ok());
  auto third = (*db)->Begin(TxnMode::kWrite);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

}  // namespace
}  // namespace vigil::meta

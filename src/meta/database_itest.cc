// meta::Database on PostgreSQL: the shared conformance suite against the
// throwaway server of the vigil_pg ctest fixture (scripts/pg-test-server.sh).
#include <gtest/gtest.h>

#include "meta/database_conformance.h"
#include "testutil/test_database.h"

namespace vigil::meta {

INSTANTIATE_TEST_SUITE_P(Postgres, DatabaseConformanceTest, ::testing::Values(testing::PostgresBackend()),
                         testing::BackendName);

namespace {

TEST(PostgresDatabaseTest, ServerIsReachable) {
  auto conninfo = testing::PgTestConninfo();
  ASSERT_TRUE(conninfo.ok()) << conninfo.status().ToString();
  auto db = Database::Open(*conninfo);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ((*db)->profile().dialect, Dialect::kPostgres);
  auto conn = (*db)->Acquire();
  ASSERT_TRUE(conn.ok());
  auto rows = (*conn)->Query("SHOW synchronous_commit", {});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->at(0).Text(0).value(), "on");
}

// A transaction left idle past idle_in_transaction_timeout_ms (a process stopped mid-way)
// is ended by the server: its row lock is freed for the next writer, and its own commit
// fails. Without the bound the next writer waits for as long as the holder is stopped.
TEST(PostgresDatabaseTest, AnIdleTransactionPastItsBoundIsEndedAndItsLocksFreed) {
  auto conninfo = testing::PgTestConninfo();
  ASSERT_TRUE(conninfo.ok()) << conninfo.status().ToString();
  for (int bound_ms : {0, 300}) {
    SCOPED_TRACE(bound_ms);
    DatabaseOptions options;
    options.idle_in_transaction_timeout_ms = bound_ms;
    auto db = Database::Open(*conninfo, options);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)
                    ->Write([](Connection& c) {
                      VIGIL_RETURN_IF_ERROR(
                          c.ExecuteScript("DROP TABLE IF EXISTS held; CREATE TABLE held (id BIGINT "
                                          "PRIMARY KEY, v BIGINT); INSERT INTO held VALUES (1, 0)"));
                      return Status::OK();
                    })
                    .ok());
    auto holder = (*db)->Begin(TxnMode::kWrite);
    ASSERT_TRUE(holder.ok());
    ASSERT_TRUE(holder->conn().Execute("UPDATE held SET v = 1 WHERE id = 1", {}).ok());
    // The holder now stands still; the next writer waits for its row at most 5 s.
    Status next = (*db)->Write([](Connection& c) -> Status {
      VIGIL_RETURN_IF_ERROR(c.ExecuteScript("SET LOCAL lock_timeout = '5s'"));
      return c.Execute("UPDATE held SET v = 2 WHERE id = 1", {}).status();
    });
    if (bound_ms == 0) {
      EXPECT_FALSE(next.ok()) << "the row was free while its holder stood still";
      EXPECT_TRUE(holder->Commit().ok());
      continue;
    }
    EXPECT_TRUE(next.ok()) << next.ToString();
    EXPECT_FALSE(holder->Commit().ok()) << "the ended transaction committed";
    auto conn = (*db)->Acquire();
    ASSERT_TRUE(conn.ok());
    auto rows = (*conn)->Query("SELECT v FROM held WHERE id = 1", {});
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(rows->at(0).Int(0).value(), 2);
  }
}

}  // namespace
}  // namespace vigil::meta

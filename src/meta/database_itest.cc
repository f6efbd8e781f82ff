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

}  // namespace
}  // namespace vigil::meta

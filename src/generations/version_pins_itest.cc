// The version pin store's counts on SQLite and PostgreSQL: live pins over every table,
// and the distinct table versions they hold (two readers of one version hold one).
#include "vigil/generations/version_pins.h"

#include <gtest/gtest.h>

#include "testutil/test_database.h"

namespace vigil::generations {
namespace {

class VersionPinCountTest : public ::testing::TestWithParam<testing::DatabaseBackend> {};

TEST_P(VersionPinCountTest, LivePinsAndTheVersionsTheyHold) {
  auto env = GetParam().make();
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto db = meta::Database::Open((*env)->uri());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto pins = VersionPinStore::Open(db->get(), 0);
  ASSERT_TRUE(pins.ok()) << pins.status().ToString();
  EXPECT_EQ((*pins)->CountLive(0)->pins, 0);
  ASSERT_TRUE((*pins)->Pin("/r/t1", 1, "a", 0, 1000).ok());
  ASSERT_TRUE((*pins)->Pin("/r/t1", 1, "b", 0, 1000).ok());
  ASSERT_TRUE((*pins)->Pin("/r/t1", 2, "a", 0, 1000).ok());
  ASSERT_TRUE((*pins)->Pin("/r/t2", 1, "a", 0, 1000).ok());
  ASSERT_TRUE((*pins)->Pin("/r/t2", 3, "c", 0, 10).ok());  // expired at 100
  Result<PinCounts> at100 = (*pins)->CountLive(100);
  ASSERT_TRUE(at100.ok()) << at100.status().ToString();
  EXPECT_EQ(at100->pins, 4);
  EXPECT_EQ(at100->versions, 3);
  Result<PinCounts> at5 = (*pins)->CountLive(5);
  EXPECT_EQ(at5->pins, 5);
  EXPECT_EQ(at5->versions, 4);
  EXPECT_EQ((*pins)->CountLive(2000)->pins, 0);
}

INSTANTIATE_TEST_SUITE_P(Sqlite, VersionPinCountTest, ::testing::Values(testing::SqliteBackend()),
                         testing::BackendName);
INSTANTIATE_TEST_SUITE_P(Postgres, VersionPinCountTest, ::testing::Values(testing::PostgresBackend()),
                         testing::BackendName);

}  // namespace
}  // namespace vigil::generations

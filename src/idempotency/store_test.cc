// IdempotencyStore on SQLite (the embedded default): the conformance suite,
// plus checks of the record validation and header encoding.
#include "vigil/idempotency/store.h"

#include <gtest/gtest.h>

#include "idempotency/schema.h"
#include "idempotency/store_conformance.h"
#include "testutil/test_database.h"

namespace vigil::idempotency {

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest, ::testing::Values(testing::SqliteBackend()),
                         testing::BackendName);

namespace {

TEST(RecordTest, HeadersRoundTripAndCorruptHeadersAreRejected) {
  std::map<std::string, std::string> h = {{"location", "/v1/jobs/1"}, {"etag", "\"v7\""}};
  auto back = DecodeHeaders(EncodeHeaders(h));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, h);
  EXPECT_EQ(DecodeHeaders("[1,2]").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeHeaders("{\"a\": 1}").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeHeaders("{not json").status().code(), StatusCode::kCorruption);
}

TEST(RecordTest, FinalizeValidationLowerCasesAllowlistedHeaders) {
  FinalizeRequest f;
  f.realm_id = "r";
  f.idempotency_key = "k";
  f.executor_id = "e";
  f.response_headers = {{"ETag", "\"1\""}, {"Vigil-Job-Id", "42"}};
  ASSERT_TRUE(ValidateFinalize(&f).ok());
  std::map<std::string, std::string> want = {{"etag", "\"1\""}, {"vigil-job-id", "42"}};
  EXPECT_EQ(f.response_headers, want);
  EXPECT_FALSE(IsAllowedResponseHeader("authorization"));
  EXPECT_TRUE(IsAllowedResponseHeader("location"));
}

TEST(SchemaTest, EachBackendHasNumberedMigrationsAndTheIndexesThePurgeAndScanNeed) {
  for (meta::Dialect d : {meta::Dialect::kSqlite, meta::Dialect::kPostgres}) {
    const auto& migrations = SchemaMigrations(d);
    ASSERT_FALSE(migrations.empty());
    for (size_t i = 0; i < migrations.size(); ++i) EXPECT_EQ(migrations[i].version, int(i + 1));
    std::string all;
    for (const auto& m : migrations) all += m.sql;
    EXPECT_NE(all.find("PRIMARY KEY (realm_id, idempotency_key)"), std::string::npos);
    EXPECT_NE(all.find("(realm_id, expires_at)"), std::string::npos);
    EXPECT_NE(all.find("(realm_id, heartbeat_at)\n  WHERE http_status IS NULL"), std::string::npos);
  }
}

// Released migrations are never edited: these checksums are of the SQL as released. A change
// here means a released migration was edited; add a new migration instead.
TEST(SchemaTest, ReleasedMigrationsAreUnchanged) {
  EXPECT_EQ(meta::MigrationChecksum(SchemaMigrations(meta::Dialect::kSqlite)[0].sql), "882b4b50e6be7a98");
  EXPECT_EQ(meta::MigrationChecksum(SchemaMigrations(meta::Dialect::kPostgres)[0].sql), "0d16c23769b8aacf");
}

TEST(StoreOpenTest, EditedReleasedMigrationIsDetectedAtOpen) {
  testing::SqliteTestEnv env;
  testing::FakeEnv clock(kT0 * 1000);
  {
    StoreOptions opts;
    opts.uri = env.uri();
    opts.env = &clock;
    ASSERT_TRUE(IdempotencyStore::Open(opts).ok());
  }
  // Simulate a build whose version 1 differs from the one that was applied.
  auto db = meta::Database::Open(env.uri());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)
                  ->Write([](meta::Connection& c) {
                    return c
                        .Execute(
                            "UPDATE vigil_schema_migrations SET checksum = $1"
                            " WHERE component = $2 AND version = 1",
                            {"0000000000000000", "idempotency"})
                        .status();
                  })
                  .ok());
  StoreOptions opts;
  opts.uri = env.uri();
  opts.env = &clock;
  auto reopened = IdempotencyStore::Open(opts);
  EXPECT_EQ(reopened.status().code(), StatusCode::kCorruption) << reopened.status().ToString();
}

}  // namespace
}  // namespace vigil::idempotency

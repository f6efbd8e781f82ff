// JobStore on SQLite (the embedded default): the conformance suite, admission
// racing DROP TABLE on threads, the schema's migrations, and the pure text
// rules of job_record.h.
#include "vigil/jobs/job_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "jobs/job_schema.h"
#include "jobs/job_store_conformance.h"
#include "testutil/test_database.h"

namespace vigil::jobs {

INSTANTIATE_TEST_SUITE_P(Sqlite, JobStoreConformanceTest, ::testing::Values(testing::SqliteBackend()),
                         testing::BackendName);

namespace {

// A DROP TABLE (guard check + delete in one write transaction) and an admission race on two
// threads: exactly one wins, and the loser changed nothing (C2).
TEST_P(JobStoreConformanceTest, AdmissionRacingDropTableSerializesSoExactlyOneWins) {
  for (int round = 0; round < 20; ++round) {
    std::string name = "t" + std::to_string(round);
    auto table = store_->catalog().RegisterTable("local", "db", name, "/root/db/" + name, now_);
    ASSERT_TRUE(table.ok());
    std::atomic<int> go{0};
    Result<JobRecord> admitted = Status::Internal("not run");
    Status dropped = Status::Internal("not run");
    std::thread admit([&] {
      while (go.load() == 0) {
      }
      admitted = store_->Admit(Spec("idx", &*table), "alice", now_);
    });
    std::thread drop([&] {
      while (go.load() == 0) {
      }
      auto txn = store_->database().Begin(meta::TxnMode::kWrite);
      dropped = txn.ok() ? store_->DropTable(*txn, "local", "db", name) : txn.status();
      if (dropped.ok()) dropped = txn->Commit();
    });
    go.store(1);
    admit.join();
    drop.join();
    ASSERT_NE(admitted.ok(), dropped.ok()) << admitted.status().ToString() << " / " << dropped.ToString();
    if (admitted.ok()) {
      EXPECT_EQ(dropped.code(), StatusCode::kFailedPrecondition);
      EXPECT_TRUE(store_->catalog().LookupTable("local", "db", name).value().has_value());
    } else {
      EXPECT_EQ(admitted.status().code(), StatusCode::kNotFound);
      JobFilter f;
      f.table_name = name;
      EXPECT_TRUE(store_->List(f).value().empty());
    }
  }
}

// Seed 000 section 5: v1 is Java's toLowerCase(Locale.ROOT), non-ASCII code points included.
TEST(JobRecordTest, NormalizationV1LowersEachCodePointAsJavasRootLocaleDoes) {
  EXPECT_EQ(NormalizeIndexNameV1("Emb_IDX_9"), "emb_idx_9");
  EXPECT_EQ(NormalizeIndexNameV1("Äpfel"), "äpfel");
  EXPECT_EQ(NormalizeIndexNameV1("ÍNDICE"), "índice");
  EXPECT_EQ(NormalizeIndexNameV1("índice"), "índice");
  EXPECT_EQ(NormalizeIndexNameV1("ИНДЕКС"), "индекс");
  EXPECT_EQ(NormalizeIndexNameV1("İx"), "i\u0307x");            // U+0069 U+0307, as Java
  EXPECT_EQ(NormalizeIndexNameV1("\U00010400"), "\U00010428");  // four UTF-8 bytes each
  EXPECT_EQ(NormalizeIndexNameV1("ᾈ"), "ᾀ");                    // titlecase U+1F88 to U+1F80
  // Every sigma lowers to U+03C3, the final form too (Java picks U+03C2 for a word-final one).
  EXPECT_EQ(NormalizeIndexNameV1("ΟΣ"), "οσ");
  EXPECT_EQ(NormalizeIndexNameV1("ος"), "οσ");
  // Not case folding: no expansion of "ß", and what is already lower stays.
  EXPECT_EQ(NormalizeIndexNameV1("STRAßE"), "straße");
  // Bytes that are not UTF-8 are kept.
  EXPECT_EQ(NormalizeIndexNameV1("A\xFF\xC3"), "a\xFF\xC3");
}

TEST(JobRecordTest, NotesAreTrimmedStrippedOfControlsAndBounded) {
  EXPECT_EQ(NormalizeNote("  host lost;\x07 accepted \n").value(), "host lost; accepted");
  EXPECT_EQ(NormalizeNote("caf\xC3\xA9\xC2\x85").value(), "caf\xC3\xA9");  // C1 control removed
  EXPECT_EQ(NormalizeNote(" \t\r\n ").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NormalizeNote(std::string(1025, 'x')).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NormalizeNote("\xC3").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NormalizeNote(std::string(1024, 'x')).value().size(), 1024u);
}

TEST(JobRecordTest, MessagesAreSanitizedAndCutOnACharacterBoundary) {
  EXPECT_EQ(SanitizeMessage("a\nb\xFF"
                            "c"),
            "ab?c");
  std::string long_msg = std::string(1023, 'x') + "\xE2\x82\xAC";  // the euro sign straddles 1,024
  EXPECT_EQ(SanitizeMessage(long_msg), std::string(1023, 'x'));
}

TEST(JobRecordTest, SpecValidationNamesTheBadField) {
  JobSpec s;
  EXPECT_EQ(ValidateSpec(s).code(), StatusCode::kInvalidArgument);
  s.database_name = "db";
  s.table_name = "t";
  s.catalog_incarnation = "c";
  s.table_incarnation = "t1";
  s.locator = "/l";
  s.index_name = "idx";
  s.schema_fingerprint = "fp";
  s.operation = Operation::kDrop;
  EXPECT_TRUE(ValidateSpec(s).ok());
  s.operation = Operation::kCreate;
  EXPECT_NE(ValidateSpec(s).message().find("columns"), std::string::npos);
  s.columns = {"emb"};
  s.category = SqlCategory::kAnn;
  s.physical_type = "IVF_PQ";
  EXPECT_TRUE(ValidateSpec(s).ok());
  s.properties_json = std::string(401, ' ');
  EXPECT_EQ(ValidateSpec(s).code(), StatusCode::kInvalidArgument);
}

TEST(JobSchemaTest, EachBackendHasNumberedMigrationsWithTheListingIndex) {
  for (meta::Dialect d : {meta::Dialect::kSqlite, meta::Dialect::kPostgres}) {
    const auto& migrations = SchemaMigrations(d);
    ASSERT_FALSE(migrations.empty());
    for (size_t i = 0; i < migrations.size(); ++i) EXPECT_EQ(migrations[i].version, int(i + 1));
    EXPECT_NE(std::string(migrations[0].sql).find("(catalog_name, database_name, table_name, outcome, job_id)"),
              std::string::npos);
  }
}

// Released migrations are never edited: these checksums are of the SQL as released. A change
// here means a released migration was edited; add a new migration instead.
TEST(JobSchemaTest, ReleasedMigrationsAreUnchanged) {
  EXPECT_EQ(meta::MigrationChecksum(SchemaMigrations(meta::Dialect::kSqlite)[0].sql), "6db65d840dfbace9");
  EXPECT_EQ(meta::MigrationChecksum(SchemaMigrations(meta::Dialect::kPostgres)[0].sql), "cbfe53b317010277");
}

}  // namespace
}  // namespace vigil::jobs

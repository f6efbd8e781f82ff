// The meta::Database conformance suite, run on SQLite by database_test.cc and
// on PostgreSQL by database_itest.cc: parameter binding and typed rows, error
// mapping, transactions, grouped writes and numbered migrations. Include from
// exactly one file per test binary.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "testutil/test_database.h"
#include "vigil/meta/database.h"
#include "vigil/meta/migrations.h"

namespace vigil::meta {

class DatabaseConformanceTest : public ::testing::TestWithParam<testing::DatabaseBackend> {
 protected:
  void SetUp() override {
    auto env = GetParam().make();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(env).value();
    auto db = Database::Open(env_->uri());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    ASSERT_TRUE(Exec("CREATE TABLE t (id BIGINT PRIMARY KEY, r DOUBLE PRECISION, s TEXT)").ok());
  }
  void TearDown() override {
    db_.reset();
    env_.reset();
  }

  Status Exec(std::string_view sql, const Params& params = {}) {
    auto conn = db_->Acquire();
    if (!conn.ok()) return conn.status();
    return (*conn)->Execute(sql, params).status();
  }
  int64_t Count(std::string_view where = "") {
    auto conn = db_->Acquire();
    EXPECT_TRUE(conn.ok());
    auto rows = (*conn)->Query("SELECT count(*) FROM t" + std::string(where), {});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? rows->at(0).Int(0).value() : -1;
  }

  std::unique_ptr<testing::TestDatabaseEnv> env_;
  std::unique_ptr<Database> db_;
};

TEST_P(DatabaseConformanceTest, BindsAndReturnsTypedValues) {
  auto conn = db_->Acquire();
  ASSERT_TRUE(conn.ok());
  const std::string text = "it's \"quoted\" ünïcode; DROP TABLE t; --";
  const int64_t big = std::numeric_limits<int64_t>::min();
  auto n = (*conn)->Execute("INSERT INTO t (id, r, s) VALUES ($1, $2, $3), ($4, $5, $6)",
                            {big, 2.5, text, 7, nullptr, nullptr});
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
  auto rows = (*conn)->Query("SELECT id, r, s FROM t ORDER BY id", {});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(rows->at(0).Int(0).value(), big);
  EXPECT_EQ(rows->at(0).Real(1).value(), 2.5);
  EXPECT_EQ(rows->at(0).Text(2).value(), text);
  EXPECT_EQ(rows->at(1).Int(0).value(), 7);
  EXPECT_TRUE(rows->at(1).IsNull(1));
  EXPECT_FALSE(rows->at(1).OptText(2).value().has_value());
  // Wrong type, NULL where a value is required, and a bad index are errors, not crashes.
  EXPECT_EQ(rows->at(0).Int(2).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(rows->at(1).Text(2).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(rows->at(0).Int(3).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(DatabaseConformanceTest, PlaceholdersBindByNumberNotPosition) {
  auto conn = db_->Acquire();
  ASSERT_TRUE(conn.ok());
  // $2 appears before $1; the query uses $1 twice.
  ASSERT_TRUE((*conn)->Execute("INSERT INTO t (s, id, r) VALUES ($2, $1, $3)", {5, "five", 0.5}).ok());
  ASSERT_TRUE((*conn)->Execute("INSERT INTO t (s, id, r) VALUES ($2, $1, $3)", {6, "six", 1.5}).ok());
  auto row = (*conn)->QueryOptional("SELECT id, s, r FROM t WHERE id >= $1 AND id <= $1", {5});
  ASSERT_TRUE(row.ok() && row->has_value()) << row.status().ToString();
  EXPECT_EQ((*row)->Int(0).value(), 5);
  EXPECT_EQ((*row)->Text(1).value(), "five");
  EXPECT_EQ((*row)->Real(2).value(), 0.5);
}

TEST_P(DatabaseConformanceTest, ParameterCountMismatchIsInvalidArgument) {
  auto conn = db_->Acquire();
  ASSERT_TRUE(conn.ok());
  EXPECT_EQ((*conn)->Execute("INSERT INTO t (id) VALUES ($1)", {1, 2}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*conn)->Execute("INSERT INTO t (id, s) VALUES ($1, $2)", {1}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Count(), 0);
}

TEST_P(DatabaseConformanceTest, UniqueViolationIsAlreadyExistsAndConnectionStaysUsable) {
  ASSERT_TRUE(Exec("INSERT INTO t (id) VALUES ($1)", {1}).ok());
  Status st = Exec("INSERT INTO t (id) VALUES ($1)", {1});
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
  EXPECT_EQ(Exec("SELEKT nonsense").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Exec("INSERT INTO t (id) VALUES ($1)", {2}).ok());
  EXPECT_EQ(Count(), 2);
}

TEST_P(DatabaseConformanceTest, CommitIsVisibleRollbackAndDropAreNot) {
  {
    auto txn = db_->Begin(TxnMode::kWrite);
    ASSERT_TRUE(txn.ok()) << txn.status().ToString();
    ASSERT_TRUE(txn->conn().Execute("INSERT INTO t (id) VALUES (1)", {}).ok());
    ASSERT_TRUE(txn->Commit().ok());
    EXPECT_FALSE(txn->active());
    EXPECT_EQ(txn->Commit().code(), StatusCode::kFailedPrecondition);
  }
  {
    auto txn = db_->Begin(TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(txn->conn().Execute("INSERT INTO t (id) VALUES (2)", {}).ok());
    ASSERT_TRUE(txn->Rollback().ok());
  }
  {
    auto txn = db_->Begin(TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(txn->conn().Execute("INSERT INTO t (id) VALUES (3)", {}).ok());
    // Destroyed without Commit: rolled back.
  }
  EXPECT_EQ(Count(), 1);
  EXPECT_EQ(Count(" WHERE id = 1"), 1);
}

TEST_P(DatabaseConformanceTest, UncommittedWritesAreInvisibleToOtherConnections) {
  auto txn = db_->Begin(TxnMode::kWrite);
  ASSERT_TRUE(txn.ok());
  ASSERT_TRUE(txn->conn().Execute("INSERT INTO t (id) VALUES (9)", {}).ok());
  EXPECT_EQ(Count(), 0);
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_EQ(Count(), 1);
}

TEST_P(DatabaseConformanceTest, WholeWriteIsAtomic) {
  Status st = db_->Write([](Connection& c) -> Status {
    VIGIL_RETURN_IF_ERROR(c.Execute("INSERT INTO t (id) VALUES (1)", {}).status());
    VIGIL_RETURN_IF_ERROR(c.Execute("INSERT INTO t (id) VALUES (2)", {}).status());
    return Status::Cancelled("changed my mind");
  });
  EXPECT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_EQ(Count(), 0);
  ASSERT_TRUE(db_->Write([](Connection& c) { return c.Execute("INSERT INTO t (id) VALUES (1)", {}).status(); }).ok());
  EXPECT_EQ(Count(), 1);
}

TEST_P(DatabaseConformanceTest, ConcurrentWritesKeepEachCallersOutcome) {
  // Every odd callback inserts a row and then fails; only the even callbacks' rows survive,
  // whichever callbacks end up sharing a commit.
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int64_t id = t * kPerThread + i;
        Status st = db_->Write([id](Connection& c) -> Status {
          VIGIL_RETURN_IF_ERROR(c.Execute("INSERT INTO t (id) VALUES ($1)", {id}).status());
          return id % 2 ? Status::Cancelled("odd") : Status::OK();
        });
        if (st.ok() != (id % 2 == 0)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(Count(), kThreads * kPerThread / 2);
  EXPECT_EQ(Count(" WHERE id % 2 = 1"), 0);
}

TEST_P(DatabaseConformanceTest, PoolReusesConnectionsAndTimesOutWhenExhausted) {
  DatabaseOptions opts;
  opts.max_connections = 1;
  opts.acquire_timeout_ms = 0;
  auto db = Database::Open(env_->uri(), opts);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  {
    auto held = (*db)->Acquire();
    ASSERT_TRUE(held.ok());
    auto second = (*db)->Acquire();
    EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  }
  auto again = (*db)->Acquire();
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

const std::vector<Migration> kMigrationsV1 = {
    {1, "create a", "CREATE TABLE a (x INTEGER NOT NULL)"},
};
const std::vector<Migration> kMigrationsV2 = {
    {1, "create a", "CREATE TABLE a (x INTEGER NOT NULL)"},
    {2, "create b", "CREATE TABLE b (y INTEGER); INSERT INTO b (y) VALUES (42)"},
};

TEST_P(DatabaseConformanceTest, MigrationsApplyOnceAndInOrder) {
  auto n = ApplyMigrations(*db_, "comp", kMigrationsV1, 1000);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  n = ApplyMigrations(*db_, "comp", kMigrationsV1, 2000);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 0);
  n = ApplyMigrations(*db_, "comp", kMigrationsV2, 3000);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  auto applied = ListAppliedMigrations(*db_, "comp");
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  ASSERT_EQ(applied->size(), 2u);
  EXPECT_EQ(applied->at(0).version, 1);
  EXPECT_EQ(applied->at(0).applied_at_ms, 1000);
  EXPECT_EQ(applied->at(0).checksum, MigrationChecksum(kMigrationsV1[0].sql));
  EXPECT_EQ(applied->at(1).version, 2);
  EXPECT_EQ(applied->at(1).applied_at_ms, 3000);
  // Components are independent.
  auto other = ListAppliedMigrations(*db_, "other");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty());
  auto conn = db_->Acquire();
  ASSERT_TRUE(conn.ok());
  auto row = (*conn)->QueryOptional("SELECT y FROM b", {});
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->Int(0).value(), 42);
}

TEST_P(DatabaseConformanceTest, EditedMigrationIsDetected) {
  ASSERT_TRUE(ApplyMigrations(*db_, "comp", kMigrationsV1, 1).ok());
  const std::vector<Migration> edited = {
      {1, "create a", "CREATE TABLE a (x INTEGER NOT NULL, z TEXT)"},
  };
  auto n = ApplyMigrations(*db_, "comp", edited, 2);
  EXPECT_EQ(n.status().code(), StatusCode::kCorruption) << n.status().ToString();
}

TEST_P(DatabaseConformanceTest, NewerSchemaThanBuildIsRefused) {
  ASSERT_TRUE(ApplyMigrations(*db_, "comp", kMigrationsV2, 1).ok());
  auto n = ApplyMigrations(*db_, "comp", kMigrationsV1, 2);
  EXPECT_EQ(n.status().code(), StatusCode::kFailedPrecondition) << n.status().ToString();
}

TEST_P(DatabaseConformanceTest, FailedMigrationRunLeavesNothingBehind) {
  const std::vector<Migration> broken = {
      {1, "create a", "CREATE TABLE a (x INTEGER NOT NULL)"},
      {2, "broken", "CREATE TABLE b (y INTEGER); THIS IS NOT SQL"},
  };
  auto n = ApplyMigrations(*db_, "comp", broken, 1);
  EXPECT_FALSE(n.ok());
  auto applied = ListAppliedMigrations(*db_, "comp");
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_TRUE(applied->empty());
  // Table a was rolled back with the rest, so version 1 applies cleanly now.
  auto again = ApplyMigrations(*db_, "comp", kMigrationsV1, 2);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, 1);
}

TEST_P(DatabaseConformanceTest, GappedMigrationListIsInvalid) {
  const std::vector<Migration> gapped = {{1, "a", "CREATE TABLE a (x INTEGER)"},
                                         {3, "c", "CREATE TABLE c (x INTEGER)"}};
  EXPECT_EQ(ApplyMigrations(*db_, "comp", gapped, 1).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(DatabaseConformanceTest, ConcurrentMigrationRunsApplyEachVersionOnce) {
  constexpr int kThreads = 4;
  std::atomic<int> applied{0};
  std::atomic<int> failed{0};
  std::vector<std::unique_ptr<Database>> dbs;
  for (int i = 0; i < kThreads; ++i) {
    auto db = Database::Open(env_->uri());
    ASSERT_TRUE(db.ok());
    dbs.push_back(std::move(db).value());
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto n = ApplyMigrations(*dbs[i], "comp", kMigrationsV2, i);
      if (n.ok()) {
        applied += *n;
      } else {
        ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(applied.load(), 2);
}

}  // namespace vigil::meta

// The locked-down SELECT connection on a raw SQLite connection: the function
// allowlist against the library's own function list, the connection flags and
// limits (which hold even for statements the authorizer admits), the
// authorizer's typed refusals, and the statement deadline with the block reads
// of the virtual-table cursors.
#include "sql/select/sql_lockdown.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <set>
#include <string>

#include "sql/select/statement_deadline.h"
#include "sql/select/vtab_internal.h"
#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/common/cancellation.h"
#include "vigil/query/snapshot.h"
#include "vigil/storage/dataset.h"

namespace vigil::sql::internal {
namespace {

using ::testing::HasSubstr;

// Every function name the linked SQLite library offers (PRAGMA function_list on a
// plain connection).
std::set<std::string> LibraryFunctions() {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT name FROM pragma_function_list", -1, &stmt, nullptr), SQLITE_OK);
  std::set<std::string> out;
  while (sqlite3_step(stmt) == SQLITE_ROW) out.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

TEST(SqlAllowlistTest, IsSortedUniqueAndNamesOnlyFunctionsTheLibraryHas) {
  const auto& allowed = AllowedFunctions();
  EXPECT_TRUE(std::is_sorted(allowed.begin(), allowed.end()));
  EXPECT_EQ(std::adjacent_find(allowed.begin(), allowed.end()), allowed.end());
  const std::set<std::string> library = LibraryFunctions();
  for (std::string_view f : allowed) EXPECT_TRUE(library.count(std::string(f))) << f << " is not in this SQLite";
  EXPECT_TRUE(IsAllowedFunction("COUNT"));
  EXPECT_TRUE(IsAllowedFunction("json_extract"));
  for (const char* f : {"fts3_tokenizer", "load_extension", "readfile", "writefile", "sqlite_version", "fts5",
                        "subtype", "changes", ""}) {
    EXPECT_FALSE(IsAllowedFunction(f)) << f;
  }
}

TEST(SqlAllowlistTest, TablesAreVigilsAndTheJsonWalkers) {
  for (const auto& [name, module] : MetadataModules()) EXPECT_TRUE(IsAllowedTable(name)) << name;
  for (const char* t :
       {"vigil:local.db.docs", "vigil_vs:local.db.docs", "vigil_fts:local.db.docs", "json_each", "JSON_TREE"}) {
    EXPECT_TRUE(IsAllowedTable(t)) << t;
  }
  for (const char* t : {"sqlite_master", "sqlite_temp_master", "pragma_function_list", "dbstat",
                        "vigil:", "vigil_table", "vigil_vector_search", "x"}) {
    EXPECT_FALSE(IsAllowedTable(t)) << t;
  }
}

// A raw connection with the lockdown installed; refusals land in `denied`.
class LockdownTest : public ::testing::Test {
 protected:
  LockdownTest() : lockdown_([this](const Status& s) { denied_.push_back(s); }) {
    EXPECT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    Status st = lockdown_.Install(db_);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  ~LockdownTest() override { sqlite3_close(db_); }

  // Prepares and steps `sql`; "" on success, else SQLite's message.
  std::string Run(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    if (rc == SQLITE_OK && stmt != nullptr) {
      while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      }
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    std::string out = rc == SQLITE_OK ? "" : sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return out;
  }
  int Flag(int option) {
    int v = -1;
    EXPECT_EQ(sqlite3_db_config(db_, option, -1, &v), SQLITE_OK);
    return v;
  }

  std::vector<Status> denied_;
  Lockdown lockdown_;
  sqlite3* db_ = nullptr;
};

TEST_F(LockdownTest, FlagsAndLimitsAreSet) {
  EXPECT_EQ(Flag(SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER), 0);
  EXPECT_EQ(Flag(SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION), 0);
  EXPECT_EQ(Flag(SQLITE_DBCONFIG_DEFENSIVE), 1);
  EXPECT_EQ(Flag(SQLITE_DBCONFIG_TRUSTED_SCHEMA), 0);
  EXPECT_EQ(Flag(SQLITE_DBCONFIG_ENABLE_TRIGGER), 0);
  EXPECT_EQ(Flag(SQLITE_DBCONFIG_ENABLE_VIEW), 0);
  EXPECT_EQ(Flag(SQLITE_DBCONFIG_WRITABLE_SCHEMA), 0);
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, -1), 0);
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1), kLimitLength);
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_SQL_LENGTH, -1), kLimitSqlLength);
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_EXPR_DEPTH, -1), kLimitExprDepth);
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_COMPOUND_SELECT, -1), kLimitCompoundSelect);
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, -1), kLimitLikePatternLength);
  EXPECT_EQ(sqlite3_limit(db_, SQLITE_LIMIT_VARIABLE_NUMBER, -1), kLimitVariableNumber);
}

// The flags hold even where the authorizer admits everything (the engine's own statements).
TEST_F(LockdownTest, FlagsHoldBehindTheAuthorizer) {
  Lockdown::InternalScope internal(&lockdown_);
  EXPECT_THAT(Run("SELECT fts3_tokenizer('x', X'0000000000000000')"), HasSubstr("fts3tokenize disabled"));
  EXPECT_THAT(Run("SELECT load_extension('/nonexistent/x')"), HasSubstr("not authorized"));
  EXPECT_THAT(Run("ATTACH ':memory:' AS other"), HasSubstr("too many attached databases"));
  EXPECT_EQ(Run("CREATE VIEW main.v AS SELECT 1"), "");
  EXPECT_THAT(Run("SELECT * FROM main.v"), HasSubstr("prohibited"));
  EXPECT_TRUE(denied_.empty());
}

TEST_F(LockdownTest, LimitsBoundStatements) {
  std::string deep = "SELECT 1";
  for (int i = 0; i < kLimitExprDepth + 10; ++i) deep += " + 1";
  EXPECT_THAT(Run(deep), HasSubstr("Expression tree is too large"));
  std::string compound = "SELECT 1";
  for (int i = 0; i < kLimitCompoundSelect + 1; ++i) compound += " UNION ALL SELECT 1";
  EXPECT_THAT(Run(compound), HasSubstr("too many terms in compound SELECT"));
  EXPECT_THAT(Run("SELECT 'a' LIKE '" + std::string(kLimitLikePatternLength + 1, '%') + "'"),
              HasSubstr("LIKE or GLOB pattern too complex"));
  EXPECT_THAT(Run("SELECT ?" + std::to_string(kLimitVariableNumber + 1)), HasSubstr("variable number must be"));
  EXPECT_THAT(Run("SELECT length(zeroblob(" + std::to_string(kLimitLength + 1) + "))"),
              HasSubstr("string or blob too big"));
  EXPECT_EQ(Run("SELECT length(zeroblob(" + std::to_string(kLimitLength) + "))"), "");
}

TEST_F(LockdownTest, RefusalsAreTyped) {
  EXPECT_THAT(Run("SELECT fts3_tokenizer('simple')"), HasSubstr("not authorized"));
  ASSERT_EQ(denied_.size(), 1u);
  EXPECT_EQ(denied_[0].code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(denied_[0].message(), "function fts3_tokenizer is not allowed in Vigil SQL");
  denied_.clear();
  EXPECT_NE(Run("SELECT * FROM pragma_function_list"), "");
  ASSERT_FALSE(denied_.empty());
  EXPECT_EQ(denied_[0].message(), "table pragma_function_list is not allowed in Vigil SQL");
  denied_.clear();
  EXPECT_NE(Run("PRAGMA function_list"), "");
  ASSERT_FALSE(denied_.empty());
  EXPECT_EQ(denied_[0].message(), "PRAGMA function_list is not allowed in Vigil SQL");
  denied_.clear();
  // count(*) reads a table without naming its database, like a common table expression.
  for (const char* table : {"dbstat", "sqlite_master", "sqlite_temp_master", "pragma_pragma_list"}) {
    for (const char* what : {"*", "count(*)"}) {
      EXPECT_NE(Run(std::string("SELECT ") + what + " FROM " + table), "");
      ASSERT_FALSE(denied_.empty()) << table;
      EXPECT_EQ(denied_[0].message(), std::string("table ") + table + " is not allowed in Vigil SQL");
      denied_.clear();
    }
  }
  for (const char* sql :
       {"CREATE TEMP TABLE t(a)", "WITH x AS (SELECT 1) INSERT INTO sqlite_temp_master VALUES (1, 2, 3, 4, 5)"}) {
    EXPECT_NE(Run(sql), "");
    ASSERT_FALSE(denied_.empty()) << sql;
    EXPECT_THAT(denied_[0].message(), HasSubstr("SQLite's schema and tables are not allowed in Vigil SQL"));
    denied_.clear();
  }
  EXPECT_NE(Run("BEGIN"), "");
  ASSERT_FALSE(denied_.empty());
  EXPECT_EQ(denied_[0].message(), "a transaction is not allowed in Vigil SQL: only SELECT runs here");
  denied_.clear();
  EXPECT_NE(Run("ATTACH ':memory:' AS other"), "");
  ASSERT_FALSE(denied_.empty());
  EXPECT_THAT(denied_[0].message(), HasSubstr("ATTACH is not allowed in Vigil SQL"));
  denied_.clear();
  EXPECT_EQ(Run("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) "
                "SELECT count(*), sum(x), group_concat(x) FROM c"),
            "");
  EXPECT_EQ(Run("SELECT key, value FROM json_each('[1, 2]')"), "");
  EXPECT_EQ(Run("WITH x(a) AS MATERIALIZED (SELECT 1) SELECT count(*) FROM x"), "");
  EXPECT_TRUE(denied_.empty()) << denied_[0].ToString();
}

// ---- statement deadline ----

TEST(StatementDeadlineTest, ACancelledRequestEndsItsStatementWithOrWithoutADeadline) {
  std::atomic<bool> cancelled{false};
  ScopedCancellation scope(&cancelled);
  EXPECT_TRUE(CheckStatementDeadline().ok());
  cancelled.store(true);
  EXPECT_EQ(CheckStatementDeadline().code(), StatusCode::kCancelled);
  {
    ScopedStatementDeadline none(0);
    EXPECT_EQ(CheckStatementDeadline().code(), StatusCode::kCancelled);
  }
  {
    ScopedCancellation other(nullptr);
    EXPECT_TRUE(CheckStatementDeadline().ok());
  }
  EXPECT_EQ(CheckStatementDeadline().code(), StatusCode::kCancelled);
}

TEST(StatementDeadlineTest, ArmedDeadlinePassesAndScopesNest) {
  testing::FakeEnv env;
  EXPECT_TRUE(CheckStatementDeadline().ok());
  {
    ScopedStatementDeadline off(0, &env);
    env.AdvanceMs(2);
    EXPECT_TRUE(CheckStatementDeadline().ok());
  }
  {
    ScopedStatementDeadline outer(1, &env);
    EXPECT_TRUE(CheckStatementDeadline().ok());
    env.AdvanceMs(1);
    Status st = CheckStatementDeadline();
    EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded);
    EXPECT_EQ(st.message(), "statement timeout of 1ms exceeded (statement_timeout)");
    {
      ScopedStatementDeadline inner(3'600'000, &env);
      EXPECT_TRUE(CheckStatementDeadline().ok());
    }
    EXPECT_EQ(CheckStatementDeadline().code(), StatusCode::kDeadlineExceeded);
  }
  EXPECT_TRUE(CheckStatementDeadline().ok());
  ScopedStatementDeadline minutes(120'000, &env);
  env.AdvanceMs(119'999);
  EXPECT_TRUE(CheckStatementDeadline().ok());
}

TEST(StatementDeadlineTest, StopsCursorBlockReads) {
  testing::TempDir dir;
  auto schema = *Schema::Make({Field{-1, "id", DataType::Of(TypeId::kInt64), false}});
  RecordBatch batch = RecordBatch::Empty(schema);
  for (int64_t i = 0; i < 10; ++i) ASSERT_TRUE(batch.AppendRow({vigil::Value(i)}).ok());
  auto ds = *Dataset::Create(dir.Join("t.vgl"), schema, {});
  std::vector<RecordBatch> batches{batch};
  ds = *ds->Append(MakeBatchReader(schema, std::move(batches)).get(), {});
  auto snap = *query::TableSnapshot::Open(ds);
  std::vector<RowAddress> rows{MakeRowAddress(0, 1), MakeRowAddress(0, 7)};
  auto ok = TakeRowsBlocked(*snap, rows, {"id"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->num_rows, 2u);
  testing::FakeEnv env;
  ScopedStatementDeadline deadline(1, &env);
  env.AdvanceMs(5);
  auto late = TakeRowsBlocked(*snap, rows, {"id"});
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace vigil::sql::internal

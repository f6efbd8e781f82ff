// The SQL surface of SELECT through a Session: every function the linked SQLite
// offers (PRAGMA function_list, read on a separate plain connection) is called
// through Vigil SQL; the allowlisted ones are admitted and every other one is
// refused with PermissionDenied before it runs. The refusal and timeout cases as
// statements live in testdata/exec/sql_surface.test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>
#include <string>
#include <tuple>

#include "sql/select/sql_lockdown.h"
#include "testutil/temp_dir.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

struct LibraryFunction {
  std::string name;
  std::string type;  // "s" scalar, "a" aggregate, "w" window-capable
  int narg = 0;      // -1: any
  bool operator<(const LibraryFunction& o) const {
    return std::tie(name, type, narg) < std::tie(o.name, o.type, o.narg);
  }
};

// A SELECT calling `f` with NULL arguments (one for a variadic function).
std::string Call(const LibraryFunction& f) {
  if (f.name == "->" || f.name == "->>") return "SELECT NULL " + f.name + " NULL";
  if (f.name == "current_date" || f.name == "current_time" || f.name == "current_timestamp") {
    return "SELECT " + f.name;  // keywords, not call syntax
  }
  std::string sql = "SELECT " + f.name + "(";
  const int args = f.narg < 0 ? 1 : f.narg;
  for (int i = 0; i < args; ++i) sql += i ? ", NULL" : "NULL";
  sql += ")";
  if (f.type == "w") sql += " OVER ()";
  return sql;
}

// Every overload PRAGMA function_list reports on a plain connection, and whether a call
// of it compiles there (internal functions are listed but cannot be called).
std::set<std::pair<LibraryFunction, bool>> LibraryFunctions() {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT name, type, narg FROM pragma_function_list", -1, &stmt, nullptr), SQLITE_OK);
  std::set<LibraryFunction> functions;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    functions.insert({reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)),
                      reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)), sqlite3_column_int(stmt, 2)});
  }
  sqlite3_finalize(stmt);
  std::set<std::pair<LibraryFunction, bool>> out;
  for (const LibraryFunction& f : functions) {
    sqlite3_stmt* probe = nullptr;
    std::string sql = Call(f);
    bool compiles = sqlite3_prepare_v2(db, sql.c_str(), -1, &probe, nullptr) == SQLITE_OK;
    sqlite3_finalize(probe);
    out.insert({f, compiles});
  }
  sqlite3_close(db);
  return out;
}

class SqlSurfaceTest : public ::testing::Test {
 protected:
  SqlSurfaceTest() {
    EXPECT_TRUE(Root::Init(dir_.Join("root")).ok());
    auto s = Session::Open(dir_.Join("root"));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    session_ = std::move(*s);
  }

  testing::TempDir dir_;
  std::unique_ptr<Session> session_;
};

TEST_F(SqlSurfaceTest, OnlyAllowlistedFunctionsRun) {
  size_t refused = 0;
  std::set<std::string> admitted;
  for (const auto& [f, compiles] : LibraryFunctions()) {
    const std::string sql = Call(f);
    auto r = session_->Execute(sql);
    if (internal::IsAllowedFunction(f.name)) {
      EXPECT_NE(r.status().code(), StatusCode::kPermissionDenied) << sql << ": " << r.status().ToString();
      admitted.insert(f.name);
    } else if (compiles) {
      ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied) << sql << ": " << r.status().ToString();
      EXPECT_EQ(r.status().message(), "function " + f.name + " is not allowed in Vigil SQL") << sql;
      ++refused;
    } else {
      EXPECT_FALSE(r.ok()) << sql;  // listed but not callable from SQL at all
    }
  }
  // Every allowlisted function exists here and was called.
  for (std::string_view name : internal::AllowedFunctions()) EXPECT_TRUE(admitted.count(std::string(name))) << name;
  EXPECT_GT(refused, 20u);
  // Spot checks of results through the allowlist.
  auto ok = session_->Execute("SELECT lower('AB'), length('abc'), typeof(1.5), instr('abc', 'c'), nullif(1, 1)");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->rows.at(0), (std::vector<Value>{Value(std::string("ab")), Value(int64_t{3}), Value(std::string("real")),
                                                Value(int64_t{3}), Value()}));
}

TEST_F(SqlSurfaceTest, RefusedCallsNeverRun) {
  for (const char* sql :
       {"SELECT fts3_tokenizer('simple')", "SELECT fts3_tokenizer('x', X'00')", "SELECT load_extension('x')",
        "SELECT 1 WHERE fts3_tokenizer('simple') IS NULL", "SELECT (SELECT load_extension('x', 'y'))",
        "WITH t(a) AS (SELECT fts3_tokenizer('simple')) SELECT a FROM t"}) {
    auto r = session_->Execute(sql);
    ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied) << sql << ": " << r.status().ToString();
    EXPECT_THAT(r.status().message(), ::testing::MatchesRegex("function (fts3_tokenizer|load_extension) is not "
                                                              "allowed in Vigil SQL"));
  }
  auto next = session_->Execute("SELECT 41 + 1");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->rows.at(0).at(0), Value(int64_t{42}));
}

}  // namespace
}  // namespace vigil::sql

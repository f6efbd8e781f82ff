// Test helper: a fresh, empty database per test on either backend, for the
// suites that run once on SQLite and once on PostgreSQL. PostgreSQL databases
// are created on the throwaway server started by scripts/pg-test-server.sh
// (ctest fixture vigil_pg), found through VIGIL_PG_CONNINFO_FILE; a missing
// server is a test failure, never a skip. Not thread-safe.
#pragma once

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/meta/database.h"

namespace vigil::testing {

class TestDatabaseEnv {
 public:
  virtual ~TestDatabaseEnv() = default;
  // URI of this test's database, for meta::Database::Open.
  virtual const std::string& uri() const = 0;
};

// A factory of fresh databases, named for test output ("Sqlite", "Postgres").
struct DatabaseBackend {
  std::string name;
  std::function<Result<std::unique_ptr<TestDatabaseEnv>>()> make;
};

// Test names and messages show the backend's name, not its bytes.
inline void PrintTo(const DatabaseBackend& backend, std::ostream* os) { *os << backend.name; }

inline std::string BackendName(const ::testing::TestParamInfo<DatabaseBackend>& info) { return info.param.name; }

class SqliteTestEnv final : public TestDatabaseEnv {
 public:
  SqliteTestEnv() : uri_("sqlite://" + dir_.Join("meta.db")) {}
  const std::string& uri() const override { return uri_; }

 private:
  TempDir dir_;
  std::string uri_;
};

// The conninfo of the test server, read from the file VIGIL_PG_CONNINFO_FILE names.
inline Result<std::string> PgTestConninfo() {
  const char* file = std::getenv("VIGIL_PG_CONNINFO_FILE");
  if (file == nullptr || *file == '\0') {
    return Status::FailedPrecondition(
        "VIGIL_PG_CONNINFO_FILE is not set: run through ctest (fixture vigil_pg) or start "
        "scripts/pg-test-server.sh and point it at DIR/conninfo");
  }
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) {
    return Status::FailedPrecondition(std::string("no conninfo in ") + file);
  }
  return line;
}

class PostgresTestEnv final : public TestDatabaseEnv {
 public:
  // Creates an empty database named vigil_t_<random> on the test server.
  static Result<std::unique_ptr<TestDatabaseEnv>> Create() {
    VIGIL_ASSIGN_OR_RETURN(std::string admin, PgTestConninfo());
    std::string name = "vigil_t_" + Uuid::Generate().ToString();
    name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
    VIGIL_ASSIGN_OR_RETURN(auto db, meta::Database::Open(admin));
    {
      VIGIL_ASSIGN_OR_RETURN(auto conn, db->Acquire());
      VIGIL_RETURN_IF_ERROR(conn->ExecuteScript("CREATE DATABASE " + name));
    }
    return std::unique_ptr<TestDatabaseEnv>(new PostgresTestEnv(std::move(db), name, admin + " dbname=" + name));
  }
  ~PostgresTestEnv() override {
    auto conn = admin_->Acquire();
    if (conn.ok()) (void)(*conn)->ExecuteScript("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  const std::string& uri() const override { return uri_; }

 private:
  PostgresTestEnv(std::unique_ptr<meta::Database> admin, std::string name, std::string uri)
      : admin_(std::move(admin)), name_(std::move(name)), uri_(std::move(uri)) {}
  std::unique_ptr<meta::Database> admin_;
  std::string name_;
  std::string uri_;
};

inline DatabaseBackend SqliteBackend() {
  return {"Sqlite", []() -> Result<std::unique_ptr<TestDatabaseEnv>> {
            return std::unique_ptr<TestDatabaseEnv>(new SqliteTestEnv());
          }};
}

inline DatabaseBackend PostgresBackend() { return {"Postgres", &PostgresTestEnv::Create}; }

}  // namespace vigil::testing

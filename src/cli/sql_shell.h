// The statement runner shared by `vigil sql` and `vigil demo`: executes
// statements on a Session, prints results to stdout (aligned table, CSV or
// JSON) and notices, warnings and job progress to stderr, and waits for the
// index jobs a statement admitted when asked to. Single-threaded.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::cli {

enum class OutputFormat { kTable, kCsv, kJson };

struct ShellOptions {
  OutputFormat format = OutputFormat::kTable;
  bool wait_jobs = false;              // wait for admitted jobs after each statement
  int64_t wait_timeout_s = 86'400;
  bool echo = false;                   // print each statement before its result (the demo)
};

class SqlShell {
 public:
  explicit SqlShell(ShellOptions options) : options_(options) {}

  // Opens the root's job store and a session that starts `vigil supervise` on demand.
  Status Open(const Root& root);
  // Runs every statement of `text`, reporting each failure on stderr; false when any
  // statement failed or a waited job ended FAILED or OUTCOME_UNKNOWN.
  bool RunScript(std::string_view text);

  bool timer = false;

 private:
  bool RunOne(const sql::Statement& stmt, std::string_view text);
  void Print(sql::ResultSet r);
  void PrintTable(const sql::ResultSet& r);
  bool WaitJob(int64_t id);

  ShellOptions options_;
  std::unique_ptr<jobs::JobStore> store_;
  std::unique_ptr<sql::Session> session_;
};

}  // namespace vigil::cli

// The statement runner shared by `vigil sql` and `vigil demo`: executes
// statements on a backend (a local Session on a root, or a `vigil serve`
// server: sql_remote.h), prints results to stdout (aligned table, CSV or
// JSON) and notices, warnings and job progress to stderr, and waits for the
// index jobs a statement admitted when asked to. Single-threaded.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "vigil/common/status.h"
#include "vigil/sql/ast.h"
#include "vigil/sql/result.h"
#include "vigil/storage/root.h"

namespace vigil::cli {

enum class OutputFormat { kTable, kCsv, kJson };

struct ShellOptions {
  OutputFormat format = OutputFormat::kTable;
  bool wait_jobs = false;  // wait for admitted jobs after each statement
  int64_t wait_timeout_s = 86'400;
  bool echo = false;  // print each statement before its result (the demo)
};

// A job as the wait loop shows it.
struct JobView {
  std::string state;     // jobs::DerivedState, e.g. "RUNNING"
  bool final = false;    // jobs::IsFinal
  std::string progress;  // "<phase> <done>/<total>", or "" when none is reported
  std::string error;     // the job's error message, or ""
};

// Where the shell's statements run and its jobs are looked up.
class ShellBackend {
 public:
  virtual ~ShellBackend() = default;
  // Runs one statement of a script; `text` is its source (from its first token to the end of
  // its last), `stmt.pos` its position in the script.
  virtual Result<sql::ResultSet> Execute(const sql::Statement& stmt, std::string_view text) = 0;
  virtual Result<JobView> Job(int64_t id) = 0;
  // Set once nothing more can run (the server refused the token, the connection is lost):
  // the script stops there.
  virtual bool broken() const { return false; }
};

class SqlShell {
 public:
  explicit SqlShell(ShellOptions options);
  ~SqlShell();

  // Opens the root's job store and a session that starts `vigil supervise` on demand.
  Status Open(const Root& root);
  // Runs statements on `backend` instead (a server).
  void Open(std::unique_ptr<ShellBackend> backend);
  // Runs every statement of `text`, reporting each failure on stderr; false when any
  // statement failed or a waited job ended FAILED or OUTCOME_UNKNOWN.
  bool RunScript(std::string_view text);
  // Whether the backend can run nothing more (ShellBackend::broken).
  bool broken() const;

  bool timer = false;

 private:
  bool RunOne(const sql::Statement& stmt, std::string_view text);
  void Print(sql::ResultSet r);
  void PrintTable(const sql::ResultSet& r);
  bool WaitJob(int64_t id);

  ShellOptions options_;
  std::unique_ptr<ShellBackend> backend_;
};

}  // namespace vigil::cli

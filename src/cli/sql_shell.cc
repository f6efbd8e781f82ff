#include "cli/sql_shell.h"

#include <cstdint>
#include <cstdio>

#include "cli/supervise_client.h"
#include "cli/table_printer.h"
#include "vigil/common/env.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/leader.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/parser.h"
#include "vigil/sql/result_format.h"
#include "vigil/sql/session.h"

namespace vigil::cli {

namespace {

int64_t NowMs() { return Env::Default()->NowMs(); }

// A backend that printed its own error returns Cancelled without a message.
void Report(const Status& st) {
  if (st.code() == StatusCode::kCancelled && st.message().empty()) return;
  std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
}

// By length: a value may hold NUL bytes.
void Write(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

// Statements on a local Session of the root, as its local administrator.
class LocalBackend : public ShellBackend {
 public:
  Status Open(const Root& root) {
    VIGIL_ASSIGN_OR_RETURN(store_, jobs::OpenRootJobStore(root));
    root_ = &root;
    sql::SessionOptions options;
    options.file_access = sql::FileAccess::kClient;  // the user's own files, as psql's \copy
    const Root* r = &root;
    options.ensure_leader = [this, r] { return EnsureLeader(*r, *store_); };
    VIGIL_ASSIGN_OR_RETURN(session_, sql::Session::Open(root.path(), options));
    // Work left by a leader that died (or never ran) is taken up now: a leader's recovery pass
    // settles interrupted attempts within seconds of any command on the root.
    Result<bool> waiting = jobs::WorkWaitsForLeader(*store_, NowMs());
    Status leader = waiting.ok() ? (*waiting ? EnsureLeader(root, *store_) : Status::OK()) : waiting.status();
    if (!leader.ok()) std::fprintf(stderr, "warning: index jobs wait for a leader: %s\n", leader.ToString().c_str());
    return Status::OK();
  }

  Result<sql::ResultSet> Execute(const sql::Statement& stmt, std::string_view) override {
    return session_->Execute(stmt);
  }

  Result<JobView> Job(int64_t id) override {
    VIGIL_ASSIGN_OR_RETURN(jobs::JobRecord job, store_->Get(id));
    JobView v;
    v.state = std::string(jobs::DerivedState(job.state));
    v.final = jobs::IsFinal(job.state);
    if (job.progress_phase) {
      v.progress =
          *job.progress_phase + " " + std::to_string(job.progress_done) + "/" + std::to_string(job.progress_total);
    }
    if (job.error_message) v.error = *job.error_message;
    if (!v.final && NowMs() - leader_checked_ms_ >= 1000) {
      // A leader that was exiting idle when the job was admitted leaves it to the next one.
      leader_checked_ms_ = NowMs();
      Status leader = EnsureLeader(*root_, *store_);
      if (!leader.ok())
        std::fprintf(stderr, "warning: job %lld waits for a leader: %s\n", static_cast<long long>(id),
                     leader.ToString().c_str());
    }
    return v;
  }

 private:
  const Root* root_ = nullptr;
  int64_t leader_checked_ms_ = 0;
  std::unique_ptr<jobs::JobStore> store_;
  std::unique_ptr<sql::Session> session_;
};

}  // namespace

SqlShell::SqlShell(ShellOptions options) : options_(options) {}
SqlShell::~SqlShell() = default;

Status SqlShell::Open(const Root& root) {
  auto local = std::make_unique<LocalBackend>();
  VIGIL_RETURN_IF_ERROR(local->Open(root));
  backend_ = std::move(local);
  return Status::OK();
}

void SqlShell::Open(std::unique_ptr<ShellBackend> backend) { backend_ = std::move(backend); }

bool SqlShell::broken() const { return backend_ && backend_->broken(); }

bool SqlShell::RunScript(std::string_view text) {
  sql::ScriptParser parser(text);
  bool ok = true;
  for (;;) {
    Result<std::optional<sql::Statement>> next = parser.Next();
    if (!next.ok()) {
      Report(next.status());
      return false;
    }
    if (!next->has_value()) return ok;
    const sql::Statement& stmt = **next;
    ok &= RunOne(stmt, text.substr(stmt.pos.offset, stmt.length));
    if (backend_->broken()) return false;
  }
}

bool SqlShell::RunOne(const sql::Statement& stmt, std::string_view text) {
  if (options_.echo) std::printf("\nvigil> %.*s;\n", static_cast<int>(text.size()), text.data());
  const int64_t start = Env::Default()->MonotonicMicros();
  Result<sql::ResultSet> r = backend_->Execute(stmt, text);
  if (!r.ok()) {
    Report(r.status());
    return false;
  }
  Print(*r);
  bool ok = true;
  if (options_.wait_jobs) {
    for (int64_t id : r->admitted_jobs) ok &= WaitJob(id);
  }
  if (timer) {
    double ms = static_cast<double>(Env::Default()->MonotonicMicros() - start) / 1000.0;
    std::fprintf(stderr, "Run Time: %.3f ms\n", ms);
  }
  return ok;
}

void SqlShell::Print(sql::ResultSet r) {
  for (const auto& n : r.notices) std::fprintf(stderr, "%s\n", n.c_str());
  for (const auto& w : r.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (r.columns.empty() && !r.admitted_jobs.empty()) {  // scripts read the job ids as a result
    r.columns = {"JobId"};
    for (int64_t id : r.admitted_jobs) r.rows.push_back({id});
  }
  switch (options_.format) {
    case OutputFormat::kCsv:
      Write(sql::FormatCsv(r));
      break;
    case OutputFormat::kJson:
      Write(sql::FormatJson(r));
      break;
    case OutputFormat::kTable:
      PrintTable(r);
      break;
  }
  if (options_.format != OutputFormat::kTable && !r.message.empty()) std::fprintf(stderr, "%s\n", r.message.c_str());
  std::fflush(stdout);
}

void SqlShell::PrintTable(const sql::ResultSet& r) {
  if (!r.columns.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : r.rows) {
      std::vector<std::string> cells;
      for (const auto& v : row) cells.push_back(sql::CellText(v));
      rows.push_back(std::move(cells));
    }
    Write(FormatTable(r.columns, rows, r.holds_secret ? SIZE_MAX : 60));
    std::printf("(%zu row%s)\n", r.rows.size(), r.rows.size() == 1 ? "" : "s");
  }
  if (!r.message.empty()) std::printf("%s\n", r.message.c_str());
}

// Polls the job until its derived state is final, printing each change of state or progress.
bool SqlShell::WaitJob(int64_t id) {
  const int64_t deadline = NowMs() + options_.wait_timeout_s * 1000;
  std::string last;
  for (;;) {
    Result<JobView> job = backend_->Job(id);
    if (!job.ok()) {
      Report(job.status());
      return false;
    }
    const std::string& state = job->state;
    std::string line = "job " + std::to_string(id) + ": " + state;
    if (!job->progress.empty() && state == "RUNNING") line += " " + job->progress;
    if (line != last) std::fprintf(stderr, "%s\n", line.c_str());
    last = line;
    if (job->final) {
      if (state == "FAILED" || state == "OUTCOME_UNKNOWN" || state == "FAILED_REFRESH_SKIPPED") {
        std::fprintf(stderr, "error: job %lld ended %s%s\n", static_cast<long long>(id), state.c_str(),
                     job->error.empty() ? "" : (": " + job->error).c_str());
        return false;
      }
      return true;
    }
    if (NowMs() >= deadline) {
      std::fprintf(stderr, "error: job %lld is still %s after the wait timeout\n", static_cast<long long>(id),
                   state.c_str());
      return false;
    }
    Env::Default()->SleepForMs(100);
  }
}

}  // namespace vigil::cli

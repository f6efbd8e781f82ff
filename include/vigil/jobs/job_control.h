// The user-facing job commands over the job store (seed 000 sections 2.2, 8.2
// and 9): SHOW INDEX JOBS / SHOW INDEX JOB with no-leak authorization, CANCEL
// (only while PENDING), RESOLVE ACKNOWLEDGED / FORCE_RELEASE [WITHOUT REFRESH]
// with notes, warnings and immutable events, WAIT, REFRESH TABLE, and the
// target guard of DROP TABLE and other target-changing DDL. Every mutating
// command first loads the persisted job without returning any field, then
// authorizes against its persisted target; a job the principal may not see is
// reported exactly like a missing one.
// Thread safety: stateless over a thread-safe JobStore.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/auth/principal.h"
#include "vigil/common/env.h"
#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"

namespace vigil::jobs {

// Typed error prefixes (the message starts with the code, then ": ").
constexpr std::string_view kNotCancellableAfterDispatch = "NOT_CANCELLABLE_AFTER_DISPATCH";
constexpr std::string_view kResolutionIncomplete = "RESOLUTION_INCOMPLETE";
constexpr std::string_view kNotResolvable = "NOT_RESOLVABLE";
constexpr std::string_view kTableGuarded = "TABLE_GUARDED";

enum class ResolveAction { kAcknowledge, kForceRelease, kForceReleaseWithoutRefresh };
std::string_view Name(ResolveAction a);  // ACKNOWLEDGED | FORCE_RELEASE | FORCE_RELEASE WITHOUT REFRESH

struct JobDetail {
  JobRecord job;
  std::vector<JobEvent> events;
  std::vector<std::string> warnings;  // FORCE warnings, shown with the detail and by RESOLVE
};

struct WaitOptions {
  int64_t timeout_ms = 0;  // 0: check once
  int64_t poll_ms = 50;
};

class JobControl {
 public:
  // `env` is the clock of the commands and of Wait's polling.
  explicit JobControl(JobStore* store, Env* env = Env::Default()) : store_(store), env_(env) {}
  // Timestamps from `clock` (Unix milliseconds), polling on Env::Default(). For sql::Session,
  // whose options still carry a clock function.
  JobControl(JobStore* store, std::function<int64_t()> clock)
      : store_(store), env_(Env::Default()), clock_(std::move(clock)) {}

  // One page of the jobs the principal may see (filter.order, at most filter.limit). The
  // store filters: a non-administrator sees the jobs of the tables and databases it may
  // SHOW whose target still resolves; orphans are listed for ADMIN only.
  Result<std::vector<JobRecord>> List(const JobFilter& filter, const auth::Principal& who);
  // The same listing to its end, a page at a time (JobCursor).
  Result<JobCursor> Scan(const JobFilter& filter, const auth::Principal& who);
  // How many jobs of the listing there are.
  Result<int64_t> Count(const JobFilter& filter, const auth::Principal& who);
  // FORCE_RELEASE audit records after `after_id`, oldest first, at most `limit`. ADMIN only:
  // they concern every table, so anyone else gets an empty list (no error, which would
  // reveal that records exist), like a job listing of tables it may not see.
  Result<std::vector<AuditRecord>> ListAudit(int64_t after_id, int limit, const auth::Principal& who);
  // NotFound (the same text as for a missing job) when invisible to the principal.
  Result<JobDetail> Show(int64_t job_id, const auth::Principal& who);

  // T2: PENDING -> CANCELLED_BEFORE_DISPATCH, completing a durable CANCELLING.
  // FailedPrecondition NOT_CANCELLABLE_AFTER_DISPATCH once dispatch has won.
  Result<JobRecord> Cancel(int64_t job_id, const auth::Principal& who);

  // Appends the resolution request (T12/T13) or performs T14, then waits up to
  // `wait` for the leader's refresh and final CAS. FailedPrecondition RESOLUTION_INCOMPLETE (with the job and
  // resolution ids) when the refresh is retry-pending or the wait ends first. A resolution
  // that is already complete returns the job with its existing events.
  Result<JobDetail> Resolve(int64_t job_id, ResolveAction action, std::string_view note, const auth::Principal& who,
                            const WaitOptions& wait = {});

  // Polls until the job's derived state is final (after its refresh). DeadlineExceeded
  // naming the current state when the timeout passes first.
  Result<JobRecord> Wait(int64_t job_id, const auth::Principal& who, const WaitOptions& wait);

  // REFRESH TABLE: bumps the table's refresh generation (seed 000 section 8.1)
  // so that every serving process reopens it. Needs table ALTER. Returns the new generation.
  Result<int64_t> RefreshTable(const std::string& catalog, const std::string& db, const std::string& table,
                               const auth::Principal& who);

  // Runs `ddl` inside one write transaction after proving that no active or unknown
  // job guards the table (FailedPrecondition TABLE_GUARDED naming the job ids otherwise).
  // Needs table ALTER. Used by DROP TABLE and by every schema change.
  Status GuardedTableChange(const std::string& catalog, const std::string& db, const std::string& table,
                            const auth::Principal& who, const std::function<Status(meta::Transaction&)>& ddl);
  // DROP TABLE's registry part: guarded, then unregistered (a re-created table gets a
  // new incarnation). Files are reclaimed by VACUUM once nothing needs them.
  Status DropTable(const std::string& catalog, const std::string& db, const std::string& table,
                   const auth::Principal& who);
  // DROP DATABASE: runs `remove` (the database directory's removal) when no table of the
  // database is registered (an external table has no directory, so an empty directory does not
  // prove it); TABLE_GUARDED naming the table when one holds an active or unknown job's guard,
  // FailedPrecondition naming the tables otherwise (DROP TABLE each first, which honours their
  // guards). The check and `remove` run in one write transaction holding the catalog's lock,
  // which every table registration takes too: none can slip in between.
  Status DropDatabase(const std::string& catalog, const std::string& db, const std::function<Status()>& remove);

 private:
  // Loads the job and authorizes `p` on its persisted target; NotFound when it is
  // missing or invisible, PermissionDenied when visible but `p` is not granted.
  Result<JobRecord> LoadAuthorized(int64_t job_id, const auth::Principal& who, auth::Privilege p, bool orphan_admin_ok);
  Result<bool> TargetResolves(const JobRecord& job);
  Result<JobDetail> Detail(const JobRecord& job);

  int64_t NowMs() const { return clock_ ? clock_() : env_->NowMs(); }

  JobStore* store_;
  Env* env_;
  std::function<int64_t()> clock_;  // empty: env_
};

}  // namespace vigil::jobs

// Helpers shared by the job store's source files (job_store.cc,
// job_transitions.cc, cluster_store.cc). Each runs on a connection the caller
// holds, usually inside a write transaction. Not thread-safe per connection.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "vigil/jobs/job_record.h"
#include "vigil/jobs/job_store.h"
#include "vigil/meta/database.h"

namespace vigil::jobs::internal {

// `sql` plus the dialect's row-lock suffix (" FOR UPDATE" on PostgreSQL, "" on SQLite).
std::string Locked(meta::Connection& conn, std::string_view sql);
// The job, locked for update; nullopt when there is none.
Result<std::optional<JobRecord>> LoadJob(meta::Connection& conn, int64_t job_id, bool lock);
// "EXECUTION/OUTCOME/REFRESH/RECONCILE/DISPOSITION".
std::string StateText(const JobState& s);
// The time a lease decision on `conn` reads: PostgreSQL's clock_timestamp() when `clock` is
// kStore on PostgreSQL, else `caller_now_ms`.
Result<int64_t> LeaseNow(meta::Connection& conn, int64_t caller_now_ms, LeaseClock clock);
// Locks the lease row, then CommitConflict unless `epoch` is the live leader epoch at the
// lease clock's now (LeaseNow, read after the lock).
Status CheckLeaderOn(meta::Connection& conn, int64_t epoch, int64_t caller_now_ms, LeaseClock clock);
// InvalidArgument unless `value` is 1..max_bytes of printable UTF-8 (what: its name).
Status CheckText(std::string_view what, std::string_view value, size_t max_bytes);

}  // namespace vigil::jobs::internal

// Helpers shared by the job store's source files (job_store.cc,
// job_transitions.cc, job_cluster.cc). Each runs on a connection the caller
// holds, usually inside a write transaction. Not thread-safe per connection.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "vigil/jobs/job_record.h"
#include "vigil/meta/database.h"

namespace vigil::jobs::internal {

// `sql` plus the dialect's row-lock suffix (" FOR UPDATE" on PostgreSQL, "" on SQLite).
std::string Locked(meta::Connection& conn, std::string_view sql);
// The job, locked for update; nullopt when there is none.
Result<std::optional<JobRecord>> LoadJob(meta::Connection& conn, int64_t job_id, bool lock);
// "EXECUTION/OUTCOME/REFRESH/RECONCILE/DISPOSITION".
std::string StateText(const JobState& s);
// CommitConflict unless `epoch` is the live leader epoch at now_ms; locks the lease row.
Status CheckLeaderOn(meta::Connection& conn, int64_t epoch, int64_t now_ms);
// InvalidArgument unless `value` is 1..max_bytes of printable UTF-8 (what: its name).
Status CheckText(std::string_view what, std::string_view value, size_t max_bytes);

}  // namespace vigil::jobs::internal

// The job list of seed 000 section 2.2 as SHOW INDEX JOBS, SHOW INDEX JOB, WAIT
// INDEX JOB and vigil_index_jobs show it: one column list and one row builder,
// so the surfaces agree cell for cell. Times are UTC "YYYY-MM-DD HH:MM:SS";
// StartTime is the DISPATCHED event's and FinishTime the RESULT event's time
// (the store writes both with the time of their compare-and-set). Message is
// "CODE: message"; LastResolvedBy is the principal who requested the last
// completed resolution. Pure functions apart from JobListRow's event read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/column.h"

namespace vigil::sql {

// The 19 list columns, and the positions filters are pushed down from.
const std::vector<std::string>& JobListColumns();
constexpr size_t kJobIdColumn = 0;
constexpr size_t kCatalogNameColumn = 1;
constexpr size_t kDatabaseNameColumn = 2;
constexpr size_t kTableNameColumn = 3;
constexpr size_t kIndexNameColumn = 4;
constexpr size_t kCreateTimeColumn = 6;
constexpr size_t kStartTimeColumn = 7;
constexpr size_t kFinishTimeColumn = 8;
constexpr size_t kStateColumn = 9;
constexpr size_t kLastResolvedAtColumn = 18;

// The last completed resolution of a job.
struct LastResolution {
  std::string action;  // ACKNOWLEDGED | FORCE_RELEASE | FORCE_RELEASE WITHOUT REFRESH
  std::string actor;   // who requested it (the leader completes ACK and FORCE after the refresh)
  int64_t at_ms = 0;   // when it completed
};
std::optional<LastResolution> FindLastResolution(const std::vector<jobs::JobEvent>& events);

// "YYYY-MM-DD HH:MM:SS" (UTC) of Unix milliseconds.
std::string FormatJobTime(int64_t ms);
// The same with milliseconds ("2026-12-05 19:49:02.123"): a job event's time.
std::string FormatJobTimeMs(int64_t ms);

// One list row of `job`, whose last resolution is `last`: integer, text or NULL cells.
std::vector<vigil::Value> JobListRow(const jobs::JobRecord& job, const std::optional<LastResolution>& last);
// The same, reading the job's events when it has been resolved.
Result<std::vector<vigil::Value>> JobListRow(jobs::JobStore& store, const jobs::JobRecord& job);

enum class CompareOp { kEq, kLt, kLe, kGt, kGe };

// Store bounds on created_at (ms) holding every job whose CreateTime text compares `op`
// with `text` (byte-wise, as SQL text compares): from the date `text` starts with, a day
// wider than needed; the caller still compares exactly. No bounds when `text` does not
// start with a YYYY-MM-DD date.
void AddCreateTimeBounds(CompareOp op, std::string_view text, jobs::JobFilter* filter);

}  // namespace vigil::sql

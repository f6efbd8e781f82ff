#include "sql/select/job_listing.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

namespace vigil::sql {

namespace {

using Value = vigil::Value;

Value Text(std::string_view s) { return Value(std::string(s)); }
Value OptTime(const std::optional<int64_t>& ms) { return ms ? Value(FormatJobTime(*ms)) : Value(); }

// "CODE: message", the message alone, or the code alone.
Value Message(const jobs::JobRecord& job) {
  if (!job.error_message && !job.error_code) return Value();
  if (!job.error_code) return Value(*job.error_message);
  if (!job.error_message) return Value(*job.error_code);
  const std::string prefix = *job.error_code + ": ";
  if (job.error_message->rfind(prefix, 0) == 0) return Value(*job.error_message);
  return Value(prefix + *job.error_message);
}

// Unix milliseconds of midnight UTC of a "YYYY-MM-DD" prefix of `text`; nullopt otherwise.
std::optional<int64_t> DateMs(std::string_view text) {
  if (text.size() < 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  }
  auto num = [&](size_t at, size_t n) { return std::stoi(std::string(text.substr(at, n))); };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  const int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (FormatJobTime(ms).compare(0, 10, text.substr(0, 10)) != 0) return std::nullopt;  // e.g. 2024-02-30
  return ms;
}

constexpr int64_t kDayMs = 86'400'000;

}  // namespace

const std::vector<std::string>& JobListColumns() {
  static const std::vector<std::string> kColumns = {
      "JobId",     "CatalogName",          "DatabaseName",   "TableName",      "IndexName",
      "Operation", "CreateTime",           "StartTime",      "FinishTime",     "State",
      "Outcome",   "RefreshState",         "ReconcileState", "Disposition",    "Executor",
      "Message",   "LastResolutionAction", "LastResolvedBy", "LastResolvedAt", "Progress"};
  return kColumns;
}

std::string FormatJobTime(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatJobTimeMs(int64_t ms) {
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(((ms % 1000) + 1000) % 1000));
  return FormatJobTime(ms) + frac;
}

std::optional<LastResolution> FindLastResolution(const std::vector<jobs::JobEvent>& events) {
  std::map<std::string, std::string> requested_by;
  std::optional<LastResolution> last;
  for (const jobs::JobEvent& e : events) {
    if (e.resolution_id && (e.kind == jobs::event::kAckRequested || e.kind == jobs::event::kForceRequested ||
                            e.kind == jobs::event::kEmergencyForceRequested)) {
      requested_by.emplace(*e.resolution_id, e.actor);
    }
    std::string action;
    if (e.kind == jobs::event::kAckCompleted) action = "ACKNOWLEDGED";
    if (e.kind == jobs::event::kForceCompleted) action = "FORCE_RELEASE";
    if (e.kind == jobs::event::kEmergencyForceCompleted) action = "FORCE_RELEASE WITHOUT REFRESH";
    if (action.empty()) continue;
    auto by = e.resolution_id ? requested_by.find(*e.resolution_id) : requested_by.end();
    last = LastResolution{action, by != requested_by.end() ? by->second : e.actor, e.at_ms};
  }
  return last;
}

std::vector<Value> JobListRow(const jobs::JobRecord& job, const std::optional<LastResolution>& last) {
  const jobs::JobSpec& s = job.spec;
  return {Value(job.job_id),
          Text(s.catalog_name),
          Text(s.database_name),
          Text(s.table_name),
          Text(s.index_name),
          Text(jobs::Name(s.operation)),
          Text(FormatJobTime(job.created_at_ms)),
          OptTime(job.started_at_ms),
          OptTime(job.finished_at_ms),
          Text(jobs::DerivedState(job.state)),
          Text(jobs::Name(job.state.outcome)),
          Text(jobs::Name(job.state.refresh)),
          Text(jobs::Name(job.state.reconcile)),
          Text(jobs::Name(job.state.disposition)),
          job.attempt ? Text(job.attempt->executor_node_id) : Value(),
          Message(job),
          last ? Text(last->action) : Value(),
          last ? Text(last->actor) : Value(),
          last ? Text(FormatJobTime(last->at_ms)) : Value(),
          job.progress_phase ? Text(*job.progress_phase + " " + std::to_string(job.progress_done) + "/" +
                                    std::to_string(job.progress_total))
                             : Value()};
}

Result<std::vector<Value>> JobListRow(jobs::JobStore& store, const jobs::JobRecord& job) {
  std::optional<LastResolution> last;
  if (job.state.disposition != jobs::Disposition::kNone) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<jobs::JobEvent> events, store.Events(job.job_id));
    last = FindLastResolution(events);
  }
  return JobListRow(job, last);
}

void AddCreateTimeBounds(CompareOp op, std::string_view text, jobs::JobFilter* filter) {
  std::optional<int64_t> day = DateMs(text);
  if (!day) return;
  // A time whose date is before `text`'s compares less, one after it greater.
  if (op == CompareOp::kEq || op == CompareOp::kGt || op == CompareOp::kGe) {
    filter->created_from_ms = std::max(filter->created_from_ms.value_or(*day), *day);
  }
  if (op == CompareOp::kEq || op == CompareOp::kLt || op == CompareOp::kLe) {
    filter->created_before_ms = std::min(filter->created_before_ms.value_or(*day + kDayMs), *day + kDayMs);
  }
}

}  // namespace vigil::sql

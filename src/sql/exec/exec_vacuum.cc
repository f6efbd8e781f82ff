// VACUUM t [RETAIN n VERSIONS | OLDER THAN 'interval']: the job layer says what
// must stay (bases of active jobs; every version an UNKNOWN attempt may have
// written; orphans while an executor of the table may still write, i.e. its job
// allows a commit and its attempt lock is not provably free), the
// metadata store's version pins say what other processes read, and storage
// Vacuum removes the rest without ever guessing a path or following a link.
#include <cctype>
#include <set>

#include "sql/exec/exec_internal.h"
#include "vigil/common/ascii.h"
#include "vigil/common/file_lock.h"
#include "vigil/generations/generation_manager.h"
#include "vigil/generations/version_pins.h"
#include "vigil/jobs/executor.h"
#include "vigil/storage/vacuum.h"

namespace vigil::sql {

namespace {

// "7 days", "12 hours", "30 minutes", "90 seconds", "1 week", or "30s" / "10m" / "2h" / "7d".
Result<int64_t> ParseIntervalMicros(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t digits = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == digits || i - digits > 12) {
    return Status::InvalidArgument("OLDER THAN '" + text + "': expected a count and a unit, e.g. '7 days'");
  }
  const int64_t count = std::stoll(text.substr(digits, i - digits));
  std::string unit;
  for (; i < text.size(); ++i) {
    if (!std::isspace(static_cast<unsigned char>(text[i]))) unit += AsciiLower(text[i]);
  }
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"s", 1},        {"second", 1},   {"seconds", 1}, {"m", 60},        {"minute", 60},
      {"minutes", 60}, {"h", 3600},     {"hour", 3600}, {"hours", 3600},  {"d", 86400},
      {"day", 86400},  {"days", 86400}, {"w", 604800},  {"week", 604800}, {"weeks", 604800}};
  for (const auto& u : kUnits) {
    if (unit == u.first) return count * u.second * 1'000'000;
  }
  return Status::InvalidArgument("OLDER THAN '" + text + "': unknown unit '" + unit +
                                 "' (seconds, minutes, hours, days or weeks)");
}

// The table's jobs in `state` (archived ones too); ResourceExhausted rather than a partial list.
Result<std::vector<jobs::JobRecord>> JobsIn(ExecContext& ctx, const catalog::TableEntry& t, std::string_view state) {
  jobs::JobFilter f;
  f.catalog_name = t.catalog_name;
  f.database_name = t.database_name;
  f.table_name = t.table_name;
  f.state = std::string(state);
  f.include_archived = true;
  f.limit = jobs::kMaxListLimit;
  std::vector<jobs::JobRecord> found;
  VIGIL_RETURN_IF_ERROR(ctx.store->ForEach(f, [&found](const jobs::JobRecord& j) {
    found.push_back(j);
    return Status::OK();
  }));
  return found;
}

// Whether an executor of `job` may still be writing: its state allows a commit and its
// attempt lock is not provably free (a free lock means every process of the attempt is gone).
bool ExecutorMayWrite(const jobs::JobRecord& job) {
  if (!jobs::ExecutorMayCommit(job.state)) return false;
  if (!job.attempt) return true;
  Result<bool> held = FileLock::IsHeld(jobs::AttemptLockPath(job.spec, job.attempt->attempt_id));
  return !held.ok() || *held;
}

struct JobGuards {
  bool executor_may_write = false;
  std::set<std::string> watched_attempts;  // UNKNOWN attempts whose lock the reconciler still needs
};

// Fills what the table's jobs require to stay.
Result<JobGuards> ProtectJobs(ExecContext& ctx, const catalog::TableEntry& t, VacuumOptions* o) {
  JobGuards g;
  for (std::string_view state : jobs::FenceHoldingStateNames()) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<jobs::JobRecord> found, JobsIn(ctx, t, state));
    for (const jobs::JobRecord& j : found) {
      // The job's base and every later version: an executor commits on top of them, and the
      // reconciler of an UNKNOWN job reads all of them to prove its commit absent.
      o->keep_from.push_back(VersionGuard{static_cast<uint64_t>(j.spec.start_version),
                                          "job " + std::to_string(j.job_id) + " (" + std::string(state) +
                                              ") needs its base version " + std::to_string(j.spec.start_version) +
                                              " and every later one"});
      g.executor_may_write = g.executor_may_write || ExecutorMayWrite(j);
      if (j.state.outcome != jobs::Outcome::kUnknown) continue;
      o->unknown_jobs.insert(j.job_id);
      if (!j.attempt) continue;
      o->unknown_attempts.insert(j.attempt->attempt_id);
      const jobs::ReconcileState r = j.state.reconcile;
      if (r != jobs::ReconcileState::kStoppedByForce) g.watched_attempts.insert(j.attempt->attempt_id);
    }
  }
  return g;
}

// "kept versions 2-5: <reason>" per reason, in version order.
std::vector<std::string> KeptVersionNotices(const std::vector<KeptVersion>& kept) {
  std::vector<std::string> out;
  for (size_t i = 0; i < kept.size();) {
    size_t j = i;
    while (j + 1 < kept.size() && kept[j + 1].reason == kept[i].reason) ++j;
    const std::string range =
        i == j ? "version " + std::to_string(kept[i].version)
               : "versions " + std::to_string(kept[i].version) + "-" + std::to_string(kept[j].version);
    out.push_back("kept " + range + ": " + kept[i].reason);
    i = j + 1;
  }
  return out;
}

// Table incarnations some of whose jobs may still have an executor writing (any table).
Result<std::set<std::string>> WritingIncarnations(ExecContext& ctx) {
  std::set<std::string> out;
  for (const char* state : {"RUNNING", "OUTCOME_UNKNOWN"}) {
    jobs::JobFilter f;
    f.state = state;
    f.include_archived = true;
    f.limit = jobs::kMaxListLimit;
    VIGIL_RETURN_IF_ERROR(ctx.store->ForEach(f, [&out](const jobs::JobRecord& j) {
      if (ExecutorMayWrite(j)) out.insert(j.spec.table_incarnation);
      return Status::OK();
    }));
  }
  return out;
}

// Reclaims `<root>/_dropped/<table incarnation>[-<suffix>]` folders (DROP TABLE moved them
// there) whose table has no job that may still write. Returns how many were reclaimed.
Result<int64_t> ReclaimDroppedTables(ExecContext& ctx, VacuumReport* report) {
  const std::string dropped = ctx.root.Path(kDroppedDir);
  VIGIL_ASSIGN_OR_RETURN(bool exists, ctx.root.fs()->Exists(dropped));
  if (!exists) return int64_t{0};
  VIGIL_ASSIGN_OR_RETURN(std::set<std::string> writing, WritingIncarnations(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> entries, ctx.root.fs()->ListDir(dropped));
  int64_t reclaimed = 0;
  for (const std::string& name : entries) {
    const std::optional<std::string> incarnation = ParseDroppedTableName(name);
    if (!incarnation || writing.count(*incarnation) > 0) continue;
    VIGIL_ASSIGN_OR_RETURN(VacuumReport r, ReclaimDroppedDataset(dropped + "/" + name, /*no_user_remains=*/true));
    report->bytes_freed += r.bytes_freed;
    report->failures.insert(report->failures.end(), r.failures.begin(), r.failures.end());
    if (r.failures.empty()) ++reclaimed;
  }
  return reclaimed;
}

}  // namespace

Result<ResultSet> ExecVacuum(ExecContext& ctx, const VacuumStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kAlter));
  VIGIL_ASSIGN_OR_RETURN(auto ds, OpenTable(ctx, name));
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry, ctx.Catalog().Lookup(name));
  VacuumOptions o;
  if (s.retain_versions) o.retain_versions = static_cast<uint64_t>(*s.retain_versions);
  if (s.older_than) {
    VIGIL_ASSIGN_OR_RETURN(int64_t micros, ParseIntervalMicros(*s.older_than));
    o.older_than_micros = micros;
  }
  VIGIL_ASSIGN_OR_RETURN(JobGuards guards, ProtectJobs(ctx, entry, &o));
  const bool may_write = guards.executor_may_write;
  // Orphans go only when no executor of the table's jobs can still write, and never the
  // staging (attempt lock) of an UNKNOWN attempt the reconciler still has to prove.
  o.may_still_write = [guards](const Orphan& orphan) {
    return guards.executor_may_write ||
           (orphan.kind == Orphan::Kind::kStaging && guards.watched_attempts.count(orphan.id) > 0);
  };
  VIGIL_ASSIGN_OR_RETURN(auto pins, generations::VersionPinStore::Open(&ctx.store->database(), ctx.Now()));
  VIGIL_ASSIGN_OR_RETURN(VacuumReport report,
                         generations::VacuumTable(ds->path(), o, {}, pins.get(), ds->path(), ctx.Now()));
  ctx.Invalidate(name);
  // An administrator's VACUUM also reclaims dropped tables that nothing can still write.
  int64_t dropped = 0;
  if (ctx.options.principal.admin) {
    VIGIL_ASSIGN_OR_RETURN(dropped, ReclaimDroppedTables(ctx, &report));
  }
  ResultSet r;
  r.columns = {"RemovedVersions", "RemovedPaths", "BytesFreed", "KeptOrphans", "DroppedTablesReclaimed", "Failures"};
  r.rows.push_back({Value(static_cast<int64_t>(report.removed_versions.size())),
                    Value(static_cast<int64_t>(report.removed_paths.size())),
                    Value(static_cast<int64_t>(report.bytes_freed)),
                    Value(static_cast<int64_t>(report.kept_orphans.size())), Value(dropped),
                    Value(static_cast<int64_t>(report.failures.size()))});
  for (const std::string& f : report.failures) r.warnings.push_back("VACUUM could not remove " + f + "; it retries");
  for (const std::string& why : KeptVersionNotices(report.kept_versions)) r.notices.push_back(why);
  if (may_write) r.notices.push_back("orphans kept: an executor of a job of this table may still write");
  return r;
}

}  // namespace vigil::sql

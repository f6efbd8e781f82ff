#include "vigil/jobs/job_control.h"

#include "vigil/common/failpoint.h"

namespace vigil::jobs {

namespace {

Status Invisible(int64_t job_id) {
  return Status::NotFound("index job " + std::to_string(job_id) + " does not exist or is not visible to you");
}

Status Typed(std::string_view code, const std::string& message) {
  return Status::FailedPrecondition(std::string(code) + ": " + message);
}

// The scopes a grant object names ("c.d.t" or "c.d.*"). Every split at its dots is one
// scope, so the store matches exactly the names auth::Principal::Has matches.
std::vector<TableScope> ScopesOf(const std::string& object) {
  std::vector<TableScope> out;
  std::vector<size_t> dots;
  for (size_t i = 0; i < object.size(); ++i) {
    if (object[i] == '.') dots.push_back(i);
  }
  const bool database = object.size() >= 2 && object.compare(object.size() - 2, 2, ".*") == 0;
  for (size_t a = 0; a < dots.size(); ++a) {
    for (size_t b = a + 1; b < dots.size(); ++b) {
      std::string catalog = object.substr(0, dots[a]);
      std::string db = object.substr(dots[a] + 1, dots[b] - dots[a] - 1);
      std::string table = object.substr(dots[b] + 1);
      if (catalog.empty() || db.empty() || table.empty()) continue;
      out.push_back({catalog, db, std::optional<std::string>(table)});
      if (database && b + 1 == dots.size() && table == "*") out.back().table_name.reset();
    }
  }
  return out;
}

// `filter` narrowed to what `who` may see: ADMIN sees every job (orphans too); anyone else
// the jobs of the tables and databases it may SHOW whose target still resolves.
JobFilter VisibleTo(JobFilter filter, const auth::Principal& who) {
  if (who.admin) return filter;
  std::vector<TableScope> scopes;
  for (const auto& [object, held] : who.grants) {
    if (held.count(auth::Privilege::kShow) == 0 && held.count(auth::Privilege::kAlter) == 0) continue;
    for (TableScope& s : ScopesOf(object)) scopes.push_back(std::move(s));
  }
  filter.visible = std::move(scopes);
  return filter;
}

bool ResolutionDone(const JobRecord& job, ResolveAction action) {
  switch (action) {
    case ResolveAction::kAcknowledge:
      return job.state.disposition == Disposition::kAcknowledged;
    case ResolveAction::kForceRelease:
    case ResolveAction::kForceReleaseWithoutRefresh:
      return job.state.disposition == Disposition::kForceReleased;
  }
  return false;
}

}  // namespace

std::string_view Name(ResolveAction a) {
  switch (a) {
    case ResolveAction::kAcknowledge:
      return "ACKNOWLEDGED";
    case ResolveAction::kForceRelease:
      return "FORCE_RELEASE";
    case ResolveAction::kForceReleaseWithoutRefresh:
      return "FORCE_RELEASE WITHOUT REFRESH";
  }
  return "?";
}

Result<bool> JobControl::TargetResolves(const JobRecord& job) {
  VIGIL_ASSIGN_OR_RETURN(
      auto entry, store_->catalog().LookupTable(job.spec.catalog_name, job.spec.database_name, job.spec.table_name));
  return entry.has_value() && entry->table_incarnation == job.spec.table_incarnation &&
         entry->catalog_incarnation == job.spec.catalog_incarnation;
}

Result<JobRecord> JobControl::LoadAuthorized(int64_t job_id, const auth::Principal& who, auth::Privilege p,
                                             bool orphan_admin_ok) {
  Result<JobRecord> job = store_->Get(job_id);
  if (!job.ok()) return job.status().code() == StatusCode::kNotFound ? Invisible(job_id) : job.status();
  const JobSpec& s = job->spec;
  VIGIL_ASSIGN_OR_RETURN(bool resolves, TargetResolves(*job));
  if (!resolves) {
    // An orphan is visible to ADMIN only, and only ADMIN's emergency path may change it.
    if (!who.admin) return Invisible(job_id);
    if (!orphan_admin_ok && p == auth::Privilege::kAlter) {
      return Status::FailedPrecondition("index job " + std::to_string(job_id) +
                                        ": its table no longer resolves; only FORCE_RELEASE by ADMIN can change it");
    }
    return job;
  }
  if (!who.Has(auth::Privilege::kShow, s.catalog_name, s.database_name, s.table_name)) return Invisible(job_id);
  if (!who.Has(p, s.catalog_name, s.database_name, s.table_name)) {
    return Status::PermissionDenied("ALTER on " + s.catalog_name + "." + s.database_name + "." + s.table_name +
                                    " is required for index job " + std::to_string(job_id));
  }
  return job;
}

Result<JobDetail> JobControl::Detail(const JobRecord& job) {
  JobDetail d;
  d.job = job;
  VIGIL_ASSIGN_OR_RETURN(d.events, store_->Events(job.job_id));
  for (const JobEvent& e : d.events) {
    if (e.kind == event::kForceCompleted) d.warnings = ForceWarnings(job, false);
    if (e.kind == event::kEmergencyForceCompleted) d.warnings = ForceWarnings(job, true);
  }
  return d;
}

Result<std::vector<JobRecord>> JobControl::List(const JobFilter& filter, const auth::Principal& who) {
  return store_->List(VisibleTo(filter, who));
}

Result<JobCursor> JobControl::Scan(const JobFilter& filter, const auth::Principal& who) {
  return store_->Scan(VisibleTo(filter, who));
}

Result<int64_t> JobControl::Count(const JobFilter& filter, const auth::Principal& who) {
  return store_->Count(VisibleTo(filter, who));
}

Result<std::vector<AuditRecord>> JobControl::ListAudit(int64_t after_id, int limit, const auth::Principal& who) {
  if (!who.admin) return std::vector<AuditRecord>{};
  return store_->ListAudit(after_id, limit);
}

Result<JobDetail> JobControl::Show(int64_t job_id, const auth::Principal& who) {
  VIGIL_ASSIGN_OR_RETURN(JobRecord job, LoadAuthorized(job_id, who, auth::Privilege::kShow, true));
  return Detail(job);
}

Result<JobRecord> JobControl::Cancel(int64_t job_id, const auth::Principal& who) {
  VIGIL_ASSIGN_OR_RETURN(JobRecord job, LoadAuthorized(job_id, who, auth::Privilege::kAlter, false));
  for (int tries = 0; tries < 8; ++tries) {
    Cas cas{job.job_id, job.revision, std::nullopt, who.name, NowMs()};
    Result<JobRecord> r = Status::Internal("unreachable");
    if (job.state.execution == Execution::kPending) {
      r = store_->Cancel(cas);
    } else if (job.state.execution == Execution::kCancelling) {
      r = store_->CompleteCancel(cas);  // crash cut C3: finish the durable CANCELLING
    } else if (job.state.outcome == Outcome::kCancelledBeforeDispatch) {
      return job;
    } else {
      return Typed(kNotCancellableAfterDispatch, "index job " + std::to_string(job_id) + " is " +
                                                     std::string(DerivedState(job.state)) +
                                                     "; a dispatched job cannot be cancelled");
    }
    if (r.ok() || r.status().code() != StatusCode::kCommitConflict) return r;
    VIGIL_ASSIGN_OR_RETURN(job, store_->Get(job_id));  // dispatch or another CANCEL moved it: decide again
  }
  return Status::Busy("index job " + std::to_string(job_id) + " keeps changing; try CANCEL again");
}

Result<JobDetail> JobControl::Resolve(int64_t job_id, ResolveAction action, std::string_view note,
                                      const auth::Principal& who, const WaitOptions& wait) {
  const bool emergency = action == ResolveAction::kForceReleaseWithoutRefresh;
  const bool force = action != ResolveAction::kAcknowledge;
  VIGIL_ASSIGN_OR_RETURN(JobRecord job, LoadAuthorized(job_id, who, auth::Privilege::kAlter, force));
  if (emergency && !who.admin) {
    return Status::PermissionDenied("FORCE_RELEASE WITHOUT REFRESH requires ADMIN");
  }
  VIGIL_ASSIGN_OR_RETURN(std::string clean, NormalizeNote(note));
  if (ResolutionDone(job, action)) return Detail(job);  // a completed resolution returns its existing events
  // Seed 000 section 8.2: an ADMIN may also FORCE RELEASE WITHOUT REFRESH a terminal job with a
  // known outcome whose refresh never finished, so it still holds the fence.
  const bool fenced_known = job.state.execution == Execution::kTerminal && HoldsFence(job.state);
  if (job.state.outcome != Outcome::kUnknown && !(emergency && fenced_known)) {
    const std::string state(DerivedState(job.state));
    const std::string outcome(Name(job.state.outcome));
    return Typed(
        kNotResolvable,
        "index job " + std::to_string(job_id) + " is " + state +
            (job.state.outcome == Outcome::kNone ? "" : " (outcome " + outcome + ")") +
            ": only a job whose outcome is unknown (OUTCOME_UNKNOWN) is resolved" +
            (fenced_known ? " (an ADMIN may FORCE_RELEASE WITHOUT REFRESH it: it still holds the fence)" : "") +
            (IsFinal(job.state) ? "; this one needs nothing" : "; WAIT INDEX JOB " + std::to_string(job_id)));
  }
  Cas cas{job.job_id, job.revision, std::nullopt, who.name, NowMs()};
  Result<JobRecord> requested = action == ResolveAction::kAcknowledge ? store_->RequestAck(cas, clean)
                                : emergency                           ? store_->ForceWithoutRefresh(cas, clean)
                                                                      : store_->RequestForce(cas, clean);
  VIGIL_ASSIGN_OR_RETURN(job, std::move(requested));
  const std::string resolution = job.resolution_id.value_or("");
  const int64_t deadline = NowMs() + wait.timeout_ms;
  while (!ResolutionDone(job, action)) {
    if (wait.timeout_ms == 0) return Detail(job);  // the caller does not wait
    if (job.state.refresh == RefreshState::kRetryPending || NowMs() >= deadline) {
      return Typed(kResolutionIncomplete,
                   "index job " + std::to_string(job_id) + " resolution " + resolution + " is " +
                       std::string(Name(job.state.disposition)) + " (refresh " + std::string(Name(job.state.refresh)) +
                       (job.refresh_last_error ? ": " + *job.refresh_last_error : std::string()) +
                       "); the leader keeps retrying it, and RESOLVE again joins the same request");
    }
    env_->SleepForMs(wait.poll_ms);
    VIGIL_ASSIGN_OR_RETURN(job, store_->Get(job_id));
  }
  VIGIL_ASSIGN_OR_RETURN(JobDetail d, Detail(job));
  if (force) d.warnings = ForceWarnings(job, emergency);
  return d;
}

Result<JobRecord> JobControl::Wait(int64_t job_id, const auth::Principal& who, const WaitOptions& wait) {
  VIGIL_ASSIGN_OR_RETURN(JobRecord job, LoadAuthorized(job_id, who, auth::Privilege::kShow, true));
  const int64_t deadline = NowMs() + wait.timeout_ms;
  while (!IsFinal(job.state)) {
    if (NowMs() >= deadline) {
      return Status::DeadlineExceeded("index job " + std::to_string(job_id) + " is still " +
                                      std::string(DerivedState(job.state)));
    }
    env_->SleepForMs(wait.poll_ms);
    VIGIL_ASSIGN_OR_RETURN(job, store_->Get(job_id));
  }
  return job;
}

Result<int64_t> JobControl::RefreshTable(const std::string& catalog, const std::string& db, const std::string& table,
                                         const auth::Principal& who) {
  const std::string full = catalog + "." + db + "." + table;
  if (!who.Has(auth::Privilege::kShow, catalog, db, table)) {
    return Status::NotFound("table " + full + " does not exist");
  }
  if (!who.Has(auth::Privilege::kAlter, catalog, db, table)) {
    return Status::PermissionDenied("ALTER on " + full + " is required for REFRESH TABLE");
  }
  VIGIL_ASSIGN_OR_RETURN(auto entry, store_->catalog().LookupTable(catalog, db, table));
  if (!entry) return Status::NotFound("table " + full + " does not exist");
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, store_->database().Begin(meta::TxnMode::kWrite));
  VIGIL_ASSIGN_OR_RETURN(int64_t generation, store_->BumpRefreshGeneration(txn, entry->table_incarnation, NowMs()));
  VIGIL_RETURN_IF_ERROR(txn.Commit());
  return generation;
}

Status JobControl::GuardedTableChange(const std::string& catalog, const std::string& db, const std::string& table,
                                      const auth::Principal& who,
                                      const std::function<Status(meta::Transaction&)>& ddl) {
  const std::string full = catalog + "." + db + "." + table;
  if (!who.Has(auth::Privilege::kShow, catalog, db, table)) {
    return Status::NotFound("table " + full + " does not exist");
  }
  if (!who.Has(auth::Privilege::kAlter, catalog, db, table)) {
    return Status::PermissionDenied("ALTER on " + full + " is required to change the table");
  }
  VIGIL_ASSIGN_OR_RETURN(auto entry, store_->catalog().LookupTable(catalog, db, table));
  if (!entry) return Status::NotFound("table " + full + " does not exist");
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, store_->database().Begin(meta::TxnMode::kWrite));
  Status guard = store_->CheckNoGuard(txn, entry->table_incarnation);
  if (guard.code() == StatusCode::kFailedPrecondition) return Typed(kTableGuarded, guard.message());
  VIGIL_RETURN_IF_ERROR(guard);
  VIGIL_RETURN_IF_ERROR(ddl(txn));
  return txn.Commit();
}

Status JobControl::DropDatabase(const std::string& catalog, const std::string& db,
                                const std::function<Status()>& remove) {
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, store_->database().Begin(meta::TxnMode::kWrite));
  VIGIL_RETURN_IF_ERROR(catalog::CatalogStore::LockCatalogOn(txn.conn(), catalog, NowMs()).status());
  VIGIL_ASSIGN_OR_RETURN(std::vector<catalog::TableEntry> tables,
                         catalog::CatalogStore::ListTablesOn(txn.conn(), catalog, db));
  std::string names;
  for (size_t i = 0; i < tables.size(); ++i) {
    const catalog::TableEntry& t = tables[i];
    Status guard = store_->CheckNoGuard(txn, t.table_incarnation);
    if (guard.code() == StatusCode::kFailedPrecondition) {
      return Typed(kTableGuarded, "database " + db + " cannot be dropped: table " + catalog + "." + db + "." +
                                      t.table_name + ": " + guard.message());
    }
    VIGIL_RETURN_IF_ERROR(guard);
    if (i < 10) names += (i ? ", " : "") + t.table_name + (t.engine == index::TableEngine::kVigil ? "" : " (external)");
  }
  if (tables.size() > 10) names += ", ... (" + std::to_string(tables.size()) + " in all)";
  if (!tables.empty()) {
    return Status::FailedPrecondition("database '" + db + "' is not empty (tables " + names +
                                      "); drop its tables first");
  }
  VIGIL_FAILPOINT("jobs.drop_database.locked");
  VIGIL_RETURN_IF_ERROR(remove());
  return txn.Commit();
}

Status JobControl::DropTable(const std::string& catalog, const std::string& db, const std::string& table,
                             const auth::Principal& who) {
  return GuardedTableChange(catalog, db, table, who,
                            [&](meta::Transaction& txn) { return store_->DropTable(txn, catalog, db, table); });
}

}  // namespace vigil::jobs

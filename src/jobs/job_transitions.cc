// The convenience transitions of JobStore: each is one Apply (one CAS) that
// uses the matching job_state.h function and fills the fields and events the
// transition records.
#include <algorithm>

#include "jobs/job_rows.h"
#include "jobs/job_schema.h"
#include "jobs/job_store_internal.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/uuid.h"
#include "vigil/jobs/backoff.h"
#include "vigil/jobs/job_store.h"

namespace vigil::jobs {

namespace {

// Refresh retries use the default schedule (30 s doubling to 30 min, seed 000 8.1).
constexpr Backoff kRefreshBackoff;

EventDraft Event(std::string_view kind, std::map<std::string, std::string> detail = {}) {
  return EventDraft{std::string(kind), std::nullopt, std::nullopt, std::move(detail)};
}

// A transition that only changes the state, with one event.
TransitionFn StateStep(std::function<Result<JobState>(const JobState&)> step, std::string_view kind) {
  return [step = std::move(step), kind](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, step(cur.state));
    t->events.push_back(Event(kind));
    return Status::OK();
  };
}

// CommitConflict unless `attempt_id` is the job's persisted attempt (stale callbacks lose).
Status MatchAttempt(const JobRecord& cur, const std::string& attempt_id) {
  if (cur.attempt && cur.attempt->attempt_id == attempt_id) return Status::OK();
  return Status::CommitConflict("job " + std::to_string(cur.job_id) + ": attempt '" + attempt_id +
                                "' is not the job's attempt");
}

Status CheckErrorCode(const std::optional<std::string>& code) {
  if (!code) return Status::OK();
  bool ok = !code->empty() && code->size() <= 64 && std::all_of(code->begin(), code->end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  return ok ? Status::OK() : Status::InvalidArgument("error code must match [A-Z0-9_]{1,64}");
}

Status CheckAttempt(const Cas& cas, const AttemptIdentity& a) {
  if (!cas.leader_epoch || a.leader_epoch != *cas.leader_epoch) {
    return Status::InvalidArgument("dispatch needs the leader epoch, recorded on the attempt");
  }
  VIGIL_RETURN_IF_ERROR(internal::CheckText("executor node id", a.executor_node_id, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(internal::CheckText("attempt id", a.attempt_id, kMaxIndexNameBytes));
  if (a.node_epoch < 1 || a.attempt_number < 1 || a.dispatch_generation < 1 || a.deadline_at_ms <= cas.now_ms) {
    return Status::InvalidArgument("attempt needs node epoch, number and generation >= 1 and a future deadline");
  }
  return Status::OK();
}

void RecordObservation(Transition* t, int64_t version, const std::string& fingerprint, int64_t now_ms) {
  t->next.last_observed_version = version;
  t->next.last_observed_fingerprint = fingerprint;
  t->next.reconcile_last_at_ms = now_ms;
}

// The watcher state after a check that proved nothing: WATCHING/RETRY_PENDING follow the read;
// a pending final read or attribution keeps its state (only its schedule moves).
Result<JobState> WatchStep(const JobState& s, bool read_ok) {
  JobState n = s;
  switch (s.reconcile) {
    case ReconcileState::kWatching:
    case ReconcileState::kRetryPending:
      n.reconcile = read_ok ? ReconcileState::kWatching : ReconcileState::kRetryPending;
      break;
    case ReconcileState::kFinalReadPending:
    case ReconcileState::kStoppedTerminationProven:
      break;
    default:
      return Status::FailedPrecondition("watcher check is not allowed from " + internal::StateText(s));
  }
  if (s.outcome != Outcome::kUnknown) {
    return Status::FailedPrecondition("watcher check is not allowed from " + internal::StateText(s));
  }
  VIGIL_RETURN_IF_ERROR(CheckLegal(n));
  return n;
}

// The completion event of a pending ACK / FORCE that `next` finished, if any.
std::optional<EventDraft> CompletionOf(const JobRecord& cur, const JobRecord& next) {
  std::string_view kind;
  if (cur.state.disposition == Disposition::kAckRefreshPending &&
      next.state.disposition == Disposition::kAcknowledged) {
    kind = event::kAckCompleted;
  } else if (cur.state.disposition == Disposition::kForceRefreshPending &&
             next.state.disposition == Disposition::kForceReleased) {
    kind = event::kForceCompleted;
  } else {
    return std::nullopt;
  }
  EventDraft d = Event(kind);
  d.resolution_id = cur.resolution_id;
  if (kind == event::kForceCompleted) d.detail["warning"] = "an old executor may still commit after release";
  return d;
}

// Writes the audit record of a FORCE_RELEASE requested by `cas` in the transition's transaction.
Status InsertAudit(meta::Connection& conn, const Cas& cas, std::string_view action, const JobRecord& next,
                   const std::string& resolution_id, const std::string& note) {
  AuditRecord a;
  a.at_ms = cas.now_ms;
  a.actor = cas.actor;
  a.action = std::string(action);
  a.job_id = next.job_id;
  a.resolution_id = resolution_id;
  a.catalog_name = next.spec.catalog_name;
  a.database_name = next.spec.database_name;
  a.table_name = next.spec.table_name;
  a.table_incarnation = next.spec.table_incarnation;
  a.index_name = next.spec.index_name;
  a.note = note;
  a.warnings = ForceWarnings(next, action == audit::kForceReleaseWithoutRefresh);
  return conn.Execute(sql::kInsertAudit, AuditParams(a)).status();
}

}  // namespace

Result<JobRecord> JobStore::Cancel(const Cas& cas) {
  VIGIL_ASSIGN_OR_RETURN(JobRecord mid, Apply(cas, StateStep(BeginCancel, event::kCancelRequested)));
  // Crash cut C3: CANCELLING is durable, the terminal cancel is not.
  if (Status fp = failpoint::Hit("jobs.cancel.after_cancelling"); !fp.ok()) return fp;
  Cas second = cas;
  second.revision = mid.revision;
  return CompleteCancel(second);
}

Result<JobRecord> JobStore::CompleteCancel(const Cas& cas) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, FinishCancel(cur.state));
    t->next.finished_at_ms = cas.now_ms;
    t->events.push_back(Event(event::kCancelled));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::Dispatch(const Cas& cas, const AttemptIdentity& attempt) {
  VIGIL_RETURN_IF_ERROR(CheckAttempt(cas, attempt));
  auto fn = [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, jobs::Dispatch(cur.state));
    t->next.attempt = attempt;
    t->next.started_at_ms = cas.now_ms;
    t->events.push_back(Event(event::kDispatched, {{"node", attempt.executor_node_id},
                                                   {"node_epoch", std::to_string(attempt.node_epoch)},
                                                   {"attempt_id", attempt.attempt_id},
                                                   {"deadline_at", std::to_string(attempt.deadline_at_ms)}}));
    return Status::OK();
  };
  auto hook = [&](meta::Connection& conn, const JobRecord&, const Transition&) {
    return ClusterStore::CheckNodeEpochOn(conn, attempt.executor_node_id, attempt.node_epoch);
  };
  return ApplyWith(cas, fn, hook);
}

Result<JobRecord> JobStore::ConcludeBeforeDispatch(const Cas& cas, AttemptResult result, bool observed_change) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, FinishBeforeDispatch(cur.state, result, observed_change));
    t->next.finished_at_ms = cas.now_ms;
    t->events.push_back(Event(event::kResult, {{"outcome", std::string(Name(t->next.state.outcome))}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::ExhaustScheduling(const Cas& cas, const std::string& message) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    if (cur.state.execution != Execution::kPending) {
      return Status::CommitConflict("job " + std::to_string(cur.job_id) + " is no longer PENDING");
    }
    VIGIL_ASSIGN_OR_RETURN(t->next.state, FinishBeforeDispatch(cur.state, AttemptResult::kNotInvoked, false));
    t->next.finished_at_ms = cas.now_ms;
    t->next.invoked = false;
    t->next.error_code = std::string(kSchedulingExhausted);
    t->next.error_message = SanitizeMessage(message);
    t->events.push_back(Event(event::kResult, {{"outcome", std::string(Name(t->next.state.outcome))},
                                               {"invoked", "false"},
                                               {"error_code", std::string(kSchedulingExhausted)}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::RecordResult(const Cas& cas, const AttemptReport& report) {
  VIGIL_RETURN_IF_ERROR(CheckErrorCode(report.error_code));
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_RETURN_IF_ERROR(MatchAttempt(cur, report.attempt_id));
    JobRecord& n = t->next;
    VIGIL_ASSIGN_OR_RETURN(n.state, FinishAttempt(cur.state, report.result, report.observed_change));
    n.invoked = report.invoked;
    n.error_code = report.error_code;
    if (report.error_message) n.error_message = SanitizeMessage(*report.error_message);
    n.committed_version = report.committed_version;
    n.finished_at_ms = cas.now_ms;
    if (n.state.outcome == Outcome::kUnknown) {
      n.reconcile_backoff_s = report.reconcile_backoff_s;
      n.reconcile_next_at_ms = cas.now_ms + (report.due_now ? 0 : report.reconcile_backoff_s * 1000);
    }
    t->events.push_back(Event(event::kResult, {{"outcome", std::string(Name(n.state.outcome))},
                                               {"invoked", report.invoked ? "true" : "false"},
                                               {"error_code", report.error_code.value_or("")}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::ObserveChange(const Cas& cas, int64_t version, const std::string& fingerprint) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, jobs::ObserveChange(cur.state));
    RecordObservation(t, version, fingerprint, cas.now_ms);
    t->events.push_back(Event(event::kChangeObserved, {{"version", std::to_string(version)}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::ProveTermination(const Cas& cas, const std::string& attempt_id, TerminationProof proof) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_RETURN_IF_ERROR(MatchAttempt(cur, attempt_id));
    VIGIL_ASSIGN_OR_RETURN(t->next.state, jobs::ProveTermination(cur.state));
    t->next.termination_proven = true;
    t->events.push_back(
        Event(event::kTerminationProven, {{"attempt_id", attempt_id}, {"proof", std::string(Name(proof))}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::FinishFinalRead(const Cas& cas, int64_t version, const std::string& fingerprint) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, jobs::FinishFinalRead(cur.state));
    RecordObservation(t, version, fingerprint, cas.now_ms);
    t->next.reconcile_next_at_ms.reset();
    t->events.push_back(Event(event::kFinalRead, {{"version", std::to_string(version)}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::RecordWatch(const Cas& cas, const WatchCheck& check) {
  if (check.backoff_s < 1) return Status::InvalidArgument("watcher backoff must be at least 1 s");
  if (check.read_ok != check.version.has_value() || check.version.has_value() != check.fingerprint.has_value()) {
    return Status::InvalidArgument("a good watcher read carries version and fingerprint; a failed one neither");
  }
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    JobRecord& n = t->next;
    VIGIL_ASSIGN_OR_RETURN(n.state, WatchStep(cur.state, check.read_ok));
    const bool watching =
        cur.state.reconcile == ReconcileState::kWatching || cur.state.reconcile == ReconcileState::kRetryPending;
    if (watching && check.version) {
      const int64_t last = cur.last_observed_version.value_or(cur.spec.start_version);
      if (*check.version != last ||
          (cur.last_observed_fingerprint && *cur.last_observed_fingerprint != *check.fingerprint)) {
        return Status::FailedPrecondition("job " + std::to_string(cur.job_id) +
                                          ": a changed observation is a watcher observation (T9)");
      }
      RecordObservation(t, *check.version, *check.fingerprint, cas.now_ms);
    }
    n.reconcile_last_at_ms = cas.now_ms;
    n.reconcile_backoff_s = check.backoff_s;
    n.reconcile_next_at_ms = cas.now_ms + check.backoff_s * 1000;
    std::map<std::string, std::string> detail{{"next_at", std::to_string(*n.reconcile_next_at_ms)},
                                              {"backoff_s", std::to_string(check.backoff_s)}};
    if (!check.read_ok) {
      detail["error"] = SanitizeMessage(check.error.empty() ? "read failed" : check.error);
      t->events.push_back(Event(event::kWatchReadFailed, std::move(detail)));
    } else {
      t->events.push_back(Event(event::kWatchChecked, std::move(detail)));
    }
    return Status::OK();
  });
}

Result<JobRecord> JobStore::Attribute(const Cas& cas, bool committed, std::optional<int64_t> committed_version) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, jobs::Attribute(cur.state, committed));
    if (committed) t->next.committed_version = committed_version;
    t->next.reconcile_next_at_ms.reset();
    t->events.push_back(Event(event::kAttributed, {{"committed", committed ? "true" : "false"}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::RefreshStart(const Cas& cas) {
  return Apply(cas, [&](const JobRecord& cur, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, StartRefresh(cur.state));
    t->next.refresh_generation = cur.refresh_generation + 1;
    t->next.refresh_next_at_ms.reset();
    t->events.push_back(Event(event::kRefreshStarted, {{"generation", std::to_string(t->next.refresh_generation)}}));
    return Status::OK();
  });
}

Result<JobRecord> JobStore::RefreshDone(const Cas& cas, int64_t refresh_generation, bool ok, const std::string& error) {
  auto fn = [&](const JobRecord& cur, Transition* t) -> Status {
    if (cur.refresh_generation != refresh_generation) {
      return Status::CommitConflict("job " + std::to_string(cur.job_id) + " is at refresh generation " +
                                    std::to_string(cur.refresh_generation));
    }
    JobRecord& n = t->next;
    VIGIL_ASSIGN_OR_RETURN(n.state, FinishRefresh(cur.state, ok));
    if (!ok) {
      n.refresh_retries = cur.refresh_retries + 1;
      n.refresh_last_error = SanitizeMessage(error.empty() ? "refresh failed" : error);
      n.refresh_next_at_ms = cas.now_ms + kRefreshBackoff.AfterFailures(n.refresh_retries) * 1000;
      t->events.push_back(Event(event::kRefreshFailed, {{"error", *n.refresh_last_error}}));
      return Status::OK();
    }
    t->events.push_back(Event(event::kRefreshDone, {{"generation", std::to_string(refresh_generation)}}));
    if (auto done = CompletionOf(cur, n)) {
      t->events.push_back(std::move(*done));
      n.resolution_id.reset();
    }
    return Status::OK();
  };
  auto hook = [&](meta::Connection& conn, const JobRecord& cur, const Transition&) -> Status {
    if (!ok) return Status::OK();
    return conn.Query(sql::kBumpRefreshGeneration, {cur.spec.table_incarnation, cas.now_ms}).status();
  };
  return ApplyWith(cas, fn, hook);
}

Result<JobRecord> JobStore::RequestAck(const Cas& cas, const std::string& note) {
  return RequestResolution(cas, note, false);
}

Result<JobRecord> JobStore::RequestForce(const Cas& cas, const std::string& note) {
  return RequestResolution(cas, note, true);
}

Result<JobRecord> JobStore::RequestResolution(const Cas& cas, const std::string& note, bool force) {
  VIGIL_ASSIGN_OR_RETURN(std::string clean, NormalizeNote(note));
  const Disposition pending = force ? Disposition::kForceRefreshPending : Disposition::kAckRefreshPending;
  const std::string_view kind = force ? event::kForceRequested : event::kAckRequested;
  VIGIL_ASSIGN_OR_RETURN(JobRecord cur, Get(cas.job_id));
  if (cur.state.disposition == pending && cur.resolution_id) {  // an identical retry joins the request
    VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
    VIGIL_ASSIGN_OR_RETURN(std::optional<meta::Row> row,
                           conn->QueryOptional(sql::kSelectResolutionRequest, {*cur.resolution_id}));
    if (row) {
      VIGIL_ASSIGN_OR_RETURN(JobEvent req, ParseEvent(*row));
      if (req.actor == cas.actor && req.note == clean) return cur;
    }
  }
  auto fn = [&](const JobRecord& c, Transition* t) -> Status {
    VIGIL_ASSIGN_OR_RETURN(t->next.state, force ? jobs::RequestForce(c.state) : jobs::RequestAck(c.state));
    t->next.resolution_id = Uuid::Generate().ToString();
    EventDraft d = Event(kind);
    d.resolution_id = t->next.resolution_id;
    d.note = clean;
    if (force) d.detail["warning"] = "an old executor may still commit after release";
    t->events.push_back(std::move(d));
    return Status::OK();
  };
  auto hook = [&](meta::Connection& conn, const JobRecord&, const Transition& t) -> Status {
    if (!force) return Status::OK();
    return InsertAudit(conn, cas, audit::kForceRelease, t.next, *t.next.resolution_id, clean);
  };
  return ApplyWith(cas, fn, hook);
}

Result<JobRecord> JobStore::ForceWithoutRefresh(const Cas& cas, const std::string& note) {
  VIGIL_ASSIGN_OR_RETURN(std::string clean, NormalizeNote(note));
  const std::string id = Uuid::Generate().ToString();
  auto fn = [&](const JobRecord& cur, Transition* t) -> Status {
    JobRecord& n = t->next;
    VIGIL_ASSIGN_OR_RETURN(n.state, jobs::ForceWithoutRefresh(cur.state));
    n.refresh_generation = cur.refresh_generation + 1;
    if (cur.resolution_id) {
      EventDraft superseded = Event(event::kSupersededByEmergencyForce);
      superseded.resolution_id = cur.resolution_id;
      t->events.push_back(std::move(superseded));
    }
    EventDraft request = Event(event::kEmergencyForceRequested);
    request.resolution_id = id;
    request.note = clean;
    EventDraft done = Event(event::kEmergencyForceCompleted,
                            {{"warning", "an old executor may still commit after release; caches may be stale"}});
    done.resolution_id = id;
    t->events.push_back(std::move(request));
    t->events.push_back(std::move(done));
    n.resolution_id.reset();
    return Status::OK();
  };
  auto hook = [&](meta::Connection& conn, const JobRecord&, const Transition& t) {
    return InsertAudit(conn, cas, audit::kForceReleaseWithoutRefresh, t.next, id, clean);
  };
  return ApplyWith(cas, fn, hook);
}

}  // namespace vigil::jobs

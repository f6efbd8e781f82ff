#include "vigil/jobs/runner.h"

#include <unistd.h>

#include <chrono>
#include <memory>

#include "vigil/common/failpoint.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/file_lock.h"

namespace vigil::jobs {

Status JobRunner::Start(int64_t now_ms) {
  // The lease first: a process that cannot lead must not replace the node's epoch.
  VIGIL_ASSIGN_OR_RETURN(LeaderLease lease, store_->AcquireLeader(options_.leader_holder, now_ms, options_.lease_ttl_ms));
  leader_epoch_ = lease.epoch;
  VIGIL_ASSIGN_OR_RETURN(node_epoch_, store_->RegisterNode(options_.node_id, ::getpid(), "localhost", now_ms));
  return Status::OK();
}

Status JobRunner::RenewLeadership(int64_t now_ms) {
  if (leader_epoch_ == 0) return Status::FailedPrecondition("the runner was not started");
  VIGIL_ASSIGN_OR_RETURN(LeaderLease lease,
                         store_->RenewLeader(options_.leader_holder, leader_epoch_, now_ms, options_.lease_ttl_ms));
  leader_epoch_ = lease.epoch;
  return Status::OK();
}

index::ProgressFn JobRunner::ProgressRecorder(const JobRecord& job) {
  // At most one write per phase change or per 250 ms; a failed write only loses progress.
  auto last = std::make_shared<std::pair<std::string, std::chrono::steady_clock::time_point>>();
  JobStore* store = store_;
  const int64_t job_id = job.job_id;
  const std::string attempt_id = job.attempt ? job.attempt->attempt_id : "";
  return [store, job_id, attempt_id, last](std::string_view phase, uint64_t done, uint64_t total) {
    auto now = std::chrono::steady_clock::now();
    if (phase == last->first && now - last->second < std::chrono::milliseconds(250) && done < total) return;
    last->first = std::string(phase);
    last->second = now;
    (void)store->RecordProgress(job_id, attempt_id, std::string(phase), static_cast<int64_t>(done),
                                static_cast<int64_t>(total));
  };
}

Result<std::optional<int64_t>> JobRunner::RunOnePending(int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(RenewLeadership(now_ms));
  JobFilter filter;
  filter.state = "PENDING";
  filter.limit = kMaxListLimit;
  VIGIL_ASSIGN_OR_RETURN(auto pending, store_->List(filter));
  const JobRecord* next = nullptr;
  for (const auto& j : pending) {
    if (j.state.execution == Execution::kPending && (next == nullptr || j.job_id < next->job_id)) next = &j;
  }
  if (next == nullptr) return std::optional<int64_t>();

  AttemptIdentity attempt;
  attempt.executor_node_id = options_.node_id;
  attempt.node_epoch = node_epoch_;
  attempt.attempt_id = std::to_string(next->job_id) + "-" + Uuid::Generate().ToString();
  attempt.leader_epoch = leader_epoch_;
  attempt.deadline_at_ms = now_ms + options_.attempt_deadline_ms;
  Cas cas{next->job_id, next->revision, leader_epoch_, options_.leader_holder, now_ms};
  // The attempt lock is held before the attempt can be RUNNING, so a free lock
  // of a RUNNING or UNKNOWN attempt proves that nothing of it still runs.
  VIGIL_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(AttemptLockPath(next->spec.locator, attempt.attempt_id)));
  // I1: RUNNING with the attempt identity is durable before the executor is called.
  VIGIL_ASSIGN_OR_RETURN(JobRecord running, store_->Dispatch(cas, attempt));
  // Crash cut C4: RUNNING is durable, nothing was sent.
  if (Status fp = failpoint::Hit("runner.after_dispatch"); !fp.ok()) return fp;

  ExecutionOutcome outcome = executor_->Execute({running, attempt, ProgressRecorder(running), lock.fd()});
  Classification c = Classify(running.spec.operation, running.spec.if_mode, outcome.report);
  AttemptReport report;
  report.attempt_id = attempt.attempt_id;
  report.result = c.result;
  report.observed_change = c.observed_change;
  report.invoked = outcome.report.complete && outcome.report.invoked;
  if (outcome.report.code != StatusCode::kOk || !outcome.report.complete) {
    // A complete response or a failure before the request names its typed code.
    const bool typed = outcome.report.complete || outcome.report.failed_before_request;
    report.error_code = typed ? std::string(StatusCodeName(outcome.report.code)) : "UNKNOWN_OUTCOME";
    report.error_message = outcome.message;
  }
  report.committed_version = outcome.committed_version;
  // Crash cut C6: the attempt ran, its result is not recorded.
  if (Status fp = failpoint::Hit("runner.before_record"); !fp.ok()) return fp;
  Cas result_cas{running.job_id, running.revision, leader_epoch_, options_.leader_holder, now_ms};
  VIGIL_ASSIGN_OR_RETURN(JobRecord done, store_->RecordResult(result_cas, report));
  // A known outcome needs no termination proof: the lock goes (an UNKNOWN one keeps it
  // for the reconciler, which removes it after attribution).
  if (done.state.outcome != Outcome::kUnknown) RemoveAttemptLock(done.spec.locator, attempt.attempt_id);
  return std::optional<int64_t>(done.job_id);
}

Result<JobRecord> JobRunner::Refresh(const JobRecord& job, int64_t now_ms) {
  JobRecord running = job;
  // A refresh left RUNNING (its leader died, or RefreshDone failed) is completed at its own
  // generation (crash cuts C9/C10); StartRefresh would refuse it and strand the job.
  if (job.state.refresh != RefreshState::kRunning) {
    Cas cas{job.job_id, job.revision, leader_epoch_, options_.leader_holder, now_ms};
    VIGIL_ASSIGN_OR_RETURN(running, store_->RefreshStart(cas));
    // Crash cuts C9/C10: the refresh is started, its completion is not durable.
    if (Status fp = failpoint::Hit("runner.after_refresh_start"); !fp.ok()) return fp;
  }
  // The refresh itself is the table's refresh-generation bump, made by RefreshDone in the
  // same transaction; serving processes observe the new generation and reopen the table.
  Cas done_cas{running.job_id, running.revision, leader_epoch_, options_.leader_holder, now_ms};
  return store_->RefreshDone(done_cas, running.refresh_generation, /*ok=*/true);
}

namespace {

// A refresh to run now: required, retry-due, or left RUNNING by a dead leader (replayed).
bool RefreshDue(const JobRecord& j, int64_t now_ms) {
  switch (j.state.refresh) {
    case RefreshState::kRequired:
    case RefreshState::kRunning: return true;
    case RefreshState::kRetryPending: return !j.refresh_next_at_ms || *j.refresh_next_at_ms <= now_ms;
    default: return false;
  }
}

}  // namespace

Result<int> JobRunner::RunRefreshes(int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(RenewLeadership(now_ms));
  // Known outcomes, UNKNOWN jobs (T9 observations, pending ACK / FORCE) and tombstones alike.
  VIGIL_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, store_->ListRefreshDue(now_ms, kMaxListLimit));
  int done = 0;
  for (const auto& j : jobs) {
    if (!RefreshDue(j, now_ms)) continue;
    VIGIL_RETURN_IF_ERROR(Refresh(j, now_ms).status());
    ++done;
  }
  return done;
}

}  // namespace vigil::jobs

#include "vigil/jobs/runner.h"

#include <unistd.h>

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

  ExecutionOutcome outcome = executor_->Execute({running, attempt, nullptr, lock.fd()});
  Classification c = Classify(running.spec.operation, running.spec.if_mode, outcome.report);
  AttemptReport report;
  report.attempt_id = attempt.attempt_id;
  report.result = c.result;
  report.observed_change = c.observed_change;
  report.invoked = outcome.report.complete && outcome.report.invoked;
  if (outcome.report.code != StatusCode::kOk || !outcome.report.complete) {
    report.error_code = outcome.report.complete ? std::string(StatusCodeName(outcome.report.code)) : "UNKNOWN_OUTCOME";
    report.error_message = outcome.message;
  }
  report.committed_version = outcome.committed_version;
  Cas result_cas{running.job_id, running.revision, leader_epoch_, options_.leader_holder, now_ms};
  VIGIL_ASSIGN_OR_RETURN(JobRecord done, store_->RecordResult(result_cas, report));
  return std::optional<int64_t>(done.job_id);
}

Result<JobRecord> JobRunner::Refresh(const JobRecord& job, int64_t now_ms) {
  Cas cas{job.job_id, job.revision, leader_epoch_, options_.leader_holder, now_ms};
  VIGIL_ASSIGN_OR_RETURN(JobRecord running, store_->RefreshStart(cas));
  // The refresh itself is the table's refresh-generation bump, made by RefreshDone in the
  // same transaction; serving processes observe the new generation and reopen the table.
  Cas done_cas{running.job_id, running.revision, leader_epoch_, options_.leader_holder, now_ms};
  return store_->RefreshDone(done_cas, running.refresh_generation, /*ok=*/true);
}

Result<int> JobRunner::RunRefreshes(int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(RenewLeadership(now_ms));
  int done = 0;
  for (const char* state : {"REFRESHING", "COMMITTED_REFRESH_PENDING", "FAILED_REFRESH_PENDING"}) {
    JobFilter filter;
    filter.state = state;
    filter.limit = kMaxListLimit;
    VIGIL_ASSIGN_OR_RETURN(auto jobs, store_->List(filter));
    for (const auto& j : jobs) {
      if (j.state.refresh == RefreshState::kRetryPending && j.refresh_next_at_ms && *j.refresh_next_at_ms > now_ms) {
        continue;
      }
      if (j.state.refresh != RefreshState::kRequired && j.state.refresh != RefreshState::kRetryPending) continue;
      VIGIL_RETURN_IF_ERROR(Refresh(j, now_ms).status());
      ++done;
    }
  }
  // UNKNOWN jobs with a required refresh (T9) or a pending resolution refresh are refreshed too.
  JobFilter unknown;
  unknown.state = "OUTCOME_UNKNOWN";
  unknown.limit = kMaxListLimit;
  VIGIL_ASSIGN_OR_RETURN(auto jobs, store_->List(unknown));
  for (const auto& j : jobs) {
    if (j.state.refresh != RefreshState::kRequired) continue;
    VIGIL_RETURN_IF_ERROR(Refresh(j, now_ms).status());
    ++done;
  }
  return done;
}

}  // namespace vigil::jobs

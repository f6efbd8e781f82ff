#include "vigil/jobs/leader.h"

#include <chrono>
#include <limits>
#include <thread>

#include "vigil/common/logging.h"

namespace vigil::jobs {

namespace {

void SleepMs(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

namespace {

// The runner records results with the leader's clock and reconcile schedule.
RunnerOptions RunnerOf(const LeaderOptions& leader, const std::function<int64_t()>& clock) {
  RunnerOptions o = leader.runner;
  if (!o.clock) o.clock = clock;
  o.reconcile_backoff = leader.reconcile.backoff;
  return o;
}

}  // namespace

Leader::Leader(JobStore* store, Executor* executor, LeaderOptions options, std::function<int64_t()> clock)
    : store_(store),
      options_(std::move(options)),
      clock_(std::move(clock)),
      runner_(store, executor, RunnerOf(options_, clock_)) {}

Leader::~Leader() = default;

Status Leader::Start() {
  Result<LeaderLease> current = store_->GetLeader();
  VIGIL_RETURN_IF_ERROR(current.status());
  const int64_t now = clock_();
  const bool held_by_other = current->holder != options_.runner.leader_holder && current->expires_at_ms > now;
  if (held_by_other && options_.holder_is_dead && options_.holder_is_dead(*current)) {
    VIGIL_LOG_INFO("taking over the lease of {} (epoch {}), which is gone", current->holder, current->epoch);
    VIGIL_RETURN_IF_ERROR(
        store_->TakeOverLeader(options_.runner.leader_holder, *current, now, options_.runner.lease_ttl_ms).status());
  } else if (held_by_other) {
    return Status::Busy("the leader lease is held by " + current->holder + " (epoch " +
                        std::to_string(current->epoch) + ") until " + std::to_string(current->expires_at_ms));
  }
  VIGIL_RETURN_IF_ERROR(runner_.Start(now));
  reconciler_ = std::make_unique<Reconciler>(store_, options_.runner.leader_holder,
                                             [this] { return runner_.leader_epoch(); }, options_.reconcile);
  // The recovery pass: cancels left half-done (crash cut C3), dead attempts, termination
  // proofs, provenance reads, then pending refreshes.
  VIGIL_RETURN_IF_ERROR(CompleteCancels());
  VIGIL_RETURN_IF_ERROR(reconciler_->Recover(clock_()));
  VIGIL_RETURN_IF_ERROR(runner_.RunRefreshes(clock_()).status());
  return Status::OK();
}

Status Leader::CompleteCancels() {
  JobFilter f;
  f.state = "PENDING";
  f.limit = kMaxListLimit;
  std::vector<JobRecord> cancelling;
  VIGIL_RETURN_IF_ERROR(store_->ForEach(f, [&cancelling](const JobRecord& j) {
    if (j.state.execution == Execution::kCancelling) cancelling.push_back(j);
    return Status::OK();
  }));
  for (const JobRecord& j : cancelling) {
    Result<JobRecord> done = store_->CompleteCancel({j.job_id, j.revision, std::nullopt, options_.runner.leader_holder,
                                                     clock_()});
    if (!done.ok() && done.status().code() != StatusCode::kCommitConflict) return done.status();
  }
  return Status::OK();
}

Result<bool> Leader::Tick() {
  bool worked = false;
  for (const FinishedAttempt& f : runner_.TakeFinished()) {
    worked = true;
    if (f.status.code() == StatusCode::kCommitConflict) return f.status;
    if (!f.status.ok()) {
      VIGIL_LOG_WARN("recording the result of job {}: {}", f.job_id, f.status.ToString());
      continue;
    }
    // An attempt that ended UNKNOWN was reaped (its lock is free): settle it now, not after a backoff.
    Status examined = reconciler_->ExamineJob(f.job_id, clock_());
    if (examined.code() == StatusCode::kCommitConflict) return examined;
    if (!examined.ok()) VIGIL_LOG_WARN("reconciling job {}: {}", f.job_id, examined.ToString());
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> started, runner_.StartPending(clock_()));
  worked |= !started.empty();
  VIGIL_ASSIGN_OR_RETURN(int refreshed, runner_.RunRefreshes(clock_()));
  worked |= refreshed > 0;
  Result<int> examined = reconciler_->RunDue(clock_());
  if (!examined.ok()) {
    if (examined.status().code() == StatusCode::kCommitConflict) return examined.status();
    VIGIL_LOG_WARN("reconciliation pass: {}", examined.status().ToString());
  }
  const int64_t now = clock_();
  if (now - last_archive_ms_ >= options_.archive_interval_ms) {
    last_archive_ms_ = now;
    VIGIL_ASSIGN_OR_RETURN(ArchiveResult archived, store_->Archive(now - options_.retention_ms, now));
    worked |= archived.archived + archived.tombstoned > 0;
  }
  return worked;
}

Result<bool> WorkWaitsForLeader(JobStore& store, int64_t reconcile_due_by_ms) {
  // Not terminal, or a refresh to run (a pending RESOLVE waits on one, even a delayed retry).
  JobFilter f;
  f.waiting_for_leader = true;
  f.include_archived = true;
  f.limit = 1;
  VIGIL_ASSIGN_OR_RETURN(std::vector<JobRecord> waiting, store.List(f));
  if (!waiting.empty()) return true;
  VIGIL_ASSIGN_OR_RETURN(std::vector<JobRecord> reconciles, store.ListReconcileDue(reconcile_due_by_ms, 1));
  return !reconciles.empty();
}

Result<bool> Leader::HasWork() {
  if (runner_.running() > 0) return true;
  // An UNKNOWN job whose next check comes before the idle exit keeps the leader; a later one
  // brings one back with the next command that looks at jobs.
  return WorkWaitsForLeader(*store_, clock_() + options_.idle_exit_ms);
}

void Leader::HeartbeatLoop(int64_t epoch) {
  const int64_t period = std::max<int64_t>(options_.runner.lease_ttl_ms / 3, 10);
  int64_t slept = 0;
  while (!heartbeat_stop_.load()) {
    SleepMs(10);
    slept += 10;
    if (slept < period) continue;
    slept = 0;
    const int64_t now = clock_();
    Result<LeaderLease> renewed =
        store_->RenewLeader(options_.runner.leader_holder, epoch, now, options_.runner.lease_ttl_ms);
    if (!renewed.ok() && renewed.status().code() == StatusCode::kCommitConflict) {
      VIGIL_LOG_WARN("leadership lost: {}", renewed.status().ToString());
      lost_.store(true);
      return;
    }
  }
}

Status Leader::Run() {
  VIGIL_RETURN_IF_ERROR(Start());
  VIGIL_LOG_INFO("leader {} started with epoch {}", options_.runner.leader_holder, runner_.leader_epoch());
  // The epoch is fixed for this leadership; the thread gets a copy (the runner's is not shared).
  std::thread heartbeat([this, epoch = runner_.leader_epoch()] { HeartbeatLoop(epoch); });
  Status result = Status::OK();
  int64_t idle_since = clock_();
  while (!stop_.load()) {
    if (lost_.load()) {
      result = Status::CommitConflict("the leader lease was lost to another process");
      break;
    }
    Result<bool> worked = Tick();
    if (!worked.ok()) {
      result = worked.status();
      break;
    }
    Result<bool> busy = *worked ? Result<bool>(true) : HasWork();
    if (!busy.ok()) {
      result = busy.status();
      break;
    }
    const int64_t now = clock_();
    if (*busy) {
      idle_since = now;
    } else if (options_.idle_exit_ms > 0 && now - idle_since >= options_.idle_exit_ms) {
      VIGIL_LOG_INFO("leader idle for {} ms; exiting", now - idle_since);
      break;
    }
    if (!*worked) SleepMs(options_.poll_interval_ms);
  }
  // Attempts in flight finish and are recorded (Ctrl-C or SIGTERM never abandons a build).
  runner_.WaitForAttempts();
  for (const FinishedAttempt& f : runner_.TakeFinished()) {
    if (!f.status.ok()) VIGIL_LOG_WARN("recording the result of job {}: {}", f.job_id, f.status.ToString());
  }
  stop_.store(true);
  heartbeat_stop_.store(true);
  heartbeat.join();
  // Hand the lease back early so that the next leader need not wait for its expiry.
  if (result.ok()) (void)store_->ReleaseLeader(options_.runner.leader_holder, runner_.leader_epoch(), clock_());
  return result;
}

}  // namespace vigil::jobs

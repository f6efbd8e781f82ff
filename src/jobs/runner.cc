#include "vigil/jobs/runner.h"

#include <unistd.h>

#include <algorithm>
#include <memory>

#include "vigil/common/failpoint.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/logging.h"
#include "vigil/common/uuid.h"
#include "vigil/jobs/version_store.h"

namespace vigil::jobs {

Status JobRunner::Start(int64_t now_ms) {
  // The lease first: a process that cannot lead must not replace the node's epoch.
  VIGIL_ASSIGN_OR_RETURN(LeaderLease lease,
                         store_->AcquireLeader(options_.leader_holder, now_ms, options_.lease_ttl_ms));
  leader_epoch_.store(lease.epoch);
  if (options_.node_epoch > 0) {
    node_epoch_ = options_.node_epoch;
    return Status::OK();
  }
  VIGIL_ASSIGN_OR_RETURN(node_epoch_,
                         store_->RegisterNode(options_.node_id, ::getpid(), options_.node_address, now_ms));
  return Status::OK();
}

Status JobRunner::RenewLeadership(int64_t now_ms) {
  if (leader_epoch_.load() == 0) return Status::FailedPrecondition("the runner was not started");
  VIGIL_ASSIGN_OR_RETURN(LeaderLease lease, store_->RenewLeader(options_.leader_holder, leader_epoch_.load(), now_ms,
                                                                options_.lease_ttl_ms));
  leader_epoch_.store(lease.epoch);
  return Status::OK();
}

index::ProgressFn JobRunner::ProgressRecorder(const JobRecord& job) {
  // At most one write per phase change or per 250 ms; a failed write only loses progress.
  auto last = std::make_shared<std::pair<std::string, int64_t>>("", 0);
  Env* env = options_.env ? options_.env : Env::Default();
  JobStore* store = store_;
  const int64_t job_id = job.job_id;
  const std::string attempt_id = job.attempt ? job.attempt->attempt_id : "";
  return [store, env, job_id, attempt_id, last](std::string_view phase, uint64_t done, uint64_t total) {
    const int64_t now = env->MonotonicMs();
    if (phase == last->first && now - last->second < 250 && done < total) return;
    last->first = std::string(phase);
    last->second = now;
    (void)store->RecordProgress(job_id, attempt_id, std::string(phase), static_cast<int64_t>(done),
                                static_cast<int64_t>(total));
  };
}

JobRunner::~JobRunner() { WaitForAttempts(); }

Result<std::set<std::string>> JobRunner::BusyTables() {
  JobFilter filter;
  filter.state = "RUNNING";
  filter.limit = kMaxListLimit;
  std::set<std::string> busy;
  VIGIL_RETURN_IF_ERROR(store_->ForEach(filter, [&busy](const JobRecord& j) {
    if (j.state.execution == Execution::kRunning) busy.insert(j.spec.table_incarnation);
    return Status::OK();
  }));
  return busy;
}

Result<std::optional<JobRunner::Dispatched>> JobRunner::DispatchNext(int64_t now_ms,
                                                                     const std::set<std::string>& busy_tables) {
  // The oldest PENDING job whose table has no running attempt, however many jobs wait.
  JobFilter filter;
  filter.state = "PENDING";
  filter.order = JobOrder::kOldestFirst;
  filter.limit = kMaxListLimit;
  std::optional<JobRecord> found;
  const Status kFound = Status::Cancelled("found");
  Status scanned = store_->ForEach(filter, [&](const JobRecord& j) {
    if (j.state.execution != Execution::kPending || busy_tables.count(j.spec.table_incarnation) > 0) {
      return Status::OK();
    }
    found = j;
    return kFound;
  });
  if (!scanned.ok() && !(scanned == kFound)) return scanned;
  if (!found) return std::optional<Dispatched>();
  const JobRecord* next = &*found;

  AttemptIdentity attempt;
  attempt.executor_node_id = options_.node_id;
  attempt.node_epoch = node_epoch_;
  attempt.attempt_id = std::to_string(next->job_id) + "-" + Uuid::Generate().ToString();
  attempt.leader_epoch = leader_epoch_.load();
  attempt.deadline_at_ms = now_ms + options_.attempt_deadline_ms;
  Cas cas{next->job_id, next->revision, leader_epoch_.load(), options_.leader_holder, now_ms};
  // The attempt lock is held before the attempt can be RUNNING, so a free lock
  // of a RUNNING or UNKNOWN attempt proves that nothing of it still runs.
  VIGIL_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(AttemptLockPath(next->spec.locator, attempt.attempt_id)));
  if (Status fp = failpoint::Hit("runner.before_dispatch"); !fp.ok()) return fp;
  // I1: RUNNING with the attempt identity is durable before the executor is called.
  Result<JobRecord> dispatched = store_->Dispatch(cas, attempt);
  if (dispatched.status().code() == StatusCode::kCommitConflict) {
    // The job moved since it was listed (cancelled, or concluded at once as a NOOP by its
    // admission): nothing is dispatched now; the next pass lists afresh.
    VIGIL_LOG_INFO("job {} changed before its dispatch: {}", next->job_id, dispatched.status().message());
    return std::optional<Dispatched>();
  }
  VIGIL_ASSIGN_OR_RETURN(JobRecord running, std::move(dispatched));
  // Crash cut C4: RUNNING is durable, nothing was sent.
  if (Status fp = failpoint::Hit("runner.after_dispatch"); !fp.ok()) return fp;
  return std::optional<Dispatched>(Dispatched{std::move(running), std::move(attempt), std::move(lock), now_ms});
}

Result<JobRecord> JobRunner::ExecuteAndRecord(Dispatched d) {
  const JobRecord& running = d.running;
  const int lock_fd = d.lock.fd();
  const int64_t job_id = running.job_id;
  // The attempt lock records the worker, so that a later leader can stop exactly it.
  auto record_process = [lock_fd, job_id](pid_t pid) {
    Result<ProcessIdentity> who = IdentifyProcess(pid);
    Status st = who.ok() ? RecordAttemptProcess(lock_fd, *who) : who.status();
    if (!st.ok())
      VIGIL_LOG_WARN("job {}: cannot record its worker {} in the attempt lock: {}", job_id, pid, st.ToString());
  };
  // The attempt's claims are judged on the clock its result is recorded at.
  std::function<int64_t()> clock = [t = d.dispatched_at_ms] { return t; };
  if (options_.env != nullptr) clock = [env = options_.env] { return env->NowMs(); };
  ExecutionOutcome outcome =
      executor_->Execute({running, d.attempt, ProgressRecorder(running), lock_fd, record_process,
                          TableDatasetOptions(store_, running.spec.table_incarnation, std::move(clock)).versions});
  Classification c = Classify(running.spec.operation, running.spec.if_mode, outcome.report);
  AttemptReport report;
  report.attempt_id = d.attempt.attempt_id;
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
  report.reconcile_backoff_s = options_.reconcile_backoff.initial_s;
  // Crash cut C6: the attempt ran, its result is not recorded.
  if (Status fp = failpoint::Hit("runner.before_record"); !fp.ok()) return fp;
  // The result is recorded at the time it is known, not at the dispatch time.
  const int64_t recorded_at = options_.env ? options_.env->NowMs() : d.dispatched_at_ms;
  Cas result_cas{running.job_id, running.revision, leader_epoch_.load(), options_.leader_holder, recorded_at};
  VIGIL_ASSIGN_OR_RETURN(JobRecord done, store_->RecordResult(result_cas, report));
  // A known outcome needs no termination proof: the lock goes (an UNKNOWN one keeps it
  // for the reconciler, which removes it after attribution).
  d.lock.Release();
  if (done.state.outcome != Outcome::kUnknown) RemoveAttemptLock(done.spec.locator, d.attempt.attempt_id);
  return done;
}

Result<std::optional<int64_t>> JobRunner::RunOnePending(int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(RenewLeadership(now_ms));
  VIGIL_ASSIGN_OR_RETURN(std::set<std::string> busy, BusyTables());
  VIGIL_ASSIGN_OR_RETURN(std::optional<Dispatched> d, DispatchNext(now_ms, busy));
  if (!d) return std::optional<int64_t>();
  VIGIL_ASSIGN_OR_RETURN(JobRecord done, ExecuteAndRecord(std::move(*d)));
  return std::optional<int64_t>(done.job_id);
}

Result<std::vector<int64_t>> JobRunner::StartPending(int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(RenewLeadership(now_ms));
  std::vector<int64_t> started;
  if (running() >= static_cast<size_t>(std::max(options_.concurrency, 1))) return started;
  VIGIL_ASSIGN_OR_RETURN(std::set<std::string> busy, BusyTables());
  while (running() < static_cast<size_t>(std::max(options_.concurrency, 1))) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<Dispatched> d, DispatchNext(now_ms, busy));
    if (!d) break;
    const int64_t job_id = d->running.job_id;
    busy.insert(d->running.spec.table_incarnation);
    started.push_back(job_id);
    MutexLock lock(&mu_);
    threads_.emplace(job_id, std::thread([this, job_id, dispatched = std::move(*d)]() mutable {
                       Status st = ExecuteAndRecord(std::move(dispatched)).status();
                       MutexLock guard(&mu_);
                       finished_.push_back(FinishedAttempt{job_id, st});
                       auto it = threads_.find(job_id);
                       done_threads_.push_back(std::move(it->second));
                       threads_.erase(it);
                     }));
  }
  return started;
}

std::vector<FinishedAttempt> JobRunner::TakeFinished() {
  std::vector<std::thread> done;
  std::vector<FinishedAttempt> out;
  {
    MutexLock lock(&mu_);
    done.swap(done_threads_);
    out.swap(finished_);
  }
  for (std::thread& t : done) t.join();
  return out;
}

size_t JobRunner::running() const {
  MutexLock lock(&mu_);
  return threads_.size();
}

void JobRunner::WaitForAttempts() {
  // This waits for other threads, not for time: it sleeps for real even under a fake Env.
  while (running() > 0) Env::Default()->SleepForMs(10);
  std::vector<std::thread> done;
  {
    MutexLock lock(&mu_);
    done.swap(done_threads_);
  }
  for (std::thread& t : done) t.join();
}

Result<JobRecord> JobRunner::Refresh(const JobRecord& job, int64_t now_ms) {
  JobRecord running = job;
  // A refresh left RUNNING (its leader died, or RefreshDone failed) is completed at its own
  // generation (crash cuts C9/C10); StartRefresh would refuse it and strand the job.
  if (job.state.refresh != RefreshState::kRunning) {
    Cas cas{job.job_id, job.revision, leader_epoch_.load(), options_.leader_holder, now_ms};
    VIGIL_ASSIGN_OR_RETURN(running, store_->RefreshStart(cas));
    // Crash cuts C9/C10: the refresh is started, its completion is not durable.
    if (Status fp = failpoint::Hit("runner.after_refresh_start"); !fp.ok()) return fp;
  }
  // The refresh itself is the table's refresh-generation bump, made by RefreshDone in the
  // same transaction; serving processes observe the new generation and reopen the table.
  Cas done_cas{running.job_id, running.revision, leader_epoch_.load(), options_.leader_holder, now_ms};
  return store_->RefreshDone(done_cas, running.refresh_generation, /*ok=*/true);
}

namespace {

// A refresh to run now: required, retry-due, or left RUNNING by a dead leader (replayed).
bool RefreshDue(const JobRecord& j, int64_t now_ms) {
  switch (j.state.refresh) {
    case RefreshState::kRequired:
    case RefreshState::kRunning:
      return true;
    case RefreshState::kRetryPending:
      return !j.refresh_next_at_ms || *j.refresh_next_at_ms <= now_ms;
    default:
      return false;
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

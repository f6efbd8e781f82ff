#include "vigil/jobs/runner.h"

#include <unistd.h>

#include <algorithm>
#include <memory>

#include "vigil/common/failpoint.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/logging.h"
#include "vigil/common/uuid.h"

namespace vigil::jobs {

Status JobRunner::Start(int64_t now_ms) {
  // The lease first: a process that cannot lead must not replace the node's epoch.
  VIGIL_ASSIGN_OR_RETURN(LeaderLease lease,
                         store_->cluster().AcquireLeader(options_.leader_holder, now_ms, options_.lease_ttl_ms));
  leader_epoch_.store(lease.epoch);
  if (options_.node_epoch > 0) {
    node_epoch_ = options_.node_epoch;
    return Status::OK();
  }
  VIGIL_ASSIGN_OR_RETURN(node_epoch_,
                         store_->cluster().RegisterNode(options_.node_id, ::getpid(), options_.node_address, now_ms));
  return Status::OK();
}

Status JobRunner::RenewLeadership(int64_t now_ms) {
  if (leader_epoch_.load() == 0) return Status::FailedPrecondition("the runner was not started");
  VIGIL_ASSIGN_OR_RETURN(LeaderLease lease, store_->cluster().RenewLeader(options_.leader_holder, leader_epoch_.load(),
                                                                          now_ms, options_.lease_ttl_ms));
  leader_epoch_.store(lease.epoch);
  return Status::OK();
}

JobRunner::~JobRunner() { WaitForAttempts(); }

Result<JobRunner::RunningJobs> JobRunner::ListRunning() {
  JobFilter filter;
  filter.state = "RUNNING";
  filter.limit = kMaxListLimit;
  RunningJobs running;
  VIGIL_RETURN_IF_ERROR(store_->ForEach(filter, [&running](const JobRecord& j) {
    if (j.state.execution != Execution::kRunning) return Status::OK();
    running.tables.insert(j.spec.table_incarnation);
    if (j.attempt) ++running.per_node[j.attempt->executor_node_id];
    ++running.per_catalog[j.spec.catalog_name];
    ++running.total;
    return Status::OK();
  }));
  return running;
}

Result<std::vector<JobRunner::NodeSlot>> JobRunner::NodeSlots(int64_t now_ms, const RunningJobs& running) {
  std::vector<NodeSlot> slots;
  slots.push_back(NodeSlot{options_.node_id, node_epoch_, std::max(options_.concurrency, 1),
                           static_cast<int64_t>(this->running()), true});
  VIGIL_ASSIGN_OR_RETURN(std::vector<NodeInfo> nodes, store_->cluster().ListNodes());
  VIGIL_ASSIGN_OR_RETURN(const int64_t lease_now, store_->cluster().LeaseClockMs(now_ms));
  for (const NodeInfo& n : nodes) {
    // Alive while its last heartbeat is younger than one lease, on the lease clock.
    const bool alive = n.heartbeat_at_ms + options_.lease_ttl_ms > lease_now;
    if (n.node_id == options_.node_id) {
      if (n.draining) slots.front().capacity = 0;  // a drained leader runs no new attempt either
      continue;
    }
    if (!alive || n.draining || n.capacity <= 0) continue;
    auto it = running.per_node.find(n.node_id);
    slots.push_back(NodeSlot{n.node_id, n.epoch, n.capacity, it == running.per_node.end() ? 0 : it->second, false});
  }
  return slots;
}

Result<std::optional<AttemptRun>> JobRunner::DispatchNext(int64_t now_ms, RunningJobs* running,
                                                          std::vector<NodeSlot>* slots) {
  const std::set<std::string>& busy_tables = running->tables;
  // The least loaded slot that can take job `j` (this node first on a tie): another node's only
  // when the store fences the job's commits; none while the cluster or the job's catalog runs
  // its bound of attempts.
  auto place = [&](const JobRecord& j) -> NodeSlot* {
    if (running->total >= options_.concurrency_per_cluster) return nullptr;
    if (auto it = running->per_catalog.find(j.spec.catalog_name);
        it != running->per_catalog.end() && it->second >= options_.concurrency_per_catalog) {
      return nullptr;
    }
    const bool fenced = j.spec.engine == index::TableEngine::kVigil && options_.commits_fenced(j.provider);
    NodeSlot* best = nullptr;
    for (NodeSlot& slot : *slots) {
      if (slot.running >= slot.capacity || (!slot.local && !fenced)) continue;
      if (best == nullptr || slot.running * best->capacity < best->running * slot.capacity) best = &slot;
    }
    return best;
  };
  // The oldest PENDING job whose table has no running attempt and that a slot can take.
  JobFilter filter;
  filter.state = "PENDING";
  filter.order = JobOrder::kOldestFirst;
  filter.limit = kMaxListLimit;
  std::optional<JobRecord> found;
  NodeSlot* target = nullptr;
  const Status kFound = Status::Cancelled("found");
  Status scanned = store_->ForEach(filter, [&](const JobRecord& j) {
    if (j.state.execution != Execution::kPending || busy_tables.count(j.spec.table_incarnation) > 0) {
      return Status::OK();
    }
    target = place(j);
    if (target == nullptr) return Status::OK();
    found = j;
    return kFound;
  });
  if (!scanned.ok() && !(scanned == kFound)) return scanned;
  if (!found) return std::optional<AttemptRun>();
  const JobRecord* next = &*found;

  AttemptIdentity attempt;
  attempt.executor_node_id = target->node_id;
  attempt.node_epoch = target->epoch;
  attempt.attempt_id = std::to_string(next->job_id) + "-" + Uuid::Generate().ToString();
  attempt.leader_epoch = leader_epoch_.load();
  attempt.deadline_at_ms = now_ms + options_.attempt_deadline_ms;
  Cas cas{next->job_id, next->revision, leader_epoch_.load(), options_.leader_holder, now_ms};
  // The attempt lock of a local attempt is held before the attempt can be RUNNING, so a free
  // lock of a RUNNING or UNKNOWN local attempt proves that nothing of it still runs. Another
  // node's agent takes the lock itself; its attempts are settled by that node's liveness.
  std::optional<FileLock> lock;
  if (target->local) {
    VIGIL_ASSIGN_OR_RETURN(lock, FileLock::Acquire(AttemptLockPath(next->spec, attempt.attempt_id)));
    if (options_.claimed != nullptr) options_.claimed->Claim(attempt.attempt_id);
  }
  if (Status fp = failpoint::Hit("runner.before_dispatch"); !fp.ok()) return fp;
  // I1: RUNNING with the attempt identity is durable before the executor is called.
  Result<JobRecord> dispatched = store_->Dispatch(cas, attempt);
  if (!dispatched.ok() && options_.claimed != nullptr) options_.claimed->Finished(attempt.attempt_id);
  if (dispatched.status().code() == StatusCode::kCommitConflict) {
    // The job moved since it was listed (cancelled, or concluded at once as a NOOP by its
    // admission): nothing is dispatched now; the next pass lists afresh.
    VIGIL_LOG_INFO("job {} changed before its dispatch: {}", next->job_id, dispatched.status().message());
    return std::optional<AttemptRun>();
  }
  VIGIL_ASSIGN_OR_RETURN(JobRecord dispatched_job, std::move(dispatched));
  ++target->running;
  ++running->total;
  ++running->per_catalog[next->spec.catalog_name];
  running->tables.insert(next->spec.table_incarnation);
  // Crash cut C4: RUNNING is durable, nothing was sent.
  if (Status fp = failpoint::Hit("runner.after_dispatch"); !fp.ok()) return fp;
  if (!target->local) VIGIL_LOG_INFO("job {} dispatched to node {}", dispatched_job.job_id, target->node_id);
  AttemptRun run;
  run.running = std::move(dispatched_job);
  if (lock) run.lock = std::move(*lock);
  run.actor = options_.leader_holder;
  run.reconcile_backoff_s = options_.reconcile_backoff.initial_s;
  run.env = options_.env;
  run.dispatched_at_ms = now_ms;
  return std::optional<AttemptRun>(std::move(run));
}

Result<JobRecord> JobRunner::Execute(AttemptRun run) {
  const std::string attempt_id = run.running.attempt->attempt_id;
  Result<JobRecord> done = ExecuteAttempt(store_, executor_, std::move(run));
  if (options_.claimed != nullptr) options_.claimed->Finished(attempt_id);
  return done;
}

Result<std::optional<int64_t>> JobRunner::RunOnePending(int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(RenewLeadership(now_ms));
  VIGIL_ASSIGN_OR_RETURN(RunningJobs running, ListRunning());
  // One attempt on this thread: this node alone.
  std::vector<NodeSlot> slots{NodeSlot{options_.node_id, node_epoch_, 1, 0, true}};
  VIGIL_ASSIGN_OR_RETURN(std::optional<AttemptRun> d, DispatchNext(now_ms, &running, &slots));
  if (!d) return std::optional<int64_t>();
  VIGIL_ASSIGN_OR_RETURN(JobRecord done, Execute(std::move(*d)));
  return std::optional<int64_t>(done.job_id);
}

Result<std::vector<int64_t>> JobRunner::StartPending(int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(RenewLeadership(now_ms));
  std::vector<int64_t> started;
  VIGIL_ASSIGN_OR_RETURN(RunningJobs running, ListRunning());
  VIGIL_ASSIGN_OR_RETURN(std::vector<NodeSlot> slots, NodeSlots(now_ms, running));
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<AttemptRun> d, DispatchNext(now_ms, &running, &slots));
    if (!d) break;
    const int64_t job_id = d->running.job_id;
    started.push_back(job_id);
    const AttemptIdentity& attempt = *d->running.attempt;
    if (attempt.executor_node_id != options_.node_id || attempt.node_epoch != node_epoch_) continue;
    MutexLock lock(&mu_);
    threads_.emplace(job_id, std::thread([this, job_id, run = std::move(*d)]() mutable {
                       Status st = Execute(std::move(run)).status();
                       MutexLock guard(&mu_);
                       finished_.push_back(FinishedAttempt{job_id, st});
                       auto it = threads_.find(job_id);
                       done_threads_.push_back(std::move(it->second));
                       threads_.erase(it);
                       attempt_ended_.notify_all();
                     }));
  }
  VIGIL_RETURN_IF_ERROR(ExpireUnscheduled(now_ms).status());
  return started;
}

Result<int64_t> JobRunner::ExpireUnscheduled(int64_t now_ms) {
  if (options_.max_pending_ms <= 0) return 0;
  JobFilter filter;
  filter.state = "PENDING";
  filter.order = JobOrder::kOldestFirst;
  filter.limit = kMaxListLimit;
  std::vector<JobRecord> expired;
  VIGIL_RETURN_IF_ERROR(store_->ForEach(filter, [&](const JobRecord& j) {
    if (j.state.execution == Execution::kPending && now_ms - j.created_at_ms >= options_.max_pending_ms) {
      expired.push_back(j);
    }
    return Status::OK();
  }));
  int64_t ended = 0;
  for (const JobRecord& j : expired) {
    Cas cas{j.job_id, j.revision, leader_epoch_.load(), options_.leader_holder, now_ms};
    Result<JobRecord> done = store_->ExhaustScheduling(
        cas,
        "no node took the job within [jobs] max_pending_seconds = " + std::to_string(options_.max_pending_ms / 1000) +
            " (every node drained or of capacity 0, or a concurrency bound kept it waiting); nothing was run");
    if (done.status().code() == StatusCode::kCommitConflict) continue;  // it moved meanwhile
    VIGIL_RETURN_IF_ERROR(done.status());
    VIGIL_LOG_WARN("job {} ended SCHEDULING_EXHAUSTED after {} ms pending", j.job_id, now_ms - j.created_at_ms);
    ++ended;
  }
  return ended;
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
  // This waits for other threads, not for time: each one's end is notified.
  std::vector<std::thread> done;
  {
    MutexLock lock(&mu_);
    lock.Wait(attempt_ended_, [this]() VIGIL_REQUIRES(mu_) { return threads_.empty(); });
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

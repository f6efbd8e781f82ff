#include "vigil/jobs/leader.h"

#include <algorithm>
#include <limits>
#include <string>
#include <thread>

#include "vigil/common/failpoint.h"
#include "vigil/common/logging.h"

namespace vigil::jobs {

namespace {

// The runner and the reconciler run on the leader's Env; the runner uses its reconcile schedule.
LeaderOptions WithEnv(LeaderOptions o, Env* env) {
  o.runner.env = env;
  o.runner.reconcile_backoff = o.reconcile.backoff;
  o.runner.commits_fenced = o.reconcile.commits_fenced;
  o.reconcile.env = env;
  return o;
}

}  // namespace

Leader::Leader(JobStore* store, Executor* executor, LeaderOptions options, Env* env)
    : store_(store),
      executor_(executor),
      options_(WithEnv(std::move(options), env)),
      env_(env),
      runner_(store, executor, options_.runner) {}

Leader::~Leader() = default;

Status Leader::Start() {
  VIGIL_RETURN_IF_ERROR(TakeLease());
  return RecoveryPass();
}

Status Leader::TakeLease() {
  Result<LeaderLease> current = store_->cluster().GetLeader();
  VIGIL_RETURN_IF_ERROR(current.status());
  // Sent before the lease is taken: the lease cannot lapse before this plus its ttl.
  renewal_sent_ms_.store(env_->NowMs());
  VIGIL_ASSIGN_OR_RETURN(const int64_t now, store_->cluster().LeaseClockMs(env_->NowMs()));
  const bool held_by_other = current->holder != options_.runner.leader_holder && current->expires_at_ms > now;
  if (held_by_other && options_.holder_is_dead && options_.holder_is_dead(*current)) {
    VIGIL_LOG_INFO("taking over the lease of {} (epoch {}), which is gone", current->holder, current->epoch);
    VIGIL_RETURN_IF_ERROR(
        store_->cluster()
            .TakeOverLeader(options_.runner.leader_holder, *current, now, options_.runner.lease_ttl_ms)
            .status());
  } else if (held_by_other) {
    return Status::Busy("the leader lease is held by " + current->holder + " (epoch " + std::to_string(current->epoch) +
                        ") until " + std::to_string(current->expires_at_ms));
  }
  VIGIL_RETURN_IF_ERROR(runner_.Start(now));
  ReconcilerOptions reconcile = options_.reconcile;
  reconcile.node_id = options_.runner.node_id;
  reconcile.node_epoch = runner_.node_epoch();
  reconcile.node_ttl_ms = options_.runner.lease_ttl_ms;
  reconciler_ = std::make_unique<Reconciler>(
      store_, options_.runner.leader_holder, [this] { return runner_.leader_epoch(); }, reconcile);
  return Status::OK();
}

Status Leader::RecoveryPass() {
  // Cancels left half-done (crash cut C3), dead attempts, termination proofs, provenance
  // reads, then pending refreshes.
  VIGIL_FAILPOINT("leader.recovery_pass");
  VIGIL_RETURN_IF_ERROR(CompleteCancels());
  VIGIL_RETURN_IF_ERROR(reconciler_->Recover(env_->NowMs()));
  VIGIL_RETURN_IF_ERROR(runner_.RunRefreshes(env_->NowMs()).status());
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
    Result<JobRecord> done =
        store_->CompleteCancel({j.job_id, j.revision, std::nullopt, options_.runner.leader_holder, env_->NowMs()});
    if (!done.ok() && done.status().code() != StatusCode::kCommitConflict) return done.status();
  }
  return Status::OK();
}

Result<bool> Leader::Tick() {
  bool worked = false;
  for (const FinishedAttempt& f : runner_.TakeFinished()) {
    worked = true;
    if (!f.status.ok()) {
      VIGIL_LOG_WARN("recording the result of job {}: {}", f.job_id, f.status.ToString());
      // A refused record means another leader holds the lease: this one stops.
      if (f.status.code() == StatusCode::kCommitConflict) return f.status;
      continue;
    }
    // An attempt that ended UNKNOWN was reaped (its lock is free): settle it now, not after a backoff.
    Status examined = reconciler_->ExamineJob(f.job_id, env_->NowMs());
    if (examined.code() == StatusCode::kCommitConflict) return examined;
    if (!examined.ok()) VIGIL_LOG_WARN("reconciling job {}: {}", f.job_id, examined.ToString());
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> started, runner_.StartPending(env_->NowMs()));
  worked |= !started.empty();
  VIGIL_ASSIGN_OR_RETURN(int refreshed, runner_.RunRefreshes(env_->NowMs()));
  worked |= refreshed > 0;
  Result<int> examined = reconciler_->RunDue(env_->NowMs());
  if (!examined.ok()) {
    if (examined.status().code() == StatusCode::kCommitConflict) return examined.status();
    VIGIL_LOG_WARN("reconciliation pass: {}", examined.status().ToString());
  }
  const int64_t now = env_->NowMs();
  if (now - last_archive_ms_ >= options_.archive_interval_ms) {
    last_archive_ms_ = now;
    VIGIL_ASSIGN_OR_RETURN(ArchiveResult archived, store_->Archive(now - options_.retention_ms, now));
    worked |= archived.archived + archived.tombstoned > 0;
  }
  return worked;
}

std::string LeaderHolderName(const std::string& kind, const std::string& node_id, int64_t pid,
                             const std::string& suffix) {
  return kind + ":" + node_id + ":" + std::to_string(pid) + ":" + suffix;
}

std::string NodeOfLeaderHolder(const std::string& holder) {
  const size_t first = holder.find(':');
  const size_t last = holder.rfind(':');
  if (first == std::string::npos || last == first) return "";
  const size_t pid = holder.rfind(':', last - 1);
  if (pid == std::string::npos || pid <= first) return "";
  return holder.substr(first + 1, pid - first - 1);
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
  return WorkWaitsForLeader(*store_, env_->NowMs() + options_.idle_exit_ms);
}

void Leader::HeartbeatLoop(int64_t epoch) {
  const int64_t period = std::max<int64_t>(options_.runner.lease_ttl_ms / 3, 10);
  int64_t last_try = env_->NowMs();
  while (!heartbeat_stop_.load()) {
    env_->SleepForMs(10);
    const int64_t sent = env_->NowMs();
    // After a failed renewal the next try comes sooner, so a short store outage costs little.
    const bool failing = sent - renewal_sent_ms_.load() > period;
    if (sent - last_try < (failing ? std::max<int64_t>(period / 4, 10) : period)) continue;
    last_try = sent;
    Result<LeaderLease> renewed =
        store_->cluster().RenewLeader(options_.runner.leader_holder, epoch, sent, options_.runner.lease_ttl_ms);
    if (renewed.ok()) {
      renewal_sent_ms_.store(sent);
      Status node = store_->cluster().Heartbeat(options_.runner.node_id, runner_.node_epoch(), sent);
      if (!node.ok()) VIGIL_LOG_WARN("node heartbeat of {}: {}", options_.runner.node_id, node.ToString());
    } else if (renewed.status().code() == StatusCode::kCommitConflict) {
      FenceSelf("leadership lost: " + renewed.status().ToString());
      return;
    } else {
      VIGIL_LOG_WARN("renewing the leader lease (epoch {}): {}", epoch, renewed.status().ToString());
    }
  }
}

void Leader::WatchdogLoop() {
  // The lease lapses no earlier than its ttl after the last renewal that succeeded was sent;
  // the leader fences itself a sixth of the ttl before then, whatever the store does.
  const int64_t ttl = options_.runner.lease_ttl_ms;
  const int64_t fence_after = ttl - std::max<int64_t>(ttl / 6, 10);
  while (!heartbeat_stop_.load() && !lost_.load()) {
    env_->SleepForMs(10);
    const int64_t since = env_->NowMs() - renewal_sent_ms_.load();
    if (since >= fence_after) {
      FenceSelf("the leader lease was not renewed for " + std::to_string(since) + " ms (ttl " + std::to_string(ttl) +
                " ms)");
      return;
    }
  }
}

void Leader::FenceSelf(const std::string& why) {
  if (lost_.exchange(true)) return;
  VIGIL_LOG_ERROR("fencing this leader: {}; its workers are killed and it dispatches nothing more", why);
  executor_->Fence();
}

Status Leader::Run() {
  VIGIL_RETURN_IF_ERROR(TakeLease());
  VIGIL_LOG_INFO("leader {} started with epoch {}", options_.runner.leader_holder, runner_.leader_epoch());
  // The lease is renewed from here on, so a recovery pass longer than the lease keeps it.
  // The epoch is fixed for this leadership; the thread gets a copy (the runner's is not shared).
  std::thread heartbeat([this, epoch = runner_.leader_epoch()] { HeartbeatLoop(epoch); });
  // Where a live holder can be proven dead (an embedded root's leader lock), nobody takes the
  // lease from a leader that merely failed to renew it, so only a shared store needs the watchdog.
  std::thread watchdog;
  if (!options_.holder_is_dead) watchdog = std::thread([this] { WatchdogLoop(); });
  Status result = RecoveryPass();
  if (!result.ok()) stop_.store(true);
  int64_t idle_since = env_->NowMs();
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
    const int64_t now = env_->NowMs();
    if (*busy) {
      idle_since = now;
    } else if (options_.idle_exit_ms > 0 && now - idle_since >= options_.idle_exit_ms) {
      VIGIL_LOG_INFO("leader idle for {} ms; exiting", now - idle_since);
      // Test hook: the leader has decided to exit and still holds its lock.
      (void)failpoint::Hit("leader.idle_exit");
      break;
    }
    if (!*worked) env_->SleepForMs(options_.poll_interval_ms);
  }
  // Attempts in flight finish and are recorded (Ctrl-C or SIGTERM never abandons a build).
  runner_.WaitForAttempts();
  for (const FinishedAttempt& f : runner_.TakeFinished()) {
    if (!f.status.ok()) VIGIL_LOG_WARN("recording the result of job {}: {}", f.job_id, f.status.ToString());
  }
  stop_.store(true);
  heartbeat_stop_.store(true);
  heartbeat.join();
  if (watchdog.joinable()) watchdog.join();
  // Hand the lease back early so that the next leader need not wait for its expiry.
  if (result.ok())
    (void)store_->cluster().ReleaseLeader(options_.runner.leader_holder, runner_.leader_epoch(), env_->NowMs());
  return result;
}

}  // namespace vigil::jobs

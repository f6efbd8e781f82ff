// The leader: the one process of a root (or of a shared metadata store) that
// dispatches index jobs. It holds the leader lease, runs a recovery pass first
// (dead attempts, termination proofs, provenance reads, pending refreshes), then
// loops: dispatch PENDING jobs (JobRunner: tables in parallel up to the
// runner's concurrency, one attempt per table), examine attempts that ended,
// run refreshes, reconcile UNKNOWN jobs whose watcher is due, archive old
// terminal jobs. A heartbeat thread renews the lease while attempts run and
// fences the leader (kills its workers through Executor::Fence, stops
// dispatching) once another holds it; without a holder_is_dead proof (a shared
// store) a watchdog also fences it before an unrenewed lease could lapse; a
// stop lets running attempts finish and records them. `vigil
// supervise` and `vigil serve` run a Leader; nothing else dispatches.
// Thread safety: Run is called from one thread; RequestStop from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "vigil/common/env.h"
#include "vigil/common/status.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/reconciler.h"
#include "vigil/jobs/runner.h"

namespace vigil::jobs {

struct LeaderOptions {
  RunnerOptions runner;
  ReconcilerOptions reconcile;
  int64_t poll_interval_ms = 200;
  int64_t idle_exit_ms = 60'000;            // exit after this long with nothing to do; 0: never
  int64_t retention_ms = 7LL * 86'400'000;  // terminal jobs archive after this long
  int64_t archive_interval_ms = 60'000;
  // Proves a live lease's holder dead so that Start takes over at once (an embedded root's
  // leaders all hold the root's leader lock; the one that has it knows the previous one is gone).
  std::function<bool(const LeaderLease&)> holder_is_dead;
};

// The lease holder name of a leader: "<kind>:<node id>:<pid>:<suffix>" (the suffix tells two
// leaderships of one process apart). NodeOfLeaderHolder gives back the node id ("" for a
// name not of this form).
std::string LeaderHolderName(const std::string& kind, const std::string& node_id, int64_t pid,
                             const std::string& suffix);
std::string NodeOfLeaderHolder(const std::string& holder);

// Whether a job needs a leader: PENDING or RUNNING jobs, refreshes to run (now or after a
// retry delay), or UNKNOWN jobs whose reconciliation is due by `reconcile_due_by_ms`.
Result<bool> WorkWaitsForLeader(JobStore& store, int64_t reconcile_due_by_ms);

class Leader {
 public:
  // `env` is the clock and the sleeps of the leader, its runner and its reconciler
  // (it replaces options.runner.env and options.reconcile.env).
  Leader(JobStore* store, Executor* executor, LeaderOptions options, Env* env = Env::Default());
  ~Leader();

  // Registers the node, takes the lease (Busy naming the live holder otherwise)
  // and runs the recovery pass.
  Status Start();
  // One round of work; true when it changed anything. CommitConflict when leadership is lost.
  Result<bool> Tick();
  // Start (renewing the lease from the moment it is taken, so a long recovery pass keeps it),
  // then Tick until RequestStop, lost leadership (an error) or the idle exit; then waits for
  // running attempts and records them.
  Status Run();
  void RequestStop() { stop_.store(true); }
  // Waits until every attempt started by Tick has finished (its result is taken by the next
  // Tick). For callers that drive Tick themselves.
  void WaitForAttempts() { runner_.WaitForAttempts(); }
  int64_t leader_epoch() const { return runner_.leader_epoch(); }

 private:
  // Start's halves: registers the node and takes the lease; then the recovery pass.
  Status TakeLease();
  Status RecoveryPass();
  // Finishes every durable CANCELLING as CANCELLED_BEFORE_DISPATCH (it was never sent).
  Status CompleteCancels();
  // Whether any job still needs this leader (pending, running or a refresh to run).
  Result<bool> HasWork();
  // Renews the lease of `epoch`; fences the leader when another process holds it.
  void HeartbeatLoop(int64_t epoch);
  // Fences the leader before its lease can lapse when renewals fail (the store unreachable).
  void WatchdogLoop();
  // Sets lost_ and kills the running attempts' workers (once).
  void FenceSelf(const std::string& why);

  JobStore* store_;
  Executor* executor_;
  LeaderOptions options_;
  Env* const env_;
  JobRunner runner_;
  std::unique_ptr<Reconciler> reconciler_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> heartbeat_stop_{false};  // after the last attempt is recorded
  std::atomic<bool> lost_{false};
  std::atomic<int64_t> renewal_sent_ms_{0};  // Env time the last successful renewal was sent
  int64_t last_archive_ms_ = 0;
};

}  // namespace vigil::jobs

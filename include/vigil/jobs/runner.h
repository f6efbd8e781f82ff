// The leader's job runner: holds the leader lease, dispatches pending jobs
// (T3: RUNNING with attempt identity, node epoch, leader epoch and deadline is
// durable before the executor is called — I1), classifies and records each
// executor report (T4-T8), and runs required refreshes (T11: bump the table's
// refresh generation). A dispatched job is never dispatched again (I2). Jobs
// on different tables run at once; a table has at most one running attempt.
// Each attempt goes to the least loaded node with a free slot: this node (up to
// `concurrency`, each attempt on its own thread here) or another live, undrained
// node whose agent runs attempts (node_agent.h; up to its registered capacity),
// the latter only for providers whose commits the store fences. The reconciler
// for UNKNOWN jobs (and for attempts of nodes that died) is separate.
// Thread safety: one thread drives a runner (its attempt threads only record
// results and report back); the store and the executor are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vigil/common/env.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/jobs/attempt_execution.h"
#include "vigil/jobs/backoff.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_store.h"

namespace vigil::jobs {

struct RunnerOptions {
  std::string node_id = "local";
  std::string node_address = "localhost";  // where the node serves, for the node registry
  int64_t node_epoch = 0;                  // > 0: the node registered itself (vigil serve); else Start registers it
  std::string leader_holder = "local-runner";
  int64_t lease_ttl_ms = 30'000;
  int64_t attempt_deadline_ms = 3'600'000;
  int concurrency = 1;  // attempts StartPending keeps running here at once (jobs.concurrency_per_node)
  // Attempts running at once in the whole cluster and per catalog (jobs.concurrency_per_cluster,
  // jobs.concurrency_per_catalog; seed 000 section 10.2), beside each node's own bound.
  int64_t concurrency_per_cluster = 64;
  int64_t concurrency_per_catalog = 64;
  // A job still PENDING this long after its admission is ended NOT_COMMITTED / NOT_REQUIRED with
  // error SCHEDULING_EXHAUSTED (seed 000: scheduling-policy exhaustion is one terminal
  // transition); jobs.max_pending_seconds. 0: a job waits for a slot as long as it takes.
  int64_t max_pending_ms = 0;
  // Attempts this process runs: the runner claims its own before dispatching them, so that
  // the node agent of the same process never runs them too. May be null (no agent).
  ClaimedAttempts* claimed = nullptr;
  // Whether an attempt of a provider may run on another node: its commit must be fenced by
  // the store, since only then does the leader settle it without that node's attempt lock.
  std::function<bool(std::string_view provider)> commits_fenced = CommitsAreFenced;
  Backoff reconcile_backoff;  // the first watcher check of an attempt that ends UNKNOWN
  // The clock an attempt's result is recorded at, its progress throttling and the file system
  // its attempt lock is removed through. Null: throttled on and removed through Env::Default(),
  // results recorded at the time the attempt was dispatched at (tests with a logical clock).
  Env* env = nullptr;
};

// An attempt whose result was recorded (or could not be).
struct FinishedAttempt {
  int64_t job_id = 0;
  Status status;  // the recording's status; CommitConflict means leadership was lost
};

class JobRunner {
 public:
  JobRunner(JobStore* store, Executor* executor, RunnerOptions options)
      : store_(store), executor_(executor), options_(std::move(options)) {}
  ~JobRunner();  // waits for running attempts

  // Registers this node (a new node epoch) and takes or renews the leader lease.
  Status Start(int64_t now_ms);
  // Dispatches the oldest PENDING job, if any, runs it on this thread and records its
  // result. Returns its id.
  Result<std::optional<int64_t>> RunOnePending(int64_t now_ms);
  // Dispatches PENDING jobs, oldest first, skipping tables that have a running attempt,
  // while a node has a free slot: this node's attempts run and record on their own threads,
  // another node's agent runs its own. Returns the ids dispatched now.
  Result<std::vector<int64_t>> StartPending(int64_t now_ms);
  // Attempts finished since the last call.
  std::vector<FinishedAttempt> TakeFinished();
  // Attempts running on this runner's threads (not those dispatched to other nodes).
  size_t running() const;
  // Waits until every attempt thread has finished.
  void WaitForAttempts();
  // Runs every required or retry-due refresh once. Returns how many completed.
  Result<int> RunRefreshes(int64_t now_ms);
  int64_t leader_epoch() const { return leader_epoch_.load(); }
  // The node epoch attempts are dispatched under (set by Start).
  int64_t node_epoch() const { return node_epoch_; }

 private:
  // A node that can take attempts now.
  struct NodeSlot {
    std::string node_id;
    int64_t epoch = 0;
    int64_t capacity = 0;
    int64_t running = 0;
    bool local = false;  // this runner's node: its attempts run on this runner's threads
  };
  // Table incarnations with a RUNNING job, and RUNNING attempts per executor node.
  struct RunningJobs {
    std::set<std::string> tables;
    std::map<std::string, int64_t> per_node;
    std::map<std::string, int64_t> per_catalog;
    int64_t total = 0;
  };
  Status RenewLeadership(int64_t now_ms);
  // This node first, then every other live, undrained node with a registered capacity.
  Result<std::vector<NodeSlot>> NodeSlots(int64_t now_ms, const RunningJobs& running);
  // T3 for the oldest PENDING job whose table is not busy and that some slot can take, on the
  // least loaded such slot (this node on a tie). A local attempt holds its lock and claim.
  // The cluster and catalog caps count `running`, which a dispatch updates.
  Result<std::optional<AttemptRun>> DispatchNext(int64_t now_ms, RunningJobs* running, std::vector<NodeSlot>* slots);
  // Ends every job PENDING for longer than max_pending_ms (SCHEDULING_EXHAUSTED); how many.
  Result<int64_t> ExpireUnscheduled(int64_t now_ms);
  Result<RunningJobs> ListRunning();
  Result<JobRecord> Refresh(const JobRecord& job, int64_t now_ms);
  // Runs a local attempt to its recorded result.
  Result<JobRecord> Execute(AttemptRun run);

  JobStore* store_;
  Executor* executor_;
  RunnerOptions options_;
  // Renewed by the leading thread while attempt threads stamp their results with it.
  std::atomic<int64_t> leader_epoch_{0};
  int64_t node_epoch_ = 0;
  mutable Mutex mu_;
  std::map<int64_t, std::thread> threads_ VIGIL_GUARDED_BY(mu_);  // job id -> its attempt thread
  std::vector<FinishedAttempt> finished_ VIGIL_GUARDED_BY(mu_);
  std::vector<std::thread> done_threads_ VIGIL_GUARDED_BY(mu_);  // finished, to be joined
  std::condition_variable attempt_ended_;                        // an attempt thread left threads_
};

}  // namespace vigil::jobs

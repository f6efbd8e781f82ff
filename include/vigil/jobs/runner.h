// The leader's job runner: holds the leader lease, dispatches pending jobs
// (T3: RUNNING with attempt identity, node epoch, leader epoch and deadline is
// durable before the executor is called — I1), classifies and records each
// executor report (T4-T8), and runs required refreshes (T11: bump the table's
// refresh generation). A dispatched job is never dispatched again (I2). Jobs
// on different tables run at once, up to a concurrency, each attempt on its
// own thread; a table has at most one running attempt. The reconciler for
// UNKNOWN jobs is separate.
// Thread safety: one thread drives a runner (its attempt threads only record
// results and report back); the store and the executor are thread-safe.
#pragma once

#include <atomic>
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
  int concurrency = 1;        // attempts StartPending keeps running at once (jobs.concurrency_per_node)
  Backoff reconcile_backoff;  // the first watcher check of an attempt that ends UNKNOWN
  // The clock an attempt's result is recorded at, and the sleeps and progress throttling.
  // Null: sleeps on Env::Default() and results recorded at the time the attempt was
  // dispatched at (tests with a logical clock).
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
  // until options.concurrency attempts run; each runs and records on its own thread.
  // Returns the ids dispatched now.
  Result<std::vector<int64_t>> StartPending(int64_t now_ms);
  // Attempts finished since the last call.
  std::vector<FinishedAttempt> TakeFinished();
  // Attempts running on this runner's threads.
  size_t running() const;
  // Waits until every attempt thread has finished.
  void WaitForAttempts();
  // Runs every required or retry-due refresh once. Returns how many completed.
  Result<int> RunRefreshes(int64_t now_ms);
  int64_t leader_epoch() const { return leader_epoch_.load(); }
  // The node epoch attempts are dispatched under (set by Start).
  int64_t node_epoch() const { return node_epoch_; }

 private:
  struct Dispatched {
    JobRecord running;
    AttemptIdentity attempt;
    FileLock lock;
    int64_t dispatched_at_ms = 0;
  };
  Status RenewLeadership(int64_t now_ms);
  // T3 for the oldest PENDING job whose table is not in `busy_tables` (table incarnations).
  Result<std::optional<Dispatched>> DispatchNext(int64_t now_ms, const std::set<std::string>& busy_tables);
  // Executes a dispatched attempt and records its classified result (T4-T8).
  Result<JobRecord> ExecuteAndRecord(Dispatched d);
  // Table incarnations with a RUNNING job.
  Result<std::set<std::string>> BusyTables();
  Result<JobRecord> Refresh(const JobRecord& job, int64_t now_ms);
  // Forwards an attempt's progress to the job record, throttled.
  index::ProgressFn ProgressRecorder(const JobRecord& job);

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
};

}  // namespace vigil::jobs

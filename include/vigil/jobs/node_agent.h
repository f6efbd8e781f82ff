// The node agent: runs, on this node, the attempts a leader assigned to it (a
// RUNNING job whose attempt names this node and node epoch), each in this
// node's own isolated worker on a thread of its own, up to the node's
// registered capacity, and records each result under the attempt's leader epoch
// (so a result of a leadership that lapsed is refused). An attempt this
// process's own leader dispatched to itself is claimed by that leader's runner
// and never run here too (ClaimedAttempts). A node whose heartbeats fail for
// most of a lease kills its workers and takes nothing new until a heartbeat
// succeeds again: by the time the leader may settle its attempts (the node's
// heartbeat one lease old), they are dead, and their commits are refused anyway.
// Thread safety: Start/Stop from one thread; HeartbeatSucceeded from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vigil/common/env.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/jobs/attempt_execution.h"
#include "vigil/jobs/backoff.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_store.h"

namespace vigil::jobs {

struct NodeAgentOptions {
  std::string node_id;
  int64_t node_epoch = 0;         // the epoch RegisterNode gave this process
  int concurrency = 1;            // attempts at once: the capacity the node registered
  int64_t lease_ttl_ms = 30'000;  // a node whose heartbeat is this old is settled by the leader
  int64_t poll_interval_ms = 200;
  Backoff reconcile_backoff;           // an UNKNOWN result's later watcher checks
  ClaimedAttempts* claimed = nullptr;  // shared with this process's leader; required
  Env* env = Env::Default();
};

class NodeAgent {
 public:
  // A fresh executor; called at start and after each fence (a fenced executor refuses work).
  using ExecutorFactory = std::function<Result<std::unique_ptr<Executor>>()>;

  NodeAgent(JobStore* store, ExecutorFactory make_executor, NodeAgentOptions options);
  ~NodeAgent();  // Stop()

  // Makes the first executor (Poll works from then on).
  Status Open();
  // Open, then polls every poll interval (of the options' Env) on a thread of its own.
  Status Start();
  // Stops taking attempts, waits for the running ones and their records.
  void Stop();
  // One pass: starts every attempt newly assigned to this node epoch while there is room.
  // Returns the ids started. Nothing while the node is fenced.
  Result<std::vector<int64_t>> Poll();
  // The node's heartbeat sent at `sent_ms` (the Env's time) succeeded.
  void HeartbeatSucceeded(int64_t sent_ms);
  // Kills the workers and takes nothing new once no heartbeat succeeded for the lease less a
  // sixth; takes work again (with a new executor) after the next success. Returns whether fenced.
  bool FenceIfLapsed();
  size_t running() const;
  void WaitForAttempts();

 private:
  void Loop();
  Status StartAttempt(const JobRecord& job);

  JobStore* store_;
  ExecutorFactory make_executor_;
  NodeAgentOptions options_;
  std::atomic<int64_t> heartbeat_ok_ms_{0};
  std::thread loop_;
  mutable Mutex mu_;
  bool stop_ VIGIL_GUARDED_BY(mu_) = false;
  std::condition_variable wake_;           // Stop: the loop's poll-interval wait ends
  std::condition_variable attempt_ended_;  // an attempt thread left threads_
  bool fenced_ VIGIL_GUARDED_BY(mu_) = false;
  Executor* executor_ VIGIL_GUARDED_BY(mu_) = nullptr;
  // Every executor made, kept while attempts may use them.
  std::vector<std::unique_ptr<Executor>> executors_ VIGIL_GUARDED_BY(mu_);
  std::map<int64_t, std::thread> threads_ VIGIL_GUARDED_BY(mu_);  // job id -> its attempt thread
  std::vector<std::thread> done_threads_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil::jobs

// The leader's job runner: holds the leader lease, dispatches pending jobs one
// at a time (T3: RUNNING with attempt identity, node epoch, leader epoch and
// deadline is durable before the executor is called — I1), classifies and
// records each executor report (T4-T8), and runs required refreshes (T11:
// bump the table's refresh generation). A dispatched job is never dispatched
// again (I2). The reconciler for UNKNOWN jobs is separate.
// Thread safety: one thread drives a runner; the store is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vigil/common/status.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_store.h"

namespace vigil::jobs {

struct RunnerOptions {
  std::string node_id = "local";
  std::string leader_holder = "local-runner";
  int64_t lease_ttl_ms = 30'000;
  int64_t attempt_deadline_ms = 3'600'000;
};

class JobRunner {
 public:
  JobRunner(JobStore* store, Executor* executor, RunnerOptions options)
      : store_(store), executor_(executor), options_(std::move(options)) {}

  // Registers this node (a new node epoch) and takes or renews the leader lease.
  Status Start(int64_t now_ms);
  // Dispatches the oldest PENDING job, if any, and records its result. Returns its id.
  Result<std::optional<int64_t>> RunOnePending(int64_t now_ms);
  // Runs every required or retry-due refresh once. Returns how many completed.
  Result<int> RunRefreshes(int64_t now_ms);
  int64_t leader_epoch() const { return leader_epoch_; }

 private:
  Status RenewLeadership(int64_t now_ms);
  Result<JobRecord> Refresh(const JobRecord& job, int64_t now_ms);
  // Forwards an attempt's progress to the job record, throttled.
  index::ProgressFn ProgressRecorder(const JobRecord& job);

  JobStore* store_;
  Executor* executor_;
  RunnerOptions options_;
  int64_t leader_epoch_ = 0;
  int64_t node_epoch_ = 0;
};

}  // namespace vigil::jobs

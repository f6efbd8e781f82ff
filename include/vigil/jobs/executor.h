// Executors run one dispatched attempt and report what they know about it
// (classification.h). The real executor, WorkerExecutor (worker_executor.h),
// launches `vigil-worker` under hard limits; InProcessExecutor calls the
// provider in the calling process and exists for tests and for the job layer's
// own checks — it is never a production path.
// Thread safety: Execute may be called from several threads at once (the runner runs
// attempts of different tables in parallel).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "vigil/index/provider_job.h"
#include "vigil/index/segment.h"
#include "vigil/jobs/attempt_lock.h"
#include "vigil/jobs/classification.h"
#include "vigil/jobs/job_record.h"
#include "vigil/storage/version_catalog.h"

namespace vigil::jobs {

struct ExecutionRequest {
  JobRecord job;
  AttemptIdentity attempt;
  index::ProgressFn progress;  // may be null
  int attempt_lock_fd = -1;    // the held attempt lock; a worker launcher passes it to the child
  // Called with the pid of a process the executor started for the attempt. May be null.
  std::function<void(pid_t)> on_process_started;
  // The table's version catalog, the attempt's commit point; null: commits by link(2) alone.
  std::shared_ptr<VersionCatalog> versions;
};

struct ExecutionOutcome {
  ExecutorReport report;
  std::string message;                       // sanitized by the store before it is persisted
  std::optional<int64_t> committed_version;  // on success
};

// The provider's view of `job` (index/provider_job.h), the same for every executor:
// its operation, target and admitted spec, with the caps CREATE / REPLACE was
// admitted under (stored in its properties). The errors of index::AdmittedCapsFromJson.
Result<index::JobRequest> ProviderJob(const JobRecord& job);

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the attempt to completion (or to its proven or unproven end). Never throws.
  virtual ExecutionOutcome Execute(const ExecutionRequest& request) = 0;
  // Kills what runs attempts out of process and refuses later attempts: a leader that can no
  // longer prove its lease calls it before another can take over. Thread-safe.
  virtual void Fence() {}
};

// Calls the provider API directly: index::PrepareJob revalidates on the admitted
// version (a failure is a complete invoked=false report), then index::InvokeJob
// invokes the provider with the job id and attempt id as transaction properties.
// Failpoint `executor.before_invoke` fires before invocation.
class InProcessExecutor : public Executor {
 public:
  ExecutionOutcome Execute(const ExecutionRequest& request) override;
};

}  // namespace vigil::jobs

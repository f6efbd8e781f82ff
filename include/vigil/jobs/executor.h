// Executors run one dispatched attempt and report what they know about it
// (classification.h). The real executor launches `vigil-worker` under hard
// limits (the worker layer); InProcessExecutor calls the provider in the
// calling process and exists for tests and for the job layer's own checks
// until then — it is never a production path.
// Thread safety: Execute may be called from several threads at once (the runner runs
// attempts of different tables in parallel).
#pragma once

#include <functional>
#include <string>

#include "vigil/index/segment.h"
#include "vigil/jobs/attempt_lock.h"
#include "vigil/jobs/classification.h"
#include "vigil/jobs/job_record.h"

namespace vigil::jobs {

struct ExecutionRequest {
  JobRecord job;
  AttemptIdentity attempt;
  index::ProgressFn progress;  // may be null
  int attempt_lock_fd = -1;    // the held attempt lock; a worker launcher passes it to the child
  // Called with the pid of a process the executor started for the attempt. May be null.
  std::function<void(pid_t)> on_process_started;
};

struct ExecutionOutcome {
  ExecutorReport report;
  std::string message;                        // sanitized by the store before it is persisted
  std::optional<int64_t> committed_version;   // on success
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the attempt to completion (or to its proven or unproven end). Never throws.
  virtual ExecutionOutcome Execute(const ExecutionRequest& request) = 0;
};

// Calls the provider API directly: reopens the admitted version, revalidates
// the schema fingerprint (a mismatch is a complete invoked=false report), then
// invokes the provider with the job id and attempt id as transaction
// properties. Failpoint `executor.before_invoke` fires before invocation.
class InProcessExecutor : public Executor {
 public:
  ExecutionOutcome Execute(const ExecutionRequest& request) override;
};

}  // namespace vigil::jobs

// The production executor (DESIGN.md section 6).
#include <memory>
#include <mutex>

#include "vigil/worker/supervisor.h"

namespace vigil::jobs {

struct WorkerExecutorOptions {
  worker::SupervisorOptions supervisor;
  // Wall-clock limit of one attempt's worker. The attempt's deadline_at_ms travels
  // in the request as identity only: the runner's clock may be a logical one.
  std::chrono::milliseconds attempt_timeout{3'600'000};
  // Credentials for a job, resolved at dispatch; sent only over the secret pipe. May be null.
  std::function<std::optional<std::string>(const JobRecord&)> credentials;
  // Failpoints for the worker, appended to those armed in this process (failpoint::ArmedSpec()).
  std::string worker_failpoints;
  // Called with the worker's pid after its handshake (tests, accounting). May be null.
  std::function<void(pid_t)> on_launched;
};

// Runs every attempt in a fresh `vigil-worker` under the supervisor's limits
// (worker/supervisor.h) and maps what the supervisor learned to an
// ExecutorReport: launch, handshake or request-delivery failure ->
// failed_before_request; an identity-matched response -> complete with its
// `invoked` and typed code; anything else after the request -> incomplete (UNKNOWN).
// Progress messages are forwarded to request.progress.
class WorkerExecutor : public Executor {
 public:
  // Fails like worker::Supervisor::Create (missing worker, require_cgroup unmet).
  static Result<std::unique_ptr<WorkerExecutor>> Create(WorkerExecutorOptions options);
  ExecutionOutcome Execute(const ExecutionRequest& request) override;
  // OK when mutations can run as configured; admission calls it before creating a job.
  Status CheckCapability() const { return supervisor_->CheckCapability(); }
  // What the supervisor learned about the last attempt that ended (pid, reap, deadline, OOM).
  worker::LaunchResult last_launch() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_launch_;
  }

 private:
  WorkerExecutor(WorkerExecutorOptions options, std::unique_ptr<worker::Supervisor> supervisor)
      : options_(std::move(options)), supervisor_(std::move(supervisor)) {}
  WorkerExecutorOptions options_;
  std::unique_ptr<worker::Supervisor> supervisor_;
  mutable std::mutex mu_;
  worker::LaunchResult last_launch_;  // guarded by mu_
};

}  // namespace vigil::jobs

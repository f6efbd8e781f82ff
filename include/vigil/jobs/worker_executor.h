// The production executor (DESIGN.md section 6): every attempt in a fresh
// `vigil-worker` launched by the worker supervisor.
// Thread safety: Execute may be called from several threads at once (up to the
// supervisor's concurrency); last_launch() is thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "vigil/common/config.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/job_record.h"
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
  // How a job of an external Lance table starts its runner.
  LanceConfig lance;
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
  // Kills and reaps every running worker; later attempts fail before their request.
  void Fence() override { supervisor_->KillAll(); }
  // OK when mutations can run as configured; admission calls it before creating a job.
  Status CheckCapability() const { return supervisor_->CheckCapability(); }
  // What the supervisor learned about the last attempt that ended (pid, reap, deadline, OOM).
  worker::LaunchResult last_launch() const {
    MutexLock lock(&mu_);
    return last_launch_;
  }

 private:
  WorkerExecutor(WorkerExecutorOptions options, std::unique_ptr<worker::Supervisor> supervisor)
      : options_(std::move(options)), supervisor_(std::move(supervisor)) {}
  WorkerExecutorOptions options_;
  std::unique_ptr<worker::Supervisor> supervisor_;
  mutable Mutex mu_;
  worker::LaunchResult last_launch_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil::jobs

#include "vigil/jobs/worker_executor.h"

#include "vigil/common/failpoint.h"
#include "vigil/lance/lance_table.h"

namespace vigil::jobs {

Result<std::unique_ptr<WorkerExecutor>> WorkerExecutor::Create(WorkerExecutorOptions options) {
  VIGIL_ASSIGN_OR_RETURN(auto supervisor, worker::Supervisor::Create(options.supervisor));
  return std::unique_ptr<WorkerExecutor>(new WorkerExecutor(std::move(options), std::move(supervisor)));
}

ExecutionOutcome WorkerExecutor::Execute(const ExecutionRequest& request) {
  ExecutionOutcome out;
  worker::LaunchRequest launch;
  worker::Request& req = launch.request;
  req.attempt = request.attempt;
  Result<index::JobRequest> job = ProviderJob(request.job);
  if (!job.ok()) {
    out.report.failed_before_request = true;
    out.report.code = job.status().code();
    out.message = job.status().ToString();
    return out;
  }
  req.job = std::move(*job);
  if (req.job.engine == index::TableEngine::kLance) {
    const lance::LanceRunnerOptions runner = lance::RunnerOptions(options_.lance, options_.attempt_timeout);
    req.lance_node = runner.node_path;
    req.lance_runner = runner.script_path;
  }
  if (failpoint::Enabled()) {
    req.failpoints = failpoint::ArmedSpec();
    if (!options_.worker_failpoints.empty()) {
      req.failpoints += (req.failpoints.empty() ? "" : ";") + options_.worker_failpoints;
    }
  }
  if (options_.credentials) {
    std::optional<std::string> secret = options_.credentials(request.job);
    if (secret) {
      launch.secret = *secret;
      worker::ZeroizeString(&*secret);
    }
  }
  launch.attempt_lock_fd = request.attempt_lock_fd;
  if (request.versions) {
    // The worker's claims are decided here, in the store, on the attempt's terms.
    launch.on_catalog_call = [versions = request.versions, &request](const worker::CatalogCall& call) {
      worker::CatalogAnswer answer;
      if (!call.claim) {
        Result<std::optional<CatalogVersion>> latest = versions->Latest();
        if (!latest.ok()) return worker::CatalogAnswer{latest.status().code(), latest.status().message(), {}, ""};
        if (*latest) {
          answer.latest_version = (*latest)->version;
          answer.latest_manifest = (*latest)->manifest;
        }
        return answer;
      }
      if (call.job_id != request.job.job_id || call.attempt_id != request.attempt.attempt_id) {
        return worker::CatalogAnswer{StatusCode::kFailedPrecondition,
                                     "a worker claims versions for its own attempt only (job " +
                                         std::to_string(request.job.job_id) + ", attempt " +
                                         request.attempt.attempt_id + "); nothing was committed",
                                     {},
                                     ""};
      }
      VersionClaim claim;
      claim.version = call.version;
      claim.manifest = call.manifest;
      claim.txn.operation = call.operation;
      claim.txn.job_id = call.job_id;
      claim.txn.attempt_id = call.attempt_id;
      Status st = versions->Claim(claim);
      answer.code = st.code();
      answer.message = st.message();
      return answer;
    };
  }
  launch.timeout = options_.attempt_timeout;
  if (request.progress) {
    launch.on_progress = [&request](const worker::Progress& p) { request.progress(p.phase, p.done, p.total); };
  }
  launch.on_launched = [&request, this](pid_t pid) {
    if (request.on_process_started) request.on_process_started(pid);
    if (options_.on_launched) options_.on_launched(pid);
  };

  const worker::LaunchResult r = supervisor_->Run(std::move(launch));
  // What a move may leave behind (short strings).
  worker::ZeroizeString(&launch.secret);  // NOLINT(bugprone-use-after-move): zeroizing the moved-from secret
  {
    MutexLock lock(&mu_);
    last_launch_ = r;
  }
  if (r.failed_before_request) {
    out.report.failed_before_request = true;
    out.report.code = r.error.code();
    out.message = r.error.ToString();
  } else if (r.complete) {
    out.report.complete = true;
    out.report.invoked = r.response.invoked;
    out.report.code = r.response.code;
    out.message = r.response.message;
    if (r.response.code == StatusCode::kOk) out.committed_version = r.response.committed_version;
  } else {
    out.report.complete = false;
    out.report.code = r.error.code();
    out.message = r.error.ToString();
  }
  return out;
}

}  // namespace vigil::jobs

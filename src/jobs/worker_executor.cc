#include "vigil/jobs/worker_executor.h"

#include <mutex>

#include "vigil/common/failpoint.h"
#include "vigil/index/index_spec.h"

namespace vigil::jobs {

namespace {

Result<worker::Operation> WorkerOperation(Operation op) {
  switch (op) {
    case Operation::kCreate: return worker::Operation::kCreate;
    case Operation::kReplace: return worker::Operation::kReplace;
    case Operation::kDrop: return worker::Operation::kDrop;
    case Operation::kBuild: return worker::Operation::kBuild;
  }
  return Status::Internal("unknown job operation");
}

worker::AttemptIdentity WorkerAttempt(const AttemptIdentity& a) {
  return {a.executor_node_id, a.node_epoch,   a.attempt_id, a.attempt_number, a.dispatch_generation,
          a.leader_epoch,     a.deadline_at_ms};
}

}  // namespace

Result<std::unique_ptr<WorkerExecutor>> WorkerExecutor::Create(WorkerExecutorOptions options) {
  VIGIL_ASSIGN_OR_RETURN(auto supervisor, worker::Supervisor::Create(options.supervisor));
  return std::unique_ptr<WorkerExecutor>(new WorkerExecutor(std::move(options), std::move(supervisor)));
}

ExecutionOutcome WorkerExecutor::Execute(const ExecutionRequest& request) {
  const JobSpec& spec = request.job.spec;
  ExecutionOutcome out;
  auto op = WorkerOperation(spec.operation);
  if (!op.ok()) {
    out.report.failed_before_request = true;
    out.report.code = op.status().code();
    out.message = op.status().ToString();
    return out;
  }
  worker::LaunchRequest launch;
  worker::Request& req = launch.request;
  req.attempt = WorkerAttempt(request.attempt);
  req.job.job_id = request.job.job_id;
  req.job.operation = *op;
  req.job.locator = spec.locator;
  req.job.index_name = spec.index_name;
  req.job.columns = spec.columns;
  req.job.physical_type = spec.physical_type.value_or("");
  req.job.properties_json = spec.properties_json;
  req.job.start_version = spec.start_version;
  req.job.schema_fingerprint = spec.schema_fingerprint;
  if (spec.operation == Operation::kCreate || spec.operation == Operation::kReplace) {
    auto caps = index::AdmittedCapsFromJson(spec.properties_json);
    if (!caps.ok()) {
      out.report.failed_before_request = true;
      out.report.code = caps.status().code();
      out.message = caps.status().ToString();
      return out;
    }
    req.job.caps = *caps;
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
  launch.timeout = options_.attempt_timeout;
  if (request.progress) {
    launch.on_progress = [&request](const worker::Progress& p) { request.progress(p.phase, p.done, p.total); };
  }
  launch.on_launched = [&request, this](pid_t pid) {
    if (request.on_process_started) request.on_process_started(pid);
    if (options_.on_launched) options_.on_launched(pid);
  };

  const worker::LaunchResult r = supervisor_->Run(std::move(launch));
  worker::ZeroizeString(&launch.secret);  // what a move may leave behind (short strings)
  {
    std::lock_guard<std::mutex> lock(mu_);
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

#include "vigil/common/failpoint.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/executor.h"

namespace vigil::jobs {

namespace {

ExecutionOutcome Complete(bool invoked, const Status& st, std::optional<int64_t> version = std::nullopt) {
  ExecutionOutcome out;
  out.report.complete = true;
  out.report.invoked = invoked;
  out.report.code = st.code();
  out.message = st.ok() ? "" : st.ToString();
  out.committed_version = version;
  return out;
}

}  // namespace

ExecutionOutcome InProcessExecutor::Execute(const ExecutionRequest& request) {
  Result<index::JobRequest> job = ProviderJob(request.job);
  if (!job.ok()) return Complete(false, job.status());
  DatasetOptions dataset;
  dataset.versions = request.versions;
  Result<index::PreparedJob> prepared = index::PrepareJob(*job, dataset);
  if (!prepared.ok()) return Complete(false, prepared.status());
  if (Status fp = failpoint::Hit("executor.before_invoke"); !fp.ok()) return Complete(false, fp);
  Result<index::ProviderResult> result = index::InvokeJob(*prepared, request.attempt.attempt_id, request.progress);
  if (!result.ok()) return Complete(true, result.status());
  return Complete(true, Status::OK(), static_cast<int64_t>(result->committed_version));
}

}  // namespace vigil::jobs

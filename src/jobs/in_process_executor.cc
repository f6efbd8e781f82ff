#include "vigil/common/failpoint.h"
#include "vigil/index/provider.h"
#include "vigil/jobs/executor.h"
#include "vigil/storage/dataset.h"

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

Result<index::IndexType> PhysicalType(const JobSpec& spec) {
  if (!spec.physical_type) return Status::InvalidArgument("the job names no index type");
  return index::ParseIndexType(*spec.physical_type);
}

}  // namespace

ExecutionOutcome InProcessExecutor::Execute(const ExecutionRequest& request) {
  const JobSpec& spec = request.job.spec;
  // Revalidation before invocation: the exact admitted version and schema.
  auto ds = Dataset::Open(spec.locator, static_cast<uint64_t>(spec.start_version));
  if (!ds.ok()) return Complete(false, ds.status());
  if ((*ds)->schema()->fingerprint() != spec.schema_fingerprint) {
    return Complete(false, Status::FailedPrecondition("STALE_ADMISSION: the schema changed since admission"));
  }
  // CREATE / REPLACE: the admitted caps and the request, revalidated on the admitted version.
  std::optional<index::CreateIndexRequest> create;
  if (spec.operation == Operation::kCreate || spec.operation == Operation::kReplace) {
    auto type = PhysicalType(spec);
    if (!type.ok()) return Complete(false, type.status());
    auto props = index::RequestPropertiesFromJson(*type, spec.properties_json);
    if (!props.ok()) return Complete(false, props.status());
    auto caps = index::AdmittedCapsFromJson(spec.properties_json);
    if (!caps.ok()) return Complete(false, caps.status());
    create.emplace();
    create->dataset_path = spec.locator;
    create->version = static_cast<uint64_t>(spec.start_version);
    create->expected_schema_fingerprint = spec.schema_fingerprint;
    create->column = spec.columns.empty() ? "" : spec.columns[0];
    create->name = spec.index_name;
    create->type = *type;
    create->properties = std::move(*props);
    create->replace = spec.operation == Operation::kReplace;
    create->caps = *caps;
    create->progress = request.progress;
    if (Status valid = index::RevalidateCreate(*create); !valid.ok()) return Complete(false, valid);
  }
  if (Status fp = failpoint::Hit("executor.before_invoke"); !fp.ok()) return Complete(false, fp);
  TransactionProperties txn;
  txn.job_id = request.job.job_id;
  txn.attempt_id = request.attempt.attempt_id;
  Result<index::ProviderResult> result = Status::Internal("not run");
  if (spec.operation == Operation::kDrop) {
    result = index::DropIndex({spec.locator, std::nullopt, spec.index_name, txn});
  } else if (spec.operation == Operation::kBuild) {
    index::BuildIndexRequest req;
    req.dataset_path = spec.locator;
    req.version = static_cast<uint64_t>(spec.start_version);
    req.expected_schema_fingerprint = spec.schema_fingerprint;
    req.name = spec.index_name;
    req.txn = txn;
    req.progress = request.progress;
    auto built = index::BuildIndex(req);
    if (!built.ok()) return Complete(true, built.status());
    result = index::ProviderResult{built->committed_version, built->segment_uuid};
  } else {
    create->txn = txn;
    result = create->type == index::IndexType::kIvfPq ? index::CreateVectorIndex(*create)
                                                      : index::CreateScalarIndex(*create);
  }
  if (!result.ok()) return Complete(true, result.status());
  return Complete(true, Status::OK(), static_cast<int64_t>(result->committed_version));
}

}  // namespace vigil::jobs

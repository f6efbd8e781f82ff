// The one mapping of an index job's operation to its provider call, shared by
// the worker and the in-process executor.
#include "vigil/index/provider.h"

namespace vigil::index {

namespace {

// The provider request of a CREATE / REPLACE job, with the caps it was admitted under.
Result<CreateIndexRequest> CreateRequest(const JobRequest& job) {
  if (job.physical_type.empty()) return Status::InvalidArgument("the job names no index type");
  VIGIL_ASSIGN_OR_RETURN(IndexType type, ParseIndexType(job.physical_type));
  VIGIL_ASSIGN_OR_RETURN(auto props, RequestPropertiesFromJson(type, job.properties_json));
  CreateIndexRequest req;
  req.dataset_path = job.locator;
  req.version = static_cast<uint64_t>(job.start_version);
  req.expected_schema_fingerprint = job.schema_fingerprint;
  req.column = job.columns.empty() ? "" : job.columns[0];
  req.name = job.index_name;
  req.type = type;
  req.properties = std::move(props);
  req.replace = job.operation == JobOperation::kReplace;
  req.caps = job.caps;
  return req;
}

}  // namespace

std::string_view TableEngineName(TableEngine e) { return e == TableEngine::kLance ? "LANCE" : "VIGIL"; }

Result<TableEngine> ParseTableEngine(std::string_view name) {
  if (name == "VIGIL") return TableEngine::kVigil;
  if (name == "LANCE") return TableEngine::kLance;
  return Status::InvalidArgument("unknown table engine '" + std::string(name) + "'");
}

Result<PreparedJob> PrepareJob(const JobRequest& job, const DatasetOptions& dataset) {
  if (job.engine != TableEngine::kVigil) {
    return Status::InvalidArgument("a job of an external Lance table runs through the Lance runner, not this provider");
  }
  {
    VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(job.locator, static_cast<uint64_t>(job.start_version), dataset));
    if (ds->schema()->fingerprint() != job.schema_fingerprint) {
      return Status::FailedPrecondition("STALE_ADMISSION: the schema changed since admission");
    }
  }
  PreparedJob prepared{job, std::nullopt, dataset};
  if (job.operation == JobOperation::kCreate || job.operation == JobOperation::kReplace) {
    VIGIL_ASSIGN_OR_RETURN(CreateIndexRequest req, CreateRequest(job));
    req.dataset = dataset;
    VIGIL_RETURN_IF_ERROR(RevalidateCreate(req));
    prepared.create = std::move(req);
  }
  return prepared;
}

Result<ProviderResult> InvokeJob(const PreparedJob& prepared, const std::string& attempt_id,
                                 const ProgressFn& progress) {
  const JobRequest& job = prepared.job;
  TransactionProperties txn;
  txn.job_id = job.job_id;
  txn.attempt_id = attempt_id;
  switch (job.operation) {
    case JobOperation::kDrop:
      return DropIndex({job.locator, std::nullopt, job.index_name, txn, prepared.dataset});
    case JobOperation::kBuild: {
      BuildIndexRequest req;
      req.dataset_path = job.locator;
      req.version = static_cast<uint64_t>(job.start_version);
      req.expected_schema_fingerprint = job.schema_fingerprint;
      req.name = job.index_name;
      req.txn = txn;
      req.progress = progress;
      req.dataset = prepared.dataset;
      VIGIL_ASSIGN_OR_RETURN(BuildIndexResult built, BuildIndex(req));
      return ProviderResult{built.committed_version, built.segment_uuid};
    }
    case JobOperation::kCreate:
    case JobOperation::kReplace:
      break;
  }
  if (!prepared.create) return Status::Internal("the create request was not prepared");
  CreateIndexRequest create = *prepared.create;
  create.txn = std::move(txn);
  create.progress = progress;
  return create.type == IndexType::kIvfPq ? CreateVectorIndex(create) : CreateScalarIndex(create);
}

}  // namespace vigil::index

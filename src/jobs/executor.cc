#include "vigil/jobs/executor.h"

#include "vigil/index/index_spec.h"

namespace vigil::jobs {

Result<index::JobRequest> ProviderJob(const JobRecord& job) {
  const JobSpec& spec = job.spec;
  index::JobRequest out;
  out.job_id = job.job_id;
  out.operation = spec.operation;
  out.engine = spec.engine;
  out.locator = spec.locator;
  out.index_name = spec.index_name;
  out.columns = spec.columns;
  out.physical_type = spec.physical_type.value_or("");
  out.properties_json = spec.properties_json;
  out.start_version = spec.start_version;
  out.schema_fingerprint = spec.schema_fingerprint;
  if (spec.operation == Operation::kCreate || spec.operation == Operation::kReplace) {
    VIGIL_ASSIGN_OR_RETURN(out.caps, index::AdmittedCapsFromJson(spec.properties_json));
  }
  return out;
}

}  // namespace vigil::jobs

#include "vigil/jobs/root_jobs.h"

namespace vigil::jobs {

std::string RootJobStoreUri(const Root& root) {
  return "sqlite://" + root.path() + "/" + std::string(kRootMetaDirName) + "/vigil.db";
}

Result<std::unique_ptr<JobStore>> OpenRootJobStore(const Root& root) {
  VIGIL_RETURN_IF_ERROR(root.fs()->CreateDirs(root.path() + "/" + std::string(kRootMetaDirName)));
  JobStoreOptions options;
  options.uri = RootJobStoreUri(root);
  return JobStore::Open(options);
}

}  // namespace vigil::jobs

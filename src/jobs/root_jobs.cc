#include "vigil/jobs/root_jobs.h"

namespace vigil::jobs {

std::string RootJobStoreUri(const Root& root) {
  return "sqlite://" + root.path() + "/" + std::string(kRootMetaDir) + "/vigil.db";
}

Result<std::unique_ptr<JobStore>> OpenRootJobStore(const Root& root) {
  VIGIL_RETURN_IF_ERROR(root.fs()->CreateDirs(root.path() + "/" + std::string(kRootMetaDir)));
  JobStoreOptions options;
  options.uri = RootJobStoreUri(root);
  return JobStore::Open(options);
}

Result<TableEntry> EnsureTableRegistered(JobStore& store, const Root& root, const TableName& name, int64_t now_ms) {
  VIGIL_ASSIGN_OR_RETURN(auto entry, store.LookupTable(name.catalog, name.db, name.table));
  if (entry) return *entry;
  VIGIL_ASSIGN_OR_RETURN(bool exists, root.TableExists(name));
  if (!exists) return Status::NotFound("table " + name.ToString() + " does not exist");
  VIGIL_ASSIGN_OR_RETURN(std::string path, root.TablePath(name));
  Result<TableEntry> registered = store.RegisterTable(name.catalog, name.db, name.table, path, now_ms);
  if (registered.status().code() == StatusCode::kAlreadyExists) {  // another process registered it first
    VIGIL_ASSIGN_OR_RETURN(entry, store.LookupTable(name.catalog, name.db, name.table));
    if (entry) return *entry;
  }
  return registered;
}

}  // namespace vigil::jobs

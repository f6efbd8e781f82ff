#include "vigil/auth/root_auth.h"

#include "vigil/jobs/root_jobs.h"

namespace vigil::auth {

Result<std::unique_ptr<PrincipalStore>> OpenRootPrincipalStore(const Root& root, const std::string& uri) {
  PrincipalStoreOptions options;
  options.uri = uri;
  if (options.uri.empty()) {
    // Creates `_meta` and the database file with their private modes before the store opens it.
    VIGIL_RETURN_IF_ERROR(jobs::OpenRootJobStore(root).status());
    VIGIL_ASSIGN_OR_RETURN(jobs::RootMetaStore store, jobs::RootMeta(root));
    options.uri = std::move(store.uri);
    options.database = store.database;
  }
  VIGIL_ASSIGN_OR_RETURN(options.secret, LoadOrCreateServerSecret(root.path()));
  return PrincipalStore::Open(options);
}

}  // namespace vigil::auth

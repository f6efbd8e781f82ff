// The principal store of an embedded root: the server secret in
// `<root>/_meta/server.secret` and the tables in the root's metadata store
// (`<root>/_meta/vigil.db`, or a PostgreSQL store a shared deployment names).
// What `vigil init` (bootstrap token) and `vigil serve` open.
// Thread safety: free functions over thread-safe objects.
#pragma once

#include <memory>
#include <string>

#include "vigil/auth/principal_store.h"
#include "vigil/common/status.h"
#include "vigil/storage/root.h"

namespace vigil::auth {

// Loads (or creates) the root's server secret and opens the principal store on `uri`, or,
// when `uri` is empty, on the root's metadata store (jobs::RootMeta; its own SQLite file
// is created with the root's private modes, `_meta` 0700 and the database 0600, as
// jobs::OpenRootJobStore makes them).
Result<std::unique_ptr<PrincipalStore>> OpenRootPrincipalStore(const Root& root, const std::string& uri = "");

}  // namespace vigil::auth

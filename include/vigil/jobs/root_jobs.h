// The job store of a root: the metadata lives in `<root>/_meta/vigil.db`
// (SQLite, WAL, shared by every process on the root), or in the PostgreSQL
// database vigil.toml's [meta] url names (shared by every node of the root).
// Which table a name means is the catalog's answer (jobs/table_catalog.h).
// Thread safety: free functions over thread-safe objects.
#pragma once

#include <memory>
#include <string>

#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/root.h"

namespace vigil::jobs {

// "sqlite://<root>/_meta/vigil.db"
std::string RootJobStoreUri(const Root& root);
// The metadata store of `root`: [meta] url from its vigil.toml, else RootJobStoreUri. The
// errors of LoadConfig.
Result<std::string> RootMetaUri(const Root& root);
// The options of every connection to that store: a transaction left idle longer than the
// leader lease ([jobs] leader_lease_seconds) is ended by a PostgreSQL server, so a node
// frozen mid-transaction does not keep the next leader from the lease's row.
Result<meta::DatabaseOptions> RootMetaOptions(const Root& root);
// Opens (creating `_meta` and applying migrations on first use) the root's job store, at
// RootMetaUri with RootMetaOptions.
// `_meta` is 0700 and the database 0600 (with its -wal/-shm); looser modes of an
// older root are tightened here.
Result<std::unique_ptr<JobStore>> OpenRootJobStore(const Root& root);

}  // namespace vigil::jobs

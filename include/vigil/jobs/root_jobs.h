// The job store of a root: the metadata lives in `<root>/_meta/vigil.db`
// (SQLite, WAL, shared by every process on the root), or in the PostgreSQL
// database vigil.toml's [meta] url names (shared by every node of the root).
// Which table a name means is the catalog's answer (catalog/table_catalog.h).
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
// Where and how to open the metadata store of `root`, from one reading of its vigil.toml:
// [meta] url, else RootJobStoreUri; and options under which a transaction left idle
// longer than the leader lease ([jobs] leader_lease_seconds) is ended by a PostgreSQL
// server, so a node frozen mid-transaction does not keep the next leader from the
// lease's row. The errors of LoadConfig.
struct RootMetaStore {
  std::string uri;
  meta::DatabaseOptions database;
};
Result<RootMetaStore> RootMeta(const Root& root);
// Opens (creating `_meta` and applying migrations on first use) the root's job store, at
// RootMeta.
// `_meta` is 0700 and the database 0600 (with its -wal/-shm); looser modes of an
// older root are tightened here.
Result<std::unique_ptr<JobStore>> OpenRootJobStore(const Root& root);

}  // namespace vigil::jobs

// The job store of an embedded root and its table registry: the metadata lives
// in `<root>/_meta/vigil.db` (SQLite, WAL, shared by every process on the root),
// and a table is registered (catalog and table incarnations, locator) when it is
// created, or on first use for a dataset made before the registry knew it.
// Thread safety: free functions over thread-safe objects.
#pragma once

#include <memory>
#include <string>

#include "vigil/common/status.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/root.h"

namespace vigil::jobs {

constexpr std::string_view kRootMetaDir = "_meta";

// "sqlite://<root>/_meta/vigil.db"
std::string RootJobStoreUri(const Root& root);
// Opens (creating `_meta` and applying migrations on first use) the root's job store.
Result<std::unique_ptr<JobStore>> OpenRootJobStore(const Root& root);
// The registry entry of `name`, registering it when its dataset exists and it is not
// registered yet. NotFound when the table does not exist.
Result<TableEntry> EnsureTableRegistered(JobStore& store, const Root& root, const TableName& name, int64_t now_ms);

}  // namespace vigil::jobs

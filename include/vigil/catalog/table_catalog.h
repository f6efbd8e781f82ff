// The catalog of an embedded root: which table incarnation a name means now
// (DESIGN.md sections 1 and 4). The table registry in the metadata store is
// the truth. Each incarnation lives in its own directory,
// `<root>/<db>/<table>.<incarnation>.vgl`, that no other incarnation ever
// uses, so a writer that opened a dropped incarnation can never publish into
// the table that took its name (its commit fails with StaleIncarnation).
// Tables of a root made before incarnations (`<db>/<table>.vgl`) are
// registered as they are found and keep their directory until dropped.
//
// An external table (CREATE EXTERNAL TABLE ... ENGINE = lance) is registered with
// its LOCATION as locator; its files are never created, opened or moved here.
//
// The store is the job store's (jobs::JobStore::catalog()): a version claim an
// index job's attempt makes through these datasets is checked by its attempt
// check.
//
// Thread safety: thread-safe (the store is thread-safe, the root immutable).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/catalog/catalog_store.h"
#include "vigil/common/status.h"
#include "vigil/ingest/ingest.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/root.h"

namespace vigil::catalog {

// OK for a table Vigil owns; NotSupported naming the table, its engine and `what` (e.g.
// "SELECT") for an external table, whose rows only its own engine reads and writes.
Status CheckOwnTable(const TableName& name, const TableEntry& entry, std::string_view what);

class TableCatalog {
 public:
  // Registrations are stamped by root->env(); both pointers must outlive the catalog. The
  // store holds the registry and each table's version catalog.
  TableCatalog(const Root* root, CatalogStore* store);
  // The same, stamped by `now_ms` (Unix milliseconds) instead.
  TableCatalog(const Root* root, CatalogStore* store, std::function<int64_t()> now_ms);

  // How the datasets of `entry` are opened and committed: the root's file system, and the
  // table's version catalog in the store (its commit point).
  DatasetOptions Options(const TableEntry& entry) const;

  // The registered incarnation of `name`, or nullopt. InvalidArgument for a bad or reserved name.
  Result<std::optional<TableEntry>> Find(const TableName& name);
  // Find, where a missing table is NotFound "table <name> does not exist".
  Result<TableEntry> Lookup(const TableName& name);
  // The newest version of the table's dataset.
  Result<std::shared_ptr<Dataset>> Open(const TableName& name, DatasetOptions options = {});
  // Table names of `db`, sorted; NotFound for an unknown database.
  Result<std::vector<std::string>> ListTables(std::string_view db);

  // A new incarnation: its database made when missing, an empty dataset (version 1, the
  // incarnation as dataset id) in a new directory, then registered. AlreadyExists when the
  // name is taken; on any failure nothing stays registered or visible.
  Result<TableEntry> Create(const TableName& name, SchemaPtr schema, TransactionProperties props);
  // Appends `file` to the table (ImportInto), or, when it is missing and `options.create`,
  // creates a new incarnation from the file (ImportAsNewDataset) and registers it.
  Result<ImportResult> Import(const TableName& name, const std::string& file, const ImportOptions& options);

  // Moves an incarnation's directory to `<root>/_dropped/<incarnation>` (VACUUM reclaims it
  // later) and returns where it went. For DROP TABLE after the registry row is gone. Internal
  // for an external table, whose files are never Vigil's to move.
  Result<std::string> MoveAside(const TableEntry& entry);

  // Registers the dataset another engine owns at `location` (already validated and read)
  // as an external table: its database made when missing, nothing written at `location`.
  // AlreadyExists when the name is taken.
  Result<TableEntry> RegisterExternal(const TableName& name, index::TableEngine engine, const std::string& location);

 private:
  // Asked by a registration while it holds the catalog's lock: whether `name`'s database exists.
  CatalogStore::DatabaseCheck DatabaseCheck(const TableName& name) const;
  // Registers a new incarnation whose directory `dir` exists; on failure moves it aside.
  Result<TableEntry> RegisterNew(const TableName& name, const Uuid& incarnation, const std::string& dir);
  // Registers the legacy directory of `name` when there is one and the name is free.
  Result<std::optional<TableEntry>> AdoptLegacy(const TableName& name);
  Result<std::string> MoveDirAside(const std::string& dir, const std::string& incarnation);

  const Root* root_;
  CatalogStore* store_;
  std::function<int64_t()> now_ms_;  // empty: root_->env()

  int64_t NowMs() const { return now_ms_ ? now_ms_() : root_->env()->NowMs(); }
};

}  // namespace vigil::catalog

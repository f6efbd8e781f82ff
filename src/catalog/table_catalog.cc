#include "vigil/catalog/table_catalog.h"

#include <algorithm>
#include <set>

#include "vigil/catalog/version_store.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/filename.h"

namespace vigil::catalog {

namespace {

Status Missing(const TableName& name) { return Status::NotFound("table " + name.ToString() + " does not exist"); }

}  // namespace

TableCatalog::TableCatalog(const Root* root, CatalogStore* store) : root_(root), store_(store) {}

TableCatalog::TableCatalog(const Root* root, CatalogStore* store, std::function<int64_t()> now_ms)
    : root_(root), store_(store), now_ms_(std::move(now_ms)) {}

DatasetOptions TableCatalog::Options(const TableEntry& entry) const {
  std::function<int64_t()> now = now_ms_;
  if (!now) now = [env = root_->env()] { return env->NowMs(); };
  DatasetOptions options = TableDatasetOptions(store_, entry.table_incarnation, std::move(now));
  options.env = root_->env();
  options.fs = root_->fs();
  return options;
}

Result<std::optional<TableEntry>> TableCatalog::Find(const TableName& name) {
  VIGIL_RETURN_IF_ERROR(root_->CheckTableName(name));
  VIGIL_ASSIGN_OR_RETURN(std::optional<TableEntry> entry, store_->LookupTable(name.catalog, name.db, name.table));
  if (entry) return entry;
  return AdoptLegacy(name);
}

Result<TableEntry> TableCatalog::Lookup(const TableName& name) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<TableEntry> entry, Find(name));
  if (!entry) return Missing(name);
  return *entry;
}

Result<std::shared_ptr<Dataset>> TableCatalog::Open(const TableName& name, DatasetOptions options) {
  VIGIL_ASSIGN_OR_RETURN(TableEntry entry, Lookup(name));
  VIGIL_RETURN_IF_ERROR(CheckOwnTable(name, entry, "reading or writing its rows"));
  if (options.fs == nullptr) options.fs = root_->fs();
  if (!options.versions) options.versions = Options(entry).versions;
  Result<std::shared_ptr<Dataset>> ds = Dataset::Open(entry.locator, std::nullopt, options);
  if (ds.status().Is(StatusCode::kNotFound)) {
    return Status::NotFound("table " + name.ToString() + " is registered, but its directory " + entry.locator +
                            " holds no dataset");
  }
  return ds;
}

Result<std::vector<std::string>> TableCatalog::ListTables(std::string_view db) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<Root::TableDir> dirs, root_->ListTableDirs(db));
  const std::string catalog = root_->marker().catalog;
  VIGIL_ASSIGN_OR_RETURN(std::vector<TableEntry> entries, store_->ListTables(catalog, std::string(db)));
  std::set<std::string> names;
  for (const TableEntry& e : entries) names.insert(e.table_name);
  for (const Root::TableDir& d : dirs) {
    if (d.parts.incarnation || names.count(d.parts.table) > 0) continue;
    TableName name{catalog, std::string(db), d.parts.table};
    VIGIL_ASSIGN_OR_RETURN(std::optional<TableEntry> adopted, AdoptLegacy(name));
    if (adopted) names.insert(d.parts.table);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

Result<TableEntry> TableCatalog::Create(const TableName& name, SchemaPtr schema, TransactionProperties props) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<TableEntry> existing, Find(name));
  if (existing) return Status::AlreadyExists("table " + name.ToString() + " already exists");
  VIGIL_RETURN_IF_ERROR(root_->EnsureDatabase(name.db));
  const Uuid incarnation = Uuid::Generate();
  VIGIL_ASSIGN_OR_RETURN(std::string dir, root_->TableIncarnationPath(name, incarnation));
  TableEntry made;
  made.table_incarnation = incarnation.ToString();
  DatasetOptions options = Options(made);
  Result<std::shared_ptr<Dataset>> ds = Dataset::Create(dir, std::move(schema), std::move(props), options, incarnation);
  if (!ds.ok()) {
    (void)MoveDirAside(dir, incarnation.ToString());  // a partial directory is never a table
    return ds.status().WithContext("CREATE TABLE " + name.ToString());
  }
  return RegisterNew(name, incarnation, dir);
}

Result<ImportResult> TableCatalog::Import(const TableName& name, const std::string& file,
                                          const ImportOptions& options) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<TableEntry> existing, Find(name));
  if (existing) {
    VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> ds, Open(name));
    return ImportInto(ds, file, options);
  }
  if (!options.create) return Status::NotFound("table " + name.ToString() + " does not exist");
  VIGIL_RETURN_IF_ERROR(root_->EnsureDatabase(name.db));
  const Uuid incarnation = Uuid::Generate();
  VIGIL_ASSIGN_OR_RETURN(std::string dir, root_->TableIncarnationPath(name, incarnation));
  ImportOptions o = options;
  if (o.ingest.fs == nullptr) o.ingest.fs = root_->fs();
  VIGIL_ASSIGN_OR_RETURN(ImportResult result, ImportAsNewDataset(dir, incarnation, file, o));
  VIGIL_RETURN_IF_ERROR(RegisterNew(name, incarnation, dir).status());
  return result;
}

Result<std::string> TableCatalog::MoveAside(const TableEntry& entry) {
  if (entry.engine != index::TableEngine::kVigil) {
    return Status::Internal("an external table's files are never moved: " + entry.locator);
  }
  return MoveDirAside(entry.locator, entry.table_incarnation);
}

Result<TableEntry> TableCatalog::RegisterExternal(const TableName& name, index::TableEngine engine,
                                                  const std::string& location) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<TableEntry> existing, Find(name));
  if (existing) return Status::AlreadyExists("table " + name.ToString() + " already exists");
  VIGIL_RETURN_IF_ERROR(root_->EnsureDatabase(name.db));
  Result<TableEntry> entry =
      store_->RegisterTable(name.catalog, name.db, name.table, location, NowMs(), engine, DatabaseCheck(name));
  if (entry.status().Is(StatusCode::kAlreadyExists)) {
    return Status::AlreadyExists("table " + name.ToString() + " already exists");
  }
  return entry;
}

Status CheckOwnTable(const TableName& name, const TableEntry& entry, std::string_view what) {
  if (entry.engine == index::TableEngine::kVigil) return Status::OK();
  return Status::NotSupported("table " + name.ToString() + " is an external " +
                              std::string(index::TableEngineName(entry.engine)) + " table (" + entry.locator +
                              "): " + std::string(what) +
                              " is not supported; Vigil manages its indexes (CREATE / DROP / BUILD INDEX, SHOW INDEX) "
                              "and LanceDB reads and writes its rows");
}

CatalogStore::DatabaseCheck TableCatalog::DatabaseCheck(const TableName& name) const {
  return [root = root_, db = name.db]() -> Status {
    VIGIL_ASSIGN_OR_RETURN(bool exists, root->DatabaseExists(db));
    if (!exists) return Status::NotFound("database '" + db + "' does not exist (it was dropped)");
    return Status::OK();
  };
}

Result<TableEntry> TableCatalog::RegisterNew(const TableName& name, const Uuid& incarnation, const std::string& dir) {
  Result<TableEntry> entry = store_->RegisterTable(name.catalog, name.db, name.table, incarnation.ToString(), dir,
                                                   NowMs(), index::TableEngine::kVigil, DatabaseCheck(name));
  if (entry.ok()) return entry;
  Result<std::string> aside = MoveDirAside(dir, incarnation.ToString());
  const std::string undo = aside.ok() ? " (undone)" : " (undo failed: " + aside.status().message() + ")";
  if (entry.status().Is(StatusCode::kAlreadyExists)) {
    return Status::AlreadyExists("table " + name.ToString() + " already exists" + undo);
  }
  return entry.status().WithContext("registering table " + name.ToString() + undo);
}

Result<std::optional<TableEntry>> TableCatalog::AdoptLegacy(const TableName& name) {
  VIGIL_ASSIGN_OR_RETURN(std::string dir, root_->LegacyTablePath(name));
  VIGIL_ASSIGN_OR_RETURN(bool exists, root_->fs()->Exists(dir));
  if (!exists) return std::optional<TableEntry>();
  // The dataset id becomes the incarnation; an unreadable newest manifest gets a fresh one
  // (opening the table then reports the corruption).
  DatasetOptions options;
  options.fs = root_->fs();
  Result<std::shared_ptr<Dataset>> ds = Dataset::Open(dir, std::nullopt, options);
  const std::string incarnation = ds.ok() ? (*ds)->manifest().dataset_id.ToString() : Uuid::Generate().ToString();
  Result<TableEntry> entry = store_->RegisterTable(name.catalog, name.db, name.table, incarnation, dir, NowMs());
  if (entry.ok()) return std::optional<TableEntry>(std::move(*entry));
  if (!entry.status().Is(StatusCode::kAlreadyExists)) return entry.status();
  return store_->LookupTable(name.catalog, name.db, name.table);  // another process registered it first
}

Result<std::string> TableCatalog::MoveDirAside(const std::string& dir, const std::string& incarnation) {
  FileSystem* fs = root_->fs();
  const std::string dropped = root_->Path(kDroppedDir);
  VIGIL_RETURN_IF_ERROR(fs->CreateDirs(dropped));
  std::string target = root_->Path(DroppedTablePath(incarnation));
  VIGIL_ASSIGN_OR_RETURN(bool taken, fs->Exists(target));
  if (taken) target = root_->Path(DroppedTablePath(incarnation, Uuid::Generate().ToString()));
  VIGIL_RETURN_IF_ERROR(fs->Rename(dir, target));
  VIGIL_RETURN_IF_ERROR(fs->SyncDir(dropped));
  VIGIL_RETURN_IF_ERROR(fs->SyncDir(DirName(dir)));
  return target;
}

}  // namespace vigil::catalog

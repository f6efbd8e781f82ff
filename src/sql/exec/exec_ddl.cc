// Databases and tables: CREATE/DROP DATABASE, SHOW DATABASES, SHOW TABLES,
// CREATE/DROP TABLE and REFRESH TABLE.
#include <algorithm>

#include "sql/exec/exec_internal.h"
#include "sql/exec/server_path.h"
#include "vigil/lance/lance_table.h"
#include "vigil/storage/dataset.h"

namespace vigil::sql {

namespace {

ResultSet Message(std::string text) {
  ResultSet r;
  r.message = std::move(text);
  return r;
}

Status CheckCatalog(const ExecContext& ctx, const DatabaseName& name) {
  if (!name.catalog.empty() && name.catalog != ctx.root.marker().catalog) {
    return Status::InvalidArgument("catalog '" + name.catalog + "' is not this root's catalog '" +
                                   ctx.root.marker().catalog + "'");
  }
  return Status::OK();
}

Status RequireAdmin(const ExecContext& ctx, std::string_view what) {
  if (ctx.options.principal.admin) return Status::OK();
  return Status::PermissionDenied(std::string(what) + " requires ADMIN");
}

bool MayShowDatabase(const ExecContext& ctx, const std::string& db, const std::vector<std::string>& tables) {
  const auth::Principal& who = ctx.options.principal;
  const std::string& catalog = ctx.root.marker().catalog;
  if (who.admin || who.Has(auth::Privilege::kShow, catalog, db, "*")) return true;
  return std::any_of(tables.begin(), tables.end(),
                     [&](const std::string& t) { return who.Has(auth::Privilege::kShow, catalog, db, t); });
}

Result<SchemaPtr> MakeSchema(const CreateTableStatement& s) {
  std::vector<Field> fields;
  for (const ColumnDef& c : s.columns) fields.push_back(Field{-1, c.name, c.type, !c.not_null});
  return Schema::Make(std::move(fields));
}

}  // namespace

Result<ResultSet> ExecCreateDatabase(ExecContext& ctx, const CreateDatabaseStatement& s) {
  VIGIL_RETURN_IF_ERROR(CheckCatalog(ctx, s.name));
  VIGIL_RETURN_IF_ERROR(RequireAdmin(ctx, "CREATE DATABASE"));
  Status st = ctx.root.CreateDatabase(s.name.database);
  if (st.Is(StatusCode::kAlreadyExists) && s.if_not_exists) {
    return Message("database " + s.name.database + " already exists; nothing changed");
  }
  VIGIL_RETURN_IF_ERROR(st);
  return Message("database " + s.name.database + " created");
}

Result<ResultSet> ExecDropDatabase(ExecContext& ctx, const DropDatabaseStatement& s) {
  VIGIL_RETURN_IF_ERROR(CheckCatalog(ctx, s.name));
  VIGIL_RETURN_IF_ERROR(RequireAdmin(ctx, "DROP DATABASE"));
  // Registered tables first (an external table has no directory, and a guarded one must stay),
  // then the directory, while no registration can come in between.
  Status st = ctx.Control().DropDatabase(ctx.root.marker().catalog, s.name.database,
                                         [&] { return ctx.root.DropDatabase(s.name.database); });
  if (st.Is(StatusCode::kNotFound) && s.if_exists) {
    return Message("database " + s.name.database + " does not exist; nothing changed");
  }
  VIGIL_RETURN_IF_ERROR(st);
  return Message("database " + s.name.database + " dropped");
}

Result<ResultSet> ExecShowDatabases(ExecContext& ctx, const ShowDatabasesStatement&) {
  VIGIL_ASSIGN_OR_RETURN(auto dbs, ctx.root.ListDatabases());
  ResultSet r;
  r.columns = {"Database"};
  for (const std::string& db : dbs) {
    VIGIL_ASSIGN_OR_RETURN(auto tables, ctx.Catalog().ListTables(db));
    if (MayShowDatabase(ctx, db, tables)) r.rows.push_back({Value(db)});
  }
  return r;
}

Result<ResultSet> ExecShowTables(ExecContext& ctx, const ShowTablesStatement& s) {
  const auth::Principal& who = ctx.options.principal;
  const std::string& catalog = ctx.root.marker().catalog;
  std::vector<std::string> dbs;
  ResultSet r;
  if (s.database) {
    VIGIL_RETURN_IF_ERROR(CheckCatalog(ctx, *s.database));
    dbs.push_back(s.database->database);
    r.columns = {"Tables_in_" + s.database->database};
  } else {
    VIGIL_ASSIGN_OR_RETURN(dbs, ctx.root.ListDatabases());
    r.columns = {"Database", "Table"};
  }
  for (const std::string& db : dbs) {
    VIGIL_ASSIGN_OR_RETURN(auto tables, ctx.Catalog().ListTables(db));
    if (s.database && !MayShowDatabase(ctx, db, tables) && !tables.empty()) {
      return Status::NotFound("database '" + db + "' does not exist");
    }
    for (const std::string& t : tables) {
      if (!who.Has(auth::Privilege::kShow, catalog, db, t)) continue;
      if (s.database) {
        r.rows.push_back({Value(t)});
      } else {
        r.rows.push_back({Value(db), Value(t)});
      }
    }
  }
  return r;
}

namespace {

constexpr char kExternalSetting[] = "[sql] external_table_allowed_directories in vigil.toml";

// Where an external table's dataset may be: the LOCATION names one on the server, which the
// Lance runner then reads and changes with the server's rights for whoever may ALTER the
// table, so registering it is server-side file access (as COPY FROM a server file): ADMIN,
// and the path, with its links resolved, below [sql] external_table_allowed_directories.
// The refusal of a path outside them is the same whether it exists or not. The resolved path
// (no link left in it) is what is registered.
Result<std::string> ConfineLocation(const ExecContext& ctx, const std::string& what, const std::string& location) {
  if (!ctx.options.principal.admin) {
    return Status::PermissionDenied(what + ": registering a dataset's location requires ADMIN (server-side file " +
                                    "access; the allowed directories are " + kExternalSetting + ")");
  }
  const std::vector<std::string>& allowed = ctx.config.sql.external_table_allowed_directories;
  if (allowed.empty()) {
    return Status::PermissionDenied(what + ": external tables are off (" + kExternalSetting + " is empty)");
  }
  VIGIL_RETURN_IF_ERROR(lance::ValidateLocation(location).WithContext(what));
  const Status refused = Status::PermissionDenied(what + ": LOCATION '" + location +
                                                  "' is refused: an external table's dataset must lie below " +
                                                  kExternalSetting + ", with symbolic links resolved");
  VIGIL_ASSIGN_OR_RETURN(std::string real, ResolveAllowedPath(location, allowed, refused, what + ": LOCATION"));
  // A link may not rename it into something the runner would not take.
  if (!lance::ValidateLocation(real).ok()) return refused;
  return real;
}

}  // namespace

// CREATE EXTERNAL TABLE ... ENGINE = lance LOCATION '...': the location is confined
// (ConfineLocation), the dataset is read once (it must exist and decode; nothing is written)
// and only the reference is stored.
Result<ResultSet> ExecCreateExternalTable(ExecContext& ctx, const vigil::TableName& name,
                                          const CreateTableStatement& s) {
  const std::string what = "CREATE EXTERNAL TABLE " + name.ToString();
  VIGIL_ASSIGN_OR_RETURN(const std::string location, ConfineLocation(ctx, what, s.location));
  Result<std::optional<catalog::TableEntry>> existing = ctx.Catalog().Find(name);
  VIGIL_RETURN_IF_ERROR(existing.status());
  if (*existing && s.if_not_exists) return Message("table " + name.ToString() + " already exists; nothing changed");
  if (*existing) return Status::AlreadyExists("table " + name.ToString() + " already exists");
  Result<lance::LanceSnapshot> snap = lance::Inspect(location, lance::ReadOptions(ctx.config.lance));
  VIGIL_RETURN_IF_ERROR(snap.status().WithContext(what));
  Result<catalog::TableEntry> made = ctx.Catalog().RegisterExternal(name, index::TableEngine::kLance, location);
  if (made.status().Is(StatusCode::kAlreadyExists) && s.if_not_exists) {
    return Message("table " + name.ToString() + " already exists; nothing changed");
  }
  VIGIL_RETURN_IF_ERROR(made.status());
  ctx.Invalidate(name);
  return Message("external table " + name.ToString() + " registered: Lance dataset " + location + " at version " +
                 std::to_string(snap->version) + ", " + std::to_string(snap->fields.size()) + " columns, " +
                 std::to_string(snap->indexes.size()) + " indexes");
}

namespace {

// CREATE TABLE's check: ALTER on the new table (or its database). A caller who may see the
// database is refused as such: the refusal is the same whether the table exists or not.
Status AuthorizeCreateTable(const ExecContext& ctx, const vigil::TableName& name) {
  Status st = Authorize(ctx, name, auth::Privilege::kAlter);
  if (!st.Is(StatusCode::kNotFound)) return st;
  Result<std::vector<std::string>> tables = ctx.Catalog().ListTables(name.db);
  if (!tables.ok() || !MayShowDatabase(ctx, name.db, *tables)) return st;
  return Status::PermissionDenied("ALTER on " + name.ToString() + " or on its database is required to create it");
}

}  // namespace

Result<ResultSet> ExecCreateTable(ExecContext& ctx, const CreateTableStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  VIGIL_RETURN_IF_ERROR(AuthorizeCreateTable(ctx, name));
  if (!s.engine.empty()) return ExecCreateExternalTable(ctx, name, s);
  Result<SchemaPtr> schema = MakeSchema(s);
  if (!schema.ok()) return schema.status().WithContext("CREATE TABLE " + name.ToString());
  TransactionProperties props;
  props.operation = "CREATE_TABLE";
  Result<catalog::TableEntry> created = ctx.Catalog().Create(name, *schema, props);
  if (created.status().Is(StatusCode::kAlreadyExists) && s.if_not_exists) {
    return Message("table " + name.ToString() + " already exists; nothing changed");
  }
  VIGIL_RETURN_IF_ERROR(created.status());
  ctx.Invalidate(name);
  return Message("table " + name.ToString() + " created");
}

Result<ResultSet> ExecDropTable(ExecContext& ctx, const DropTableStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  catalog::TableCatalog catalog = ctx.Catalog();
  VIGIL_ASSIGN_OR_RETURN(std::optional<catalog::TableEntry> entry, catalog.Find(name));
  const bool visible = ctx.options.principal.Has(auth::Privilege::kShow, name.catalog, name.db, name.table);
  if ((!entry || !visible) && s.if_exists)
    return Message("table " + name.ToString() + " does not exist; nothing changed");
  if (!entry) return Status::NotFound("table " + name.ToString() + " does not exist");
  const bool external = entry->engine != index::TableEngine::kVigil;
  std::string moved_to;
  Status st = ctx.Control().GuardedTableChange(
      name.catalog, name.db, name.table, ctx.options.principal, [&](meta::Transaction& txn) -> Status {
        VIGIL_RETURN_IF_ERROR(ctx.store->DropTable(txn, name.catalog, name.db, name.table));
        // An external table's dataset is its engine's: only the registration goes.
        if (!external) {
          VIGIL_ASSIGN_OR_RETURN(moved_to, catalog.MoveAside(*entry));
        }
        return Status::OK();
      });
  if (!st.ok() && !moved_to.empty()) {
    // The registry change did not commit: put the files back where they were.
    Status back = ctx.root.fs()->Rename(moved_to, entry->locator);
    if (!back.ok()) return st.WithContext("DROP TABLE (files left at " + moved_to + ": " + back.message() + ")");
  }
  VIGIL_RETURN_IF_ERROR(st);
  ctx.Invalidate(name);
  if (external)
    return Message("external table " + name.ToString() + " unregistered; its dataset stays at " + entry->locator);
  return Message("table " + name.ToString() + " dropped");
}

Result<ResultSet> ExecRefreshTable(ExecContext& ctx, const RefreshTableStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kAlter));
  VIGIL_RETURN_IF_ERROR(ctx.Catalog().Lookup(name).status());
  VIGIL_ASSIGN_OR_RETURN(int64_t generation,
                         ctx.Control().RefreshTable(name.catalog, name.db, name.table, ctx.options.principal));
  ctx.Invalidate(name);
  return Message("table " + name.ToString() + " refreshed (refresh generation " + std::to_string(generation) + ")");
}

}  // namespace vigil::sql

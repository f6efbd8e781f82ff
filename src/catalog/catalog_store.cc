#include "vigil/catalog/catalog_store.h"

#include "catalog/catalog_sql.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/utf8.h"
#include "vigil/common/uuid.h"

namespace vigil::catalog {

namespace {

using meta::Connection;
using meta::Row;

constexpr size_t kMaxNameBytes = 256;      // a catalog, database or table name
constexpr size_t kMaxLocatorBytes = 1024;  // a locator (a directory or an external LOCATION)

// `sql` plus the dialect's row-lock suffix (" FOR UPDATE" on PostgreSQL, "" on SQLite).
std::string Locked(Connection& conn, std::string_view sql) {
  return std::string(sql) + std::string(conn.profile().lock_rows);
}

// InvalidArgument unless `value` is 1..max_bytes of printable UTF-8 (what: its name).
Status CheckText(std::string_view what, std::string_view value, size_t max_bytes) {
  if (!value.empty() && value.size() <= max_bytes && IsPrintableUtf8(value)) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " must be 1.." + std::to_string(max_bytes) +
                                 " bytes of printable UTF-8");
}

Result<TableEntry> ParseTable(const Row& row) {
  TableEntry t;
  VIGIL_ASSIGN_OR_RETURN(t.catalog_name, row.Text(0));
  VIGIL_ASSIGN_OR_RETURN(t.database_name, row.Text(1));
  VIGIL_ASSIGN_OR_RETURN(t.table_name, row.Text(2));
  VIGIL_ASSIGN_OR_RETURN(t.catalog_incarnation, row.Text(3));
  VIGIL_ASSIGN_OR_RETURN(t.table_incarnation, row.Text(4));
  VIGIL_ASSIGN_OR_RETURN(t.locator, row.Text(5));
  VIGIL_ASSIGN_OR_RETURN(t.created_at_ms, row.Int(6));
  VIGIL_ASSIGN_OR_RETURN(std::string engine, row.Text(7));
  Result<index::TableEngine> parsed = index::ParseTableEngine(engine);
  if (!parsed.ok()) return Status::Corruption("stored table engine: " + parsed.status().message());
  t.engine = *parsed;
  return t;
}

}  // namespace

Result<TableEntry> CatalogStore::RegisterTable(const std::string& catalog, const std::string& database,
                                               const std::string& table, const std::string& locator, int64_t now_ms,
                                               index::TableEngine engine, const DatabaseCheck& database_exists) {
  return RegisterTable(catalog, database, table, Uuid::Generate().ToString(), locator, now_ms, engine, database_exists);
}

Result<TableEntry> CatalogStore::RegisterTable(const std::string& catalog, const std::string& database,
                                               const std::string& table, const std::string& table_incarnation,
                                               const std::string& locator, int64_t now_ms, index::TableEngine engine,
                                               const DatabaseCheck& database_exists) {
  VIGIL_RETURN_IF_ERROR(CheckText("catalog name", catalog, kMaxNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("database name", database, kMaxNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("table name", table, kMaxNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("locator", locator, kMaxLocatorBytes));
  Result<Uuid> incarnation = Uuid::Parse(table_incarnation);
  if (!incarnation.ok()) return incarnation.status().WithContext("table incarnation");
  TableEntry t{catalog, database, table, "", incarnation->ToString(), locator, now_ms, engine};
  VIGIL_FAILPOINT("catalog.register_table.before_lock");  // SQLite's write transaction is the lock
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, db_->Begin(meta::TxnMode::kWrite));
  VIGIL_ASSIGN_OR_RETURN(t.catalog_incarnation, LockCatalogOn(txn.conn(), catalog, now_ms));
  if (database_exists) VIGIL_RETURN_IF_ERROR(database_exists());
  VIGIL_RETURN_IF_ERROR(txn.conn()
                            .Execute(sql::kInsertTable, {catalog, database, table, t.table_incarnation, locator, now_ms,
                                                         index::TableEngineName(engine)})
                            .status());
  VIGIL_RETURN_IF_ERROR(txn.Commit());
  return t;
}

Result<std::vector<TableEntry>> CatalogStore::ListTables(const std::string& catalog, const std::string& database) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  return ListTablesOn(*conn, catalog, database);
}

Result<std::string> CatalogStore::LockCatalogOn(Connection& conn, const std::string& catalog, int64_t now_ms) {
  VIGIL_RETURN_IF_ERROR(conn.Execute(sql::kInsertCatalog, {catalog, Uuid::Generate().ToString(), now_ms}).status());
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(Locked(conn, sql::kSelectCatalog), {catalog}));
  if (!row) return Status::Internal("catalog '" + catalog + "' vanished after insert");
  return row->Text(0);
}

Result<std::vector<TableEntry>> CatalogStore::ListTablesOn(Connection& conn, const std::string& catalog,
                                                           const std::string& database) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, conn.Query(sql::kSelectTablesOfDatabase, {catalog, database}));
  std::vector<TableEntry> out;
  for (const Row& row : rows) {
    VIGIL_ASSIGN_OR_RETURN(TableEntry t, ParseTable(row));
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::optional<TableEntry>> CatalogStore::LookupTable(const std::string& catalog, const std::string& database,
                                                            const std::string& table) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
  return LookupOn(*conn, catalog, database, table, false);
}

Result<std::optional<TableEntry>> CatalogStore::LookupOn(meta::Connection& conn, const std::string& catalog,
                                                         const std::string& database, const std::string& table,
                                                         bool lock) {
  const std::string sql = lock ? Locked(conn, sql::kSelectTable) : std::string(sql::kSelectTable);
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(sql, {catalog, database, table}));
  if (!row) return std::optional<TableEntry>();
  VIGIL_ASSIGN_OR_RETURN(TableEntry t, ParseTable(*row));
  return std::optional<TableEntry>(std::move(t));
}

Status CatalogStore::DeleteOn(meta::Connection& conn, const std::string& table_incarnation) {
  return conn.Execute(sql::kDeleteTable, {table_incarnation}).status();
}

Status CatalogStore::LockIncarnationOn(meta::Connection& conn, const std::string& table_incarnation) {
  return conn.Query(Locked(conn, sql::kSelectTableByIncarnation), {table_incarnation}).status();
}

Status CatalogStore::CheckAttemptOn(meta::Connection& conn, const VersionClaim& claim, int64_t now_ms) const {
  if (attempt_check_) return attempt_check_(conn, claim, now_ms);
  return Status::FailedPrecondition("attempt " + claim.txn.attempt_id + " of index job " +
                                    std::to_string(claim.txn.job_id.value_or(0)) +
                                    " may not commit: this catalog checks no index job's attempts; nothing was "
                                    "committed");
}

}  // namespace vigil::catalog

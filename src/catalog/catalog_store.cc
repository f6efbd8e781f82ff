#include "vigil/jobs/catalog_store.h"

#include "jobs/job_schema.h"
#include "jobs/job_store_internal.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/uuid.h"
#include "vigil/jobs/job_record.h"

namespace vigil::jobs {

namespace {

using internal::CheckText;
using meta::Connection;
using meta::Row;

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
  VIGIL_RETURN_IF_ERROR(CheckText("catalog name", catalog, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("database name", database, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("table name", table, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("locator", locator, kMaxMessageBytes));
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
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row,
                         conn.QueryOptional(internal::Locked(conn, sql::kSelectCatalog), {catalog}));
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
  const std::string sql = lock ? internal::Locked(conn, sql::kSelectTable) : std::string(sql::kSelectTable);
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(sql, {catalog, database, table}));
  if (!row) return std::optional<TableEntry>();
  VIGIL_ASSIGN_OR_RETURN(TableEntry t, ParseTable(*row));
  return std::optional<TableEntry>(std::move(t));
}

Status CatalogStore::DeleteOn(meta::Connection& conn, const std::string& table_incarnation) {
  return conn.Execute(sql::kDeleteTable, {table_incarnation}).status();
}

}  // namespace vigil::jobs

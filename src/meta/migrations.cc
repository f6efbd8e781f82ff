#include "vigil/meta/migrations.h"

#include "vigil/common/checksum.h"

namespace vigil::meta {

namespace {

constexpr std::string_view kCreateTable =
    "CREATE TABLE IF NOT EXISTS vigil_schema_migrations ("
    " component TEXT NOT NULL,"
    " version INTEGER NOT NULL,"
    " name TEXT NOT NULL,"
    " checksum TEXT NOT NULL,"
    " applied_at BIGINT NOT NULL,"
    " PRIMARY KEY (component, version))";

constexpr std::string_view kSelectApplied =
    "SELECT version, name, checksum, applied_at FROM vigil_schema_migrations"
    " WHERE component = $1 ORDER BY version";

Result<std::vector<AppliedMigration>> ReadApplied(Connection& conn, std::string_view component) {
  VIGIL_ASSIGN_OR_RETURN(auto rows, conn.Query(kSelectApplied, {component}));
  std::vector<AppliedMigration> out;
  for (const Row& row : rows) {
    AppliedMigration m;
    VIGIL_ASSIGN_OR_RETURN(int64_t version, row.Int(0));
    m.version = static_cast<int>(version);
    VIGIL_ASSIGN_OR_RETURN(m.name, row.Text(1));
    VIGIL_ASSIGN_OR_RETURN(m.checksum, row.Text(2));
    VIGIL_ASSIGN_OR_RETURN(m.applied_at_ms, row.Int(3));
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

std::string MigrationChecksum(std::string_view sql) { return ChecksumToHex(Checksum64(sql)); }

Result<int> ApplyMigrations(Database& db, std::string_view component, const std::vector<Migration>& migrations,
                            int64_t now_ms) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i + 1)) {
      return Status::InvalidArgument(std::string(component) + ": migration versions must be 1.." +
                                     std::to_string(migrations.size()) + " in order");
    }
  }
  VIGIL_ASSIGN_OR_RETURN(Transaction txn, db.Begin(TxnMode::kWrite));
  Connection& conn = txn.conn();
  if (!db.profile().migration_lock.empty()) {
    VIGIL_RETURN_IF_ERROR(conn.ExecuteScript(db.profile().migration_lock));
  }
  VIGIL_RETURN_IF_ERROR(conn.ExecuteScript(kCreateTable));
  VIGIL_ASSIGN_OR_RETURN(auto applied, ReadApplied(conn, component));
  for (const AppliedMigration& a : applied) {
    std::string where = std::string(component) + " migration " + std::to_string(a.version);
    if (a.version < 1) return Status::Corruption(where + ": invalid version");
    if (a.version > static_cast<int>(migrations.size())) {
      return Status::FailedPrecondition(where + " (" + a.name + ") is newer than this build knows (" +
                                        std::to_string(migrations.size()) + ")");
    }
    const Migration& m = migrations[a.version - 1];
    std::string want = MigrationChecksum(m.sql);
    if (a.checksum != want) {
      return Status::Corruption(where + " (" + a.name + ") was edited after it was applied: checksum " + a.checksum +
                                " recorded, " + want + " now");
    }
  }
  for (size_t v = 1; v <= applied.size(); ++v) {
    if (applied[v - 1].version != static_cast<int>(v)) {
      return Status::Corruption(std::string(component) + " migration " + std::to_string(v) +
                                " is missing from the database");
    }
  }
  int count = 0;
  for (size_t i = applied.size(); i < migrations.size(); ++i) {
    const Migration& m = migrations[i];
    std::string where = std::string(component) + " migration " + std::to_string(m.version);
    VIGIL_RETURN_IF_ERROR(conn.ExecuteScript(m.sql).WithContext(where));
    VIGIL_RETURN_IF_ERROR(conn.Execute("INSERT INTO vigil_schema_migrations (component, version, name, checksum,"
                                       " applied_at) VALUES ($1, $2, $3, $4, $5)",
                                       {component, m.version, m.name, MigrationChecksum(m.sql), now_ms})
                              .status());
    ++count;
  }
  VIGIL_RETURN_IF_ERROR(txn.Commit());
  return count;
}

Result<std::vector<AppliedMigration>> ListAppliedMigrations(Database& db, std::string_view component) {
  VIGIL_ASSIGN_OR_RETURN(Transaction txn, db.Begin(TxnMode::kRead));
  VIGIL_ASSIGN_OR_RETURN(auto rows, txn.conn().Query(db.profile().table_exists, {"vigil_schema_migrations"}));
  VIGIL_ASSIGN_OR_RETURN(int64_t exists, rows.at(0).Int(0));
  if (exists == 0) return std::vector<AppliedMigration>();
  return ReadApplied(txn.conn(), component);
}

}  // namespace vigil::meta

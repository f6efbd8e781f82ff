// The table registry in the metadata store: which catalog and table incarnation
// a name means, and where its data lives (the locator); and the check that
// fences a version claim an index job's attempt makes (version_store.h). Index
// jobs refer to tables by these incarnations, so the registry shares the job
// store's database (jobs::JobStore::catalog()) and its tables are the "jobs"
// schema component's (jobs/job_schema.cc, migration 1): admission and DROP
// TABLE read and change the registry inside the job store's own write
// transactions through the *On functions, on the same meta::Connection.
//
// Times are Unix milliseconds passed by the caller.
// Thread safety: a CatalogStore is thread-safe (its database is, and it is
// immutable after construction; the attempt check must be thread-safe too);
// the *On functions run on the caller's connection, used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/index/provider_job.h"
#include "vigil/meta/database.h"
#include "vigil/storage/version_catalog.h"

namespace vigil::catalog {

struct TableEntry {
  std::string catalog_name;
  std::string database_name;
  std::string table_name;
  std::string catalog_incarnation;
  std::string table_incarnation;
  std::string locator;  // the dataset's directory (an external table's LOCATION)
  int64_t created_at_ms = 0;
  index::TableEngine engine = index::TableEngine::kVigil;  // LANCE: an external Lance table

  bool operator==(const TableEntry&) const = default;
};

// Asked inside a version claim's write transaction, on its connection, when the claim is an
// index job attempt's (claim.txn.job_id set): OK while that attempt may still commit, else the
// error the claim fails with. `now_ms` is the version catalog's clock. The job store supplies
// it (the job's state and the leader lease are its rows).
using AttemptCheck = std::function<Status(meta::Connection& conn, const VersionClaim& claim, int64_t now_ms)>;

class CatalogStore {
 public:
  // `db` outlives the store and holds the "jobs" schema component. Without `attempt_check`
  // every claim an index job's attempt makes fails (FailedPrecondition).
  explicit CatalogStore(meta::Database* db, AttemptCheck attempt_check = nullptr)
      : db_(db), attempt_check_(std::move(attempt_check)) {}

  meta::Database& database() const { return *db_; }
  // In a version claim's transaction: OK while the claiming attempt may still commit.
  Status CheckAttemptOn(meta::Connection& conn, const VersionClaim& claim, int64_t now_ms) const;

  // Whether the table's database exists (its directory), asked while the catalog is locked.
  using DatabaseCheck = std::function<Status()>;

  // Registers a new table (and its catalog on first use) with a fresh random table incarnation.
  // AlreadyExists when the name is registered. With `database_exists`, it is asked inside the
  // registering transaction, which holds the catalog's lock (LockCatalogOn): a DROP DATABASE,
  // which holds it too, is wholly before (the registration fails as it says) or after.
  Result<TableEntry> RegisterTable(const std::string& catalog, const std::string& database, const std::string& table,
                                   const std::string& locator, int64_t now_ms,
                                   index::TableEngine engine = index::TableEngine::kVigil,
                                   const DatabaseCheck& database_exists = nullptr);
  // The same with the caller's table incarnation (a UUID, unique for ever).
  Result<TableEntry> RegisterTable(const std::string& catalog, const std::string& database, const std::string& table,
                                   const std::string& table_incarnation, const std::string& locator, int64_t now_ms,
                                   index::TableEngine engine = index::TableEngine::kVigil,
                                   const DatabaseCheck& database_exists = nullptr);
  // The registered tables of one database, by table name.
  Result<std::vector<TableEntry>> ListTables(const std::string& catalog, const std::string& database);
  Result<std::optional<TableEntry>> LookupTable(const std::string& catalog, const std::string& database,
                                                const std::string& table);

  // On the caller's transaction: the registered table, its row locked when `lock`.
  static Result<std::optional<TableEntry>> LookupOn(meta::Connection& conn, const std::string& catalog,
                                                    const std::string& database, const std::string& table, bool lock);
  // On the caller's write transaction: the catalog's incarnation (registering the catalog on
  // first use), its row locked until the transaction ends. Registrations and DROP DATABASE
  // take it, so they are serialized per catalog.
  static Result<std::string> LockCatalogOn(meta::Connection& conn, const std::string& catalog, int64_t now_ms);
  // On the caller's transaction: the registered tables of one database, by table name.
  static Result<std::vector<TableEntry>> ListTablesOn(meta::Connection& conn, const std::string& catalog,
                                                      const std::string& database);
  // On the caller's transaction: removes the registration of a table incarnation.
  static Status DeleteOn(meta::Connection& conn, const std::string& table_incarnation);
  // On the caller's write transaction: locks the registry row of a table incarnation (when
  // registered) until the transaction ends, as LookupOn with `lock` does by name.
  static Status LockIncarnationOn(meta::Connection& conn, const std::string& table_incarnation);

 private:
  meta::Database* const db_;
  const AttemptCheck attempt_check_;
};

}  // namespace vigil::catalog

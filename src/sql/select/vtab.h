// The SQLite virtual-table modules behind SELECT (internal to sql/):
//   vigil_table          one per Vigil table, "vigil:<catalog>.<db>.<table>": the table's
//                        columns, constraints =, <, <=, >, >=, IN, IS NULL pushed to FilterRows
//                        (BTREE/BITMAP segments for covered fragments);
//   vigil_vector_search  one per table, "vigil_vs:<catalog>.<db>.<table>": the columns plus
//                        _distance; hidden arguments (column, query, k, options, prefilter spec,
//                        prefilter values p0..p31) supplied by the rewrite;
//   vigil_fts_search     one per table, "vigil_fts:...": the columns plus _score;
//   vigil_indexes, vigil_index_entries, vigil_orphans, vigil_index_jobs: eponymous-only.
// Values: integers, DATE (days), TIMESTAMP (micros) and BOOL are INTEGER; FLOAT/DOUBLE and
// DECIMAL are REAL; STRING is TEXT; VECTOR is a BLOB of little-endian FLOAT32 elements.
// Every module reads the statement's leased snapshot through the VtabHost.
// Thread safety: one thread at a time (the engine's connection).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/auth/principal.h"
#include "vigil/common/config.h"
#include "vigil/common/status.h"
#include "vigil/query/io_recorder.h"
#include "vigil/query/snapshot.h"
#include "vigil/storage/root.h"

namespace vigil::jobs {
class JobStore;
}

namespace vigil::sql::internal {

enum class VtabKind { kTable, kVectorSearch, kFtsSearch };

// "vigil:local.db.t", "vigil_vs:local.db.t", "vigil_fts:local.db.t".
std::string VtabName(VtabKind kind, const vigil::TableName& table);

// What one table access did (for EXPLAIN ANALYZE): filled by the cursors.
struct AccessStats {
  std::string table;   // catalog.db.table
  std::string access;  // "scan", "filter", "vector_search", "fts_search", "metadata"
  std::string plan;    // the pushed predicates, e.g. "ts >= ? AND category IN (?)"
  uint64_t filter_calls = 0;
  uint64_t rows = 0;                            // rows produced
  std::shared_ptr<query::IoRecorder> recorder;  // set when the statement is analyzed
};

// The statement-scoped services the modules need; implemented by the engine.
class VtabHost {
 public:
  virtual ~VtabHost() = default;
  // The snapshot leased for the current statement (acquired on first use).
  virtual Result<const query::TableSnapshot*> Snapshot(const vigil::TableName& table) = 0;
  // The stats record of one access (one per vtab cursor kind and table in a statement).
  virtual AccessStats* Access(const std::string& key) = 0;
  virtual bool analyzing() const = 0;
  virtual const auth::Principal& principal() const = 0;
  virtual jobs::JobStore* store() const = 0;
  virtual const Root& root() const = 0;
  virtual size_t max_rows() const = 0;
  virtual const LanceConfig& lance() const = 0;
  // Records a typed error for the statement (returned instead of SQLite's text).
  virtual void SetError(const Status& status) = 0;
};

// Registers every module on `db`; `host` outlives the connection.
Status RegisterModules(sqlite3* db, VtabHost* host);

// Sets a vtab error message and records `status` with the host; returns SQLITE_ERROR.
int VtabError(sqlite3_vtab* vtab, VtabHost* host, const Status& status);

// Converts a SQLite value to a Vigil value of `type`, exactly; nullopt when the value
// cannot be represented exactly (a pushed predicate is then skipped or rejected).
std::optional<vigil::Value> ToVigilValue(sqlite3_value* v, const DataType& type);
// Sets a cell of a result row from a Vigil value of `type`.
void ResultValue(sqlite3_context* ctx, const vigil::Value& v, const DataType& type);
// The declared type of a VECTOR column: BLOB affinity, and the name by which a
// statement's result marks the column's cells as vectors (sqlite3_column_decltype).
inline constexpr std::string_view kVectorDeclaredType = "VECTOR BLOB";

// The SQLite declared type of a Vigil type ("INTEGER", "REAL", "TEXT", kVectorDeclaredType).
const char* SqliteType(const DataType& type);

// `CREATE TABLE x(...)` declaration of a table's columns (plus extra column text).
std::string DeclareColumns(const Schema& schema, const std::string& extra);

}  // namespace vigil::sql::internal

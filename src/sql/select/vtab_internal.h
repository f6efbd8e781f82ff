// Pieces shared by the virtual-table modules (internal to the vtab_*.cc files):
// the common vtab object, the encoding of pushed constraints between
// xBestIndex and xFilter, and their conversion into FilterRows conjuncts.
// Thread safety: one thread at a time (the engine's connection).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sql/select/vtab.h"
#include "vigil/query/query.h"

namespace vigil::sql::internal {

// A Vigil table's vtab (table, vector_search and fts_search modules).
struct VigilVtab : sqlite3_vtab {
  VtabHost* host = nullptr;
  vigil::TableName table;
  SchemaPtr schema;
};

// One constraint chosen in xBestIndex: a table column, a Vigil operator, and
// whether its value is an all-at-once IN list.
struct PushedConstraint {
  int column = 0;
  index::ScalarPredicate::Op op = index::ScalarPredicate::Op::kEq;
  bool in_list = false;
};

// The Vigil operator of a SQLite constraint on a column of `type`; nullopt when not pushed.
std::optional<index::ScalarPredicate::Op> PushableOp(int sqlite_op, const DataType& type);
// idxStr text carrying the constraints and the columns used; and back.
std::string EncodePushed(const std::vector<PushedConstraint>& pushed, uint64_t col_used);
std::vector<PushedConstraint> DecodePushed(const std::string& text, uint64_t* col_used);
// "ts >= ? AND category IN (?)", or "" when nothing is pushed.
std::string DescribePushed(const Schema& schema, const std::vector<PushedConstraint>& pushed);
// The conjuncts of `pushed` with their xFilter values (argv in order, IS NULL takes none).
// Inexact values: skipped (exact = false) or InvalidArgument (exact = true). *empty is set
// when a NULL value makes the conjunction unsatisfiable.
Result<std::vector<query::ColumnPredicate>> BuildConjuncts(const Schema& schema,
                                                           const std::vector<PushedConstraint>& pushed,
                                                           sqlite3_value** argv, int argc, bool exact, bool* empty);

// The rows at `rows` (in that order) projected to `columns` (non-empty), like
// query::TakeRows, but reading each needed block of a fragment once.
Result<RecordBatch> TakeRowsBlocked(const query::TableSnapshot& snap, const std::vector<RowAddress>& rows,
                                    const std::vector<std::string>& columns);

// xCreate/xConnect shared by the per-table modules: argv[3] is the quoted table name;
// `extra` declares the module's columns after the table's.
int ConnectVigilVtab(sqlite3* db, VtabHost* host, int argc, const char* const* argv, const std::string& extra,
                     sqlite3_vtab** out, char** err);
int DisconnectVigilVtab(sqlite3_vtab* vtab);

const sqlite3_module* TableModule();
const sqlite3_module* VectorSearchModule();
const sqlite3_module* FtsSearchModule();
// Eponymous-only metadata modules by name: vigil_indexes, vigil_index_entries, vigil_orphans,
// vigil_index_jobs.
std::vector<std::pair<const char*, const sqlite3_module*>> MetadataModules();

}  // namespace vigil::sql::internal

// Vigil's token rewrite of a SELECT before SQLite sees it:
//   - `[catalog.]db.table` in a FROM/JOIN position becomes the table's virtual
//     table `"vigil:catalog.db.table" AS table` (an alias written by the user is kept);
//   - TIMESTAMP '...' becomes integer microseconds, DATE '...' integer days
//     (the storage representation the virtual tables return);
//   - bare `?` parameters are numbered (`?1`, `?2`, ...) so moved values keep their slot;
//   - vector_search(table, column, query, k [, options]) becomes its per-table
//     virtual table called with hidden arguments, and fts_search(table, column, query, k)
//     likewise. WHERE conjuncts at the same SELECT level that compare one of the
//     table's columns with a constant (=, <, <=, >, >=, IN (...), BETWEEN, IS NULL;
//     constants are literals, typed literals and parameters) are moved into
//     vector_search's prefilter (applied before top-k) and also kept in the WHERE.
//     Any other conjunct on the table's columns (OR, functions, LIKE, IS NOT NULL,
//     column-to-column) is an InvalidArgument error pointing at it: it would only
//     filter after top-k, so it must go into the "filter" option or an outer query.
//     Conjuncts on _distance / _score only are left to SQLite (they filter the top-k), and
//     so are join conditions `a.x OP b.y` between its columns and another FROM item's
//     (like ON clauses, they combine the top-k rows with the other table).
//     fts_search has no prefilter: any conjunct on its table's columns is an error.
//   - vigil_indexes, vigil_index_entries, vigil_orphans and vigil_index_jobs are
//     eponymous virtual tables and pass through unchanged.
// Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sql/select/vtab.h"
#include "vigil/common/status.h"
#include "vigil/sql/ast.h"

namespace vigil::sql::internal {

struct RewriteTable {
  VtabKind kind = VtabKind::kTable;
  vigil::TableName name;
  bool operator==(const RewriteTable& o) const { return kind == o.kind && name.ToString() == o.name.ToString(); }
};

struct RewriteResult {
  std::string sql;
  std::vector<RewriteTable> tables;  // distinct virtual tables the statement reads
  std::vector<std::string> notes;    // what was pushed where, for EXPLAIN
};

// The schema of a Vigil table; NotFound for an unknown table.
using SchemaLookup = std::function<Result<SchemaPtr>(const vigil::TableName&)>;

// Rewrites one SELECT / WITH statement (its tokens; the text between them, comments
// included, is kept, so column names read as written). Errors are InvalidArgument
// "line L, column C: ..." (positions of the original text), or the lookup's error.
Result<RewriteResult> RewriteSelect(const SelectStatement& select, const SchemaLookup& schema);

}  // namespace vigil::sql::internal

// SELECT and EXPLAIN [ANALYZE] over Vigil tables on SQLite's engine: Vigil
// tables are SQLite virtual tables (eponymous, in one in-memory connection, no
// ATTACH per database) with constraints pushed down to BTREE/BITMAP segments,
// plus the table functions vector_search, fts_search, vigil_indexes,
// vigil_index_entries, vigil_orphans and the vigil_index_jobs table. Vigil's
// tokenizer rewrites `[catalog.]db.table` names, typed literals and the table
// functions before SQLite sees the text. Every statement reads one leased
// generation per table, released when the statement resets.
// The SQLite connection is locked down: only SELECT, reads of Vigil's tables and
// table functions, and an allowlist of functions (PermissionDenied otherwise); no
// extensions, ATTACH or PRAGMA. A statement running past its statement timeout
// ends with DeadlineExceeded and the engine stays usable.
// Thread safety: one thread at a time per engine (one SQLite connection).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vigil/common/config.h"
#include "vigil/common/status.h"
#include "vigil/sql/ast.h"
#include "vigil/sql/generation_pool.h"
#include "vigil/sql/result.h"
#include "vigil/storage/root.h"
#include "vigil/storage/schema.h"

namespace vigil {
namespace jobs {
class JobStore;
struct Principal;
}  // namespace jobs
}  // namespace vigil

namespace vigil::sql {

struct SelectOptions {
  size_t max_rows = 1'000'000;        // more is ResourceExhausted, never a truncated result
  uint64_t statement_timeout_ms = 0;  // 0: no timeout
  // Bounds of the generations this engine opens (vigil.toml [generations]) when it has a
  // pool of its own; the budgets are shared by every table the engine reads.
  GenerationsConfig generations;
  // How the metadata functions read an external Lance table's indexes (vigil.toml [lance]).
  LanceConfig lance;
  // The process's generations (one manager per table, one budget), shared with every other
  // engine given the same pool, of the same root; null: the engine has a pool of its own, of
  // `generations`' bounds.
  std::shared_ptr<GenerationPool> pool;
};

class SelectEngine {
 public:
  virtual ~SelectEngine() = default;
  // `root` and `store` outlive the engine.
  static Result<std::unique_ptr<SelectEngine>> Open(const Root& root, jobs::JobStore* store,
                                                    SelectOptions options = {});

  // Runs a SELECT / WITH statement with optional bound parameters (? / ?N).
  virtual Result<ResultSet> Select(const SelectStatement& stmt, const auth::Principal& who,
                                   const std::vector<Value>& params = {}) = 0;
  // EXPLAIN: SQLite's plan plus Vigil's access per table; ANALYZE also runs the statement
  // and lists per table access the segments used (`_indices/<uuid>` paths) and physical reads.
  virtual Result<ResultSet> Explain(const ExplainStatement& stmt, const auth::Principal& who,
                                    const std::vector<Value>& params = {}) = 0;
  // The schema of `table` a SELECT started now reads (NotFound when `who` may not see it).
  virtual Result<SchemaPtr> CurrentSchema(const vigil::TableName& table, const auth::Principal& who) = 0;
  // The statement timeout of statements started from now on (0: none).
  virtual void SetStatementTimeout(uint64_t ms) = 0;
  // Drops cached table handles after DDL (DROP/CREATE TABLE) in this process.
  virtual void InvalidateTable(const std::string& db, const std::string& table) = 0;
};

}  // namespace vigil::sql

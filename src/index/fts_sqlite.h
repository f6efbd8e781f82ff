// SQLite FTS5 plumbing shared by full-text segments and the in-memory index:
// status conversion, statements, the table layout, and the two auxiliary
// functions that read BM25 statistics and score rows.
//
// Layout of an FTS database: `t` is an FTS5 table with one column `doc`
// (rowid = row address; contentless since format 2: the index without a copy
// of the text) holding, besides the documents, one sentinel row
// (rowid kSentinelRowid, text kSentinelText); `vigil_fts_meta` holds the
// format number and tokenizer. The sentinel lets statistics be read for any
// query, even one that matches no document: the query `(Q) OR "sentinel"`
// always matches the sentinel row first, where the auxiliary function counts,
// per phrase of Q, the documents of the whole table containing it
// (xQueryPhrase) and reads the row count and token total. The sentinel is
// subtracted from every statistic and never returned.
//
// Thread safety: a connection (and everything run on it) is used by one
// thread at a time; the functions here keep no shared state.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/index/fts.h"

namespace vigil::index::fts_internal {

inline constexpr int64_t kSentinelRowid = std::numeric_limits<int64_t>::min();
inline constexpr char kSentinelText[] = "vigilftssentinel";
inline constexpr int kFtsFormat = 2;             // contentless; written by builds
inline constexpr int kFtsFormatWithContent = 1;  // earlier segments; the in-memory index
inline constexpr size_t kMaxQueryBytes = 64 << 10;

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using SqliteDb = std::unique_ptr<sqlite3, SqliteCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// A Status for SQLite result code `rc` (Corruption for CORRUPT/NOTADB, IOError,
// ResourceExhausted, Busy, InvalidArgument for constraint errors, else Internal),
// with `what` and sqlite3_errmsg(db) in the message.
Status SqliteStatus(sqlite3* db, int rc, std::string_view what);

// The FTS5 `tokenize` option for params.tokenizer; InvalidArgument when unknown.
Result<std::string> TokenizerOption(const FtsParams& params);
// Opens `filename` with `flags`, enables defensive mode and registers the auxiliary functions.
Result<SqliteDb> OpenConnection(const std::string& filename, int flags);
// The connection's FTS5 extension API; NotSupported before its version 2.
Result<fts5_api*> GetFts5Api(sqlite3* db);
// A `file:` URI that opens `path` read-only and immutable.
std::string ImmutableUri(const std::string& path);

Status Exec(sqlite3* db, const char* sql);
Result<Stmt> Prepare(sqlite3* db, std::string_view sql);

// Creates `t` in `format`, `vigil_fts_meta` and the sentinel row in an empty
// database. Only a table with content refuses a row address inserted twice.
Status CreateFtsTables(sqlite3* db, const FtsParams& params, int format);
// Corruption unless the database has this layout, format and tokenizer.
Status CheckFtsTables(sqlite3* db, const FtsParams& params);

// `INSERT INTO t(rowid, doc) VALUES(?1, ?2)`.
Result<Stmt> PrepareInsert(sqlite3* db);
// Adds one document through a PrepareInsert statement; InvalidArgument for the
// sentinel row address or (in a table with content) one already present.
Status InsertDocument(sqlite3* db, sqlite3_stmt* insert, RowAddress row, std::string_view text);

// Statistics of the documents in `t` for `query`; InvalidArgument for a malformed query.
Result<FtsStats> QueryStats(sqlite3* db, const std::string& query);
// The best `k` documents of `t` matching `query` that pass `filter` (may be null),
// scored with `table_stats`.
Result<std::vector<FtsHit>> QueryTopK(sqlite3* db, const std::string& query, const FtsStats& table_stats,
                                      const RowFilter* filter, uint32_t k);

}  // namespace vigil::index::fts_internal

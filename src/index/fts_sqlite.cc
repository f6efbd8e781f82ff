// SQLite FTS5 plumbing for full-text segments; see fts_sqlite.h.
#include "index/fts_sqlite.h"

#include <algorithm>
#include <cctype>

#include "index/fts_bm25.h"
#include "vigil/common/sqlite_status.h"

namespace vigil::index::fts_internal {

namespace {

constexpr char kStatsPointerType[] = "vigil_fts_stats_call";
constexpr char kScorePointerType[] = "vigil_fts_score_call";

// Filled by vigil_fts_stats(t, call) on the sentinel row of `(Q) OR "sentinel"`.
struct StatsCall {
  sqlite3_int64 rows = 0;
  sqlite3_int64 tokens = 0;
  int sentinel_tokens = 0;
  std::vector<uint64_t> doc_freq;  // per phrase of Q
  bool called = false;
};

// Read by vigil_fts_score(t, call) on every matching row.
struct ScoreCall {
  const FtsStats* stats = nullptr;
  const RowFilter* filter = nullptr;
  std::vector<double> idf;  // per phrase; filled on the first scored row
  bool prepared = false;
  std::vector<uint64_t> tf;  // scratch
};

void ResultError(sqlite3_context* out, const char* message, int code) {
  sqlite3_result_error(out, message, -1);
  sqlite3_result_error_code(out, code);
}

int CountDocument(const Fts5ExtensionApi* api, Fts5Context* ctx, void* count) {
  if (api->xRowid(ctx) != kSentinelRowid) ++*static_cast<uint64_t*>(count);
  return SQLITE_OK;
}

void StatsFunction(const Fts5ExtensionApi* api, Fts5Context* ctx, sqlite3_context* out, int argc,
                   sqlite3_value** argv) {
  auto* call = argc == 1 ? static_cast<StatsCall*>(sqlite3_value_pointer(argv[0], kStatsPointerType)) : nullptr;
  if (call == nullptr) return ResultError(out, "vigil_fts_stats: bad arguments", SQLITE_MISUSE);
  if (api->xRowid(ctx) != kSentinelRowid) {
    return ResultError(out, "full-text database lacks its sentinel row", SQLITE_CORRUPT);
  }
  int rc = api->xRowCount(ctx, &call->rows);
  if (rc == SQLITE_OK) rc = api->xColumnTotalSize(ctx, 0, &call->tokens);
  if (rc == SQLITE_OK) rc = api->xColumnSize(ctx, 0, &call->sentinel_tokens);
  int phrases = std::max(api->xPhraseCount(ctx) - 1, 0);  // the last phrase is the sentinel's
  call->doc_freq.assign(phrases, 0);
  for (int i = 0; rc == SQLITE_OK && i < phrases; ++i) {
    rc = api->xQueryPhrase(ctx, i, &call->doc_freq[i], CountDocument);
  }
  if (rc != SQLITE_OK) return sqlite3_result_error_code(out, rc);
  call->called = true;
  sqlite3_result_null(out);
}

void PrepareScoring(const Fts5ExtensionApi* api, Fts5Context* ctx, ScoreCall* call) {
  int phrases = api->xPhraseCount(ctx);
  call->idf.resize(phrases);
  for (int i = 0; i < phrases; ++i) {
    auto it = call->stats->doc_freq.find(PhraseKey(i));
    call->idf[i] = Bm25Idf(call->stats->documents, it == call->stats->doc_freq.end() ? 0 : it->second);
  }
  call->prepared = true;
}

// Phrase frequencies of the current row into call->tf.
int CountPhrases(const Fts5ExtensionApi* api, Fts5Context* ctx, ScoreCall* call) {
  call->tf.assign(call->idf.size(), 0);
  int instances = 0;
  int rc = api->xInstCount(ctx, &instances);
  for (int j = 0; rc == SQLITE_OK && j < instances; ++j) {
    int phrase = 0, column = 0, offset = 0;
    rc = api->xInst(ctx, j, &phrase, &column, &offset);
    if (rc == SQLITE_OK && phrase >= 0 && static_cast<size_t>(phrase) < call->tf.size()) ++call->tf[phrase];
  }
  return rc;
}

void ScoreFunction(const Fts5ExtensionApi* api, Fts5Context* ctx, sqlite3_context* out, int argc,
                   sqlite3_value** argv) {
  auto* call = argc == 1 ? static_cast<ScoreCall*>(sqlite3_value_pointer(argv[0], kScorePointerType)) : nullptr;
  if (call == nullptr) return ResultError(out, "vigil_fts_score: bad arguments", SQLITE_MISUSE);
  sqlite3_int64 rowid = api->xRowid(ctx);
  if (rowid == kSentinelRowid || (call->filter && !call->filter->Accept(static_cast<RowAddress>(rowid)))) {
    return sqlite3_result_null(out);
  }
  if (call->stats->documents == 0) return ResultError(out, "table statistics cover no documents", SQLITE_RANGE);
  if (!call->prepared) PrepareScoring(api, ctx, call);
  int doc_length = 0;
  int rc = CountPhrases(api, ctx, call);
  if (rc == SQLITE_OK) rc = api->xColumnSize(ctx, 0, &doc_length);
  if (rc != SQLITE_OK) return sqlite3_result_error_code(out, rc);
  double avg = static_cast<double>(call->stats->total_tokens) / static_cast<double>(call->stats->documents);
  double score = 0;
  for (size_t i = 0; i < call->idf.size(); ++i) {
    score += Bm25TermScore(call->idf[i], call->tf[i], static_cast<uint64_t>(std::max(doc_length, 0)), avg);
  }
  sqlite3_result_double(out, score);
}

Status RegisterFunctions(sqlite3* db) {
  VIGIL_ASSIGN_OR_RETURN(fts5_api * api, GetFts5Api(db));
  int rc = api->xCreateFunction(api, "vigil_fts_stats", nullptr, StatsFunction, nullptr);
  if (rc == SQLITE_OK) rc = api->xCreateFunction(api, "vigil_fts_score", nullptr, ScoreFunction, nullptr);
  return rc == SQLITE_OK ? Status::OK() : SqliteStatus(db, rc, "registering FTS5 functions");
}

Status CheckQueryText(const std::string& query) {
  if (query.size() > kMaxQueryBytes) {
    return Status::InvalidArgument("full-text query exceeds " + std::to_string(kMaxQueryBytes) + " bytes");
  }
  if (query.find('\0') != std::string::npos) return Status::InvalidArgument("full-text query contains a NUL byte");
  if (query.find_first_not_of(" \t\n\r\f\v") == std::string::npos) {
    return Status::InvalidArgument("empty full-text query");
  }
  return Status::OK();
}

// FTS5 reports query syntax errors (and unknown columns) as SQLITE_ERROR.
Status QueryError(sqlite3* db, int rc, const std::string& query) {
  if ((rc & 0xff) == SQLITE_ERROR) {
    return Status::InvalidArgument("malformed full-text query '" + query.substr(0, 200) + "': " + sqlite3_errmsg(db));
  }
  return SqliteStatus(db, rc, "full-text query");
}

// Parses `query` alone (evaluated on the sentinel row only): InvalidArgument when malformed.
Status CheckQuerySyntax(sqlite3* db, const std::string& query) {
  VIGIL_RETURN_IF_ERROR(CheckQueryText(query));
  VIGIL_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, "SELECT rowid FROM t WHERE t MATCH ?1 AND rowid = ?2"));
  int rc = sqlite3_bind_text(stmt.get(), 1, query.data(), static_cast<int>(query.size()), SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(stmt.get(), 2, kSentinelRowid);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "binding a full-text query");
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
  }
  return rc == SQLITE_DONE ? Status::OK() : QueryError(db, rc, query);
}

// Format 1 kept a copy of every document in the database; format 2 is
// contentless: the table holds the text, scoring needs only the index.
std::string CreateTableSql(const std::string& tokenizer_option, int64_t format) {
  std::string sql = "CREATE VIRTUAL TABLE t USING fts5(doc, tokenize = '" + tokenizer_option + "'";
  return sql + (format == kFtsFormatWithContent ? ")" : ", content = '')");
}

// Reading a checksum-verified database failed: unless the failure is the
// environment's (I/O, memory), the file is not a valid FTS database.
Status AsCorruption(const Status& st) {
  if (st.ok() || st.Is(StatusCode::kIOError) || st.Is(StatusCode::kResourceExhausted)) return st;
  return Status::Corruption("not a valid full-text segment: " + st.message());
}

// The database's format, after checking its tokenizer.
Result<int64_t> CheckMetaRow(sqlite3* db, const FtsParams& params) {
  VIGIL_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, "SELECT format, tokenizer FROM vigil_fts_meta"));
  int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_DONE) return Status::Corruption("full-text segment has no format row");
  if (rc != SQLITE_ROW) return SqliteStatus(db, rc, "reading vigil_fts_meta");
  int64_t format = sqlite3_column_int64(stmt.get(), 0);
  const unsigned char* tok = sqlite3_column_text(stmt.get(), 1);
  std::string tokenizer = tok ? reinterpret_cast<const char*>(tok) : "";
  if (format != kFtsFormat && format != kFtsFormatWithContent) {
    return Status::Corruption("unknown full-text segment format " + std::to_string(format));
  }
  if (tokenizer != params.tokenizer) {
    return Status::Corruption("full-text segment tokenizer '" + tokenizer + "' differs from the manifest's '" +
                              params.tokenizer + "'");
  }
  rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_ROW) return Status::Corruption("full-text segment has several format rows");
  if (rc != SQLITE_DONE) return SqliteStatus(db, rc, "reading vigil_fts_meta");
  return format;
}

Status CheckTableSql(sqlite3* db, const FtsParams& params, int64_t format) {
  VIGIL_ASSIGN_OR_RETURN(std::string option, TokenizerOption(params));
  VIGIL_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 't'"));
  int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) {
    return rc == SQLITE_DONE ? Status::Corruption("full-text segment has no table t")
                             : SqliteStatus(db, rc, "reading the schema");
  }
  const unsigned char* sql = sqlite3_column_text(stmt.get(), 0);
  if (sql == nullptr || CreateTableSql(option, format) != reinterpret_cast<const char*>(sql)) {
    return Status::Corruption("full-text segment table t has an unexpected definition");
  }
  return Status::OK();
}

}  // namespace

Result<fts5_api*> GetFts5Api(sqlite3* db) {
  fts5_api* api = nullptr;
  VIGIL_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, "SELECT fts5(?1)"));
  int rc = sqlite3_bind_pointer(stmt.get(), 1, &api, "fts5_api_ptr", nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return SqliteStatus(db, rc, "fts5 api");
  if (api == nullptr || api->iVersion < 2) return Status::NotSupported("SQLite lacks the FTS5 extension API v2");
  return api;
}

Status SqliteStatus(sqlite3* db, int rc, std::string_view what) {
  std::string msg = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  return vigil::SqliteStatus(rc, db ? sqlite3_extended_errcode(db) : rc, std::move(msg));
}

Result<std::string> TokenizerOption(const FtsParams& params) {
  const std::string& t = params.tokenizer;
  if (t == "unicode61" || t == "ascii" || t == "trigram") return t;
  if (t == "porter") return std::string("porter unicode61");
  return Status::InvalidArgument("unknown FTS tokenizer '" + t + "'; supported: unicode61, porter, ascii, trigram");
}

Result<SqliteDb> OpenConnection(const std::string& filename, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(filename.c_str(), &raw, flags, nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) return SqliteStatus(db.get(), rc, "opening " + filename);
  sqlite3_extended_result_codes(db.get(), 1);
  rc = sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db.get(), rc, "configuring " + filename);
  VIGIL_RETURN_IF_ERROR(RegisterFunctions(db.get()));
  return db;
}

std::string ImmutableUri(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  return uri + "?immutable=1";
}

Status Exec(sqlite3* db, const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::OK() : SqliteStatus(db, rc, sql);
}

Result<Stmt> Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  Stmt stmt(raw);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "preparing " + std::string(sql));
  return stmt;
}

Status CreateFtsTables(sqlite3* db, const FtsParams& params, int format) {
  VIGIL_ASSIGN_OR_RETURN(std::string option, TokenizerOption(params));
  VIGIL_CHECK(format == kFtsFormat || format == kFtsFormatWithContent);
  VIGIL_RETURN_IF_ERROR(Exec(db, CreateTableSql(option, format).c_str()));
  VIGIL_RETURN_IF_ERROR(Exec(db, "CREATE TABLE vigil_fts_meta(format INTEGER NOT NULL, tokenizer TEXT NOT NULL)"));
  VIGIL_ASSIGN_OR_RETURN(Stmt meta, Prepare(db, "INSERT INTO vigil_fts_meta VALUES(?1, ?2)"));
  int rc = sqlite3_bind_int(meta.get(), 1, format);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(meta.get(), 2, params.tokenizer.c_str(), -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(meta.get());
  if (rc != SQLITE_DONE) return SqliteStatus(db, rc, "writing vigil_fts_meta");
  VIGIL_ASSIGN_OR_RETURN(Stmt sentinel, PrepareInsert(db));
  rc = sqlite3_bind_int64(sentinel.get(), 1, kSentinelRowid);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(sentinel.get(), 2, kSentinelText, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(sentinel.get());
  return rc == SQLITE_DONE ? Status::OK() : SqliteStatus(db, rc, "writing the sentinel row");
}

Result<Stmt> PrepareInsert(sqlite3* db) { return Prepare(db, "INSERT INTO t(rowid, doc) VALUES(?1, ?2)"); }

Status InsertDocument(sqlite3* db, sqlite3_stmt* insert, RowAddress row, std::string_view text) {
  auto rowid = static_cast<sqlite3_int64>(row);
  if (rowid == kSentinelRowid) return Status::InvalidArgument("row address " + std::to_string(row) + " is reserved");
  if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Status::InvalidArgument("document of row " + std::to_string(row) + " is too long to index");
  }
  int rc = sqlite3_bind_int64(insert, 1, rowid);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(insert, 2, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(insert);
  sqlite3_reset(insert);
  if (rc == SQLITE_DONE) return Status::OK();
  if ((rc & 0xff) == SQLITE_CONSTRAINT) {
    return Status::InvalidArgument("row address " + std::to_string(row) + " was already indexed");
  }
  return SqliteStatus(db, rc, "indexing row " + std::to_string(row));
}

Status CheckFtsTables(sqlite3* db, const FtsParams& params) {
  Result<int64_t> format = CheckMetaRow(db, params);
  VIGIL_RETURN_IF_ERROR(AsCorruption(format.status()));
  VIGIL_RETURN_IF_ERROR(AsCorruption(CheckTableSql(db, params, *format)));
  return AsCorruption(QueryStats(db, kSentinelText).status());
}

Result<FtsStats> QueryStats(sqlite3* db, const std::string& query) {
  VIGIL_RETURN_IF_ERROR(CheckQuerySyntax(db, query));
  VIGIL_ASSIGN_OR_RETURN(Stmt stmt,
                         Prepare(db, "SELECT vigil_fts_stats(t, ?2) FROM t WHERE t MATCH ?1 ORDER BY rowid LIMIT 1"));
  std::string anchored = "(" + query + ") OR \"" + kSentinelText + "\"";
  StatsCall call;
  int rc = sqlite3_bind_text(stmt.get(), 1, anchored.data(), static_cast<int>(anchored.size()), SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_pointer(stmt.get(), 2, &call, kStatsPointerType, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "binding a full-text query");
  rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_DONE) return Status::Corruption("full-text database lacks its sentinel row");
  if (rc != SQLITE_ROW) return QueryError(db, rc, query);
  VIGIL_CHECK(call.called);
  if (call.rows < 1 || call.tokens < call.sentinel_tokens) {
    return Status::Corruption("full-text database statistics are inconsistent");
  }
  FtsStats stats;
  stats.documents = static_cast<uint64_t>(call.rows - 1);
  stats.total_tokens = static_cast<uint64_t>(call.tokens - call.sentinel_tokens);
  for (size_t i = 0; i < call.doc_freq.size(); ++i) stats.doc_freq[PhraseKey(static_cast<int>(i))] = call.doc_freq[i];
  return stats;
}

Result<std::vector<FtsHit>> QueryTopK(sqlite3* db, const std::string& query, const FtsStats& table_stats,
                                      const RowFilter* filter, uint32_t k) {
  VIGIL_RETURN_IF_ERROR(CheckQueryText(query));
  VIGIL_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, "SELECT rowid, vigil_fts_score(t, ?2) FROM t WHERE t MATCH ?1"));
  ScoreCall call;
  call.stats = &table_stats;
  call.filter = filter;
  int rc = sqlite3_bind_text(stmt.get(), 1, query.data(), static_cast<int>(query.size()), SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_pointer(stmt.get(), 2, &call, kScorePointerType, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "binding a full-text query");
  TopK top(k);
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    if (sqlite3_column_type(stmt.get(), 1) == SQLITE_NULL) continue;
    top.Offer(
        FtsHit{static_cast<RowAddress>(sqlite3_column_int64(stmt.get(), 0)), sqlite3_column_double(stmt.get(), 1)});
  }
  if (rc != SQLITE_DONE) return QueryError(db, rc, query);
  return top.Take();
}

}  // namespace vigil::index::fts_internal

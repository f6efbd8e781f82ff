// SelectEngine on one in-memory SQLite connection: Vigil tables and table
// functions are virtual tables created on first use (in the temp schema, no
// ATTACH), statements are rewritten once per text (while the schemas they read
// stay) and prepared once per rewritten text, and
// every statement holds one lease per table it reads (a GenerationManager per
// table, refreshed when the statement first touches the table), released when
// the statement resets. The connection is locked down (sql_lockdown.h) and every
// statement runs under its statement_timeout (statement_deadline.h).
#include "vigil/sql/select_engine.h"
#include "vigil/common/env.h"

#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <map>

#include "sql/select/select_rewrite.h"
#include "sql/select/sql_lockdown.h"
#include "sql/select/statement_deadline.h"
#include "sql/select/vtab.h"
#include "vigil/auth/principal.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/sqlite_status.h"
#include "vigil/generations/generation_manager.h"
#include "vigil/jobs/job_store.h"
#include "vigil/sql/parser.h"
#include "vigil/storage/root.h"

namespace vigil::sql {

namespace {

using internal::AccessStats;
using internal::RewriteResult;
using internal::RewriteTable;
using internal::VtabKind;

constexpr size_t kMaxCachedStatements = 64;
// SQLite VM steps between two checks of the statement deadline.
constexpr int kDeadlineCheckSteps = 1000;

// A BLOB of whole FLOAT32 elements in a column declared as a VECTOR is a FloatVector.
Value VectorOrBlob(const char* p, size_t bytes, bool vector_column) {
  if (!vector_column || bytes % sizeof(float) != 0) return Value(Blob{std::string(p ? p : "", bytes)});
  FloatVector v;
  v.values.resize(bytes / sizeof(float));
  if (bytes > 0) std::memcpy(v.values.data(), p, bytes);
  return Value(std::move(v));
}

// Whether the statement's column `i` reads a VECTOR column as itself.
bool IsVectorColumn(sqlite3_stmt* stmt, int i) {
  const char* declared = sqlite3_column_decltype(stmt, i);
  return declared != nullptr && internal::kVectorDeclaredType == declared;
}

Value ColumnToValue(sqlite3_stmt* stmt, int i, bool vector_column) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER:
      return Value(static_cast<int64_t>(sqlite3_column_int64(stmt, i)));
    case SQLITE_FLOAT:
      return Value(sqlite3_column_double(stmt, i));
    case SQLITE_TEXT:
      return Value(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, i)),
                               static_cast<size_t>(sqlite3_column_bytes(stmt, i))));
    case SQLITE_BLOB: {
      const char* p = static_cast<const char*>(sqlite3_column_blob(stmt, i));
      return VectorOrBlob(p, static_cast<size_t>(sqlite3_column_bytes(stmt, i)), vector_column);
    }
    default:
      return Value();
  }
}

int BindValue(sqlite3_stmt* stmt, int i, const Value& v) {
  if (const int64_t* x = std::get_if<int64_t>(&v)) return sqlite3_bind_int64(stmt, i, *x);
  if (const double* d = std::get_if<double>(&v)) return sqlite3_bind_double(stmt, i, *d);
  if (const std::string* s = std::get_if<std::string>(&v)) {
    return sqlite3_bind_text(stmt, i, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
  }
  if (const Blob* b = std::get_if<Blob>(&v)) {
    return sqlite3_bind_blob(stmt, i, b->bytes.data(), static_cast<int>(b->bytes.size()), SQLITE_TRANSIENT);
  }
  if (const FloatVector* f = std::get_if<FloatVector>(&v)) {
    return sqlite3_bind_blob(stmt, i, f->values.data(), static_cast<int>(f->values.size() * sizeof(float)),
                             SQLITE_TRANSIENT);
  }
  return sqlite3_bind_null(stmt, i);
}

// A SQLite error as a Status ("no such table" is NotFound).
Status SqliteStatus(sqlite3* db, int rc) {
  std::string msg = sqlite3_errmsg(db);
  if (msg.rfind("no such table", 0) == 0) return Status::NotFound(msg);
  if (msg.find("no query solution") != std::string::npos) {
    return Status::InvalidArgument(msg + ": a table function lacks its arguments, e.g. vigil_indexes('db.table')");
  }
  const StatusCode code = SqliteStatusCode(rc, sqlite3_extended_errcode(db));
  // Anything SQLite refuses that has no closer code is a statement the caller can fix.
  return Status(code == StatusCode::kInternal ? StatusCode::kInvalidArgument : code, msg);
}

class Engine : public SelectEngine, public internal::VtabHost {
 public:
  Engine(const Root& root, jobs::JobStore* store, SelectOptions options)
      : root_(root), store_(store), options_(options), lockdown_([this](const Status& s) { SetError(s); }) {}

  ~Engine() override {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    if (db_) sqlite3_close_v2(db_);
  }

  Status Init() {
    int rc =
        sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) return Status::Internal("cannot open the SQL engine: " + std::string(sqlite3_errstr(rc)));
    VIGIL_RETURN_IF_ERROR(internal::RegisterModules(db_, this));
    VIGIL_RETURN_IF_ERROR(lockdown_.Install(db_));
    sqlite3_progress_handler(
        db_, kDeadlineCheckSteps, [](void*) { return internal::CheckStatementDeadline().ok() ? 0 : 1; }, nullptr);
    return Status::OK();
  }

  Result<ResultSet> Select(const SelectStatement& stmt, const auth::Principal& who,
                           const std::vector<Value>& params) override {
    internal::ScopedStatementDeadline deadline(options_.statement_timeout_ms);
    Begin(who, false);
    auto result = Run(stmt, params, nullptr);
    End();
    return result;
  }

  Result<ResultSet> Explain(const ExplainStatement& stmt, const auth::Principal& who,
                            const std::vector<Value>& params) override {
    internal::ScopedStatementDeadline deadline(options_.statement_timeout_ms);
    Begin(who, stmt.analyze);
    auto result = RunExplain(stmt, params);
    End();
    return result;
  }

  Result<SchemaPtr> CurrentSchema(const vigil::TableName& table, const auth::Principal& who) override {
    Begin(who, false);
    Result<const query::TableSnapshot*> snap = Snapshot(table);
    Result<SchemaPtr> schema = snap.ok() ? Result<SchemaPtr>((*snap)->manifest().schema) : snap.status();
    End();
    return schema;
  }

  void SetStatementTimeout(uint64_t ms) override { options_.statement_timeout_ms = ms; }

  void InvalidateTable(const std::string& db, const std::string& table) override {
    vigil::TableName name;
    name.db = db;
    name.table = table;
    for (VtabKind kind : {VtabKind::kTable, VtabKind::kVectorSearch, VtabKind::kFtsSearch}) {
      std::string vtab = internal::VtabName(kind, name);
      if (vtabs_.erase(vtab) == 0) continue;
      ClearCache();
      std::string sql = "DROP TABLE IF EXISTS temp." + Quote(vtab);
      internal::Lockdown::InternalScope internal(&lockdown_);
      sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    }
    managers_.erase(name.ToString());
  }

  // ---- VtabHost ----
  Result<const query::TableSnapshot*> Snapshot(const vigil::TableName& table) override {
    const std::string key = table.ToString();
    auto it = leases_.find(key);
    if (it != leases_.end()) return &it->second.snapshot();
    if (who_ == nullptr || !who_->Has(auth::Privilege::kShow, table.catalog, table.db, table.table)) {
      return Status::NotFound("table " + key + " does not exist");
    }
    VIGIL_ASSIGN_OR_RETURN(generations::GenerationManager * manager, Manager(table));
    generations::Lease lease = manager->Acquire();
    return &leases_.emplace(key, std::move(lease)).first->second.snapshot();
  }

  AccessStats* Access(const std::string& key) override {
    auto it = access_index_.find(key);
    if (it != access_index_.end()) return &accesses_[it->second];
    access_index_[key] = accesses_.size();
    accesses_.emplace_back();
    if (analyzing_) accesses_.back().recorder = std::make_shared<query::IoRecorder>();
    return &accesses_.back();
  }

  bool analyzing() const override { return analyzing_; }
  const auth::Principal& principal() const override { return *who_; }
  jobs::JobStore* store() const override { return store_; }
  const Root& root() const override { return root_; }
  size_t max_rows() const override { return options_.max_rows; }
  const LanceConfig& lance() const override { return options_.lance; }
  void SetError(const Status& status) override {
    if (error_.ok()) error_ = status;
  }

 private:
  static std::string Quote(const std::string& ident) {
    std::string out = "\"";
    for (char c : ident) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  }

  void Begin(const auth::Principal& who, bool analyze) {
    who_ = &who;
    analyzing_ = analyze;
    error_ = Status::OK();
    accesses_.clear();
    access_index_.clear();
    leases_.clear();
  }

  // The status of a failed SQLite call: the statement timeout once it has passed, else
  // the typed error a module or the authorizer recorded, else SQLite's own.
  Status Failure(int rc) {
    if (Status deadline = internal::CheckStatementDeadline(); !deadline.ok()) return deadline;
    return error_.ok() ? SqliteStatus(db_, rc) : error_;
  }

  // Releases the statement's leases (the statement has been reset).
  void End() {
    leases_.clear();
    who_ = nullptr;
  }

  // The generation manager of the table's current incarnation: the catalog says which one,
  // so a table dropped and re-created by another process is never read at its old files. The
  // catalog's answer is kept for catalog_staleness; a DROP anywhere moves the incarnation's
  // directory aside, so a kept answer whose files are gone is asked again at once.
  Result<generations::GenerationManager*> Manager(const vigil::TableName& table) {
    const std::string key = table.ToString();
    const int64_t now = root_.env()->MonotonicMs();
    auto it = managers_.find(key);
    const bool kept = it != managers_.end() &&
                      now - it->second.looked_up_ms < static_cast<int64_t>(options_.generations.catalog_staleness_ms);
    if (!kept) {
      catalog::TableCatalog catalog(&root_, &store_->catalog());
      VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry, catalog.Lookup(table));
      VIGIL_RETURN_IF_ERROR(catalog::CheckOwnTable(table, entry, "SELECT"));
      if (it != managers_.end() && it->second.manager->path() != entry.locator) {
        managers_.erase(it);
        it = managers_.end();
      }
      if (it == managers_.end()) {
        // The process's manager of the table, which another engine may have opened earlier.
        VIGIL_ASSIGN_OR_RETURN(auto manager, pool_->Manager(entry));
        it = managers_.emplace(key, Managed{std::move(manager), now}).first;
      }
      it->second.looked_up_ms = now;
    }
    auto refreshed = it->second.manager->Refresh();
    if (!refreshed.ok()) {
      pool_->Forget(it->second.manager.get());
      managers_.erase(it);
      const StatusCode code = refreshed.status().code();
      // The kept incarnation's files are gone (dropped): the catalog says what the name is now.
      if (kept && (code == StatusCode::kNotFound || code == StatusCode::kStaleIncarnation)) return Manager(table);
      if (code == StatusCode::kNotFound) return Status::NotFound("table " + key + " does not exist");
      return refreshed.status();
    }
    return it->second.manager.get();
  }

  // A generation manager (shared with the process's other engines through the pool) and when
  // the catalog last named its incarnation (monotonic ms).
  struct Managed {
    std::shared_ptr<generations::GenerationManager> manager;
    int64_t looked_up_ms = 0;
  };

  void ClearCache() {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    cache_.clear();
  }

  // Creates (or re-creates after a schema change) the virtual tables the statement reads.
  Status EnsureVtabs(const std::vector<RewriteTable>& tables) {
    static const char* kModules[] = {"vigil_table", "vigil_vector_search", "vigil_fts_search"};
    internal::Lockdown::InternalScope internal(&lockdown_);
    for (const auto& t : tables) {
      VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, Snapshot(t.name));
      const std::string& fingerprint = snap->manifest().schema->fingerprint();
      const std::string vtab = internal::VtabName(t.kind, t.name);
      auto it = vtabs_.find(vtab);
      if (it != vtabs_.end() && it->second == fingerprint) continue;
      ClearCache();
      if (it != vtabs_.end()) {
        std::string drop = "DROP TABLE IF EXISTS temp." + Quote(vtab);
        sqlite3_exec(db_, drop.c_str(), nullptr, nullptr, nullptr);
        vtabs_.erase(it);
      }
      std::string sql = "CREATE VIRTUAL TABLE temp." + Quote(vtab) + " USING " + kModules[static_cast<int>(t.kind)] +
                        "('" + t.name.ToString() + "')";
      int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) return Failure(rc);
      vtabs_[vtab] = fingerprint;
    }
    return Status::OK();
  }

  // The statement rewritten for SQLite, its virtual tables declared. A rewrite is kept per
  // statement text and reused while every table it read has the schema it read then: the
  // rewrite is a function of the text and those schemas. A reuse still takes each table's
  // snapshot, so the caller's privileges and the statement's leases are as without it.
  Result<RewriteResult> Prepare(const SelectStatement& stmt) {
    std::string key = std::to_string(stmt.text_offset) + ":" + stmt.text;
    if (auto it = rewrites_.find(key); it != rewrites_.end()) {
      VIGIL_ASSIGN_OR_RETURN(bool current, SchemasUnchanged(it->second.schemas));
      if (current) {
        VIGIL_RETURN_IF_ERROR(EnsureVtabs(it->second.rewritten.tables));
        return it->second.rewritten;
      }
      rewrites_.erase(it);
    }
    std::vector<std::pair<vigil::TableName, std::string>> schemas;
    auto lookup = [this, &schemas](const vigil::TableName& name) -> Result<SchemaPtr> {
      VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, Snapshot(name));
      const SchemaPtr& schema = snap->manifest().schema;
      schemas.emplace_back(name, schema->fingerprint());
      return schema;
    };
    VIGIL_ASSIGN_OR_RETURN(RewriteResult rewritten, internal::RewriteSelect(stmt, lookup));
    VIGIL_RETURN_IF_ERROR(EnsureVtabs(rewritten.tables));
    if (rewrites_.size() >= kMaxCachedStatements) rewrites_.clear();
    rewrites_[std::move(key)] = KeptRewrite{rewritten, std::move(schemas)};
    return rewritten;
  }

  // Whether each table still has the schema (fingerprint) a kept rewrite read.
  Result<bool> SchemasUnchanged(const std::vector<std::pair<vigil::TableName, std::string>>& schemas) {
    for (const auto& [name, fingerprint] : schemas) {
      VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, Snapshot(name));
      if (snap->manifest().schema->fingerprint() != fingerprint) return false;
    }
    return true;
  }

  Result<sqlite3_stmt*> Compile(const std::string& sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCachedStatements) ClearCache();
    sqlite3_stmt* stmt = nullptr;
    int rc =
        sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return Failure(rc);
    }
    if (stmt == nullptr) return Status::InvalidArgument("empty statement");
    if (!sqlite3_stmt_readonly(stmt)) {
      sqlite3_finalize(stmt);
      return Status::InvalidArgument("only SELECT statements run here");
    }
    cache_[sql] = stmt;
    return stmt;
  }

  Status Bind(sqlite3_stmt* stmt, const std::vector<Value>& params) {
    sqlite3_clear_bindings(stmt);
    const int expected = sqlite3_bind_parameter_count(stmt);
    if (static_cast<int>(params.size()) != expected) {
      return Status::InvalidArgument("the statement has " + std::to_string(expected) + " parameter" +
                                     (expected == 1 ? "" : "s") + "; " + std::to_string(params.size()) + " value" +
                                     (params.size() == 1 ? " was" : "s were") + " bound");
    }
    for (size_t i = 0; i < params.size(); ++i) {
      int rc = BindValue(stmt, static_cast<int>(i) + 1, params[i]);
      if (rc != SQLITE_OK) return SqliteStatus(db_, rc);
    }
    return Status::OK();
  }

  // Steps `stmt` to the end; rows go to `out` (null: counted only).
  Result<size_t> Step(sqlite3_stmt* stmt, ResultSet* out) {
    size_t rows = 0;
    const int n = sqlite3_column_count(stmt);
    std::vector<bool> vectors(static_cast<size_t>(n));
    for (int i = 0; i < n && out != nullptr; ++i) vectors[static_cast<size_t>(i)] = IsVectorColumn(stmt, i);
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        Status st = Failure(rc);
        sqlite3_reset(stmt);
        return st;
      }
      if (++rows > options_.max_rows) {
        sqlite3_reset(stmt);
        return Status::ResourceExhausted(std::string(kResultTooLarge) + ": the result has more than max_rows = " +
                                         std::to_string(options_.max_rows) + " rows; narrow it (LIMIT, WHERE)");
      }
      if (out == nullptr) continue;
      std::vector<Value> row;
      row.reserve(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) row.push_back(ColumnToValue(stmt, i, vectors[static_cast<size_t>(i)]));
      out->rows.push_back(std::move(row));
    }
    sqlite3_reset(stmt);
    return rows;
  }

  Result<ResultSet> Run(const SelectStatement& select, const std::vector<Value>& params, size_t* counted) {
    VIGIL_ASSIGN_OR_RETURN(RewriteResult rewritten, Prepare(select));
    VIGIL_RETURN_IF_ERROR(internal::CheckStatementDeadline());
    VIGIL_ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Compile(rewritten.sql));
    VIGIL_RETURN_IF_ERROR(Bind(stmt, params));
    ResultSet rs;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) rs.columns.push_back(sqlite3_column_name(stmt, i));
    VIGIL_ASSIGN_OR_RETURN(size_t rows, Step(stmt, counted ? nullptr : &rs));
    if (counted) *counted = rows;
    AddUnusableSegmentWarnings(&rs);
    return rs;
  }

  // A warning per index segment the statement's tables could not use (corrupt or missing
  // files): the fragments it covers were scanned, so the answer is still exact.
  void AddUnusableSegmentWarnings(ResultSet* rs) const {
    for (const auto& [table, lease] : leases_) {
      for (const query::UnusableSegment& u : lease.snapshot().unusable_segments()) {
        rs->warnings.push_back(UnusableSegmentText(table, u));
      }
    }
  }

  static std::string UnusableSegmentText(const std::string& table, const query::UnusableSegment& u) {
    return "index " + u.index_name + " of " + table + ": segment " + u.uuid.ToString() + " is unusable (" +
           u.reason.ToString() + "); the rows it covers were scanned instead, the answer is exact";
  }

  // "SCAN docs VIRTUAL TABLE INDEX 0:<encoded>#ts >= ?" -> "... INDEX 0: ts >= ?".
  static std::string CleanPlanDetail(std::string detail) {
    size_t colon = detail.find("VIRTUAL TABLE INDEX ");
    if (colon == std::string::npos) return detail;
    colon = detail.find(':', colon);
    size_t hash = detail.find('#', colon);
    if (colon == std::string::npos) return detail;
    std::string pushed = hash == std::string::npos ? "" : detail.substr(hash + 1);
    return detail.substr(0, colon) + (pushed.empty() ? "" : " pushed: " + pushed);
  }

  Status AddQueryPlan(const std::string& sql, const std::vector<Value>& params, ResultSet* rs) {
    VIGIL_ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Compile("EXPLAIN QUERY PLAN " + sql));
    VIGIL_RETURN_IF_ERROR(Bind(stmt, params));
    ResultSet plan;
    VIGIL_RETURN_IF_ERROR(Step(stmt, &plan).status());
    std::map<int64_t, int> depth;
    for (const auto& row : plan.rows) {
      int64_t id = std::get<int64_t>(row[0]);
      int64_t parent = std::get<int64_t>(row[1]);
      depth[id] = depth.count(parent) ? depth[parent] + 1 : 0;
      rs->rows.push_back({Value(std::string("plan")), Value(std::string(static_cast<size_t>(depth[id]) * 2, ' ') +
                                                            CleanPlanDetail(std::get<std::string>(row[3])))});
    }
    return Status::OK();
  }

  std::string PlannedAccess(const RewriteTable& t) {
    auto snap = Snapshot(t.name);
    if (!snap.ok()) return t.name.ToString() + ": " + snap.status().message();
    const Manifest& m = (*snap)->manifest();
    std::string out = t.name.ToString() + " version " + std::to_string(m.version) + ", " +
                      std::to_string(m.fragments.size()) + " fragments, " + std::to_string(m.CountLiveRows()) +
                      " live rows; ";
    out += t.kind == VtabKind::kTable          ? "table scan, =/</<=/>/>=/IN/IS NULL pushed to FilterRows"
           : t.kind == VtabKind::kVectorSearch ? "vector_search"
                                               : "fts_search";
    std::map<std::string, std::pair<std::string, int>> indexes;
    for (const auto& seg : m.segments) {
      auto& e = indexes[seg.name];
      e.first = seg.index_type;
      e.second++;
    }
    for (const auto& [name, e] : indexes) {
      out +=
          "; " + e.first + " " + name + " (" + std::to_string(e.second) + " segment" + (e.second == 1 ? "" : "s") + ")";
    }
    for (const query::UnusableSegment& u : (*snap)->unusable_segments()) {
      out += "; segment " + u.uuid.ToString() + " of " + u.index_name + " unusable (" +
             std::string(StatusCodeName(u.reason.code())) + "): its fragments are scanned";
    }
    return out;
  }

  void AddAnalysis(size_t result_rows, ResultSet* rs) {
    auto row = [rs](const std::string& detail) { rs->rows.push_back({Value(std::string("analyze")), Value(detail)}); };
    row("result rows " + std::to_string(result_rows));
    for (const auto& a : accesses_) {
      row(a.access + " " + a.table + (a.plan.empty() ? "" : " [" + a.plan + "]") + ": " +
          std::to_string(a.filter_calls) + " call(s), " + std::to_string(a.rows) + " row(s)");
      if (!a.recorder) continue;
      for (const auto& seg : a.recorder->segments_used()) row("  segment " + seg);
      uint64_t calls = 0, bytes = 0;
      auto reads = a.recorder->physical_reads();
      for (const auto& [path, r] : reads) {
        calls += r.calls;
        bytes += r.bytes;
      }
      row("  physical reads " + std::to_string(calls) + " ops, " + std::to_string(bytes) + " bytes, " +
          std::to_string(reads.size()) + " file(s)");
      auto data = a.recorder->ReadsMatching("/data/");
      auto idx = a.recorder->ReadsMatching("/_indices/");
      row("  data reads " + std::to_string(data.calls) + " ops, " + std::to_string(data.bytes) +
          " bytes; index reads " + std::to_string(idx.calls) + " ops, " + std::to_string(idx.bytes) + " bytes");
    }
  }

  Result<ResultSet> RunExplain(const ExplainStatement& stmt, const std::vector<Value>& params) {
    VIGIL_ASSIGN_OR_RETURN(RewriteResult rewritten, Prepare(stmt.select));
    ResultSet rs;
    rs.columns = {"section", "detail"};
    VIGIL_RETURN_IF_ERROR(AddQueryPlan(rewritten.sql, params, &rs));
    for (const auto& t : rewritten.tables) rs.rows.push_back({Value(std::string("vigil")), Value(PlannedAccess(t))});
    for (const auto& note : rewritten.notes) rs.rows.push_back({Value(std::string("vigil")), Value(note)});
    AddUnusableSegmentWarnings(&rs);
    if (!stmt.analyze) return rs;
    size_t rows = 0;
    VIGIL_RETURN_IF_ERROR(Run(stmt.select, params, &rows).status());
    AddAnalysis(rows, &rs);
    return rs;
  }

  const Root& root_;
  jobs::JobStore* store_;
  SelectOptions options_;
  // The managers of the tables this engine reads, with their budget and pins (the process's,
  // when it gave one); it outlives the managers and leases below.
  std::shared_ptr<GenerationPool> pool_ =
      options_.pool ? options_.pool : GenerationPool::Create(root_, options_.generations);
  internal::Lockdown lockdown_;  // outlives db_ (its authorizer)
  sqlite3* db_ = nullptr;
  std::map<std::string, Managed> managers_;
  std::map<std::string, std::string> vtabs_;  // vtab name -> schema fingerprint it was declared with
  std::map<std::string, sqlite3_stmt*> cache_;
  // A rewrite and the schema fingerprint of each table it read.
  struct KeptRewrite {
    RewriteResult rewritten;
    std::vector<std::pair<vigil::TableName, std::string>> schemas;
  };
  std::map<std::string, KeptRewrite> rewrites_;  // by "<offset>:<statement text>"
  // The current statement.
  const auth::Principal* who_ = nullptr;
  bool analyzing_ = false;
  Status error_;
  std::map<std::string, generations::Lease> leases_;
  std::deque<AccessStats> accesses_;  // deque: cursors keep pointers
  std::map<std::string, size_t> access_index_;
};

}  // namespace

Result<std::unique_ptr<SelectEngine>> SelectEngine::Open(const Root& root, jobs::JobStore* store,
                                                         SelectOptions options) {
  if (store == nullptr) return Status::InvalidArgument("the select engine needs the root's metadata store");
  if (options.pool && !(options.pool->root().marker().incarnation == root.marker().incarnation)) {
    return Status::InvalidArgument("the generation pool serves the root " + options.pool->root().path() + ", not " +
                                   root.path());
  }
  auto engine = std::make_unique<Engine>(root, store, options);
  VIGIL_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<SelectEngine>(std::move(engine));
}

}  // namespace vigil::sql

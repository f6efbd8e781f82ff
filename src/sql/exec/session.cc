#include "vigil/sql/session.h"

#include <charconv>
#include <cmath>
#include <ctime>
#include <map>

#include "sql/exec/exec_internal.h"
#include "vigil/common/ascii.h"
#include "vigil/common/env.h"
#include "vigil/ingest/ingest.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/parser.h"
#include "vigil/storage/fragment.h"
#include "vigil/storage/temporal.h"

namespace vigil::sql {

int64_t ExecContext::Now() const { return options.clock(); }

void ExecContext::Invalidate(const vigil::TableName& name) {
  if (select) select->InvalidateTable(name.db, name.table);
}

std::string FormatTimeMs(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

Result<vigil::TableName> ResolveTable(const ExecContext& ctx, const TableRef& name) {
  if (name.database.empty()) {
    return Status::InvalidArgument("table '" + name.table + "' needs its database: write db." + name.table);
  }
  vigil::TableName out;
  out.catalog = name.catalog.empty() ? ctx.root.marker().catalog : name.catalog;
  out.db = name.database;
  out.table = name.table;
  VIGIL_RETURN_IF_ERROR(ctx.root.CheckTableName(out));
  return out;
}

Status Authorize(const ExecContext& ctx, const vigil::TableName& name, auth::Privilege p) {
  const auth::Principal& who = ctx.options.principal;
  if (!who.Has(auth::Privilege::kShow, name.catalog, name.db, name.table)) {
    return Status::NotFound("table " + name.ToString() + " does not exist");
  }
  if (!who.Has(p, name.catalog, name.db, name.table)) {
    return Status::PermissionDenied("ALTER on " + name.ToString() + " is required");
  }
  return Status::OK();
}

Result<std::shared_ptr<Dataset>> OpenTable(const ExecContext& ctx, const vigil::TableName& name) {
  return ctx.Catalog().Open(name);
}

namespace {

int64_t SystemNowMs() { return Env::Default()->NowMicros() / 1000; }

// The value of SET statement_timeout, as PostgreSQL reads it: an integer or a
// string of digits is milliseconds, else a duration "<n>ms|s|m|h|d"; 0 is off.
Result<uint64_t> StatementTimeoutMs(const Literal& value) {
  const std::string& text = value.text;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("invalid value for statement_timeout: " + why);
  };
  bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  uint64_t ms = 0;
  if (value.kind == Literal::Kind::kInteger || (value.kind == Literal::Kind::kString && digits)) {
    if (!digits) return bad(text + " is negative");
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec != std::errc() || end != text.data() + text.size()) return bad(text + " is out of range");
  } else if (value.kind == Literal::Kind::kString) {
    auto parsed = ParseDurationMs(text);
    if (!parsed.ok()) return bad(parsed.status().message());
    ms = *parsed;
  } else {
    return bad("expected milliseconds or a duration string like '5s'");
  }
  if (ms > kMaxStatementTimeoutMs) {
    return bad(FormatDurationMs(ms) + " exceeds " + FormatDurationMs(kMaxStatementTimeoutMs));
  }
  return ms;
}

// A session keeps at most this many prepared statements.
constexpr size_t kMaxPreparedStatements = 1024;
constexpr size_t kMaxParsedSelects = 64;  // texts Session::Select keeps parsed

// The value EXECUTE binds for the `index`-th (0-based) value of its list, as SQLite types it:
// DATE / TIMESTAMP as the integers Vigil stores, TRUE / FALSE as 1 / 0.
Result<Value> BoundValueOf(const BoundValue& bound, size_t index) {
  if (const auto* blob = std::get_if<BlobLiteral>(&bound)) return Value(Blob{blob->bytes});
  const Literal& l = std::get<Literal>(bound);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("EXECUTE value " + std::to_string(index + 1) + ": " + why);
  };
  switch (l.kind) {
    case Literal::Kind::kNull:
      return Value();
    case Literal::Kind::kBool:
      return Value(int64_t{l.bool_value ? 1 : 0});
    case Literal::Kind::kString:
      return Value(l.text);
    case Literal::Kind::kInteger: {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(l.text.data(), l.text.data() + l.text.size(), v);
      if (ec != std::errc() || end != l.text.data() + l.text.size()) return bad(l.text + " is out of range for BIGINT");
      return Value(v);
    }
    case Literal::Kind::kDecimal:
    case Literal::Kind::kFloat: {
      double v = 0;
      auto [end, ec] = std::from_chars(l.text.data(), l.text.data() + l.text.size(), v);
      if (ec != std::errc() || end != l.text.data() + l.text.size() || !std::isfinite(v)) {
        return bad(l.text + " is out of range");
      }
      return Value(v);
    }
    case Literal::Kind::kDate:
    case Literal::Kind::kTimestamp: {
      const bool date = l.kind == Literal::Kind::kDate;
      Result<int64_t> v = date ? ParseDateValue(l.text) : ParseTimestampValue(l.text);
      if (!v.ok()) return bad("invalid literal '" + l.text + "'");
      return Value(*v);
    }
  }
  return bad("unsupported literal");
}

bool IsSetting(std::string_view name, std::string_view setting) { return AsciiEqualsIgnoreCase(name, setting); }

class SessionImpl : public Session {
 public:
  explicit SessionImpl(ExecContext ctx)
      : ctx_(std::move(ctx)), statement_timeout_ms_(ctx_.config.sql.statement_timeout_ms) {}

  Result<ResultSet> Execute(std::string_view sql) override {
    VIGIL_ASSIGN_OR_RETURN(Statement stmt, ParseStatement(sql));
    return Execute(stmt);
  }

  Result<ResultSet> Execute(std::string_view sql, const jobs::RequestClaim& request) override {
    VIGIL_ASSIGN_OR_RETURN(Statement stmt, ParseStatement(sql));
    return Execute(stmt, request);
  }

  Result<ResultSet> Execute(const Statement& statement) override {
    return std::visit([this](const auto& node) { return Run(node); }, statement.node);
  }

  Result<ResultSet> Execute(const Statement& statement, const jobs::RequestClaim& request) override {
    ctx_.request = request;
    Result<ResultSet> r = Execute(statement);
    ctx_.request = {};
    return r;
  }

  Result<jobs::JobDetail> ShowJob(int64_t job_id) override { return ExecShowJob(ctx_, job_id); }

  Result<jobs::JobDetail> ResolveJob(int64_t job_id, jobs::ResolveAction action, std::string_view comment) override {
    return ExecResolveJob(ctx_, job_id, action, comment);
  }

  Result<std::vector<VersionInfo>> TableHistory(const TableRef& table, std::vector<uint64_t>* corrupt) override {
    return ExecTableHistory(ctx_, table, corrupt);
  }

  Result<ResultSet> Select(std::string_view sql, const std::vector<Value>& params) override {
    VIGIL_ASSIGN_OR_RETURN(const SelectStatement* select, ParsedSelect(sql));
    VIGIL_ASSIGN_OR_RETURN(SelectEngine * engine, Engine());
    return engine->Select(*select, ctx_.options.principal, params);
  }

  Result<SchemaPtr> SelectSchema(const TableRef& table) override {
    VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx_, table));
    VIGIL_ASSIGN_OR_RETURN(SelectEngine * engine, Engine());
    return engine->CurrentSchema(name, ctx_.options.principal);
  }

  Result<ResultSet> CopyUpload(const TableRef& table, const std::string& spooled_file, CopyFormat format,
                               const jobs::RequestClaim& request) override {
    VIGIL_ASSIGN_OR_RETURN(auto input, OpenIngestFile(spooled_file, /*no_symlinks=*/true));
    CopyStatement s{table, "upload", format};
    return ExecCopyInput(ctx_, s, std::move(input), request, /*create_missing=*/false);
  }

  Result<std::shared_ptr<Dataset>> OpenTableVersion(const TableRef& table, std::optional<uint64_t> version) override {
    return ExecOpenTableVersion(ctx_, table, version);
  }

  Result<ResultSet> Append(const TableRef& table, const RowsFactory& make_rows) override {
    return ExecAppend(ctx_, table, make_rows);
  }

  void Reset(auth::Principal principal) override {
    ctx_.options.principal = std::move(principal);
    prepared_.clear();
    statement_timeout_ms_ = ctx_.config.sql.statement_timeout_ms;
    if (ctx_.select) ctx_.select->SetStatementTimeout(statement_timeout_ms_);
  }

 private:
  Result<ResultSet> Run(const CreateDatabaseStatement& s) { return ExecCreateDatabase(ctx_, s); }
  Result<ResultSet> Run(const DropDatabaseStatement& s) { return ExecDropDatabase(ctx_, s); }
  Result<ResultSet> Run(const ShowDatabasesStatement& s) { return ExecShowDatabases(ctx_, s); }
  Result<ResultSet> Run(const ShowTablesStatement& s) { return ExecShowTables(ctx_, s); }
  Result<ResultSet> Run(const CreateTableStatement& s) { return ExecCreateTable(ctx_, s); }
  Result<ResultSet> Run(const DropTableStatement& s) { return ExecDropTable(ctx_, s); }
  Result<ResultSet> Run(const InsertStatement& s) { return ExecInsert(ctx_, s); }
  Result<ResultSet> Run(const CopyStatement& s) { return ExecCopy(ctx_, s); }
  Result<ResultSet> Run(const DeleteStatement& s) { return ExecDelete(ctx_, s); }
  Result<ResultSet> Run(const UpdateStatement& s) { return ExecUpdate(ctx_, s); }
  Result<ResultSet> Run(const RefreshTableStatement& s) { return ExecRefreshTable(ctx_, s); }
  Result<ResultSet> Run(const CreateIndexStatement& s) { return ExecCreateIndex(ctx_, s); }
  Result<ResultSet> Run(const DropIndexStatement& s) { return ExecDropIndex(ctx_, s); }
  Result<ResultSet> Run(const BuildIndexStatement& s) { return ExecBuildIndex(ctx_, s); }
  Result<ResultSet> Run(const VacuumStatement& s) { return ExecVacuum(ctx_, s); }
  Result<ResultSet> Run(const ShowIndexStatement& s) { return ExecShowIndex(ctx_, s); }
  Result<ResultSet> Run(const ShowIndexJobsStatement& s) { return ExecShowIndexJobs(ctx_, s); }
  Result<ResultSet> Run(const ShowIndexJobStatement& s) { return ExecShowIndexJob(ctx_, s); }
  Result<ResultSet> Run(const CancelIndexJobStatement& s) { return ExecCancelIndexJob(ctx_, s); }
  Result<ResultSet> Run(const CreateUserStatement& s) { return ExecCreateUser(ctx_, s); }
  Result<ResultSet> Run(const DropUserStatement& s) { return ExecDropUser(ctx_, s); }
  Result<ResultSet> Run(const AlterUserStatement& s) { return ExecAlterUser(ctx_, s); }
  Result<ResultSet> Run(const GrantStatement& s) { return ExecGrant(ctx_, s); }
  Result<ResultSet> Run(const ShowUsersStatement& s) { return ExecShowUsers(ctx_, s); }
  Result<ResultSet> Run(const ShowGrantsStatement& s) { return ExecShowGrants(ctx_, s); }
  Result<ResultSet> Run(const ShowNodesStatement& s) { return ExecShowNodes(ctx_, s); }
  Result<ResultSet> Run(const ShowVersionsStatement& s) { return ExecShowVersions(ctx_, s); }
  Result<ResultSet> Run(const ShowGenerationsStatement& s) { return ExecShowGenerations(ctx_, s); }
  Result<ResultSet> Run(const DrainNodeStatement& s) { return ExecDrainNode(ctx_, s); }
  Result<ResultSet> Run(const ResolveIndexJobStatement& s) {
    ResultSet leader = EnsureLeader();
    VIGIL_ASSIGN_OR_RETURN(ResultSet r, ExecResolveIndexJob(ctx_, s));
    r.warnings.insert(r.warnings.end(), leader.warnings.begin(), leader.warnings.end());
    return r;
  }
  Result<ResultSet> Run(const WaitIndexJobStatement& s) {
    ResultSet leader = EnsureLeader();
    VIGIL_ASSIGN_OR_RETURN(ResultSet r, ExecWaitIndexJob(ctx_, s));
    r.warnings.insert(r.warnings.end(), leader.warnings.begin(), leader.warnings.end());
    return r;
  }

  // Statements that wait on the leader's work (a resolution's refresh, a job's end) first
  // make sure one runs; a failure to start it is a warning, the statement still runs.
  ResultSet EnsureLeader() {
    ResultSet r;
    if (!ctx_.options.ensure_leader) return r;
    Status st = ctx_.options.ensure_leader();
    if (!st.ok()) r.warnings.push_back("no job leader could be started: " + st.ToString());
    return r;
  }
  Result<ResultSet> Run(const SelectStatement& s) {
    VIGIL_ASSIGN_OR_RETURN(SelectEngine * engine, Engine());
    return engine->Select(s, ctx_.options.principal);
  }
  Result<ResultSet> Run(const ExplainStatement& s) {
    VIGIL_ASSIGN_OR_RETURN(SelectEngine * engine, Engine());
    return engine->Explain(s, ctx_.options.principal);
  }
  // SET statement_timeout: this session's SELECT / EXPLAIN timeout; DEFAULT is vigil.toml's.
  Result<ResultSet> Run(const SetStatement& s) {
    if (!IsSetting(s.name, "statement_timeout")) {
      return Status::InvalidArgument("unknown setting " + s.name + "; SET knows statement_timeout");
    }
    const uint64_t ceiling = ctx_.config.sql.statement_timeout_ms;
    uint64_t ms = ceiling;
    if (s.value) {
      VIGIL_ASSIGN_OR_RETURN(ms, StatementTimeoutMs(*s.value));
    }
    if (ctx_.options.statement_timeout_is_ceiling && ceiling != 0 && (ms == 0 || ms > ceiling)) {
      return Status::InvalidArgument("statement_timeout may be at most " + FormatDurationMs(ceiling) +
                                     " here, the server's [sql] statement_timeout; " +
                                     (ms == 0 ? std::string("0 (no timeout)") : FormatDurationMs(ms)) +
                                     " would lift it");
    }
    statement_timeout_ms_ = ms;
    if (ctx_.select) ctx_.select->SetStatementTimeout(ms);
    ResultSet rs;
    rs.message = "SET statement_timeout = " + (ms == 0 ? std::string("0 (no timeout)") : FormatDurationMs(ms));
    return rs;
  }

  Result<ResultSet> Run(const PrepareStatement& s) {
    if (prepared_.count(s.name) != 0) {
      return Status::AlreadyExists("prepared statement " + s.name + " already exists; DEALLOCATE it first");
    }
    if (prepared_.size() >= kMaxPreparedStatements) {
      return Status::ResourceExhausted("a session keeps at most " + std::to_string(kMaxPreparedStatements) +
                                       " prepared statements; DEALLOCATE some");
    }
    prepared_.emplace(s.name, s.select);
    ResultSet rs;
    rs.message = "PREPARE " + s.name;
    return rs;
  }
  Result<ResultSet> Run(const ExecuteStatement& s) {
    auto it = prepared_.find(s.name);
    if (it == prepared_.end()) return Status::NotFound("prepared statement " + s.name + " does not exist");
    std::vector<Value> params;
    params.reserve(s.values.size());
    for (size_t i = 0; i < s.values.size(); ++i) {
      VIGIL_ASSIGN_OR_RETURN(Value v, BoundValueOf(s.values[i], i));
      params.push_back(std::move(v));
    }
    VIGIL_ASSIGN_OR_RETURN(SelectEngine * engine, Engine());
    Result<ResultSet> r = engine->Select(it->second, ctx_.options.principal, params);
    if (!r.ok()) return r.status().WithContext("EXECUTE " + s.name);
    return r;
  }
  Result<ResultSet> Run(const DeallocateStatement& s) {
    ResultSet rs;
    if (!s.name) {
      prepared_.clear();
      rs.message = "DEALLOCATE ALL";
      return rs;
    }
    if (prepared_.erase(*s.name) == 0) {
      return Status::NotFound("prepared statement " + *s.name + " does not exist");
    }
    rs.message = "DEALLOCATE " + *s.name;
    return rs;
  }

  // The select engine, opened on first use (DDL-only sessions never pay for it).
  Result<SelectEngine*> Engine() {
    if (!ctx_.select) {
      SelectOptions options;
      options.statement_timeout_ms = statement_timeout_ms_;
      options.generations = ctx_.config.generations;
      options.lance = ctx_.config.lance;
      options.pool = ctx_.options.generation_pool;
      VIGIL_ASSIGN_OR_RETURN(ctx_.select, SelectEngine::Open(ctx_.root, ctx_.store.get(), options));
    }
    return ctx_.select.get();
  }

  // The SELECT of `sql`, parsed once per text: a client runs the same text with new values.
  Result<const SelectStatement*> ParsedSelect(std::string_view sql) {
    if (auto it = selects_.find(sql); it != selects_.end()) return &it->second;
    VIGIL_ASSIGN_OR_RETURN(Statement stmt, ParseStatement(sql));
    auto* select = std::get_if<SelectStatement>(&stmt.node);
    if (select == nullptr) return Status::InvalidArgument("only a SELECT takes bound values");
    if (selects_.size() >= kMaxParsedSelects) selects_.clear();
    return &selects_.emplace(std::string(sql), std::move(*select)).first->second;
  }

  ExecContext ctx_;
  uint64_t statement_timeout_ms_;
  std::map<std::string, SelectStatement> prepared_;              // PREPARE name -> its SELECT
  std::map<std::string, SelectStatement, std::less<>> selects_;  // Select's texts, parsed
};

}  // namespace

Result<std::unique_ptr<Session>> Session::Open(const std::string& root_dir, SessionOptions options) {
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(root_dir));
  VIGIL_ASSIGN_OR_RETURN(Config config, LoadConfig(root_dir));
  // The process's block cache takes the size its root sets ([storage] block_cache_bytes).
  BlockCache::Default()->SetCapacity(config.storage.block_cache_bytes);
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<jobs::JobStore> store, jobs::OpenRootJobStore(root));
  if (!options.clock) options.clock = SystemNowMs;
  ExecContext ctx{std::move(root), std::move(store), config, std::move(options), nullptr};
  return std::unique_ptr<Session>(new SessionImpl(std::move(ctx)));
}

}  // namespace vigil::sql

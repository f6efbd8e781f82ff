// Resource routes: databases, tables, rows (JSON rows or an uploaded CSV /
// JSON Lines / .fvecs / .npy body, streamed to a spool file), indexes (CREATE,
// REPLACE, DROP and BUILD answer 202 Accepted with the job and its Location),
// queries (vector, full text, filter) and VACUUM. Each route is a named handler
// that builds its statement as a syntax tree from allowlisted names (never SQL
// text) and runs it as the caller; a table's history is read through the
// caller's session.

#include "server/api_internal.h"
#include "server/query/query_request.h"
#include "server/query_json.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/ascii.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/names.h"
#include "vigil/lance/lance_table.h"
#include "vigil/sql/parser.h"
#include "vigil/storage/dataset.h"

namespace vigil::server {

namespace {

constexpr size_t kMaxJsonRowsBytes = kMaxJsonBodyBytes;
constexpr int64_t kDefaultVersionPage = 100;
constexpr int64_t kMaxVersionPage = 10000;  // the newest versions of a table, per request

HttpResponse Problem(const Status& st) { return ProblemResponse(st); }

HttpResponse Json(const nlohmann::json& j, int status = 200) {
  return JsonResponse(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), status);
}

// A name a statement takes as written: an identifier that is not a reserved word of the SQL
// surface (which a statement could not name unquoted).
Status CheckUnreserved(std::string_view name, std::string_view what) {
  if (!sql::IsReservedWord(name)) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " \"" + std::string(name) + "\" is a reserved word");
}

// The table of the route's {db} and {table}, as a statement names it.
Result<sql::TableRef> TableOf(const Call& call) {
  VIGIL_ASSIGN_OR_RETURN(std::string db, DatabaseParam(call));
  VIGIL_ASSIGN_OR_RETURN(std::string table, TableParam(call));
  VIGIL_RETURN_IF_ERROR(CheckUnreserved(db, "database name"));
  VIGIL_RETURN_IF_ERROR(CheckUnreserved(table, "table name"));
  return sql::TableRef{"", std::move(db), std::move(table)};
}

// A column type as written in CREATE TABLE ("BIGINT", "VARCHAR(20)", "VECTOR(FLOAT32, 128)"):
// letters, digits, parentheses, commas and spaces only; VARCHAR, CHAR and STRING without a
// length are STRING, as CREATE TABLE reads them.
Result<DataType> ColumnType(const nlohmann::json& v) {
  if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64) {
    return Status::InvalidArgument(
        "a column's type must be a type name such as \"BIGINT\" or \"VECTOR(FLOAT32, 128)\"");
  }
  const std::string t = v.get<std::string>();
  std::string compact;
  for (char c : t) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '(' && c != ')' && c != '_' && c != ',' && c != ' ') {
      return Status::InvalidArgument("column type \"" + t +
                                     "\" has a character other than letters, digits, '(', ')', ',' and spaces");
    }
    if (c != ' ') compact += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (compact == "VARCHAR" || compact == "CHAR") compact = "STRING";
  for (std::string_view prefix : {"CHAR(", "STRING("}) {
    if (compact.rfind(prefix, 0) == 0) compact = "VARCHAR(" + compact.substr(prefix.size());
  }
  Result<DataType> type = DataType::Parse(compact);
  if (!type.ok()) return Status::InvalidArgument("invalid column type " + t + ": " + type.status().message());
  return type;
}

// An index property key or value: [A-Za-z0-9_.-].
Result<std::string> PropertyText(const nlohmann::json& v, std::string_view what) {
  std::string t;
  if (v.is_string())
    t = v.get<std::string>();
  else if (v.is_number_integer() || v.is_number_float() || v.is_boolean())
    t = v.dump();
  else
    return Status::InvalidArgument("index property " + std::string(what) + " must be a string or a number");
  if (t.empty() || t.size() > 128)
    return Status::InvalidArgument("index property " + std::string(what) + " is empty or too long");
  for (char c : t) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      return Status::InvalidArgument("index property " + std::string(what) + " \"" + t +
                                     "\" has a character other than letters, digits, '_', '.', '-'");
    }
  }
  return t;
}

// An optional boolean field (false when absent).
Result<bool> BoolField(const nlohmann::json& body, const char* field) {
  if (!body.contains(field)) return false;
  if (!body[field].is_boolean()) {
    return Status::InvalidArgument(std::string("\"") + field + "\" must be true or false");
  }
  return body[field].get<bool>();
}

Result<std::string> NameField(const nlohmann::json& body, std::string_view field, std::string_view what) {
  if (!body.contains(field) || !body[std::string(field)].is_string()) {
    return Status::InvalidArgument("the body needs \"" + std::string(field) + "\": the " + std::string(what));
  }
  const std::string name = body[std::string(field)].get<std::string>();
  VIGIL_RETURN_IF_ERROR(ValidateIdentifier(name, what));
  VIGIL_RETURN_IF_ERROR(CheckUnreserved(name, what));
  return name;
}

// The ingest format of an upload's Content-Type.
Result<sql::CopyFormat> UploadFormat(std::string_view type) {
  const std::string base = MediaType(type);
  if (base == "text/csv") return sql::CopyFormat::kCsv;
  if (base == "application/x-ndjson" || base == "application/jsonl" || base == "application/jsonlines") {
    return sql::CopyFormat::kJsonl;
  }
  if (base == "application/x-fvecs") return sql::CopyFormat::kFvecs;
  if (base == "application/x-npy") return sql::CopyFormat::kNpy;
  return Status::InvalidArgument("unsupported Content-Type \"" + std::string(base.substr(0, 64)) +
                                 "\" for rows: use application/json ({\"rows\": [...]}), text/csv, "
                                 "application/x-ndjson, application/x-fvecs or application/x-npy");
}

// The statement that admits a job of `op`, as its admission message names it.
std::string_view AdmittingStatement(jobs::Operation op) {
  switch (op) {
    case jobs::Operation::kCreate:
      return "CREATE INDEX";
    case jobs::Operation::kReplace:
      return "CREATE OR REPLACE INDEX";
    case jobs::Operation::kDrop:
      return "DROP INDEX";
    case jobs::Operation::kBuild:
      return "BUILD INDEX";
  }
  return "INDEX";
}

HttpResponse Accepted(const sql::ResultSet& r) {
  nlohmann::json j = ResultJson(r);
  HttpResponse resp = JsonResponse(j.dump(), r.admitted_jobs.empty() ? 200 : 202);
  if (!r.admitted_jobs.empty()) {
    const std::string id = std::to_string(r.admitted_jobs.front());
    resp.headers.emplace_back("Location", "/v1/jobs/" + id);
    resp.headers.emplace_back("Vigil-Job-Id", id);
  }
  return resp;
}

// The columns of a CREATE TABLE body: [{"name", "type", "not_null"}, ...].
Result<std::vector<sql::ColumnDef>> ColumnDefs(const nlohmann::json& body) {
  if (!body.contains("columns") || !body["columns"].is_array() || body["columns"].empty()) {
    return Status::InvalidArgument(
        "the body needs \"columns\": [{\"name\": ..., \"type\": ..., \"not_null\": false}, ...]");
  }
  if (body["columns"].size() > sql::kMaxColumnsPerTable) {
    return Status::InvalidArgument("a table has at most " + std::to_string(sql::kMaxColumnsPerTable) + " columns");
  }
  std::vector<sql::ColumnDef> out;
  for (const nlohmann::json& c : body["columns"]) {
    if (!c.is_object()) return Status::InvalidArgument("each column must be an object");
    sql::ColumnDef def;
    VIGIL_ASSIGN_OR_RETURN(def.name, NameField(c, "name", "column name"));
    VIGIL_ASSIGN_OR_RETURN(def.type, ColumnType(c.value("type", nlohmann::json())));
    VIGIL_ASSIGN_OR_RETURN(def.not_null, BoolField(c, "not_null"));
    out.push_back(std::move(def));
  }
  return out;
}

// The index method of a CREATE INDEX body's "using".
Result<sql::IndexMethod> IndexMethodOf(const nlohmann::json& body) {
  const nlohmann::json field = body.value("using", nlohmann::json());
  const std::string method = field.is_string() ? field.get<std::string>() : "";
  for (sql::IndexMethod m :
       {sql::IndexMethod::kAnn, sql::IndexMethod::kBtree, sql::IndexMethod::kBitmap, sql::IndexMethod::kFts}) {
    if (method == sql::IndexMethodName(m)) return m;
  }
  return Status::InvalidArgument("\"using\" must be ANN, BTREE, BITMAP or FTS");
}

// The column names of a CREATE INDEX body.
Result<std::vector<std::string>> IndexColumns(const nlohmann::json& body) {
  if (!body.contains("columns") || !body["columns"].is_array() || body["columns"].empty()) {
    return Status::InvalidArgument("the body needs \"columns\": [\"column\", ...]");
  }
  if (body["columns"].size() > sql::kMaxIndexColumns) {
    return Status::InvalidArgument("index columns exceed " + std::to_string(sql::kMaxIndexColumns) + " columns");
  }
  std::vector<std::string> out;
  for (const nlohmann::json& c : body["columns"]) {
    if (!c.is_string()) return Status::InvalidArgument("each column must be a name");
    VIGIL_RETURN_IF_ERROR(ValidateIdentifier(c.get<std::string>(), "column name"));
    VIGIL_RETURN_IF_ERROR(CheckUnreserved(c.get<std::string>(), "column name"));
    out.push_back(c.get<std::string>());
  }
  return out;
}

// The "properties" object of a CREATE INDEX body (keys unique case-insensitively).
Result<std::vector<sql::Property>> IndexProperties(const nlohmann::json& body) {
  std::vector<sql::Property> out;
  if (!body.contains("properties")) return out;
  if (!body["properties"].is_object()) return Status::InvalidArgument("\"properties\" must be an object of strings");
  if (body["properties"].size() > sql::kMaxProperties) {
    return Status::InvalidArgument("PROPERTIES exceed " + std::to_string(sql::kMaxProperties) + " entries");
  }
  for (const auto& [k, v] : body["properties"].items()) {
    sql::Property p;
    VIGIL_ASSIGN_OR_RETURN(p.key, PropertyText(k, "key"));
    VIGIL_ASSIGN_OR_RETURN(p.value, PropertyText(v, "value of " + k));
    for (const sql::Property& q : out) {
      if (AsciiEqualsIgnoreCase(q.key, p.key)) return Status::InvalidArgument("duplicate property \"" + p.key + "\"");
    }
    out.push_back(std::move(p));
  }
  return out;
}

// CREATE [OR REPLACE] INDEX [IF NOT EXISTS] of a POST .../indexes body on `table`.
Result<sql::CreateIndexStatement> CreateIndexOf(const nlohmann::json& body, sql::TableRef table) {
  sql::CreateIndexStatement s;
  s.table = std::move(table);
  VIGIL_ASSIGN_OR_RETURN(s.name, NameField(body, "name", "index name"));
  VIGIL_ASSIGN_OR_RETURN(s.method, IndexMethodOf(body));
  VIGIL_ASSIGN_OR_RETURN(s.columns, IndexColumns(body));
  VIGIL_ASSIGN_OR_RETURN(s.properties, IndexProperties(body));
  VIGIL_ASSIGN_OR_RETURN(s.or_replace, BoolField(body, "replace"));
  VIGIL_ASSIGN_OR_RETURN(s.if_not_exists, BoolField(body, "if_not_exists"));
  if (s.or_replace && s.if_not_exists) {
    return Status::InvalidArgument("IF NOT EXISTS and OR REPLACE cannot be used together");
  }
  return s;
}

// VACUUM of a POST .../vacuum body on `table`.
Result<sql::VacuumStatement> VacuumOf(const nlohmann::json& body, sql::TableRef table) {
  sql::VacuumStatement s;
  s.table = std::move(table);
  if (body.contains("retain_versions")) {
    const nlohmann::json& n = body["retain_versions"];
    if (!n.is_number_integer() || n.get<int64_t>() < 1) {
      return Status::InvalidArgument("\"retain_versions\" must be a positive integer");
    }
    s.retain_versions = n.get<int64_t>();
  }
  return s;
}

std::string FullName(const sql::TableRef& t) { return t.database + "." + t.table; }

bool MayAlter(const Call& call, const sql::TableRef& t) {
  return call.caller.principal.Has(auth::Privilege::kAlter, std::string(kLocalCatalog), t.database, t.table);
}

// A route's answer: `ok(value)` or the problem of its error.
template <typename T, typename F>
HttpResponse Answer(const Result<T>& r, F ok) {
  return r.ok() ? ok(*r) : Problem(r.status());
}

// ---- Databases and tables ----

HttpResponse ListDatabases(ApiServer::Impl& api, Call& call) {
  return Answer(api.RunStatement(call, sql::ShowDatabasesStatement{}), [](const sql::ResultSet& r) {
    return Json({{"databases", RowObjects(r)}});
  });
}

HttpResponse CreateDatabase(ApiServer::Impl& api, Call& call) {
  Result<nlohmann::json> body = api.JsonBody(call);
  if (!body.ok()) return Problem(body.status());
  if (!body->contains("name") || !(*body)["name"].is_string()) {
    return Problem(Status::InvalidArgument("the body needs \"name\": the database name"));
  }
  const std::string name = (*body)["name"].get<std::string>();
  if (Status st = ValidateDatabaseName(name); !st.ok()) return Problem(st);
  if (Status st = CheckUnreserved(name, "database name"); !st.ok()) return Problem(st);
  Result<sql::ResultSet> r = api.RunStatement(call, sql::CreateDatabaseStatement{{"", name}, false});
  if (!r.ok()) return Problem(r.status());
  HttpResponse resp = Json(ResultJson(*r), 201);
  resp.headers.emplace_back("Location", "/v1/databases/" + name);
  return resp;
}

// The route's {db}, as a statement names it.
Result<std::string> DatabaseOf(const Call& call) {
  VIGIL_ASSIGN_OR_RETURN(std::string db, DatabaseParam(call));
  VIGIL_RETURN_IF_ERROR(CheckUnreserved(db, "database name"));
  return db;
}

HttpResponse DropDatabase(ApiServer::Impl& api, Call& call) {
  Result<std::string> db = DatabaseOf(call);
  if (!db.ok()) return Problem(db.status());
  return Answer(api.RunStatement(call, sql::DropDatabaseStatement{{"", *db}, false}),
                [](const sql::ResultSet& r) { return Json(ResultJson(r)); });
}

HttpResponse ListTables(ApiServer::Impl& api, Call& call) {
  Result<std::string> db = DatabaseOf(call);
  if (!db.ok()) return Problem(db.status());
  return Answer(api.RunStatement(call, sql::ShowTablesStatement{sql::DatabaseName{"", *db}}),
                [](const sql::ResultSet& r) {
                  return Json({{"tables", RowObjects(r)}});
                });
}

HttpResponse CreateTable(ApiServer::Impl& api, Call& call) {
  Result<std::string> db = DatabaseOf(call);
  Result<nlohmann::json> body = api.JsonBody(call);
  if (!db.ok()) return Problem(db.status());
  if (!body.ok()) return Problem(body.status());
  Result<std::string> name = NameField(*body, "name", "table name");
  if (!name.ok()) return Problem(name.status());
  if (Status st = ValidateTableName(*name); !st.ok()) return Problem(st);
  Result<std::vector<sql::ColumnDef>> columns = ColumnDefs(*body);
  if (!columns.ok()) return Problem(columns.status());
  sql::CreateTableStatement s;
  s.table = {"", *db, *name};
  s.columns = std::move(*columns);
  Result<sql::ResultSet> r = api.RunStatement(call, std::move(s));
  if (!r.ok()) return Problem(r.status());
  HttpResponse resp = Json(ResultJson(*r), 201);
  resp.headers.emplace_back("Location", "/v1/databases/" + *db + "/tables/" + *name);
  return resp;
}

// A Vigil table's detail: its newest version's columns, fields and live rows, and its indexes.
Result<nlohmann::json> VigilTableDetail(ApiServer::Impl& api, Call& call, const sql::TableRef& t) {
  std::shared_ptr<Dataset> ds;
  {
    VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, api.SessionOf(call.caller.principal));
    VIGIL_ASSIGN_OR_RETURN(ds, session->OpenTableVersion(t, std::nullopt));
  }
  VIGIL_ASSIGN_OR_RETURN(sql::ResultSet indexes, api.RunStatement(call, sql::ShowIndexStatement{t}));
  nlohmann::json columns = nlohmann::json::array(), fields = nlohmann::json::array();
  for (const Field& f : ds->schema()->fields()) {
    columns.push_back(f.name);
    fields.push_back({{"name", f.name}, {"type", f.type.ToString()}, {"not_null", !f.nullable}});
  }
  return nlohmann::json{{"database", t.database},
                        {"table", t.table},
                        {"engine", "VIGIL"},
                        {"columns", std::move(columns)},
                        {"fields", std::move(fields)},
                        {"row_count", ds->manifest().CountLiveRows()},
                        {"indexes", RowObjects(indexes)},
                        {"may_alter", MayAlter(call, t)}};
}

HttpResponse GetTable(ApiServer::Impl& api, Call& call) {
  Result<sql::TableRef> t = TableOf(call);
  if (!t.ok()) return Problem(t.status());
  Result<std::optional<HttpResponse>> external = api.ExternalTableDetail(call, t->database, t->table);
  if (!external.ok()) return Problem(external.status());
  if (*external) return std::move(**external);
  return Answer(VigilTableDetail(api, call, *t), [](const nlohmann::json& j) { return Json(j); });
}

HttpResponse DropTable(ApiServer::Impl& api, Call& call) {
  Result<sql::TableRef> t = TableOf(call);
  if (!t.ok()) return Problem(t.status());
  return Answer(api.RunStatement(call, sql::DropTableStatement{*t, false}),
                [](const sql::ResultSet& r) { return Json(ResultJson(r)); });
}

// ---- Rows ----

// The rows of a JSON body ({"rows": [{...}, ...]}) as JSON Lines in a spool file.
Result<std::shared_ptr<Spooled>> SpoolJsonRows(ApiServer::Impl& api, Call& call) {
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json body, api.JsonBody(call, kMaxJsonRowsBytes));
  if (!body.contains("rows") || !body["rows"].is_array()) {
    return Status::InvalidArgument("the body needs \"rows\": [{\"column\": value, ...}, ...]");
  }
  std::string lines;
  for (const nlohmann::json& row : body["rows"]) {
    if (!row.is_object()) return Status::InvalidArgument("each row must be a JSON object");
    lines += row.dump() + "\n";
  }
  StringBody source(std::move(lines));
  HttpRequest inner = call.req;
  inner.body = &source;
  Call rows_call{inner, call.params, call.caller, nullptr};
  return api.SpoolBody(rows_call);
}

HttpResponse AppendRows(ApiServer::Impl& api, Call& call) {
  Result<std::string> db = DatabaseParam(call);
  Result<std::string> table = TableParam(call);
  if (!db.ok()) return Problem(db.status());
  if (!table.ok()) return Problem(table.status());
  sql::CopyFormat format = sql::CopyFormat::kJsonl;
  Result<std::shared_ptr<Spooled>> spooled = Status::Internal("unset");
  if (IsUpload(call.req)) {
    Result<sql::CopyFormat> f = UploadFormat(call.req.Header("content-type"));
    if (!f.ok()) return Problem(f.status());
    format = *f;
    spooled = api.SpoolBody(call);
  } else {
    spooled = SpoolJsonRows(api, call);
  }
  if (!spooled.ok()) return Problem(spooled.status());
  Result<sql::ResultSet> r = [&]() -> Result<sql::ResultSet> {
    VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, api.SessionOf(call.caller.principal));
    return session->CopyUpload(sql::TableRef{"", *db, *table}, (*spooled)->path, format, call.claim);
  }();
  return r.ok() ? Json(ResultJson(*r)) : Problem(r.status());
}

// ---- History ----

HttpResponse ListVersions(ApiServer::Impl& api, Call& call) {
  Result<sql::TableRef> t = TableOf(call);
  Result<int64_t> limit = IntQuery(call.req, "limit", kDefaultVersionPage, 1, kMaxVersionPage);
  if (!t.ok()) return Problem(t.status());
  if (!limit.ok()) return Problem(limit.status());
  Result<sql::ResultSet> r = api.RunStatement(call, sql::ShowVersionsStatement{*t, *limit});
  if (!r.ok()) return Problem(r.status());
  return Json(
      {{"database", t->database}, {"table", t->table}, {"versions", RowObjects(*r)}, {"warnings", r->warnings}});
}

HttpResponse ListGenerations(ApiServer::Impl& api, Call& call) {
  Result<sql::TableRef> t = TableOf(call);
  if (!t.ok()) return Problem(t.status());
  Result<sql::ResultSet> held = api.RunStatement(call, sql::ShowGenerationsStatement{*t});
  if (!held.ok()) return Problem(held.status());
  Result<sql::ResultSet> orphans = [&]() -> Result<sql::ResultSet> {
    VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, api.SessionOf(call.caller.principal));
    return session->Select("SELECT Path, Bytes, Reason FROM vigil_orphans(?) ORDER BY Path", {FullName(*t)});
  }();
  if (!orphans.ok()) return Problem(orphans.status());
  return Json({{"database", t->database},
               {"table", t->table},
               {"generations", RowObjects(*held)},
               {"orphans", RowObjects(*orphans)}});
}

// ---- Indexes ----

HttpResponse ListIndexes(ApiServer::Impl& api, Call& call) {
  Result<sql::TableRef> t = TableOf(call);
  if (!t.ok()) return Problem(t.status());
  return Answer(api.RunStatement(call, sql::ShowIndexStatement{*t}), [](const sql::ResultSet& r) {
    return Json({{"indexes", RowObjects(r)}});
  });
}

HttpResponse CreateIndex(ApiServer::Impl& api, Call& call) {
  Result<sql::TableRef> t = TableOf(call);
  Result<nlohmann::json> body = api.JsonBody(call);
  if (!t.ok()) return Problem(t.status());
  if (!body.ok()) return Problem(body.status());
  Result<sql::CreateIndexStatement> s = CreateIndexOf(*body, *t);
  if (!s.ok()) return Problem(s.status());
  return Answer(api.RunStatement(call, std::move(*s)), Accepted);
}

// The route's table and {index}, as DROP INDEX and BUILD INDEX name them.
Result<std::pair<sql::TableRef, std::string>> IndexOf(const Call& call) {
  VIGIL_ASSIGN_OR_RETURN(sql::TableRef t, TableOf(call));
  VIGIL_ASSIGN_OR_RETURN(std::string index, IdentifierParam(call, "index", "index name"));
  VIGIL_RETURN_IF_ERROR(CheckUnreserved(index, "index name"));
  return std::make_pair(std::move(t), std::move(index));
}

HttpResponse DropIndex(ApiServer::Impl& api, Call& call) {
  Result<std::pair<sql::TableRef, std::string>> i = IndexOf(call);
  if (!i.ok()) return Problem(i.status());
  return Answer(api.RunStatement(call, sql::DropIndexStatement{i->second, i->first, false}), Accepted);
}

HttpResponse BuildIndex(ApiServer::Impl& api, Call& call) {
  Result<std::pair<sql::TableRef, std::string>> i = IndexOf(call);
  if (!i.ok()) return Problem(i.status());
  return Answer(api.RunStatement(call, sql::BuildIndexStatement{i->second, i->first}), Accepted);
}

// ---- Queries and maintenance ----

HttpResponse QueryTable(ApiServer::Impl& api, Call& call) {
  Result<std::string> db = DatabaseParam(call);
  Result<std::string> table = TableParam(call);
  if (!db.ok()) return Problem(db.status());
  if (!table.ok()) return Problem(table.status());
  Result<std::string> text = call.req.body->ReadAll(kMaxRequestBodyBytes);
  if (!text.ok()) return Problem(text.status());
  Result<QueryRequest> request = ParseQueryRequest(*text);
  if (!request.ok()) return Problem(request.status());
  Result<sql::ResultSet> r = api.RunQuery(call, *db, *table, std::move(*request));
  if (!r.ok()) return Problem(r.status());
  // Crash and race cut: the rows are read, not sent yet. They go only to a reader who may
  // still see them.
  (void)failpoint::Hit("query_route.after_query");
  auth::Authenticated now;
  if (std::optional<HttpResponse> lost = api.RightsLost(call.token, call.caller, &now)) return std::move(*lost);
  return JsonResponse(RowsDocument(*r));
}

HttpResponse VacuumTable(ApiServer::Impl& api, Call& call) {
  Result<sql::TableRef> t = TableOf(call);
  Result<nlohmann::json> body = api.JsonBody(call);
  if (!t.ok()) return Problem(t.status());
  if (!body.ok()) return Problem(body.status());
  Result<sql::VacuumStatement> s = VacuumOf(*body, *t);
  if (!s.ok()) return Problem(s.status());
  return Answer(api.RunStatement(call, std::move(*s)), [](const sql::ResultSet& r) { return Json(ResultJson(r)); });
}

}  // namespace

Result<std::optional<HttpResponse>> ApiServer::Impl::AppendEffect(const PathParams& params, const std::string& token) {
  VIGIL_ASSIGN_OR_RETURN(std::string db, DatabaseParam(params));
  VIGIL_ASSIGN_OR_RETURN(std::string table, TableParam(params));
  // The server settles its own requests: the table's history as the administrator reads it.
  VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, SessionOf(auth::Principal::LocalAdmin()));
  std::vector<uint64_t> corrupt;
  Result<std::vector<VersionInfo>> history = session->TableHistory(sql::TableRef{"", db, table}, &corrupt);
  if (history.status().code() == StatusCode::kNotFound) return std::optional<HttpResponse>();
  VIGIL_RETURN_IF_ERROR(history.status());
  if (!corrupt.empty()) return Status::Corruption("the history of " + db + "." + table + " has corrupt versions");
  const std::vector<VersionInfo>& versions = *history;
  for (size_t i = 0; i < versions.size(); ++i) {
    if (versions[i].txn.idempotency_key != token) continue;
    const uint64_t before = i > 0 ? versions[i - 1].live_rows : 0;
    sql::ResultSet r;
    r.message = std::to_string(versions[i].live_rows - before) + " rows copied into " + db + "." + table +
                " (version " + std::to_string(versions[i].version) + ", settled after the server restarted)";
    return std::optional<HttpResponse>(Json(ResultJson(r)));
  }
  return std::optional<HttpResponse>();
}

Result<std::optional<HttpResponse>> ApiServer::Impl::AdmissionEffect(const std::string& token) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> id, jobs_->JobOfRequest(token));
  if (!id) return std::optional<HttpResponse>();
  VIGIL_ASSIGN_OR_RETURN(jobs::JobRecord job, jobs_->Get(*id));
  sql::ResultSet r;
  r.message = std::string(AdmittingStatement(job.spec.operation)) + ": job " + std::to_string(*id) +
              " admitted (settled after the server restarted)";
  r.admitted_jobs.push_back(*id);
  return std::optional<HttpResponse>(Accepted(r));
}

Result<std::optional<HttpResponse>> ApiServer::Impl::ExternalTableDetail(Call& call, const std::string& db,
                                                                         const std::string& table) {
  // A table Vigil owns, a missing one or a bad name: the caller's own path answers (and
  // authorizes) it. Otherwise SHOW INDEX authorizes: a table one may not see reads as missing.
  catalog::TableCatalog catalog(&root_, &jobs_->catalog());
  Result<std::optional<catalog::TableEntry>> found =
      catalog.Find(vigil::TableName{std::string(kLocalCatalog), db, table});
  if (!found.ok() || !*found || (*found)->engine != index::TableEngine::kLance) return std::optional<HttpResponse>();
  const catalog::TableEntry& entry = **found;
  VIGIL_ASSIGN_OR_RETURN(sql::ResultSet indexes,
                         RunStatement(call, sql::ShowIndexStatement{sql::TableRef{"", db, table}}));
  VIGIL_ASSIGN_OR_RETURN(lance::LanceSnapshot snap, lance::Inspect(entry.locator, lance::ReadOptions(config_.lance)));
  nlohmann::json columns = nlohmann::json::array(), fields = nlohmann::json::array();
  for (const lance::LanceField& f : snap.fields) {
    columns.push_back(f.name);
    fields.push_back({{"name", f.name}, {"type", f.type}, {"not_null", !f.nullable}});
  }
  return std::optional<HttpResponse>(
      Json({{"database", db},
            {"table", table},
            {"engine", "LANCE"},
            {"location", entry.locator},
            {"version", snap.version},
            {"columns", columns},
            {"fields", fields},
            {"row_count", snap.data.rows},
            {"indexes", RowObjects(indexes)},
            {"may_alter", call.caller.principal.Has(auth::Privilege::kAlter, std::string(kLocalCatalog), db, table)}}));
}

void ApiServer::Impl::AddTableRoutes() {
  const auto bind = [this](HttpResponse (*handler)(Impl&, Call&)) {
    return [this, handler](Call& call) { return handler(*this, call); };
  };
  // An index request's job is admitted in one transaction with its token (jobs::Admission).
  const auto admission_effect = [this](const PathParams&, const std::string& token) { return AdmissionEffect(token); };
  const auto append_effect = [this](const PathParams& params, const std::string& token) {
    return AppendEffect(params, token);
  };
  const std::string table = "/v1/databases/{db}/tables/{table}";
  Add({"GET", "/v1/databases", false, false, false, bind(&ListDatabases)});
  Add({"POST", "/v1/databases", false, true, true, bind(&CreateDatabase)});
  Add({"DELETE", "/v1/databases/{db}", false, true, true, bind(&DropDatabase)});
  Add({"GET", "/v1/databases/{db}/tables", false, false, false, bind(&ListTables)});
  Add({"POST", "/v1/databases/{db}/tables", false, true, true, bind(&CreateTable)});
  Add({"GET", table, false, false, false, bind(&GetTable)});
  Add({"DELETE", table, false, true, true, bind(&DropTable)});
  Add({"POST", table + "/rows", false, true, true, bind(&AppendRows), append_effect});
  Add({"GET", table + "/versions", false, false, false, bind(&ListVersions)});
  Add({"GET", table + "/generations", false, false, false, bind(&ListGenerations)});
  Add({"GET", table + "/indexes", false, false, false, bind(&ListIndexes)});
  Add({"POST", table + "/indexes", false, true, true, bind(&CreateIndex), admission_effect});
  Add({"DELETE", table + "/indexes/{index}", false, true, true, bind(&DropIndex), admission_effect});
  Add({"POST", table + "/indexes/{index}/build", false, true, true, bind(&BuildIndex), admission_effect});
  Add({"POST", table + "/query", false, false, false, bind(&QueryTable)});
  Add({"POST", table + "/vacuum", false, true, true, bind(&VacuumTable)});
}

}  // namespace vigil::server

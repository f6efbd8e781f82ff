// Resource routes: databases, tables, rows (JSON rows or an uploaded CSV /
// JSON Lines / .fvecs / .npy body, streamed to a spool file), indexes (CREATE,
// REPLACE, DROP and BUILD answer 202 Accepted with the job and its Location),
// queries (vector, full text, filter) and VACUUM. Each builds one statement
// from allowlisted names and escaped literals and runs it as the caller.

#include "server/api_internal.h"
#include "server/query/query_request.h"
#include "server/query_json.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/names.h"
#include "vigil/lance/lance_table.h"
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

// A column type as written in CREATE TABLE ("BIGINT", "VARCHAR(20)", "VECTOR(FLOAT32, 128)"):
// letters, digits, parentheses, commas and spaces only.
Result<std::string> ColumnType(const nlohmann::json& v) {
  if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64) {
    return Status::InvalidArgument(
        "a column's type must be a type name such as \"BIGINT\" or \"VECTOR(FLOAT32, 128)\"");
  }
  const std::string t = v.get<std::string>();
  for (char c : t) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '(' && c != ')' && c != '_' && c != ',' && c != ' ') {
      return Status::InvalidArgument("column type \"" + t +
                                     "\" has a character other than letters, digits, '(', ')', ',' and spaces");
    }
  }
  return t;
}

// An index property key or value: [A-Za-z0-9_.-], quoted for PROPERTIES.
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
  return "\"" + t + "\"";
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

}  // namespace

Result<std::optional<HttpResponse>> ApiServer::Impl::AppendEffect(const PathParams& params, const std::string& token) {
  VIGIL_ASSIGN_OR_RETURN(std::string db, DatabaseParam(params));
  VIGIL_ASSIGN_OR_RETURN(std::string table, TableParam(params));
  catalog::TableCatalog catalog(&root_, &jobs_->catalog());
  Result<std::shared_ptr<Dataset>> ds = catalog.Open(vigil::TableName{std::string(kLocalCatalog), db, table});
  if (ds.status().code() == StatusCode::kNotFound) return std::optional<HttpResponse>();
  VIGIL_RETURN_IF_ERROR(ds.status());
  std::vector<uint64_t> corrupt;
  VIGIL_ASSIGN_OR_RETURN(std::vector<VersionInfo> versions,
                         Dataset::ListVersions((*ds)->path(), (*ds)->options(), &corrupt));
  if (!corrupt.empty()) return Status::Corruption("the history of " + db + "." + table + " has corrupt versions");
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
  VIGIL_ASSIGN_OR_RETURN(sql::ResultSet indexes, RunSql(call, "SHOW INDEX FROM " + db + "." + table));
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
  Add({"GET", "/v1/databases", false, false, false, [this](Call& call) {
         Result<sql::ResultSet> r = RunSql(call, "SHOW DATABASES");
         return r.ok() ? Json({{"databases", RowObjects(*r)}}) : Problem(r.status());
       }});

  Add({"POST", "/v1/databases", false, true, true, [this](Call& call) {
         Result<nlohmann::json> body = JsonBody(call);
         if (!body.ok()) return Problem(body.status());
         if (!body->contains("name") || !(*body)["name"].is_string()) {
           return Problem(Status::InvalidArgument("the body needs \"name\": the database name"));
         }
         const std::string name = (*body)["name"].get<std::string>();
         if (Status st = ValidateDatabaseName(name); !st.ok()) return Problem(st);
         Result<sql::ResultSet> r = RunSql(call, "CREATE DATABASE " + name);
         if (!r.ok()) return Problem(r.status());
         HttpResponse resp = Json(ResultJson(*r), 201);
         resp.headers.emplace_back("Location", "/v1/databases/" + name);
         return resp;
       }});

  Add({"DELETE", "/v1/databases/{db}", false, true, true, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         if (!db.ok()) return Problem(db.status());
         Result<sql::ResultSet> r = RunSql(call, "DROP DATABASE " + *db);
         return r.ok() ? Json(ResultJson(*r)) : Problem(r.status());
       }});

  Add({"GET", "/v1/databases/{db}/tables", false, false, false, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         if (!db.ok()) return Problem(db.status());
         Result<sql::ResultSet> r = RunSql(call, "SHOW TABLES FROM " + *db);
         return r.ok() ? Json({{"tables", RowObjects(*r)}}) : Problem(r.status());
       }});

  Add({"POST", "/v1/databases/{db}/tables", false, true, true, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<nlohmann::json> body = JsonBody(call);
         if (!db.ok()) return Problem(db.status());
         if (!body.ok()) return Problem(body.status());
         Result<std::string> name = NameField(*body, "name", "table name");
         if (!name.ok()) return Problem(name.status());
         if (Status st = ValidateTableName(*name); !st.ok()) return Problem(st);
         if (!body->contains("columns") || !(*body)["columns"].is_array() || (*body)["columns"].empty()) {
           return Problem(Status::InvalidArgument(
               "the body needs \"columns\": [{\"name\": ..., \"type\": ..., \"not_null\": false}, ...]"));
         }
         std::string cols;
         for (const nlohmann::json& c : (*body)["columns"]) {
           if (!c.is_object()) return Problem(Status::InvalidArgument("each column must be an object"));
           Result<std::string> cname = NameField(c, "name", "column name");
           if (!cname.ok()) return Problem(cname.status());
           Result<std::string> type = ColumnType(c.value("type", nlohmann::json()));
           if (!type.ok()) return Problem(type.status());
           Result<bool> not_null = BoolField(c, "not_null");
           if (!not_null.ok()) return Problem(not_null.status());
           cols += (cols.empty() ? "" : ", ") + *cname + " " + *type + (*not_null ? " NOT NULL" : "");
         }
         Result<sql::ResultSet> r = RunSql(call, "CREATE TABLE " + *db + "." + *name + " (" + cols + ")");
         if (!r.ok()) return Problem(r.status());
         HttpResponse resp = Json(ResultJson(*r), 201);
         resp.headers.emplace_back("Location", "/v1/databases/" + *db + "/tables/" + *name);
         return resp;
       }});

  Add({"GET", "/v1/databases/{db}/tables/{table}", false, false, false, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         const std::string full = *db + "." + *table;
         Result<std::optional<HttpResponse>> external = ExternalTableDetail(call, *db, *table);
         if (!external.ok()) return Problem(external.status());
         if (*external) return std::move(**external);
         Result<sql::ResultSet> count = RunSql(call, "SELECT COUNT(*) AS row_count FROM " + full);
         if (!count.ok()) return Problem(count.status());
         Result<sql::ResultSet> shape = RunSql(call, "SELECT * FROM " + full + " LIMIT 0");
         if (!shape.ok()) return Problem(shape.status());
         Result<sql::ResultSet> indexes = RunSql(call, "SHOW INDEX FROM " + full);
         if (!indexes.ok()) return Problem(indexes.status());
         Result<nlohmann::json> fields = TableFields(call, *db, *table);
         if (!fields.ok()) return Problem(fields.status());
         return Json({{"database", *db},
                      {"table", *table},
                      {"engine", "VIGIL"},
                      {"columns", shape->columns},
                      {"fields", *fields},
                      {"row_count", RowObjects(*count)[0]["row_count"]},
                      {"indexes", RowObjects(*indexes)},
                      {"may_alter",
                       call.caller.principal.Has(auth::Privilege::kAlter, std::string(kLocalCatalog), *db, *table)}});
       }});

  Add({"DELETE", "/v1/databases/{db}/tables/{table}", false, true, true, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         Result<sql::ResultSet> r = RunSql(call, "DROP TABLE " + *db + "." + *table);
         return r.ok() ? Json(ResultJson(*r)) : Problem(r.status());
       }});

  Add({"POST", "/v1/databases/{db}/tables/{table}/rows", false, true, true,
       [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         sql::CopyFormat format = sql::CopyFormat::kJsonl;
         std::shared_ptr<Spooled> spooled;
         if (IsUpload(call.req)) {
           Result<sql::CopyFormat> f = UploadFormat(call.req.Header("content-type"));
           if (!f.ok()) return Problem(f.status());
           format = *f;
           Result<std::shared_ptr<Spooled>> s = SpoolBody(call);
           if (!s.ok()) return Problem(s.status());
           spooled = *s;
         } else {
           Result<nlohmann::json> body = JsonBody(call, kMaxJsonRowsBytes);
           if (!body.ok()) return Problem(body.status());
           if (!body->contains("rows") || !(*body)["rows"].is_array()) {
             return Problem(Status::InvalidArgument("the body needs \"rows\": [{\"column\": value, ...}, ...]"));
           }
           std::string lines;
           for (const nlohmann::json& row : (*body)["rows"]) {
             if (!row.is_object()) return Problem(Status::InvalidArgument("each row must be a JSON object"));
             lines += row.dump() + "\n";
           }
           StringBody source(std::move(lines));
           HttpRequest inner = call.req;
           inner.body = &source;
           Call rows_call{inner, call.params, call.caller, nullptr};
           Result<std::shared_ptr<Spooled>> s = SpoolBody(rows_call);
           if (!s.ok()) return Problem(s.status());
           spooled = *s;
         }
         sql::TableRef name{"", *db, *table};
         Result<sql::ResultSet> r = [&]() -> Result<sql::ResultSet> {
           VIGIL_ASSIGN_OR_RETURN(SessionPool::Lease session, sessions_->Acquire(call.caller.principal, kSessionWait));
           return session->CopyUpload(name, spooled->path, format, call.claim);
         }();
         return r.ok() ? Json(ResultJson(*r)) : Problem(r.status());
       },
       [this](const PathParams& params, const std::string& token) { return AppendEffect(params, token); }});

  Add({"GET", "/v1/databases/{db}/tables/{table}/versions", false, false, false, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         Result<int64_t> limit = IntQuery(call.req, "limit", kDefaultVersionPage, 1, kMaxVersionPage);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         if (!limit.ok()) return Problem(limit.status());
         Result<sql::ResultSet> r =
             RunSql(call, "SHOW VERSIONS FROM " + *db + "." + *table + " LIMIT " + std::to_string(*limit));
         if (!r.ok()) return Problem(r.status());
         return Json({{"database", *db}, {"table", *table}, {"versions", RowObjects(*r)}, {"warnings", r->warnings}});
       }});

  Add({"GET", "/v1/databases/{db}/tables/{table}/generations", false, false, false, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         const std::string full = *db + "." + *table;
         Result<sql::ResultSet> held = RunSql(call, "SHOW GENERATIONS FROM " + full);
         if (!held.ok()) return Problem(held.status());
         Result<sql::ResultSet> orphans =
             RunSql(call, "SELECT Path, Bytes, Reason FROM vigil_orphans('" + full + "') ORDER BY Path");
         if (!orphans.ok()) return Problem(orphans.status());
         return Json({{"database", *db},
                      {"table", *table},
                      {"generations", RowObjects(*held)},
                      {"orphans", RowObjects(*orphans)}});
       }});

  Add({"GET", "/v1/databases/{db}/tables/{table}/indexes", false, false, false, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         Result<sql::ResultSet> r = RunSql(call, "SHOW INDEX FROM " + *db + "." + *table);
         return r.ok() ? Json({{"indexes", RowObjects(*r)}}) : Problem(r.status());
       }});

  // An index request's job is admitted in one transaction with its token (jobs::Admission).
  const auto admission_effect = [this](const PathParams&, const std::string& token) { return AdmissionEffect(token); };
  Add({"POST", "/v1/databases/{db}/tables/{table}/indexes", false, true, true,
       [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         Result<nlohmann::json> body = JsonBody(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         if (!body.ok()) return Problem(body.status());
         Result<std::string> name = NameField(*body, "name", "index name");
         if (!name.ok()) return Problem(name.status());
         const nlohmann::json using_method = body->value("using", nlohmann::json());
         const std::string method = using_method.is_string() ? using_method.get<std::string>() : "";
         if (method != "ANN" && method != "BTREE" && method != "BITMAP" && method != "FTS") {
           return Problem(Status::InvalidArgument("\"using\" must be ANN, BTREE, BITMAP or FTS"));
         }
         if (!body->contains("columns") || !(*body)["columns"].is_array() || (*body)["columns"].empty()) {
           return Problem(Status::InvalidArgument("the body needs \"columns\": [\"column\", ...]"));
         }
         std::string cols;
         for (const nlohmann::json& c : (*body)["columns"]) {
           if (!c.is_string()) return Problem(Status::InvalidArgument("each column must be a name"));
           if (Status st = ValidateIdentifier(c.get<std::string>(), "column name"); !st.ok()) return Problem(st);
           cols += (cols.empty() ? "" : ", ") + c.get<std::string>();
         }
         std::string props;
         if (body->contains("properties")) {
           if (!(*body)["properties"].is_object()) {
             return Problem(Status::InvalidArgument("\"properties\" must be an object of strings"));
           }
           for (const auto& [k, v] : (*body)["properties"].items()) {
             Result<std::string> key = PropertyText(k, "key");
             Result<std::string> value = PropertyText(v, "value of " + k);
             if (!key.ok()) return Problem(key.status());
             if (!value.ok()) return Problem(value.status());
             props += (props.empty() ? "" : ", ") + *key + " = " + *value;
           }
         }
         Result<bool> replace = BoolField(*body, "replace");
         Result<bool> if_not_exists = BoolField(*body, "if_not_exists");
         if (!replace.ok()) return Problem(replace.status());
         if (!if_not_exists.ok()) return Problem(if_not_exists.status());
         std::string stmt = std::string("CREATE ") + (*replace ? "OR REPLACE " : "") + "INDEX " +
                            (*if_not_exists ? "IF NOT EXISTS " : "") + *name + " ON " + *db + "." + *table + " (" +
                            cols + ") USING " + method + (props.empty() ? "" : " PROPERTIES (" + props + ")");
         Result<sql::ResultSet> r = RunSql(call, stmt);
         return r.ok() ? Accepted(*r) : Problem(r.status());
       },
       admission_effect});

  // DROP INDEX / BUILD INDEX name ON db.table: 202 with the job.
  const auto index_job = [this](const char* verb) {
    return [this, verb](Call& call) {
      Result<std::string> db = DatabaseParam(call);
      Result<std::string> table = TableParam(call);
      Result<std::string> index = IdentifierParam(call, "index", "index name");
      if (!db.ok()) return Problem(db.status());
      if (!table.ok()) return Problem(table.status());
      if (!index.ok()) return Problem(index.status());
      Result<sql::ResultSet> r = RunSql(call, std::string(verb) + " INDEX " + *index + " ON " + *db + "." + *table);
      return r.ok() ? Accepted(*r) : Problem(r.status());
    };
  };
  Add({"DELETE", "/v1/databases/{db}/tables/{table}/indexes/{index}", false, true, true, index_job("DROP"),
       admission_effect});
  Add({"POST", "/v1/databases/{db}/tables/{table}/indexes/{index}/build", false, true, true, index_job("BUILD"),
       admission_effect});

  Add({"POST", "/v1/databases/{db}/tables/{table}/query", false, false, false, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         Result<std::string> text = call.req.body->ReadAll(kMaxRequestBodyBytes);
         if (!text.ok()) return Problem(text.status());
         Result<QueryRequest> request = ParseQueryRequest(*text);
         if (!request.ok()) return Problem(request.status());
         Result<sql::ResultSet> r = RunQuery(call, *db, *table, std::move(*request));
         if (!r.ok()) return Problem(r.status());
         // Crash and race cut: the rows are read, not sent yet. They go only to a reader who may
         // still see them.
         (void)failpoint::Hit("query_route.after_query");
         auth::Authenticated now;
         if (std::optional<HttpResponse> lost = RightsLost(call.token, call.caller, &now)) return std::move(*lost);
         return JsonResponse(RowsDocument(*r));
       }});

  Add({"POST", "/v1/databases/{db}/tables/{table}/vacuum", false, true, true, [this](Call& call) {
         Result<std::string> db = DatabaseParam(call);
         Result<std::string> table = TableParam(call);
         Result<nlohmann::json> body = JsonBody(call);
         if (!db.ok()) return Problem(db.status());
         if (!table.ok()) return Problem(table.status());
         if (!body.ok()) return Problem(body.status());
         std::string stmt = "VACUUM " + *db + "." + *table;
         if (body->contains("retain_versions")) {
           const nlohmann::json& n = (*body)["retain_versions"];
           if (!n.is_number_integer() || n.get<int64_t>() < 1) {
             return Problem(Status::InvalidArgument("\"retain_versions\" must be a positive integer"));
           }
           stmt += " RETAIN " + std::to_string(n.get<int64_t>()) + " VERSIONS";
         }
         Result<sql::ResultSet> r = RunSql(call, stmt);
         return r.ok() ? Json(ResultJson(*r)) : Problem(r.status());
       }});
}

}  // namespace vigil::server

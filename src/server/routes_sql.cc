// POST /v1/sql: one statement, or a script of statements when the body says
// "script": true, run in order in one session as the caller, with the shell's
// scripting contract: every statement's result, and at the first failure the
// error (as a problem document) with the results of the statements before it;
// nothing after it runs. A read's rows are sent only while the caller still
// holds the rights it came with. A keyed script that committed something
// before it failed keeps its answer for the key, so a retry never commits the
// same statement twice.
#include "server/api_internal.h"
#include "server/query_json.h"
#include "vigil/common/failpoint.h"
#include "vigil/sql/parser.h"

namespace vigil::server {

namespace {

constexpr size_t kMaxScriptBytes = 4 << 20;

// The statements of a POST /v1/sql body: {"sql": "<text>"} for one, {"sql": ..., "script": true}
// for several; InvalidArgument naming what is wrong.
Result<std::vector<sql::Statement>> BodyStatements(const nlohmann::json& body) {
  for (const auto& [member, value] : body.items()) {
    if (member != "sql" && member != "script") {
      return Status::InvalidArgument("the body has an unknown member \"" + member.substr(0, 64) +
                                     "\"; it takes \"sql\" and \"script\"");
    }
  }
  if (!body.contains("sql") || !body["sql"].is_string()) {
    return Status::InvalidArgument("the body must be {\"sql\": \"<statement>\"}");
  }
  if (body.contains("script") && !body["script"].is_boolean()) {
    return Status::InvalidArgument("\"script\" must be true or false");
  }
  const bool script = body.value("script", false);
  VIGIL_ASSIGN_OR_RETURN(std::vector<sql::Statement> statements, sql::ParseScript(body["sql"].get<std::string>()));
  if (statements.size() > 1 && !script) {
    return Status::InvalidArgument("the body holds " + std::to_string(statements.size()) +
                                   " statements; POST /v1/sql runs one unless the body says \"script\": true");
  }
  return statements;
}

// The answer of a script that stopped at statement `index` with `problem`: the problem
// document with the index and the results before it. `committed`: a statement before it
// committed, so a key keeps this answer.
HttpResponse Stopped(HttpResponse problem, size_t index, const std::string& results, bool committed) {
  nlohmann::json doc = nlohmann::json::parse(problem.body);
  doc["statement_index"] = index;
  problem.body = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  problem.body.pop_back();  // the closing brace: the results follow
  problem.body += ",\"results\":" + results + "]}";
  problem.committed = committed;
  return problem;
}

// A script's answer so far: each statement's ResultDocument, written once.
struct ScriptAnswer {
  std::string results = "[";
  bool holds_secret = false;
  bool committed = false;  // a statement so far may have committed something

  // The answer of a script stopped at statement `index` by `problem`, with `results`.
  HttpResponse Stop(HttpResponse problem, size_t index, const std::string& results_so_far) const {
    HttpResponse resp = Stopped(std::move(problem), index, results_so_far, committed);
    resp.holds_secret = holds_secret;
    return resp;
  }
};

// Runs statement `i` of a script; the answer to end with when it stops the script.
std::optional<HttpResponse> RunScriptStatement(ApiServer::Impl& api, const Call& call, sql::Session& session,
                                               const sql::Statement& statement, size_t i, ScriptAnswer* answer) {
  Result<sql::ResultSet> r = session.Execute(statement);
  if (!r.ok()) return answer->Stop(ProblemResponse(r.status()), i, answer->results);
  answer->committed = answer->committed || sql::MayCommit(statement.node);
  if (!r->admitted_jobs.empty() && api.options_.jobs_admitted) api.options_.jobs_admitted();
  // Crash and race cut: the statement ran, its answer is not sent yet.
  (void)failpoint::Hit("sql_route.after_statement");
  // What a read found is sent only while its reader may still see it. A change's own
  // answer is sent as it is (ROTATE TOKEN's new token, a REVOKE of the caller's own grant).
  auth::Authenticated now;
  std::optional<HttpResponse> lost;
  if (!sql::MayCommit(statement.node)) lost = api.RightsLost(call.token, call.caller, &now);
  // What it committed stands (statement_index says how far it went); no result is sent.
  if (lost) return answer->Stop(std::move(*lost), i, "[");
  if (i > 0) answer->results += ',';
  answer->results += ResultDocument(*r);
  answer->holds_secret = answer->holds_secret || r->holds_secret;
  return std::nullopt;
}

// POST /v1/sql: the body's statements in order, in one session as the caller.
HttpResponse RunScript(ApiServer::Impl& api, Call& call) {
  Result<nlohmann::json> body = api.JsonBody(call, kMaxScriptBytes);
  if (!body.ok()) return ProblemResponse(body.status());
  Result<std::vector<sql::Statement>> script = BodyStatements(*body);
  if (!script.ok()) return ProblemResponse(script.status());
  Result<SessionPool::Lease> session = api.SessionOf(call.caller.principal);
  if (!session.ok()) return ProblemResponse(session.status());
  ScriptAnswer answer;
  for (size_t i = 0; i < script->size(); ++i) {
    if (std::optional<HttpResponse> stop = RunScriptStatement(api, call, **session, (*script)[i], i, &answer)) {
      return std::move(*stop);
    }
  }
  HttpResponse resp = JsonResponse("{\"results\":" + answer.results + "]}");
  resp.holds_secret = answer.holds_secret;
  return resp;
}

}  // namespace

void ApiServer::Impl::AddSqlRoutes() {
  Add({"POST", "/v1/sql", false, true, false, [this](Call& call) { return RunScript(*this, call); }});
}

}  // namespace vigil::server

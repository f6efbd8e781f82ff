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

}  // namespace

void ApiServer::Impl::AddSqlRoutes() {
  Add({"POST", "/v1/sql", false, true, false, [this](Call& call) {
         Result<nlohmann::json> body = JsonBody(call, kMaxScriptBytes);
         if (!body.ok()) return ProblemResponse(body.status());
         Result<std::vector<sql::Statement>> script = BodyStatements(*body);
         if (!script.ok()) return ProblemResponse(script.status());
         Result<SessionPool::Lease> session = sessions_->Acquire(call.caller.principal, kSessionWait);
         if (!session.ok()) return ProblemResponse(session.status());
         std::string results = "[";  // each statement's ResultDocument, written once
         bool holds_secret = false;
         bool committed = false;
         for (size_t i = 0; i < script->size(); ++i) {
           const sql::Statement& statement = (*script)[i];
           Result<sql::ResultSet> r = (*session)->Execute(statement);
           if (!r.ok()) {
             HttpResponse resp = Stopped(ProblemResponse(r.status()), i, results, committed);
             resp.holds_secret = holds_secret;
             return resp;
           }
           committed = committed || sql::MayCommit(statement.node);
           if (!r->admitted_jobs.empty() && options_.jobs_admitted) options_.jobs_admitted();
           // Crash and race cut: the statement ran, its answer is not sent yet.
           (void)failpoint::Hit("sql_route.after_statement");
           // What a read found is sent only while its reader may still see it. A change's own
           // answer is sent as it is (ROTATE TOKEN's new token, a REVOKE of the caller's own grant).
           auth::Authenticated now;
           std::optional<HttpResponse> lost;
           if (!sql::MayCommit(statement.node)) lost = RightsLost(call.token, call.caller, &now);
           if (lost) {
             // What it committed stands (statement_index says how far it went); no result is sent.
             HttpResponse resp = Stopped(std::move(*lost), i, "[", committed);
             resp.holds_secret = holds_secret;
             return resp;
           }
           if (i > 0) results += ',';
           results += ResultDocument(*r);
           holds_secret = holds_secret || r->holds_secret;
         }
         HttpResponse resp = JsonResponse("{\"results\":" + results + "]}");
         resp.holds_secret = holds_secret;
         return resp;
       }});
}

}  // namespace vigil::server

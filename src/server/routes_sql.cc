// POST /v1/sql: a script of statements run in order in one session as the
// caller, with the shell's scripting contract: every statement's result, and
// at the first failure the error (as a problem document) with the results of
// the statements before it; nothing after it runs.
#include "server/api_internal.h"
#include "server/query_json.h"
#include "vigil/sql/parser.h"

namespace vigil::server {

namespace {

constexpr size_t kMaxScriptBytes = 4 << 20;

}  // namespace

void ApiServer::Impl::AddSqlRoutes() {
  Add({"POST", "/v1/sql", false, true, false, [this](Call& call) {
         Result<nlohmann::json> body = JsonBody(call, kMaxScriptBytes);
         if (!body.ok()) return ProblemResponse(body.status());
         if (!body->contains("sql") || !(*body)["sql"].is_string()) {
           return ProblemResponse(400, "INVALID_ARGUMENT", "the body must be {\"sql\": \"<statements>\"}");
         }
         const std::string text = (*body)["sql"].get<std::string>();
         Result<std::vector<sql::Statement>> script = sql::ParseScript(text);
         if (!script.ok()) return ProblemResponse(script.status());
         Result<SessionPool::Lease> session = sessions_->Acquire(call.caller.principal, kSessionWait);
         if (!session.ok()) return ProblemResponse(session.status());
         std::string results = "[";  // each statement's ResultDocument, written once
         bool holds_secret = false;
         for (size_t i = 0; i < script->size(); ++i) {
           Result<sql::ResultSet> r = (*session)->Execute((*script)[i]);
           if (!r.ok()) {
             HttpResponse resp = ProblemResponse(r.status());
             nlohmann::json problem = nlohmann::json::parse(resp.body);
             problem["statement_index"] = i;
             resp.body = problem.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
             resp.body.pop_back();  // the closing brace: the results follow
             resp.body += ",\"results\":" + results + "]}";
             resp.holds_secret = holds_secret;
             return resp;
           }
           if (!r->admitted_jobs.empty() && options_.jobs_admitted) options_.jobs_admitted();
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

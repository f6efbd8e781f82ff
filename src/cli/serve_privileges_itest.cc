// The privilege rules of seed 000 section 9 over HTTP: each route, as a user
// with no token, SHOW, ALTER or ADMIN, answers what the rules say, and a table
// the caller may not see answers exactly like a missing one. Then a secret
// scan: no bearer token secret in responses, metrics, logs or the metadata store.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/serve_fixture.h"
#include "testutil/tcp_client.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/root_auth.h"
#include "vigil/server/http_client.h"
#include "vigil/storage/root.h"

namespace vigil {
namespace {

using Json = nlohmann::json;

struct Probe {
  std::string method;
  std::string target;
  Json body;  // null: no body
  // Expected status as: no token, SHOW on d.*, ALTER on d.*, global ADMIN.
  int none, show, alter, admin;
};

class ServePrivilegesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("root");
    ASSERT_EQ(RunVigil("init " + root_), 0);
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok());
    admin_ = (*store)->CreateUser("default", "boss", true)->token;
    alter_ = (*store)->CreateUser("default", "writer", false)->token;
    show_ = (*store)->CreateUser("default", "reader", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "writer", auth::Privilege::kAlter, "local.d.*").ok());
    ASSERT_TRUE((*store)->Grant("default", "reader", auth::Privilege::kShow, "local.d.*").ok());
    // The server logs everything it would log (VIGIL_LOG=debug) into log_, which the secret scan reads.
    log_ = dir_.Join("serve.log");
    ::setenv("VIGIL_LOG", "debug", 1);
    server_ = std::make_unique<ServeProcess>(root_, 0, "", log_);
    ::unsetenv("VIGIL_LOG");
    ASSERT_GT(server_->port(), 0);
    auto c = server::HttpClient::Connect(server_->url());
    ASSERT_TRUE(c.ok());
    client_ = std::move(*c);
    Request("POST", "/v1/sql", admin_,
            {{"sql",
              "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, k STRING NOT NULL); "
              "INSERT INTO d.t VALUES (1, 'a'), (2, 'b'); CREATE DATABASE hidden; "
              "CREATE TABLE hidden.t (id BIGINT NOT NULL)"},
             {"script", true}});
  }
  server::ClientResponse Request(const std::string& method, const std::string& target, const std::string& token,
                                 const Json& body, int key = 0) {
    std::vector<std::pair<std::string, std::string>> h;
    if (!token.empty()) h.emplace_back("Authorization", "Bearer " + token);
    if (!body.is_null()) h.emplace_back("Content-Type", "application/json");
    h.emplace_back("Idempotency-Key", "probe-" + std::to_string(key) + "-" + std::to_string(++keys_));
    auto r = client_->Call(method, target, h, body.is_null() ? "" : body.dump());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) responses_ += r->body + "\n";
    return r.ok() ? *r : server::ClientResponse{};
  }

  testing::TempDir dir_;
  std::string root_, log_, admin_, alter_, show_;
  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<server::HttpClient> client_;
  std::string responses_;
  int keys_ = 0;
};

TEST_F(ServePrivilegesTest, EveryRouteAnswersWhatTheRulesSayForEachRole) {
  const Json rows = {{"rows", Json::array({{{"id", 9}, {"k", "z"}}})}};
  const Json index = {{"name", "k_idx"}, {"columns", {"k"}}, {"using", "BITMAP"}};
  const std::vector<Probe> probes = {
      {"GET", "/v1/databases", nullptr, 401, 200, 200, 200},
      {"POST", "/v1/databases", {{"name", "newdb"}}, 401, 403, 403, 201},
      {"GET", "/v1/databases/d/tables", nullptr, 401, 200, 200, 200},
      {"GET", "/v1/databases/d/tables/t", nullptr, 401, 200, 200, 200},
      {"GET", "/v1/databases/hidden/tables/t", nullptr, 401, 404, 404, 200},
      {"POST", "/v1/databases/d/tables/t/rows", rows, 401, 403, 200, 200},
      {"POST", "/v1/databases/hidden/tables/t/rows", {{"rows", Json::array({{{"id", 9}}})}}, 401, 404, 404, 200},
      {"POST", "/v1/databases/d/tables/t/query", {{"filter", "id > 0"}}, 401, 200, 200, 200},
      {"GET", "/v1/databases/d/tables/t/indexes", nullptr, 401, 200, 200, 200},
      {"GET", "/v1/databases/d/tables/t/versions", nullptr, 401, 200, 200, 200},
      {"GET", "/v1/databases/hidden/tables/t/versions", nullptr, 401, 404, 404, 200},
      {"GET", "/v1/databases/d/tables/t/generations", nullptr, 401, 200, 200, 200},
      {"GET", "/v1/databases/hidden/tables/t/generations", nullptr, 401, 404, 404, 200},
      {"POST", "/v1/databases/d/tables/t/indexes", index, 401, 403, 202, 409},
      {"POST", "/v1/databases/d/tables/t/vacuum", Json::object(), 401, 403, 200, 200},
      {"GET", "/v1/jobs", nullptr, 401, 200, 200, 200},
      {"GET", "/v1/config", nullptr, 401, 200, 200, 200},
      {"POST",
       "/v1/databases/d/tables",
       {{"name", "t2"}, {"columns", {{{"name", "x"}, {"type", "BIGINT"}}}}},
       401,
       403,
       201,
       409},
      {"DELETE", "/v1/databases/d/tables/t2", nullptr, 401, 403, 200, 404},
      {"GET", "/v1/me", nullptr, 401, 200, 200, 200},
      {"POST", "/v1/sql", {{"sql", "SELECT COUNT(*) FROM d.t"}}, 401, 200, 200, 200},
      {"POST", "/v1/sql", {{"sql", "SELECT COUNT(*) FROM hidden.t"}}, 401, 404, 404, 200},
      {"POST", "/v1/sql", {{"sql", "INSERT INTO d.t VALUES (7, 's')"}}, 401, 403, 200, 200},
      {"POST", "/v1/sql", {{"sql", "SHOW USERS"}}, 401, 403, 403, 200},
      {"DELETE", "/v1/databases/hidden", nullptr, 401, 403, 403, 409},
  };
  for (const Probe& p : probes) {
    const std::vector<std::pair<std::string, int>> roles = {
        {"", p.none}, {show_, p.show}, {alter_, p.alter}, {admin_, p.admin}};
    for (size_t i = 0; i < roles.size(); ++i) {
      auto r = Request(p.method, p.target, roles[i].first, p.body, static_cast<int>(i));
      EXPECT_EQ(r.status, roles[i].second) << p.method << " " << p.target << " as role " << i << ": " << r.body;
    }
  }
  // The job the ALTER user admitted: visible to SHOW on d, and to nobody without a grant.
  auto jobs = Json::parse(Request("GET", "/v1/jobs", show_, nullptr).body);
  ASSERT_EQ(jobs["jobs"].size(), 1u);
  const std::string job = "/v1/jobs/" + std::to_string(jobs["jobs"][0]["JobId"].get<int64_t>());
  EXPECT_EQ(Request("GET", job, show_, nullptr).status, 200);
  EXPECT_EQ(Request("POST", job + "/cancel", show_, nullptr).status, 403);
  EXPECT_EQ(Request("POST", job + "/resolve", show_, {{"action", "FORCE_RELEASE"}, {"comment", "x"}}).status, 403);
  // A job on a table the caller may not see reads like a missing one, in every job route, and
  // the live job listing never shows it.
  auto hidden = Request("POST", "/v1/databases/hidden/tables/t/indexes", admin_,
                        {{"name", "id_idx"}, {"columns", {"id"}}, {"using", "BTREE"}});
  ASSERT_EQ(hidden.status, 202) << hidden.body;
  const std::string hidden_job = hidden.Header("location");
  for (const auto& [method, suffix] :
       {std::pair{"GET", ""}, std::pair{"GET", "/events"}, std::pair{"POST", "/wait"}, std::pair{"POST", "/cancel"}}) {
    auto r = Request(method, hidden_job + suffix, alter_, nullptr);
    EXPECT_EQ(r.status, 404) << method << " " << hidden_job << suffix << ": " << r.body;
    // Word for word what a job that never existed answers, but for its number.
    std::string missing = Request(method, "/v1/jobs/999999" + std::string(suffix), alter_, nullptr).body;
    missing.replace(missing.find("999999"), 6, hidden_job.substr(hidden_job.rfind('/') + 1));
    EXPECT_EQ(r.body, missing);
  }
  {
    testing::TcpClient stream(static_cast<uint16_t>(server_->port()));
    ASSERT_TRUE(stream.Send("GET /v1/jobs/stream HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + show_ + "\r\n\r\n"));
    // The answer's head, then the first event: the listing as it stands.
    const std::string page = stream.ReadUntil("}\n\n", 20'000);
    const size_t data = page.find("data: ");
    ASSERT_NE(data, std::string::npos) << page;
    const Json listed = Json::parse(page.substr(data + 6, page.find('\n', data) - data - 6));
    ASSERT_EQ(listed["jobs"].size(), 1u) << listed.dump();
    EXPECT_EQ(listed["jobs"][0]["DatabaseName"], "d");
  }
  // Waiting for a job takes what seeing it takes; building and dropping an index, ALTER on its
  // table; on a table the caller may not see, each reads like a missing index.
  const auto wait = [&](const std::string& job_path, const std::string& token) {
    return Request("POST", job_path + "/wait?timeout_s=120", token, nullptr).status;
  };
  EXPECT_EQ(wait(job, ""), 401);
  for (const std::string& token : {show_, alter_, admin_}) EXPECT_EQ(wait(job, token), 200);
  const std::string index_path = "/v1/databases/d/tables/t/indexes/k_idx";
  for (const auto& [token, status] :
       {std::pair{std::string(), 401}, std::pair{show_, 403}, std::pair{alter_, 202}, std::pair{admin_, 202}}) {
    auto r = Request("POST", index_path + "/build", token, nullptr);
    EXPECT_EQ(r.status, status) << "build as " << token.substr(0, 8) << ": " << r.body;
    if (r.status == 202) {
      EXPECT_EQ(wait(r.Header("location"), admin_), 200);
    }
  }
  EXPECT_EQ(Request("POST", "/v1/databases/hidden/tables/t/indexes/k_idx/build", alter_, nullptr).status, 404);
  EXPECT_EQ(Request("DELETE", "/v1/databases/hidden/tables/t/indexes/k_idx", alter_, nullptr).status, 404);
  for (const auto& [token, status] :
       {std::pair{std::string(), 401}, std::pair{show_, 403}, std::pair{alter_, 202}, std::pair{admin_, 404}}) {
    auto r = Request("DELETE", index_path, token, nullptr);
    EXPECT_EQ(r.status, status) << "drop as " << token.substr(0, 8) << ": " << r.body;
    if (r.status == 202) {
      EXPECT_EQ(wait(r.Header("location"), admin_), 200);
    }
  }
  // A table's detail says whether the caller may alter it (the console shows BUILD INDEX by it).
  for (const auto& [token, may] : {std::pair{show_, false}, std::pair{alter_, true}, std::pair{admin_, true}}) {
    EXPECT_EQ(Json::parse(Request("GET", "/v1/databases/d/tables/t", token, nullptr).body)["may_alter"], may);
  }
}

std::string FileText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Sends `sql` as `token` under `key` twice: the second is the replay of the first, whole.
// The token the statements issued (User, Token), or "" when none.
std::string IssueTwice(server::HttpClient& client, const std::string& token, const std::string& key,
                       const std::string& sql, int want_status) {
  const std::vector<std::pair<std::string, std::string>> h = {
      {"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}, {"Idempotency-Key", key}};
  const std::string body = Json{{"sql", sql}, {"script", true}}.dump();
  auto first = client.Call("POST", "/v1/sql", h, body);
  auto again = client.Call("POST", "/v1/sql", h, body);
  EXPECT_TRUE(first.ok() && again.ok());
  if (!first.ok() || !again.ok()) return "";
  EXPECT_EQ(first->status, want_status) << first->body;
  EXPECT_EQ(again->status, want_status) << again->body;
  EXPECT_EQ(again->body, first->body) << "the replay of " << sql;
  const Json answer = Json::parse(first->body);
  for (const Json& r : answer["results"]) {
    if (r["columns"] != Json::array({"User", "Token"})) continue;
    EXPECT_EQ(r.value("holds_secret", false), true) << r.dump();
    return r["rows"][0][1].get<std::string>();
  }
  return "";
}

// Grants held on one table, on everything, and ADMIN on one database: each reaches exactly
// its object, and what lies outside it reads like what does not exist.
TEST_F(ServePrivilegesTest, EachGrantScopeReachesItsObjectAndNoFurther) {
  auto root = Root::Open(root_);
  ASSERT_TRUE(root.ok());
  auto store = auth::OpenRootPrincipalStore(*root);
  ASSERT_TRUE(store.ok());
  const std::string table_alter = (*store)->CreateUser("default", "t_alter", false)->token;
  ASSERT_TRUE((*store)->Grant("default", "t_alter", auth::Privilege::kAlter, "local.d.t").ok());
  const std::string global_show = (*store)->CreateUser("default", "g_show", false)->token;
  ASSERT_TRUE((*store)->Grant("default", "g_show", auth::Privilege::kShow, "*").ok());
  const std::string db_admin = (*store)->CreateUser("default", "d_admin", false)->token;
  ASSERT_TRUE((*store)->Grant("default", "d_admin", auth::Privilege::kAdmin, "local.d.*").ok());
  Request("POST", "/v1/sql", admin_, {{"sql", "CREATE TABLE d.u (id BIGINT NOT NULL)"}});
  const Json row = {{"rows", Json::array({{{"id", 3}, {"k", "c"}}})}};
  const Json id_row = {{"rows", Json::array({{{"id", 3}}})}};
  const Json table = {{"name", "v"}, {"columns", Json::array({{{"name", "x"}, {"type", "BIGINT"}}})}};
  struct Case {
    std::string token, method, target;
    Json body;
    int status;
  };
  const std::vector<Case> cases = {
      // ALTER on d.t only: t is its to see and change; d.u and the database's own changes are not.
      {table_alter, "GET", "/v1/databases/d/tables/t", nullptr, 200},
      {table_alter, "POST", "/v1/databases/d/tables/t/rows", row, 200},
      {table_alter, "GET", "/v1/databases/d/tables/u", nullptr, 404},
      {table_alter, "POST", "/v1/databases/d/tables/u/rows", id_row, 404},
      {table_alter, "POST", "/v1/databases/d/tables", table, 403},  // d is its to see: refused as such
      {table_alter, "POST", "/v1/databases/hidden/tables", table, 404},
      {table_alter, "POST", "/v1/databases/d/tables/t/vacuum", Json::object(), 200},
      // SHOW on everything: every table to see, none to change.
      {global_show, "GET", "/v1/databases/hidden/tables/t", nullptr, 200},
      {global_show, "POST", "/v1/databases/hidden/tables/t/query", {{"filter", "id > 0"}}, 200},
      {global_show, "POST", "/v1/databases/hidden/tables/t/rows", id_row, 403},
      {global_show, "POST", "/v1/sql", {{"sql", "SHOW USERS"}}, 403},
      // ADMIN on d: all of d, nothing of hidden, and no user management (global ADMIN).
      {db_admin, "POST", "/v1/databases/d/tables", table, 201},
      {db_admin, "POST", "/v1/databases/d/tables/u/rows", id_row, 200},
      {db_admin, "GET", "/v1/databases/hidden/tables/t", nullptr, 404},
      {db_admin, "POST", "/v1/sql", {{"sql", "SHOW USERS"}}, 403},
  };
  for (const Case& c : cases) {
    auto r = Request(c.method, c.target, c.token, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << " as " << c.token.substr(0, 12) << ": " << r.body;
  }
  const auto names = [&](const std::string& token, const std::string& target, const char* list, const char* key) {
    std::vector<std::string> out;
    const Json answer = Json::parse(Request("GET", target, token, nullptr).body);
    for (const Json& e : answer[list]) out.push_back(e[key]);
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names(table_alter, "/v1/databases/d/tables", "tables", "Tables_in_d"), (Names{"t"}));
  EXPECT_EQ(names(global_show, "/v1/databases", "databases", "Database"), (Names{"d", "hidden"}));
  EXPECT_EQ(names(db_admin, "/v1/databases", "databases", "Database"), (Names{"d"}));
}

TEST_F(ServePrivilegesTest, NoTokenSecretLeaksIntoResponsesMetricsLogsOrTheStore) {
  for (const std::string& token : {admin_, alter_, show_}) {
    Request("GET", "/v1/databases", token, nullptr);
    Request("GET", "/v1/databases", token.substr(0, token.size() - 2) + "00", nullptr);  // a wrong secret
  }
  Request("POST", "/v1/databases/d/tables/t/rows", alter_, {{"rows", Json::array({{{"id", 5}, {"k", "q"}}})}});
  // Tokens issued over HTTP under an Idempotency-Key (as `vigil sql --url` sends every
  // statement): the replay gives each back whole, and it works.
  const std::vector<std::string> issued = {
      IssueTwice(*client_, admin_, "issue-1", "CREATE USER carol", 200),
      IssueTwice(*client_, admin_, "issue-2", "ALTER USER reader ROTATE TOKEN", 200),
      IssueTwice(*client_, admin_, "issue-3", "CREATE USER dave; SELECT * FROM d.missing", 404)};
  for (const std::string& token : issued) {
    ASSERT_FALSE(token.empty());
    EXPECT_EQ(Request("GET", "/v1/me", token, nullptr).status, 200);
  }
  responses_ += Request("GET", "/metrics", "", nullptr).body;
  server_->Stop(SIGTERM);
  std::string stored;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root_)) {
    if (e.is_regular_file()) stored += FileText(e.path());
  }
  const std::string log = FileText(log_);
  EXPECT_NE(log.find(" info leader "), std::string::npos) << "the server's log was not captured: " << log;
  for (const std::string& token : {admin_, alter_, show_}) {
    const std::string secret = token.substr(token.rfind('_') + 1);
    ASSERT_EQ(secret.size(), 64u);
    EXPECT_EQ(responses_.find(secret), std::string::npos) << "a response carries a token secret";
  }
  for (const std::string& token : {admin_, alter_, show_, issued[0], issued[1], issued[2]}) {
    const std::string secret = token.substr(token.rfind('_') + 1);
    ASSERT_EQ(secret.size(), 64u);
    EXPECT_EQ(stored.find(secret), std::string::npos) << "a file of the root (the store) carries a token secret";
    EXPECT_EQ(log.find(secret), std::string::npos) << "the server's log carries a token secret";
  }
}

}  // namespace
}  // namespace vigil

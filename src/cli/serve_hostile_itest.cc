// `vigil serve` against hostile and clumsy users with valid tokens: bodies
// nested to overflow a stack, streams kept open past a revocation, rows read
// while a grant is revoked, injected statements, slow statements that would
// hold every session, keyed scripts retried after a partial commit, and
// answers too large to replay. Each test fails on a server without its rule.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/serve_fixture.h"
#include "testutil/await_file.h"
#include "testutil/tcp_client.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/root_auth.h"
#include "vigil/server/http_client.h"
#include "vigil/storage/root.h"

namespace vigil {
namespace {

using Json = nlohmann::json;
using Headers = std::vector<std::pair<std::string, std::string>>;

// A recursive WITH that runs until its statement timeout or cancellation.
constexpr char kEndless[] = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT COUNT(*) FROM n";

class ServeHostileTest : public ::testing::Test {
 protected:
  // A root whose vigil.toml holds `toml`, with its users: an administrator, `nobody` without
  // grants, alice (ALTER on d.*, SHOW on e.*), rita (SHOW on d.*); tables d.t and e.t.
  void SetUp() override {
    root_ = dir_.Join("root");
    ASSERT_EQ(RunVigil("init " + root_), 0);
    ASSERT_EQ(RunVigil("--root " + root_ +
                       " sql -c \"CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, k STRING); "
                       "INSERT INTO d.t VALUES (1, 'secret-row'); CREATE DATABASE e; "
                       "CREATE TABLE e.t (id BIGINT NOT NULL)\""),
              0);
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    admin_ = (*store)->CreateUser("default", "root_admin", true)->token;
    nobody_ = (*store)->CreateUser("default", "nobody", false)->token;
    alice_ = (*store)->CreateUser("default", "alice", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "alice", auth::Privilege::kAlter, "local.d.*").ok());
    ASSERT_TRUE((*store)->Grant("default", "alice", auth::Privilege::kShow, "local.e.*").ok());
    rita_ = (*store)->CreateUser("default", "rita", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "rita", auth::Privilege::kShow, "local.d.*").ok());
  }
  void Start(const std::string& toml = "", const std::string& failpoints = "", int grace_seconds = 2) {
    std::ofstream(root_ + "/vigil.toml", std::ios::trunc) << toml << "\n";
    server_ = std::make_unique<ServeProcess>(root_, 0, failpoints, "", grace_seconds);
    ASSERT_GT(server_->port(), 0) << "vigil serve did not start";
  }
  server::ClientResponse Call(const std::string& method, const std::string& target, const std::string& token,
                              const std::string& body = "", Headers h = {}) {
    auto c = server::HttpClient::Connect(server_->url());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return {};
    if (!token.empty()) h.emplace_back("Authorization", "Bearer " + token);
    if (std::none_of(h.begin(), h.end(), [](const auto& p) { return p.first == "Content-Type"; })) {
      h.emplace_back("Content-Type", "application/json");
    }
    auto r = (*c)->Call(method, target, h, body);
    EXPECT_TRUE(r.ok()) << method << " " << target << ": " << r.status().ToString();
    return r.ok() ? *r : server::ClientResponse{};
  }
  server::ClientResponse Sql(const std::string& token, const std::string& sql, const std::string& key = "",
                             bool script = false) {
    Json body{{"sql", sql}};
    if (script) body["script"] = true;
    Headers h;
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return Call("POST", "/v1/sql", token, body.dump(), h);
  }
  int64_t Count(const std::string& table) {
    auto r = Sql(admin_, "SELECT COUNT(*) FROM " + table);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? Json::parse(r.body)["results"][0]["rows"][0][0].get<int64_t>() : -1;
  }
  // A raw POST /v1/sql of `sql` by `token` on its own connection, not read.
  std::unique_ptr<testing::TcpClient> SendRaw(const std::string& token, const std::string& sql) {
    auto c = std::make_unique<testing::TcpClient>(static_cast<uint16_t>(server_->port()));
    const std::string body = Json{{"sql", sql}}.dump();
    EXPECT_TRUE(c->Send("POST /v1/sql HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token +
                        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\n\r\n" + body));
    return c;
  }

  testing::TempDir dir_;
  std::string root_;
  std::string admin_, nobody_, alice_, rita_;
  std::unique_ptr<ServeProcess> server_;
};

// #48.1: one request of a user without grants took every node down (a recursive dump of a
// body nested 100,000 deep overflowed the stack).
TEST_F(ServeHostileTest, ABodyNestedPastTheBoundIs400FromAnyTokenAndTheServerStaysUp) {
  Start();
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  for (const char* target : {"/v1/sql", "/v1/databases/d/tables/t/rows", "/v1/jobs/1/resolve"}) {
    auto r = Call("POST", target, nobody_, deep, {{"Idempotency-Key", "k-deep"}});
    EXPECT_EQ(r.status, 400) << target << " " << r.body;
    EXPECT_NE(r.body.find("nests arrays and objects deeper than 64 levels"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Call("POST", "/v1/sql", nobody_, deep).status, 400);  // without a key too
  std::string objects;
  for (int i = 0; i < 65; ++i) objects += "{\"a\":";
  objects += "1" + std::string(65, '}');
  EXPECT_EQ(Call("POST", "/v1/sql", alice_, objects, {{"Idempotency-Key", "k-objects"}}).status, 400);
  EXPECT_EQ(Call("GET", "/healthz", "").status, 200);
  EXPECT_EQ(Sql(admin_, "SELECT 1").status, 200);
}

// #48.2: a stream of job events goes on only while its user holds the rights it began with;
// it ends with a `revoked` event saying why once the user is dropped, disabled or loses a grant.
TEST_F(ServeHostileTest, AJobStreamEndsWithARevokedEventWhenItsUserLosesItsRights) {
  std::map<std::string, std::string> token;
  {
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok());
    for (const char* user : {"s1", "s2", "s3"}) {
      token[user] = (*store)->CreateUser("default", user, false)->token;
      ASSERT_TRUE((*store)->Grant("default", user, auth::Privilege::kShow, "local.d.*").ok());
    }
  }
  Start();
  std::map<std::string, std::future<std::string>> streams;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> opened;
  for (const auto& [user, t] : token) {
    opened[user] = std::make_shared<std::atomic<bool>>(false);
    streams[user] = std::async(std::launch::async, [this, t = t, flag = opened[user]] {
      std::string seen;
      auto c = server::HttpClient::Connect(server_->url());
      if (!c.ok()) return std::string("connect failed");
      (void)(*c)->Stream("/v1/jobs/stream", {{"Authorization", "Bearer " + t}}, [&](std::string_view data) {
        seen += data;
        if (seen.find("event: jobs") != std::string::npos) flag->store(true);
        return true;
      });
      return seen;
    });
  }
  for (auto& [user, flag] : opened) {
    while (!flag->load()) {
      ASSERT_NE(streams[user].wait_for(std::chrono::milliseconds(10)), std::future_status::ready)
          << user << "'s stream ended before its first event: " << streams[user].get();
    }
  }
  ASSERT_EQ(Sql(admin_, "DROP USER s1; REVOKE SHOW ON d.* FROM s2; ALTER USER s3 DISABLE", "", true).status, 200);
  const std::map<std::string, std::string> code = {
      {"s1", "UNAUTHENTICATED"}, {"s2", "PERMISSION_DENIED"}, {"s3", "UNAUTHENTICATED"}};
  for (auto& [user, stream] : streams) {
    ASSERT_EQ(stream.wait_for(std::chrono::seconds(60)), std::future_status::ready) << user << "'s stream stays open";
    const std::string seen = stream.get();
    EXPECT_NE(seen.find("event: revoked"), std::string::npos) << user << ": " << seen;
    EXPECT_NE(seen.find(code.at(user)), std::string::npos) << user << ": " << seen;
  }
}

// #48.2: rows read while the reader's grant is revoked are never sent.
TEST_F(ServeHostileTest, AStatementsRowsAreNotSentOnceItsUserLostShow) {
  const std::string release = dir_.Join("release");
  Start("", "sql_route.after_statement=pause(" + release + ")@1");
  auto reading = std::async(std::launch::async, [&] { return Sql(rita_, "SELECT k FROM d.t"); });
  ASSERT_TRUE(testing::AwaitFile(release + ".reached")) << "the request never reached its pause";
  ASSERT_EQ(Sql(admin_, "REVOKE SHOW ON d.* FROM rita").status, 200);
  std::ofstream(release).put('\n');
  const server::ClientResponse r = reading.get();
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.body.find("secret-row"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("was revoked while the request ran"), std::string::npos) << r.body;
}

// #48.2: the query route's rows, likewise.
TEST_F(ServeHostileTest, AQuerysRowsAreNotSentOnceItsUserLostShow) {
  const std::string release = dir_.Join("release");
  Start("", "query_route.after_query=pause(" + release + ")@1");
  auto reading = std::async(std::launch::async, [&] {
    return Call("POST", "/v1/databases/d/tables/t/query", rita_, Json{{"select", {"k"}}}.dump());
  });
  ASSERT_TRUE(testing::AwaitFile(release + ".reached")) << "the request never reached its pause";
  ASSERT_EQ(Sql(admin_, "DROP USER rita").status, 200);
  std::ofstream(release).put('\n');
  const server::ClientResponse r = reading.get();
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_EQ(r.body.find("secret-row"), std::string::npos) << r.body;
}

// #48.4: a filter or statement text that smuggles a second statement runs nothing; a script
// runs only when the body says "script": true.
TEST_F(ServeHostileTest, ASecondStatementRunsOnlyWhenTheBodyAsksForAScript) {
  Start();
  auto smuggled = Sql(alice_, "SELECT COUNT(*) FROM d.t WHERE id > 0; DROP TABLE d.t");
  EXPECT_EQ(smuggled.status, 400) << smuggled.body;
  EXPECT_NE(smuggled.body.find("the body holds 2 statements"), std::string::npos) << smuggled.body;
  EXPECT_EQ(Count("d.t"), 1);
  EXPECT_EQ(Call("POST", "/v1/sql", alice_, Json{{"sql", "SELECT 1"}, {"script", "yes"}}.dump()).status, 400);
  EXPECT_EQ(Call("POST", "/v1/sql", alice_, Json{{"sql", "SELECT 1"}, {"scripts", true}}.dump()).status, 400);
  auto script = Sql(alice_, "INSERT INTO d.t VALUES (2, 'b'); SELECT COUNT(*) FROM d.t", "", true);
  ASSERT_EQ(script.status, 200) << script.body;
  EXPECT_EQ(Json::parse(script.body)["results"][1]["rows"][0][0], 2);
}

// #48.5: a user's slow statements take at most half of the sessions, a statement's client that
// goes away cancels it, and SET cannot lift the server's statement timeout.
TEST_F(ServeHostileTest, SlowStatementsOfOneUserLeaveOthersTheirShareAndEndWithTheirClient) {
  Start("[server]\nsessions = 2\n[sql]\nstatement_timeout = \"10m\"");
  auto lifted = Sql(nobody_, "SET statement_timeout = 0");
  EXPECT_EQ(lifted.status, 400) << lifted.body;
  EXPECT_NE(lifted.body.find("statement_timeout may be at most 10m here, the server's [sql] statement_timeout"),
            std::string::npos)
      << lifted.body;
  EXPECT_EQ(Sql(nobody_, "SET statement_timeout = '11m'").status, 400);
  EXPECT_EQ(Sql(nobody_, "SET statement_timeout = '5s'").status, 200);

  auto first = SendRaw(nobody_, kEndless);
  ASSERT_TRUE(WaitForMetric(server_->url(), "vigil_sql_sessions_in_use", 1));
  auto second = SendRaw(nobody_, kEndless);
  ASSERT_TRUE(WaitForMetric(server_->url(), "vigil_sql_sessions_waiting", 1)) << "the second took a session";
  auto admin = Sql(admin_, "SELECT 42");
  EXPECT_EQ(admin.status, 200) << admin.body;
  // Both clients leave: their statements end, and the user is served again at once.
  first.reset();
  second.reset();
  auto again = Sql(nobody_, "SELECT 7");
  EXPECT_EQ(again.status, 200) << again.body;
}

// #48.5: one user holds at most half of the event streams; the others still get theirs.
TEST_F(ServeHostileTest, OneUsersEventStreamsLeaveOthersTheirShare) {
  Start("[server]\nsse_max_subscribers = 2");
  std::atomic<bool> opened{false};
  std::atomic<bool> stop{false};
  std::thread first([&] {
    auto c = server::HttpClient::Connect(server_->url());
    if (!c.ok()) return;
    (void)(*c)->Stream("/v1/jobs/stream", {{"Authorization", "Bearer " + nobody_}}, [&](std::string_view data) {
      if (data.find("event: jobs") != std::string_view::npos) opened.store(true);
      return !stop.load();
    });
  });
  while (!opened.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto second = Call("GET", "/v1/jobs/stream", nobody_);
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_NE(second.body.find("its share"), std::string::npos) << second.body;
  auto c = server::HttpClient::Connect(server_->url());
  ASSERT_TRUE(c.ok());
  std::string seen;
  auto admin = (*c)->Stream("/v1/jobs/stream", {{"Authorization", "Bearer " + admin_}}, [&](std::string_view data) {
    seen += data;
    return seen.find("event: jobs") == std::string::npos;
  });
  EXPECT_NE(seen.find("event: jobs"), std::string::npos) << (admin.ok() ? admin->body : admin.status().ToString());
  stop.store(true);
  server_->Stop(SIGTERM);  // ends the first stream
  first.join();
}

// #48.5: SIGTERM ends the server within its grace although a statement would run forever.
TEST_F(ServeHostileTest, AStopEndsARunningStatementOnceTheGraceIsOver) {
  Start("[sql]\nstatement_timeout = 0", "", /*grace_seconds=*/1);
  auto endless = SendRaw(nobody_, kEndless);
  ASSERT_TRUE(WaitForMetric(server_->url(), "vigil_sql_sessions_in_use", 1));
  const std::optional<int> status = server_->StopWithin(SIGTERM, std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value()) << "the server was still running a minute after SIGTERM";
  EXPECT_EQ(*status, 0);
}

// #48.6: a keyed script whose first statement committed and whose second was refused keeps
// its answer: each retry replays it, and the first statement committed once.
TEST_F(ServeHostileTest, AKeyedScriptThatCommittedBeforeItFailedIsReplayedNotRunAgain) {
  Start();
  const std::string script = "INSERT INTO d.t VALUES (9, 'once'); INSERT INTO e.t VALUES (1)";
  auto first = Sql(alice_, script, "k-partial", true);
  EXPECT_EQ(first.status, 403) << first.body;
  for (int retry = 0; retry < 2; ++retry) {
    auto again = Sql(alice_, script, "k-partial", true);
    EXPECT_EQ(again.status, 403);
    EXPECT_EQ(again.Header("idempotency-replayed"), "true");
    EXPECT_EQ(again.body, first.body);
  }
  EXPECT_EQ(Count("d.t"), 2);
  // Refused before anything committed: the key is free, as before.
  auto refused = Sql(alice_, "INSERT INTO e.t VALUES (1)", "k-nothing");
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(Sql(alice_, "INSERT INTO d.t VALUES (10, 'x')", "k-nothing").status, 200);
}

// #48.13: a replay is the original answer byte for byte, however large; one too large to keep
// is answered 422 RESULT_TOO_LARGE the first time and every time.
TEST_F(ServeHostileTest, AReplayIsTheOriginalAnswerAndOneTooLargeToKeepIsNeverSent) {
  Start();
  const std::string rows =
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 2000) "
      "SELECT x, 'padding-padding-padding' AS p FROM n";
  auto first = Sql(alice_, rows, "k-rows");
  ASSERT_EQ(first.status, 200);
  ASSERT_GT(first.body.size(), 16u * 1024);
  auto replay = Sql(alice_, rows, "k-rows");
  EXPECT_EQ(replay.Header("idempotency-replayed"), "true");
  EXPECT_EQ(replay.body, first.body);

  const std::string huge =
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 60000) "
      "SELECT x, 'padding-padding-padding' AS p FROM n";
  auto big = Sql(alice_, huge, "k-huge");
  EXPECT_EQ(big.status, 422) << big.body.substr(0, 300);
  EXPECT_NE(big.body.find("RESULT_TOO_LARGE"), std::string::npos);
  auto big_again = Sql(alice_, huge, "k-huge");
  EXPECT_EQ(big_again.body, big.body);
  EXPECT_EQ(Sql(alice_, huge).status, 200);  // without a key the answer is sent
}

// The smaller rules of #48: the Bearer scheme in any case, media types in any case, a
// malformed chunk size is the client's 400, and no keep-alive comment before 15 s.
TEST_F(ServeHostileTest, SchemesAndMediaTypesAnyCaseBadChunksAre400AndKeepAlivesWait) {
  Start();
  auto lower = server::HttpClient::Connect(server_->url());
  ASSERT_TRUE(lower.ok());
  auto r = (*lower)->Call("GET", "/v1/databases", {{"Authorization", "bearer " + alice_}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;

  auto rows = Call("POST", "/v1/databases/d/tables/t/rows", alice_, "{\"id\": 3, \"k\": \"jsonl\"}\n",
                   {{"Content-Type", "Application/JSONL; charset=utf-8"}, {"Idempotency-Key", "k-jsonl"}});
  EXPECT_LT(rows.status, 300) << rows.body;
  EXPECT_EQ(Count("d.t"), 2);

  for (const std::string size : {"-1", "10000000000000000"}) {
    testing::TcpClient c(static_cast<uint16_t>(server_->port()));
    ASSERT_TRUE(c.Send("POST /v1/databases/d/tables/t/rows HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + alice_ +
                       "\r\nContent-Type: text/csv\r\nIdempotency-Key: k-chunk" + size +
                       "\r\nTransfer-Encoding: chunked\r\n\r\n" + size + "\r\n"));
    const std::string answer = c.ReadUntilClosed();
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << size << ": " << answer.substr(0, 300);
  }

  // The listing does not change while nobody admits: what comes in its first two seconds is the
  // first event and no keep-alive (one came every 250 ms before; now after 15 s of silence).
  auto c = server::HttpClient::Connect(server_->url());
  ASSERT_TRUE(c.ok());
  std::string seen;
  const auto start = std::chrono::steady_clock::now();
  (void)(*c)->Stream("/v1/jobs/stream", {{"Authorization", "Bearer " + alice_}}, [&](std::string_view data) {
    seen += data;
    return std::chrono::steady_clock::now() - start < std::chrono::seconds(2);
  });
  EXPECT_NE(seen.find("event: jobs"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("keep-alive"), std::string::npos) << seen;
}

}  // namespace
}  // namespace vigil

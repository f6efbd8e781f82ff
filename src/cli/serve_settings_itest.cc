// Each [server] setting of vigil.toml changes what a real `vigil serve` does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli/serve_fixture.h"
#include "testutil/await_file.h"
#include "testutil/run_command.h"
#include "testutil/tcp_client.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/root_auth.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/idempotency/store.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/server/http_client.h"
#include "vigil/storage/root.h"

namespace vigil {
namespace {

using Json = nlohmann::json;
using Headers = std::vector<std::pair<std::string, std::string>>;

class ServeSettingsTest : public ::testing::Test {
 public:
  // A root whose vigil.toml holds `server_section` under [server], and an administrator.
  void Init(const std::string& server_section) {
    root_ = dir_.Join("root");
    ASSERT_EQ(RunVigil("init " + root_), 0);
    std::ofstream(root_ + "/vigil.toml", std::ios::trunc) << "[server]\n" << server_section << "\n";
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok());
    token_ = (*store)->CreateUser("default", "ops", true)->token;
  }
  void Start(int port = 0, const std::string& failpoints = "", int grace_seconds = 2) {
    server_ = std::make_unique<ServeProcess>(root_, port, failpoints, "", grace_seconds);
    ASSERT_GT(server_->port(), 0);
    client_ = Connect();
  }
  std::unique_ptr<server::HttpClient> Connect() {
    auto c = server::HttpClient::Connect(server_->url());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  server::ClientResponse Call(server::HttpClient& c, const std::string& method, const std::string& target,
                              const std::string& body = "", Headers h = {}) {
    h.emplace_back("Authorization", "Bearer " + token_);
    if (std::none_of(h.begin(), h.end(), [](const auto& p) { return p.first == "Content-Type"; })) {
      h.emplace_back("Content-Type", "application/json");
    }
    auto r = c.Call(method, target, h, body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : server::ClientResponse{};
  }
  server::ClientResponse Sql(const std::string& sql) {
    return Call(*client_, "POST", "/v1/sql", Json{{"sql", sql}, {"script", true}}.dump());
  }

  testing::TempDir dir_;
  std::string root_;
  std::string token_;
  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<server::HttpClient> client_;
};

TEST_F(ServeSettingsTest, ListenComesFromTheFileWithoutAFlag) {
  Init("listen = \"127.0.0.1:0\"");
  Start(/*port=*/-1);
  EXPECT_EQ(Call(*client_, "GET", "/healthz").status, 200);
}

TEST_F(ServeSettingsTest, KeysCanBeOptionalAndLiveAsLongAsTheTtl) {
  Init("require_idempotency_key = false\nidempotency_ttl_seconds = \"2h\"");
  Start();
  ASSERT_EQ(Sql("CREATE DATABASE d; CREATE TABLE d.t (id BIGINT)").status, 200);
  const std::string rows = Json{{"rows", Json::array({{{"id", 1}}})}}.dump();
  EXPECT_EQ(Call(*client_, "POST", "/v1/databases/d/tables/t/rows", rows).status, 200);  // no key: accepted
  EXPECT_EQ(Call(*client_, "POST", "/v1/databases/d/tables/t/rows", rows, {{"Idempotency-Key", "k1"}}).status, 200);
  auto root = Root::Open(root_);
  ASSERT_TRUE(root.ok());
  idempotency::StoreOptions so;
  so.uri = jobs::RootJobStoreUri(*root);
  auto store = idempotency::IdempotencyStore::Open(so);
  ASSERT_TRUE(store.ok());
  // The one realm is the caller's: "default:ops:<its incarnation>".
  auto realms = (*store)->ListRealms("", 10);
  ASSERT_TRUE(realms.ok());
  ASSERT_EQ(realms->size(), 1u);
  EXPECT_EQ(realms->front().rfind("default:ops:", 0), 0u) << realms->front();
  auto record = (*store)->Load(realms->front(), "k1");
  ASSERT_TRUE(record.ok());
  ASSERT_TRUE(record->has_value());
  EXPECT_EQ((*record)->expires_at_ms - (*record)->created_at_ms, 2 * 3600 * 1000);
  auto config = Json::parse(Call(*client_, "GET", "/v1/config").body);
  EXPECT_EQ(config["idempotency"]["ttl_seconds"], 7200);
  EXPECT_EQ(config["idempotency"]["required_on_resource_mutations"], false);
}

TEST_F(ServeSettingsTest, BodiesPastTheLimitAre413) {
  Init("max_body_bytes = 4096");
  Start();
  ASSERT_EQ(Sql("CREATE DATABASE d; CREATE TABLE d.t (id BIGINT)").status, 200);
  std::string csv = "id\n";
  while (csv.size() <= 4096) csv += "12345\n";
  auto big = Call(*client_, "POST", "/v1/databases/d/tables/t/rows", csv,
                  {{"Content-Type", "text/csv"}, {"Idempotency-Key", "big"}});
  EXPECT_EQ(big.status, 413);
  // A chunked body has no length to refuse up front: it is cut off once past the limit.
  testing::TcpClient chunked(static_cast<uint16_t>(server_->port()));
  ASSERT_TRUE(chunked.Send("POST /v1/databases/d/tables/t/rows HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                           "\r\nContent-Type: text/csv\r\nIdempotency-Key: chunked\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n5\r\nid\n1\n\r\n"));
  for (int i = 0; i < 64 && chunked.Send("400\r\n" + std::string(1023, '7') + "\n\r\n"); ++i) {
  }
  chunked.Send("0\r\n\r\n");
  EXPECT_THAT(chunked.ReadUntilClosed(), ::testing::StartsWith("HTTP/1.1 413"));
  auto c = Connect();
  auto small = Call(*c, "POST", "/v1/databases/d/tables/t/rows", "id\n1\n",
                    {{"Content-Type", "text/csv"}, {"Idempotency-Key", "small"}});
  EXPECT_EQ(small.status, 200) << small.body;
  auto count = Call(*c, "POST", "/v1/sql", Json{{"sql", "SELECT COUNT(*) FROM d.t"}}.dump());
  EXPECT_EQ(Json::parse(count.body)["results"][0]["rows"][0][0], 1) << "a refused body appended rows";
}

// A key lives for idempotency_ttl_seconds: until then another request under it is 422, after it
// the key is free (its record is taken over), and the purge pass deletes expired records nobody
// reused. The shortest TTL is a minute, so this runs in scripts/test-long.sh
// (--gtest_also_run_disabled_tests).
TEST_F(ServeSettingsTest, DISABLED_KeysExpireAfterTheTtlAndThePurgeDeletesThem) {
  Init("idempotency_ttl_seconds = 60");
  Start();
  const auto create = [&](const std::string& name, const std::string& key) {
    return Call(*client_, "POST", "/v1/databases", Json{{"name", name}}.dump(), {{"Idempotency-Key", key}});
  };
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(create("first", "k").status, 201);
  EXPECT_EQ(create("first", "k").Header("idempotency-replayed"), "true");
  EXPECT_EQ(create("left", "never-reused").status, 201);
  server::ClientResponse afresh;
  for (;;) {
    afresh = create("second", "k");
    if (afresh.status != 422) break;
    ASSERT_LT(std::chrono::steady_clock::now() - started, std::chrono::minutes(3)) << "the key never expired";
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::seconds(59)) << "the key expired early";
  EXPECT_EQ(afresh.status, 201) << afresh.body;
  EXPECT_EQ(afresh.Header("idempotency-replayed"), "");
  const std::string dbs = Call(*client_, "GET", "/v1/databases").body;
  EXPECT_NE(dbs.find("\"second\""), std::string::npos) << dbs;
  // The purge pass (every 30 s) deletes the expired record of the key nobody used again.
  EXPECT_TRUE(WaitForMetric(server_->url(), "vigil_idempotency_records_purged_total", 1));
}

// Polls the server's count of connections cut off by a deadline until it reaches 1 or
// `within_ms` pass.
bool SawATimeoutWithin(const std::string& url, int within_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(within_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (MetricValue(url, "vigil_http_connections_total{fate=\"timed_out\"}") >= 1) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// header_timeout, body_grace and min_body_bytes_per_second cut slow senders off well before
// the defaults would (10 s each), and /v1/config says what they are.
TEST_F(ServeSettingsTest, HeaderAndBodyDeadlinesComeFromTheFile) {
  Init("header_timeout = \"1s\"\nbody_grace = \"500ms\"\nmin_body_bytes_per_second = 1000");
  Start();
  auto limits = Json::parse(Call(*client_, "GET", "/v1/config").body)["limits"];
  EXPECT_EQ(limits["header_timeout_ms"], 1000);
  EXPECT_EQ(limits["body_grace_ms"], 500);
  EXPECT_EQ(limits["min_body_bytes_per_second"], 1000);
  EXPECT_EQ(limits["write_timeout_ms"], 30'000);  // the default

  const auto started = std::chrono::steady_clock::now();
  testing::TcpClient header(static_cast<uint16_t>(server_->port()));
  ASSERT_TRUE(header.Send("GET /healthz HTTP/1.1\r\n"));
  testing::TcpClient body(static_cast<uint16_t>(server_->port()));
  ASSERT_TRUE(body.Send("POST /v1/sql HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                        "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"));
  std::atomic<bool> stop{false};
  std::thread drip([&] {  // a header line and 10 body bytes every 300 ms: slower than allowed
    for (int i = 0; i < 40 && !stop; ++i) {
      header.Send("X-Drip: " + std::to_string(i) + "\r\n");
      body.Send("          ");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  EXPECT_TRUE(header.ClosedByServer(6'000)) << "the header deadline is not header_timeout";
  EXPECT_TRUE(body.ClosedByServer(6'000)) << "the body deadline is not body_grace + the minimum rate";
  stop = true;
  drip.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(9));
  EXPECT_GE(MetricValue(server_->url(), "vigil_http_connections_total{fate=\"timed_out\"}"), 2);

  // A steady sender at 2,000 B/s keeps ahead of min_body_bytes_per_second = 1000 and is answered;
  // at the default 64 KiB/s it would be cut off half a second in.
  const std::string padded = "{\"sql\": \"SELECT 1\"" + std::string(5'980, ' ') + "}";
  testing::TcpClient steady(static_cast<uint16_t>(server_->port()));
  ASSERT_TRUE(steady.Send("POST /v1/sql HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                          "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                          std::to_string(padded.size()) + "\r\n\r\n"));
  for (size_t at = 0; at < padded.size(); at += 100) {
    ASSERT_TRUE(steady.Send(padded.substr(at, 100))) << "cut off after " << at << " bytes";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_THAT(steady.ReadUntilClosed(10'000), ::testing::StartsWith("HTTP/1.1 200"));
}

// write_timeout: a client that asks for a large answer and stops reading is cut off once a write
// has waited that long (the default would wait 30 s).
TEST_F(ServeSettingsTest, AClientThatStopsReadingIsCutOffAtTheWriteTimeout) {
  Init("write_timeout = \"1s\"");
  Start();
  EXPECT_EQ(Json::parse(Call(*client_, "GET", "/v1/config").body)["limits"]["write_timeout_ms"], 1000);
  // About 20 MB of rows: far more than the sockets' buffers hold.
  const std::string big = Json{{"sql",
                                "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 20000)"
                                " SELECT x, hex(zeroblob(500)) FROM n"}}
                              .dump();
  testing::TcpClient reader(static_cast<uint16_t>(server_->port()));
  ASSERT_TRUE(reader.Send("POST /v1/sql HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                          "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(big.size()) +
                          "\r\n\r\n" + big));
  EXPECT_TRUE(SawATimeoutWithin(server_->url(), 8'000)) << "a stalled reader was not cut off at write_timeout";
  // A client that reads gets the same answer whole.
  auto whole = Call(*client_, "POST", "/v1/sql", big);
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(Json::parse(whole.body)["results"][0]["rows"].size(), 20000u);
}

// SIGTERM: a request in flight finishes within --grace and is answered; one that outlasts it
// loses its connection, its effect still completes and is recorded, and its retry under the
// same key gets the original answer from the restarted server.
TEST_F(ServeSettingsTest, GraceLetsRequestsInFlightFinishOrAbandonsThemCleanly) {
  Init("");
  const auto create = [&](const std::string& name, const std::string& key) {
    auto c = Connect();
    auto r =
        c->Call("POST", "/v1/databases",
                {{"Authorization", "Bearer " + token_}, {"Content-Type", "application/json"}, {"Idempotency-Key", key}},
                Json{{"name", name}}.dump());
    return r.ok() ? r->status : -1;
  };
  // Each keyed request is held after its reservation until released; the server signals once
  // SIGTERM has closed its listener and it waits for requests in flight.
  const auto touch = [](const std::string& path) { std::fclose(std::fopen(path.c_str(), "w")); };
  const std::string held_within = dir_.Join("within"), draining_within = dir_.Join("draining-within");
  Start(0, "idempotency.after_reserve=pause(" + held_within + ");http.draining=signal(" + draining_within + ")",
        /*grace_seconds=*/60);
  std::future<int> within = std::async(std::launch::async, [&] { return create("within", "k-within"); });
  ASSERT_TRUE(testing::AwaitFile(held_within + ".reached"));
  server_->Signal(SIGTERM);
  ASSERT_TRUE(testing::AwaitFile(draining_within)) << "SIGTERM did not start the drain";
  touch(held_within);  // released within --grace: answered
  EXPECT_EQ(within.get(), 201);
  EXPECT_EQ(server_->Wait(), 0);

  const std::string held_beyond = dir_.Join("beyond");
  Start(0, "idempotency.after_reserve=pause(" + held_beyond + ")", /*grace_seconds=*/1);
  std::future<int> beyond = std::async(std::launch::async, [&] { return create("beyond", "k-beyond"); });
  ASSERT_TRUE(testing::AwaitFile(held_beyond + ".reached"));
  server_->Signal(SIGTERM);
  EXPECT_EQ(beyond.get(), -1) << "the request outlasting --grace was answered";
  touch(held_beyond);  // its effect completes after its connection was cut off
  EXPECT_EQ(server_->Wait(), 0);

  Start();
  auto retry =
      Call(*client_, "POST", "/v1/databases", Json{{"name", "beyond"}}.dump(), {{"Idempotency-Key", "k-beyond"}});
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.Header("idempotency-replayed"), "true");
  const std::string dbs = Call(*client_, "GET", "/v1/databases").body;
  EXPECT_NE(dbs.find("\"within\""), std::string::npos) << dbs;
  EXPECT_NE(dbs.find("\"beyond\""), std::string::npos) << dbs;
}

TEST_F(ServeSettingsTest, ConnectionsPastTheBoundAre503) {
  Init("max_connections = 2");
  Start();
  EXPECT_EQ(Call(*client_, "GET", "/v1/config").status, 200);  // one kept-alive connection
  auto second = Connect();
  EXPECT_EQ(Call(*second, "GET", "/v1/config").status, 200);  // two
  auto third = Connect();
  auto refused = third->Call("GET", "/healthz");
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 503);
}

TEST_F(ServeSettingsTest, SessionsBoundTheSqlRunningAtOnce) {
  Init("sessions = 1");
  Start();
  const std::string slow = Json{{"sql",
                                 "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n "
                                 "WHERE x < 2000000) SELECT COUNT(*) FROM n"}}
                               .dump();
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&] {
      auto c = Connect();
      EXPECT_EQ(Call(*c, "POST", "/v1/sql", slow).status, 200);  // each waits for the one session
    });
  }
  for (auto& t : clients) t.join();
  const std::string metrics = Call(*client_, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("vigil_sql_sessions_open 1\n"), std::string::npos) << metrics;
}

TEST_F(ServeSettingsTest, JobEventStreamsPastTheBoundAre503) {
  Init("sse_max_subscribers = 1");
  // The leader hangs right after dispatch, so the job stays RUNNING and its stream open.
  Start(0, "runner.after_dispatch=hang");
  std::atomic<bool> opened{false};
  std::jthread first;  // joined once the server is gone (destroyed after the guard below)
  // The hung leader would keep a graceful stop waiting: whatever happens, SIGKILL the server.
  struct KillServer {
    ServeProcess* server;
    ~KillServer() { server->Stop(SIGKILL); }
  } kill_server{server_.get()};
  ASSERT_EQ(Sql("CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL); INSERT INTO d.t VALUES (1)").status, 200);
  auto admitted =
      Call(*client_, "POST", "/v1/databases/d/tables/t/indexes",
           Json{{"name", "i"}, {"columns", {"id"}}, {"using", "BTREE"}}.dump(), {{"Idempotency-Key", "idx"}});
  ASSERT_EQ(admitted.status, 202) << admitted.body;
  const std::string events = admitted.Header("location") + "/events";
  first = std::jthread([this, events, &opened] {
    auto c = Connect();
    auto r = c->Stream(events, {{"Authorization", "Bearer " + token_}}, [&](std::string_view) {
      opened.store(true);
      return true;  // reads until the server goes away
    });
    (void)r;
  });
  for (int i = 0; i < 200 && !opened.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(opened.load());
  auto second = Call(*client_, "GET", events);
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_EQ(second.Header("retry-after"), "1");
}

// [jobs] max_pending_seconds: a job that no node takes (the only node drained) ends FAILED,
// NOT_COMMITTED with SCHEDULING_EXHAUSTED once it waited that long; nothing of it ran.
TEST_F(ServeSettingsTest, AJobNoNodeTakesEndsSchedulingExhaustedAfterMaxPendingSeconds) {
  Init("");
  std::ofstream(root_ + "/vigil.toml", std::ios::app) << "[jobs]\nmax_pending_seconds = \"1s\"\n";
  Start();
  ASSERT_EQ(Sql("CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL); INSERT INTO d.t VALUES (1)").status, 200);
  auto nodes = Json::parse(Sql("SHOW NODES").body, nullptr, false);
  ASSERT_FALSE(nodes["results"][0]["rows"].empty()) << nodes.dump();
  const std::string node = nodes["results"][0]["rows"][0][0].get<std::string>();
  ASSERT_EQ(Sql("DRAIN NODE '" + node + "'").status, 200);
  auto admitted = Sql("CREATE INDEX i ON d.t (id) USING BTREE");
  ASSERT_EQ(admitted.status, 200) << admitted.body;
  const int64_t job = Json::parse(admitted.body)["results"][0]["admitted_jobs"][0].get<int64_t>();
  auto waited = Call(*client_, "POST", "/v1/jobs/" + std::to_string(job) + "/wait?timeout_s=60");
  ASSERT_EQ(waited.status, 200) << waited.body;
  const Json detail = Json::parse(waited.body)["job"];
  EXPECT_EQ(detail["State"], "FAILED") << waited.body;
  EXPECT_EQ(detail["Outcome"], "NOT_COMMITTED");
  EXPECT_EQ(detail["RefreshState"], "NOT_REQUIRED");
  EXPECT_NE(detail["Message"].get<std::string>().find("SCHEDULING_EXHAUSTED"), std::string::npos) << waited.body;
  EXPECT_TRUE(detail["AttemptId"].is_null()) << waited.body;
}

// [jobs] concurrency_per_cluster or concurrency_per_catalog = 1 on a node that could run two
// attempts: while the first job's worker is held at a pause, the second job stays PENDING; both
// finish once it is released.
void ExpectOneAttemptAtATime(ServeSettingsTest& t, const std::string& setting) {
  t.Init("");
  std::ofstream(t.root_ + "/vigil.toml", std::ios::app) << "[jobs]\nconcurrency_per_node = 2\n" << setting << " = 1\n";
  const std::string release = t.dir_.Join("release");
  t.Start(0, "worker.before_invoke=pause(" + release + ")");
  ASSERT_EQ(t.Sql("CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL); CREATE TABLE d.u (id BIGINT NOT NULL); "
                  "INSERT INTO d.t VALUES (1); INSERT INTO d.u VALUES (1)")
                .status,
            200);
  ASSERT_EQ(t.Sql("CREATE INDEX i ON d.t (id) USING BTREE; CREATE INDEX i ON d.u (id) USING BTREE").status, 200);
  ASSERT_TRUE(testing::AwaitFile(release + ".reached")) << "no worker reached its pause";
  // The leader dispatches every job a slot can take in one pass: the second would be RUNNING now.
  auto listed = Json::parse(t.Sql("SELECT State FROM vigil_index_jobs ORDER BY JobId").body, nullptr, false);
  std::multiset<std::string> states;
  for (const auto& row : listed["results"][0]["rows"]) states.insert(row[0].get<std::string>());
  EXPECT_EQ(states, (std::multiset<std::string>{"PENDING", "RUNNING"})) << listed.dump();
  std::ofstream(release).put('\n');
  for (const char* job : {"1", "2"}) {
    auto waited = t.Call(*t.client_, "POST", std::string("/v1/jobs/") + job + "/wait?timeout_s=60");
    EXPECT_EQ(Json::parse(waited.body, nullptr, false)["job"]["State"], "FINISHED") << waited.body;
  }
}

// [generations] memory_budget_bytes bounds the server process, not each of its sessions: two
// sessions reading one table share its generation (charged once), and a second table that
// would fit alone is refused while the first is held. The first request (another user's: each
// user has half of the sessions) is held at a pause so that the second runs on the other session.
TEST_F(ServeSettingsTest, GenerationBudgetsAreTheProcesssAndSessionsShareATablesGeneration) {
  Init("sessions = 2");
  std::string reader;
  {
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok());
    reader = (*store)->CreateUser("default", "rita", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "rita", auth::Privilege::kShow, "local.d.*").ok());
  }
  // Rows enough for a BTREE of more than 1 MiB (the least budget vigil.toml takes).
  const std::string csv = dir_.Join("rows.csv");
  {
    std::ofstream out(csv);
    out << "id\n";
    for (int i = 0; i < 100'000; ++i) out << i << "\n";
  }
  for (const std::string table : {"d.t", "d.u"}) {
    ASSERT_EQ(RunVigil("--root " + root_ + " sql -c \"CREATE DATABASE IF NOT EXISTS d; CREATE TABLE " + table +
                       " (id BIGINT NOT NULL); COPY " + table + " FROM '" + csv + "'; CREATE INDEX i ON " + table +
                       " (id) USING BTREE\""),
              0);
  }
  uint64_t segment_bytes = 0;
  {
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = jobs::OpenRootJobStore(*root);
    ASSERT_TRUE(store.ok());
    auto entry =
        catalog::TableCatalog(&*root, &store->get()->catalog()).Lookup(TableName{std::string(kLocalCatalog), "d", "t"});
    ASSERT_TRUE(entry.ok()) << entry.status().ToString();
    for (const auto& f : std::filesystem::recursive_directory_iterator(entry->locator + "/_indices")) {
      if (f.is_regular_file()) segment_bytes += f.file_size();
    }
  }
  ASSERT_GT(segment_bytes, 0u);
  std::ofstream(root_ + "/vigil.toml", std::ios::app)
      << "[generations]\nmemory_budget_bytes = " << segment_bytes * 3 / 2 << "\n";
  const std::string release = dir_.Join("release");
  Start(0, "sql_route.after_statement=pause(" + release + ")@1");
  auto held = std::async(std::launch::async, [&]() -> server::ClientResponse {
    auto c = Connect();
    auto r = c->Call("POST", "/v1/sql", {{"Authorization", "Bearer " + reader}, {"Content-Type", "application/json"}},
                     Json{{"sql", "SELECT COUNT(*) FROM d.t"}}.dump());
    return r.ok() ? *r : server::ClientResponse{};
  });
  ASSERT_TRUE(testing::AwaitFile(release + ".reached")) << "the first request never reached its pause";
  auto same = Sql("SELECT COUNT(*) FROM d.t");  // the other session, the same generation
  EXPECT_EQ(same.status, 200) << same.body;
  auto other = Sql("SELECT COUNT(*) FROM d.u");
  EXPECT_NE(other.status, 200) << other.body;
  EXPECT_NE(other.body.find("generations.memory_budget_bytes"), std::string::npos) << other.body;
  std::ofstream(release).put('\n');
  auto first = held.get();
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(Json::parse(first.body, nullptr, false)["results"][0]["rows"][0][0], 100'000) << first.body;
}

TEST_F(ServeSettingsTest, ConcurrencyPerClusterHoldsTheSecondJobPendingWhileOneRuns) {
  ExpectOneAttemptAtATime(*this, "concurrency_per_cluster");
}

TEST_F(ServeSettingsTest, ConcurrencyPerCatalogHoldsTheSecondJobPendingWhileOneRuns) {
  ExpectOneAttemptAtATime(*this, "concurrency_per_catalog");
}

// requests_per_second_per_user: a user past the rate (after a second's burst) is answered 429
// with Retry-After before anything is done, so a refused keyed request runs when retried under
// its key; another user is answered meanwhile.
TEST_F(ServeSettingsTest, AUserPastTheRateIs429AndOthersAreServed) {
  Init("requests_per_second_per_user = 5");
  std::string other;
  {
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok());
    other = (*store)->CreateUser("default", "viewer", false)->token;
  }
  Start();
  const auto t0 = std::chrono::steady_clock::now();
  int answered = 0;
  server::ClientResponse refused;
  for (int i = 0; i < 200 && refused.status == 0; ++i) {
    server::ClientResponse r = Call(*client_, "GET", "/v1/config");
    if (r.status == 200) {
      ++answered;
    } else {
      refused = r;
    }
  }
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(refused.status, 429) << refused.body;
  // The burst (5) plus what the rate refilled while the requests ran.
  EXPECT_GE(answered, 5);
  EXPECT_LE(answered, 5 + static_cast<int>(5 * elapsed_s) + 1);
  EXPECT_EQ(Json::parse(refused.body)["code"], "RATE_LIMITED") << refused.body;
  EXPECT_THAT(Json::parse(refused.body)["detail"].get<std::string>(),
              ::testing::HasSubstr("requests_per_second_per_user = 5; nothing was done; retry after 1 s"));
  EXPECT_EQ(refused.Header("content-type"), "application/problem+json");
  EXPECT_EQ(refused.Header("retry-after"), "1");
  // Another user is not slowed.
  auto viewer = Connect();
  ASSERT_NE(viewer, nullptr);
  auto served = viewer->Call("GET", "/v1/config", {{"Authorization", "Bearer " + other}}, "");
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(served->status, 200);
  EXPECT_EQ(Json::parse(served->body)["limits"]["requests_per_second_per_user"], 5);

  // A keyed request refused by the limit left nothing behind: its retry runs. (Drained just
  // before, the bucket refuses it unless this machine paused for a token's refill between the
  // two requests; then it ran, and the next database is tried.)
  std::string name;
  for (int n = 0; n < 10 && name.empty(); ++n) {
    for (int i = 0; i < 200 && Call(*client_, "GET", "/v1/config").status != 429; ++i) {
    }
    const std::string candidate = "d" + std::to_string(n);
    auto keyed = Call(*client_, "POST", "/v1/databases", Json{{"name", candidate}}.dump(),
                      {{"Idempotency-Key", "create-" + candidate}});
    if (keyed.status == 429) name = candidate;
  }
  ASSERT_FALSE(name.empty()) << "the limit never refused a keyed request";
  // The retry under the same key, once the bucket has refilled (refused with 429 until then).
  server::ClientResponse retried;
  for (int i = 0; i < 600; ++i) {
    retried =
        Call(*client_, "POST", "/v1/databases", Json{{"name", name}}.dump(), {{"Idempotency-Key", "create-" + name}});
    if (retried.status != 429) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(retried.status, 201) << retried.body;
  EXPECT_EQ(retried.Header("idempotency-replayed"), "");
  EXPECT_GE(
      MetricValue(server_->url(), "vigil_http_requests_total{route=\"/v1/config\",method=\"GET\",status=\"429\"}"), 1);
}

// Without requests_per_second_per_user nobody is refused for their rate.
TEST_F(ServeSettingsTest, WithoutARateLimitABurstIsServed) {
  Init("");
  Start();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(Call(*client_, "GET", "/v1/config").status, 200) << i;
  EXPECT_EQ(Json::parse(Call(*client_, "GET", "/v1/config").body)["limits"]["requests_per_second_per_user"], 0);
}

TEST_F(ServeSettingsTest, ACertificateMakesItHttpsOnly) {
  const std::string cert = dir_.Join("cert.pem"), key = dir_.Join("key.pem");
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " + key +
                         " -out " + cert + " >/dev/null 2>&1")
                            .c_str()),
            0);
  Init("tls_cert_file = \"" + cert + "\"\ntls_key_file = \"" + key + "\"");
  server_ = std::make_unique<ServeProcess>(root_);
  ASSERT_GT(server_->port(), 0);
  const std::string port = std::to_string(server_->port());
  const auto curl = [&](const std::string& scheme) {
    const std::string cmd =
        "curl -sk -o /dev/null -w '%{http_code}' " + scheme + "://127.0.0.1:" + port + "/healthz 2>/dev/null";
    return testing::RunCommand(cmd).output;
  };
  EXPECT_EQ(curl("https"), "200");
  EXPECT_NE(curl("http"), "200");  // plain HTTP is not answered

  // The shell over HTTPS: the certificate is verified (here trusted through SSL_CERT_FILE).
  const std::string token_file = dir_.Join("token");
  { std::ofstream(token_file) << token_ << "\n"; }
  ::chmod(token_file.c_str(), 0600);
  const auto shell = [&](const std::string& env) {
    const std::string cmd = env + " " + std::string(VIGIL_CLI_BINARY) + " sql --url https://localhost:" + port +
                            " --token-file " + token_file + " -c 'SELECT 40 + 2' 2>&1";
    testing::CommandResult ran = testing::RunCommand(cmd);
    return std::make_pair(ran.exit_code, std::move(ran.output));
  };
  const auto trusted = shell("env -u VIGIL_ROOT SSL_CERT_FILE=" + cert);
  EXPECT_EQ(trusted.first, 0) << trusted.second;
  EXPECT_NE(trusted.second.find("42"), std::string::npos) << trusted.second;
  // A certificate nobody trusts is refused before any request is sent.
  const auto untrusted = shell("env -u VIGIL_ROOT SSL_CERT_FILE=/dev/null");
  EXPECT_NE(untrusted.first, 0) << untrusted.second;
  EXPECT_NE(untrusted.second.find("certificate"), std::string::npos) << untrusted.second;
}

}  // namespace
}  // namespace vigil

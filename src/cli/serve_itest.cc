// `vigil serve` as its users meet it: a real server process on loopback, real
// HTTP clients, bearer tokens from the root's principal store, idempotent
// mutations, the privilege rules with their non-disclosing denials, job
// progress as server-sent events, and SIGKILL / restart mid-load.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "cli/serve_fixture.h"
#include "testutil/await_file.h"
#include "testutil/run_command.h"
#include "testutil/tcp_client.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/root_auth.h"
#include "vigil/common/ascii.h"
#include "vigil/jobs/job_state.h"
#include "vigil/server/http_client.h"
#include "vigil/storage/root.h"

namespace vigil {
namespace {

using Json = nlohmann::json;
// server::kStaleReservationMs in seconds, rounded up.
constexpr int kStaleSeconds = 10;
using Headers = std::vector<std::pair<std::string, std::string>>;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("root");
    ASSERT_EQ(RunVigil("init " + root_), 0);
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = auth::OpenRootPrincipalStore(*root);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    admin_ = (*store)->CreateUser("default", "root_admin", true)->token;
    alice_ = (*store)->CreateUser("default", "alice", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "alice", auth::Privilege::kAlter, "local.d.*").ok());
    reader_ = (*store)->CreateUser("default", "rita", false)->token;
    ASSERT_TRUE((*store)->Grant("default", "rita", auth::Privilege::kShow, "local.d.*").ok());
    Start();
  }
  // Starts the server at `port` (0: any) with `failpoints` armed.
  void Start(int port = 0, const std::string& failpoints = "") {
    server_ = std::make_unique<ServeProcess>(root_, port, failpoints);
    ASSERT_GT(server_->port(), 0) << "vigil serve did not report its port";
    if (port > 0) {
      ASSERT_EQ(server_->port(), port);
    }
    auto c = server::HttpClient::Connect(server_->url());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  // Stops the server and starts it again at the same port, with `failpoints` armed.
  void Restart(const std::string& failpoints = "") {
    const int port = server_->port();
    server_->Stop(SIGTERM);
    Start(port, failpoints);
  }
  // Restarts the server with `failpoint` armed and sends alice's keyed POST of `body` to
  // `path`, which gets no answer (the server dies at the failpoint); SIGKILLs what is left.
  void CutOff(const std::string& failpoint, const std::string& path, const Json& body, const std::string& key) {
    Restart(failpoint);
    auto r = client_->Call(
        "POST", path,
        {{"Authorization", "Bearer " + alice_}, {"Idempotency-Key", key}, {"Content-Type", "application/json"}},
        body.dump());
    EXPECT_FALSE(r.ok()) << "the server answered although it was to die: " << r->status << " " << r->body;
    server_->Stop(SIGKILL);
  }
  // Waits until the reconciler has settled one stale reservation with each of `outcomes`, and
  // no more.
  void ExpectSettledOnce(const std::vector<std::string>& outcomes) {
    for (const std::string& outcome : outcomes) {
      EXPECT_TRUE(WaitForIdempotencyCount(server_->url(), outcome, 1)) << outcome;
      EXPECT_EQ(IdempotencyCount(server_->url(), outcome), 1) << outcome;
    }
  }

  server::ClientResponse Call(const std::string& method, const std::string& target, const std::string& token,
                              const std::string& body = "", Headers extra = {}) {
    Headers h = std::move(extra);
    if (!token.empty()) h.emplace_back("Authorization", "Bearer " + token);
    if (!body.empty() && std::none_of(h.begin(), h.end(), [](auto& p) { return p.first == "Content-Type"; })) {
      h.emplace_back("Content-Type", "application/json");
    }
    auto r = client_->Call(method, target, h, body);
    EXPECT_TRUE(r.ok()) << method << " " << target << ": " << r.status().ToString();
    return r.ok() ? *r : server::ClientResponse{};
  }
  server::ClientResponse Post(const std::string& target, const std::string& token, const Json& body,
                              const std::string& key = "") {
    Headers h;
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return Call("POST", target, token, body.dump(), h);
  }
  Json Sql(const std::string& token, const std::string& sql) {
    auto r = Post("/v1/sql", token, {{"sql", sql}, {"script", true}});
    EXPECT_EQ(r.status, 200) << sql << ": " << r.body;
    return Json::parse(r.body, nullptr, false);
  }
  int64_t CountRows(const std::string& table) {
    Json j = Sql(admin_, "SELECT COUNT(*) FROM " + table);
    return j["results"][0]["rows"][0][0].get<int64_t>();
  }

  testing::TempDir dir_;
  std::string root_;
  std::string admin_, alice_, reader_;
  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<server::HttpClient> client_;
};

TEST_F(ServeTest, ServiceRoutesAnswerWithoutATokenAndDescribeTheApi) {
  EXPECT_EQ(Call("GET", "/healthz", "").status, 200);
  server::ClientResponse ready;
  for (int i = 0; i < 100; ++i) {  // the leader takes its lease right after the server starts
    ready = Call("GET", "/readyz", "");
    if (ready.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(Json::parse(ready.body)["checks"]["leader"], "ok");
  auto doc = Call("GET", "/v1/openapi.json", "");
  ASSERT_EQ(doc.status, 200);
  Json api = Json::parse(doc.body);
  EXPECT_EQ(api["openapi"], "3.1.0");
  auto metrics = Call("GET", "/metrics", "");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("vigil_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("vigil_index_jobs{state=\"PENDING\"} 0"), std::string::npos);
  EXPECT_EQ(metrics.Header("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
}

// /metrics counts what happened: requests and their latency by route, the job and its
// attempt's outcome, keys reserved and replayed, connections, and the leader lease.
TEST_F(ServeTest, MetricsCountWhatHappened) {
  const std::string url = server_->url();
  ASSERT_TRUE(WaitForMetric(url, "vigil_leader", 1));
  Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, k STRING NOT NULL)");
  const Json rows = {{"rows", Json::array({{{"id", 1}, {"k", "a"}}, {{"id", 2}, {"k", "b"}}})}};
  for (int i = 0; i < 2; ++i) EXPECT_EQ(Post("/v1/databases/d/tables/t/rows", alice_, rows, "rows-1").status, 200);
  auto index = Post("/v1/databases/d/tables/t/indexes", alice_,
                    {{"name", "k_idx"}, {"columns", {"k"}}, {"using", "BITMAP"}}, "index-1");
  ASSERT_EQ(index.status, 202) << index.body;
  ASSERT_EQ(Call("POST", index.Header("location") + "/wait", alice_).status, 200);

  const std::string rows_route = "route=\"/v1/databases/{db}/tables/{table}/rows\"";
  EXPECT_EQ(MetricValue(url, "vigil_http_requests_total{" + rows_route + ",method=\"POST\",status=\"200\"}"), 2);
  EXPECT_EQ(MetricValue(url, "vigil_http_request_duration_seconds_count{" + rows_route + "}"), 2);
  EXPECT_EQ(MetricValue(url, "vigil_http_request_duration_seconds_bucket{" + rows_route + ",le=\"+Inf\"}"), 2);
  EXPECT_EQ(MetricValue(url, "vigil_idempotency_requests_total{outcome=\"reserved\"}"), 2);
  EXPECT_EQ(MetricValue(url, "vigil_idempotency_requests_total{outcome=\"replayed\"}"), 1);
  EXPECT_EQ(MetricValue(url, "vigil_index_jobs{state=\"FINISHED\"}"), 1);
  EXPECT_EQ(MetricValue(url, "vigil_index_job_outcomes{outcome=\"COMMITTED\"}"), 1);
  EXPECT_EQ(MetricValue(url, "vigil_index_job_outcomes{outcome=\"UNKNOWN\"}"), 0);
  EXPECT_EQ(MetricValue(url, "vigil_index_job_reconcile_results_total{result=\"lost_attempt\"}"), 0);
  EXPECT_GE(MetricValue(url, "vigil_http_connections_total{fate=\"accepted\"}"), 2);
  EXPECT_EQ(MetricValue(url, "vigil_leader"), 1);
  EXPECT_EQ(CountRows("d.t"), 2);
}

// A job not yet dispatched is cancelled over HTTP, once: its detail shows the cancellation's
// state, outcome and events; a finished job's detail shows its progress and every transition.
TEST_F(ServeTest, AJobIsCancelledBeforeDispatchAndItsDetailTellsItsHistory) {
  Sql(admin_,
      "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, k STRING NOT NULL); "
      "INSERT INTO d.t VALUES (1, 'a')");
  auto finished = Post("/v1/databases/d/tables/t/indexes", alice_,
                       {{"name", "k_idx"}, {"columns", {"k"}}, {"using", "BITMAP"}}, "index-k");
  ASSERT_EQ(finished.status, 202) << finished.body;
  ASSERT_EQ(Call("POST", finished.Header("location") + "/wait", alice_).status, 200);
  const Json done = Json::parse(Call("GET", finished.Header("location"), reader_).body);
  EXPECT_EQ(done["job"]["State"], "FINISHED");
  EXPECT_EQ(done["job"]["Progress"], "committing 1/1");
  std::string kinds;  // each event is "<date> <time> <KIND> by <actor> {...}"
  for (const Json& e : done["events"]) {
    std::istringstream words(e.get<std::string>());
    std::string date, time, kind;
    words >> date >> time >> kind;
    kinds += kind + " ";
  }
  EXPECT_EQ(kinds, "ADMITTED DISPATCHED RESULT REFRESH_STARTED REFRESH_DONE ") << done["events"].dump();

  // The dispatcher is held before the next dispatch, never released: the job stays PENDING.
  const std::string held = dir_.Join("dispatch");
  Restart("runner.before_dispatch=pause(" + held + ")");
  auto pending = Post("/v1/databases/d/tables/t/indexes", alice_,
                      {{"name", "id_idx"}, {"columns", {"id"}}, {"using", "BTREE"}}, "index-id");
  ASSERT_EQ(pending.status, 202) << pending.body;
  ASSERT_TRUE(testing::AwaitFile(held + ".reached")) << "the dispatcher never picked the job";
  const std::string job = pending.Header("location");
  EXPECT_EQ(Post(job + "/cancel", reader_, Json::object(), "cancel-r").status, 403);
  auto cancel = Post(job + "/cancel", alice_, Json::object(), "cancel-1");
  EXPECT_EQ(cancel.status, 200) << cancel.body;
  EXPECT_EQ(Post(job + "/cancel", alice_, Json::object(), "cancel-1").Header("idempotency-replayed"), "true");
  const Json detail = Json::parse(Call("GET", job, reader_).body);
  EXPECT_EQ(detail["job"]["State"], "CANCELLED") << detail.dump();
  EXPECT_EQ(detail["job"]["Outcome"], "CANCELLED_BEFORE_DISPATCH");
  EXPECT_NE(detail["events"].dump().find("CANCEL"), std::string::npos) << detail["events"].dump();
  // Cancelling it again under a new key changes nothing and says where it stands.
  auto again = Post(job + "/cancel", alice_, Json::object(), "cancel-2");
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(Json::parse(again.body)["message"], "index job " + job.substr(job.rfind('/') + 1) + " is CANCELLED");
  server_->Stop(SIGKILL);  // the dispatcher is still held
}

// `vigil serve` on a root whose leader is a background `vigil supervise` stops it first and
// leads in its place; it is not itself stopped by `vigil supervise --stop` or a second server.
TEST_F(ServeTest, ServeStopsARunningSupervisorAndLeadsInItsPlace) {
  server_->Stop(SIGTERM);
  const std::string vigil = "env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) + " --root " + root_;
  ASSERT_EQ(RunVigil("--root " + root_ + " supervise --idle-exit 0"), 0);
  // The daemon has started; doctor names it once it holds the leader lock.
  std::string leading;
  for (int i = 0; i < 300 && leading.find("uses the settings above") == std::string::npos; ++i) {
    leading = testing::RunCommand(vigil + " doctor 2>&1").output;
  }
  EXPECT_NE(leading.find("uses the settings above"), std::string::npos) << leading;
  Start();
  server::ClientResponse ready;
  for (int i = 0; i < 100; ++i) {
    ready = Call("GET", "/readyz", "");
    if (ready.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Json::parse(ready.body)["checks"]["leader"], "ok") << ready.body;
  const std::string doctor = testing::RunCommand(vigil + " doctor 2>&1").output;
  EXPECT_NE(doctor.find("vigil serve pid "), std::string::npos) << doctor;
  // Neither `vigil supervise --stop` nor a second server takes this one down: both are refused.
  const testing::CommandResult stop = testing::RunCommand(vigil + " supervise --stop 2>&1");
  EXPECT_NE(stop.exit_code, 0);
  EXPECT_NE(stop.output.find("not a supervisor"), std::string::npos) << stop.output;
  const testing::CommandResult second = testing::RunCommand(vigil + " serve --listen 127.0.0.1:0 2>&1");
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.output.find("served already by `vigil serve`"), std::string::npos) << second.output;
  EXPECT_EQ(Call("GET", "/healthz", "").status, 200);
  EXPECT_EQ(Json::parse(Call("GET", "/readyz", "").body)["checks"]["leader"], "ok");
}

TEST_F(ServeTest, EveryOtherRouteNeedsAValidBearerTokenAndSaysNothingMore) {
  auto none = Call("GET", "/v1/databases", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.Header("www-authenticate"), "Bearer realm=\"vigil\"");
  EXPECT_EQ(none.Header("content-type"), "application/problem+json");
  auto forged =
      Call("GET", "/v1/databases", "", "", {{"Authorization", "Bearer vgl_0000000000000000_" + std::string(64, 'a')}});
  auto garbage = Call("GET", "/v1/databases", "", "", {{"Authorization", "Bearer nonsense"}});
  auto wrong_secret =
      Call("GET", "/v1/databases", "", "",
           {{"Authorization", "Bearer " + alice_.substr(0, alice_.size() - 1) + (alice_.back() == 'a' ? "b" : "a")}});
  EXPECT_EQ(forged.status, 401);
  EXPECT_EQ(garbage.status, 401);
  EXPECT_EQ(wrong_secret.status, 401);
  EXPECT_EQ(forged.body, garbage.body);
  EXPECT_EQ(forged.body, wrong_secret.body);
  EXPECT_EQ(Call("GET", "/v1/databases", alice_).status, 200);
  EXPECT_EQ(Call("GET", "/v1/nothing", alice_).status, 404);
  EXPECT_EQ(Call("PUT", "/v1/databases", alice_).status, 405);
}

TEST_F(ServeTest, AUserWithAlterOnADatabaseLoadsRowsBuildsAnIndexAndQueries) {
  ASSERT_EQ(Post("/v1/databases", admin_, {{"name", "d"}}, "k-db").status, 201);
  auto created = Post("/v1/databases/d/tables", alice_,
                      {{"name", "docs"},
                       {"columns", Json::array({{{"name", "id"}, {"type", "BIGINT"}, {"not_null", true}},
                                                {{"name", "category"}, {"type", "STRING"}, {"not_null", true}}})}},
                      "k-table");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Header("location"), "/v1/databases/d/tables/docs");
  // Rows as a CSV upload and as JSON.
  std::string csv = "id,category\n";
  for (int i = 0; i < 500; ++i) csv += std::to_string(i) + ",cat_" + std::to_string(i % 5) + "\n";
  auto up = Call("POST", "/v1/databases/d/tables/docs/rows", alice_, csv,
                 {{"Content-Type", "text/csv"}, {"Idempotency-Key", "k-csv"}});
  ASSERT_EQ(up.status, 200) << up.body;
  auto js = Post("/v1/databases/d/tables/docs/rows", alice_,
                 {{"rows", Json::array({{{"id", 1000}, {"category", "json"}}})}}, "k-json");
  ASSERT_EQ(js.status, 200) << js.body;
  EXPECT_EQ(CountRows("d.docs"), 501);
  // An index job: 202, its Location, then its events until it ends.
  auto idx = Post("/v1/databases/d/tables/docs/indexes", alice_,
                  {{"name", "cat_idx"}, {"columns", {"category"}}, {"using", "BITMAP"}}, "k-index");
  ASSERT_EQ(idx.status, 202) << idx.body;
  const std::string location = idx.Header("location");
  ASSERT_EQ(location.rfind("/v1/jobs/", 0), 0u) << location;
  std::string events;
  auto sse = server::HttpClient::Connect(server_->url());
  ASSERT_TRUE(sse.ok());
  auto streamed =
      (*sse)->Stream(location + "/events", {{"Authorization", "Bearer " + alice_}}, [&](std::string_view data) {
        events.append(data);
        return events.find("event: end") == std::string::npos;
      });
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(streamed->Header("content-type"), "text/event-stream");
  EXPECT_NE(events.find("event: job"), std::string::npos) << events;
  EXPECT_NE(events.find("\"State\":\"FINISHED\""), std::string::npos) << events;
  auto job = Call("GET", location, alice_);
  ASSERT_EQ(job.status, 200);
  EXPECT_EQ(Json::parse(job.body)["job"]["State"], "FINISHED") << job.body;
  // A filtered query through the index.
  auto q = Post("/v1/databases/d/tables/docs/query", reader_,
                {{"filter", "category = 'cat_3'"}, {"select", {"id"}}, {"limit", 1000}});
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_EQ(Json::parse(q.body)["rows"].size(), 100u);
  auto jobs = Call("GET", "/v1/jobs?database=d&limit=10", reader_);
  ASSERT_EQ(jobs.status, 200);
  EXPECT_EQ(Json::parse(jobs.body)["jobs"].size(), 1u);
}

TEST_F(ServeTest, AnIdempotencyKeyRunsARequestOnceAndReplaysIt) {
  ASSERT_EQ(Post("/v1/databases", admin_, {{"name", "d"}}, "db-1").status, 201);
  ASSERT_EQ(Sql(admin_, "CREATE TABLE d.t (id BIGINT)")["results"].size(), 1u);
  const Json rows = {{"rows", Json::array({{{"id", 1}}, {{"id", 2}}})}};
  auto first = Post("/v1/databases/d/tables/t/rows", alice_, rows, "append-1");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.Header("idempotency-replayed"), "");
  auto again = Post("/v1/databases/d/tables/t/rows", alice_, rows, "append-1");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.Header("idempotency-replayed"), "true");
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(CountRows("d.t"), 2);
  // The same key with another body, or for another resource: 422, nothing runs.
  auto changed = Post("/v1/databases/d/tables/t/rows", alice_, {{"rows", Json::array({{{"id", 3}}})}}, "append-1");
  EXPECT_EQ(changed.status, 422);
  EXPECT_EQ(Json::parse(changed.body)["code"], "IDEMPOTENCY_KEY_REUSED");
  EXPECT_EQ(CountRows("d.t"), 2);
  // Keys are per user: another user's identical key is a different request.
  auto other_user = Post("/v1/databases/d/tables/t/rows", admin_, rows, "append-1");
  EXPECT_EQ(other_user.status, 200);
  EXPECT_EQ(other_user.Header("idempotency-replayed"), "");
  EXPECT_EQ(CountRows("d.t"), 4);
  // A resource mutation without a key, or with a malformed one: 400, nothing runs.
  auto missing = Post("/v1/databases/d/tables/t/rows", alice_, rows);
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(Json::parse(missing.body)["code"], "IDEMPOTENCY_KEY_MISSING");
  auto malformed = Post("/v1/databases/d/tables/t/rows", alice_, rows, "\"unbalanced");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_EQ(CountRows("d.t"), 4);
  // A refused request (403) is not stored: the key stays free for the real request.
  auto denied = Post("/v1/databases/d/tables/t/rows", reader_, rows, "append-2");
  EXPECT_EQ(denied.status, 403) << denied.body;
  auto allowed = Post("/v1/databases/d/tables/t/rows", reader_, rows, "append-2");
  EXPECT_EQ(allowed.status, 403);
  EXPECT_EQ(allowed.Header("idempotency-replayed"), "");
  auto metrics = Call("GET", "/metrics", "");
  EXPECT_NE(metrics.body.find("vigil_idempotency_requests_total{outcome=\"replayed\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("vigil_idempotency_requests_total{outcome=\"mismatch\"} 1"), std::string::npos);
}

// Keys are per user incarnation. A user dropped and created again under its name never meets
// the old user's keys, even before the server's next pass forgets them; that pass deletes the
// dropped user's records, while every other user's stay until they expire.
TEST_F(ServeTest, ADroppedUsersKeysAreForgottenAndTheNameStartsAfresh) {
  const Json id = Json::array({{{"name", "id"}, {"type", "BIGINT"}}});
  const Json table_b = {{"name", "from_bob"}, {"columns", id}};
  const Json table_a = {{"name", "from_alice"}, {"columns", id}};
  std::string bob =
      Sql(admin_, "CREATE DATABASE d; CREATE USER bob; GRANT ALTER ON d.* TO bob")["results"][1]["rows"][0][1]
          .get<std::string>();
  EXPECT_EQ(Post("/v1/databases/d/tables", bob, table_b, "nightly").status, 201);
  EXPECT_EQ(Post("/v1/databases/d/tables", alice_, table_a, "nightly").status, 201);
  bob = Sql(admin_, "DROP USER bob; CREATE USER bob; GRANT ALTER ON d.* TO bob")["results"][1]["rows"][0][1]
            .get<std::string>();

  auto replayed = [](const server::ClientResponse& r) { return r.Header("idempotency-replayed") == "true"; };
  auto again_bob = Post("/v1/databases/d/tables", bob, table_b, "nightly");
  EXPECT_FALSE(replayed(again_bob)) << "the new bob got the dropped bob's answer: " << again_bob.body;
  EXPECT_EQ(again_bob.status, 409) << again_bob.body;  // ran afresh: the table exists
  EXPECT_NE(again_bob.body.find("ALREADY_EXISTS"), std::string::npos) << again_bob.body;

  // The first pass comes ~11 s after the start: the dropped bob's one record goes; alice's and
  // the new bob's are young.
  ASSERT_TRUE(WaitForMetric(server_->url(), "vigil_idempotency_records_purged_total", 1));
  EXPECT_EQ(MetricValue(server_->url(), "vigil_idempotency_records_purged_total"), 1);
  auto again_alice = Post("/v1/databases/d/tables", alice_, table_a, "nightly");
  EXPECT_EQ(again_alice.status, 201);
  EXPECT_TRUE(replayed(again_alice)) << "a live user's record went with the dropped user's";
  auto new_bob_again = Post("/v1/databases/d/tables", bob, table_b, "nightly");
  EXPECT_EQ(new_bob_again.status, 409);
  EXPECT_TRUE(replayed(new_bob_again)) << "the new bob's own record went with the dropped bob's";
}

// curl, as the README shows it, sends "Expect: 100-continue" with a body past 1 MiB and holds
// the body until it is answered: the server answers, and the 2 MiB CSV arrives whole.
TEST_F(ServeTest, CurlUploadsAreAnsweredHundredContinue) {
  Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.big (id BIGINT, note TEXT)");
  const std::string csv = dir_.Join("big.csv");
  int64_t rows = 0;
  {
    std::ofstream out(csv);
    out << "id,note\n";
    for (size_t bytes = 0; bytes < (size_t{2} << 20); ++rows) {
      const std::string line = std::to_string(rows) + "," + std::string(100, 'a' + rows % 26) + "\n";
      out << line;
      bytes += line.size();
    }
  }
  const testing::CommandResult curl =
      testing::RunCommand("curl -sS -v -X POST -H 'Authorization: Bearer " + admin_ +
                          "' -H 'Content-Type: text/csv' -H 'Idempotency-Key: curl-big' --data-binary @" + csv + " " +
                          server_->url() + "/v1/databases/d/tables/big/rows 2>&1");
  EXPECT_EQ(curl.exit_code, 0) << curl.output;
  EXPECT_NE(curl.output.find("< HTTP/1.1 100 Continue"), std::string::npos) << curl.output;
  EXPECT_NE(curl.output.find("< HTTP/1.1 200"), std::string::npos) << curl.output;
  EXPECT_EQ(CountRows("d.big"), rows);
}

// The spool files of uploads in flight when the server is killed (SIGKILL) are removed by the
// next server on the root; the upload committed nothing, and uploads work as before.
TEST_F(ServeTest, AKilledServersSpooledUploadsAreRemovedByTheNext) {
  Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT, note TEXT)");
  const std::string uploads = root_ + "/_meta/uploads";
  // The spooled bodies under `uploads` and their sizes.
  const auto spooled = [&] {
    std::map<std::string, uintmax_t> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(uploads)) {
      if (e.path().filename().string().rfind("upload-", 0) == 0) files[e.path().string()] = e.file_size();
    }
    return files;
  };
  std::string part = "id,note\n";
  for (int i = 0; part.size() < 200'000; ++i) part += std::to_string(i) + ",row " + std::to_string(i) + "\n";
  testing::TcpClient upload(static_cast<uint16_t>(server_->port()));
  ASSERT_TRUE(upload.Send("POST /v1/databases/d/tables/t/rows HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + admin_ +
                          "\r\nContent-Type: text/csv\r\nIdempotency-Key: upload-1\r\n" +
                          "Content-Length: 1000000\r\n\r\n" + part));
  bool arrived = false;
  for (int i = 0; i < 400 && !arrived; ++i) {
    for (const auto& [path, bytes] : spooled()) arrived = arrived || bytes >= part.size();
    if (!arrived) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(arrived) << "the body never reached the spool";
  const int port = server_->port();
  server_->Stop(SIGKILL);
  EXPECT_EQ(spooled().size(), 1u);  // the killed server's body stays behind it
  Start(port);
  EXPECT_TRUE(spooled().empty());
  size_t dirs = 0;
  for (const auto& e : std::filesystem::directory_iterator(uploads)) dirs += e.is_directory() ? 1 : 0;
  EXPECT_EQ(dirs, 1u);  // the running server's own
  EXPECT_EQ(CountRows("d.t"), 0);
  // The body never arrived whole, so its key was never reserved: it is free for the upload.
  auto whole = Call("POST", "/v1/databases/d/tables/t/rows", admin_, part,
                    {{"Content-Type", "text/csv"}, {"Idempotency-Key", "upload-1"}});
  EXPECT_EQ(whole.status, 200) << whole.body;
  EXPECT_GT(CountRows("d.t"), 10'000);
  EXPECT_TRUE(spooled().empty());
}

// Clients that send one header line a second never finish a header: the server cuts each off
// at its 10 s header deadline, and before that answers other clients on new connections.
TEST_F(ServeTest, SlowHeaderClientsAreCutOffWhileOthersAreServed) {
  std::vector<std::unique_ptr<testing::TcpClient>> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(std::make_unique<testing::TcpClient>(static_cast<uint16_t>(server_->port())));
    ASSERT_TRUE(slow.back()->Send("POST /v1/sql HTTP/1.1\r\nHost: t\r\n"));
  }
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    for (int s = 0; s < 30 && !stop; ++s) {
      for (auto& c : slow) c->Send("X-Drip: " + std::to_string(s) + "\r\n");
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  for (int i = 0; i < 10; ++i) {
    auto c = server::HttpClient::Connect(server_->url());
    ASSERT_TRUE(c.ok());
    auto r = (*c)->Call("GET", "/v1/databases", {{"Authorization", "Bearer " + reader_}}, "");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
  }
  // They were answered while every slow client still held its connection.
  for (auto& c : slow) EXPECT_FALSE(c->ClosedByServer(0));
  for (auto& c : slow) EXPECT_TRUE(c->ClosedByServer(30'000));
  stop = true;
  drip.join();
  EXPECT_GE(MetricValue(server_->url(), "vigil_http_connections_total{fate=\"timed_out\"}"), 8);
}

// 408, 503 and 500 answers before any effect are not kept: the same key runs the request again.
TEST_F(ServeTest, AnswersThatProveNothingHappenedAreNotKept) {
  for (const char* code : {"DEADLINE_EXCEEDED", "BUSY", "INTERNAL"}) {
    // The first keyed request fails with `code` right after its reservation.
    Restart(std::string("idempotency.after_reserve=error(") + code + ")@1");
    const std::string key = std::string("db-") + code;
    const Json body = {{"name", "db_" + AsciiLowered(code)}};
    auto failed = Post("/v1/databases", admin_, body, key);
    EXPECT_EQ(failed.status, std::string(code) == "DEADLINE_EXCEEDED" ? 408
                             : std::string(code) == "BUSY"            ? 503
                                                                      : 500)
        << failed.body;
    EXPECT_EQ(Json::parse(failed.body)["code"], code);
    auto retry = Post("/v1/databases", admin_, body, key);
    EXPECT_EQ(retry.status, 201) << code << ": " << retry.body;
    EXPECT_EQ(retry.Header("idempotency-replayed"), "");
    EXPECT_EQ(IdempotencyCount(server_->url(), "not_stored"), 1) << code;
  }
}

TEST_F(ServeTest, ADuplicateOfARequestStillRunningIs409) {
  // A slow statement under a key, and its duplicate while it runs.
  const std::string slow =
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 8000000) SELECT COUNT(*) FROM n";
  const int64_t reserved = IdempotencyCount(server_->url(), "reserved");
  ASSERT_GE(reserved, 0);
  std::thread first([&] {
    auto c = server::HttpClient::Connect(server_->url());
    ASSERT_TRUE(c.ok());
    auto r = (*c)->Call(
        "POST", "/v1/sql",
        {{"Authorization", "Bearer " + admin_}, {"Idempotency-Key", "slow-1"}, {"Content-Type", "application/json"}},
        Json{{"sql", slow}}.dump());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200) << r->body;
  });
  EXPECT_TRUE(WaitForIdempotencyCount(server_->url(), "reserved", reserved + 1));
  auto dup = Post("/v1/sql", admin_, {{"sql", slow}}, "slow-1");
  first.join();
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_EQ(dup.Header("retry-after"), "1");
  auto after = Post("/v1/sql", admin_, {{"sql", slow}}, "slow-1");
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.Header("idempotency-replayed"), "true");
}

TEST_F(ServeTest, AResultPastMaxRowsIs422ForTheCallerToNarrowNotARetry) {
  const std::string huge =
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000001) SELECT x FROM n";
  auto r = Post("/v1/sql", admin_, {{"sql", huge}});
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.Header("retry-after"), "");
  Json problem = Json::parse(r.body, nullptr, false);
  EXPECT_EQ(problem["code"], "RESOURCE_EXHAUSTED") << r.body;
  EXPECT_EQ(problem["subcode"], "RESULT_TOO_LARGE") << r.body;
  // Narrowed, the same statement runs.
  auto narrowed = Post("/v1/sql", admin_, {{"sql", huge + " LIMIT 3"}});
  EXPECT_EQ(narrowed.status, 200) << narrowed.body;
}

TEST_F(ServeTest, WhatACallerMayNotSeeReadsExactlyLikeWhatDoesNotExist) {
  ASSERT_EQ(Sql(admin_,
                "CREATE DATABASE d; CREATE DATABASE hidden; CREATE TABLE hidden.t (id BIGINT NOT NULL); "
                "CREATE TABLE d.t (id BIGINT NOT NULL)")["results"]
                .size(),
            4u);
  auto hidden = Call("GET", "/v1/databases/hidden/tables/t", alice_);
  auto missing = Call("GET", "/v1/databases/hidden/tables/nope", alice_);
  EXPECT_EQ(hidden.status, 404);
  EXPECT_EQ(missing.status, 404);
  std::string hidden_detail = Json::parse(hidden.body)["detail"];
  std::string missing_detail = Json::parse(missing.body)["detail"];
  EXPECT_EQ(hidden_detail.replace(hidden_detail.find("hidden.t"), 8, "X"),
            missing_detail.replace(missing_detail.find("hidden.nope"), 11, "X"));
  // SHOW on d lets rita read but not write; ALTER lets alice write.
  EXPECT_EQ(Call("GET", "/v1/databases/d/tables/t", reader_).status, 200);
  EXPECT_EQ(Post("/v1/databases/d/tables/t/rows", reader_, {{"rows", Json::array({{{"id", 1}}})}}, "r1").status, 403);
  EXPECT_EQ(Post("/v1/databases/d/tables/t/rows", alice_, {{"rows", Json::array({{{"id", 1}}})}}, "a1").status, 200);
  // Jobs of a table one may not see are not listed.
  auto job = Post("/v1/databases/hidden/tables/t/indexes", admin_,
                  {{"name", "i"}, {"columns", {"id"}}, {"using", "BTREE"}}, "idx-hidden");
  ASSERT_EQ(job.status, 202) << job.body;
  EXPECT_EQ(Json::parse(Call("GET", "/v1/jobs", alice_).body)["jobs"].size(), 0u);
  EXPECT_EQ(Call("GET", job.Header("location"), alice_).status, 404);
  EXPECT_EQ(Call("GET", "/v1/jobs/999999", alice_).status, 404);
}

// A revocation through the server applies to the very next request; one made beside it, in
// the root's principal store (the embedded shell, another server), within the server's one
// second of trust in a token it authenticated.
TEST_F(ServeTest, ARevokedGrantOrDisabledUserIsRefusedPromptly) {
  ASSERT_EQ(Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL)")["results"].size(), 2u);
  EXPECT_EQ(Call("GET", "/v1/databases/d/tables/t", reader_).status, 200);
  EXPECT_EQ(Post("/v1/sql", admin_, {{"sql", "REVOKE SHOW ON d.* FROM rita"}}).status, 200);
  EXPECT_EQ(Call("GET", "/v1/databases/d/tables/t", reader_).status, 404);

  EXPECT_EQ(Call("GET", "/v1/databases/d/tables/t", alice_).status, 200);
  auto root = Root::Open(root_);
  ASSERT_TRUE(root.ok());
  auto store = auth::OpenRootPrincipalStore(*root);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->SetDisabled("default", "alice", true).ok());
  // Refused once the server's trust in the token it authenticated runs out (a second).
  int status = 0;
  for (int i = 0; i < 600 && status != 401; ++i) {
    status = Call("GET", "/v1/databases/d/tables/t", alice_).status;
    if (status == 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 401);
}

// A vector query over HTTP answers exactly what the same search written in SQL answers (the
// route binds the vector as the FLOAT32s its elements read as); a value past FLOAT32's range is
// refused.
TEST_F(ServeTest, AVectorQueryAnswersWhatTheSameSqlSearchAnswers) {
  ASSERT_EQ(Sql(admin_,
                "CREATE DATABASE d; CREATE TABLE d.v (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 4) NOT NULL); "
                "INSERT INTO d.v VALUES (1, '[0.1, 0.2, 0.3, 0.4]'), (2, '[0.3, 0.1, 0.7, 0.2]'), "
                "(3, '[1e-7, 0.33333334, 2.5, -1.75]'), (4, '[0.9, 0.8, 0.7, 0.6]')")["results"]
                .size(),
            3u);
  const Json q = {0.1, 1.0 / 3.0, 0.7000000001, -1e-7};
  auto http = Post("/v1/databases/d/tables/v/query", alice_,
                   {{"vector", q}, {"column", "emb"}, {"k", 4}, {"select", {"id", "_distance"}}});
  ASSERT_EQ(http.status, 200) << http.body;
  auto sql = Sql(alice_,
                 "SELECT id, _distance FROM vector_search('d.v', 'emb', '[0.1, 0.333333343, 0.699999988, "
                 "-1.00000001e-07]', 4, '{}')");
  const Json rows = Json::parse(http.body)["rows"];
  const Json expected = sql["results"][0]["rows"];
  ASSERT_EQ(rows.size(), 4u) << http.body;
  ASSERT_EQ(expected.size(), 4u) << sql.dump();
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["id"], expected[i][0]) << i;
    EXPECT_EQ(rows[i]["_distance"], expected[i][1]) << i;
  }
  auto huge =
      Post("/v1/databases/d/tables/v/query", alice_, {{"vector", {1e39, 0, 0, 0}}, {"column", "emb"}, {"k", 1}});
  EXPECT_EQ(huge.status, 400) << huge.body;
  // The route binds only the vector: a parameter in the filter is refused, naming the field.
  auto param = Post("/v1/databases/d/tables/v/query", alice_,
                    {{"vector", q}, {"column", "emb"}, {"k", 1}, {"filter", "id = ?"}});
  EXPECT_EQ(param.status, 400) << param.body;
  EXPECT_NE(param.body.find("cannot hold parameters"), std::string::npos) << param.body;
}

// An index request whose server was SIGKILLed after its job's admission committed (the
// response never sent), and one killed right after its key was reserved: after a restart
// the server's reconciler settles both from the job store on its own, finishing the first
// with its job and freeing the second's key; the client's retries then get the one job. A
// request to a route that leaves no evidence (CREATE DATABASE) is finished as outcome unknown.
TEST_F(ServeTest, IndexRequestsCutOffBySigkillAreSettledFromTheJobStore) {
  ASSERT_EQ(Sql(admin_,
                "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, tag VARCHAR NOT NULL); "
                "INSERT INTO d.t VALUES (1, 'a'), (2, 'b')")["results"]
                .size(),
            3u);
  const Json create_id = {{"name", "id_idx"}, {"columns", {"id"}}, {"using", "BTREE"}};
  const Json create_tag = {{"name", "tag_idx"}, {"columns", {"tag"}}, {"using", "BITMAP"}};
  const std::string indexes = "/v1/databases/d/tables/t/indexes";
  CutOff("admission.after_commit=kill", indexes, create_id, "index-1");
  CutOff("idempotency.after_reserve=kill", indexes, create_tag, "index-2");
  CutOff("idempotency.after_reserve=kill", "/v1/databases", {{"name", "e"}}, "db-1");
  Restart();
  // No retry yet: the reconciler settles each once its reservation is stale.
  ExpectSettledOnce({"settled_found", "settled_released", "settled_unknown"});
  // The database request's retry gets the same stable answer, and nothing runs again.
  for (int i = 0; i < 2; ++i) {
    auto db = Post("/v1/databases", alice_, {{"name", "e"}}, "db-1");
    EXPECT_EQ(db.status, 409) << db.body;
    EXPECT_EQ(Json::parse(db.body)["code"], "IDEMPOTENCY_OUTCOME_UNKNOWN") << db.body;
    EXPECT_EQ(db.Header("idempotency-replayed"), "true");
  }
  // The admitted request replays its job; the other runs now, once.
  auto first = Post("/v1/databases/d/tables/t/indexes", alice_, create_id, "index-1");
  EXPECT_EQ(first.status, 202) << first.body;
  EXPECT_EQ(first.Header("idempotency-replayed"), "true");
  EXPECT_NE(Json::parse(first.body)["message"].get<std::string>().find("settled after the server restarted"),
            std::string::npos)
      << first.body;
  auto second = Post("/v1/databases/d/tables/t/indexes", alice_, create_tag, "index-2");
  EXPECT_EQ(second.status, 202) << second.body;
  EXPECT_EQ(second.Header("idempotency-replayed"), "");
  auto again = Post("/v1/databases/d/tables/t/indexes", alice_, create_tag, "index-2");
  EXPECT_EQ(again.Header("idempotency-replayed"), "true");
  EXPECT_EQ(again.Header("vigil-job-id"), second.Header("vigil-job-id"));
  Json jobs = Sql(admin_, "SELECT JobId, IndexName FROM vigil_index_jobs ORDER BY JobId");
  std::vector<std::string> names;
  for (const Json& row : jobs["results"][0]["rows"]) names.push_back(row[1].get<std::string>());
  EXPECT_EQ(names, (std::vector<std::string>{"id_idx", "tag_idx"})) << jobs.dump();
  EXPECT_EQ(first.Header("vigil-job-id"), jobs["results"][0]["rows"][0][0].dump());
  EXPECT_EQ(second.Header("vigil-job-id"), jobs["results"][0]["rows"][1][0].dump());
}

// An append whose server was SIGKILLed once its commit was durable (the response never sent),
// and one killed before its commit: after a restart the reconciler settles both from the
// table's history on its own, finishing the first with its commit and freeing the second's
// key; the retries then replay the first and run the second, so each batch is there once.
TEST_F(ServeTest, AppendsCutOffBySigkillAreSettledFromTheTablesHistory) {
  Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL)");
  const Json batch_a = {{"rows", Json::array({{{"id", 1}}, {{"id", 2}}, {{"id", 3}}})}};
  const Json batch_b = {{"rows", Json::array({{{"id", 4}}, {{"id", 5}}})}};
  const std::string rows = "/v1/databases/d/tables/t/rows";
  CutOff("commit.after_dir_sync=kill", rows, batch_a, "rows-a");
  CutOff("commit.after_fragments=kill", rows, batch_b, "rows-b");
  Restart();
  EXPECT_EQ(CountRows("d.t"), 3);  // a committed, b did not
  ExpectSettledOnce({"settled_found", "settled_released"});
  auto a = Post(rows, alice_, batch_a, "rows-a");
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.Header("idempotency-replayed"), "true");
  EXPECT_NE(a.body.find("settled after the server restarted"), std::string::npos) << a.body;
  auto b = Post(rows, alice_, batch_b, "rows-b");
  EXPECT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(b.Header("idempotency-replayed"), "");
  EXPECT_EQ(Post(rows, alice_, batch_b, "rows-b").Header("idempotency-replayed"), "true");
  EXPECT_EQ(CountRows("d.t"), 5);
}

TEST_F(ServeTest, AcknowledgedAppendsSurviveASigkillOfTheServerExactlyOnceUnderReads) {
  ASSERT_EQ(Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT, writer BIGINT)")["results"].size(), 2u);
  constexpr int kWriters = 3;
  std::atomic<bool> stop{false};
  std::vector<std::vector<int64_t>> acked(kWriters);
  std::vector<std::atomic<int>> acked_count(kWriters);  // acked[w].size(), read while writers run
  std::vector<int> gave_up(kWriters, 0);
  std::vector<std::string> last_answer(kWriters);
  std::vector<std::thread> writers;
  const std::string url = server_->url();
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int64_t i = 0; !stop.load(); ++i) {
        const Json body = {{"rows", Json::array({{{"id", i}, {"writer", w}}})}};
        const std::string key = "w" + std::to_string(w) + "-" + std::to_string(i);
        // Like a careful client: the same request under the same key until it is answered.
        bool done = false;
        for (int attempt = 0; attempt < 1200 && !done; ++attempt) {
          auto c = server::HttpClient::Connect(url, std::chrono::seconds(10));
          if (c.ok()) {
            auto r = (*c)->Call(
                "POST", "/v1/databases/d/tables/t/rows",
                {{"Authorization", "Bearer " + alice_}, {"Idempotency-Key", key}, {"Content-Type", "application/json"}},
                body.dump());
            done = r.ok() && r->status == 200;
            last_answer[w] = r.ok() ? std::to_string(r->status) + " " + r->body : r.status().ToString();
          }
          if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (!done) {
          ++gave_up[w];
          return;
        }
        acked[w].push_back(i);
        ++acked_count[w];
      }
    });
  }
  // Readers beside the writers: every answer they get is a consistent count (never an error
  // other than a lost connection while the server is down).
  std::atomic<int> reads_ok{0}, reads_bad{0};
  for (int r = 0; r < 2; ++r) {
    writers.emplace_back([&] {
      while (!stop.load()) {
        auto c = server::HttpClient::Connect(url, std::chrono::seconds(5));
        if (!c.ok()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        auto q = (*c)->Call("POST", "/v1/databases/d/tables/t/query",
                            {{"Authorization", "Bearer " + reader_}, {"Content-Type", "application/json"}},
                            Json{{"select", {"id"}}, {"limit", 100000}}.dump());
        if (!q.ok()) continue;  // the server went away mid-request
        if (q->status == 200 && Json::parse(q->body, nullptr, false).contains("rows")) {
          ++reads_ok;
        } else {
          ++reads_bad;
        }
      }
    });
  }
  // Each writer has appended `at_least` rows, or `within` passed.
  const auto await_appends = [&](int at_least, std::chrono::seconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    for (int w = 0; w < kWriters; ++w) {
      while (acked_count[w].load() < at_least && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  };
  await_appends(3, std::chrono::seconds(120));
  const int port = server_->port();
  server_->Stop(SIGKILL);
  int at_kill = 0;
  for (int w = 0; w < kWriters; ++w) at_kill = std::max(at_kill, acked_count[w].load());
  ServeProcess restarted(root_, port);
  ASSERT_EQ(restarted.port(), port);
  // Writers whose request was cut off by the kill get it settled once its reservation is stale
  // (kStaleSeconds), then go on: each appends two more rows past the most any had at the kill.
  await_appends(at_kill + 2, std::chrono::seconds(120 + kStaleSeconds));
  stop.store(true);
  for (auto& t : writers) t.join();
  EXPECT_GT(reads_ok.load(), 0);
  EXPECT_EQ(reads_bad.load(), 0);
  auto c = server::HttpClient::Connect(restarted.url());
  ASSERT_TRUE(c.ok());
  client_ = std::move(*c);
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_EQ(gave_up[w], 0) << "writer " << w << " never got an answer; the last: " << last_answer[w];
    ASSERT_GT(acked[w].size(), 2u);
    Json got = Sql(admin_, "SELECT id FROM d.t WHERE writer = " + std::to_string(w) + " ORDER BY id");
    std::vector<int64_t> ids;
    for (const Json& row : got["results"][0]["rows"]) ids.push_back(row[0].get<int64_t>());
    EXPECT_EQ(ids, acked[w]) << "writer " << w << ": every acknowledged row exactly once, nothing else";
  }
}

// Eight clients append to one table at once, each round started together, half through SQL
// INSERT and half through the rows route: every append is answered 200 (a lost commit race
// rebases, it is not the caller's to retry) and every row is stored exactly once.
TEST_F(ServeTest, EightWritersRacingAppendsThroughSqlAndTheRowsRouteAllCommitOnce) {
  ASSERT_EQ(Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT, writer BIGINT)")["results"].size(), 2u);
  constexpr int kWriters = 8;
  constexpr int kRounds = 40;
  std::barrier round(kWriters);
  std::vector<std::vector<std::string>> failures(kWriters);
  std::vector<std::thread> writers;
  const std::string url = server_->url();
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      auto c = server::HttpClient::Connect(url, std::chrono::seconds(30));
      for (int i = 0; i < kRounds; ++i) {
        round.arrive_and_wait();
        if (!c.ok()) continue;
        const Headers h = {{"Authorization", "Bearer " + alice_},
                           {"Content-Type", "application/json"},
                           {"Idempotency-Key", "race-" + std::to_string(w) + "-" + std::to_string(i)}};
        auto r = w % 2 == 0 ? (*c)->Call("POST", "/v1/sql", h,
                                         Json{{"sql", "INSERT INTO d.t VALUES (" + std::to_string(i) + ", " +
                                                          std::to_string(w) + ")"}}
                                             .dump())
                            : (*c)->Call("POST", "/v1/databases/d/tables/t/rows", h,
                                         Json{{"rows", Json::array({{{"id", i}, {"writer", w}}})}}.dump());
        if (!r.ok() || r->status != 200) {
          failures[w].push_back(r.ok() ? std::to_string(r->status) + " " + r->body : r.status().ToString());
        }
      }
      if (!c.ok()) failures[w].push_back(c.status().ToString());
    });
  }
  for (auto& t : writers) t.join();
  std::vector<int64_t> all(kRounds);
  std::iota(all.begin(), all.end(), 0);
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_TRUE(failures[w].empty()) << "writer " << w << ": " << failures[w].size()
                                     << " appends failed; the first: " << failures[w].front();
    Json got = Sql(admin_, "SELECT id FROM d.t WHERE writer = " + std::to_string(w) + " ORDER BY id");
    std::vector<int64_t> ids;
    for (const Json& row : got["results"][0]["rows"]) ids.push_back(row[0].get<int64_t>());
    EXPECT_EQ(ids, all) << "writer " << w << ": each of its rows exactly once";
  }
  EXPECT_EQ(CountRows("d.t"), kWriters * kRounds);
}

// An append names an existing table: a misspelt table or database is 404 and creates nothing
// (neither the table nor its database), whatever the body's format.
TEST_F(ServeTest, AnAppendToAMissingTableIs404AndCreatesNothing) {
  ASSERT_EQ(Sql(admin_, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT)")["results"].size(), 2u);
  auto json_rows = Post("/v1/databases/d/tables/tt/rows", alice_, {{"rows", {{{"id", 1}}}}}, "k-json");
  EXPECT_EQ(json_rows.status, 404) << json_rows.body;
  EXPECT_EQ(Json::parse(json_rows.body, nullptr, false)["code"], "NOT_FOUND") << json_rows.body;
  EXPECT_NE(json_rows.body.find("local.d.tt does not exist"), std::string::npos) << json_rows.body;
  auto csv = Call("POST", "/v1/databases/d/tables/tt/rows", alice_, "id\n1\n",
                  {{"Content-Type", "text/csv"}, {"Idempotency-Key", "k-csv"}});
  EXPECT_EQ(csv.status, 404) << csv.body;
  auto other_db = Call("POST", "/v1/databases/e/tables/t/rows", admin_, "id\n1\n",
                       {{"Content-Type", "text/csv"}, {"Idempotency-Key", "k-db"}});
  EXPECT_EQ(other_db.status, 404) << other_db.body;
  EXPECT_EQ(Sql(admin_, "SHOW TABLES FROM d")["results"][0]["rows"], Json::parse(R"([["t"]])"));
  EXPECT_EQ(Call("GET", "/v1/databases/e/tables", admin_).status, 404);
  // The table it meant takes the same rows.
  auto ok = Post("/v1/databases/d/tables/t/rows", alice_, {{"rows", {{{"id", 1}}}}}, "k-right");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(CountRows("d.t"), 1);
}

// A script runs up to its first failing statement, whose problem names it and carries the
// results before it; a syntax error anywhere is found before anything runs.
TEST_F(ServeTest, AScriptStopsAtItsFirstFailureAndASyntaxErrorRunsNothing) {
  auto failed =
      Post("/v1/sql", admin_,
           {{"sql", "CREATE DATABASE d; SELECT * FROM d.nope; CREATE TABLE d.u (id BIGINT)"}, {"script", true}});
  EXPECT_EQ(failed.status, 404) << failed.body;
  Json problem = Json::parse(failed.body, nullptr, false);
  EXPECT_EQ(problem["statement_index"], 1) << failed.body;
  ASSERT_EQ(problem["results"].size(), 1u) << failed.body;
  EXPECT_EQ(problem["results"][0]["message"], "database d created");
  auto syntax = Post("/v1/sql", admin_, {{"sql", "CREATE TABLE d.t (id BIGINT);\nSELEC 1"}, {"script", true}});
  EXPECT_EQ(syntax.status, 400) << syntax.body;
  EXPECT_EQ(Json::parse(syntax.body, nullptr, false)["detail"], "line 2, column 1: expected a statement, found SELEC");
  EXPECT_EQ(Sql(admin_, "SHOW TABLES FROM d")["results"][0]["rows"], Json::array()) << "nothing ran";
}

// A vector comes back as the array of its elements, the same in POST /v1/sql and the query
// route, each element reading back as the stored FLOAT32 (even 7.0385307e-26, whose
// shortest digits would not through a double); the array a client reads is what it writes.
TEST_F(ServeTest, AVectorComesBackAsItsElementsAndGoesBackInAsThem) {
  Sql(admin_,
      "CREATE DATABASE d; CREATE TABLE d.w (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 3), h VECTOR(FLOAT16, 2)); "
      "CREATE TABLE d.copy (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 3), h VECTOR(FLOAT16, 2)); "
      "INSERT INTO d.w VALUES (1, '[0.1, 7.03853069e-26, -2.5e20]', '[1, 0.5]'), (2, NULL, NULL)");
  const std::string text = "[0.1,7.03853069e-26,-2.5e+20]";
  auto sql = Post("/v1/sql", alice_, {{"sql", "SELECT id, emb, h, length(emb) AS bytes FROM d.w ORDER BY id"}});
  ASSERT_EQ(sql.status, 200) << sql.body;
  EXPECT_NE(sql.body.find("[1," + text + ",[1,0.5],12]"), std::string::npos) << sql.body;
  EXPECT_NE(sql.body.find("[2,null,null,null]"), std::string::npos) << sql.body;
  const Json all = {"id", "emb", "h"};
  auto scan = Post("/v1/databases/d/tables/w/query", alice_, {{"filter", "id = 1"}, {"select", all}});
  ASSERT_EQ(scan.status, 200) << scan.body;
  EXPECT_EQ(scan.body, "{\"columns\":[\"id\",\"emb\",\"h\"],\"rows\":[{\"emb\":" + text + ",\"h\":[1,0.5],\"id\":1}]}");
  const Json row = Json::parse(scan.body)["rows"][0];
  const float expected[] = {0.1f, 7.0385307e-26f, -2.5e20f};
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(static_cast<float>(row["emb"][i].get<double>()), expected[i]) << i;
  // What was read goes back in through the rows route unchanged.
  auto append = Post("/v1/databases/d/tables/copy/rows", alice_, {{"rows", Json::array({row})}}, "k-copy");
  ASSERT_EQ(append.status, 200) << append.body;
  auto copied = Post("/v1/databases/d/tables/copy/query", alice_, {{"filter", "id = 1"}, {"select", all}});
  EXPECT_EQ(copied.body, scan.body);
}

TEST_F(ServeTest, AQueryAnswersVectorsOnlyWhenItsSelectNamesThem) {
  Sql(admin_,
      "CREATE DATABASE d; CREATE TABLE d.v (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 2) NOT NULL, \"order\" TEXT, "
      "h VECTOR(FLOAT16, 2)); INSERT INTO d.v VALUES (1, '[0, 0]', 'a', '[1, 1]'), (2, '[3, 4]', 'b', NULL); "
      "CREATE TABLE d.only (emb VECTOR(FLOAT32, 2)); INSERT INTO d.only VALUES ('[0.5, 1]'); "
      "CREATE DATABASE e; CREATE TABLE e.v (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 2) NOT NULL)");
  const Json search = {{"vector", {3, 4}}, {"column", "emb"}, {"k", 1}};
  auto plain = Post("/v1/databases/d/tables/v/query", alice_, search);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.body,
            "{\"columns\":[\"id\",\"order\",\"_distance\"],\"rows\":[{\"_distance\":0.0,\"id\":2,"
            "\"order\":\"b\"}]}");
  Json named = search;
  named["select"] = {"id", "emb", "h", "_distance"};
  auto with = Post("/v1/databases/d/tables/v/query", alice_, named);
  EXPECT_EQ(with.body,
            "{\"columns\":[\"id\",\"emb\",\"h\",\"_distance\"],\"rows\":[{\"_distance\":0.0,"
            "\"emb\":[3,4],\"h\":null,\"id\":2}]}");
  auto scan = Post("/v1/databases/d/tables/v/query", alice_, {{"filter", "id = 1"}});
  EXPECT_EQ(scan.body, "{\"columns\":[\"id\",\"order\"],\"rows\":[{\"id\":1,\"order\":\"a\"}]}");
  auto only = Post("/v1/databases/d/tables/only/query", alice_, Json::object());
  EXPECT_EQ(only.body, "{\"columns\":[\"emb\"],\"rows\":[{\"emb\":[0.5,1]}]}");
  // A table the caller may not see reads as a missing one, with or without "select".
  auto hidden = Post("/v1/databases/e/tables/v/query", reader_, search);
  auto missing = Post("/v1/databases/e/tables/nope/query", reader_, search);
  EXPECT_EQ(hidden.status, 404) << hidden.body;
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_EQ(Json::parse(hidden.body)["code"], Json::parse(missing.body)["code"]);
}

// Every job JSON carries the job-state vocabulary of jobs/job_state.h, for the job's own state:
// the detail, the listing and GET /v1/config's lists agree with the C++ predicates, through a
// PENDING, a CANCELLED, a FINISHED and an OUTCOME_UNKNOWN job resolved by FORCE_RELEASE.
TEST_F(ServeTest, EveryJobJsonCarriesTheStateVocabularyOfJobState) {
  const auto names = [](const std::vector<std::string_view>& v) {
    Json out = Json::array();
    for (std::string_view n : v) out.push_back(std::string(n));
    return out;
  };
  const Json config = Json::parse(Call("GET", "/v1/config", reader_).body);
  EXPECT_EQ(config["job_states"]["all"], names(jobs::DerivedStateNames()));
  EXPECT_EQ(config["job_states"]["final"], names(jobs::FinalStateNames()));
  EXPECT_EQ(config["job_states"]["fence_holding"], names(jobs::FenceHoldingStateNames()));
  EXPECT_EQ(config["job_states"]["resolvable"], Json::array({"OUTCOME_UNKNOWN"}));
  // The flags of `job` (a detail's "job" object or a listing row) against job_state.h.
  const auto expect_flags = [](const Json& flags, const Json& job, bool final, bool holds, bool resolvable) {
    const std::string state = job["State"], disposition = job["Disposition"];
    EXPECT_EQ(flags["final"], final) << state;
    EXPECT_EQ(flags["holds_fence"], holds) << state;
    EXPECT_EQ(flags["resolvable"], resolvable) << state;
    EXPECT_EQ(flags["final"], jobs::IsFinalStateName(state)) << state;
    EXPECT_EQ(flags["holds_fence"], jobs::HoldsFenceStateName(state, disposition)) << state << " " << disposition;
    EXPECT_EQ(flags["resolvable"], jobs::IsResolvableStateName(state, disposition)) << state << " " << disposition;
  };
  const auto detail_and_row = [&](const std::string& location) {
    const Json detail = Json::parse(Call("GET", location, reader_).body);
    const std::string id = location.substr(location.rfind('/') + 1);
    const Json page =
        Json::parse(Call("GET", "/v1/jobs?after=" + std::to_string(std::stoll(id) - 1) + "&limit=1", reader_).body);
    EXPECT_EQ(page["jobs"].size(), 1u) << page.dump();
    return std::make_pair(detail, page["jobs"].empty() ? Json::object() : page["jobs"][0]);
  };
  Sql(admin_,
      "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, k STRING NOT NULL); "
      "INSERT INTO d.t VALUES (1, 'a'), (2, 'b')");

  // PENDING (the dispatcher is held before its dispatch, never released), then CANCELLED.
  const std::string held = dir_.Join("dispatch-vocabulary");
  Restart("runner.before_dispatch=pause(" + held + ")");
  auto pending = Post("/v1/databases/d/tables/t/indexes", alice_,
                      {{"name", "id_idx"}, {"columns", {"id"}}, {"using", "BTREE"}}, "index-pending");
  ASSERT_EQ(pending.status, 202) << pending.body;
  ASSERT_TRUE(testing::AwaitFile(held + ".reached")) << "the dispatcher never picked the job";
  auto [p, p_row] = detail_and_row(pending.Header("location"));
  ASSERT_EQ(p["job"]["State"], "PENDING") << p.dump();
  expect_flags(p, p["job"], false, true, false);
  expect_flags(p_row, p_row, false, true, false);
  ASSERT_EQ(Post(pending.Header("location") + "/cancel", alice_, Json::object(), "cancel-pending").status, 200);
  auto [c, c_row] = detail_and_row(pending.Header("location"));
  ASSERT_EQ(c["job"]["State"], "CANCELLED") << c.dump();
  expect_flags(c, c["job"], true, false, false);
  expect_flags(c_row, c_row, true, false, false);
  server_->Stop(SIGKILL);  // the dispatcher is still held

  // FINISHED.
  Start();
  auto finished = Post("/v1/databases/d/tables/t/indexes", alice_,
                       {{"name", "k_idx"}, {"columns", {"k"}}, {"using", "BITMAP"}}, "index-finished");
  ASSERT_EQ(finished.status, 202) << finished.body;
  auto waited = Call("POST", finished.Header("location") + "/wait?timeout_s=120", alice_);
  ASSERT_EQ(waited.status, 200) << waited.body;
  expect_flags(Json::parse(waited.body), Json::parse(waited.body)["job"], true, false, false);
  auto [f, f_row] = detail_and_row(finished.Header("location"));
  ASSERT_EQ(f["job"]["State"], "FINISHED") << f.dump();
  expect_flags(f, f["job"], true, false, false);
  expect_flags(f_row, f_row, true, false, false);

  // OUTCOME_UNKNOWN: the provider fails after writing and the reconciler's first examination
  // stops after the termination proof, its next due in an hour; then FORCE_RELEASE.
  {
    std::ifstream in(root_ + "/vigil.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"# reconcile_initial_backoff_seconds = \"30s\"",
                                              "reconcile_initial_backoff_seconds = \"1h\""},
          {"# reconcile_max_backoff_seconds = \"30m\"", "reconcile_max_backoff_seconds = \"2h\""}}) {
      ASSERT_NE(toml.find(from), std::string::npos) << from;
      toml.replace(toml.find(from), from.size(), to);
    }
    std::ofstream(root_ + "/vigil.toml") << toml;
  }
  Restart("provider.after_segment_write=error;reconcile.after_termination_proof=error");
  auto unknown = Post("/v1/databases/d/tables/t/indexes", alice_,
                      {{"name", "id2_idx"}, {"columns", {"id"}}, {"using", "BTREE"}}, "index-unknown");
  ASSERT_EQ(unknown.status, 202) << unknown.body;
  const std::string at = unknown.Header("location");
  Json u;
  for (int i = 0; i < 600 && (u.is_null() || u["job"]["State"] != "OUTCOME_UNKNOWN"); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    u = Json::parse(Call("GET", at, reader_).body);
  }
  ASSERT_EQ(u["job"]["State"], "OUTCOME_UNKNOWN") << u.dump();
  expect_flags(u, u["job"], true, true, true);
  EXPECT_FALSE(u["settled"].get<bool>());
  auto resolved =
      Post(at + "/resolve", alice_, {{"action", "FORCE_RELEASE"}, {"comment", "checked by hand"}}, "resolve-unknown");
  ASSERT_EQ(resolved.status, 200) << resolved.body;
  const Json r = Json::parse(resolved.body);
  ASSERT_EQ(r["job"]["Disposition"], "FORCE_RELEASED") << r.dump();
  expect_flags(r, r["job"], true, false, false);
  EXPECT_TRUE(r["settled"].get<bool>());
  auto [after, after_row] = detail_and_row(at);
  expect_flags(after_row, after_row, true, false, false);
}

}  // namespace
}  // namespace vigil

// Several `vigil serve` nodes on one root whose metadata lives in PostgreSQL
// (the throwaway server of the vigil_pg fixture), each a real process on
// loopback: one leads and the others stand by; a leader killed with SIGKILL is
// replaced once its lease lapses (never before) and the jobs admitted after
// it finish; a leader stopped with SIGSTOP past its lease fences itself when
// it wakes, says so in its log, and never takes the lease back.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "cli/serve_fixture.h"
#include "testutil/await_file.h"
#include "testutil/run_command.h"
#include "testutil/temp_dir.h"
#include "testutil/test_database.h"
#include "vigil/jobs/job_store.h"
#include "vigil/server/http_client.h"

namespace vigil {
namespace {

using Json = nlohmann::json;

// A fresh database on the server of `admin` (a libpq conninfo; default: the test server) and
// its postgresql:// URL (Unix socket as `host`).
class ClusterDatabase {
 public:
  explicit ClusterDatabase(Result<std::string> admin = testing::PgTestConninfo()) {
    if (!admin.ok()) {
      error_ = admin.status().ToString();
      return;
    }
    std::map<std::string, std::string> kv;
    std::istringstream in(*admin);
    std::string pair;
    while (in >> pair) {
      const size_t eq = pair.find('=');
      if (eq != std::string::npos) kv[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
    name_ = "vigil_c_" + Uuid::Generate().ToString().substr(0, 8);
    auto db = meta::Database::Open(*admin);
    if (!db.ok()) {
      error_ = db.status().ToString();
      return;
    }
    admin_ = std::move(*db);
    auto conn = admin_->Acquire();
    Status st = conn.ok() ? (*conn)->ExecuteScript("CREATE DATABASE " + name_) : conn.status();
    if (!st.ok()) {
      error_ = st.ToString();
      return;
    }
    std::string host;
    for (char ch : kv["host"]) host += ch == '/' ? std::string("%2F") : std::string(1, ch);
    url_ = "postgresql://" + kv["user"] + "@/" + name_ + "?host=" + host + "&port=" + kv["port"];
  }
  ~ClusterDatabase() {
    if (!admin_) return;
    auto conn = admin_->Acquire();
    if (conn.ok()) (void)(*conn)->ExecuteScript("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  const std::string& url() const { return url_; }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<meta::Database> admin_;
  std::string name_;
  std::string url_;
  std::string error_;
};

std::string RunCapture(const std::string& cmd) { return testing::RunCommand(cmd).output; }

// `vigil init --meta-url`, a 3-second leader lease in vigil.toml; the administrator token.
std::string InitSharedRoot(const std::string& root, const std::string& url) {
  const std::string out = RunCapture("env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) + " init " + root +
                                     " --meta-url '" + url + "' 2>&1");
  std::ifstream in(root + "/vigil.toml");
  std::stringstream text;
  text << in.rdbuf();
  std::string toml = text.str();
  const std::string lease = "# leader_lease_seconds = \"30s\"\n";
  const size_t at = toml.find(lease);
  if (at == std::string::npos) return "";
  toml.replace(at, lease.size(), "leader_lease_seconds = \"3s\"\n");
  std::ofstream(root + "/vigil.toml") << toml;
  std::smatch m;
  static const std::regex kToken("vgl_[0-9a-f]{16}_[0-9a-f]{64}");
  return std::regex_search(out, m, kToken) ? m.str() : out;
}

// The nodes' jobs.leader_lease_seconds (set by InitSharedRoot).
constexpr int64_t kLeaseMs = 3000;

// One `vigil serve` node: stdout read for its port, stderr (its log) kept in a file.
class Node {
 public:
  // `failpoints`: the node's VIGIL_FAILPOINTS, which its workers inherit; `extra`: more
  // arguments of `vigil serve`.
  Node(const std::string& root, const std::string& id, const std::string& log, const std::string& failpoints = "",
       const std::vector<std::string>& extra = {})
      : log_(log) {
    std::vector<std::string> args = {VIGIL_CLI_BINARY, "--root",    root, "serve",   "--listen",
                                     "127.0.0.1:0",    "--node-id", id,   "--grace", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(err, STDERR_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      ::unsetenv("VIGIL_ROOT");
      ::setenv("VIGIL_LOG", "info", 1);  // role changes are logged at info
      if (!failpoints.empty()) ::setenv("VIGIL_FAILPOINTS", failpoints.c_str(), 1);
      ::execv(VIGIL_CLI_BINARY, argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    out_ = ::fdopen(out[0], "r");
    char line[512];
    static const std::regex kListening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    while (out_ != nullptr && std::fgets(line, sizeof(line), out_) != nullptr) {
      std::cmatch m;
      if (std::regex_search(line, m, kListening)) {
        port_ = std::stoi(m[1].str());
        break;
      }
    }
  }
  ~Node() { Stop(SIGTERM); }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  pid_t pid() const { return pid_; }
  // Whether the process has exited (reaped here); waits up to `seconds` for it.
  bool WaitForExit(int seconds) {
    for (int i = 0; i < seconds * 20 && pid_ > 0; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        if (out_ != nullptr) std::fclose(out_);
        out_ = nullptr;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pid_ <= 0;
  }
  int port() const { return port_; }
  bool running() const { return pid_ > 0; }
  void Signal(int sig) const { ::kill(pid_, sig); }
  void Stop(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (out_ != nullptr) std::fclose(out_);
    out_ = nullptr;
  }
  std::string Log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  FILE* out_ = nullptr;
};

class ServeClusterTest : public ::testing::Test {
 protected:
  // The libpq conninfo of the server the root's database is made on.
  virtual Result<std::string> ServerConninfo() { return testing::PgTestConninfo(); }

  void SetUp() override {
    db_ = std::make_unique<ClusterDatabase>(ServerConninfo());
    ASSERT_TRUE(db_->error().empty()) << db_->error();
    root_ = dir_.Join("root");
    token_ = InitSharedRoot(root_, db_->url());
    ASSERT_EQ(token_.rfind("vgl_", 0), 0u) << "vigil init --meta-url: " << token_;
    jobs::JobStoreOptions o;
    o.uri = db_->url();
    auto store = jobs::JobStore::Open(o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  // Replaces the line `from` of the root's vigil.toml by `to`.
  void SetSetting(const std::string& from, const std::string& to) {
    std::ifstream in(root_ + "/vigil.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    const size_t at = toml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    toml.replace(at, from.size(), to);
    std::ofstream(root_ + "/vigil.toml") << toml;
  }

  void StartNodes(int n, const std::string& failpoints = "", const std::vector<std::string>& extra = {}) {
    for (int i = 0; i < n; ++i) {
      const std::string id = "node" + std::to_string(nodes_.size());
      nodes_.push_back(std::make_unique<Node>(root_, id, dir_.Join(id + ".log"), failpoints, extra));
      ASSERT_GT(nodes_.back()->port(), 0) << nodes_.back()->Log();
    }
  }

  // The node whose process holds a live lease, waiting up to `seconds` for one that is not
  // `other_than`; -1 when none does.
  int WaitForLeader(int seconds, int other_than = -1) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
      auto lease = store_->cluster().GetLeader();
      auto now = store_->cluster().LeaseClockMs(0);
      if (lease.ok() && now.ok() && lease->Live(*now)) {
        for (size_t i = 0; i < nodes_.size(); ++i) {
          const std::string pid = ":" + std::to_string(nodes_[i]->pid()) + ":";
          if (nodes_[i]->running() && lease->holder.find(pid) != std::string::npos &&
              static_cast<int>(i) != other_than) {
            return static_cast<int>(i);
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  // The lease once it has been renewed `terms` lease terms (of 3 s) past `held`'s expiry, or has
  // changed hands, or 60 s passed: proves a holder kept its lease over that many terms.
  jobs::LeaderLease LeaseAfterTerms(const jobs::LeaderLease& held, int terms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    jobs::LeaderLease now_held = held;
    while (std::chrono::steady_clock::now() < until) {
      auto lease = store_->cluster().GetLeader();
      if (lease.ok()) now_held = *lease;
      if (now_held.epoch != held.epoch || now_held.expires_at_ms >= held.expires_at_ms + terms * kLeaseMs) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return now_held;
  }

  // A file under the test's directory for a failpoint's pause or signal.
  std::string Hold(const std::string& name) { return dir_.Join(name); }
  static void Release(const std::string& path) { std::ofstream(path).flush(); }

  // The sum over the running nodes of the /metrics sample `series` (each node counts what its
  // own leaderships did); a node whose metrics cannot be read adds nothing.
  int64_t MetricSum(const std::string& series) {
    int64_t sum = 0;
    for (const auto& node : nodes_) {
      if (!node->running()) continue;
      sum += std::max<int64_t>(0, MetricValue("http://127.0.0.1:" + std::to_string(node->port()), series));
    }
    return sum;
  }

  Json Sql(int node, const std::string& sql) {
    auto client = server::HttpClient::Connect("http://127.0.0.1:" + std::to_string(nodes_[node]->port()));
    if (!client.ok()) return Json{{"error", client.status().ToString()}};
    auto r = (*client)->Call("POST", "/v1/sql",
                             {{"Authorization", "Bearer " + token_}, {"Content-Type", "application/json"}},
                             Json{{"sql", sql}, {"script", true}}.dump());
    if (!r.ok()) return Json{{"error", r.status().ToString()}};
    Json body = Json::parse(r->body, nullptr, false);
    body["http_status"] = r->status;
    return body;
  }

  // Admits a BTREE index through `node`; its job id, or the answer when none was admitted.
  std::string CreateIndex(int node, const std::string& name) {
    Json admitted = Sql(node, "CREATE INDEX " + name + " ON d.t (id) USING BTREE");
    const Json& jobs = admitted["results"][0]["admitted_jobs"];
    if (admitted.value("http_status", 0) != 200 || jobs.size() != 1) return admitted.dump();
    return std::to_string(jobs[0].get<int64_t>());
  }

  // The text of `item` (State, Outcome, ...) in SHOW INDEX JOB `job` through `node` ("" when
  // it cannot be read or is NULL).
  std::string JobItem(int node, const std::string& job, const std::string& item) {
    Json shown = Sql(node, "SHOW INDEX JOB " + job);
    if (shown.value("http_status", 0) != 200) return "";
    for (const Json& row : shown["results"][0]["rows"]) {  // Item | Value
      if (row[0] == item) return row[1].is_string() ? row[1].get<std::string>() : "";
    }
    return "";
  }
  std::string JobState(int node, const std::string& job) { return JobItem(node, job, "State"); }

  // The logical indexes of d.t named `name`, through `node` (-1 when they cannot be read).
  int64_t IndexesNamed(int node, const std::string& name) {
    Json named = Sql(node, "SELECT count(*) FROM vigil_indexes('d.t') WHERE IndexName = '" + name + "'");
    return named.value("http_status", 0) == 200 ? named["results"][0]["rows"][0][0].get<int64_t>() : -1;
  }

  // Waits up to 30 s for `job` to run; its state then.
  std::string WaitForRunning(int node, const std::string& job) {
    std::string state;
    for (int i = 0; i < 600 && state != "RUNNING"; ++i) {
      state = JobState(node, job);
      if (state != "RUNNING") std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return state;
  }

  // Waits up to `seconds` for job `job` to end (`settled`: and to leave OUTCOME_UNKNOWN); its
  // State.
  std::string WaitForJob(int node, const std::string& job, int seconds = 60, bool settled = false) {
    std::string state;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
      state = JobState(node, job);
      const bool open = state.empty() || state == "PENDING" || state == "RUNNING" || state == "REFRESHING" ||
                        (settled && state == "OUTCOME_UNKNOWN");
      if (!open) return state;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "still " + state;
  }

  std::string CreateIndexAndWait(int node, const std::string& name) {
    const std::string job = CreateIndex(node, name);
    if (job.empty() || !std::isdigit(static_cast<unsigned char>(job[0]))) return job;
    return WaitForJob(node, job);
  }

  // GET /readyz of `node`: its status (0 when unreachable) and body.
  std::pair<int, Json> Readiness(int node) {
    auto client = server::HttpClient::Connect("http://127.0.0.1:" + std::to_string(nodes_[node]->port()));
    if (!client.ok()) return {0, Json()};
    auto r = (*client)->Call("GET", "/readyz");
    if (!r.ok()) return {0, Json()};
    return {r->status, Json::parse(r->body, nullptr, false)};
  }
  int Ready(int node) { return Readiness(node).first; }

  // SHOW NODES through `node`: node id -> its row as column name -> value.
  std::map<std::string, Json> Nodes(int node) {
    std::map<std::string, Json> out;
    Json shown = Sql(node, "SHOW NODES");
    if (shown.value("http_status", 0) != 200) return out;
    const Json& r = shown["results"][0];
    for (const Json& row : r["rows"]) {
      Json named;
      for (size_t c = 0; c < r["columns"].size(); ++c) named[r["columns"][c].get<std::string>()] = row[c];
      out[row[0].get<std::string>()] = named;
    }
    return out;
  }

  // Waits up to `seconds` until SHOW NODES through `via` gives `id` the role `role`.
  bool WaitForRole(int via, const std::string& id, const std::string& role, int seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
      auto nodes = Nodes(via);
      if (nodes.count(id) != 0 && nodes[id]["Role"] == role) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  void CreateTable(int node) {
    Json made = Sql(node,
                    "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, v VECTOR(FLOAT32, 2) NOT NULL); "
                    "INSERT INTO d.t VALUES (1, '[1, 2]'), (2, '[3, 4]'), (3, '[5, 6]')");
    ASSERT_EQ(made.value("http_status", 0), 200) << made.dump();
  }

  // d.t as CreateTable makes it, and d.u and d.w with two ids each: three tables whose
  // builds may run at once (one running attempt per table).
  void CreateThreeTables(int node) {
    CreateTable(node);
    Json made = Sql(node,
                    "CREATE TABLE d.u (id BIGINT NOT NULL); INSERT INTO d.u VALUES (1), (2); "
                    "CREATE TABLE d.w (id BIGINT NOT NULL); INSERT INTO d.w VALUES (1), (2)");
    ASSERT_EQ(made.value("http_status", 0), 200) << made.dump();
  }

  // Admits CREATE INDEX by_id on d.`table` (BTREE on id) through `node`: the job's id, or
  // the answer when no single job was admitted.
  std::string AdmitBuild(int node, const std::string& table) {
    Json admitted = Sql(node, "CREATE INDEX by_id ON d." + table + " (id) USING BTREE");
    const Json& jobs = admitted["results"][0]["admitted_jobs"];
    return admitted.value("http_status", 0) == 200 && jobs.size() == 1 ? std::to_string(jobs[0].get<int64_t>())
                                                                       : admitted.dump();
  }

  // The node id running `job`'s attempt ("node1" of AttemptNode "node1 epoch 2").
  std::string AttemptNodeOf(int node, const std::string& job) {
    const std::string shown = JobItem(node, job, "AttemptNode");
    return shown.substr(0, shown.find(' '));
  }

  testing::TempDir dir_;
  std::unique_ptr<ClusterDatabase> db_;
  std::string root_;
  std::string token_;
  std::unique_ptr<jobs::JobStore> store_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(ServeClusterTest, OneNodeLeadsAndAKilledLeaderIsReplacedOnlyAfterItsLeaseLapses) {
  StartNodes(3);
  const int leader = WaitForLeader(30);
  ASSERT_GE(leader, 0) << "no node leads";
  // jobs.leader_lease_seconds = 3: the lease, read on the database's clock, ends within 3 s.
  auto lease = store_->cluster().GetLeader();
  auto now = store_->cluster().LeaseClockMs(0);
  ASSERT_TRUE(lease.ok() && now.ok());
  EXPECT_GT(lease->expires_at_ms - *now, 0);
  EXPECT_LE(lease->expires_at_ms - *now, 3000);
  const int standby = (leader + 1) % 3;
  // SHOW NODES on any node: each node with its address, one leader, the others standing by.
  ASSERT_TRUE(WaitForRole(standby, "node" + std::to_string(leader), "leader", 10));
  auto nodes = Nodes(standby);
  ASSERT_EQ(nodes.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const Json& row = nodes["node" + std::to_string(i)];
    EXPECT_EQ(row["Address"], "127.0.0.1:" + std::to_string(nodes_[i]->port())) << row.dump();
    EXPECT_EQ(row["Pid"], nodes_[i]->pid()) << row.dump();
    EXPECT_EQ(row["Alive"], "YES") << row.dump();
    EXPECT_EQ(row["Role"], i == leader ? "leader" : "standby") << row.dump();
    EXPECT_EQ(row["LeaseExpiresAt"].is_null(), i != leader) << row.dump();
    // Ready on every node: the leader leads, the others stand by.
    auto [status, body] = Readiness(i);
    EXPECT_EQ(status, 200) << body.dump();
    EXPECT_EQ(body["checks"]["leader"], i == leader ? "ok" : "standby") << body.dump();
  }
  CreateTable(standby);
  EXPECT_EQ(CreateIndexAndWait(standby, "by_id"), "FINISHED");

  nodes_[leader]->Stop(SIGKILL);
  auto old = store_->cluster().GetLeader();
  ASSERT_TRUE(old.ok());
  const int next = WaitForLeader(30, leader);
  ASSERT_GE(next, 0) << "no standby took over";
  auto taken = store_->cluster().GetLeader();
  ASSERT_TRUE(taken.ok());
  EXPECT_GT(taken->epoch, old->epoch);
  EXPECT_GE(taken->acquired_at_ms, old->expires_at_ms) << "the lease was taken before it lapsed";
  EXPECT_EQ(CreateIndexAndWait(standby, "by_id2"), "FINISHED");
  EXPECT_EQ(CreateIndexAndWait(next, "by_id3"), "FINISHED");
  // The killed node stops heartbeating: once a lease has passed, it is gone.
  EXPECT_TRUE(WaitForRole(next, "node" + std::to_string(leader), "gone", 10)) << Nodes(next).size();
  EXPECT_EQ(Nodes(next)["node" + std::to_string(leader)]["Alive"], "NO");
  EXPECT_EQ(Nodes(next)["node" + std::to_string(next)]["Role"], "leader");
}

// The leader's recovery pass (here delayed past the 3 s lease) runs under a lease renewed from
// the moment it was taken: the standby never takes it over, and the leader goes on leading.
TEST_F(ServeClusterTest, ARecoveryPassLongerThanTheLeaseKeepsIt) {
  const std::string recovery = Hold("recovery");
  StartNodes(1, "leader.recovery_pass=pause(" + recovery + ")@1");
  ASSERT_EQ(WaitForLeader(30), 0);
  ASSERT_TRUE(testing::AwaitFile(recovery + ".reached"));
  StartNodes(1);
  auto taken = store_->cluster().GetLeader();
  ASSERT_TRUE(taken.ok());
  // The pass is held until the lease has been renewed over two more terms.
  const jobs::LeaderLease later = LeaseAfterTerms(*taken, 2);
  Release(recovery);
  EXPECT_EQ(later.epoch, taken->epoch) << "the lease changed hands: " << later.holder << "\n" << nodes_[0]->Log();
  EXPECT_EQ(later.holder, taken->holder);
  EXPECT_GE(later.expires_at_ms, taken->expires_at_ms + 2 * kLeaseMs) << "the lease was not renewed during the pass";
  EXPECT_EQ(nodes_[0]->Log().find("fencing this leader"), std::string::npos) << nodes_[0]->Log();
  CreateTable(1);
  EXPECT_EQ(CreateIndexAndWait(1, "after_recovery"), "FINISHED");
  EXPECT_EQ(WaitForLeader(1), 0);
}

TEST_F(ServeClusterTest, ALeaderStoppedPastItsLeaseFencesItselfWhenItWakes) {
  StartNodes(2);
  const int leader = WaitForLeader(30);
  ASSERT_GE(leader, 0) << "no node leads";
  const int other = 1 - leader;
  CreateTable(other);

  nodes_[leader]->Signal(SIGSTOP);
  ASSERT_EQ(WaitForLeader(30, leader), other) << "the standby did not take over";
  nodes_[leader]->Signal(SIGCONT);
  bool fenced = false;
  for (int i = 0; i < 200 && !fenced; ++i) {
    fenced = nodes_[leader]->Log().find("fencing this leader") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(fenced) << nodes_[leader]->Log();
  // The woken node serves and admits, but the job runs under the new leader, which keeps the
  // lease: the old one stands by.
  auto held = store_->cluster().GetLeader();
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(CreateIndexAndWait(leader, "after_wake"), "FINISHED");
  const jobs::LeaderLease later = LeaseAfterTerms(*held, 1);
  EXPECT_EQ(later.epoch, held->epoch) << "the lease changed hands again: " << later.holder;
  EXPECT_EQ(WaitForLeader(1), other);
}

// The leader's worker hangs after writing its segment, before the commit; the leader is
// killed (its worker dies with it). The next leader settles the attempt from evidence: the
// job ends FAILED / NOT_COMMITTED without staying UNKNOWN, the name never has two logical
// indexes, and its fence is free for a new request.
TEST_F(ServeClusterTest, ALeaderKilledDuringABuildIsSettledByTheNext) {
  const std::string written = Hold("written");  // never released
  StartNodes(1, "provider.after_segment_write=pause(" + written + ")");
  ASSERT_EQ(WaitForLeader(30), 0);
  StartNodes(2);
  CreateTable(1);
  const std::string job = CreateIndex(1, "during");
  ASSERT_TRUE(!job.empty() && std::isdigit(static_cast<unsigned char>(job[0]))) << job;
  ASSERT_EQ(WaitForRunning(1, job), "RUNNING");
  ASSERT_TRUE(testing::AwaitFile(written + ".reached")) << "the worker never wrote its segment";
  nodes_[0]->Stop(SIGKILL);
  ASSERT_GE(WaitForLeader(30, 0), 1);
  // The next leader finds the attempt of an older leader epoch (UNKNOWN for a moment), proves
  // by the store's fence and the table's history that it never committed, and settles the job.
  EXPECT_EQ(WaitForJob(1, job, 90, true), "FAILED");
  EXPECT_EQ(JobItem(2, job, "Outcome"), "NOT_COMMITTED");
  EXPECT_EQ(IndexesNamed(2, "during"), 0);
  // The surviving nodes' /metrics count what their reconciler recorded.
  EXPECT_EQ(MetricSum("vigil_index_job_reconcile_results_total{result=\"lost_attempt\"}"), 1);
  EXPECT_EQ(MetricSum("vigil_index_job_reconcile_results_total{result=\"not_committed\"}"), 1);
  EXPECT_EQ(MetricSum("vigil_index_job_reconcile_results_total{result=\"committed\"}"), 0);
  // The fence is free again: the name can be (re)made, and that job ends.
  EXPECT_EQ(CreateIndexAndWait(2, "during"), "FINISHED");
  EXPECT_EQ(IndexesNamed(2, "during"), 1);
}

// A leader stopped (SIGSTOP) while its worker hangs before the commit: the standby takes
// over and settles the job NOT_COMMITTED while the old leader is still stopped: the attempt
// was dispatched under an epoch that lost the lease, so the store refuses its claim whatever
// its processes do (the proof SHOW INDEX JOB names), and the new leader stops the worker, a
// process of this host. When the old leader wakes it fences itself; its own record of the
// attempt is refused.
TEST_F(ServeClusterTest, AStoppedLeadersAttemptIsSettledByTheFenceAndItsRecordIsRefused) {
  const std::string written = Hold("written");  // never released
  StartNodes(1, "provider.after_segment_write=pause(" + written + ")");
  ASSERT_EQ(WaitForLeader(30), 0);
  StartNodes(1);
  CreateTable(1);
  const std::string job = CreateIndex(1, "stale");
  ASSERT_TRUE(!job.empty() && std::isdigit(static_cast<unsigned char>(job[0]))) << job;
  ASSERT_EQ(WaitForRunning(1, job), "RUNNING");
  ASSERT_TRUE(testing::AwaitFile(written + ".reached")) << "the worker never wrote its segment";
  nodes_[0]->Signal(SIGSTOP);
  ASSERT_EQ(WaitForLeader(30, 0), 1);
  EXPECT_EQ(WaitForJob(1, job, 60, true), "FAILED") << nodes_[1]->Log();
  EXPECT_EQ(JobItem(1, job, "Outcome"), "NOT_COMMITTED");
  const std::string shown = Sql(1, "SHOW INDEX JOB " + job).dump();
  EXPECT_NE(shown.find("TERMINATION_PROVEN by serve:node1"), std::string::npos) << shown;
  EXPECT_NE(shown.find("CATALOG_FENCE"), std::string::npos) << shown;
  EXPECT_NE(shown.find("no longer holds the lease"), std::string::npos) << shown;
  EXPECT_EQ(IndexesNamed(1, "stale"), 0);

  nodes_[0]->Signal(SIGCONT);
  std::string log;
  for (int i = 0; i < 600; ++i) {
    log = nodes_[0]->Log();
    if (log.find("fencing this leader") != std::string::npos &&
        log.find("recording the result of job " + job + ": COMMIT_CONFLICT") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(log.find("fencing this leader"), std::string::npos) << log;
  EXPECT_NE(log.find("recording the result of job " + job + ": COMMIT_CONFLICT"), std::string::npos) << log;
  EXPECT_EQ(JobItem(1, job, "Outcome"), "NOT_COMMITTED");
  EXPECT_EQ(IndexesNamed(1, "stale"), 0);
  EXPECT_EQ(WaitForLeader(1), 1);
}

// A history under failures: client threads append rows (JSON, an Idempotency-Key per row)
// and admit index jobs (an Idempotency-Key each) through random nodes, retrying a failed or
// unanswered request with the same key on another node, while one node at a time is killed
// (SIGKILL) and started again. The kills follow the history's progress (one after every
// kKillEvery acknowledged appends, a random moment later), so a fast machine cannot finish
// the history between two of them. Every acknowledged append is present exactly once, no row
// appears twice, and every job ends settled with at most one index under its name.
TEST_F(ServeClusterTest, AHistoryOfKeyedRequestsUnderKillsLosesAndDuplicatesNothing) {
  StartNodes(3);
  ASSERT_GE(WaitForLeader(30), 0);
  CreateTable(0);
  std::atomic<bool> stop{false};
  std::mutex mu;                        // guards nodes_ against the killer's restarts, and `unanswered`
  std::vector<std::string> unanswered;  // requests never answered, with their last response
  auto call = [&](int node, const std::string& method, const std::string& path, const std::string& key,
                  const Json& body, std::string* last = nullptr) -> int {
    int port = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      port = nodes_[static_cast<size_t>(node)]->running() ? nodes_[static_cast<size_t>(node)]->port() : 0;
    }
    if (port == 0) return 0;
    auto client = server::HttpClient::Connect("http://127.0.0.1:" + std::to_string(port));
    if (!client.ok()) return 0;
    auto r = (*client)->Call(
        method, path,
        {{"Authorization", "Bearer " + token_}, {"Content-Type", "application/json"}, {"Idempotency-Key", key}},
        body.dump());
    if (last) *last = r.ok() ? std::to_string(r->status) + " " + r->body : r.status().ToString();
    return r.ok() ? r->status : 0;
  };
  constexpr int kClients = 3;
  constexpr int kAppendsPerClient = 100;
  constexpr int kKillEvery = 50;  // a kill after 25, 75, 125, ... of the 300 acknowledged appends
  std::atomic<int> kills{0};
  std::atomic<int> retries{0};
  std::atomic<int> acked_total{0};
  std::vector<std::vector<int64_t>> acked(kClients);
  std::vector<std::string> jobs_acked;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      unsigned seed = static_cast<unsigned>(c * 7919 + 1);
      for (int i = 0; i < kAppendsPerClient; ++i) {
        const int64_t id = 1000 + c * 1000 + i;
        const std::string key = "append-" + std::to_string(id);
        const Json body = {{"rows", Json::array({{{"id", id}, {"v", Json::array({1, 2})}}})}};
        // Retried with the same key until a node answers it (a replay answers the same). A key
        // whose server died is settled once its reservation is stale (kStaleReservationMs, 10 s)
        // and a live node examines it: the budget is a minute, not a count of fast failures.
        std::string last;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (std::chrono::steady_clock::now() < give_up) {
          const int status =
              call(static_cast<int>(rand_r(&seed) % 3), "POST", "/v1/databases/d/tables/t/rows", key, body, &last);
          if (status == 200) {
            acked[static_cast<size_t>(c)].push_back(id);
            ++acked_total;
            break;
          }
          ++retries;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (acked[static_cast<size_t>(c)].empty() || acked[static_cast<size_t>(c)].back() != id) {
          std::lock_guard<std::mutex> lock(mu);
          unanswered.push_back(key + ": " + last);
        }
        if (i % 10 == 9) {
          const std::string name = "h" + std::to_string(c) + "_" + std::to_string(i);
          const Json index = {{"name", name}, {"columns", {"id"}}, {"using", "BTREE"}};
          const auto index_give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
          while (std::chrono::steady_clock::now() < index_give_up) {
            const int status = call(static_cast<int>(rand_r(&seed) % 3), "POST", "/v1/databases/d/tables/t/indexes",
                                    "index-" + name, index);
            if (status == 202) {
              std::lock_guard<std::mutex> lock(mu);
              jobs_acked.push_back(name);
              break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        }
      }
    });
  }
  std::thread killer([&] {
    unsigned seed = 42;
    while (!stop.load()) {
      if (acked_total.load() < kKillEvery * (kills.load() + 1) - kKillEvery / 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rand_r(&seed) % 200));
      if (stop.load()) break;
      const size_t victim = rand_r(&seed) % 3;
      std::unique_ptr<Node> fresh;
      {
        std::lock_guard<std::mutex> lock(mu);
        nodes_[victim]->Stop(SIGKILL);
      }
      ++kills;
      const std::string id = "node" + std::to_string(victim);
      fresh = std::make_unique<Node>(root_, id, dir_.Join(id + ".log"));
      std::lock_guard<std::mutex> lock(mu);
      nodes_[victim] = std::move(fresh);
    }
  });
  for (auto& t : clients) t.join();
  stop.store(true);
  killer.join();
  EXPECT_GE(kills.load(), 4) << "too few kills for a history under failures";
  for (const std::string& u : unanswered) ADD_FAILURE() << "never answered: " << u;
  std::printf("history: %d kills, %d retried appends\n", kills.load(), retries.load());

  // Every acknowledged append exactly once; nothing else appended twice.
  ASSERT_GE(WaitForLeader(30), 0);
  Json dup = Sql(0, "SELECT id, count(*) AS n FROM d.t GROUP BY id HAVING count(*) > 1");
  ASSERT_EQ(dup.value("http_status", 0), 200) << dup.dump();
  EXPECT_TRUE(dup["results"][0]["rows"].empty()) << dup.dump();
  size_t total = 0;
  for (int c = 0; c < kClients; ++c) {
    total += acked[static_cast<size_t>(c)].size();
    EXPECT_EQ(acked[static_cast<size_t>(c)].size(), static_cast<size_t>(kAppendsPerClient)) << "client " << c;
    for (int64_t id : acked[static_cast<size_t>(c)]) {
      Json n = Sql(0, "SELECT count(*) FROM d.t WHERE id = " + std::to_string(id));
      ASSERT_EQ(n.value("http_status", 0), 200) << n.dump();
      EXPECT_EQ(n["results"][0]["rows"][0][0], 1) << "acknowledged row " << id;
    }
  }
  Json count = Sql(0, "SELECT count(*) FROM d.t WHERE id >= 1000");
  EXPECT_EQ(count["results"][0]["rows"][0][0], total) << count.dump();
  // Every acknowledged job settles; no name has two indexes.
  for (const std::string& name : jobs_acked) {
    Json listed = Sql(0, "SHOW INDEX JOBS WHERE IndexName = '" + name + "'");
    ASSERT_EQ(listed.value("http_status", 0), 200) << listed.dump();
    const Json& r = listed["results"][0];
    ASSERT_EQ(r["rows"].size(), 1u) << name << ": " << listed.dump();
    size_t id_col = 0;
    while (id_col < r["columns"].size() && r["columns"][id_col] != "JobId") ++id_col;
    const std::string job = r["rows"][0][id_col].dump();
    const std::string state = WaitForJob(0, job, 120, true);
    EXPECT_TRUE(state == "FINISHED" || state == "FAILED") << name << ": " << state;
    EXPECT_EQ(IndexesNamed(0, name), state == "FINISHED" ? 1 : 0) << name;
  }
}

// `vigil nodes --drain` on a leader mid-build: the build finishes and is recorded, the
// lease passes to the one node not drained (another started with --drain never leads),
// drained nodes stay ready and serve, and with no undrained node left jobs wait until
// `vigil nodes --resume`.
TEST_F(ServeClusterTest, ADrainedLeaderFinishesItsBuildAndHandsOverTheLease) {
  const std::string written = Hold("written");
  const std::string standby0 = Hold("standby0"), standby2 = Hold("standby2");
  StartNodes(1, "provider.after_segment_write=pause(" + written + ");serve.drained_standby=signal(" + standby0 + ")");
  ASSERT_EQ(WaitForLeader(30), 0);
  StartNodes(1);
  StartNodes(1, "serve.drained_standby=signal(" + standby2 + ")", {"--drain"});
  const std::string token_file = dir_.Join("token");
  { std::ofstream(token_file) << token_ << "\n"; }
  ASSERT_EQ(::chmod(token_file.c_str(), 0600), 0);
  const auto vigil_nodes = [&](int via, const std::string& args) {
    return RunCapture("env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) +
                      " nodes --json --url http://127.0.0.1:" + std::to_string(nodes_[via]->port()) + " --token-file " +
                      token_file + " " + args + " 2>&1; echo \"exit=$?\"");
  };
  CreateTable(1);
  const std::string job = CreateIndex(1, "drained_build");
  ASSERT_TRUE(!job.empty() && std::isdigit(static_cast<unsigned char>(job[0]))) << job;
  ASSERT_EQ(WaitForRunning(1, job), "RUNNING");
  ASSERT_TRUE(testing::AwaitFile(written + ".reached"));  // the build is held mid-way

  const std::string drained = vigil_nodes(1, "--drain node0");
  EXPECT_NE(drained.find("exit=0"), std::string::npos) << drained;
  EXPECT_NE(drained.find("\"Node\":\"node0\""), std::string::npos) << drained;
  EXPECT_NE(drained.find("\"Draining\":\"YES\""), std::string::npos) << drained;
  // The running build is not killed: released, it commits and is recorded.
  Release(written);
  EXPECT_EQ(WaitForJob(1, job, 60), "FINISHED") << nodes_[0]->Log();
  // node2 is drained too: the lease goes to node1 only.
  EXPECT_EQ(WaitForLeader(30, 0), 1) << nodes_[0]->Log();
  EXPECT_NE(nodes_[0]->Log().find("this node is drained"), std::string::npos);
  auto nodes = Nodes(1);
  EXPECT_EQ(nodes["node0"]["Draining"], "YES") << nodes["node0"].dump();
  EXPECT_EQ(nodes["node0"]["Role"], "standby") << nodes["node0"].dump();
  EXPECT_EQ(nodes["node2"]["Draining"], "YES") << nodes["node2"].dump();
  EXPECT_EQ(nodes["node1"]["Draining"], "NO") << nodes["node1"].dump();
  for (int i : {0, 2}) {
    auto [status, body] = Readiness(i);
    EXPECT_EQ(status, 200) << body.dump();
    EXPECT_EQ(body["checks"]["leader"], "drained") << body.dump();
  }

  // With node1 gone only drained nodes remain: a job admitted through one of them waits.
  nodes_[1]->Stop(SIGKILL);
  const std::string waiting = CreateIndex(0, "after_drain");
  ASSERT_TRUE(!waiting.empty() && std::isdigit(static_cast<unsigned char>(waiting[0]))) << waiting;
  // node1's lease lapses; then each drained node passes its standby once more and leads nothing.
  bool lapsed = false;
  for (int i = 0; i < 600 && !lapsed; ++i) {
    auto lease = store_->cluster().GetLeader();
    auto now = store_->cluster().LeaseClockMs(0);
    lapsed = lease.ok() && now.ok() && lease->expires_at_ms <= *now;
    if (!lapsed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(lapsed) << "node1's lease never lapsed";
  for (const std::string& standby : {standby0, standby2}) {
    std::filesystem::remove(standby);
    EXPECT_TRUE(testing::AwaitFile(standby)) << standby;
  }
  auto lease = store_->cluster().GetLeader();
  auto now = store_->cluster().LeaseClockMs(0);
  ASSERT_TRUE(lease.ok() && now.ok());
  EXPECT_FALSE(lease->Live(*now)) << "a drained node took the lease: " << lease->holder;
  EXPECT_EQ(JobState(0, waiting), "PENDING");
  const std::string resumed = vigil_nodes(0, "--resume node2");
  EXPECT_NE(resumed.find("exit=0"), std::string::npos) << resumed;
  EXPECT_EQ(WaitForLeader(30), 2) << nodes_[2]->Log();
  EXPECT_EQ(WaitForJob(0, waiting, 60), "FINISHED");
  // The CLI refuses conflicting requests and unknown nodes, naming them.
  const std::string both = vigil_nodes(0, "--drain node0 --resume node0");
  EXPECT_NE(both.find("--drain and --resume cannot be used together"), std::string::npos) << both;
  const std::string unknown = vigil_nodes(0, "--drain nowhere");
  EXPECT_NE(unknown.find("node nowhere is not registered"), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find("exit=0"), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find("\"Node\""), std::string::npos) << "a refused drain lists nothing: " << unknown;
}

// jobs.concurrency_per_node is each node's capacity: with the leader taking 1 and another
// node 2, three builds admitted together run 1 on the leader and 2 on the other node at
// once; SHOW NODES shows both capacities.
TEST_F(ServeClusterTest, EachNodeTakesAsManyAttemptsAsItsCapacity) {
  // No node is lost here: a lease longer than the fixture's 3 s keeps a heartbeat that a loaded
  // machine delays from settling a live node's attempt as lost.
  SetSetting("leader_lease_seconds = \"3s\"", "leader_lease_seconds = \"10s\"");
  const std::string written = Hold("written");  // holds every build until the counts are read
  StartNodes(1, "provider.after_segment_write=pause(" + written + ")");
  ASSERT_EQ(WaitForLeader(30), 0);
  SetSetting("# concurrency_per_node = 1", "concurrency_per_node = 2");
  StartNodes(1, "provider.after_segment_write=pause(" + written + ")");
  CreateThreeTables(0);
  std::vector<std::string> jobs;
  for (const char* table : {"t", "u", "w"}) jobs.push_back(AdmitBuild(0, table));
  std::map<std::string, int> per_node;
  for (const std::string& job : jobs) {
    ASSERT_EQ(WaitForRunning(0, job), "RUNNING") << job;
    ++per_node[AttemptNodeOf(0, job)];
  }
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"node0", 1}, {"node1", 2}}));
  auto nodes = Nodes(0);
  EXPECT_EQ(nodes["node0"]["Capacity"], 1) << nodes["node0"].dump();
  EXPECT_EQ(nodes["node1"]["Capacity"], 2) << nodes["node1"].dump();
  EXPECT_EQ(nodes["node1"]["RunningAttempts"], 2) << nodes["node1"].dump();
  Release(written);
  for (const std::string& job : jobs) {
    EXPECT_EQ(WaitForJob(0, job, 60), "FINISHED") << job << "\n" << nodes_[0]->Log() << "\n" << nodes_[1]->Log();
  }
}

// Attempts spread over the nodes (jobs.concurrency_per_node = 1): three builds admitted
// together run on three nodes at once, as SHOW NODES and SHOW INDEX JOB show. A node stopped
// (SIGSTOP) while its worker hangs before the commit is settled by the leader once its
// heartbeat is a lease old: NOT_COMMITTED by the store's fence, its worker killed. When the
// node wakes its record of the attempt is refused, with the typed error in its log.
TEST_F(ServeClusterTest, AttemptsSpreadOverTheNodesAndAStoppedNodesAttemptIsSettled) {
  // A 10 s lease: in a CI rehearsal on a loaded machine a live node's heartbeats failed for 9 s
  // and the 3 s leader lease lapsed, losing its attempt; the stopped node is settled a lease later.
  SetSetting("leader_lease_seconds = \"3s\"", "leader_lease_seconds = \"10s\"");
  const std::string written = Hold("written");  // holds node0's and node1's builds until counted
  const std::string stuck = Hold("stuck");      // node2's, never released
  StartNodes(2, "provider.after_segment_write=pause(" + written + ")");
  ASSERT_EQ(WaitForLeader(30), 0);
  StartNodes(1, "provider.after_segment_write=pause(" + stuck + ")");
  CreateThreeTables(1);
  std::map<std::string, std::string> node_of;   // job id -> node id
  std::map<std::string, std::string> table_of;  // job id -> its table
  const auto indexes = [&](const std::string& table) {
    Json named = Sql(1, "SELECT count(*) FROM vigil_indexes('d." + table + "') WHERE IndexName = 'by_id'");
    return named.value("http_status", 0) == 200 ? named["results"][0]["rows"][0][0].get<int64_t>() : -1;
  };
  for (const char* table : {"t", "u", "w"}) table_of[AdmitBuild(1, table)] = table;
  for (const auto& [job, table] : table_of) {
    ASSERT_EQ(WaitForRunning(1, job), "RUNNING") << job << " on d." << table;
    node_of[job] = AttemptNodeOf(1, job);
  }
  std::set<std::string> used;
  for (const auto& [job, node] : node_of) used.insert(node);
  EXPECT_EQ(used, (std::set<std::string>{"node0", "node1", "node2"}));
  auto nodes = Nodes(1);
  for (const char* id : {"node0", "node1", "node2"}) EXPECT_EQ(nodes[id]["RunningAttempts"], 1) << nodes[id].dump();
  Release(written);

  std::string hung;
  for (const auto& [job, node] : node_of) {
    if (node == "node2") {
      hung = job;
    } else {
      EXPECT_EQ(WaitForJob(1, job, 60), "FINISHED") << node << "\n" << nodes_[1]->Log();
      EXPECT_EQ(indexes(table_of[job]), 1);
    }
  }
  ASSERT_FALSE(hung.empty());
  ASSERT_TRUE(testing::AwaitFile(stuck + ".reached")) << "node2's worker never wrote its segment";
  nodes_[2]->Signal(SIGSTOP);
  EXPECT_EQ(WaitForJob(1, hung, 60, true), "FAILED") << nodes_[0]->Log();
  EXPECT_EQ(JobItem(1, hung, "Outcome"), "NOT_COMMITTED");
  const std::string shown = Sql(1, "SHOW INDEX JOB " + hung).dump();
  EXPECT_NE(shown.find("node node2 running the attempt has not heartbeat"), std::string::npos) << shown;
  EXPECT_NE(shown.find("CATALOG_FENCE"), std::string::npos) << shown;

  nodes_[2]->Signal(SIGCONT);
  std::string log;
  for (int i = 0; i < 600; ++i) {
    log = nodes_[2]->Log();
    if (log.find("the result of job " + hung + " is refused: COMMIT_CONFLICT") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(log.find("the result of job " + hung + " is refused: COMMIT_CONFLICT"), std::string::npos) << log;
  EXPECT_EQ(JobItem(1, hung, "Outcome"), "NOT_COMMITTED");
  EXPECT_EQ(indexes(table_of[hung]), 0);
  // The name is free again; the leader kept its lease throughout.
  const std::string again = AdmitBuild(1, table_of[hung]);
  EXPECT_EQ(WaitForJob(1, again, 60), "FINISHED");
  EXPECT_EQ(indexes(table_of[hung]), 1);
  EXPECT_EQ(WaitForLeader(1), 0);
}

// The leader's worker hangs right after its commit, before it answers; the leader is killed.
// The next leader proves the worker gone and finds the attempt's commit in the table's
// history: the job is FINISHED / COMMITTED by evidence, with exactly one index.
TEST_F(ServeClusterTest, ALeaderKilledAfterItsWorkersCommitIsSettledCommitted) {
  StartNodes(1, "provider.after_commit=hang");
  ASSERT_EQ(WaitForLeader(30), 0);
  StartNodes(2);
  CreateTable(1);
  const std::string job = CreateIndex(1, "committed");
  ASSERT_TRUE(!job.empty() && std::isdigit(static_cast<unsigned char>(job[0]))) << job;
  // The commit is visible before the job knows it: wait for the index, then kill.
  bool visible = false;
  for (int i = 0; i < 600 && !visible; ++i) {
    visible = IndexesNamed(1, "committed") == 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(visible) << "the hanging worker's commit never showed";
  EXPECT_EQ(JobState(1, job), "RUNNING");
  nodes_[0]->Stop(SIGKILL);
  ASSERT_GE(WaitForLeader(30, 0), 1);
  EXPECT_EQ(WaitForJob(1, job, 90, true), "FINISHED");
  EXPECT_EQ(JobItem(2, job, "Outcome"), "COMMITTED");
  EXPECT_EQ(IndexesNamed(2, "committed"), 1);
  EXPECT_EQ(MetricSum("vigil_index_job_reconcile_results_total{result=\"termination_proven\"}"), 1);
  EXPECT_EQ(MetricSum("vigil_index_job_reconcile_results_total{result=\"committed\"}"), 1);
  EXPECT_EQ(MetricSum("vigil_index_job_reconcile_results_total{result=\"not_committed\"}"), 0);
}

// A leader killed (SIGKILL, by a failpoint in its own reconciler) in the middle of settling
// an UNKNOWN attempt whose worker committed and died: after its termination proof, or after
// its final read, chosen at random. The next leader completes the reconciliation from the
// durable record: FINISHED / COMMITTED, dispatched once, one index under the name.
TEST_F(ServeClusterTest, ALeaderKilledWhileReconcilingAnUnknownAttemptIsFollowedThrough) {
  SetSetting("# reconcile_initial_backoff_seconds = \"30s\"", "reconcile_initial_backoff_seconds = \"1s\"");
  const unsigned seed = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  const char* cut = seed % 2 == 0 ? "reconcile.after_termination_proof" : "reconcile.after_final_read";
  SCOPED_TRACE(std::string("leader killed at ") + cut);
  StartNodes(1, std::string("provider.after_commit=kill;") + cut + "=kill");
  ASSERT_EQ(WaitForLeader(30), 0);
  StartNodes(2);
  CreateTable(1);
  const std::string job = CreateIndex(1, "reconciled");
  ASSERT_TRUE(!job.empty() && std::isdigit(static_cast<unsigned char>(job[0]))) << job;
  // The worker dies after its commit: UNKNOWN; the leader's reconciler then dies at the cut.
  ASSERT_TRUE(nodes_[0]->WaitForExit(60)) << "the leader never reached " << cut << "\n" << nodes_[0]->Log();
  ASSERT_GE(WaitForLeader(30, 0), 1);
  EXPECT_EQ(WaitForJob(1, job, 90, true), "FINISHED");
  Json shown = Sql(2, "SHOW INDEX JOB " + job);
  std::string outcome, reconcile;
  std::map<std::string, std::vector<std::string>> by_event;  // event name -> who wrote each
  static const std::regex kEvent("^[0-9-]+ [0-9:.]+ ([A-Z_]+) by serve:(node[0-9]+):");
  for (const Json& row : shown["results"][0]["rows"]) {
    if (row[0] == "Outcome") outcome = row[1].get<std::string>();
    if (row[0] == "ReconcileState") reconcile = row[1].get<std::string>();
    std::smatch m;
    const std::string text = row[1].is_string() ? row[1].get<std::string>() : "";
    if (row[0].get<std::string>().rfind("Event", 0) == 0 && std::regex_search(text, m, kEvent)) {
      by_event[m[1].str()].push_back(m[2].str());
    }
  }
  EXPECT_EQ(outcome, "COMMITTED") << shown.dump();
  EXPECT_EQ(reconcile, "STOPPED_TERMINATION_PROVEN") << shown.dump();
  // Dispatched once, by the killed leader; each reconciliation step written once; the proof
  // by the killed leader, the attribution by its successor.
  EXPECT_EQ(by_event["DISPATCHED"], std::vector<std::string>{"node0"}) << shown.dump();
  EXPECT_EQ(by_event["TERMINATION_PROVEN"], std::vector<std::string>{"node0"}) << shown.dump();
  EXPECT_EQ(by_event["FINAL_READ"].size(), 1u) << shown.dump();
  ASSERT_EQ(by_event["ATTRIBUTED"].size(), 1u) << shown.dump();
  EXPECT_NE(by_event["ATTRIBUTED"][0], "node0") << shown.dump();
  EXPECT_EQ(IndexesNamed(2, "reconciled"), 1);
}

// Nodes on a PostgreSQL server of their own, restarted (immediate stop, as a crash) under
// them: they report not ready while it is down, then lead, admit and run jobs again, and
// nothing acknowledged before is lost.
class ServeClusterRestartTest : public ServeClusterTest {
 protected:
  Result<std::string> ServerConninfo() override {
    pg_dir_ = dir_.Join("pg");
    if (std::system(("bash " + std::string(VIGIL_PG_SCRIPT) + " start " + pg_dir_ + " >/dev/null").c_str()) != 0) {
      return Status::IOError("could not start a PostgreSQL server in " + pg_dir_);
    }
    std::ifstream in(pg_dir_ + "/conninfo");
    std::string line;
    std::getline(in, line);
    return line;
  }
  void TearDown() override {
    nodes_.clear();
    store_.reset();
    db_.reset();
    if (!pg_dir_.empty()) (void)std::system(("bash " + std::string(VIGIL_PG_SCRIPT) + " stop " + pg_dir_).c_str());
  }
  std::string pg_dir_;
};

TEST_F(ServeClusterRestartTest, NodesWaitForARestartedStoreAndLoseNothing) {
  StartNodes(2);
  ASSERT_GE(WaitForLeader(30), 0);
  CreateTable(0);
  ASSERT_EQ(CreateIndexAndWait(0, "before"), "FINISHED");
  EXPECT_EQ(Ready(0), 200);
  EXPECT_EQ(Ready(1), 200);

  std::atomic<bool> restarted{false};
  std::thread restart([&] {
    (void)std::system(("bash " + std::string(VIGIL_PG_SCRIPT) + " restart " + pg_dir_ + " 3").c_str());
    restarted.store(true);
  });
  bool unready = false;
  while (!restarted.load() && !unready) {  // the whole outage, however late it starts
    unready = Ready(0) == 503;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  restart.join();
  EXPECT_TRUE(unready) << "GET /readyz stayed 200 while the store was down";

  ASSERT_GE(WaitForLeader(60), 0) << nodes_[0]->Log() << nodes_[1]->Log();
  Json count;
  for (int i = 0; i < 100; ++i) {
    count = Sql(1, "SELECT count(*) FROM d.t");
    if (count.value("http_status", 0) == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(count.value("http_status", 0), 200) << count.dump();
  EXPECT_EQ(count["results"][0]["rows"][0][0], 3);
  EXPECT_EQ(CreateIndexAndWait(1, "after"), "FINISHED");
  Json indexes = Sql(0, "SELECT IndexName FROM vigil_indexes('d.t') ORDER BY IndexName");
  ASSERT_EQ(indexes.value("http_status", 0), 200) << indexes.dump();
  EXPECT_EQ(indexes["results"][0]["rows"], Json::parse(R"([["after"], ["before"]])"));
  EXPECT_EQ(Ready(0), 200);
  EXPECT_EQ(Ready(1), 200);
}

TEST(ServeClusterInitTest, ABadOrUnreachableMetaUrlCreatesNothing) {
  testing::TempDir dir;
  ClusterDatabase db;
  ASSERT_TRUE(db.error().empty()) << db.error();
  const auto init = [&](const std::string& root, const std::string& url) {
    return RunCapture("env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) + " init " + root + " --meta-url '" + url +
                      "' 2>&1; echo exit=$?");
  };
  std::string out = init(dir.Join("a"), "postgresql://vigil:s3cret@db/meta");
  EXPECT_NE(out.find("--meta-url holds a password"), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
  EXPECT_EQ(out.find("exit=0"), std::string::npos) << out;
  EXPECT_NE(::access(dir.Join("a").c_str(), F_OK), 0);
  // The same server, a database that does not exist.
  std::string missing = db.url();
  missing.replace(missing.find("/vigil_c_"), 9, "/nosuch_");
  out = init(dir.Join("b"), missing);
  EXPECT_NE(out.find("the metadata store is not reachable"), std::string::npos) << out;
  EXPECT_EQ(out.find("exit=0"), std::string::npos) << out;
  EXPECT_NE(::access(dir.Join("b").c_str(), F_OK), 0);
  // A reachable one: the root's vigil.toml names it.
  out = init(dir.Join("c"), db.url());
  EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
  std::ifstream toml(dir.Join("c/vigil.toml"));
  std::stringstream text;
  text << toml.rdbuf();
  EXPECT_NE(text.str().find("\nurl = \"" + db.url() + "\"\n"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace vigil

// `vigil bench cluster --meta-url URL`: `vigil serve` nodes on one PostgreSQL
// metadata store against one node on an embedded root's SQLite, in the same
// run, through the HTTP API: append commits/s (1-row INSERTs) and index job
// admissions/s from several clients spread over the nodes, with p50/p99; then
// failover: the leader killed with SIGKILL, a job admitted on another node, and
// the time until a new leader dispatches it, over several kills (the killed
// node is started again each time); and the spread of builds: one BTREE build
// on each of several tables admitted at once, the time until all are finished
// (one node runs one at a time, N nodes N). URL names an empty database. Options:
// --nodes 3 --clients 4 --requests 400 --kills 10 --lease 30 (leader lease, s)
// --builds 6 --build-rows 20000.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "bench/bench.h"
#include "vigil/common/config.h"
#include "vigil/server/http_client.h"

namespace vigil::bench::cluster_bench {
namespace {

using Json = nlohmann::json;

// One `vigil serve` child of this executable on 127.0.0.1, its port read from its stdout.
class ServeNode {
 public:
  ServeNode(const std::string& root, const std::string& id) : root_(root), id_(id) { Start(); }
  ~ServeNode() { Kill(SIGTERM); }
  ServeNode(const ServeNode&) = delete;
  ServeNode& operator=(const ServeNode&) = delete;

  void Start() {
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      const std::string log = root_ + "/" + id_ + ".log";
      std::FILE* err = std::fopen(log.c_str(), "a");
      if (err != nullptr) ::dup2(::fileno(err), STDERR_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      ::execl(VigilProgram().c_str(), "vigil", "--root", root_.c_str(), "serve", "--listen", "127.0.0.1:0", "--node-id",
              id_.c_str(), "--grace", "1", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::FILE* f = ::fdopen(out[0], "r");
    char line[512];
    static const std::regex kListening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    port_ = 0;
    while (f != nullptr && std::fgets(line, sizeof(line), f) != nullptr) {
      std::cmatch m;
      if (std::regex_search(line, m, kListening)) {
        port_ = std::stoi(m[1].str());
        break;
      }
    }
    if (f != nullptr) std::fclose(f);
  }
  void Kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  const std::string& id() const { return id_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string root_;
  std::string id_;
  pid_t pid_ = -1;
  int port_ = 0;
};

struct Cluster {
  std::string token;
  std::vector<std::unique_ptr<ServeNode>> nodes;
};

// POST /v1/sql through a fresh connection to `node`; the answer, or an error naming it.
Result<Json> Sql(const ServeNode& node, const std::string& token, const std::string& sql) {
  VIGIL_ASSIGN_OR_RETURN(auto client, server::HttpClient::Connect(node.url()));
  VIGIL_ASSIGN_OR_RETURN(
      server::ClientResponse r,
      client->Call("POST", "/v1/sql", {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}},
                   Json{{"sql", sql}}.dump()));
  if (r.status != 200)
    return Status::Internal(node.id() + ": " + sql + ": HTTP " + std::to_string(r.status) + " " + r.body);
  return Json::parse(r.body);
}

// Sets [jobs] leader_lease_seconds in the vigil.toml `vigil init` wrote.
Status SetLease(const std::string& root, int64_t seconds) {
  const std::string path = root + "/vigil.toml";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return Status::IOError("cannot read " + path);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  const std::string line = "# leader_lease_seconds = \"30s\"\n";
  const size_t at = text.find(line);
  if (at == std::string::npos) return Status::Internal(path + " has no default leader_lease_seconds line");
  text.replace(at, line.size(), "leader_lease_seconds = " + std::to_string(seconds) + "\n");
  f = std::fopen(path.c_str(), "w");
  if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
    return Status::IOError("cannot write " + path);
  }
  return std::fclose(f) == 0 ? Status::OK() : Status::IOError("cannot write " + path);
}

// `vigil init` (with --meta-url when given, and then a leader lease of `lease_s`) and `nodes`
// servers with a table d.t.
Result<Cluster> StartCluster(const std::string& root, const std::string& meta_url, int nodes, int64_t lease_s) {
  std::vector<std::string> argv = {VigilProgram(), "init", root};
  if (!meta_url.empty()) {
    argv.push_back("--meta-url");
    argv.push_back(meta_url);
  }
  VIGIL_ASSIGN_OR_RETURN(ProgramRun init, RunProgram(argv));
  std::smatch m;
  static const std::regex kToken("vgl_[0-9a-f]{16}_[0-9a-f]{64}");
  Cluster c;
  if (!std::regex_search(init.output, m, kToken))
    return Status::Internal("vigil init printed no token: " + init.output);
  c.token = m.str();
  VIGIL_RETURN_IF_ERROR(SetLease(root, lease_s));
  for (int i = 0; i < nodes; ++i) {
    c.nodes.push_back(std::make_unique<ServeNode>(root, "node" + std::to_string(i)));
    if (c.nodes.back()->port() == 0) return Status::Internal("node " + std::to_string(i) + " did not start");
  }
  VIGIL_RETURN_IF_ERROR(
      Sql(*c.nodes[0], c.token, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, v VECTOR(FLOAT32, 2))")
          .status());
  return c;
}

struct Rate {
  double per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

// `clients` threads send `requests` statements in all, round-robin over the nodes.
Result<Rate> Drive(const Cluster& c, int clients, int requests, const std::function<std::string(int)>& statement) {
  std::atomic<int> next{0};
  std::mutex mu;
  Status first = Status::OK();
  std::vector<double> lat;
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < requests; i = next++) {
        const auto t0 = Clock::now();
        Result<Json> r = Sql(*c.nodes[static_cast<size_t>(i) % c.nodes.size()], c.token, statement(i));
        const double ms = Since(t0) * 1e3;
        std::lock_guard<std::mutex> lock(mu);
        if (!r.ok() && first.ok()) first = r.status();
        lat.push_back(ms);
      }
    });
  }
  for (auto& t : threads) t.join();
  VIGIL_RETURN_IF_ERROR(first);
  return Rate{static_cast<double>(requests) / Since(start), Percentile(lat, 0.5), Percentile(lat, 0.99)};
}

// The index of the node SHOW NODES names as the leader, waiting up to 60 s; -1 for none.
int LeaderNode(const Cluster& c, int via) {
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < until) {
    Result<Json> r = Sql(*c.nodes[static_cast<size_t>(via)], c.token, "SHOW NODES");
    if (r.ok()) {
      for (const Json& row : (*r)["results"][0]["rows"]) {
        if (row[4] != "leader") continue;
        for (size_t i = 0; i < c.nodes.size(); ++i) {
          if (c.nodes[i]->id() == row[0]) return static_cast<int>(i);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// Waits until no job is pending, running or refreshing (so a failover's job queues behind none).
Status WaitIdle(const Cluster& c) {
  const auto until = Clock::now() + std::chrono::seconds(600);
  while (Clock::now() < until) {
    VIGIL_ASSIGN_OR_RETURN(Json listed, Sql(*c.nodes[0], c.token, "SHOW INDEX JOBS"));
    const Json& r = listed["results"][0];
    size_t state = 0;
    while (state < r["columns"].size() && r["columns"][state] != "State") ++state;
    bool busy = false;
    for (const Json& row : r["rows"]) {
      const std::string s = row[state].get<std::string>();
      busy |= s == "PENDING" || s == "RUNNING" || s == "REFRESHING";
    }
    if (!busy) return Status::OK();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::DeadlineExceeded("jobs still active after 600 s");
}

// Seconds from a SIGKILL of the leader to the dispatch of a job admitted on another node.
Result<double> OneFailover(Cluster& c, int round) {
  VIGIL_RETURN_IF_ERROR(WaitIdle(c));
  const int leader = LeaderNode(c, 0);
  if (leader < 0) return Status::Internal("no node leads");
  const int via = (leader + 1) % static_cast<int>(c.nodes.size());
  const auto killed = Clock::now();
  c.nodes[static_cast<size_t>(leader)]->Kill(SIGKILL);
  VIGIL_ASSIGN_OR_RETURN(Json admitted, Sql(*c.nodes[static_cast<size_t>(via)], c.token,
                                            "CREATE INDEX f" + std::to_string(round) + " ON d.t (id) USING BTREE"));
  const std::string job = std::to_string(admitted["results"][0]["admitted_jobs"][0].get<int64_t>());
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(Json shown, Sql(*c.nodes[static_cast<size_t>(via)], c.token, "SHOW INDEX JOB " + job));
    std::string state;
    for (const Json& row : shown["results"][0]["rows"]) {
      if (row[0] == "State") state = row[1].get<std::string>();
    }
    if (!state.empty() && state != "PENDING") break;
    if (Since(killed) > 300) return Status::DeadlineExceeded("job " + job + " was not dispatched within 300 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double seconds = Since(killed);
  c.nodes[static_cast<size_t>(leader)]->Start();
  return seconds;
}

struct Spread {
  double seconds = 0;
  std::set<std::string> nodes;  // the nodes that ran them
};

// One BTREE build on each of `builds` new tables of `rows` rows, admitted together through the
// nodes in turn: the seconds until every one is finished, and the nodes that ran them.
Result<Spread> SpreadBuilds(const Cluster& c, int builds, int rows) {
  for (int b = 0; b < builds; ++b) {
    const std::string table = "d.b" + std::to_string(b);
    VIGIL_RETURN_IF_ERROR(Sql(*c.nodes[0], c.token, "CREATE TABLE " + table + " (id BIGINT NOT NULL)").status());
    for (int from = 0; from < rows; from += 5000) {
      std::string insert = "INSERT INTO " + table + " VALUES ";
      for (int i = from; i < std::min(rows, from + 5000); ++i)
        insert += (i > from ? ",(" : "(") + std::to_string(i) + ")";
      VIGIL_RETURN_IF_ERROR(Sql(*c.nodes[0], c.token, insert).status());
    }
  }
  VIGIL_RETURN_IF_ERROR(WaitIdle(c));
  std::vector<std::string> jobs;
  const auto start = Clock::now();
  for (int b = 0; b < builds; ++b) {
    VIGIL_ASSIGN_OR_RETURN(Json admitted, Sql(*c.nodes[static_cast<size_t>(b) % c.nodes.size()], c.token,
                                              "CREATE INDEX s ON d.b" + std::to_string(b) + " (id) USING BTREE"));
    jobs.push_back(std::to_string(admitted["results"][0]["admitted_jobs"][0].get<int64_t>()));
  }
  VIGIL_RETURN_IF_ERROR(WaitIdle(c));
  Spread out;
  out.seconds = Since(start);
  for (const std::string& job : jobs) {
    VIGIL_ASSIGN_OR_RETURN(Json shown, Sql(*c.nodes[0], c.token, "SHOW INDEX JOB " + job));
    std::map<std::string, std::string> items;
    for (const Json& row : shown["results"][0]["rows"]) {
      if (row[1].is_string()) items[row[0].get<std::string>()] = row[1].get<std::string>();
    }
    if (items["State"] != "FINISHED") return Status::Internal("build job " + job + " ended " + items["State"]);
    out.nodes.insert(items["AttemptNode"].substr(0, items["AttemptNode"].find(' ')));
  }
  return out;
}

Json RateJson(const Rate& r) { return {{"per_second", r.per_second}, {"p50_ms", r.p50_ms}, {"p99_ms", r.p99_ms}}; }

Result<nlohmann::json> Run(const BenchArgs& args) {
  const std::string url = args.Str("meta_url", "");
  if (url.empty()) {
    return Status::InvalidArgument(
        "--meta-url postgresql://user@host:port/db is required (an empty database the nodes share)");
  }
  VIGIL_RETURN_IF_ERROR(CheckMetaUrl(url));
  const int nodes = static_cast<int>(args.Int("nodes", 3));
  const int clients = static_cast<int>(args.Int("clients", 4));
  const int requests = static_cast<int>(args.Int("requests", 400));
  const int kills = static_cast<int>(args.Int("kills", 10));
  const int64_t lease_s = args.Int("lease", 30);
  const int builds = static_cast<int>(args.Int("builds", 6));
  const int build_rows = static_cast<int>(args.Int("build_rows", 20000));
  if (nodes < 2 || clients < 1 || requests < 1 || kills < 0 || lease_s < 1 || builds < 0 || build_rows < 1) {
    return Status::InvalidArgument(
        "need nodes >= 2, clients >= 1, requests >= 1, kills >= 0, lease >= 1, builds >= 0 and build-rows >= 1");
  }
  const auto insert = [](int i) {
    return "INSERT INTO d.t VALUES (" + std::to_string(i) + ", '[" + std::to_string(i % 7) + ", 1]')";
  };
  const auto admit = [](int i) { return "CREATE INDEX a" + std::to_string(i) + " ON d.t (id) USING BTREE"; };
  Json out;
  std::vector<std::pair<std::string, Rate>> rows;
  for (const bool shared : {false, true}) {
    const std::string label = shared ? std::to_string(nodes) + " nodes, PostgreSQL" : "1 node, SQLite";
    std::fprintf(stderr, "cluster: %s...\n", label.c_str());
    VIGIL_ASSIGN_OR_RETURN(Cluster c, StartCluster(args.work_dir + (shared ? "/shared" : "/embedded"),
                                                   shared ? url : "", shared ? nodes : 1, lease_s));
    VIGIL_ASSIGN_OR_RETURN(Rate appends, Drive(c, clients, requests, insert));
    VIGIL_ASSIGN_OR_RETURN(Rate admissions, Drive(c, clients, std::max(1, requests / 4), admit));
    rows.emplace_back(label + ": append commits", appends);
    rows.emplace_back(label + ": index admissions", admissions);
    out[shared ? "postgres" : "sqlite"] = {
        {"nodes", shared ? nodes : 1}, {"appends", RateJson(appends)}, {"admissions", RateJson(admissions)}};
    if (builds > 0) {
      VIGIL_ASSIGN_OR_RETURN(Spread spread, SpreadBuilds(c, builds, build_rows));
      out[shared ? "postgres" : "sqlite"]["builds"] = {
          {"builds", builds}, {"rows", build_rows}, {"seconds", spread.seconds}, {"nodes_used", spread.nodes.size()}};
      std::fprintf(stderr, "cluster: %s: %d builds of %d rows in %.2f s on %zu node(s)\n", label.c_str(), builds,
                   build_rows, spread.seconds, spread.nodes.size());
    }
    if (!shared || kills == 0) continue;
    std::vector<double> failovers;
    for (int k = 0; k < kills; ++k) {
      VIGIL_ASSIGN_OR_RETURN(double s, OneFailover(c, k));
      failovers.push_back(s);
      std::fprintf(stderr, "cluster: failover %d: %.2f s\n", k + 1, s);
    }
    out["failover_seconds"] = {{"kills", kills},
                               {"p50", Percentile(failovers, 0.5)},
                               {"max", *std::max_element(failovers.begin(), failovers.end())},
                               {"lease_seconds", lease_s}};
  }
  const Json& pg = out["postgres"];
  const Json& lite = out["sqlite"];
  out["ratios"] = {{"appends_postgres_over_sqlite",
                    pg["appends"]["per_second"].get<double>() / lite["appends"]["per_second"].get<double>()},
                   {"admissions_postgres_over_sqlite",
                    pg["admissions"]["per_second"].get<double>() / lite["admissions"]["per_second"].get<double>()}};
  if (builds > 0) {
    out["ratios"]["builds_speedup_postgres_over_sqlite"] =
        lite["builds"]["seconds"].get<double>() / pg["builds"]["seconds"].get<double>();
  }
  std::fprintf(stderr, "%-48s %10s %8s %8s\n", "path", "per s", "p50 ms", "p99 ms");
  for (const auto& [name, r] : rows) {
    std::fprintf(stderr, "%-48s %10.1f %8.2f %8.2f\n", name.c_str(), r.per_second, r.p50_ms, r.p99_ms);
  }
  if (out.contains("failover_seconds")) {
    std::fprintf(stderr,
                 "failover (leader SIGKILL -> next dispatch): p50 %.2f s, max %.2f s over %d kills, lease %lld s\n",
                 out["failover_seconds"]["p50"].get<double>(), out["failover_seconds"]["max"].get<double>(), kills,
                 static_cast<long long>(lease_s));
  }
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "cluster",
     .description = "serve nodes on one PostgreSQL store vs one on SQLite: appends/s, admissions/s, failover time",
     .fn = Run,
     .int_options = {"build_rows", "builds", "clients", "kills", "lease", "nodes", "requests"},
     .text_options = {"meta_url"}});

}  // namespace vigil::bench::cluster_bench

// `vigil bench server`: HTTP throughput and latency of `vigil serve`'s API,
// run in this process, against the same work through the C++ API in the same
// run.
//
// Setup: a temporary root with db.docs, `rows` x `dim` embedding-like vectors
// (datagen) and an IVF_PQ index built in process (index::CreateVectorIndex, as
// the sql and generations benchmarks do: no job leader is needed for queries),
// a user `bench` (administrator) and its bearer token.
//
// Vector queries: `query_set` query vectors (not stored rows), rotated.
//  - baseline 1: sql::Session::Select of the exact SELECT and bound vector the
//    HTTP route builds for a body without "select" (server::DefaultSelect and
//    server::QueryStatement: SELECT "id", _distance FROM vector_search('db.docs', 'emb',
//    ?1, k, '{"nprobes":N}') with the vector's FLOAT32 bytes), one session per thread,
//    serial and `threads` threads;
//  - baseline 2: the query API (query::VectorSearch + query::TakeRows of the same
//    columns), serial and `threads` threads;
//  - HTTP: server::ApiServer on 127.0.0.1, port 0, driven by wrk (-t2, a Lua
//    script POSTing the same bodies with the bearer token) at each of
//    `connections`, plus one wrk -t1 -c1 run (serial, for the breakdown).
//    Ratio = HTTP requests/s over baseline 1 at `threads` threads. Each HTTP
//    figure is taken right after the in-process one it is compared with (the
//    server idles meanwhile), so that load changes on a shared machine hit
//    both alike; as a load-independent figure, CPU per query in process over
//    CPU per HTTP request (this process, which is the server while wrk runs,
//    plus wrk).
// Idempotent writes: 1 row per request. HTTP: wrk with a unique Idempotency-Key
// per request into db.writes_http; baseline: Session::CopyUpload of the same
// 1-row JSON Lines file (what the route runs after spooling the body), each
// with a unique idempotency token, into db.writes_api; `write_connections`
// clients each.
// Index admissions: `admissions` CREATE INDEX ... USING BTREE jobs (distinct
// names, no leader runs them) through server::HttpClient with an
// Idempotency-Key, serial, against Session::Execute of the same statement.
//
// Where HTTP time goes: CPU seconds of this process (the server) and of wrk
// per request, the server's own handler time (GET /metrics), and in-process
// timings of the per-request steps the route adds (token authentication,
// request JSON parse + SQL text, response JSON).
// wrk shares the machine's cores with the server: its CPU is part of the cost.
//
// Options (also as `vigil bench server --rows N ...`): rows (100000), dim (128),
// partitions (256), sub_vectors (16), k (10), nprobes (20), connections ("4,32"),
// duration (10 s per measurement), warmup (1 s), threads (4), query_set (64),
// write_connections (4), admissions (100), vectors (1: also run the queries with
// "select": ["id", "emb", "_distance"], whose answer carries each row's vector as its
// elements, in process and over HTTP at `threads` connections),
// pairs (5) and pair_seconds (3): after the long runs, `pairs` alternations of a
// `pair_seconds` in-process run at `threads` threads and an HTTP run at `threads`
// connections; the median of the pairs' ratios is the figure checked against the target,
// since this machine's speed can drift between two long runs taken seconds apart;
// wrk_threads (2: wrk's -t, at most the connections); wrk (path; default: wrk on PATH).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "bench/bench.h"
#include "src/server/query/query_request.h"
#include "src/server/query_json.h"
#include "vigil/auth/root_auth.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/uuid.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/query/query.h"
#include "vigil/server/api_server.h"
#include "vigil/server/http_client.h"
#include "vigil/sql/result_format.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::bench::server_bench {
namespace {

constexpr double kHttpRatioTarget = 0.7;  // HTTP / in-process queries/s at 4 connections
constexpr char kDb[] = "db";

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

struct Config {
  uint64_t rows;
  uint32_t dim, partitions, sub_vectors, k, nprobes;
  std::vector<int> connections;
  int duration_s, warmup_s, threads, query_set, write_connections, admissions;
  int pairs, pair_seconds, wrk_threads;
  bool vectors;
  std::string wrk;
};

Result<std::vector<int>> ParseList(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 10'000) {
      return Status::InvalidArgument("connections must be a comma-separated list of counts, e.g. 4,32");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return Status::InvalidArgument("connections is empty");
  return out;
}

// wrk from the option, or the first on PATH; FailedPrecondition naming the package otherwise.
Result<std::string> FindWrk(const std::string& given) {
  if (!given.empty()) {
    if (::access(given.c_str(), X_OK) == 0) return given;
    return Status::FailedPrecondition("wrk=" + given + " is not an executable");
  }
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/wrk";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return Status::FailedPrecondition(
      "`vigil bench server` drives the HTTP API with wrk, which is not installed: install the Debian package "
      "`wrk` (apt-get install wrk, or scripts/install-deps.sh), or pass --opt wrk=/path/to/wrk");
}

Result<Config> ParseConfig(const BenchArgs& args) {
  Config c;
  c.rows = static_cast<uint64_t>(args.Int("rows", 100000));
  c.dim = static_cast<uint32_t>(args.Int("dim", 128));
  c.partitions = static_cast<uint32_t>(args.Int("partitions", 256));
  c.sub_vectors = static_cast<uint32_t>(args.Int("sub_vectors", 16));
  c.k = static_cast<uint32_t>(args.Int("k", 10));
  c.nprobes = static_cast<uint32_t>(args.Int("nprobes", 20));
  VIGIL_ASSIGN_OR_RETURN(c.connections, ParseList(args.Str("connections", "4,32")));
  c.duration_s = static_cast<int>(args.Int("duration", 10));
  c.warmup_s = static_cast<int>(args.Int("warmup", 1));
  c.threads = static_cast<int>(args.Int("threads", 4));
  c.query_set = static_cast<int>(args.Int("query_set", 64));
  c.write_connections = static_cast<int>(args.Int("write_connections", 4));
  c.admissions = static_cast<int>(args.Int("admissions", 100));
  c.vectors = args.Int("vectors", 1) != 0;
  c.pairs = static_cast<int>(args.Int("pairs", 5));
  c.pair_seconds = static_cast<int>(args.Int("pair_seconds", 3));
  c.wrk_threads = static_cast<int>(args.Int("wrk_threads", 2));
  if (c.rows < c.partitions || c.duration_s < 1 || c.warmup_s < 0 || c.threads < 1 || c.query_set < 1 ||
      c.write_connections < 1 || c.admissions < 0 || c.dim % c.sub_vectors != 0 || c.pairs < 0 || c.pair_seconds < 1 ||
      c.wrk_threads < 1) {
    return Status::InvalidArgument(
        "need rows >= partitions, duration >= 1, threads, query_set, write_connections and wrk_threads >= 1, "
        "pairs >= 0, pair_seconds >= 1, and dim a multiple of sub_vectors");
  }
  VIGIL_ASSIGN_OR_RETURN(c.wrk, FindWrk(args.Str("wrk", "")));
  return c;
}

void Progress(const char* fmt, const std::string& what) {
  std::fprintf(stderr, fmt, what.c_str());
  std::fflush(stderr);
}

// ---- setup -------------------------------------------------------------------------------

struct Setup {
  std::string root_dir;
  std::shared_ptr<const DataGenerator> gen;
  std::string token;
  auth::Principal principal;  // the bench user's, as the server authenticates it
  double load_seconds = 0, index_seconds = 0;
};

Result<Setup> MakeRoot(const BenchArgs& args, const Config& c) {
  Setup s;
  s.root_dir = args.work_dir + "/server_bench_root";
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Init(s.root_dir));
  DatagenOptions o;
  o.rows = c.rows;
  o.dim = c.dim;
  o.columns = {"id", "emb"};
  VIGIL_ASSIGN_OR_RETURN(s.gen, DataGenerator::Make(o));
  VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
  catalog::TableCatalog catalog(&root, &store->catalog());
  auto t0 = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry docs, catalog.Create(TableName{"local", kDb, "docs"}, s.gen->schema(),
                                                                  {.operation = "CREATE_TABLE"}));
  VIGIL_ASSIGN_OR_RETURN(auto ds, catalog.Open(TableName{"local", kDb, "docs"}));
  auto reader = s.gen->NewReader();
  VIGIL_RETURN_IF_ERROR(ds->Append(reader.get(), {.operation = "APPEND"}).status());
  s.load_seconds = Since(t0);
  for (const char* t : {"writes_api", "writes_http"}) {
    VIGIL_RETURN_IF_ERROR(
        catalog.Create(TableName{"local", kDb, t}, s.gen->schema(), {.operation = "CREATE_TABLE"}).status());
  }
  Progress("server bench: %s rows loaded; building the IVF_PQ index...\n", std::to_string(c.rows));
  index::CreateIndexRequest req;
  req.dataset_path = docs.locator;
  req.dataset = catalog.Options(docs);
  req.column = "emb";
  req.name = "emb_idx";
  req.type = index::IndexType::kIvfPq;
  req.properties = {{"index_type", "IVF_PQ"},
                    {"metric", "l2"},
                    {"num_partitions", std::to_string(c.partitions)},
                    {"num_sub_vectors", std::to_string(c.sub_vectors)}};
  t0 = Clock::now();
  VIGIL_RETURN_IF_ERROR(index::CreateVectorIndex(req).status());
  s.index_seconds = Since(t0);

  VIGIL_ASSIGN_OR_RETURN(auto principals, auth::OpenRootPrincipalStore(root));
  VIGIL_ASSIGN_OR_RETURN(auth::IssuedToken issued, principals->CreateUser("default", "bench", true));
  s.token = issued.token;
  VIGIL_ASSIGN_OR_RETURN(auth::Authenticated who, principals->Authenticate(s.token));
  s.principal = who.principal;
  return s;
}

// The HTTP body of a vector query, and the SELECT with its bound vector that the route
// builds from it (server::QueryStatement).
struct QueryCase {
  std::string body;  // no "select": every column but the vectors
  server::BoundQuery sql;
  std::string vectors_body;  // "select": ["id", "emb", "_distance"]
  server::BoundQuery vectors_sql;
  std::vector<float> vector;
};

// Query bodies and, through the route's own functions, the exact bound SELECT each becomes.
Result<std::vector<QueryCase>> MakeQueries(const Setup& s, const Config& c) {
  std::vector<QueryCase> out;
  const uint32_t dim = c.dim;
  for (int q = 0; q < c.query_set; ++q) {
    QueryCase qc;
    qc.vector.resize(dim);
    s.gen->Embedding(c.rows + 1000 + static_cast<uint64_t>(q), qc.vector.data());
    nlohmann::json body = {{"vector", qc.vector}, {"column", "emb"}, {"k", c.k}, {"nprobes", c.nprobes}};
    qc.body = body.dump();
    body["select"] = {"id", "emb", "_distance"};
    qc.vectors_body = body.dump();
    const std::string table = std::string(kDb) + ".docs";
    VIGIL_ASSIGN_OR_RETURN(server::QueryRequest plain, server::ParseQueryRequest(qc.body));
    plain.select = server::DefaultSelect(*s.gen->schema(), plain);
    VIGIL_ASSIGN_OR_RETURN(qc.sql, server::QueryStatement(table, plain));
    VIGIL_ASSIGN_OR_RETURN(server::QueryRequest vectors, server::ParseQueryRequest(qc.vectors_body));
    VIGIL_ASSIGN_OR_RETURN(qc.vectors_sql, server::QueryStatement(table, vectors));
    out.push_back(std::move(qc));
  }
  return out;
}

// ---- in-process drivers --------------------------------------------------------------------

struct Drive {
  double per_second = 0;  // operations completed, failed ones included (as wrk counts)
  double ok_per_second = 0;
  int64_t count = 0, failed = 0;
  double cpu_us_per_op = 0;  // this process's CPU per operation
  std::vector<double> latencies_us;
};

// `clients` threads call op(client, i) for `warmup` seconds (not counted) and then `seconds`.
// An error ends the run, except one `tolerated` accepts: counted as failed, and the client goes on.
Result<Drive> DriveClients(int clients, double warmup, double seconds, const std::function<Status(int, int64_t)>& op,
                           const std::function<bool(const Status&)>& tolerated = nullptr) {
  std::atomic<int64_t> failed{0};
  std::atomic<int> phase{0};  // 0 warm-up, 1 measured, 2 stop
  std::mutex mu;
  Status first_error;
  Drive out;
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int64_t i = 0;; ++i) {
        const int ph = phase.load(std::memory_order_relaxed);
        if (ph == 2) return;
        auto t0 = Clock::now();
        Status st = op(c, i);
        double us = Since(t0) * 1e6;
        const bool measured = ph == 1 && phase.load(std::memory_order_relaxed) == 1;
        if (!st.ok() && tolerated && tolerated(st)) {
          if (measured) failed.fetch_add(1);
        } else if (!st.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) first_error = st;
          phase = 2;
          return;
        }
        if (measured) lat[static_cast<size_t>(c)].push_back(us);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
  int expected = 0;
  phase.compare_exchange_strong(expected, 1);
  const double cpu0 = SelfCpuSeconds();
  auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  expected = 1;
  phase.compare_exchange_strong(expected, 2);
  const double elapsed = Since(start);
  const double cpu = SelfCpuSeconds() - cpu0;
  for (auto& t : threads) t.join();
  VIGIL_RETURN_IF_ERROR(first_error);
  for (auto& l : lat) out.latencies_us.insert(out.latencies_us.end(), l.begin(), l.end());
  out.count = static_cast<int64_t>(out.latencies_us.size());
  out.failed = failed.load();
  out.per_second = static_cast<double>(out.count) / elapsed;
  out.ok_per_second = static_cast<double>(out.count - out.failed) / elapsed;
  out.cpu_us_per_op = out.count ? cpu * 1e6 / static_cast<double>(out.count) : 0;
  return out;
}

nlohmann::json DriveJson(const Drive& d, int clients) {
  return {{"clients", clients},
          {"per_second", d.per_second},
          {"ok_per_second", d.ok_per_second},
          {"requests", d.count},
          {"failed", d.failed},
          {"p50_us", Percentile(d.latencies_us, 0.5)},
          {"p99_us", Percentile(d.latencies_us, 0.99)},
          {"mean_us", Mean(d.latencies_us)},
          {"cpu_us_per_request", d.cpu_us_per_op}};
}

// ---- wrk ---------------------------------------------------------------------------------

struct WrkRun {
  double per_second = 0, mean_us = 0, p50_us = 0, p75_us = 0, p90_us = 0, p99_us = 0;
  int64_t requests = 0, non_2xx = 0, socket_errors = 0;
  double server_cpu_us_per_request = 0, wrk_cpu_us_per_request = 0;
  double handler_mean_us = 0;  // the server's own time per request of the route (GET /metrics)
  int connections = 0;
  std::string output;
};

double ToMicros(double v, const std::string& unit) {
  if (unit == "us") return v;
  if (unit == "ms") return v * 1e3;
  if (unit == "s") return v * 1e6;
  if (unit == "m") return v * 60e6;
  return v;
}

Result<WrkRun> ParseWrk(const std::string& out) {
  WrkRun r;
  r.output = out;
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(Requests/sec:\s+([0-9.]+))"))) {
    return Status::Internal("no Requests/sec in wrk's output:\n" + out);
  }
  r.per_second = std::stod(m[1].str());
  if (std::regex_search(out, m, std::regex(R"(\n\s*Latency\s+([0-9.]+)(us|ms|s|m)\s)"))) {
    r.mean_us = ToMicros(std::stod(m[1].str()), m[2].str());
  }
  const std::pair<const char*, double*> pcts[] = {
      {"50", &r.p50_us}, {"75", &r.p75_us}, {"90", &r.p90_us}, {"99", &r.p99_us}};
  for (const auto& [p, dst] : pcts) {
    if (!std::regex_search(out, m, std::regex(std::string(R"(\n\s*)") + p + R"(%\s+([0-9.]+)(us|ms|s|m))"))) {
      return Status::Internal(std::string("no ") + p + "% latency in wrk's output (--latency):\n" + out);
    }
    *dst = ToMicros(std::stod(m[1].str()), m[2].str());
  }
  if (std::regex_search(out, m, std::regex(R"((\d+) requests in)"))) r.requests = std::stoll(m[1].str());
  if (std::regex_search(out, m, std::regex(R"(Non-2xx or 3xx responses: (\d+))"))) r.non_2xx = std::stoll(m[1].str());
  if (std::regex_search(out, m,
                        std::regex(R"(Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+))"))) {
    for (int i = 1; i <= 4; ++i) r.socket_errors += std::stoll(m[i].str());
  }
  return r;
}

// (sum seconds, count) of the server's request-duration histogram for `route`.
Result<std::pair<double, int64_t>> HandlerTotals(server::HttpClient& client, const std::string& route) {
  VIGIL_ASSIGN_OR_RETURN(server::ClientResponse resp, client.Call("GET", "/metrics"));
  if (resp.status != 200) return Status::Internal("GET /metrics answered " + std::to_string(resp.status));
  std::pair<double, int64_t> out{0, 0};
  const std::string label = "{route=\"" + route + "\"} ";
  std::stringstream ss(resp.body);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind("vigil_http_request_duration_seconds_sum" + label, 0) == 0) {
      out.first = std::stod(line.substr(line.rfind(' ') + 1));
    } else if (line.rfind("vigil_http_request_duration_seconds_count" + label, 0) == 0) {
      out.second = std::stoll(line.substr(line.rfind(' ') + 1));
    }
  }
  return out;
}

// Runs wrk (stdout and stderr captured) and returns its parsed figures; this process's CPU
// over the run (the server: nothing else runs) and wrk's per request.
Result<WrkRun> RunWrk(const Config& c, int threads, int connections, int seconds, const std::string& script,
                      const std::string& url, server::HttpClient* metrics, const std::string& route) {
  std::vector<std::string> argv = {c.wrk,
                                   "-t" + std::to_string(threads),
                                   "-c" + std::to_string(connections),
                                   "-d" + std::to_string(seconds) + "s",
                                   "--timeout",
                                   "30s",
                                   "--latency",
                                   "-s",
                                   script,
                                   url};
  std::pair<double, int64_t> before{0, 0};
  if (metrics) {
    VIGIL_ASSIGN_OR_RETURN(before, HandlerTotals(*metrics, route));
  }
  const double cpu0 = SelfCpuSeconds();
  VIGIL_ASSIGN_OR_RETURN(ProgramRun wrk, RunProgram(argv));
  const double server_cpu = SelfCpuSeconds() - cpu0;
  VIGIL_ASSIGN_OR_RETURN(WrkRun r, ParseWrk(wrk.output));
  r.connections = connections;
  const double wrk_cpu = wrk.cpu_seconds;
  if (r.requests > 0) {
    r.server_cpu_us_per_request = server_cpu * 1e6 / static_cast<double>(r.requests);
    r.wrk_cpu_us_per_request = wrk_cpu * 1e6 / static_cast<double>(r.requests);
  }
  if (metrics) {
    VIGIL_ASSIGN_OR_RETURN(auto after, HandlerTotals(*metrics, route));
    const int64_t n = after.second - before.second;
    if (n > 0) r.handler_mean_us = (after.first - before.first) * 1e6 / static_cast<double>(n);
  }
  return r;
}

// The pairs' ratios (HTTP over in-process), in the order run, with each side's rate.
struct Pairs {
  std::vector<double> ratios, in_process, http;
  double median = 0;
};

// `c.pairs` alternations of an in-process run of `op` at `c.threads` clients and a wrk run of
// `script` at `c.threads` connections, each `c.pair_seconds` long: a change of the machine's
// speed hits both sides of a pair alike.
Result<Pairs> RunPairs(const Config& c, const std::function<Status(int, int64_t)>& op, const std::string& script,
                       const std::string& url) {
  Pairs p;
  for (int i = 0; i < c.pairs; ++i) {
    VIGIL_ASSIGN_OR_RETURN(Drive d, DriveClients(c.threads, 0.5, c.pair_seconds, op));
    VIGIL_ASSIGN_OR_RETURN(
        WrkRun w, RunWrk(c, std::min(c.wrk_threads, c.threads), c.threads, c.pair_seconds, script, url, nullptr, ""));
    if (w.non_2xx + w.socket_errors > 0) {
      return Status::Internal("an HTTP query failed in pair " + std::to_string(i) + ":\n" + w.output);
    }
    p.in_process.push_back(d.per_second);
    p.http.push_back(w.per_second);
    p.ratios.push_back(d.per_second > 0 ? w.per_second / d.per_second : 0);
  }
  if (!p.ratios.empty()) p.median = Percentile(p.ratios, 0.5);
  return p;
}

nlohmann::json WrkJson(const WrkRun& r, int threads, int connections) {
  return {{"wrk_threads", threads},
          {"connections", connections},
          {"per_second", r.per_second},
          {"requests", r.requests},
          {"mean_us", r.mean_us},
          {"p50_us", r.p50_us},
          {"p75_us", r.p75_us},
          {"p90_us", r.p90_us},
          {"p99_us", r.p99_us},
          {"non_2xx", r.non_2xx},
          {"socket_errors", r.socket_errors},
          {"server_cpu_us_per_request", r.server_cpu_us_per_request},
          {"wrk_cpu_us_per_request", r.wrk_cpu_us_per_request},
          {"server_handler_mean_us", r.handler_mean_us},
          // Little's law: connections / throughput is the mean time a request spends in the loop;
          // what the handler does not account for is HTTP I/O, wrk, and waiting for a core.
          {"outside_handler_mean_us",
           r.per_second > 0 && r.handler_mean_us > 0 ? connections * 1e6 / r.per_second - r.handler_mean_us : 0}};
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f.good()) return Status::IOError("cannot write " + path);
  return Status::OK();
}

std::string LuaString(const std::string& s) { return "[==[" + s + "]==]"; }

// POSTs the query bodies in turn (each wrk thread from its own offset). Each thread formats
// its requests once, in init: the load generator then spends no CPU building them, CPU it
// would take from the server on the same cores.
std::string QueryScript(const std::vector<QueryCase>& queries, bool vectors, const std::string& token,
                        const std::string& path) {
  std::string s = "local bodies = {\n";
  for (const auto& q : queries) s += "  " + LuaString(vectors ? q.vectors_body : q.body) + ",\n";
  s += "}\n"
       "local n = #bodies\n"
       "local requests = {}\n"
       "local i = 0\n"
       "local threads = 0\n"
       "function setup(thread)\n"
       "  thread:set(\"tid\", threads)\n"
       "  threads = threads + 1\n"
       "end\n"
       "wrk.method = \"POST\"\n"
       "wrk.headers[\"Content-Type\"] = \"application/json\"\n"
       "wrk.headers[\"Authorization\"] = \"Bearer " +
       token +
       "\"\n"
       "function init(args)\n"
       "  i = ((tid or 0) * 17) % n\n"
       "  for j = 1, n do requests[j] = wrk.format(nil, \"" +
       path +
       "\", nil, bodies[j]) end\n"
       "end\n"
       "function request()\n"
       "  i = i % n + 1\n"
       "  return requests[i]\n"
       "end\n";
  return s;
}

std::string VectorJson(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", v[i]);
    if (i) s += ',';
    s += buf;
  }
  return s + "]";
}

// One row per request, a unique Idempotency-Key ("<nonce>-<wrk thread>-<n>") and row id.
std::string WriteScript(const std::vector<std::string>& embs, const std::string& token, const std::string& path,
                        const std::string& nonce) {
  std::string s = "local embs = {\n";
  for (const auto& e : embs) s += "  " + LuaString(e) + ",\n";
  s += "}\n"
       "local m = #embs\n"
       "local n = 0\n"
       "local threads = 0\n"
       "function setup(thread)\n"
       "  thread:set(\"tid\", threads)\n"
       "  threads = threads + 1\n"
       "end\n"
       "wrk.method = \"POST\"\n"
       "wrk.headers[\"Content-Type\"] = \"application/json\"\n"
       "wrk.headers[\"Authorization\"] = \"Bearer " +
       token +
       "\"\n"
       "function request()\n"
       "  n = n + 1\n"
       "  local t = tid or 0\n"
       "  wrk.headers[\"Idempotency-Key\"] = \"" +
       nonce +
       "-\" .. t .. \"-\" .. n\n"
       "  local body = '{\"rows\":[{\"id\":' .. (t * 1000000000 + n) .. ',\"emb\":' .. embs[n % m + 1] .. '}]}'\n"
       "  return wrk.format(nil, \"" +
       path +
       "\", nil, body)\n"
       "end\n";
  return s;
}

// ---- the benchmark -----------------------------------------------------------------------

struct Row {
  std::string what;
  int concurrency;
  double per_second, p50_us, p99_us;
  std::string vs;
};

void PrintTable(const std::vector<Row>& rows) {
  std::fprintf(stderr, "\n%-44s %5s %11s %10s %10s  %s\n", "path", "conc", "req/s", "p50 us", "p99 us", "vs baseline");
  for (const Row& r : rows) {
    std::fprintf(stderr, "%-44s %5d %11.1f %10.0f %10.0f  %s\n", r.what.c_str(), r.concurrency, r.per_second, r.p50_us,
                 r.p99_us, r.vs.c_str());
  }
}

std::string Ratio(double num, double den) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2fx", den > 0 ? num / den : 0);
  return buf;
}

Result<nlohmann::json> Run(const BenchArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(Config c, ParseConfig(args));
  VIGIL_ASSIGN_OR_RETURN(Setup s, MakeRoot(args, c));
  VIGIL_ASSIGN_OR_RETURN(const std::vector<QueryCase> queries, MakeQueries(s, c));
  const size_t nq = queries.size();
  const std::string docs_path = "/v1/databases/" + std::string(kDb) + "/tables/docs/query";
  const std::string query_route = "/v1/databases/{db}/tables/{table}/query";
  const std::string rows_route = "/v1/databases/{db}/tables/{table}/rows";
  nlohmann::json out;
  out["config"] = {{"rows", c.rows},
                   {"dim", c.dim},
                   {"partitions", c.partitions},
                   {"sub_vectors", c.sub_vectors},
                   {"k", c.k},
                   {"nprobes", c.nprobes},
                   {"duration_s", c.duration_s},
                   {"warmup_s", c.warmup_s},
                   {"threads", c.threads},
                   {"connections", c.connections},
                   {"query_set", c.query_set},
                   {"write_connections", c.write_connections},
                   {"admissions", c.admissions},
                   {"vectors", c.vectors},
                   {"cores", std::thread::hardware_concurrency()},
                   {"wrk", c.wrk}};
  out["setup"] = {{"load_seconds", s.load_seconds}, {"index_seconds", s.index_seconds}};
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) == 3) out["load_average_at_start"] = {load[0], load[1], load[2]};
  std::vector<Row> table;

  // In-process sessions (one per client thread), bound to the bench user as the server's are.
  sql::SessionOptions so;
  so.principal = s.principal;
  so.file_access = sql::FileAccess::kServer;
  const int max_clients = std::max(c.threads, c.write_connections);
  std::vector<std::unique_ptr<sql::Session>> sessions;
  for (int i = 0; i < max_clients; ++i) {
    VIGIL_ASSIGN_OR_RETURN(auto session, sql::Session::Open(s.root_dir, so));
    sessions.push_back(std::move(session));
  }
  // The reference answer of query 0, compared with the HTTP answer below.
  VIGIL_ASSIGN_OR_RETURN(sql::ResultSet reference, sessions[0]->Select(queries[0].sql.sql, queries[0].sql.params));
  if (reference.rows.size() != c.k) {
    return Status::Internal("the in-process query returned " + std::to_string(reference.rows.size()) + " rows");
  }

  // The server, checked to answer query 0 as the session did, and warmed up (its pool's
  // sessions open on first use). It idles while the in-process figures are taken; each
  // in-process figure is taken right before the HTTP one it is compared with, so that a
  // change of load on a shared machine hits both alike.
  server::ApiServerOptions api;
  api.root_dir = s.root_dir;
  api.http.host = "127.0.0.1";
  api.http.port = 0;
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<server::ApiServer> srv, server::ApiServer::Start(api));
  const std::string base = "http://127.0.0.1:" + std::to_string(srv->port());
  VIGIL_ASSIGN_OR_RETURN(auto client, server::HttpClient::Connect(base));
  const std::vector<std::pair<std::string, std::string>> auth_headers = {{"Authorization", "Bearer " + s.token},
                                                                         {"Content-Type", "application/json"}};
  {
    VIGIL_ASSIGN_OR_RETURN(server::ClientResponse r, client->Call("POST", docs_path, auth_headers, queries[0].body));
    if (r.status != 200)
      return Status::Internal("POST " + docs_path + " answered " + std::to_string(r.status) + ": " + r.body);
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    out["queries"]["http_response_body_bytes"] = r.body.size();
    if (j.is_discarded() || !j.contains("rows") || j["rows"].size() != reference.rows.size()) {
      return Status::Internal("the HTTP query's answer differs from the in-process one: " + r.body.substr(0, 300));
    }
    const size_t id_col =
        std::find(reference.columns.begin(), reference.columns.end(), "id") - reference.columns.begin();
    for (size_t i = 0; i < reference.rows.size(); ++i) {
      if (id_col >= reference.columns.size() || j["rows"][i]["id"] != std::get<int64_t>(reference.rows[i][id_col])) {
        return Status::Internal("the HTTP query's ids differ from the in-process ones");
      }
    }
  }
  const std::string query_lua = args.work_dir + "/server_bench_query.lua";
  VIGIL_RETURN_IF_ERROR(WriteFile(query_lua, QueryScript(queries, false, s.token, docs_path)));
  if (c.warmup_s > 0) {
    VIGIL_RETURN_IF_ERROR(RunWrk(c, 2, std::max(c.threads, 2), c.warmup_s, query_lua, base, nullptr, "").status());
  }

  auto sql_op = [&](int t, int64_t i) -> Status {
    const server::BoundQuery& q = queries[static_cast<size_t>(t * 17 + i) % nq].sql;
    return sessions[static_cast<size_t>(t)]->Select(q.sql, q.params).status();
  };
  Progress("server bench: %s\n", "queries: serial, in process then HTTP");
  VIGIL_ASSIGN_OR_RETURN(Drive sql_serial, DriveClients(1, c.warmup_s, c.duration_s, sql_op));
  VIGIL_ASSIGN_OR_RETURN(WrkRun http_serial, RunWrk(c, 1, 1, c.duration_s, query_lua, base, client.get(), query_route));
  Progress("server bench: %s\n", ("queries: " + std::to_string(c.threads) + " threads in process, then HTTP"));
  VIGIL_ASSIGN_OR_RETURN(Drive sql_par, DriveClients(c.threads, c.warmup_s, c.duration_s, sql_op));
  std::vector<std::pair<int, WrkRun>> http_runs;
  for (int conns : c.connections) {
    VIGIL_ASSIGN_OR_RETURN(WrkRun r, RunWrk(c, std::min(c.wrk_threads, conns), conns, c.duration_s, query_lua, base,
                                            client.get(), query_route));
    http_runs.emplace_back(conns, std::move(r));
  }
  if (c.pairs > 0) {
    Progress("server bench: %s\n", "queries: " + std::to_string(c.pairs) + " pairs of in-process and HTTP runs");
  }
  VIGIL_ASSIGN_OR_RETURN(Pairs pairs, RunPairs(c, sql_op, query_lua, base));

  Progress("server bench: %s\n", "queries: VectorSearch + TakeRows in process");
  std::vector<std::shared_ptr<const query::TableSnapshot>> snapshots;
  {
    VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(s.root_dir));
    VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
    catalog::TableCatalog catalog(&root, &store->catalog());
    for (int i = 0; i < c.threads; ++i) {
      VIGIL_ASSIGN_OR_RETURN(auto ds, catalog.Open(TableName{"local", kDb, "docs"}));
      VIGIL_ASSIGN_OR_RETURN(auto snap, query::TableSnapshot::Open(ds));
      snapshots.push_back(std::move(snap));
    }
  }
  // The table's columns the route's default SELECT answers (its answer's, but _distance).
  std::vector<std::string> plain_columns = reference.columns;
  std::erase(plain_columns, "_distance");
  query::VectorQueryOptions vopts;
  vopts.k = c.k;
  vopts.nprobes = c.nprobes;
  auto api_op = [&](int t, int64_t i) -> Status {
    const auto& snap = *snapshots[static_cast<size_t>(t)];
    VIGIL_ASSIGN_OR_RETURN(
        auto hits, query::VectorSearch(snap, "emb", queries[static_cast<size_t>(t * 17 + i) % nq].vector, vopts));
    std::vector<RowAddress> rows;
    for (const auto& h : hits) rows.push_back(h.row);
    return query::TakeRows(snap, rows, plain_columns).status();
  };
  VIGIL_ASSIGN_OR_RETURN(Drive api_serial, DriveClients(1, c.warmup_s, c.duration_s, api_op));
  VIGIL_ASSIGN_OR_RETURN(Drive api_par, DriveClients(c.threads, c.warmup_s, c.duration_s, api_op));
  snapshots.clear();

  out["queries"]["in_process_sql"] = {{"serial", DriveJson(sql_serial, 1)},
                                      {"parallel", DriveJson(sql_par, c.threads)}};
  out["queries"]["in_process_query_api"] = {{"serial", DriveJson(api_serial, 1)},
                                            {"parallel", DriveJson(api_par, c.threads)}};
  table.push_back({"in-process Session::Select (bound vector)", 1, sql_serial.per_second,
                   Percentile(sql_serial.latencies_us, 0.5), Percentile(sql_serial.latencies_us, 0.99), "baseline"});
  table.push_back({"in-process Session::Select (bound vector)", c.threads, sql_par.per_second,
                   Percentile(sql_par.latencies_us, 0.5), Percentile(sql_par.latencies_us, 0.99), "baseline"});
  table.push_back({"in-process VectorSearch + TakeRows", 1, api_serial.per_second,
                   Percentile(api_serial.latencies_us, 0.5), Percentile(api_serial.latencies_us, 0.99),
                   Ratio(api_serial.per_second, sql_serial.per_second) + " of SQL"});
  table.push_back({"in-process VectorSearch + TakeRows", c.threads, api_par.per_second,
                   Percentile(api_par.latencies_us, 0.5), Percentile(api_par.latencies_us, 0.99),
                   Ratio(api_par.per_second, sql_par.per_second) + " of SQL"});

  out["queries"]["http"]["serial"] = WrkJson(http_serial, 1, 1);
  table.push_back({"HTTP POST .../query (wrk -t1)", 1, http_serial.per_second, http_serial.p50_us, http_serial.p99_us,
                   Ratio(http_serial.per_second, sql_serial.per_second) + " of serial"});
  std::string summary_ratios;
  nlohmann::json ratios;
  double cpu_ratio4 = 0;
  int64_t errors = http_serial.non_2xx + http_serial.socket_errors;
  for (const auto& [conns, r] : http_runs) {
    const int wt = std::min(c.wrk_threads, conns);
    errors += r.non_2xx + r.socket_errors;
    out["queries"]["http"]["c" + std::to_string(conns)] = WrkJson(r, wt, conns);
    const double ratio = sql_par.per_second > 0 ? r.per_second / sql_par.per_second : 0;
    ratios["http_c" + std::to_string(conns) + "_over_in_process_sql_" + std::to_string(c.threads) + "_threads"] = ratio;
    ratios["http_c" + std::to_string(conns) + "_over_query_api_" + std::to_string(c.threads) + "_threads"] =
        api_par.per_second > 0 ? r.per_second / api_par.per_second : 0;
    // Load-independent: in-process CPU per query over HTTP CPU per request (server + wrk).
    const double cpu_ratio = sql_par.cpu_us_per_op / (r.server_cpu_us_per_request + r.wrk_cpu_us_per_request);
    ratios["http_c" + std::to_string(conns) + "_cpu_per_request_ratio"] = cpu_ratio;
    if (conns == 4) cpu_ratio4 = cpu_ratio;
    table.push_back({"HTTP POST .../query (wrk -t" + std::to_string(wt) + ")", conns, r.per_second, r.p50_us, r.p99_us,
                     Ratio(r.per_second, sql_par.per_second) + " of in-process x" + std::to_string(c.threads)});
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%.2fx at %d connections", summary_ratios.empty() ? "" : ", ", ratio, conns);
    summary_ratios += buf;
  }
  out["queries"]["ratios"] = ratios;
  if (c.pairs > 0) {
    out["queries"]["pairs"] = {{"connections", c.threads},      {"seconds", c.pair_seconds},
                               {"ratios", pairs.ratios},        {"in_process_per_second", pairs.in_process},
                               {"http_per_second", pairs.http}, {"median_ratio", pairs.median}};
    char buf[160];
    std::snprintf(buf, sizeof(buf), "; paired at %d: median %.2fx (%.2fx-%.2fx, %d pairs of %d s)", c.threads,
                  pairs.median, *std::min_element(pairs.ratios.begin(), pairs.ratios.end()),
                  *std::max_element(pairs.ratios.begin(), pairs.ratios.end()), c.pairs, c.pair_seconds);
    summary_ratios += buf;
  }
  const double serial_ratio = sql_serial.per_second > 0 ? http_serial.per_second / sql_serial.per_second : 0;
  out["queries"]["ratios"]["http_serial_over_in_process_sql_serial"] = serial_ratio;
  out["queries"]["ratios"]["http_serial_cpu_per_request_ratio"] =
      sql_serial.cpu_us_per_op / (http_serial.server_cpu_us_per_request + http_serial.wrk_cpu_us_per_request);

  // Per-request steps the HTTP route adds, timed in process (serial, means).
  {
    VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(s.root_dir));
    VIGIL_ASSIGN_OR_RETURN(auto principals, auth::OpenRootPrincipalStore(root));
    const int n = 2000;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) VIGIL_RETURN_IF_ERROR(principals->Authenticate(s.token).status());
    const double auth_us = Since(t0) * 1e6 / n;
    t0 = Clock::now();
    size_t sink = 0;
    for (int i = 0; i < n; ++i) {
      VIGIL_ASSIGN_OR_RETURN(server::QueryRequest q,
                             server::ParseQueryRequest(queries[static_cast<size_t>(i) % nq].body));
      q.select = server::DefaultSelect(*s.gen->schema(), q);
      VIGIL_ASSIGN_OR_RETURN(server::BoundQuery statement, server::QueryStatement("db.docs", q));
      sink += statement.sql.size();
    }
    const double parse_us = Since(t0) * 1e6 / n;
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) sink += server::RowsDocument(reference).size();
    const double response_us = Since(t0) * 1e6 / n;
    const std::string response_text = server::RowsDocument(reference);
    VIGIL_ASSIGN_OR_RETURN(sql::ResultSet with_vectors,
                           sessions[0]->Select(queries[0].vectors_sql.sql, queries[0].vectors_sql.params));
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) sink += server::RowsDocument(with_vectors).size();
    const double vectors_response_us = Since(t0) * 1e6 / n;
    out["http_steps_in_process_us"] = {{"authenticate_token", auth_us},
                                       {"request_json_parse_and_sql_text", parse_us},
                                       {"response_json", response_us},
                                       {"request_body_bytes", queries[0].body.size()},
                                       {"response_body_bytes", response_text.size()},
                                       {"response_json_with_vectors", vectors_response_us},
                                       {"response_body_bytes_with_vectors", server::RowsDocument(with_vectors).size()},
                                       {"sink", sink % 2}};
  }

  // The same queries answering each row's vector too, as its elements.
  double vectors_ratio = 0;
  if (c.vectors) {
    Progress("server bench: %s\n", "queries with \"select\": [\"id\", \"emb\", \"_distance\"]");
    auto vectors_op = [&](int t, int64_t i) -> Status {
      const server::BoundQuery& q = queries[static_cast<size_t>(t * 17 + i) % nq].vectors_sql;
      return sessions[static_cast<size_t>(t)]->Select(q.sql, q.params).status();
    };
    VIGIL_ASSIGN_OR_RETURN(Drive vectors_par, DriveClients(c.threads, c.warmup_s, c.duration_s, vectors_op));
    const std::string vectors_lua = args.work_dir + "/server_bench_query_vectors.lua";
    VIGIL_RETURN_IF_ERROR(WriteFile(vectors_lua, QueryScript(queries, true, s.token, docs_path)));
    const int wt = std::min(c.wrk_threads, c.threads);
    VIGIL_ASSIGN_OR_RETURN(WrkRun vr,
                           RunWrk(c, wt, c.threads, c.duration_s, vectors_lua, base, client.get(), query_route));
    errors += vr.non_2xx + vr.socket_errors;
    vectors_ratio = vectors_par.per_second > 0 ? vr.per_second / vectors_par.per_second : 0;
    out["queries"]["with_vectors"] = {
        {"in_process_sql", DriveJson(vectors_par, c.threads)},
        {"http", WrkJson(vr, wt, c.threads)},
        {"ratio_http_over_in_process", vectors_ratio},
        {"cpu_per_request_ratio",
         vectors_par.cpu_us_per_op / (vr.server_cpu_us_per_request + vr.wrk_cpu_us_per_request)}};
    table.push_back({"in-process Select, SELECT id, emb, _distance", c.threads, vectors_par.per_second,
                     Percentile(vectors_par.latencies_us, 0.5), Percentile(vectors_par.latencies_us, 0.99),
                     "baseline"});
    table.push_back({"HTTP .../query, select id, emb, _distance", c.threads, vr.per_second, vr.p50_us, vr.p99_us,
                     Ratio(vr.per_second, vectors_par.per_second)});
  }
  out["queries"]["http_errors"] = errors;

  // ---- idempotent writes ----
  Progress("server bench: %s\n", "idempotent 1-row appends");
  std::vector<std::string> embs;
  for (int e = 0; e < 16; ++e) {
    std::vector<float> v(c.dim);
    s.gen->Embedding(static_cast<uint64_t>(e) * 7919 % c.rows, v.data());
    embs.push_back(VectorJson(v));
  }
  const std::string nonce = Uuid::Generate().ToString().substr(0, 8);
  auto write_op = [&](int t, int64_t i) -> Status {
    const int64_t id = static_cast<int64_t>(t) * 1'000'000'000 + i;
    const std::string file = args.work_dir + "/server_bench_row_" + std::to_string(t) + ".jsonl";
    VIGIL_RETURN_IF_ERROR(WriteFile(
        file, "{\"id\":" + std::to_string(id) + ",\"emb\":" + embs[static_cast<size_t>(i) % embs.size()] + "}\n"));
    return sessions[static_cast<size_t>(t)]
        ->CopyUpload(sql::TableRef{"", kDb, "writes_api"}, file, sql::CopyFormat::kJsonl,
                     jobs::RequestClaim{"bench:api/" + nonce + "-" + std::to_string(t) + "-" + std::to_string(i)})
        .status();
  };
  // Concurrent appends to one table rebase on each other; one that loses every rebase fails
  // with COMMIT_CONFLICT (HTTP 409, counted by wrk as non-2xx): counted here too, not fatal.
  auto conflict = [](const Status& st) { return st.code() == StatusCode::kCommitConflict; };
  VIGIL_ASSIGN_OR_RETURN(Drive write_api, DriveClients(c.write_connections, 0, c.duration_s, write_op, conflict));
  const std::string write_lua = args.work_dir + "/server_bench_write.lua";
  const std::string rows_path = "/v1/databases/" + std::string(kDb) + "/tables/writes_http/rows";
  VIGIL_RETURN_IF_ERROR(WriteFile(write_lua, WriteScript(embs, s.token, rows_path, nonce)));
  const int wwt = std::min(c.wrk_threads, c.write_connections);
  VIGIL_ASSIGN_OR_RETURN(WrkRun write_http,
                         RunWrk(c, wwt, c.write_connections, c.duration_s, write_lua, base, client.get(), rows_route));
  const double http_ok_per_second =
      write_http.requests > 0 ? write_http.per_second * static_cast<double>(write_http.requests - write_http.non_2xx) /
                                    static_cast<double>(write_http.requests)
                              : 0;
  out["writes"] = {
      {"in_process_copy_upload", DriveJson(write_api, c.write_connections)},
      {"http", WrkJson(write_http, wwt, c.write_connections)},
      {"http_ok_per_second", http_ok_per_second},
      {"ratio_http_over_in_process", write_api.ok_per_second > 0 ? http_ok_per_second / write_api.ok_per_second : 0}};
  out["writes"]["http"]["ok_per_second"] = http_ok_per_second;
  table.push_back({"in-process Session::CopyUpload, 1 row", c.write_connections, write_api.ok_per_second,
                   Percentile(write_api.latencies_us, 0.5), Percentile(write_api.latencies_us, 0.99),
                   "baseline; " + std::to_string(write_api.failed) + " of " + std::to_string(write_api.count) +
                       " COMMIT_CONFLICT"});
  table.push_back({"HTTP POST .../rows, 1 row, Idempotency-Key", c.write_connections, http_ok_per_second,
                   write_http.p50_us, write_http.p99_us,
                   Ratio(http_ok_per_second, write_api.ok_per_second) + "; " + std::to_string(write_http.non_2xx) +
                       " of " + std::to_string(write_http.requests) + " non-2xx"});

  // ---- index admissions ----
  if (c.admissions > 0) {
    Progress("server bench: %s\n", "index admissions");
    std::vector<double> api_us, http_us;
    auto t0 = Clock::now();
    for (int i = 0; i < c.admissions; ++i) {
      auto q0 = Clock::now();
      VIGIL_RETURN_IF_ERROR(
          sessions[0]
              ->Execute("CREATE INDEX adm_api_" + std::to_string(i) + " ON " + kDb + ".docs (id) USING BTREE")
              .status());
      api_us.push_back(Since(q0) * 1e6);
    }
    const double api_rate = c.admissions / Since(t0);
    const std::string idx_path = "/v1/databases/" + std::string(kDb) + "/tables/docs/indexes";
    t0 = Clock::now();
    for (int i = 0; i < c.admissions; ++i) {
      auto headers = auth_headers;
      headers.emplace_back("Idempotency-Key", nonce + "-adm-" + std::to_string(i));
      nlohmann::json body = {{"name", "adm_http_" + std::to_string(i)}, {"using", "BTREE"}, {"columns", {"id"}}};
      auto q0 = Clock::now();
      VIGIL_ASSIGN_OR_RETURN(server::ClientResponse r, client->Call("POST", idx_path, headers, body.dump()));
      http_us.push_back(Since(q0) * 1e6);
      if (r.status != 202) {
        return Status::Internal("POST " + idx_path + " answered " + std::to_string(r.status) + ": " + r.body);
      }
    }
    const double http_rate = c.admissions / Since(t0);
    out["admissions"] = {
        {"in_process_sql",
         {{"per_second", api_rate}, {"p50_us", Percentile(api_us, 0.5)}, {"p99_us", Percentile(api_us, 0.99)}}},
        {"http",
         {{"per_second", http_rate}, {"p50_us", Percentile(http_us, 0.5)}, {"p99_us", Percentile(http_us, 0.99)}}},
        {"requests", c.admissions},
        {"ratio_http_over_in_process", api_rate > 0 ? http_rate / api_rate : 0}};
    table.push_back({"in-process CREATE INDEX ... BTREE (admission)", 1, api_rate, Percentile(api_us, 0.5),
                     Percentile(api_us, 0.99), "baseline"});
    table.push_back({"HTTP POST .../indexes (HttpClient, admission)", 1, http_rate, Percentile(http_us, 0.5),
                     Percentile(http_us, 0.99), Ratio(http_rate, api_rate)});
  }
  srv->Shutdown(std::chrono::milliseconds(1000));
  if (::getloadavg(load, 3) == 3) out["load_average_at_end"] = {load[0], load[1], load[2]};

  // The paired median when there are pairs at 4 (see `pairs` above), else the long run's ratio.
  const double ratio4 = c.pairs > 0 && c.threads == 4 ? pairs.median
                        : out["queries"]["http"].contains("c4")
                            ? out["queries"]["http"]["c4"]["per_second"].get<double>() / sql_par.per_second
                            : 0;
  out["target"] = {{"http_over_in_process_at_4_connections_min", kHttpRatioTarget},
                   {"measured", ratio4},
                   {"meets_target", ratio4 >= kHttpRatioTarget}};
  const std::string vectors_text = c.vectors ? Ratio(vectors_ratio, 1) : "not run";
  const std::string cpu_text = cpu_ratio4 > 0 ? Ratio(cpu_ratio4, 1) : "n/a (no run at 4 connections)";
  const std::string admissions_text =
      out.contains("admissions") ? Ratio(out["admissions"]["ratio_http_over_in_process"].get<double>(), 1) : "not run";
  char line[1024];
  std::snprintf(line, sizeof(line),
                "server: HTTP / in-process (%d threads) queries/s: %s (target >= %.1fx at 4); serial %.2fx; "
                "CPU per query in-process / HTTP at 4: %s; with vectors at %d: %s; 1-row writes %.2fx; "
                "admissions %s%s",
                c.threads, summary_ratios.c_str(), kHttpRatioTarget, serial_ratio, cpu_text.c_str(), c.threads,
                vectors_text.c_str(), out["writes"]["ratio_http_over_in_process"].get<double>(),
                admissions_text.c_str(), errors ? " (HTTP query errors seen: see non_2xx)" : "");
  out["summary"] = line;
  PrintTable(table);
  std::fprintf(stderr, "%s\n\n", line);
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "server",
                      .description = "HTTP API (wrk) queries/s, p50/p99, idempotent writes vs the same work in process",
                      .fn = Run,
                      .int_options = {"admissions", "dim", "duration", "k", "nprobes", "pair_seconds", "pairs",
                                      "partitions", "query_set", "rows", "sub_vectors", "threads", "vectors", "warmup",
                                      "write_connections", "wrk_threads"},
                      .text_options = {"connections", "wrk"}});

}  // namespace vigil::bench::server_bench

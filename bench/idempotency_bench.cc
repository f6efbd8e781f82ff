// `vigil bench idempotency`: reserve+finalize pairs per second through the
// IdempotencyStore with 8 concurrent clients, on SQLite (durable,
// synchronous=FULL, one process) and on PostgreSQL, and as the baseline the
// same two SQL statements driven by pgbench against the same PostgreSQL server
// in the same run. The server is a throwaway one from scripts/pg-test-server.sh
// unless --opt pg_conninfo=... names one.
//
// Options: clients (8), warmup (1) and seconds (5) per measurement (pgbench runs `seconds` with
// its own connection setup excluded), rounds (2; best round
// kept for each contender), pg_script, pg_conninfo, pgbench.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <thread>

#include "bench/bench.h"
#include "src/idempotency/schema.h"
#include "vigil/idempotency/store.h"

namespace vigil::bench::idempotency_bench {
namespace {

using idempotency::FinalizeRequest;
using idempotency::FinalizeStatus;
using idempotency::IdempotencyStore;
using idempotency::ReserveRequest;
using idempotency::ReserveStatus;

constexpr double kPgRatioTarget = 0.8;
constexpr double kSqlitePairsTarget = 5000;
constexpr char kSummary[] = R"({"job_id":42})";

std::string DefaultScript() {
  // bench/idempotency_bench.cc -> scripts/pg-test-server.sh
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "scripts" / "pg-test-server.sh").string();
}

Result<std::string> RunCommand(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return Status::FromErrno(errno, "popen " + cmd);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0) return Status::Internal("command failed (" + std::to_string(rc) + "): " + cmd + "\n" + out);
  return out;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

// `clients` threads each run reserve+finalize on fresh keys for `warmup` seconds (not counted:
// connections open, the SQLite WAL reaches its steady size) and then `seconds`; returns pairs/s.
Result<double> DriveStore(IdempotencyStore& store, const std::string& tag, int clients, double warmup, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> pairs{0};
  std::atomic<int> failures{0};
  Status first_error;
  std::mutex err_mu;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      std::string exec = tag + "-exec-" + std::to_string(c);
      for (int64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        ReserveRequest r;
        r.realm_id = "bench";
        r.idempotency_key = exec + "-" + std::to_string(i);
        r.operation_type = "create-index";
        r.resource_id = "local.db.docs";
        r.request_fingerprint = "sha256:0123456789abcdef";
        r.executor_id = exec;
        auto res = store.Reserve(r);
        Status st =
            res.ok() && res->status != ReserveStatus::kOwned ? Status::Internal("reserve was not owned") : res.status();
        if (st.ok()) {
          FinalizeRequest f;
          f.realm_id = r.realm_id;
          f.idempotency_key = r.idempotency_key;
          f.executor_id = exec;
          f.http_status = 201;
          f.response_summary = kSummary;
          auto fin = store.Finalize(f);
          st = fin.ok() && fin->status != FinalizeStatus::kFinalized ? Status::Internal("finalize did not finalize")
                                                                     : fin.status();
        }
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(err_mu);
          if (failures++ == 0) first_error = st;
          return;
        }
        pairs.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
  int64_t before = pairs.load();
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  int64_t after = pairs.load();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  for (auto& t : threads) t.join();
  if (failures > 0) return first_error.WithContext(tag);
  return static_cast<double>(after - before) / elapsed;
}

// The store's reserve and finalize statements as a pgbench script: numbered parameters become
// pgbench variables (-D constants, a per-transaction random key).
std::string PgbenchScript() {
  const std::string key = "('pgb-' || :client_id || '-' || :k)";
  std::string reserve(idempotency::sql::kReserve);
  std::string finalize(idempotency::sql::kFinalize);
  auto subst = [](std::string s, const std::vector<std::pair<std::string, std::string>>& m) {
    // Highest numbers first so $1 does not match the start of $10.
    for (auto it = m.rbegin(); it != m.rend(); ++it) {
      s = std::regex_replace(s, std::regex("\\" + it->first + "(?![0-9])"), it->second);
    }
    return s;
  };
  reserve = subst(reserve, {{"$1", ":realm"},
                            {"$2", key},
                            {"$3", ":op"},
                            {"$4", ":res"},
                            {"$5", ":fp"},
                            {"$6", ":exec"},
                            {"$7", ":now"},
                            {"$8", ":exp"}});
  finalize = subst(finalize, {{"$1", ":realm"},
                              {"$2", key},
                              {"$3", ":exec"},
                              {"$4", ":status"},
                              {"$5", "NULL"},
                              {"$6", ":summary"},
                              {"$7", "NULL"},
                              {"$8", ":now"}});
  return "\\set k random(1, 4000000000000000000)\n" + reserve + ";\n" + finalize + ";\n";
}

Result<double> RunPgbench(const std::string& pgbench, const std::string& conninfo, const std::string& script_path,
                          int clients, double seconds) {
  std::string cmd = pgbench + " -n -M prepared -c " + std::to_string(clients) + " -j " + std::to_string(clients) +
                    " -T " + std::to_string(std::max(1, static_cast<int>(seconds + 0.5))) + " -f " +
                    Quote(script_path) + " -D realm=pgbench -D op=create-index" +
                    " -D res=local.db.docs -D fp=sha256:0123456789abcdef -D exec=pgbench-exec" +
                    " -D status=201 -D now=1700000000000 -D exp=1700086400000 -D summary=" + Quote(kSummary) + " " +
                    Quote(conninfo);
  VIGIL_ASSIGN_OR_RETURN(std::string out, RunCommand(cmd));
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("tps = ([0-9.]+) \\(without initial"))) {
    return Status::Internal("no tps in pgbench output:\n" + out);
  }
  std::smatch failed;
  if (std::regex_search(out, failed, std::regex("number of failed transactions: ([1-9][0-9]*)"))) {
    return Status::Internal("pgbench transactions failed:\n" + out);
  }
  return std::stod(m[1].str());
}

Result<std::unique_ptr<IdempotencyStore>> OpenStore(const std::string& uri, int clients) {
  idempotency::StoreOptions opts;
  opts.uri = uri;
  opts.database.max_connections = clients;
  return IdempotencyStore::Open(opts);
}

Result<nlohmann::json> RunIdempotencyBench(const BenchArgs& args) {
  const int clients = static_cast<int>(args.Int("clients", 8));
  const double seconds = static_cast<double>(args.Int("seconds", 5));
  const double warmup = static_cast<double>(args.Int("warmup", 1));
  const int rounds = static_cast<int>(std::max<int64_t>(1, args.Int("rounds", 2)));
  const std::string pgbench = args.Str("pgbench", "/usr/lib/postgresql/15/bin/pgbench");
  nlohmann::json out;
  out["clients"] = clients;
  out["seconds_per_measurement"] = seconds;
  out["rounds"] = rounds;

  // SQLite, durable, one process.
  {
    std::string path = args.work_dir + "/idempotency_bench.db";
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    VIGIL_ASSIGN_OR_RETURN(auto store, OpenStore("sqlite://" + path, clients));
    double best = 0;
    for (int r = 0; r < rounds; ++r) {
      VIGIL_ASSIGN_OR_RETURN(double rate, DriveStore(*store, "sqlite" + std::to_string(r), clients, warmup, seconds));
      best = std::max(best, rate);
    }
    out["sqlite"] = {{"pairs_per_s", best}, {"synchronous", "FULL"}, {"journal_mode", "WAL"}};
  }

  // PostgreSQL: Vigil's store and pgbench alternate on one server.
  std::string conninfo = args.Str("pg_conninfo", "");
  std::string server_dir;
  if (conninfo.empty()) {
    server_dir = args.work_dir + "/pg-server";
    std::string script = args.Str("pg_script", DefaultScript());
    VIGIL_ASSIGN_OR_RETURN(std::string started, RunCommand(Quote(script) + " start " + Quote(server_dir)));
    std::ifstream in(server_dir + "/conninfo");
    if (!in || !std::getline(in, conninfo)) {
      return Status::Internal("pg-test-server.sh wrote no conninfo: " + started);
    }
  }
  struct ServerGuard {
    std::string script, dir;
    ~ServerGuard() {
      if (!dir.empty()) (void)RunCommand(Quote(script) + " stop " + Quote(dir));
    }
  } guard{args.Str("pg_script", DefaultScript()), server_dir};

  VIGIL_ASSIGN_OR_RETURN(auto pg_store, OpenStore(conninfo, clients));
  std::string script_path = args.work_dir + "/idempotency_pgbench.sql";
  {
    std::ofstream f(script_path);
    f << PgbenchScript();
    if (!f) return Status::IOError("write " + script_path);
  }
  double best_vigil = 0, best_pgbench = 0;
  for (int r = 0; r < rounds; ++r) {
    VIGIL_ASSIGN_OR_RETURN(double rate, DriveStore(*pg_store, "pg" + std::to_string(r), clients, warmup, seconds));
    best_vigil = std::max(best_vigil, rate);
    VIGIL_ASSIGN_OR_RETURN(double base, RunPgbench(pgbench, conninfo, script_path, clients, seconds));
    best_pgbench = std::max(best_pgbench, base);
  }
  out["postgresql"] = {{"pairs_per_s", best_vigil}, {"synchronous_commit", "on"}};
  out["pgbench"] = {{"pairs_per_s", best_pgbench}, {"protocol", "prepared"}, {"script", PgbenchScript()}};
  double ratio = best_pgbench > 0 ? best_vigil / best_pgbench : 0;
  out["ratio_postgresql_vs_pgbench"] = ratio;
  out["targets"] = {{"postgresql_ratio_min", kPgRatioTarget},
                    {"postgresql_ratio_ok", ratio >= kPgRatioTarget},
                    {"sqlite_pairs_per_s_min", kSqlitePairsTarget},
                    {"sqlite_ok", out["sqlite"]["pairs_per_s"].get<double>() >= kSqlitePairsTarget}};
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "idempotency",
                      .description = "reserve+finalize pairs/s, 8 clients: SQLite durable, PostgreSQL vs pgbench",
                      .fn = RunIdempotencyBench,
                      .int_options = {"clients", "rounds", "seconds", "warmup"},
                      .text_options = {"pg_conninfo", "pg_script", "pgbench"}});

}  // namespace vigil::bench::idempotency_bench

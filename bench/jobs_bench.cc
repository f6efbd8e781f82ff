// `vigil bench jobs`: index-job admission throughput and latency on the
// embedded SQLite job store, in process (`clients` threads admitting CREATE
// INDEX jobs with distinct names for `seconds`: validation against the newest
// dataset version, then job + fence + guard + event in one durable
// transaction), against a baseline run in the same process: raw SQLite doing
// the same durable writes (three inserts in one BEGIN IMMEDIATE transaction,
// WAL, synchronous=FULL) with the same number of clients. Then a filtered job
// listing (the OUTCOME_UNKNOWN jobs of one table) while the store holds 100k
// archived jobs.
//
// Options: clients (4), seconds (3), warmup (1), archived (100000), listings (50).
// Targets (issue 4): >= 2,000 admissions/s with p99 <= 5 ms; listing <= 100 ms.
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "bench/bench.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/admission.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/dataset.h"

namespace vigil::bench::jobs_bench {
namespace {

constexpr double kAdmissionsTarget = 2000;
constexpr double kP99TargetMs = 5;
constexpr double kListingTargetMs = 100;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Drive {
  double per_second = 0;
  std::vector<double> latencies_ms;
};

// Runs `op(client, i)` on `clients` threads; counts and times the calls made after the warm-up.
Result<Drive> DriveClients(int clients, double warmup, double seconds, const std::function<Status(int, int64_t)>& op) {
  std::atomic<int> phase{0};  // 0 warm-up, 1 measured, 2 stop
  std::mutex mu;
  Status first_error;
  Drive out;
  std::vector<std::thread> threads;
  std::atomic<int64_t> counted{0};
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      std::vector<double> lat;
      for (int64_t i = 0; phase.load() != 2; ++i) {
        auto t0 = Clock::now();
        Status st = op(c, i);
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) first_error = st;
          return;
        }
        if (phase.load() == 1) {
          lat.push_back(ms);
          counted.fetch_add(1);
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      out.latencies_ms.insert(out.latencies_ms.end(), lat.begin(), lat.end());
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
  phase = 1;
  auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  int64_t n = counted.load();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  phase = 2;
  for (auto& t : threads) t.join();
  if (!first_error.ok()) return first_error;
  out.per_second = static_cast<double>(n) / elapsed;
  return out;
}

nlohmann::json Figures(const Drive& d) {
  return {{"per_second", d.per_second},
          {"p50_ms", Percentile(d.latencies_ms, 0.50)},
          {"p99_ms", Percentile(d.latencies_ms, 0.99)}};
}

// The baseline: the same durable writes of an admission with raw SQLite.
Result<Drive> RawSqlite(const std::string& path, int clients, double warmup, double seconds) {
  std::vector<sqlite3*> conns(clients, nullptr);
  auto close_all = [&] {
    for (sqlite3* c : conns) sqlite3_close(c);
  };
  for (int c = 0; c < clients; ++c) {
    if (sqlite3_open(path.c_str(), &conns[c]) != SQLITE_OK) {
      close_all();
      return Status::IOError("baseline: cannot open " + path);
    }
    sqlite3_busy_timeout(conns[c], 5000);
    sqlite3_exec(conns[c], "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", nullptr, nullptr, nullptr);
  }
  sqlite3_exec(conns[0],
               "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT, state TEXT, spec TEXT, created_at INTEGER);"
               "CREATE TABLE fences (fence_key TEXT PRIMARY KEY, job_id INTEGER);"
               "CREATE TABLE events (job_id INTEGER, seq INTEGER, kind TEXT, detail TEXT, PRIMARY KEY (job_id, seq));",
               nullptr, nullptr, nullptr);
  auto result = DriveClients(clients, warmup, seconds, [&](int c, int64_t i) -> Status {
    sqlite3* db = conns[c];
    const std::string name = "raw_" + std::to_string(c) + "_" + std::to_string(i);
    const std::string sql =
        "BEGIN IMMEDIATE;"
        "INSERT INTO jobs (name, state, spec, created_at) VALUES ('" +
        name +
        "', 'PENDING', '{\"type\":\"BTREE\",\"column\":\"id\"}', 1);"
        "INSERT INTO fences VALUES ('" +
        name +
        "', last_insert_rowid());"
        "INSERT INTO events VALUES (last_insert_rowid(), 1, 'ADMITTED', '{}');"
        "COMMIT;";
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "?";
      sqlite3_free(err);
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return Status::Internal("baseline insert: " + m);
    }
    return Status::OK();
  });
  close_all();
  return result;
}

Status BulkArchived(jobs::JobStore& store, const catalog::TableEntry& t, int64_t n, int64_t now) {
  VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, store.database().Begin(meta::TxnMode::kWrite));
  VIGIL_RETURN_IF_ERROR(
      txn.conn()
          .Execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " + std::to_string(n) +
                       ") INSERT INTO index_jobs (revision, creator, created_at, finished_at, catalog_name,"
                       " database_name, table_name, catalog_incarnation, table_incarnation, locator,"
                       " index_name, normalization_version, normalized_name, provider, operation, if_mode,"
                       " columns_json, properties_json, start_version, schema_fingerprint, execution,"
                       " outcome, refresh, reconcile, disposition, archived_at)"
                       " SELECT 3, 'bulk', CAST($1 AS BIGINT), CAST($1 AS BIGINT), 'local', 'db', 'docs', $2, $3,"
                       " '/l', 'idx', 1, 'idx', 'DIRECTORY', 'CREATE', 'NONE', '[]', '{}', 1, 'fp', 'TERMINAL',"
                       " 'NOT_COMMITTED', 'DONE', 'NONE', 'NONE', CAST($1 AS BIGINT) FROM n",
                   {now, t.catalog_incarnation, t.table_incarnation})
          .status());
  VIGIL_RETURN_IF_ERROR(txn.conn().ExecuteScript("ANALYZE"));
  return txn.Commit();
}

Result<nlohmann::json> RunJobsBench(const BenchArgs& args) {
  const int clients = static_cast<int>(args.Int("clients", 4));
  const double seconds = static_cast<double>(args.Int("seconds", 3));
  const double warmup = static_cast<double>(args.Int("warmup", 1));
  const int64_t archived = args.Int("archived", 100'000);
  const int listings = static_cast<int>(args.Int("listings", 50));
  if (clients < 1 || clients > 64 || seconds < 1 || archived < 0 || listings < 1) {
    return Status::InvalidArgument("jobs bench: clients 1..64, seconds >= 1, archived >= 0, listings >= 1");
  }

  DatagenOptions o;
  o.rows = 1000;
  o.dim = 8;
  o.latent_dim = 2;
  o.words_per_body = 4;
  VIGIL_ASSIGN_OR_RETURN(auto gen, DataGenerator::Make(o));
  const std::string path = args.work_dir + "/db/docs.vgl";
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(path, gen->schema(), {}));
  auto reader = gen->NewReader();
  VIGIL_RETURN_IF_ERROR(ds->Append(reader.get(), {}).status());
  jobs::JobStoreOptions so;
  so.uri = "sqlite://" + args.work_dir + "/meta.db";
  VIGIL_ASSIGN_OR_RETURN(auto store, jobs::JobStore::Open(so));
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry table,
                         store->catalog().RegisterTable("local", "db", "docs", path, NowMs()));
  jobs::Admission admission(store.get(), {});

  VIGIL_ASSIGN_OR_RETURN(Drive vigil, DriveClients(clients, warmup, seconds, [&](int c, int64_t i) -> Status {
                           jobs::CreateIndexStatement s;
                           s.target = {"local", "db", "docs"};
                           s.index_name = "idx_" + std::to_string(c) + "_" + std::to_string(i);
                           s.column = "id";
                           s.type = index::IndexType::kBtree;
                           return admission.Create(s, "bench", NowMs()).status();
                         }));
  VIGIL_ASSIGN_OR_RETURN(Drive raw, RawSqlite(args.work_dir + "/raw.db", clients, warmup, seconds));

  // Listing: one table's OUTCOME_UNKNOWN jobs among `archived` archived jobs (and the admitted ones).
  VIGIL_RETURN_IF_ERROR(BulkArchived(*store, table, archived, NowMs()));
  jobs::JobFilter f;
  f.catalog_name = "local";
  f.database_name = "db";
  f.table_name = "docs";
  f.state = "OUTCOME_UNKNOWN";
  f.include_archived = true;
  std::vector<double> list_ms;
  for (int i = 0; i < listings; ++i) {
    auto t0 = Clock::now();
    VIGIL_RETURN_IF_ERROR(store->List(f).status());
    list_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double p99 = Percentile(vigil.latencies_ms, 0.99);
  const double list_p50 = Percentile(list_ms, 0.5);
  return nlohmann::json{
      {"clients", clients},
      {"admission", Figures(vigil)},
      {"baseline_raw_sqlite_same_writes", Figures(raw)},
      {"admission_ratio_vs_raw_sqlite", raw.per_second > 0 ? vigil.per_second / raw.per_second : 0},
      {"listing", {{"archived_jobs", archived}, {"p50_ms", list_p50}, {"max_ms", Percentile(list_ms, 1.0)}}},
      {"targets",
       {{"admissions_per_second", {{"target", kAdmissionsTarget}, {"met", vigil.per_second >= kAdmissionsTarget}}},
        {"admission_p99_ms", {{"target", kP99TargetMs}, {"met", p99 <= kP99TargetMs}}},
        {"listing_ms", {{"target", kListingTargetMs}, {"met", list_p50 <= kListingTargetMs}}}}}};
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "jobs",
     .description = "Index-job admission rate and p99 vs raw SQLite, job listing with 100k archived jobs",
     .fn = RunJobsBench,
     .int_options = {"archived", "clients", "listings", "seconds", "warmup"},
     .text_options = {}});

}  // namespace vigil::bench::jobs_bench

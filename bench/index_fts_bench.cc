// `vigil bench index-fts`: full-text segments on a generated corpus.
//
//  1. baseline: plain SQLite FTS5 indexing the same bodies (held in memory)
//     into a file database with the builder's settings (journal off,
//     synchronous off, large cache, one transaction, 'optimize', fsync);
//  2. BuildFtsSegment over the table (fragment reads, deletions, inventory
//     checksum and fsync included); build rate in docs/s and its ratio to 1;
//  3. Xapian 1.4 indexing the same bodies into a file database (TermGenerator
//     without stemming, like the unicode61 tokenizer; positions kept, like
//     FTS5; commit with fsync): build rate and Vigil's ratio to it;
//  4. 1-3 term queries of words of one random document, k = 10, once with the
//     terms ANDed (each query has a match) and once ORed: Vigil's
//     FtsSegment::Stats + Search, Xapian's Enquire (BM25, which skips documents
//     that cannot enter the top k), and for reference FTS5's built-in `ORDER BY
//     rank` on the baseline database; p50, p95 and QPS, and Vigil's QPS over
//     Xapian's;
//  5. the same through SQL (option sql=1): a root whose bench.docs holds (id,
//     body), the index made by `vigil sql -c "CREATE INDEX ... USING FTS"` (the
//     job, its worker and the commit, timed as that process), and the queries
//     as fts_search statements run by the SelectEngine a session runs (the
//     query text a bound parameter, serial, after a warm-up).
//
// Options: docs (100000), queries (300), k (10), seed (42), rounds (1; best kept), sql (1).
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iterator>
#include <random>
#include <sstream>

#include <xapian.h>

#include "bench/bench.h"
#include "bench/vector_search_bench.h"
#include "vigil/auth/principal.h"
#include "vigil/common/file_system.h"
#include "vigil/index/fts.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/sql/parser.h"
#include "vigil/sql/select_engine.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/root.h"

namespace vigil::bench::index_fts_bench {
namespace {

constexpr double kFtsBuildRatioTarget = 0.9;
constexpr double kFtsQueryRatioTarget = 1.0;  // Vigil's QPS over Xapian's on OR queries

struct Timing {
  double seconds = 0;
  double cpu_seconds = 0;
};

double CpuNow() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

template <typename Fn>
Result<Timing> Measure(Fn&& fn) {
  double cpu = CpuNow();
  auto start = std::chrono::steady_clock::now();
  VIGIL_RETURN_IF_ERROR(fn());
  Timing t;
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.cpu_seconds = CpuNow() - cpu;
  return t;
}

Status Check(sqlite3* db, int rc, int want, const char* what) {
  if (rc == want) return Status::OK();
  return Status::Internal(std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

Status Exec(sqlite3* db, const char* sql) {
  return Check(db, sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK, sql);
}

// The baseline: plain FTS5 over `bodies` into a new file database at `path`.
Status PlainFts5Build(const std::string& path, const std::vector<std::string>& bodies) {
  sqlite3* db = nullptr;
  Status st = Check(db, sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
                    SQLITE_OK, "open");
  if (st.ok()) {
    st = Exec(db,
              "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;"
              "PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY; BEGIN;"
              "CREATE VIRTUAL TABLE t USING fts5(doc)");
  }
  sqlite3_stmt* insert = nullptr;
  if (st.ok()) {
    st = Check(db, sqlite3_prepare_v2(db, "INSERT INTO t(rowid, doc) VALUES(?1, ?2)", -1, &insert, nullptr), SQLITE_OK,
               "prepare");
  }
  for (size_t i = 0; st.ok() && i < bodies.size(); ++i) {
    sqlite3_bind_int64(insert, 1, static_cast<sqlite3_int64>(i));
    sqlite3_bind_text(insert, 2, bodies[i].data(), static_cast<int>(bodies[i].size()), SQLITE_STATIC);
    st = Check(db, sqlite3_step(insert), SQLITE_DONE, "insert");
    sqlite3_reset(insert);
  }
  sqlite3_finalize(insert);
  if (st.ok()) st = Exec(db, "COMMIT; INSERT INTO t(t) VALUES('optimize')");
  sqlite3_close(db);
  if (!st.ok()) return st;
  return DefaultFileSystem()->SyncFile(path);
}

Result<std::shared_ptr<Dataset>> MakeCorpus(const std::string& path, const DataGenerator& gen) {
  TransactionProperties props;
  props.operation = "CREATE_TABLE";
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(path, gen.schema(), props));
  auto reader = gen.NewReader();
  props.operation = "APPEND";
  return ds->Append(reader.get(), props);
}

Result<std::shared_ptr<index::FtsSegment>> BuildSegment(const Dataset& ds, Timing* timing) {
  Uuid uuid = Uuid::Generate();
  std::vector<uint32_t> fragments;
  for (const auto& f : ds.manifest().fragments) fragments.push_back(f.id);
  IndexSegmentMeta meta;
  VIGIL_ASSIGN_OR_RETURN(*timing, Measure([&]() -> Status {
    VIGIL_ASSIGN_OR_RETURN(auto writer, index::SegmentWriter::Create(ds.fs(), ds.path(), uuid));
    VIGIL_RETURN_IF_ERROR(index::BuildFtsSegment(ds, ds.schema()->field(0), fragments, {}, writer.get(), nullptr));
    VIGIL_ASSIGN_OR_RETURN(meta.files, writer->Finish());
    return Status::OK();
  }));
  meta.name = "body_idx";
  meta.uuid = uuid;
  meta.index_type = "FTS";
  meta.properties_json = R"({"tokenizer":"unicode61"})";
  meta.covered_fragments = fragments;
  VIGIL_ASSIGN_OR_RETURN(auto files, index::SegmentFiles::Open(ds.fs(), ds.path(), meta));
  return index::FtsSegment::Open(files);
}

nlohmann::json LatencyJson(std::vector<double> micros, double total_seconds) {
  std::sort(micros.begin(), micros.end());
  auto pct = [&](double p) { return micros[static_cast<size_t>(p * (micros.size() - 1))]; };
  return {{"queries", micros.size()},
          {"p50_us", pct(0.5)},
          {"p95_us", pct(0.95)},
          {"max_us", micros.back()},
          {"qps", micros.size() / total_seconds}};
}

// 1-3 words of one random document per query.
std::vector<std::vector<std::string>> MakeQueries(const std::vector<std::string>& bodies, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::string>> queries;
  for (size_t q = 0; q < n; ++q) {
    std::istringstream in(bodies[rng() % bodies.size()]);
    std::vector<std::string> words{std::istream_iterator<std::string>(in), {}};
    queries.emplace_back();
    for (size_t t = 0, terms = 1 + q % 3; t < terms; ++t) queries.back().push_back(words[rng() % words.size()]);
  }
  return queries;
}

// The queries as FTS5 text: terms joined by spaces (AND) or " OR ".
std::vector<std::string> Fts5Text(const std::vector<std::vector<std::string>>& queries, bool any) {
  std::vector<std::string> out;
  for (const auto& terms : queries) {
    std::string text;
    for (const auto& t : terms) text += (text.empty() ? "" : any ? " OR " : " ") + t;
    out.push_back(text);
  }
  return out;
}

// Xapian's baseline: the bodies indexed into a new database at `path`, committed (fsync).
Status XapianBuild(const std::string& path, const std::vector<std::string>& bodies) {
  try {
    Xapian::WritableDatabase db(path, Xapian::DB_CREATE);
    Xapian::TermGenerator terms;
    for (const auto& body : bodies) {
      Xapian::Document doc;
      terms.set_document(doc);
      terms.index_text(body);
      db.add_document(doc);
    }
    db.commit();
  } catch (const Xapian::Error& e) {
    return Status::Internal("Xapian build: " + e.get_description());
  }
  return Status::OK();
}

// Top-k BM25 of each query on the Xapian database, terms ANDed or ORed.
Result<nlohmann::json> XapianQueries(const std::string& path, const std::vector<std::vector<std::string>>& queries,
                                     bool any, uint32_t k, uint64_t* hits_total) {
  try {
    Xapian::Database db(path);
    Xapian::Enquire enquire(db);
    std::vector<double> micros;
    auto start = std::chrono::steady_clock::now();
    for (const auto& words : queries) {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<Xapian::Query> terms;
      for (const auto& w : words) terms.emplace_back(Xapian::Unicode::tolower(w));
      enquire.set_query(Xapian::Query(any ? Xapian::Query::OP_OR : Xapian::Query::OP_AND, terms.begin(), terms.end()));
      Xapian::MSet top = enquire.get_mset(0, k);
      *hits_total += top.size();
      micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return LatencyJson(micros, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } catch (const Xapian::Error& e) {
    return Status::Internal("Xapian query: " + e.get_description());
  }
}

Result<nlohmann::json> VigilQueries(const index::FtsSegment& seg, const std::vector<std::string>& queries, uint32_t k,
                                    uint64_t* hits_total) {
  std::vector<double> micros;
  auto start = std::chrono::steady_clock::now();
  for (const auto& q : queries) {
    auto t0 = std::chrono::steady_clock::now();
    VIGIL_ASSIGN_OR_RETURN(index::FtsStats stats, seg.Stats(q));
    VIGIL_ASSIGN_OR_RETURN(auto hits, seg.Search(q, stats, nullptr, k));
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    *hits_total += hits.size();
  }
  return LatencyJson(micros, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

Result<nlohmann::json> PlainFts5Queries(const std::string& path, const std::vector<std::string>& queries, uint32_t k) {
  sqlite3* db = nullptr;
  VIGIL_RETURN_IF_ERROR(
      Check(db, sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK, "open"));
  sqlite3_stmt* stmt = nullptr;
  Status st = Check(
      db, sqlite3_prepare_v2(db, "SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY rank LIMIT ?2", -1, &stmt, nullptr),
      SQLITE_OK, "prepare");
  std::vector<double> micros;
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; st.ok() && i < queries.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    sqlite3_bind_text(stmt, 1, queries[i].c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_int(stmt, 2, static_cast<int>(k));
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    }
    st = Check(db, rc, SQLITE_DONE, "query");
    sqlite3_reset(stmt);
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  VIGIL_RETURN_IF_ERROR(st);
  return LatencyJson(micros, total);
}

// A root at `dir` whose bench.docs holds (id, body) rows of `base`'s corpus,
// indexed by CREATE INDEX through the shell; the seconds that took.
Result<double> SqlFtsRoot(DatagenOptions base, const std::string& dir) {
  base.columns = {"id", "body"};
  VIGIL_ASSIGN_OR_RETURN(auto gen, DataGenerator::Make(base));
  VIGIL_RETURN_IF_ERROR(MakeBenchRoot(*gen, dir, "docs"));
  auto t0 = std::chrono::steady_clock::now();
  VIGIL_RETURN_IF_ERROR(
      RunProgram({VigilProgram(), "--root", dir, "sql", "-c", "CREATE INDEX body_idx ON bench.docs (body) USING FTS"})
          .status());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  VIGIL_RETURN_IF_ERROR(RunProgram({VigilProgram(), "--root", dir, "supervise", "--stop"}).status());
  return seconds;
}

// fts_search statements for `queries` through the SelectEngine on the root at `dir`.
Result<nlohmann::json> SqlQueries(const std::string& dir, const std::vector<std::string>& queries, uint32_t k,
                                  uint64_t* hits_total) {
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(dir));
  VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
  VIGIL_ASSIGN_OR_RETURN(auto engine, sql::SelectEngine::Open(root, store.get()));
  VIGIL_ASSIGN_OR_RETURN(
      sql::Statement parsed,
      sql::ParseStatement("SELECT id, _score FROM fts_search('bench.docs', 'body', ?, " + std::to_string(k) + ")"));
  const auto& select = std::get<sql::SelectStatement>(parsed.node);
  const auth::Principal admin = auth::Principal::LocalAdmin();
  VIGIL_RETURN_IF_ERROR(engine->Select(select, admin, {sql::Value(queries.front())}).status());  // warm-up
  std::vector<double> micros;
  auto start = std::chrono::steady_clock::now();
  for (const auto& q : queries) {
    auto t0 = std::chrono::steady_clock::now();
    VIGIL_ASSIGN_OR_RETURN(sql::ResultSet rs, engine->Select(select, admin, {sql::Value(q)}));
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    *hits_total += rs.rows.size();
  }
  return LatencyJson(micros, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

nlohmann::json BuildJson(const Timing& t, uint64_t docs) {
  return {{"seconds", t.seconds},
          {"cpu_seconds", t.cpu_seconds},
          {"docs_per_s", docs / t.seconds},
          {"docs_per_cpu_s", t.cpu_seconds > 0 ? docs / t.cpu_seconds : 0}};
}

Result<nlohmann::json> RunFtsBench(const BenchArgs& args) {
  DatagenOptions opts;
  opts.rows = static_cast<uint64_t>(args.Int("docs", 100000));
  opts.seed = static_cast<uint64_t>(args.Int("seed", 42));
  opts.columns = {"body"};
  auto k = static_cast<uint32_t>(args.Int("k", 10));
  int rounds = static_cast<int>(std::max<int64_t>(1, args.Int("rounds", 1)));
  VIGIL_ASSIGN_OR_RETURN(auto gen, DataGenerator::Make(opts));
  std::vector<std::string> bodies;
  uint64_t body_bytes = 0;
  for (uint64_t r = 0; r < opts.rows; ++r) {
    bodies.push_back(gen->Body(r));
    body_bytes += bodies.back().size();
  }
  VIGIL_ASSIGN_OR_RETURN(auto ds, MakeCorpus(args.work_dir + "/fts_bench.vgl", *gen));

  Timing best_plain, best_vigil, best_xapian;
  std::shared_ptr<index::FtsSegment> segment;
  std::string plain_path, xapian_path;
  for (int r = 0; r < rounds; ++r) {
    plain_path = args.work_dir + "/plain_fts5_" + std::to_string(r) + ".db";
    VIGIL_ASSIGN_OR_RETURN(Timing plain, Measure([&] { return PlainFts5Build(plain_path, bodies); }));
    Timing vigil;
    VIGIL_ASSIGN_OR_RETURN(segment, BuildSegment(*ds, &vigil));
    xapian_path = args.work_dir + "/xapian_" + std::to_string(r);
    VIGIL_ASSIGN_OR_RETURN(Timing xapian, Measure([&] { return XapianBuild(xapian_path, bodies); }));
    if (r == 0 || plain.seconds < best_plain.seconds) best_plain = plain;
    if (r == 0 || vigil.seconds < best_vigil.seconds) best_vigil = vigil;
    if (r == 0 || xapian.seconds < best_xapian.seconds) best_xapian = xapian;
  }
  double ratio = best_plain.seconds / best_vigil.seconds;

  auto queries = MakeQueries(bodies, static_cast<size_t>(args.Int("queries", 300)), opts.seed);
  nlohmann::json query = {{"k", k}, {"terms", "1-3 words of one document"}};
  for (bool any : {false, true}) {
    const std::vector<std::string> text = Fts5Text(queries, any);
    uint64_t vigil_hits = 0, xapian_hits = 0;
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json vigil_q, VigilQueries(*segment, text, k, &vigil_hits));
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json xapian_q, XapianQueries(xapian_path, queries, any, k, &xapian_hits));
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json plain_q, PlainFts5Queries(plain_path, text, k));
    query[any ? "or" : "and"] = {
        {"vigil_stats_plus_search", vigil_q},
        {"xapian_bm25", xapian_q},
        {"plain_fts5_order_by_rank", plain_q},
        {"vigil_qps_over_xapian", vigil_q["qps"].get<double>() / xapian_q["qps"].get<double>()},
        {"hits_returned", {{"vigil", vigil_hits}, {"xapian", xapian_hits}}}};
  }
  nlohmann::json sql_json;
  if (args.Int("sql", 1) != 0) {
    const std::string root_dir = args.work_dir + "/fts_sql_root";
    VIGIL_ASSIGN_OR_RETURN(double create_seconds, SqlFtsRoot(opts, root_dir));
    sql_json["create_index_seconds"] = create_seconds;
    sql_json["create_index_docs_per_s"] = opts.rows / create_seconds;
    sql_json["create_index_ratio_vs_plain_fts5"] = best_plain.seconds / create_seconds;
    sql_json["create_index_ratio_vs_xapian"] = best_xapian.seconds / create_seconds;
    for (bool any : {false, true}) {
      uint64_t hits = 0;
      VIGIL_ASSIGN_OR_RETURN(nlohmann::json q, SqlQueries(root_dir, Fts5Text(queries, any), k, &hits));
      q["hits_returned"] = hits;
      q["qps_over_xapian"] = q["qps"].get<double>() / query[any ? "or" : "and"]["xapian_bm25"]["qps"].get<double>();
      sql_json[any ? "or" : "and"] = q;
    }
  }
  query["or"]["target_qps_over_xapian"] = kFtsQueryRatioTarget;
  query["or"]["meets_target"] = query["or"]["vigil_qps_over_xapian"].get<double>() >= kFtsQueryRatioTarget;
  double loads[1] = {-1};
  getloadavg(loads, 1);
  return nlohmann::json{{"docs", opts.rows},
                        {"avg_body_bytes", static_cast<double>(body_bytes) / opts.rows},
                        {"rounds", rounds},
                        {"build",
                         {{"plain_fts5", BuildJson(best_plain, opts.rows)},
                          {"xapian", BuildJson(best_xapian, opts.rows)},
                          {"vigil", BuildJson(best_vigil, opts.rows)},
                          {"ratio_vs_plain", ratio},
                          {"ratio_vs_xapian", best_xapian.seconds / best_vigil.seconds},
                          {"cpu_ratio_vs_plain", best_plain.cpu_seconds / best_vigil.cpu_seconds},
                          {"target_ratio", kFtsBuildRatioTarget},
                          {"meets_target", ratio >= kFtsBuildRatioTarget}}},
                        {"query", query},
                        {"sql", sql_json},
                        {"load_average_1m", loads[0]}};
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "index-fts",
     .description = "FTS segment build rate vs SQLite FTS5 and Xapian, BM25 top-k queries vs Xapian and FTS5",
     .fn = RunFtsBench,
     .int_options = {"docs", "k", "queries", "rounds", "seed", "sql"},
     .text_options = {}});

}  // namespace vigil::bench::index_fts_bench

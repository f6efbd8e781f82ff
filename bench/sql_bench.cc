// `vigil bench sql`: the per-statement overhead of a vector_search SELECT over
// the C++ query API on the same table version. Each query vector runs both as
// `SELECT id, _distance FROM vector_search('db.docs', 'emb', ?, k, options)`
// through the SelectEngine (a FLOAT32 blob parameter; the prepared statement is
// cached) and as VectorSearch + TakeRows(id) directly, interleaved; the figures
// are p50 / p99 latencies in microseconds, the p50 overhead and the ratio.
// Target: p50 overhead <= 50 us. VectorSearch alone is timed too: query::TakeRows
// re-opens the fragment for every row, while the SQL path reads each needed block
// once, so the overhead over VectorSearch alone (search-only, timed right after the
// raw path on the same query, so with warm caches) is reported as the stricter figure.
// A third engine asks the metadata store for the table's newest version on every
// statement (generations.catalog_staleness = 0): the difference is the cost of one
// catalog lookup, and its share of a statement at the default staleness is reported
// (target <= 5%).
//
// Options: rows (20000); dim (128); partitions (64); sub_vectors (16); k (10);
// nprobes (8); queries (2000); prefilter (0: none; 1: WHERE category = ? on both paths);
// meta_url (empty: the root's metadata in SQLite; a postgresql:// URL of an empty database:
// there, so that every catalog lookup is a round trip to the server).
#include <algorithm>
#include <chrono>

#include "bench/bench.h"
#include "vigil/auth/principal.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/config.h"
#include "vigil/common/env.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/query/query.h"
#include "vigil/sql/parser.h"
#include "vigil/sql/select_engine.h"
#include "vigil/storage/root.h"

namespace vigil::bench::sql_bench {
namespace {

constexpr double kOverheadTargetUs = 50;

double Micros(Clock::time_point since) {
  return std::chrono::duration<double, std::micro>(Clock::now() - since).count();
}

struct Setup {
  std::unique_ptr<Root> root;
  std::unique_ptr<jobs::JobStore> store;
  std::string path;
  std::shared_ptr<const DataGenerator> gen;
};

Result<Setup> MakeTable(const BenchArgs& args) {
  Setup s;
  Config config;
  config.meta.url = args.Str("meta_url", "");
  if (!config.meta.url.empty()) VIGIL_RETURN_IF_ERROR(CheckMetaUrl(config.meta.url));
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Init(args.work_dir + "/sql_bench_root", Env::Default(), config));
  s.root = std::make_unique<Root>(std::move(root));
  DatagenOptions o;
  o.rows = static_cast<uint64_t>(args.Int("rows", 20000));
  o.dim = static_cast<uint32_t>(args.Int("dim", 128));
  o.columns = {"id", "category", "emb"};
  VIGIL_ASSIGN_OR_RETURN(s.gen, DataGenerator::Make(o));
  VIGIL_ASSIGN_OR_RETURN(s.store, jobs::OpenRootJobStore(*s.root));
  catalog::TableCatalog catalog(s.root.get(), &s.store->catalog());
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry, catalog.Create(TableName{"local", "db", "docs"}, s.gen->schema(),
                                                                   {.operation = "CREATE_TABLE"}));
  s.path = entry.locator;
  VIGIL_ASSIGN_OR_RETURN(auto ds, catalog.Open(TableName{"local", "db", "docs"}));
  auto reader = s.gen->NewReader();
  VIGIL_RETURN_IF_ERROR(ds->Append(reader.get(), {.operation = "APPEND"}).status());
  index::CreateIndexRequest req;
  req.dataset_path = s.path;
  req.dataset = catalog.Options(entry);
  req.column = "emb";
  req.name = "emb_idx";
  req.type = index::IndexType::kIvfPq;
  req.properties = {{"index_type", "IVF_PQ"},
                    {"metric", "l2"},
                    {"num_partitions", std::to_string(args.Int("partitions", 64))},
                    {"num_sub_vectors", std::to_string(args.Int("sub_vectors", 16))}};
  VIGIL_RETURN_IF_ERROR(index::CreateVectorIndex(req).status());
  return s;
}

Result<nlohmann::json> Run(const BenchArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(Setup s, MakeTable(args));
  const uint32_t k = static_cast<uint32_t>(args.Int("k", 10));
  const uint32_t nprobes = static_cast<uint32_t>(args.Int("nprobes", 8));
  const int64_t queries = args.Int("queries", 2000);
  const bool prefilter = args.Int("prefilter", 0) != 0;
  const bool sqlite_store = args.Str("meta_url", "").empty();
  const std::string category = DataGenerator::CategoryName(0);

  VIGIL_ASSIGN_OR_RETURN(auto engine, sql::SelectEngine::Open(*s.root, s.store.get()));
  // The same statements with the table's newest version asked of the metadata store by every
  // statement (generations.catalog_staleness = 0) instead of once per default staleness.
  sql::SelectOptions eager;
  eager.generations.catalog_staleness_ms = 0;
  VIGIL_ASSIGN_OR_RETURN(auto asking, sql::SelectEngine::Open(*s.root, s.store.get(), eager));
  const uint64_t staleness_ms = sql::SelectOptions{}.generations.catalog_staleness_ms;
  std::string text = "SELECT id, _distance FROM vector_search('db.docs', 'emb', ?, " + std::to_string(k) +
                     ", '{\"nprobes\": " + std::to_string(nprobes) + "}')" + (prefilter ? " WHERE category = ?" : "");
  VIGIL_ASSIGN_OR_RETURN(sql::Statement parsed, sql::ParseStatement(text));
  const auto& select = std::get<sql::SelectStatement>(parsed.node);
  const auth::Principal admin = auth::Principal::LocalAdmin();

  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(s.path));
  VIGIL_ASSIGN_OR_RETURN(auto snapshot, query::TableSnapshot::Open(ds));
  query::VectorQueryOptions opts;
  opts.k = k;
  opts.nprobes = nprobes;
  std::vector<query::ColumnPredicate> pre;
  if (prefilter) pre.push_back({"category", {index::ScalarPredicate::Op::kEq, {Value(category)}}});

  const uint32_t dim = s.gen->options().dim;
  std::vector<double> raw_us, sql_us, search_us, asking_us;
  size_t mismatches = 0;
  const int64_t warmup = 50;
  Clock::time_point measured_from = Clock::now();
  for (int64_t i = 0; i < warmup + queries; ++i) {
    if (i == warmup) measured_from = Clock::now();
    std::vector<float> q(dim);
    s.gen->Embedding(static_cast<uint64_t>(i * 7919) % s.gen->options().rows, q.data());
    q[0] += 0.01f;  // not exactly a stored row
    std::vector<sql::Value> params{sql::Blob{std::string(reinterpret_cast<const char*>(q.data()), q.size() * 4)}};
    if (prefilter) params.push_back(category);

    auto t0 = Clock::now();
    VIGIL_ASSIGN_OR_RETURN(auto hits, query::VectorSearch(*snapshot, "emb", q, opts, pre));
    std::vector<RowAddress> rows;
    for (const auto& h : hits) rows.push_back(h.row);
    VIGIL_ASSIGN_OR_RETURN(auto batch, query::TakeRows(*snapshot, rows, {"id"}));
    double raw = Micros(t0);
    auto t2 = Clock::now();
    VIGIL_ASSIGN_OR_RETURN(auto again, query::VectorSearch(*snapshot, "emb", q, opts, pre));
    double search_only = Micros(t2);
    if (again.size() != hits.size()) ++mismatches;

    // The two engines take turns going first, so that neither gains from the other's caches.
    sql::ResultSet rs, asked;
    double via_sql = 0, via_asking = 0;
    for (int turn = 0; turn < 2; ++turn) {
      const bool default_engine = (turn == 0) == (i % 2 == 0);
      auto t1 = Clock::now();
      VIGIL_ASSIGN_OR_RETURN(auto r, (default_engine ? engine : asking)->Select(select, admin, params));
      (default_engine ? via_sql : via_asking) = Micros(t1);
      (default_engine ? rs : asked) = std::move(r);
    }
    if (asked.rows != rs.rows) ++mismatches;

    if (rs.rows.size() != batch.num_rows ||
        (batch.num_rows > 0 && std::get<int64_t>(rs.rows[0][0]) != std::get<int64_t>(batch.columns[0].ValueAt(0)))) {
      ++mismatches;
    }
    if (i < warmup) continue;
    raw_us.push_back(raw);
    sql_us.push_back(via_sql);
    search_us.push_back(search_only);
    asking_us.push_back(via_asking);
  }
  const double measured_s = Micros(measured_from) / 1e6;
  const double raw_p50 = Percentile(raw_us, 0.5), sql_p50 = Percentile(sql_us, 0.5);
  const double overhead = sql_p50 - raw_p50;
  nlohmann::json out;
  out["rows"] = s.gen->options().rows;
  out["dim"] = dim;
  out["k"] = k;
  out["nprobes"] = nprobes;
  out["queries"] = queries;
  out["prefilter"] = prefilter;
  out["raw_p50_us"] = raw_p50;
  out["raw_p99_us"] = Percentile(raw_us, 0.99);
  out["sql_p50_us"] = sql_p50;
  out["sql_p99_us"] = Percentile(sql_us, 0.99);
  out["overhead_p50_us"] = overhead;
  out["ratio_sql_over_raw_p50"] = raw_p50 > 0 ? sql_p50 / raw_p50 : 0;
  out["sql_serial_qps"] = sql_p50 > 0 ? 1e6 / sql_p50 : 0;
  out["raw_serial_qps"] = raw_p50 > 0 ? 1e6 / raw_p50 : 0;
  const double search_p50 = Percentile(search_us, 0.5);
  out["search_only_p50_us"] = search_p50;
  out["overhead_over_search_only_p50_us"] = sql_p50 - search_p50;
  // The catalog lookup: its cost per ask, and its share of a statement at the default
  // staleness, where one statement in (staleness / statement interval) asks.
  const double asking_p50 = Percentile(asking_us, 0.5);
  const double ask_us = std::max(0.0, asking_p50 - sql_p50);
  const double asks = measured_s * 1000.0 / static_cast<double>(std::max<uint64_t>(1, staleness_ms)) + 1;
  out["metadata_store"] = sqlite_store ? "sqlite" : "postgresql";
  out["catalog_staleness_ms"] = staleness_ms;
  out["sql_asking_store_every_statement_p50_us"] = asking_p50;
  out["ratio_asking_every_statement_over_default_p50"] = sql_p50 > 0 ? asking_p50 / sql_p50 : 0;
  out["catalog_ask_us"] = ask_us;
  out["catalog_share_at_default_staleness"] =
      sql_p50 > 0 ? ask_us * asks / static_cast<double>(std::max<int64_t>(1, queries)) / sql_p50 : 0;
  out["target_catalog_share"] = 0.05;
  out["result_mismatches"] = mismatches;
  out["target_overhead_p50_us"] = kOverheadTargetUs;
  out["meets_target"] = overhead <= kOverheadTargetUs;
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "sql",
                      .description = "per-statement overhead of a vector_search SELECT over VectorSearch + TakeRows",
                      .fn = Run,
                      .int_options = {"dim", "k", "nprobes", "partitions", "prefilter", "queries", "rows",
                                      "sub_vectors"},
                      .text_options = {"meta_url"}});

}  // namespace vigil::bench::sql_bench

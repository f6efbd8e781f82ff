// `vigil bench index-ivfpq`: IVF_PQ build and search in Vigil against raw FAISS
// doing the same work on the same vectors.
//
// N x dim FLOAT32 embedding-like vectors (datagen; latent_dim and noise shape
// them) are written to a Vigil dataset. Builds, each run in a forked child whose
// peak RSS is read through wait4, alternating so that load changes on a shared
// machine hit all alike:
//  - Vigil in process: TrainIvfPq + BuildIvfPqSegment (reading the dataset,
//    writing segment files);
//  - raw FAISS with FAISS's defaults, as a user calls it: IndexIVFPQ train on
//    every vector (FAISS subsamples 256 rows per centroid itself), 25 k-means
//    iterations, the libraries' own thread counts; then add of all vectors;
//  - raw FAISS with Vigil's settings: train on Vigil's sample with Vigil's
//    iterations and thread settings, add of all vectors;
//  - end to end through SQL: `vigil sql -c "CREATE INDEX ..."` on a root holding
//    the same rows, with only partitions and sub-vectors given (max_iterations and
//    sample_rate only when given as options): admission, the supervisor, the
//    worker, the commit; the index is dropped (untimed) after each run.
// Search: serial single-query latency (p50/p99) and QPS at `nprobes`, and
// recall@10 against exact search (faiss::IndexFlatL2) on a sample of queries: the
// segment alone, the C++ query API (query::VectorSearch on a table snapshot:
// deletions, coverage, merge; also with refine_factor 10), both raw FAISS
// indexes, and FAISS's IndexRefineFlat (k_factor 10) over the raw index. With
// sql, the shell too: `vigil sql --csv -f` on a script of one statement per query,
// timed as a whole process, with the vector a text literal in each SELECT, and
// with one PREPARE and an EXECUTE per query binding the vector as a FLOAT32 blob
// (the SQL job's last index stays for these). Parallel: the query API and raw FAISS
// each from 1 thread and from `threads` threads at once, QPS and scaling. The
// parent uses no OpenMP before the last fork (libgomp is not fork-safe). Figures
// are medians over `runs`.
//
// Options: rows (1000000), dim (128), latent_dim (16), noise (0.05), partitions
// (1024), sub_vectors (16), nprobes (20), queries (1000), recall_queries (100),
// max_iterations and sample_rate (Vigil's defaults), runs (1), sql (1: time the
// SQL job; 0: skip it), threads (2: the parallel searches' threads).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexRefine.h>
#include <faiss/index_io.h>

#include "bench/bench.h"
#include "bench/vector_search_bench.h"
#include "src/index/ivf_pq_internal.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/ingest/datagen.h"
#include "vigil/query/query.h"

namespace vigil::bench::index_ivf_pq_bench {
namespace {

using index::IvfPqParams;
using index::IvfPqSegment;

constexpr double kIvfPqBuildRatioTarget = 1.15;
constexpr double kQpsRatioTarget = 0.7;
// The shell's QPS (one process reading a script of searches) over raw FAISS's.
constexpr double kShellQpsRatioTarget = 0.6;
// Searches from 2 threads on 2 cores: at least this many times one thread's QPS (scaled
// by threads / 2 for other thread counts).
constexpr double kParallelScalingTarget = 1.8;
constexpr double kRecallTolerance = 0.005;  // recall@10 Vigil may lose against FAISS's defaults
constexpr double kRefineCostTarget = 3;     // refine_factor 10's p50 over the unrefined p50
constexpr int64_t kRssTargetBytes = int64_t{512} << 20;
constexpr uint32_t kK = 10;

struct Config {
  uint64_t rows, queries, recall_queries;
  uint32_t dim, nprobes;
  DatagenOptions data;  // the generated vectors' shape
  int runs;
  int threads;  // of the parallel searches
  bool sql;
  IvfPqParams params;
  std::map<std::string, std::string> sql_properties;  // of the SQL job's CREATE INDEX
};

Config ParseConfig(const BenchArgs& args) {
  Config c;
  c.data = VectorDataOptions(args, 1000000);
  c.rows = c.data.rows;
  c.dim = c.data.dim;
  c.nprobes = static_cast<uint32_t>(args.Int("nprobes", 20));
  c.queries = static_cast<uint64_t>(args.Int("queries", 1000));
  c.recall_queries = static_cast<uint64_t>(args.Int("recall_queries", 100));
  c.runs = static_cast<int>(std::max<int64_t>(1, args.Int("runs", 1)));
  c.sql = args.Int("sql", 1) != 0;
  c.threads = static_cast<int>(std::clamp<int64_t>(args.Int("threads", 2), 1, 64));
  c.params.metric = index::Metric::kL2;
  c.params.num_partitions = static_cast<uint32_t>(args.Int("partitions", 1024));
  c.params.num_sub_vectors = static_cast<uint32_t>(args.Int("sub_vectors", 16));
  c.params.max_iterations = static_cast<uint32_t>(args.Int("max_iterations", IvfPqParams{}.max_iterations));
  c.params.sample_rate = static_cast<uint32_t>(args.Int("sample_rate", IvfPqParams{}.sample_rate));
  c.sql_properties = {{"index_type", "IVF_PQ"},
                      {"metric", "l2"},
                      {"num_partitions", std::to_string(c.params.num_partitions)},
                      {"num_sub_vectors", std::to_string(c.params.num_sub_vectors)}};
  if (args.Has("max_iterations")) {
    c.sql_properties["max_iterations"] = std::to_string(c.params.max_iterations);
  }
  if (args.Has("sample_rate")) c.sql_properties["sample_rate"] = std::to_string(c.params.sample_rate);
  return c;
}

TransactionProperties Props(std::string op) {
  TransactionProperties p;
  p.operation = std::move(op);
  return p;
}

// What a forked Vigil build reports back.
struct VigilBuild {
  double seconds = 0;
  double train_seconds = 0;
  int64_t peak_rss_bytes = 0;
  IndexSegmentMeta meta;
};

// Child side: builds the segment and returns the JSON to report.
nlohmann::json BuildInChild(const std::string& path, const Config& c, const Uuid& uuid) {
  auto run = [&]() -> Result<nlohmann::json> {
    VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path));
    const Field& field = ds->schema()->field(*ds->schema()->IndexOf("emb"));
    std::vector<uint32_t> frags;
    for (const auto& f : ds->manifest().fragments) frags.push_back(f.id);
    auto t0 = Clock::now();
    VIGIL_ASSIGN_OR_RETURN(auto model, index::TrainIvfPq(*ds, field, frags, c.params, nullptr));
    double train_s = Since(t0);
    VIGIL_ASSIGN_OR_RETURN(auto writer, index::SegmentWriter::Create(ds->fs(), ds->path(), uuid));
    VIGIL_RETURN_IF_ERROR(index::BuildIvfPqSegment(*ds, field, frags, model, writer.get(), nullptr));
    VIGIL_ASSIGN_OR_RETURN(auto files, writer->Finish());
    nlohmann::json j = {{"seconds", Since(t0)},
                        {"train_seconds", train_s},
                        {"field_id", field.id},
                        {"version", ds->version()},
                        {"fragments", frags}};
    for (const auto& f : files) j["files"].push_back({{"name", f.name}, {"size", f.size}, {"checksum", f.checksum}});
    return j;
  };
  auto r = run();
  return r.ok() ? *r : nlohmann::json{{"error", r.status().ToString()}};
}

Result<VigilBuild> ForkVigilBuild(const std::string& path, const Config& c) {
  Uuid uuid = Uuid::Generate();
  VIGIL_ASSIGN_OR_RETURN(auto child, RunForked([&] { return BuildInChild(path, c, uuid); }));
  const nlohmann::json& j = child.first;
  VigilBuild b;
  b.seconds = j["seconds"].get<double>();
  b.train_seconds = j["train_seconds"].get<double>();
  b.peak_rss_bytes = child.second;
  b.meta.name = "bench_idx";
  b.meta.uuid = uuid;
  b.meta.field_ids = {j["field_id"].get<int32_t>()};
  b.meta.index_type = "IVF_PQ";
  b.meta.built_at_version = j["version"].get<uint64_t>();
  b.meta.covered_fragments = j["fragments"].get<std::vector<uint32_t>>();
  for (const auto& f : j["files"]) {
    b.meta.files.push_back({f["name"].get<std::string>(), f["size"].get<uint64_t>(), f["checksum"].get<uint64_t>()});
  }
  return b;
}

// How a raw FAISS build is configured.
enum class RawSettings {
  kFaissDefaults,  // train on every vector, FAISS's iterations, the libraries' thread counts
  kVigils,         // Vigil's sample, iterations and thread settings
};

// Raw FAISS: train (FAISS's own IndexIVFPQ::train), add every vector.
std::unique_ptr<faiss::IndexIVFPQ> RawBuild(const float* xb, const Config& c, RawSettings settings,
                                            faiss::IndexFlatL2* quantizer, double* seconds) {
  auto ivf =
      std::make_unique<faiss::IndexIVFPQ>(quantizer, c.dim, c.params.num_partitions, c.params.num_sub_vectors, 8);
  std::vector<float> sample;
  if (settings == RawSettings::kVigils) {
    index::ConfigureFaissThreads(c.rows);
    auto ordinals = index::SampleOrdinals(c.rows, index::TrainingSampleSize(c.params, c.rows));
    sample.resize(ordinals.size() * c.dim);
    for (size_t i = 0; i < ordinals.size(); ++i) {
      std::memcpy(&sample[i * c.dim], xb + ordinals[i] * c.dim, c.dim * sizeof(float));
    }
    ivf->cp.niter = static_cast<int>(c.params.max_iterations);
    ivf->cp.max_points_per_centroid = static_cast<int>(c.params.sample_rate);
    ivf->pq.cp.niter = static_cast<int>(c.params.max_iterations);
  }
  const float* train = sample.empty() ? xb : sample.data();
  const size_t train_rows = sample.empty() ? c.rows : sample.size() / c.dim;
  auto t0 = Clock::now();
  ivf->train(static_cast<faiss::Index::idx_t>(train_rows), train);
  ivf->add(static_cast<faiss::Index::idx_t>(c.rows), xb);
  *seconds = Since(t0);
  return ivf;
}

// Every vector, in generator order (= global row number), as an exact index.
void FillFlat(const DataGenerator& gen, const Config& c, faiss::IndexFlatL2* flat) {
  flat->codes.resize(c.rows * c.dim * sizeof(float));
  for (uint64_t r = 0; r < c.rows; ++r) gen.Embedding(r, flat->get_xb() + r * c.dim);
  flat->ntotal = static_cast<faiss::Index::idx_t>(c.rows);
}

// A raw FAISS build in a child (so runs interleave with Vigil's); the index is
// written to `out` for the parent's searches.
Result<double> ForkRawBuild(const DataGenerator& gen, const Config& c, RawSettings settings, const std::string& out) {
  VIGIL_ASSIGN_OR_RETURN(auto child, RunForked([&]() -> nlohmann::json {
                           faiss::IndexFlatL2 flat(c.dim);
                           FillFlat(gen, c, &flat);
                           faiss::IndexFlatL2 quantizer(c.dim);
                           double seconds = 0;
                           auto ivf = RawBuild(flat.get_xb(), c, settings, &quantizer, &seconds);
                           try {
                             faiss::write_index(ivf.get(), out.c_str());
                           } catch (const std::exception& e) {
                             return {{"error", e.what()}};
                           }
                           return {{"seconds", seconds}};
                         }));
  return child.first["seconds"].get<double>();
}

// A root whose table bench.vectors holds the generator's rows, for the SQL job.
Result<std::string> MakeSqlRoot(const DataGenerator& gen, const std::string& work_dir) {
  const std::string dir = work_dir + "/sql_root";
  VIGIL_RETURN_IF_ERROR(MakeVectorRoot(gen, dir));
  return dir;
}

std::string CreateIndexSql(const Config& c) {
  std::string props;
  for (const auto& [key, value] : c.sql_properties) {
    props += (props.empty() ? "" : ", ") + ("\"" + key + "\" = \"" + value + "\"");
  }
  return "CREATE INDEX bench_idx ON bench.vectors (emb) USING ANN PROPERTIES (" + props + ")";
}

// Seconds of `vigil sql -c "CREATE INDEX ..."` (which waits for the job); then the
// index is dropped, untimed, unless `keep` (the shell's searches use it).
Result<double> TimeSqlJob(const std::string& root_dir, const Config& c, bool keep) {
  auto t0 = Clock::now();
  VIGIL_RETURN_IF_ERROR(RunProgram({VigilProgram(), "--root", root_dir, "sql", "-c", CreateIndexSql(c)}).status());
  double seconds = Since(t0);
  if (keep) return seconds;
  VIGIL_RETURN_IF_ERROR(
      RunProgram({VigilProgram(), "--root", root_dir, "sql", "-c", "DROP INDEX bench_idx ON bench.vectors"}).status());
  return seconds;
}

// A script of one vector_search statement per query (k 10, the bench's nprobes).
std::string ShellScript(const std::vector<float>& queries, const Config& c, ShellVectors how) {
  return VectorSearchScript(queries, c.dim, c.queries, kK, "{\"nprobes\": " + std::to_string(c.nprobes) + "}", how);
}

Result<std::unique_ptr<faiss::IndexIVFPQ>> ReadRawIndex(const std::string& path) {
  std::unique_ptr<faiss::Index> index;
  try {
    index.reset(faiss::read_index(path.c_str()));
  } catch (const std::exception& e) {
    return Status::Internal("reading the raw FAISS index " + path + ": " + e.what());
  }
  auto* ivf = dynamic_cast<faiss::IndexIVFPQ*>(index.get());
  if (ivf == nullptr) return Status::Internal("the raw FAISS index " + path + " is not an IndexIVFPQ");
  index.release();
  return std::unique_ptr<faiss::IndexIVFPQ>(ivf);
}

struct SearchStats {
  double p50_us = 0, p99_us = 0, qps = 0;
};

// Runs `search(i)` serially for every query; latency percentiles and QPS.
template <typename Fn>
SearchStats TimeQueries(uint64_t n, Fn search) {
  std::vector<double> us(n);
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    auto q0 = Clock::now();
    search(i);
    us[i] = Since(q0) * 1e6;
  }
  double total = Since(t0);
  std::sort(us.begin(), us.end());
  return {us[n / 2], us[std::min<uint64_t>(n - 1, n * 99 / 100)], static_cast<double>(n) / total};
}

// Queries per second of `threads` threads running search(i) at once, each on every
// threads-th query.
template <typename Fn>
double ParallelQps(uint64_t n, int threads, Fn search) {
  std::vector<std::thread> pool;
  auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (uint64_t i = static_cast<uint64_t>(t); i < n; i += static_cast<uint64_t>(threads)) search(i);
    });
  }
  for (auto& th : pool) th.join();
  return static_cast<double>(n) / Since(t0);
}

nlohmann::json StatsJson(const std::vector<SearchStats>& s, double recall) {
  std::vector<double> p50, p99, qps;
  for (const auto& x : s) {
    p50.push_back(x.p50_us);
    p99.push_back(x.p99_us);
    qps.push_back(x.qps);
  }
  return {{"p50_us", Median(p50)}, {"p99_us", Median(p99)}, {"qps", Median(qps)}, {"recall_at_10", recall}};
}

double Recall(const std::vector<std::vector<int64_t>>& got, const std::vector<faiss::Index::idx_t>& exact) {
  return RecallAtK(got, exact, kK);
}

Result<nlohmann::json> RunIvfPqBench(const BenchArgs& args) {
  Config c = ParseConfig(args);
  if (c.rows < c.params.num_partitions || c.queries == 0 || c.recall_queries > c.queries) {
    return Status::InvalidArgument("need rows >= partitions and 0 < recall_queries <= queries");
  }
  VIGIL_ASSIGN_OR_RETURN(auto gen, DataGenerator::Make(c.data));
  std::string path = args.work_dir + "/ivfpq.vgl";
  auto t0 = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(path, gen->schema(), Props("CREATE_TABLE")));
  auto reader = gen->NewReader();
  VIGIL_ASSIGN_OR_RETURN(ds, ds->Append(reader.get(), Props("APPEND")));
  double load_s = Since(t0);

  std::string sql_root;
  if (c.sql) {
    VIGIL_ASSIGN_OR_RETURN(sql_root, MakeSqlRoot(*gen, args.work_dir));
  }

  std::vector<VigilBuild> vigil;
  std::vector<double> raw_s, defaults_s, sql_s;
  const std::string raw_path = args.work_dir + "/raw.faiss", defaults_path = args.work_dir + "/defaults.faiss";
  for (int r = 0; r < c.runs; ++r) {  // the parent uses no OpenMP before the last fork
    VIGIL_ASSIGN_OR_RETURN(VigilBuild b, ForkVigilBuild(path, c));
    vigil.push_back(std::move(b));
    VIGIL_ASSIGN_OR_RETURN(double seconds, ForkRawBuild(*gen, c, RawSettings::kFaissDefaults, defaults_path));
    defaults_s.push_back(seconds);
    VIGIL_ASSIGN_OR_RETURN(seconds, ForkRawBuild(*gen, c, RawSettings::kVigils, raw_path));
    raw_s.push_back(seconds);
    if (!c.sql) continue;
    VIGIL_ASSIGN_OR_RETURN(seconds, TimeSqlJob(sql_root, c, /*keep=*/r + 1 == c.runs));
    sql_s.push_back(seconds);
  }
  if (c.sql) VIGIL_RETURN_IF_ERROR(RunProgram({VigilProgram(), "--root", sql_root, "supervise", "--stop"}).status());
  int threads = index::ConfigureFaissThreads(c.rows);
  faiss::IndexFlatL2 flat(c.dim);
  FillFlat(*gen, c, &flat);
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<faiss::IndexIVFPQ> raw, ReadRawIndex(raw_path));
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<faiss::IndexIVFPQ> defaults, ReadRawIndex(defaults_path));

  std::vector<float> queries(c.queries * c.dim);
  for (uint64_t q = 0; q < c.queries; ++q) gen->Embedding(c.rows + 1000 + q, &queries[q * c.dim]);
  std::vector<float> exact_d(c.recall_queries * kK);
  std::vector<faiss::Index::idx_t> exact(c.recall_queries * kK);
  flat.search(static_cast<faiss::Index::idx_t>(c.recall_queries), queries.data(), kK, exact_d.data(), exact.data());

  VIGIL_ASSIGN_OR_RETURN(auto files, index::SegmentFiles::Open(ds->fs(), ds->path(), vigil.back().meta));
  VIGIL_ASSIGN_OR_RETURN(auto seg, IvfPqSegment::Open(files));
  std::map<uint32_t, uint64_t> first_row;  // fragment id -> global row number of its offset 0
  uint64_t base = 0;
  for (const auto& f : ds->manifest().fragments) {
    first_row[f.id] = base;
    base += f.num_rows;
  }
  // The built segment committed into the dataset, for the query API.
  Transaction txn;
  txn.props = Props("CREATE_INDEX");
  txn.added_segments.push_back(vigil.back().meta);
  VIGIL_ASSIGN_OR_RETURN(auto indexed, ds->Commit(std::move(txn)));
  VIGIL_ASSIGN_OR_RETURN(auto snapshot, query::TableSnapshot::Open(indexed));
  query::VectorQueryOptions qopts;
  qopts.k = kK;
  qopts.nprobes = c.nprobes;
  query::VectorQueryOptions refine_opts = qopts;
  refine_opts.refine_factor = 10;
  std::vector<std::vector<int64_t>> vigil_ids(c.recall_queries), api_ids(c.recall_queries),
      refine_ids(c.recall_queries), raw_ids(c.recall_queries), defaults_ids(c.recall_queries),
      raw_refine_ids(c.recall_queries);
  std::vector<SearchStats> vigil_stats, api_stats, refine_stats, raw_stats, defaults_stats, raw_refine_stats;
  // FAISS's exact re-rank of the same number of candidates: IndexRefineFlat over the
  // raw index (Vigil's settings), k_factor = refine_factor.
  raw->nprobe = c.nprobes;
  faiss::IndexRefineFlat raw_refine(raw.get(), flat.get_xb());
  raw_refine.k_factor = static_cast<float>(refine_opts.refine_factor);
  Status search_error;
  faiss::SearchParametersIVF sp;
  sp.nprobe = c.nprobes;
  const std::string literal_script = args.work_dir + "/shell_literal.sql",
                    prepared_script = args.work_dir + "/shell_prepared.sql";
  if (c.sql) {
    VIGIL_RETURN_IF_ERROR(
        WriteFileDurably(DefaultFileSystem(), literal_script, ShellScript(queries, c, ShellVectors::kLiteral)));
    VIGIL_RETURN_IF_ERROR(
        WriteFileDurably(DefaultFileSystem(), prepared_script, ShellScript(queries, c, ShellVectors::kPrepared)));
  }
  std::vector<double> shell_literal_qps, shell_prepared_qps;
  std::vector<std::vector<int64_t>> shell_literal_ids, shell_prepared_ids;
  for (int r = 0; r < c.runs; ++r) {
    if (c.sql) {
      VIGIL_ASSIGN_OR_RETURN(ShellSearch literal, TimeShellSearch(sql_root, literal_script, c.queries));
      VIGIL_ASSIGN_OR_RETURN(ShellSearch prepared, TimeShellSearch(sql_root, prepared_script, c.queries));
      shell_literal_qps.push_back(literal.qps);
      shell_prepared_qps.push_back(prepared.qps);
      literal.ids.resize(c.recall_queries);
      prepared.ids.resize(c.recall_queries);
      shell_literal_ids = std::move(literal.ids);
      shell_prepared_ids = std::move(prepared.ids);
    }
    vigil_stats.push_back(TimeQueries(c.queries, [&](uint64_t q) {
      auto got = seg->Search(&queries[q * c.dim], kK, c.nprobes, nullptr);
      if (!got.ok()) return void(search_error = got.status());
      if (q >= c.recall_queries) return;
      vigil_ids[q].clear();
      for (const auto& s : *got) vigil_ids[q].push_back(first_row[RowFragment(s.row)] + RowOffset(s.row));
    }));
    api_stats.push_back(TimeQueries(c.queries, [&](uint64_t q) {
      std::vector<float> v(&queries[q * c.dim], &queries[(q + 1) * c.dim]);
      auto got = query::VectorSearch(*snapshot, "emb", v, qopts);
      if (!got.ok()) return void(search_error = got.status());
      if (q >= c.recall_queries) return;
      api_ids[q].clear();
      for (const auto& h : *got) api_ids[q].push_back(first_row[RowFragment(h.row)] + RowOffset(h.row));
    }));
    refine_stats.push_back(TimeQueries(c.queries, [&](uint64_t q) {
      std::vector<float> v(&queries[q * c.dim], &queries[(q + 1) * c.dim]);
      auto got = query::VectorSearch(*snapshot, "emb", v, refine_opts);
      if (!got.ok()) return void(search_error = got.status());
      if (q >= c.recall_queries) return;
      refine_ids[q].clear();
      for (const auto& h : *got) refine_ids[q].push_back(first_row[RowFragment(h.row)] + RowOffset(h.row));
    }));
    raw_stats.push_back(TimeQueries(c.queries, [&](uint64_t q) {
      float d[kK];
      faiss::Index::idx_t l[kK];
      raw->search(1, &queries[q * c.dim], kK, d, l, &sp);
      if (q < c.recall_queries) raw_ids[q].assign(l, l + kK);
    }));
    raw_refine_stats.push_back(TimeQueries(c.queries, [&](uint64_t q) {
      float d[kK];
      faiss::Index::idx_t l[kK];
      raw_refine.search(1, &queries[q * c.dim], kK, d, l);
      if (q < c.recall_queries) raw_refine_ids[q].assign(l, l + kK);
    }));
    defaults_stats.push_back(TimeQueries(c.queries, [&](uint64_t q) {
      float d[kK];
      faiss::Index::idx_t l[kK];
      defaults->search(1, &queries[q * c.dim], kK, d, l, &sp);
      if (q < c.recall_queries) defaults_ids[q].assign(l, l + kK);
    }));
  }
  VIGIL_RETURN_IF_ERROR(search_error);

  // The same queries from 1 and from `threads` threads at once: the query API on one
  // snapshot, and raw FAISS's index searched concurrently (FAISS's own baseline).
  std::mutex error_mu;
  auto api_search_with = [&](const query::VectorQueryOptions& options) {
    return [&](uint64_t q) {
      std::vector<float> v(&queries[q * c.dim], &queries[(q + 1) * c.dim]);
      auto got = query::VectorSearch(*snapshot, "emb", v, options);
      if (got.ok()) return;
      std::lock_guard<std::mutex> lock(error_mu);
      search_error = got.status();
    };
  };
  auto api_search = api_search_with(qopts);
  auto refine_search = api_search_with(refine_opts);
  auto raw_search = [&](uint64_t q) {
    float d[kK];
    faiss::Index::idx_t l[kK];
    raw->search(1, &queries[q * c.dim], kK, d, l, &sp);
  };
  std::vector<double> api_one, api_many, refine_one, refine_many, raw_one, raw_many;
  for (int r = 0; r < c.runs; ++r) {
    refine_one.push_back(ParallelQps(c.queries, 1, refine_search));
    refine_many.push_back(ParallelQps(c.queries, c.threads, refine_search));
    api_one.push_back(ParallelQps(c.queries, 1, api_search));
    raw_one.push_back(ParallelQps(c.queries, 1, raw_search));
    api_many.push_back(ParallelQps(c.queries, c.threads, api_search));
    raw_many.push_back(ParallelQps(c.queries, c.threads, raw_search));
  }
  VIGIL_RETURN_IF_ERROR(search_error);
  const double api_scaling = Median(api_many) / Median(api_one);
  nlohmann::json parallel = {{"threads", c.threads},
                             {"vigil_query_api_qps_1_thread", Median(api_one)},
                             {"vigil_query_api_qps", Median(api_many)},
                             {"vigil_query_api_scaling", api_scaling},
                             {"vigil_query_api_refine_10_qps_1_thread", Median(refine_one)},
                             {"vigil_query_api_refine_10_qps", Median(refine_many)},
                             {"vigil_query_api_refine_10_scaling", Median(refine_many) / Median(refine_one)},
                             {"faiss_vigil_settings_qps_1_thread", Median(raw_one)},
                             {"faiss_vigil_settings_qps", Median(raw_many)},
                             {"faiss_vigil_settings_scaling", Median(raw_many) / Median(raw_one)},
                             {"scaling_target_min", kParallelScalingTarget * c.threads / 2}};

  std::vector<double> vigil_s, train_s, rss;
  for (const auto& b : vigil) {
    vigil_s.push_back(b.seconds);
    train_s.push_back(b.train_seconds);
    rss.push_back(static_cast<double>(b.peak_rss_bytes));
  }
  nlohmann::json vs = StatsJson(vigil_stats, Recall(vigil_ids, exact));
  nlohmann::json as = StatsJson(api_stats, Recall(api_ids, exact));
  nlohmann::json refined = StatsJson(refine_stats, Recall(refine_ids, exact));
  nlohmann::json rs = StatsJson(raw_stats, Recall(raw_ids, exact));
  nlohmann::json ds_stats = StatsJson(defaults_stats, Recall(defaults_ids, exact));
  nlohmann::json raw_refined = StatsJson(raw_refine_stats, Recall(raw_refine_ids, exact));
  const double refine_cost = refined["p50_us"].get<double>() / as["p50_us"].get<double>();
  const double build_ratio = Median(vigil_s) / Median(raw_s);
  const double defaults_ratio = Median(vigil_s) / Median(defaults_s);
  const double qps_ratio = as["qps"].get<double>() / rs["qps"].get<double>();
  const double segment_qps_ratio = vs["qps"].get<double>() / rs["qps"].get<double>();
  const double recall_delta = as["recall_at_10"].get<double>() - ds_stats["recall_at_10"].get<double>();
  nlohmann::json build = {{"vigil_seconds", Median(vigil_s)},
                          {"vigil_train_seconds", Median(train_s)},
                          {"faiss_defaults_seconds", Median(defaults_s)},
                          {"faiss_vigil_settings_seconds", Median(raw_s)},
                          {"ratio_vs_faiss_vigil_settings", build_ratio},
                          {"ratio_vs_faiss_defaults", defaults_ratio},
                          {"ratio_target_max", kIvfPqBuildRatioTarget},
                          {"vigil_peak_rss_mib", Median(rss) / (1 << 20)},
                          {"rss_target_max_mib", kRssTargetBytes >> 20},
                          {"vigil_runs_seconds", vigil_s},
                          {"faiss_defaults_runs_seconds", defaults_s},
                          {"faiss_vigil_settings_runs_seconds", raw_s}};
  nlohmann::json pass = {{"build_ratio", build_ratio <= kIvfPqBuildRatioTarget},
                         {"peak_rss", Median(rss) <= static_cast<double>(kRssTargetBytes)},
                         {"qps_ratio", qps_ratio >= kQpsRatioTarget},
                         {"recall_vs_faiss_defaults", recall_delta >= -kRecallTolerance},
                         {"refine_cost", refine_cost <= kRefineCostTarget},
                         {"parallel_scaling", api_scaling >= kParallelScalingTarget * c.threads / 2}};
  if (c.sql) {
    const double sql_ratio = Median(sql_s) / Median(defaults_s);
    build["sql_job_seconds"] = Median(sql_s);
    build["sql_job_runs_seconds"] = sql_s;
    build["sql_job_ratio_vs_faiss_defaults"] = sql_ratio;
    build["sql_statement"] = CreateIndexSql(c);
    pass["sql_job_vs_faiss_defaults"] = sql_ratio <= kIvfPqBuildRatioTarget && recall_delta >= -kRecallTolerance;
  }
  nlohmann::json search = {{"vigil_query_api", as},
                           {"vigil_query_api_refine_10", refined},
                           {"vigil_segment", vs},
                           {"faiss_vigil_settings", rs},
                           {"faiss_defaults", ds_stats},
                           {"faiss_vigil_settings_refine_flat_10", raw_refined},
                           {"refine_10_p50_over_unrefined", refine_cost},
                           {"refine_cost_target_max", kRefineCostTarget},
                           {"qps_ratio", qps_ratio},
                           {"segment_qps_ratio", segment_qps_ratio},
                           {"qps_ratio_target_min", kQpsRatioTarget},
                           {"recall_minus_faiss_defaults", recall_delta},
                           {"recall_tolerance", kRecallTolerance}};
  if (c.sql) {
    const double shell_ratio = Median(shell_prepared_qps) / rs["qps"].get<double>();
    search["vigil_shell_literal"] = {{"qps", Median(shell_literal_qps)},
                                     {"recall_at_10", Recall(shell_literal_ids, exact)}};
    search["vigil_shell_prepared"] = {{"qps", Median(shell_prepared_qps)},
                                      {"recall_at_10", Recall(shell_prepared_ids, exact)}};
    search["shell_literal_qps_ratio"] = Median(shell_literal_qps) / rs["qps"].get<double>();
    search["shell_prepared_qps_ratio"] = shell_ratio;
    search["shell_qps_ratio_target_min"] = kShellQpsRatioTarget;
    pass["shell_qps_ratio"] = shell_ratio >= kShellQpsRatioTarget;
  }
  return nlohmann::json{{"benchmark", "index-ivfpq"},
                        {"config",
                         {{"rows", c.rows},
                          {"dim", c.dim},
                          {"latent_dim", c.data.latent_dim},
                          {"noise", c.data.noise},
                          {"partitions", c.params.num_partitions},
                          {"sub_vectors", c.params.num_sub_vectors},
                          {"max_iterations", c.params.max_iterations},
                          {"sample_rate", c.params.sample_rate},
                          {"sample_rows", index::TrainingSampleSize(c.params, c.rows)},
                          {"nprobes", c.nprobes},
                          {"queries", c.queries},
                          {"recall_queries", c.recall_queries},
                          {"runs", c.runs},
                          {"omp_threads", threads},
                          {"blas_threads", 1}}},
                        {"dataset_load_seconds", load_s},
                        {"build", build},
                        {"search", search},
                        {"parallel_search", parallel},
                        {"pass", pass}};
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "index-ivfpq",
                      .description = "IVF_PQ build time, peak RSS, latency, QPS and recall vs raw FAISS",
                      .fn = RunIvfPqBench,
                      .int_options = {"dim", "latent_dim", "max_iterations", "nprobes", "partitions", "queries",
                                      "recall_queries", "rows", "runs", "sample_rate", "sql", "sub_vectors", "threads"},
                      .text_options = {"noise"}});

}  // namespace vigil::bench::index_ivf_pq_bench

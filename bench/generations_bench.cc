// `vigil bench generations`: generation leases and online index maintenance.
//
//  1. Acquire + release of a lease, uncontended (ns per pair; target <= 100 ns).
//  2. Reader latency: `readers` threads run a small vector query on a leased
//     generation in a loop, once steady and once with a publication (an empty
//     commit + Refresh) every `publish_ms`; p99 contended / p99 steady, median
//     of `runs` alternating pairs (target <= 1.5x).
//  3. Online maintenance: an IVF_PQ table of `rows` x `dim`; full CREATE INDEX
//     time, then `delta` appended rows and BUILD INDEX time (median of
//     `build_runs` BUILDs, each over a fresh delta; target <= 5% of CREATE);
//     the same on `big_rows` (target: BUILD <= 2x its `rows` time).
//     big_rows = 0 skips the large table.
//
// Options: rows (200000), big_rows (2000000), delta (1000), dim (128),
// partitions (256), sub_vectors (16), runs (3), acquire_iters (5000000),
// seconds (1), readers (2), publish_ms (10), query_rows (20000), build_runs (3), publish_refresh (1; 0 commits
// without publishing, to separate the commit's own CPU and I/O cost from publication's).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "bench/bench.h"
#include "vigil/generations/generation_manager.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/query/query.h"

namespace vigil::bench::generations_bench {
namespace {

constexpr double kAcquireTargetNs = 100;
constexpr double kP99RatioTarget = 1.5;
constexpr double kBuildVsCreateTarget = 0.05;
constexpr double kBigVsSmallTarget = 2.0;

// A table of `rows` generated rows with an IVF_PQ index on `emb`.
Result<std::shared_ptr<const DataGenerator>> MakeTable(const std::string& path, uint64_t rows, uint32_t dim) {
  DatagenOptions o;
  o.rows = rows;
  o.dim = dim;
  o.columns = {"id", "emb"};
  VIGIL_ASSIGN_OR_RETURN(auto gen, DataGenerator::Make(o));
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(path, gen->schema(), {}));
  auto reader = gen->NewReader();
  VIGIL_RETURN_IF_ERROR(ds->Append(reader.get(), {}).status());
  return gen;
}

Result<double> CreateIvfPq(const std::string& path, uint32_t partitions, uint32_t sub_vectors) {
  index::CreateIndexRequest r;
  r.dataset_path = path;
  r.column = "emb";
  r.name = "emb_idx";
  r.type = index::IndexType::kIvfPq;
  r.properties = {{"index_type", "IVF_PQ"},
                  {"metric", "l2"},
                  {"num_partitions", std::to_string(partitions)},
                  {"num_sub_vectors", std::to_string(sub_vectors)}};
  auto t0 = Clock::now();
  VIGIL_RETURN_IF_ERROR(index::CreateVectorIndex(r).status());
  return Since(t0);
}

Status AppendRows(const std::string& path, const DataGenerator& gen, uint64_t first, size_t n) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path));
  std::vector<RecordBatch> parts;
  parts.push_back(gen.Batch(first, n));
  auto reader = MakeBatchReader(gen.schema(), std::move(parts));
  return ds->Append(reader.get(), {}).status();
}

Result<double> BuildDelta(const std::string& path) {
  index::BuildIndexRequest req;
  req.dataset_path = path;
  req.name = "emb_idx";
  auto t0 = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto r, index::BuildIndex(req));
  if (r.noop) return Status::Internal("BUILD INDEX found nothing to cover");
  return Since(t0);
}

Result<double> AcquireNs(const std::string& path, int64_t iters) {
  VIGIL_ASSIGN_OR_RETURN(auto m, generations::GenerationManager::Open(path));
  uint64_t sink = 0;
  auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    generations::Lease l = m->Acquire();
    sink += l.generation_id();
  }
  double s = Since(t0);
  if (sink == 0) return Status::Internal("no lease was valid");
  return s * 1e9 / static_cast<double>(iters);
}

// p99 of reader query latency (ms) over `seconds`, publishing every `publish_ms` when > 0.
Result<double> ReaderP99(generations::GenerationManager* m, const DataGenerator& gen, const std::string& path,
                         int readers, double seconds, int publish_ms, bool refresh) {
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(readers);
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> q(gen.options().dim);
      for (uint64_t i = 0; !stop; ++i) {
        gen.Embedding((i * 7919 + t) % gen.options().rows, q.data());
        auto t0 = Clock::now();
        generations::Lease l = m->Acquire();
        auto r = query::VectorSearch(l.snapshot(), "emb", q, query::VectorQueryOptions{.k = 10, .nprobes = 4});
        l.Release();
        if (r.ok()) lat[t].push_back(Since(t0) * 1e3);
      }
    });
  }
  Status pub_status;
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (publish_ms > 0) {
      auto ds = Dataset::Open(path);
      Transaction txn;
      txn.props.operation = "BENCH_PUBLISH";
      Status st = ds.ok() ? (*ds)->Commit(std::move(txn)).status() : ds.status();
      if (st.ok() && refresh) st = m->Refresh().status();
      if (!st.ok() && pub_status.ok()) pub_status = st;
      std::this_thread::sleep_for(std::chrono::milliseconds(publish_ms));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  VIGIL_RETURN_IF_ERROR(pub_status);
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  return Percentile(all, 0.99);
}

Result<nlohmann::json> ReaderBench(const BenchArgs& args) {
  const std::string path = args.work_dir + "/readers.vgl";
  VIGIL_ASSIGN_OR_RETURN(auto gen, MakeTable(path, args.Int("query_rows", 20000), 32));
  VIGIL_RETURN_IF_ERROR(CreateIvfPq(path, 32, 8).status());
  VIGIL_ASSIGN_OR_RETURN(double acquire_ns, AcquireNs(path, args.Int("acquire_iters", 5000000)));
  VIGIL_ASSIGN_OR_RETURN(auto m, generations::GenerationManager::Open(path));
  const int readers = static_cast<int>(args.Int("readers", 2));
  const double seconds = static_cast<double>(args.Int("seconds", 1));
  const int publish_ms = static_cast<int>(args.Int("publish_ms", 10));
  std::vector<double> steady, contended, ratios;
  for (int64_t r = 0; r < args.Int("runs", 3); ++r) {
    VIGIL_ASSIGN_OR_RETURN(double s, ReaderP99(m.get(), *gen, path, readers, seconds, 0, false));
    VIGIL_ASSIGN_OR_RETURN(
        double c, ReaderP99(m.get(), *gen, path, readers, seconds, publish_ms, args.Int("publish_refresh", 1) != 0));
    steady.push_back(s);
    contended.push_back(c);
    ratios.push_back(s > 0 ? c / s : 0);
  }
  double ratio = Median(ratios);
  return nlohmann::json{{"acquire_release_ns", acquire_ns},
                        {"acquire_target_ns", kAcquireTargetNs},
                        {"acquire_meets_target", acquire_ns <= kAcquireTargetNs},
                        {"readers", readers},
                        {"publish_every_ms", publish_ms},
                        {"steady_p99_ms", steady},
                        {"publishing_p99_ms", contended},
                        {"p99_ratio_median", ratio},
                        {"p99_ratio_target", kP99RatioTarget},
                        {"p99_meets_target", ratio <= kP99RatioTarget}};
}

struct Maintenance {
  double create_s = 0;
  double build_s = 0;              // median of build_runs
  std::vector<double> build_runs;  // seconds of each BUILD
};

Result<Maintenance> MaintenanceOn(const std::string& path, uint64_t rows, const BenchArgs& args) {
  const uint32_t dim = static_cast<uint32_t>(args.Int("dim", 128));
  VIGIL_ASSIGN_OR_RETURN(auto gen, MakeTable(path, rows, dim));
  Maintenance m;
  VIGIL_ASSIGN_OR_RETURN(m.create_s, CreateIvfPq(path, static_cast<uint32_t>(args.Int("partitions", 256)),
                                                 static_cast<uint32_t>(args.Int("sub_vectors", 16))));
  // Each BUILD covers a fresh delta; the median damps fsync noise on shared disks.
  const size_t delta = static_cast<size_t>(args.Int("delta", 1000));
  std::vector<double> builds;
  for (int64_t i = 0; i < args.Int("build_runs", 3); ++i) {
    VIGIL_RETURN_IF_ERROR(AppendRows(path, *gen, rows + static_cast<uint64_t>(i) * delta, delta));
    VIGIL_ASSIGN_OR_RETURN(double s, BuildDelta(path));
    builds.push_back(s);
  }
  m.build_s = Median(builds);
  m.build_runs = builds;
  return m;
}

Result<nlohmann::json> RunGenerationsBench(const BenchArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json out, ReaderBench(args));
  const uint64_t rows = static_cast<uint64_t>(args.Int("rows", 200000));
  const uint64_t big_rows = static_cast<uint64_t>(args.Int("big_rows", 2000000));
  VIGIL_ASSIGN_OR_RETURN(Maintenance small, MaintenanceOn(args.work_dir + "/small.vgl", rows, args));
  double frac = small.build_s / small.create_s;
  out["rows"] = rows;
  out["delta_rows"] = args.Int("delta", 1000);
  out["create_seconds"] = small.create_s;
  out["build_seconds"] = small.build_s;
  out["build_runs_seconds"] = small.build_runs;
  out["build_vs_create"] = frac;
  out["build_vs_create_target"] = kBuildVsCreateTarget;
  out["build_meets_target"] = frac <= kBuildVsCreateTarget;
  if (big_rows > 0) {
    VIGIL_ASSIGN_OR_RETURN(Maintenance big, MaintenanceOn(args.work_dir + "/big.vgl", big_rows, args));
    double growth = big.build_s / small.build_s;
    out["big_rows"] = big_rows;
    out["big_create_seconds"] = big.create_s;
    out["big_build_seconds"] = big.build_s;
    out["big_build_runs_seconds"] = big.build_runs;
    out["big_build_vs_small_build"] = growth;
    out["big_build_target"] = kBigVsSmallTarget;
    out["big_build_meets_target"] = growth <= kBigVsSmallTarget;
  }
  out["peak_rss_bytes"] = PeakRssBytes();
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "generations",
     .description = "lease acquire cost, reader p99 under publication, BUILD INDEX vs CREATE and vs table size",
     .fn = RunGenerationsBench,
     .int_options = {"acquire_iters", "big_rows", "build_runs", "delta", "dim", "partitions", "publish_ms",
                     "publish_refresh", "query_rows", "readers", "rows", "runs", "seconds", "sub_vectors"},
     .text_options = {}});

}  // namespace vigil::bench::generations_bench

// `vigil bench scale`: how a table's costs grow with its rows. For each size of
// `sizes`, on N x dim embedding-like vectors (datagen, as the other benchmarks):
//  - import: a generated .fvecs file into a new table (ImportFile, what `vigil
//    import --create` runs) in a forked child: rows/s and the child's peak RSS;
//    baseline: read(2) of the same file;
//  - IVF_PQ CREATE INDEX (CreateVectorIndex, what the worker runs) in a forked
//    child, 16 sub-vectors and sqrt(N) partitions rounded to a power of two
//    (LanceDB's rule of thumb), default training properties: seconds, peak RSS;
//  - BUILD INDEX after 1% more rows are imported: seconds and peak RSS of a child;
//  - VACUUM RETAIN 1 VERSIONS: seconds and bytes freed;
//  - search on the last version: serial C++ query API, k 10 at `nprobes`, QPS,
//    and recall@10 against exact search (faiss::IndexFlatL2) on `recall_queries`.
// Every child is forked before the parent runs FAISS (libgomp is not fork-safe).
//
// Options: sizes (100000,1000000; add 10000000 for the large row), dim (128),
// nprobes (20), queries (1000), recall_queries (100), partitions (0: by size).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <faiss/IndexFlat.h>

#include "bench/bench.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/ingest/ingest.h"
#include "vigil/query/query.h"
#include "vigil/storage/vacuum.h"

namespace vigil::bench::scale_bench {
namespace {

constexpr uint32_t kK = 10;
constexpr uint32_t kSubVectors = 16;
constexpr double kMiB = 1024.0 * 1024.0;

struct Config {
  std::vector<uint64_t> sizes;
  uint32_t dim, nprobes, partitions;
  uint64_t queries, recall_queries;
};

Result<Config> ParseConfig(const BenchArgs& args) {
  Config c;
  std::istringstream sizes(args.Str("sizes", "100000,1000000"));
  for (std::string item; std::getline(sizes, item, ',');) {
    char* end = nullptr;
    const uint64_t n = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1000 || n > 100'000'000) {
      return Status::InvalidArgument("sizes: '" + item + "' is not a row count in 1000..100000000");
    }
    c.sizes.push_back(n);
  }
  c.dim = static_cast<uint32_t>(args.Int("dim", 128));
  c.nprobes = static_cast<uint32_t>(args.Int("nprobes", 20));
  c.partitions = static_cast<uint32_t>(args.Int("partitions", 0));
  c.queries = static_cast<uint64_t>(args.Int("queries", 1000));
  c.recall_queries = static_cast<uint64_t>(args.Int("recall_queries", 100));
  if (c.sizes.empty() || c.dim % kSubVectors != 0 || c.queries == 0 || c.recall_queries > c.queries) {
    return Status::InvalidArgument("need sizes, dim a multiple of 16 and 0 < recall_queries <= queries");
  }
  return c;
}

// sqrt(rows) rounded to the nearest power of two.
uint32_t PartitionsFor(uint64_t rows) {
  const double log2 = std::round(std::log2(std::sqrt(static_cast<double>(rows))));
  return static_cast<uint32_t>(1) << static_cast<int>(std::clamp(log2, 1.0, 16.0));
}

Result<std::shared_ptr<const DataGenerator>> Generator(uint64_t rows, uint32_t dim) {
  DatagenOptions o;
  o.rows = rows;
  o.dim = dim;
  o.columns = {"emb"};
  return DataGenerator::Make(o);
}

// Rows [first, first + n) of `gen` as an .fvecs file.
Status WriteFvecsRange(const DataGenerator& gen, uint64_t first, uint64_t n, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "wbx");
  if (f == nullptr) return Status::FromErrno(errno, "create " + path);
  const uint32_t dim = gen.options().dim;
  std::vector<float> v(dim);
  bool ok = true;
  for (uint64_t r = first; r < first + n && ok; ++r) {
    gen.Embedding(r, v.data());
    const int32_t d = static_cast<int32_t>(dim);
    ok = std::fwrite(&d, sizeof d, 1, f) == 1 && std::fwrite(v.data(), sizeof(float), dim, f) == dim;
  }
  ok = std::fclose(f) == 0 && ok;
  return ok ? Status::OK() : Status::IOError("write " + path);
}

// Runs `step` in a forked child: {"seconds": ...} and anything it adds, plus its peak RSS.
Result<nlohmann::json> Timed(const std::function<Status(nlohmann::json*)>& step) {
  VIGIL_ASSIGN_OR_RETURN(auto child, RunForked([&]() -> nlohmann::json {
                           nlohmann::json out;
                           auto t0 = Clock::now();
                           Status st = step(&out);
                           if (!st.ok()) return {{"error", st.ToString()}};
                           out["seconds"] = Since(t0);
                           return out;
                         }));
  child.first["peak_rss_mib"] = static_cast<double>(child.second) / kMiB;
  return child.first;
}

// Import, CREATE INDEX, 1% appended + BUILD INDEX and VACUUM of one size (no FAISS in this
// process); the table's path is `dir`/t.vgl.
Result<nlohmann::json> BuildTable(const Config& c, uint64_t rows, const std::string& dir) {
  nlohmann::json out = {{"rows", rows}, {"partitions", c.partitions ? c.partitions : PartitionsFor(rows)}};
  VIGIL_ASSIGN_OR_RETURN(auto gen, Generator(rows, c.dim));
  const std::string file = dir + "/rows.fvecs", table = dir + "/t.vgl";
  VIGIL_RETURN_IF_ERROR(WriteFvecsRange(*gen, 0, rows, file));
  VIGIL_ASSIGN_OR_RETURN(RawRead raw, RawReadFile(file));
  const double read_gbs = static_cast<double>(raw.bytes) / 1e9 / raw.seconds;
  out["read_input_gb_per_s"] = read_gbs;
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json import, Timed([&](nlohmann::json*) {
                           ImportOptions o;
                           o.create = true;
                           return ImportFile(table, file, o).status();
                         }));
  import["rows_per_s"] = static_cast<double>(rows) / import["seconds"].get<double>();
  out["import"] = import;
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json create, Timed([&](nlohmann::json*) {
                           index::CreateIndexRequest req;
                           req.dataset_path = table;
                           req.column = "vector";
                           req.name = "vec_idx";
                           req.type = index::IndexType::kIvfPq;
                           req.properties = {{"index_type", "IVF_PQ"},
                                             {"metric", "l2"},
                                             {"num_partitions", out["partitions"].dump()},
                                             {"num_sub_vectors", std::to_string(kSubVectors)}};
                           return index::CreateVectorIndex(req).status();
                         }));
  out["create_index"] = create;
  const uint64_t more = std::max<uint64_t>(1, rows / 100);
  const std::string more_file = dir + "/more.fvecs";
  VIGIL_RETURN_IF_ERROR(WriteFvecsRange(*gen, rows, more, more_file));
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(table));
  ImportOptions more_options;
  more_options.ingest.first_id = static_cast<int64_t>(rows);
  VIGIL_RETURN_IF_ERROR(ImportInto(ds, more_file, more_options).status());
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json build, Timed([&](nlohmann::json*) {
                           index::BuildIndexRequest req;
                           req.dataset_path = table;
                           req.name = "vec_idx";
                           return index::BuildIndex(req).status();
                         }));
  build["appended_rows"] = more;
  out["build_index"] = build;
  VacuumOptions vo;
  vo.retain_versions = 1;
  auto t0 = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(VacuumReport vacuum, Vacuum(table, vo));
  out["vacuum"] = {{"seconds", Since(t0)},
                   {"bytes_freed", vacuum.bytes_freed},
                   {"versions_removed", vacuum.removed_versions.size()}};
  return out;
}

// Serial searches on the table's last version: QPS, and recall@10 against exact search.
Status SearchTable(const Config& c, const std::string& dir, nlohmann::json* out) {
  const uint64_t rows = (*out)["rows"].get<uint64_t>() + (*out)["build_index"]["appended_rows"].get<uint64_t>();
  VIGIL_ASSIGN_OR_RETURN(auto gen, Generator(rows, c.dim));
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(dir + "/t.vgl"));
  VIGIL_ASSIGN_OR_RETURN(auto snapshot, query::TableSnapshot::Open(ds));
  std::map<uint32_t, uint64_t> first_row;  // fragment -> generator row of its offset 0
  uint64_t base = 0;
  for (const auto& f : ds->manifest().fragments) {
    first_row[f.id] = base;
    base += f.num_rows;
  }
  std::vector<float> queries(c.queries * c.dim);
  for (uint64_t q = 0; q < c.queries; ++q) gen->Embedding(2 * rows + q, &queries[q * c.dim]);
  query::VectorQueryOptions qo;
  qo.k = kK;
  qo.nprobes = c.nprobes;
  std::vector<std::vector<uint64_t>> got(c.recall_queries);
  auto t0 = Clock::now();
  for (uint64_t q = 0; q < c.queries; ++q) {
    std::vector<float> v(&queries[q * c.dim], &queries[(q + 1) * c.dim]);
    VIGIL_ASSIGN_OR_RETURN(auto hits, query::VectorSearch(*snapshot, "vector", v, qo));
    if (q >= c.recall_queries) continue;
    for (const auto& h : hits) got[q].push_back(first_row[RowFragment(h.row)] + RowOffset(h.row));
  }
  const double qps = static_cast<double>(c.queries) / Since(t0);
  faiss::IndexFlatL2 flat(c.dim);
  std::vector<float> chunk;
  for (uint64_t r = 0; r < rows; r += 65536) {
    const uint64_t n = std::min<uint64_t>(65536, rows - r);
    chunk.resize(n * c.dim);
    for (uint64_t i = 0; i < n; ++i) gen->Embedding(r + i, &chunk[i * c.dim]);
    flat.add(static_cast<faiss::Index::idx_t>(n), chunk.data());
  }
  std::vector<float> distances(c.recall_queries * kK);
  std::vector<faiss::Index::idx_t> exact(c.recall_queries * kK);
  flat.search(static_cast<faiss::Index::idx_t>(c.recall_queries), queries.data(), kK, distances.data(), exact.data());
  size_t hits = 0;
  for (uint64_t q = 0; q < c.recall_queries; ++q) {
    for (uint64_t row : got[q]) {
      hits += std::count(exact.begin() + q * kK, exact.begin() + (q + 1) * kK, static_cast<faiss::Index::idx_t>(row));
    }
  }
  (*out)["search"] = {{"qps", qps},
                      {"recall_at_10", static_cast<double>(hits) / static_cast<double>(c.recall_queries * kK)},
                      {"nprobes", c.nprobes}};
  return Status::OK();
}

void PrintTable(const nlohmann::json& sizes) {
  std::fprintf(stderr, "\n%10s %12s %9s %10s %10s %9s %8s %8s %10s %9s %9s\n", "rows", "import r/s", "import MB",
               "partitions", "create s", "create MB", "QPS", "recall", "build 1% s", "build MB", "vacuum s");
  for (const auto& s : sizes) {
    std::fprintf(stderr, "%10llu %12.0f %9.0f %10u %10.1f %9.0f %8.0f %8.3f %10.2f %9.0f %9.3f\n",
                 static_cast<unsigned long long>(s["rows"].get<uint64_t>()), s["import"]["rows_per_s"].get<double>(),
                 s["import"]["peak_rss_mib"].get<double>(), s["partitions"].get<uint32_t>(),
                 s["create_index"]["seconds"].get<double>(), s["create_index"]["peak_rss_mib"].get<double>(),
                 s["search"]["qps"].get<double>(), s["search"]["recall_at_10"].get<double>(),
                 s["build_index"]["seconds"].get<double>(), s["build_index"]["peak_rss_mib"].get<double>(),
                 s["vacuum"]["seconds"].get<double>());
  }
}

Result<nlohmann::json> RunScaleBench(const BenchArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(Config c, ParseConfig(args));
  nlohmann::json sizes = nlohmann::json::array();
  for (uint64_t rows : c.sizes) {  // every fork before this process runs FAISS
    const std::string dir = args.work_dir + "/scale_" + std::to_string(rows);
    VIGIL_RETURN_IF_ERROR(DefaultFileSystem()->CreateDir(dir));
    std::fprintf(stderr, "scale bench: %llu rows: import, CREATE INDEX, BUILD INDEX, VACUUM\n",
                 static_cast<unsigned long long>(rows));
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json s, BuildTable(c, rows, dir));
    sizes.push_back(std::move(s));
  }
  for (size_t i = 0; i < c.sizes.size(); ++i) {
    std::fprintf(stderr, "scale bench: %llu rows: search\n", static_cast<unsigned long long>(c.sizes[i]));
    VIGIL_RETURN_IF_ERROR(SearchTable(c, args.work_dir + "/scale_" + std::to_string(c.sizes[i]), &sizes[i]));
  }
  PrintTable(sizes);
  return nlohmann::json{{"benchmark", "scale"},
                        {"config",
                         {{"dim", c.dim},
                          {"nprobes", c.nprobes},
                          {"queries", c.queries},
                          {"recall_queries", c.recall_queries},
                          {"sub_vectors", kSubVectors}}},
                        {"sizes", sizes},
                        {"parent_peak_rss_mib", static_cast<double>(PeakRssBytes()) / kMiB}};
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "scale",
                      .description = "import, IVF_PQ build, search, BUILD INDEX and VACUUM at growing row counts",
                      .fn = RunScaleBench,
                      .int_options = {"dim", "nprobes", "partitions", "queries", "recall_queries"},
                      .text_options = {"sizes"}});

}  // namespace vigil::bench::scale_bench

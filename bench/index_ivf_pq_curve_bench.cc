// `vigil bench index-ivfpq-curve`: recall@10 against queries per second over
// nprobes x refine_factor, for Vigil's IVF_PQ with 8-bit codes and with 4-bit
// codes (fast scan), against raw FAISS IndexIVFPQ with 8-bit codes (alone and
// under IndexRefineFlat, FAISS's exact re-rank) on the same vectors.
//
// The same N x dim embedding-like vectors (datagen) go to two Vigil datasets,
// one per code width, each indexed in process (TrainIvfPq + BuildIvfPqSegment)
// and searched through the C++ query API (query::VectorSearch on a snapshot).
// Raw FAISS trains with its defaults on every vector. Every point searches the
// same queries serially; recall is against exact search (faiss::IndexFlatL2).
// For each target recall (0.90, 0.95) the best QPS reaching it per index is
// reported, with Vigil's best over FAISS's best. With sql, the winning Vigil
// configuration of each target runs through SQL too, on a root whose index was made
// by CREATE INDEX (the job, the worker): the SelectEngine a session runs (the
// target's figure) and the shell timed as a whole process, against raw FAISS's best
// in process.
//
// Options: rows (200000), dim (128), latent_dim (16), noise (0.05), partitions
// (256), sub_vectors (16: Vigil 8-bit and FAISS), sub_vectors_4bit (32), nprobes
// (list, "4,6,8,12,16,24,32,64"), refine (list, "0,2,3,4,6,8"; 0 = no re-rank),
// queries (2000: the shell's process start is spread over them), sql (1).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexRefine.h>

#include "bench/bench.h"
#include "bench/vector_search_bench.h"
#include "src/index/ivf_pq_internal.h"
#include "vigil/auth/principal.h"
#include "vigil/common/file_system.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/query/query.h"
#include "vigil/sql/parser.h"
#include "vigil/sql/select_engine.h"
#include "vigil/storage/root.h"

namespace vigil::bench::index_ivf_pq_curve_bench {
namespace {

constexpr uint32_t kK = 10;
constexpr double kTargets[] = {0.90, 0.95};
constexpr double kApiRatioTarget = 2.0;  // Vigil's best QPS over FAISS 8-bit's best at a recall
constexpr double kSqlRatioTarget = 1.2;

std::vector<uint32_t> ParseList(const std::string& text) {
  std::vector<uint32_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(static_cast<uint32_t>(std::stoul(item)));
  return out;
}

struct Config {
  uint64_t rows, queries;
  uint32_t dim, partitions, sub_vectors, sub_vectors_4bit;
  DatagenOptions data;  // the generated vectors' shape
  std::vector<uint32_t> nprobes, refine;
  bool sql;
};

Config ParseConfig(const BenchArgs& args) {
  Config c;
  c.data = VectorDataOptions(args, 200000);
  c.rows = c.data.rows;
  c.dim = c.data.dim;
  c.partitions = static_cast<uint32_t>(args.Int("partitions", 256));
  c.sub_vectors = static_cast<uint32_t>(args.Int("sub_vectors", 16));
  c.sub_vectors_4bit = static_cast<uint32_t>(args.Int("sub_vectors_4bit", 32));
  c.nprobes = ParseList(args.Str("nprobes", "4,6,8,12,16,24,32,64"));
  c.refine = ParseList(args.Str("refine", "0,2,3,4,6,8"));
  c.queries = static_cast<uint64_t>(args.Int("queries", 2000));
  c.sql = args.Int("sql", 1) != 0;
  return c;
}

TransactionProperties Props(std::string op) {
  TransactionProperties p;
  p.operation = std::move(op);
  return p;
}

index::IvfPqParams VigilParams(const Config& c, uint32_t bits) {
  index::IvfPqParams p;
  p.metric = index::Metric::kL2;
  p.num_partitions = c.partitions;
  p.num_sub_vectors = bits == 4 ? c.sub_vectors_4bit : c.sub_vectors;
  p.num_bits = bits;
  return p;
}

// A dataset of the generator's rows with one IVF_PQ index of `bits`-bit codes, opened for queries.
Result<std::shared_ptr<const query::TableSnapshot>> IndexedSnapshot(const DataGenerator& gen, const Config& c,
                                                                    const std::string& path, uint32_t bits,
                                                                    double* build_seconds) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(path, gen.schema(), Props("CREATE_TABLE")));
  auto reader = gen.NewReader();
  VIGIL_ASSIGN_OR_RETURN(ds, ds->Append(reader.get(), Props("APPEND")));
  const Field& field = ds->schema()->field(*ds->schema()->IndexOf("emb"));
  std::vector<uint32_t> frags;
  for (const auto& f : ds->manifest().fragments) frags.push_back(f.id);
  auto t0 = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto model, index::TrainIvfPq(*ds, field, frags, VigilParams(c, bits), nullptr));
  IndexSegmentMeta meta;
  meta.name = "bench_idx";
  meta.uuid = Uuid::Generate();
  meta.field_ids = {field.id};
  meta.index_type = "IVF_PQ";
  meta.built_at_version = ds->version();
  meta.covered_fragments = frags;
  VIGIL_ASSIGN_OR_RETURN(auto writer, index::SegmentWriter::Create(ds->fs(), ds->path(), meta.uuid));
  VIGIL_RETURN_IF_ERROR(index::BuildIvfPqSegment(*ds, field, frags, model, writer.get(), nullptr));
  VIGIL_ASSIGN_OR_RETURN(meta.files, writer->Finish());
  *build_seconds = Since(t0);
  Transaction txn;
  txn.props = Props("CREATE_INDEX");
  txn.added_segments.push_back(meta);
  VIGIL_ASSIGN_OR_RETURN(auto indexed, ds->Commit(std::move(txn)));
  return query::TableSnapshot::Open(indexed);
}

struct Point {
  std::string index;
  uint32_t nprobes = 0, refine = 0;
  double qps = 0, recall = 0;
};

nlohmann::json PointJson(const Point& p) {
  return {{"index", p.index},
          {"nprobes", p.nprobes},
          {"refine_factor", p.refine},
          {"qps", p.qps},
          {"recall_at_10", p.recall}};
}

// Serial QPS of search(q, ids) over every query and the recall of the ids it fills,
// after an untimed pass over the first queries (caches warm as in a running server).
template <typename Fn>
Point Measure(const Config& c, const std::vector<faiss::Index::idx_t>& exact, Fn search) {
  std::vector<std::vector<int64_t>> ids(c.queries);
  for (uint64_t q = 0; q < std::min<uint64_t>(c.queries, 50); ++q) search(q, &ids[q]);
  for (auto& v : ids) v.clear();
  auto t0 = Clock::now();
  for (uint64_t q = 0; q < c.queries; ++q) search(q, &ids[q]);
  Point p;
  p.qps = static_cast<double>(c.queries) / Since(t0);
  p.recall = RecallAtK(ids, exact, kK);
  return p;
}

// The fastest point of `index` reaching `recall`, if any.
const Point* Best(const std::vector<Point>& points, const std::string& index, double recall) {
  const Point* best = nullptr;
  for (const Point& p : points) {
    if (p.index == index && p.recall >= recall && (best == nullptr || p.qps > best->qps)) best = &p;
  }
  return best;
}

std::string SearchOptions(const Point& p) {
  std::string o = "{\"nprobes\": " + std::to_string(p.nprobes);
  if (p.refine > 0) o += ", \"refine_factor\": " + std::to_string(p.refine);
  return o + "}";
}

// A root whose bench.vectors has the index of `p` made by CREATE INDEX (the job, the worker).
Result<std::string> SqlRoot(const DataGenerator& gen, const Config& c, const std::string& work_dir, const Point& p) {
  const uint32_t bits = p.index == "vigil_4bit" ? 4 : 8;
  const std::string root = work_dir + "/sql_root_" + std::to_string(bits);
  if (std::filesystem::exists(root)) return root;
  VIGIL_RETURN_IF_ERROR(MakeVectorRoot(gen, root));
  index::IvfPqParams params = VigilParams(c, bits);
  const std::string create =
      "CREATE INDEX bench_idx ON bench.vectors (emb) USING ANN PROPERTIES (\"index_type\" = \"IVF_PQ\", "
      "\"metric\" = \"l2\", \"num_partitions\" = \"" +
      std::to_string(params.num_partitions) + "\", \"num_sub_vectors\" = \"" + std::to_string(params.num_sub_vectors) +
      "\", \"num_bits\" = \"" + std::to_string(bits) + "\")";
  VIGIL_RETURN_IF_ERROR(RunProgram({VigilProgram(), "--root", root, "sql", "-c", create}).status());
  VIGIL_RETURN_IF_ERROR(RunProgram({VigilProgram(), "--root", root, "supervise", "--stop"}).status());
  return root;
}

// `p` through SQL on the root made by SqlRoot: the SelectEngine a session runs (one parsed
// SELECT, the vector bound as a FLOAT32 blob, serial, after a warm-up), and the shell as
// one process (`vigil sql --csv -f` with PREPARE / EXECUTE; its start and its first reads
// of the vector column, which refinement needs, are counted in).
Result<nlohmann::json> SqlPoint(const DataGenerator& gen, const Config& c, const std::string& work_dir, const Point& p,
                                const std::vector<float>& queries, const std::vector<faiss::Index::idx_t>& exact) {
  VIGIL_ASSIGN_OR_RETURN(std::string root_dir, SqlRoot(gen, c, work_dir, p));
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(root_dir));
  VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
  VIGIL_ASSIGN_OR_RETURN(auto engine, sql::SelectEngine::Open(root, store.get()));
  VIGIL_ASSIGN_OR_RETURN(sql::Statement parsed,
                         sql::ParseStatement("SELECT id, _distance FROM vector_search('bench.vectors', 'emb', ?, " +
                                             std::to_string(kK) + ", '" + SearchOptions(p) + "')"));
  const auto& select = std::get<sql::SelectStatement>(parsed.node);
  const auth::Principal admin = auth::Principal::LocalAdmin();
  Status failed;
  Point engine_point = Measure(c, exact, [&](uint64_t q, std::vector<int64_t>* ids) {
    const float* v = &queries[q * c.dim];
    std::vector<sql::Value> params{sql::Blob{std::string(reinterpret_cast<const char*>(v), c.dim * sizeof(float))}};
    auto rs = engine->Select(select, admin, params);
    if (!rs.ok()) {
      failed = rs.status();
      return;
    }
    for (const auto& row : rs->rows) ids->push_back(std::get<int64_t>(row[0]));
  });
  VIGIL_RETURN_IF_ERROR(failed);
  const std::string script =
      work_dir + "/curve_" + p.index + "_" + std::to_string(p.nprobes) + "_" + std::to_string(p.refine) + ".sql";
  if (std::filesystem::exists(script)) std::filesystem::remove(script);
  VIGIL_RETURN_IF_ERROR(
      WriteFileDurably(DefaultFileSystem(), script,
                       VectorSearchScript(queries, c.dim, c.queries, kK, SearchOptions(p), ShellVectors::kPrepared)));
  VIGIL_ASSIGN_OR_RETURN(ShellSearch shell, TimeShellSearch(root_dir, script, c.queries));
  return nlohmann::json{{"index", p.index},
                        {"nprobes", p.nprobes},
                        {"refine_factor", p.refine},
                        {"select_engine_qps", engine_point.qps},
                        {"select_engine_recall_at_10", engine_point.recall},
                        {"shell_process_qps", shell.qps},
                        {"shell_recall_at_10", RecallAtK(shell.ids, exact, kK)}};
}

Result<nlohmann::json> RunCurveBench(const BenchArgs& args) {
  Config c = ParseConfig(args);
  if (c.rows < c.partitions * 39 || c.queries == 0 || c.nprobes.empty() || c.refine.empty()) {
    return Status::InvalidArgument("need rows >= 39 x partitions, queries > 0 and non-empty nprobes and refine lists");
  }
  VIGIL_ASSIGN_OR_RETURN(auto gen, DataGenerator::Make(c.data));
  index::ConfigureFaissThreads(c.rows);
  std::map<std::string, double> build_s;
  std::map<std::string, std::shared_ptr<const query::TableSnapshot>> vigil;
  for (uint32_t bits : {8u, 4u}) {
    const std::string name = bits == 4 ? "vigil_4bit" : "vigil_8bit";
    VIGIL_ASSIGN_OR_RETURN(vigil[name],
                           IndexedSnapshot(*gen, c, args.work_dir + "/" + name + ".vgl", bits, &build_s[name]));
  }
  faiss::IndexFlatL2 flat(c.dim);
  flat.codes.resize(c.rows * c.dim * sizeof(float));
  for (uint64_t r = 0; r < c.rows; ++r) gen->Embedding(r, flat.get_xb() + r * c.dim);
  flat.ntotal = static_cast<faiss::Index::idx_t>(c.rows);
  faiss::IndexFlatL2 quantizer(c.dim);
  faiss::IndexIVFPQ raw(&quantizer, c.dim, c.partitions, c.sub_vectors, 8);
  auto t0 = Clock::now();
  raw.train(flat.ntotal, flat.get_xb());
  raw.add(flat.ntotal, flat.get_xb());
  build_s["faiss_8bit"] = Since(t0);

  std::vector<float> queries(c.queries * c.dim);
  for (uint64_t q = 0; q < c.queries; ++q) gen->Embedding(c.rows + 1000 + q, &queries[q * c.dim]);
  std::vector<float> exact_d(c.queries * kK);
  std::vector<faiss::Index::idx_t> exact(c.queries * kK);
  flat.search(static_cast<faiss::Index::idx_t>(c.queries), queries.data(), kK, exact_d.data(), exact.data());
  // Both datasets hold the rows in one order: a row's id is its position.
  auto row_number = [](const query::TableSnapshot& snap) {
    std::map<uint32_t, uint64_t> first;
    uint64_t base = 0;
    for (const auto& f : snap.manifest().fragments) {
      first[f.id] = base;
      base += f.num_rows;
    }
    return first;
  };

  std::vector<Point> points;
  for (uint32_t nprobes : c.nprobes) {
    for (uint32_t refine : c.refine) {
      for (auto& [name, snap] : vigil) {
        const auto first = row_number(*snap);
        query::VectorQueryOptions o;
        o.k = kK;
        o.nprobes = nprobes;
        o.refine_factor = refine;
        Status failed;
        Point p = Measure(c, exact, [&](uint64_t q, std::vector<int64_t>* ids) {
          auto got = query::VectorSearch(*snap, "emb", {&queries[q * c.dim], &queries[(q + 1) * c.dim]}, o);
          if (!got.ok()) {
            failed = got.status();
            return;
          }
          for (const auto& h : *got)
            ids->push_back(static_cast<int64_t>(first.at(RowFragment(h.row)) + RowOffset(h.row)));
        });
        VIGIL_RETURN_IF_ERROR(failed);
        p.index = name;
        p.nprobes = nprobes;
        p.refine = refine;
        points.push_back(p);
      }
      raw.nprobe = nprobes;
      faiss::IndexRefineFlat refined(&raw, flat.get_xb());
      refined.k_factor = static_cast<float>(refine);
      faiss::Index* search = refine == 0 ? static_cast<faiss::Index*>(&raw) : &refined;
      Point p = Measure(c, exact, [&](uint64_t q, std::vector<int64_t>* ids) {
        float d[kK];
        faiss::Index::idx_t l[kK];
        search->search(1, &queries[q * c.dim], kK, d, l);
        ids->assign(l, l + kK);
      });
      p.index = "faiss_8bit";
      p.nprobes = nprobes;
      p.refine = refine;
      points.push_back(p);
    }
  }

  nlohmann::json curve = nlohmann::json::array(), at_recall = nlohmann::json::array();
  for (const Point& p : points) curve.push_back(PointJson(p));
  bool met = true;
  for (double target : kTargets) {
    const Point* raw_best = Best(points, "faiss_8bit", target);
    const Point* best = nullptr;
    nlohmann::json row = {{"recall_at_least", target}};
    for (const char* name : {"vigil_8bit", "vigil_4bit"}) {
      const Point* b = Best(points, name, target);
      row[name] = b != nullptr ? PointJson(*b) : nlohmann::json();
      if (b != nullptr && (best == nullptr || b->qps > best->qps)) best = b;
    }
    row["faiss_8bit"] = raw_best != nullptr ? PointJson(*raw_best) : nlohmann::json();
    if (best == nullptr || raw_best == nullptr) {
      row["note"] = "not reached on this grid";
      met = false;
      at_recall.push_back(row);
      continue;
    }
    const double api_ratio = best->qps / raw_best->qps;
    row["vigil_best_over_faiss_best"] = api_ratio;
    met = met && api_ratio >= kApiRatioTarget;
    if (c.sql) {
      VIGIL_ASSIGN_OR_RETURN(nlohmann::json sql, SqlPoint(*gen, c, args.work_dir, *best, queries, exact));
      const double sql_ratio = sql["select_engine_qps"].get<double>() / raw_best->qps;
      sql["select_engine_over_faiss_best"] = sql_ratio;
      sql["shell_process_over_faiss_best"] = sql["shell_process_qps"].get<double>() / raw_best->qps;
      row["vigil_best_through_sql"] = sql;
      met = met && sql_ratio >= kSqlRatioTarget && sql["select_engine_recall_at_10"].get<double>() >= target;
    }
    at_recall.push_back(row);
  }
  return nlohmann::json{{"rows", c.rows},
                        {"dim", c.dim},
                        {"partitions", c.partitions},
                        {"sub_vectors", c.sub_vectors},
                        {"sub_vectors_4bit", c.sub_vectors_4bit},
                        {"queries", c.queries},
                        {"build_seconds", build_s},
                        {"curve", curve},
                        {"best_at_recall", at_recall},
                        {"targets", {{"api_qps_ratio_min", kApiRatioTarget}, {"sql_qps_ratio_min", kSqlRatioTarget}}},
                        {"targets_met", met}};
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "index-ivfpq-curve",
     .description = "IVF_PQ recall vs QPS over nprobes x refine_factor: Vigil 8-bit and 4-bit vs raw FAISS 8-bit",
     .fn = RunCurveBench,
     .int_options = {"dim", "latent_dim", "partitions", "queries", "rows", "sql", "sub_vectors", "sub_vectors_4bit"},
     .text_options = {"noise", "nprobes", "refine"}});

}  // namespace vigil::bench::index_ivf_pq_curve_bench

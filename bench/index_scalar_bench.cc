// `vigil bench index-scalar`: BTREE point and 0.1%-range lookups on a BIGINT
// column, and BITMAP equality on a STRING column with `categories` values,
// each against a full scan of the column with the same predicate (the scan
// path of uncovered fragments: PredicateMatches per row) measured in the same
// run. Targets: a BTREE lookup at least 50x faster than the scan.
//
// Options: rows (10000000) BTREE rows; bitmap_rows (1000000); categories (100);
// lookups (1000) per lookup kind; scans (3) per scan measurement.
#include <chrono>
#include <random>

#include "bench/bench.h"
#include "vigil/index/scalar.h"

namespace vigil::bench::index_scalar_bench {
namespace {

using index::ScalarPredicate;
using Op = ScalarPredicate::Op;

constexpr double kRatioTarget = 50;
constexpr uint64_t kPrime = 2654435761;  // coprime with the row counts used: values are a permutation

// A one-column table of `rows` values value(i), written in 1M-row fragments.
Result<std::shared_ptr<Dataset>> MakeTable(const std::string& path, const DataType& type, uint64_t rows,
                                           const std::function<Value(uint64_t)>& value) {
  VIGIL_ASSIGN_OR_RETURN(SchemaPtr schema, Schema::Make({{-1, "v", type, false}}));
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(path, schema, {.operation = "CREATE_TABLE"}));
  std::vector<RecordBatch> batches;
  for (uint64_t first = 0; first < rows; first += 65536) {
    RecordBatch b = RecordBatch::Empty(schema);
    for (uint64_t i = first; i < std::min(rows, first + 65536); ++i)
      VIGIL_RETURN_IF_ERROR(b.columns[0].Append(value(i)));
    b.num_rows = b.columns[0].size();
    batches.push_back(std::move(b));
  }
  auto reader = MakeBatchReader(schema, std::move(batches));
  return ds->Append(reader.get(), {.operation = "APPEND"});
}

struct Built {
  std::shared_ptr<index::ScalarSegment> segment;
  double build_s = 0;
  uint64_t file_bytes = 0;
};

Result<Built> BuildIndex(const Dataset& ds, bool btree) {
  const Field& field = ds.schema()->field(0);
  IndexSegmentMeta meta;
  meta.name = btree ? "bench_btree" : "bench_bitmap";
  meta.uuid = Uuid::Generate();
  meta.field_ids = {field.id};
  meta.index_type = btree ? "BTREE" : "BITMAP";
  for (const auto& f : ds.manifest().fragments) meta.covered_fragments.push_back(f.id);
  Built out;
  auto start = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto writer, index::SegmentWriter::Create(ds.fs(), ds.path(), meta.uuid));
  VIGIL_RETURN_IF_ERROR(btree ? index::BuildBtreeSegment(ds, field, meta.covered_fragments, writer.get(), nullptr)
                              : index::BuildBitmapSegment(ds, field, meta.covered_fragments, writer.get(), nullptr));
  VIGIL_ASSIGN_OR_RETURN(meta.files, writer->Finish());
  out.build_s = Since(start);
  out.file_bytes = meta.files.at(0).size;
  VIGIL_ASSIGN_OR_RETURN(auto files, index::SegmentFiles::Open(ds.fs(), ds.path(), meta));
  VIGIL_ASSIGN_OR_RETURN(out.segment,
                         btree ? index::OpenBtreeSegment(files, field) : index::OpenBitmapSegment(files, field));
  return out;
}

// Seconds for a full scan of the column evaluating `p` per row; `*matches` is the result size.
Result<double> ScanSeconds(const Dataset& ds, const ScalarPredicate& p, uint64_t* matches) {
  const DataType& type = ds.schema()->field(0).type;
  auto start = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto scan, ds.Scan({.columns = {"v"}}));
  Roaring64Map out;
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, scan->Next());
    if (!batch) break;
    for (size_t r = 0; r < batch->num_rows; ++r) {
      if (index::PredicateMatches(p, batch->columns[0].ValueAt(r), type)) out.add(batch->row_addresses[r]);
    }
  }
  *matches = out.cardinality();
  return Since(start);
}

// Mean seconds per Evaluate over `preds`, checking each against `expect` (its result size).
Result<double> LookupSeconds(const index::ScalarSegment& seg, const std::vector<ScalarPredicate>& preds,
                             uint64_t expect) {
  auto start = Clock::now();
  for (const auto& p : preds) {
    VIGIL_ASSIGN_OR_RETURN(Roaring64Map rows, seg.Evaluate(p));
    if (rows.cardinality() != expect) return Status::Internal("lookup returned a wrong number of rows");
  }
  return Since(start) / static_cast<double>(preds.size());
}

// Mean seconds of `scans` scans with `p`, checking each result size.
Result<double> MeanScan(const Dataset& ds, const ScalarPredicate& p, int64_t scans, uint64_t expect) {
  double total = 0;
  for (int64_t i = 0; i < scans; ++i) {
    uint64_t matches = 0;
    VIGIL_ASSIGN_OR_RETURN(double s, ScanSeconds(ds, p, &matches));
    if (matches != expect) return Status::Internal("scan returned a wrong number of rows");
    total += s;
  }
  return total / static_cast<double>(scans);
}

Result<nlohmann::json> BenchBtree(const BenchArgs& args) {
  const uint64_t rows = static_cast<uint64_t>(args.Int("rows", 10'000'000));
  const int64_t lookups = args.Int("lookups", 1000), scans = args.Int("scans", 3);
  auto value = [rows](uint64_t i) { return Value(static_cast<int64_t>((i * kPrime) % rows)); };
  auto start = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto ds, MakeTable(args.work_dir + "/btree.vgl", DataType::Of(TypeId::kInt64), rows, value));
  const double load_s = Since(start);
  const int64_t rss_before = PeakRssBytes();
  VIGIL_ASSIGN_OR_RETURN(Built built, BuildIndex(*ds, true));
  const uint64_t width = std::max<uint64_t>(1, rows / 1000);
  std::mt19937_64 rng(1);
  std::vector<ScalarPredicate> points, ranges;
  for (int64_t i = 0; i < lookups; ++i) {
    points.push_back({Op::kEq, {static_cast<int64_t>(rng() % rows)}});
    const int64_t lo = static_cast<int64_t>(rng() % (rows - width + 1));
    ranges.push_back({Op::kBetween, {lo, lo + static_cast<int64_t>(width) - 1}});
  }
  VIGIL_ASSIGN_OR_RETURN(double point_s, LookupSeconds(*built.segment, points, 1));
  VIGIL_ASSIGN_OR_RETURN(double range_s, LookupSeconds(*built.segment, ranges, width));
  VIGIL_ASSIGN_OR_RETURN(double scan_point_s, MeanScan(*ds, points[0], scans, 1));
  VIGIL_ASSIGN_OR_RETURN(double scan_range_s, MeanScan(*ds, ranges[0], scans, width));
  return nlohmann::json{
      {"rows", rows},
      {"load_s", load_s},
      {"build_s", built.build_s},
      {"build_peak_rss_mb", PeakRssBytes() / 1048576.0},
      {"peak_rss_before_build_mb", rss_before / 1048576.0},
      {"file_mb", built.file_bytes / 1048576.0},
      {"memory_bytes_after_lookups", built.segment->MemoryBytes()},
      {"point_lookup_us", point_s * 1e6},
      {"range_lookup_us", range_s * 1e6},
      {"range_rows", width},
      {"scan_point_ms", scan_point_s * 1e3},
      {"scan_range_ms", scan_range_s * 1e3},
      {"point_vs_scan", scan_point_s / point_s},
      {"range_vs_scan", scan_range_s / range_s},
      {"target_ratio", kRatioTarget},
      {"meets_target", scan_point_s / point_s >= kRatioTarget && scan_range_s / range_s >= kRatioTarget},
  };
}

Result<nlohmann::json> BenchBitmap(const BenchArgs& args) {
  const uint64_t rows = static_cast<uint64_t>(args.Int("bitmap_rows", 1'000'000));
  const uint64_t cats = static_cast<uint64_t>(std::max<int64_t>(1, args.Int("categories", 100)));
  const int64_t lookups = args.Int("lookups", 1000), scans = args.Int("scans", 3);
  auto category = [cats](uint64_t i) { return "cat_" + std::to_string((i * kPrime) % cats); };
  VIGIL_ASSIGN_OR_RETURN(auto ds, MakeTable(args.work_dir + "/bitmap.vgl", DataType::Of(TypeId::kString), rows,
                                            [&](uint64_t i) { return Value(category(i)); }));
  VIGIL_ASSIGN_OR_RETURN(Built built, BuildIndex(*ds, false));
  std::mt19937_64 rng(2);
  std::vector<ScalarPredicate> preds;
  for (int64_t i = 0; i < lookups; ++i) preds.push_back({Op::kEq, {category(rng() % cats)}});
  uint64_t expect = 0;
  VIGIL_RETURN_IF_ERROR(ScanSeconds(*ds, preds[0], &expect).status());
  std::vector<ScalarPredicate> same(preds.size(), preds[0]);
  VIGIL_ASSIGN_OR_RETURN(double eq_s, LookupSeconds(*built.segment, same, expect));
  VIGIL_ASSIGN_OR_RETURN(double scan_s, MeanScan(*ds, preds[0], scans, expect));
  auto start = Clock::now();
  for (const auto& p : preds) VIGIL_RETURN_IF_ERROR(built.segment->Evaluate(p).status());
  const double mixed_s = Since(start) / static_cast<double>(preds.size());
  return nlohmann::json{
      {"rows", rows},
      {"categories", cats},
      {"build_s", built.build_s},
      {"file_mb", built.file_bytes / 1048576.0},
      {"rows_per_value", expect},
      {"eq_ops_per_s", 1 / eq_s},
      {"eq_random_category_ops_per_s", 1 / mixed_s},
      {"scan_ms", scan_s * 1e3},
      {"eq_vs_scan", scan_s / eq_s},
  };
}

Result<nlohmann::json> Run(const BenchArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json btree, BenchBtree(args));
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json bitmap, BenchBitmap(args));
  return nlohmann::json{
      {"btree_bigint", btree}, {"bitmap_string", bitmap}, {"peak_rss_mb", PeakRssBytes() / 1048576.0}};
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "index-scalar",
                      .description = "BTREE point/range and BITMAP equality lookups vs a full column scan",
                      .fn = Run,
                      .int_options = {"bitmap_rows", "categories", "lookups", "rows", "scans"},
                      .text_options = {}});

}  // namespace vigil::bench::index_scalar_bench

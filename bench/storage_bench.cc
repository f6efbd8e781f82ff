// `vigil bench storage`: ingest and scan throughput of the storage layer.
//
//  1. baseline: raw sequential read(2) of a generated N x dim .fvecs file (MB/s);
//  2. import of that file into a new table (rows/s, MB/s of input), run in a
//     forked child so wait4's peak RSS is the import's own;
//  3. full scan of the vector column, twice (the first warms the page cache),
//     in decoded GB/s;
//  4. (run before 3) for reference, the import of an (id, category, ts, emb) table from
//     generated batches (generation included) and, optionally, from JSON Lines.
//
// Options: rows (1000000), dim (128), reference (batches|jsonl|both|none,
// default batches), jsonl_rows (100000). Wall-clock figures are judged against
// the targets; CPU-time figures (rows_per_cpu_s, gb_per_cpu_s) are reported too,
// since on a shared machine wall time includes waiting for a core.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "bench/bench.h"
#include "vigil/ingest/datagen.h"
#include "vigil/ingest/ingest.h"
#include "vigil/storage/dataset.h"

namespace vigil::bench::storage_bench {
namespace {

constexpr double kImportRowsPerSecTarget = 200000;
constexpr double kScanGBPerSecTarget = 1.0;
constexpr double kPeakRssMiBTarget = 256;
constexpr double kMiB = 1024.0 * 1024.0;

double LoadAverage() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

double CpuSeconds(const struct rusage& ru) {
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// What a measured child reports back through its pipe.
struct ChildReport {
  int ok = 0;
  uint64_t rows = 0;
  uint64_t version = 0;
  double seconds = 0;
  char message[512] = {};
};

struct Measured {
  ChildReport report;
  double cpu_seconds = 0;  // user + system time of the child
  int64_t peak_rss_bytes = 0;
  int64_t parent_rss_at_fork_bytes = 0;
};

// Runs `fn` in a forked child; returns its report and its peak RSS (wait4 rusage).
Result<Measured> RunInChild(const std::function<Result<ImportResult>()>& fn) {
  int fds[2];
  if (::pipe(fds) != 0) return Status::FromErrno(errno, "pipe");
  Measured m;
  m.parent_rss_at_fork_bytes = CurrentRssBytes();
  pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno(errno, "fork");
  if (pid == 0) {
    ::close(fds[0]);
    ChildReport rep;
    auto start = std::chrono::steady_clock::now();
    Result<ImportResult> r = fn();
    rep.seconds = Since(start);
    rep.ok = r.ok() ? 1 : 0;
    if (r.ok()) {
      rep.rows = r->rows;
      rep.version = r->version;
    } else {
      std::snprintf(rep.message, sizeof(rep.message), "%s", r.status().ToString().c_str());
    }
    ssize_t n = ::write(fds[1], &rep, sizeof(rep));
    ::_exit(n == static_cast<ssize_t>(sizeof(rep)) ? 0 : 1);
  }
  ::close(fds[1]);
  ssize_t n = ::read(fds[0], &m.report, sizeof(m.report));
  ::close(fds[0]);
  int wstatus = 0;
  struct rusage ru {};
  if (::wait4(pid, &wstatus, 0, &ru) < 0) return Status::FromErrno(errno, "wait4");
  if (n != static_cast<ssize_t>(sizeof(m.report)) || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::Internal("benchmark child failed (status " + std::to_string(wstatus) + ")");
  }
  if (!m.report.ok) return Status::Internal(std::string("benchmark child: ") + m.report.message);
  m.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  m.cpu_seconds = CpuSeconds(ru);
  return m;
}

nlohmann::json ImportJson(const Measured& m, uint64_t input_bytes) {
  double secs = m.report.seconds;
  nlohmann::json j = {{"rows", m.report.rows},
                      {"version", m.report.version},
                      {"seconds", secs},
                      {"rows_per_s", secs > 0 ? m.report.rows / secs : 0},
                      {"cpu_seconds", m.cpu_seconds},
                      {"rows_per_cpu_s", m.cpu_seconds > 0 ? m.report.rows / m.cpu_seconds : 0},
                      {"peak_rss_bytes", m.peak_rss_bytes},
                      {"peak_rss_mib", m.peak_rss_bytes / kMiB},
                      {"parent_rss_at_fork_mib", m.parent_rss_at_fork_bytes / kMiB}};
  if (input_bytes > 0) {
    j["input_bytes"] = input_bytes;
    j["mb_per_s"] = secs > 0 ? input_bytes / 1e6 / secs : 0;
  }
  return j;
}

// Sequential read(2) of the whole file (RawReadFile); returns MB/s.
Result<double> RawReadMBps(const std::string& path, uint64_t* bytes) {
  VIGIL_ASSIGN_OR_RETURN(RawRead raw, RawReadFile(path));
  *bytes = raw.bytes;
  return raw.seconds > 0 ? static_cast<double>(raw.bytes) / 1e6 / raw.seconds : 0;
}

struct ScanFigures {
  uint64_t rows = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  uint64_t checksum = 0;
};

// Scans `column` of the latest version, folding every decoded byte into a checksum.
Result<ScanFigures> ScanColumn(const std::string& table, const std::string& column) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(table));
  ScanOptions so;
  so.columns = {column};
  ScanFigures f;
  double cpu_start = SelfCpuSeconds();
  auto start = std::chrono::steady_clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto scan, ds->Scan(so));
  while (true) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, scan->Next());
    if (!batch) break;
    const Column& c = batch->columns[0];
    const std::string& raw = c.raw_data();
    const uint64_t* words = reinterpret_cast<const uint64_t*>(raw.data());
    uint64_t x = 0;
    for (size_t i = 0; i < raw.size() / 8; ++i) x ^= words[i];
    f.checksum ^= x;
    f.rows += batch->num_rows;
    f.bytes += raw.size();
  }
  f.seconds = Since(start);
  f.cpu_seconds = SelfCpuSeconds() - cpu_start;
  return f;
}

nlohmann::json ScanJson(const ScanFigures& f) {
  return {{"rows", f.rows},
          {"decoded_bytes", f.bytes},
          {"seconds", f.seconds},
          {"cpu_seconds", f.cpu_seconds},
          {"gb_per_cpu_s", f.cpu_seconds > 0 ? f.bytes / 1e9 / f.cpu_seconds : 0},
          {"gb_per_s", f.seconds > 0 ? f.bytes / 1e9 / f.seconds : 0}};
}

// Parses the file with the ingest reader alone (no table writes); returns rows/s.
Result<double> ReaderOnlyRowsPerSec(const std::string& file) {
  VIGIL_ASSIGN_OR_RETURN(auto reader, OpenIngestReader(file, IngestOptions()));
  uint64_t rows = 0;
  auto start = std::chrono::steady_clock::now();
  while (true) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, reader->Next());
    if (!batch) break;
    rows += batch->num_rows;
  }
  double secs = Since(start);
  return secs > 0 ? rows / secs : 0;
}

Result<std::shared_ptr<const DataGenerator>> Generator(uint64_t rows, uint32_t dim, std::vector<std::string> cols) {
  DatagenOptions o;
  o.rows = rows;
  o.dim = dim;
  o.latent_dim = std::min<uint32_t>(16, dim);
  o.columns = std::move(cols);
  return DataGenerator::Make(o);
}

// Imports the (id, category, ts, emb) table straight from generated batches.
Result<ImportResult> ImportGenerated(const std::string& table, uint64_t rows, uint32_t dim) {
  VIGIL_ASSIGN_OR_RETURN(auto gen, Generator(rows, dim, {"id", "category", "ts", "emb"}));
  TransactionProperties props;
  props.operation = "CREATE_TABLE";
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(table, gen->schema(), props));
  props.operation = "APPEND";
  auto reader = gen->NewReader();
  VIGIL_ASSIGN_OR_RETURN(auto next, ds->Append(reader.get(), props));
  ImportResult r;
  r.rows = next->CountRows();
  r.version = next->version();
  return r;
}

Result<ImportResult> ImportFileCreate(const std::string& table, const std::string& file) {
  ImportOptions o;
  o.create = true;
  return ImportFile(table, file, o);
}

Result<nlohmann::json> RunReferenceImports(const BenchArgs& args, uint64_t rows, uint32_t dim) {
  std::string which = args.Str("reference", "batches");
  nlohmann::json out = nlohmann::json::object();
  if (which == "batches" || which == "both") {
    std::string table = JoinPath(args.work_dir, "db/table_batches.vgl");
    VIGIL_ASSIGN_OR_RETURN(Measured m, RunInChild([&] { return ImportGenerated(table, rows, dim); }));
    out["import_table_batches"] = ImportJson(m, 0);
    out["import_table_batches"]["note"] = "(id, category, ts, emb) from generated batches; generation included";
  }
  if (which == "jsonl" || which == "both") {
    uint64_t jrows =
        static_cast<uint64_t>(args.Int("jsonl_rows", static_cast<int64_t>(std::min<uint64_t>(rows, 100000))));
    std::string file = JoinPath(args.work_dir, "table.jsonl");
    VIGIL_ASSIGN_OR_RETURN(auto gen, Generator(jrows, dim, {"id", "category", "ts", "emb"}));
    VIGIL_RETURN_IF_ERROR(WriteJsonl(*gen, file));
    VIGIL_ASSIGN_OR_RETURN(uint64_t bytes, DefaultFileSystem()->FileSize(file));
    std::string table = JoinPath(args.work_dir, "db/table_jsonl.vgl");
    VIGIL_ASSIGN_OR_RETURN(Measured m, RunInChild([&] { return ImportFileCreate(table, file); }));
    out["import_jsonl"] = ImportJson(m, bytes);
    (void)DefaultFileSystem()->RemoveFile(file);
  }
  return out;
}

Result<nlohmann::json> RunStorageBench(const BenchArgs& args) {
  const uint64_t rows = static_cast<uint64_t>(args.Int("rows", 1000000));
  const uint32_t dim = static_cast<uint32_t>(args.Int("dim", 128));
  if (rows == 0 || dim == 0) return Status::InvalidArgument("rows and dim must be positive");
  std::string fvecs = JoinPath(args.work_dir, "vectors.fvecs");
  std::string table = JoinPath(args.work_dir, "db/vectors.vgl");

  auto gen_start = std::chrono::steady_clock::now();
  VIGIL_ASSIGN_OR_RETURN(auto gen, Generator(rows, dim, {"emb"}));
  VIGIL_RETURN_IF_ERROR(WriteFvecs(*gen, fvecs));
  double gen_secs = Since(gen_start);

  uint64_t file_bytes = 0;
  VIGIL_ASSIGN_OR_RETURN(double raw_mbps, RawReadMBps(fvecs, &file_bytes));
  VIGIL_ASSIGN_OR_RETURN(raw_mbps, RawReadMBps(fvecs, &file_bytes));  // warm: same cache state as the import

  VIGIL_ASSIGN_OR_RETURN(double reader_rps, ReaderOnlyRowsPerSec(fvecs));
  VIGIL_ASSIGN_OR_RETURN(Measured imp, RunInChild([&] { return ImportFileCreate(table, fvecs); }));
  nlohmann::json import_json = ImportJson(imp, file_bytes);
  import_json["parse_only_rows_per_s"] = reader_rps;

  (void)DefaultFileSystem()->RemoveFile(fvecs);
  // Reference imports run before the scans so their children do not inherit the block cache.
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json reference, RunReferenceImports(args, rows, dim));

  VIGIL_ASSIGN_OR_RETURN(ScanFigures cold, ScanColumn(table, "vector"));
  VIGIL_ASSIGN_OR_RETURN(ScanFigures warm, ScanColumn(table, "vector"));
  if (warm.rows != rows || warm.checksum != cold.checksum) {
    return Status::Internal("scan returned " + std::to_string(warm.rows) + " rows or inconsistent data");
  }

  double import_rps = import_json["rows_per_s"].get<double>();
  double import_mbps = import_json["mb_per_s"].get<double>();
  double scan_gbps = warm.seconds > 0 ? warm.bytes / 1e9 / warm.seconds : 0;
  double rss_mib = imp.peak_rss_bytes / kMiB;
  nlohmann::json out = {
      {"benchmark", "storage"},
      {"config",
       {{"rows", rows},
        {"dim", dim},
        {"fvecs_bytes", file_bytes},
        {"generate_seconds", gen_secs},
        {"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
        {"load_average_1m", LoadAverage()}}},
      {"baseline", {{"raw_read_mb_per_s", raw_mbps}, {"note", "read(2) of the .fvecs file, 1 MiB requests, warm"}}},
      {"import_fvecs", import_json},
      {"scan_vector", {{"first", ScanJson(cold)}, {"warm", ScanJson(warm)}}},
      {"ratios",
       {{"import_mb_per_s_vs_raw_read", raw_mbps > 0 ? import_mbps / raw_mbps : 0},
        {"scan_decoded_vs_raw_read", raw_mbps > 0 ? scan_gbps * 1000 / raw_mbps : 0}}},
      {"targets",
       {{"import_rows_per_s", kImportRowsPerSecTarget},
        {"scan_gb_per_s", kScanGBPerSecTarget},
        {"import_peak_rss_mib", kPeakRssMiBTarget}}},
  };
  bool p1 = import_rps >= kImportRowsPerSecTarget, p2 = scan_gbps >= kScanGBPerSecTarget,
       p3 = rss_mib <= kPeakRssMiBTarget;
  out["pass"] = {{"import_rows_per_s", p1}, {"scan_gb_per_s", p2}, {"import_peak_rss", p3}, {"all", p1 && p2 && p3}};
  for (auto& [k, v] : reference.items()) out["reference"][k] = v;
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH({.name = "storage",
                      .description = "import .fvecs (rows/s, peak RSS), vector-column scan (GB/s) vs raw read",
                      .fn = RunStorageBench,
                      .int_options = {"dim", "jsonl_rows", "rows"},
                      .text_options = {"reference"}});

}  // namespace vigil::bench::storage_bench

// `vigil bench python`: the Python package (python/vigil, built in <build>/python) against
// the C++ API in the same run. The Python side runs bench/python_bench.py under Debian's
// /usr/bin/python3 in a child process.
//
//  1. add (run first, while this process is small, so that a child's wait4 peak RSS is
//     the child's own): python_bench.py generates `add_rows` x `dim` float32 rows (numpy,
//     untimed), saves them to an .npy file, creates db.t (id BIGINT NOT NULL, emb
//     VECTOR(FLOAT32, dim) NOT NULL) in a fresh root and times t.add() alone; then
//     `vigil --root R2 import db.t rows.npy --create` imports the same file into another
//     fresh root, timed around the whole command (process start included). rows/s of
//     both and the ratio; peak RSS of both (Python: VmHWM, which includes the source
//     array; the CLI: wait4).
//  2. search: a root with db.t, `rows` x `dim` generated vectors (VectorDataOptions, as the
//     other vector benchmarks) and an IVF_PQ index (index::CreateVectorIndex, as the sql and
//     server benchmarks), both made by a child process, so that the passes below run in a
//     process that opened the root fresh, as the Python one does; `queries` query vectors that
//     are not stored rows,
//     saved as .npy. Serial queries/s and latencies of
//       - the C++ API: query::VectorSearch + query::TakeRows of id, one pass per round, each
//         followed by a Python run (the figure is the median of the rounds' ratios, so that
//         the machine's changing speed hits both sides of each ratio alike);
//       - sql::Session::Select in process of the SELECT the package sends (for reference:
//         the engine's share of a Python search);
//       - the package: t.search(q).nprobes(n).limit(k).select(["id"]).to_list().
//     Every path runs each query once to warm up before it is timed. The ids of the first
//     `check` queries must be the C++ API's (ids_match). Target: python / C++ API >= 0.8
//     (queries/s); CPU per query is reported too, as a figure less sensitive to other load.
//
// Options: rows (200000), dim (128), partitions (256), sub_vectors (16), queries (2000),
// k (10), nprobes (20), add_rows (1000000), add_batch_rows (0: t.add's default), check (20),
// rounds (3),
// phases (add,search), python (/usr/bin/python3), script (<source>/bench/python_bench.py),
// pythonpath (<build>/python).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/bench.h"
#include "bench/vector_search_bench.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/query/query.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

extern char** environ;

#ifndef VIGIL_SOURCE_DIR
#define VIGIL_SOURCE_DIR ""
#endif
#ifndef VIGIL_PYTHON_DIR
#define VIGIL_PYTHON_DIR ""
#endif
#ifndef VIGIL_PYTHON_PACKAGE
#define VIGIL_PYTHON_PACKAGE 0
#endif

namespace vigil::bench::python_bench {
namespace {

constexpr double kRatioTarget = 0.8;  // Python / C++ API serial queries/s
constexpr double kMiB = 1024.0 * 1024.0;
constexpr char kTable[] = "db.t";

void Progress(const std::string& what) { std::fprintf(stderr, "python bench: %s\n", what.c_str()); }

struct Config {
  uint64_t rows, queries, add_rows, add_batch_rows, check, rounds;
  uint32_t dim, partitions, sub_vectors, k, nprobes;
  bool add, search;
  std::string python, script, pythonpath;
  bool pythonpath_given;
};

Result<Config> ParseConfig(const BenchArgs& args) {
  Config c;
  c.rows = static_cast<uint64_t>(args.Int("rows", 200000));
  c.dim = static_cast<uint32_t>(args.Int("dim", 128));
  c.partitions = static_cast<uint32_t>(args.Int("partitions", 256));
  c.sub_vectors = static_cast<uint32_t>(args.Int("sub_vectors", 16));
  c.queries = static_cast<uint64_t>(args.Int("queries", 2000));
  c.k = static_cast<uint32_t>(args.Int("k", 10));
  c.nprobes = static_cast<uint32_t>(args.Int("nprobes", 20));
  c.add_rows = static_cast<uint64_t>(args.Int("add_rows", 1000000));
  c.add_batch_rows = static_cast<uint64_t>(args.Int("add_batch_rows", 0));
  c.check = static_cast<uint64_t>(args.Int("check", 20));
  c.rounds = static_cast<uint64_t>(std::max<int64_t>(1, args.Int("rounds", 3)));
  const std::string phases = args.Str("phases", "add,search");
  c.add = phases.find("add") != std::string::npos;
  c.search = phases.find("search") != std::string::npos;
  c.python = args.Str("python", "/usr/bin/python3");
  c.script = args.Str("script", std::string(VIGIL_SOURCE_DIR) + "/bench/python_bench.py");
  c.pythonpath = args.Str("pythonpath", VIGIL_PYTHON_DIR);
  c.pythonpath_given = args.Has("pythonpath");
  if (!c.add && !c.search) return Status::InvalidArgument("phases must name add, search or both");
  if (c.rows < c.partitions || c.partitions == 0 || c.dim == 0 || c.sub_vectors == 0 || c.dim % c.sub_vectors != 0 ||
      c.queries == 0 || c.k == 0 || c.nprobes == 0 || c.add_rows == 0) {
    return Status::InvalidArgument(
        "need rows >= partitions >= 1, dim a multiple of sub_vectors, and queries, k, nprobes, add_rows >= 1");
  }
  c.check = std::min(c.check, c.queries);
  return c;
}

// InvalidArgument / FailedPrecondition naming what is missing when the package, the
// interpreter or the script cannot be used.
Status CheckPython(const Config& c) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!VIGIL_PYTHON_PACKAGE && !c.pythonpath_given) {
    return Status::FailedPrecondition(
        "this build has no Python package (VIGIL_BUILD_PYTHON is OFF): configure with -DVIGIL_BUILD_PYTHON=ON and "
        "build, or pass --opt pythonpath=DIR of a built package");
  }
  if (c.pythonpath.empty() || !fs::exists(fs::path(c.pythonpath) / "vigil" / "__init__.py", ec)) {
    return Status::FailedPrecondition("the vigil Python package is not at '" + c.pythonpath +
                                      "/vigil': build the vigil_python target, or pass --opt pythonpath=DIR");
  }
  bool extension = false;
  for (const auto& e : fs::directory_iterator(fs::path(c.pythonpath) / "vigil", ec)) {
    const std::string name = e.path().filename().string();
    extension |= name.rfind("_vigil", 0) == 0 && name.size() > 3 && name.substr(name.size() - 3) == ".so";
  }
  if (!extension) {
    return Status::FailedPrecondition("the vigil Python package at '" + c.pythonpath +
                                      "/vigil' has no compiled _vigil extension (build the vigil_python target)");
  }
  if (::access(c.python.c_str(), X_OK) != 0) {
    return Status::FailedPrecondition("no Python interpreter at '" + c.python + "' (pass --opt python=PATH)");
  }
  if (!fs::exists(c.script, ec)) {
    return Status::FailedPrecondition("no benchmark script at '" + c.script + "' (pass --opt script=PATH)");
  }
  return Status::OK();
}

// Runs python_bench.py `mode` with `flags` and --out; its JSON and the run.
Result<std::pair<nlohmann::json, ProgramRun>> RunScript(const Config& c, const std::string& mode,
                                                        const std::vector<std::string>& flags, const std::string& out) {
  std::vector<std::string> argv = {c.python, c.script, mode};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--out", out});
  // No user site-packages: the package under test comes from `pythonpath` alone.
  VIGIL_ASSIGN_OR_RETURN(ProgramRun m, RunProgram(argv, {"PYTHONPATH=" + c.pythonpath, "PYTHONNOUSERSITE=1"}));
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Internal("python_bench.py " + mode + " wrote no JSON to " + out + "; its output:\n" + m.output);
  }
  return std::make_pair(std::move(j), std::move(m));
}

// ---- add ----

Result<nlohmann::json> MeasureAdd(const BenchArgs& args, const Config& c) {
  const std::string npy = args.work_dir + "/add_rows.npy";
  const std::string py_root = args.work_dir + "/python_add_root";
  const std::string cli_root = args.work_dir + "/cli_import_root";
  Progress("add: " + std::to_string(c.add_rows) + " rows through the package (t.add)");
  const int64_t rss_at_python_fork = CurrentRssBytes();
  std::vector<std::string> flags = {
      "--root", py_root, "--table", kTable, "--rows", std::to_string(c.add_rows), "--dim", std::to_string(c.dim),
      "--npy",  npy};
  if (c.add_batch_rows > 0) flags.insert(flags.end(), {"--batch-rows", std::to_string(c.add_batch_rows)});
  VIGIL_ASSIGN_OR_RETURN(auto py, RunScript(c, "add", flags, args.work_dir + "/add.json"));
  nlohmann::json python = py.first;
  python["peak_rss_mib"] = python.value("peak_rss_bytes", int64_t{0}) / kMiB;
  python["rss_before_add_mib"] = python.value("rss_before_add_bytes", int64_t{0}) / kMiB;
  python["source_array_mib"] = python.value("source_array_bytes", int64_t{0}) / kMiB;
  python["process_seconds"] = py.second.seconds;
  python.erase("threads");
  python["parent_rss_at_fork_mib"] = rss_at_python_fork / kMiB;
  python["peak_rss_note"] = "VmHWM of the interpreter; includes the source arrays (source_array_mib)";

  Progress("add: the same rows through `vigil import` of the .npy file");
  VIGIL_RETURN_IF_ERROR(Root::Init(cli_root).status());
  const int64_t rss_at_cli_fork = CurrentRssBytes();
  const std::vector<std::string> cmd = {VigilProgram(), "--root", cli_root, "import", kTable, npy, "--create"};
  VIGIL_ASSIGN_OR_RETURN(ProgramRun cli, RunProgram(cmd, {}));
  // "created table with 1,000,000 rows into local.db.t (version 2) in 3.21s (311,000 rows/s)"
  uint64_t cli_rows = 0;
  double reported = 0;
  if (size_t with = cli.output.find(" with "); with != std::string::npos) {
    std::string digits;
    for (size_t i = with + 6; i < cli.output.size() && cli.output[i] != ' '; ++i) {
      if (std::isdigit(static_cast<unsigned char>(cli.output[i]))) digits += cli.output[i];
    }
    cli_rows = digits.empty() ? 0 : std::strtoull(digits.c_str(), nullptr, 10);
  }
  if (size_t in = cli.output.find(") in "); in != std::string::npos) reported = std::atof(cli.output.c_str() + in + 5);
  if (cli_rows != c.add_rows) {
    return Status::Internal("vigil import did not report " + std::to_string(c.add_rows) + " rows:\n" + cli.output);
  }
  (void)std::filesystem::remove(npy);
  nlohmann::json import = {
      {"command", "vigil --root R2 import db.t rows.npy --create"},
      {"rows", cli_rows},
      {"seconds", cli.seconds},
      {"rows_per_s", cli.seconds > 0 ? static_cast<double>(cli_rows) / cli.seconds : 0},
      {"command_reported_seconds", reported},
      {"command_reported_rows_per_s", reported > 0 ? static_cast<double>(cli_rows) / reported : 0},
      {"cpu_seconds", cli.cpu_seconds},
      {"peak_rss_bytes", cli.peak_rss_bytes},
      {"peak_rss_mib", cli.peak_rss_bytes / kMiB},
      {"parent_rss_at_fork_mib", rss_at_cli_fork / kMiB},
      {"note", "timed around the whole command (process start, opening the root); table (id, vector)"}};
  const double py_rps = python.value("rows_per_s", 0.0);
  const double cli_rps = import["rows_per_s"].get<double>();
  return nlohmann::json{{"rows", c.add_rows},
                        {"dim", c.dim},
                        {"python_add", python},
                        {"cli_import", import},
                        {"ratio_python_over_cli_rows_per_s", cli_rps > 0 ? py_rps / cli_rps : 0},
                        {"ratio_python_over_cli_in_command_rows_per_s",
                         reported > 0 ? py_rps / import["command_reported_rows_per_s"].get<double>() : 0}};
}

// ---- search ----

// The query vectors as a C-order '<f4' .npy file (format 1.0) of shape (n, dim).
Status WriteQueriesNpy(const std::string& path, const std::vector<float>& v, uint64_t n, uint32_t dim) {
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(n) + ", " + std::to_string(dim) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(1);
  out += static_cast<char>(0);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f.good()) return Status::IOError("cannot write " + path);
  return Status::OK();
}

struct SearchRoot {
  std::string dir;
  std::string table_path;
  std::shared_ptr<const DataGenerator> gen;
  double load_seconds = 0, index_seconds = 0;
};

std::string SearchRootDir(const BenchArgs& args) { return args.work_dir + "/search_root"; }

Result<SearchRoot> MakeSearchRoot(const BenchArgs& args, const Config& c) {
  SearchRoot s;
  s.dir = SearchRootDir(args);
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Init(s.dir));
  VIGIL_ASSIGN_OR_RETURN(s.gen, DataGenerator::Make(VectorDataOptions(args, 200000)));
  VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root));
  catalog::TableCatalog catalog(&root, &store->catalog());
  const TableName name{"local", "db", "t"};
  auto t0 = Clock::now();
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry,
                         catalog.Create(name, s.gen->schema(), {.operation = "CREATE_TABLE"}));
  VIGIL_ASSIGN_OR_RETURN(auto ds, catalog.Open(name));
  auto reader = s.gen->NewReader();
  VIGIL_RETURN_IF_ERROR(ds->Append(reader.get(), {.operation = "APPEND"}).status());
  s.load_seconds = Since(t0);
  s.table_path = entry.locator;
  Progress("search: " + std::to_string(c.rows) + " rows loaded; building the IVF_PQ index");
  index::CreateIndexRequest req;
  req.dataset_path = entry.locator;
  req.dataset = catalog.Options(entry);
  req.column = "emb";
  req.name = "emb_idx";
  req.type = index::IndexType::kIvfPq;
  req.properties = {{"index_type", "IVF_PQ"},
                    {"metric", "l2"},
                    {"num_partitions", std::to_string(c.partitions)},
                    {"num_sub_vectors", std::to_string(c.sub_vectors)}};
  t0 = Clock::now();
  VIGIL_RETURN_IF_ERROR(index::CreateVectorIndex(req).status());
  s.index_seconds = Since(t0);
  return s;
}

// MakeSearchRoot in a child process, so that this process's heap does not carry the load and
// the index build into the C++ passes (the Python process opens the built root fresh; so does
// this one). The child reports "<load seconds> <index seconds> <table path>" or its error.
Result<SearchRoot> MakeSearchRootInChild(const BenchArgs& args, const Config& c) {
  int fds[2];
  if (::pipe(fds) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) return Status::IOError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    Result<SearchRoot> made = MakeSearchRoot(args, c);
    const std::string report = made.ok() ? std::to_string(made->load_seconds) + " " +
                                               std::to_string(made->index_seconds) + " " + made->table_path
                                         : "error " + made.status().ToString();
    const bool written = ::write(fds[1], report.data(), report.size()) == static_cast<ssize_t>(report.size());
    ::_exit(made.ok() && written ? 0 : 1);
  }
  ::close(fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    report.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::Internal("building the search root in a child process failed: " + report);
  }
  SearchRoot s;
  s.dir = SearchRootDir(args);
  std::istringstream in(report);
  in >> s.load_seconds >> s.index_seconds >> std::ws;
  std::getline(in, s.table_path);
  if (in.fail() || s.table_path.empty()) return Status::Internal("the child's report is unreadable: " + report);
  VIGIL_ASSIGN_OR_RETURN(s.gen, DataGenerator::Make(VectorDataOptions(args, 200000)));
  return s;
}

// One timed serial pass over the queries: per-query latencies and ids of the first `check`.
struct Pass {
  std::vector<double> latencies_us;
  double seconds = 0;
  double cpu_seconds = 0;  // of this process, every thread (as the Python side measures its own)
  std::vector<std::vector<int64_t>> ids;

  nlohmann::json ToJson() const {
    const double n = static_cast<double>(latencies_us.size());
    return {{"qps", seconds > 0 ? n / seconds : 0},
            {"p50_us", Percentile(latencies_us, 0.5)},
            {"p99_us", Percentile(latencies_us, 0.99)},
            {"cpu_us_per_query", n > 0 ? cpu_seconds * 1e6 / n : 0}};
  }
};

// Runs `one(i, ids)` for every query once untimed, then once timed.
Result<Pass> TimePass(const Config& c, const std::function<Status(uint64_t, std::vector<int64_t>*)>& one) {
  Pass p;
  std::vector<int64_t> ids;
  for (uint64_t i = 0; i < c.queries; ++i) {
    VIGIL_RETURN_IF_ERROR(one(i, &ids));
    if (i < c.check) p.ids.push_back(ids);
  }
  const double cpu_start = SelfCpuSeconds();
  const auto start = Clock::now();
  for (uint64_t i = 0; i < c.queries; ++i) {
    const auto t0 = Clock::now();
    VIGIL_RETURN_IF_ERROR(one(i, &ids));
    p.latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  p.seconds = Since(start);
  p.cpu_seconds = SelfCpuSeconds() - cpu_start;
  return p;
}

Result<nlohmann::json> MeasureSearch(const BenchArgs& args, const Config& c) {
  VIGIL_ASSIGN_OR_RETURN(SearchRoot s, MakeSearchRootInChild(args, c));
  std::vector<float> queries(c.queries * c.dim);
  for (uint64_t q = 0; q < c.queries; ++q) s.gen->Embedding(c.rows + 1000 + q, &queries[q * c.dim]);
  const std::string npy = args.work_dir + "/queries.npy";
  VIGIL_RETURN_IF_ERROR(WriteQueriesNpy(npy, queries, c.queries, c.dim));

  // The C++ API: VectorSearch + TakeRows(id), as the sql benchmark's raw path.
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(s.table_path));
  VIGIL_ASSIGN_OR_RETURN(auto snapshot, query::TableSnapshot::Open(ds));
  query::VectorQueryOptions opts;
  opts.k = c.k;
  opts.nprobes = c.nprobes;
  std::vector<float> q(c.dim);
  auto api = [&](uint64_t i, std::vector<int64_t>* ids) -> Status {
    std::copy_n(&queries[i * c.dim], c.dim, q.begin());
    VIGIL_ASSIGN_OR_RETURN(auto hits, query::VectorSearch(*snapshot, "emb", q, opts));
    std::vector<RowAddress> rows;
    rows.reserve(hits.size());
    for (const auto& h : hits) rows.push_back(h.row);
    VIGIL_ASSIGN_OR_RETURN(RecordBatch batch, query::TakeRows(*snapshot, rows, {"id"}));
    ids->clear();
    for (size_t r = 0; r < batch.num_rows; ++r) ids->push_back(std::get<int64_t>(batch.columns[0].ValueAt(r)));
    return Status::OK();
  };
  // The SELECT the package sends, through an in-process session opened as the package opens one.
  const std::string select = "SELECT id, _distance FROM vector_search('" + std::string(kTable) + "', 'emb', ?, " +
                             std::to_string(c.k) + ", '{\"nprobes\": " + std::to_string(c.nprobes) + "}')";
  sql::SessionOptions so;
  so.file_access = sql::FileAccess::kClient;
  VIGIL_ASSIGN_OR_RETURN(auto session, sql::Session::Open(s.dir, so));
  auto via_session = [&](uint64_t i, std::vector<int64_t>* ids) -> Status {
    const char* bytes = reinterpret_cast<const char*>(&queries[i * c.dim]);
    VIGIL_ASSIGN_OR_RETURN(sql::ResultSet rs,
                           session->Select(select, {sql::Blob{std::string(bytes, c.dim * sizeof(float))}}));
    ids->clear();
    for (const auto& row : rs.rows) ids->push_back(std::get<int64_t>(row[0]));
    return Status::OK();
  };
  Progress("search: C++ sql::Session::Select");
  VIGIL_ASSIGN_OR_RETURN(Pass session_pass, TimePass(c, via_session));

  // Rounds of (C++ API pass, Python run): each ratio compares neighbours in time, so that the
  // machine's changing speed hits both sides of it alike; the median ratio is the figure.
  std::vector<Pass> api_passes;
  std::vector<double> ratios;
  nlohmann::json python, rounds = nlohmann::json::array();
  std::pair<nlohmann::json, ProgramRun> py;
  for (uint64_t r = 0; r < c.rounds; ++r) {
    Progress("search: round " + std::to_string(r + 1) + ", C++ API");
    VIGIL_ASSIGN_OR_RETURN(Pass api_pass, TimePass(c, api));
    Progress("search: round " + std::to_string(r + 1) + ", the Python package");
    VIGIL_ASSIGN_OR_RETURN(
        py, RunScript(c, "search",
                      {"--root", s.dir, "--table", kTable, "--queries", npy, "--k", std::to_string(c.k), "--nprobes",
                       std::to_string(c.nprobes), "--check", std::to_string(c.check)},
                      args.work_dir + "/search.json"));
    const double api_qps = api_pass.ToJson()["qps"].get<double>(), py_qps = py.first.value("qps", 0.0);
    ratios.push_back(api_qps > 0 ? py_qps / api_qps : 0);
    rounds.push_back({{"cpp_api_qps", api_qps},
                      {"python_qps", py_qps},
                      {"ratio", ratios.back()},
                      {"python_threads", py.first["threads"]}});
    api_passes.push_back(std::move(api_pass));
    if (r == 0) python = py.first;
  }
  std::vector<double> sorted_ratios = ratios;
  std::sort(sorted_ratios.begin(), sorted_ratios.end());
  const double median_ratio = sorted_ratios.empty() ? 0 : sorted_ratios[sorted_ratios.size() / 2];

  Pass api_all;
  for (const Pass& p : api_passes) {
    api_all.latencies_us.insert(api_all.latencies_us.end(), p.latencies_us.begin(), p.latencies_us.end());
    api_all.seconds += p.seconds;
    api_all.cpu_seconds += p.cpu_seconds;
  }
  nlohmann::json cpp = api_all.ToJson();
  cpp["note"] = "query::VectorSearch + query::TakeRows(id); every round's pass";

  size_t checked = 0, mismatched = 0, session_mismatched = 0;
  const auto& py_ids = python["ids"];
  const Pass& api_first = api_passes.front();
  for (size_t i = 0; i < api_first.ids.size(); ++i, ++checked) {
    std::vector<int64_t> got;
    if (i < py_ids.size()) got = py_ids[i].get<std::vector<int64_t>>();
    mismatched += got != api_first.ids[i];
    session_mismatched += session_pass.ids[i] != api_first.ids[i];
  }
  python.erase("ids");
  python["peak_rss_mib"] = python.value("peak_rss_bytes", int64_t{0}) / kMiB;
  python["process_seconds"] = py.second.seconds;
  python.erase("threads");
  python["note"] = "t.search(q).nprobes(n).limit(k).select([\"id\"]).to_list(), serial";

  nlohmann::json session_json = session_pass.ToJson();
  session_json["sql"] = select;
  session_json["note"] = "in process, the SELECT and bound FLOAT32 vector the package sends";

  const double py_qps = python.value("qps", 0.0);
  std::vector<double> thread_ratios;
  for (const auto& round : rounds)
    thread_ratios.push_back(round["python_threads"].value("wall_ratio_two_over_one", 0.0));
  std::sort(thread_ratios.begin(), thread_ratios.end());
  const double session_qps = session_json["qps"].get<double>();
  const double cpp_p50 = cpp["p50_us"].get<double>(), py_p50 = python.value("p50_us", 0.0);
  const double ratio = median_ratio;
  const double cpp_cpu = cpp["cpu_us_per_query"].get<double>(), py_cpu = python.value("cpu_us_per_query", 0.0);
  return nlohmann::json{{"rows", c.rows},
                        {"dim", c.dim},
                        {"partitions", c.partitions},
                        {"sub_vectors", c.sub_vectors},
                        {"queries", c.queries},
                        {"k", c.k},
                        {"nprobes", c.nprobes},
                        {"setup", {{"load_seconds", s.load_seconds}, {"index_seconds", s.index_seconds}}},
                        {"cpp_api", cpp},
                        {"cpp_session_select", session_json},
                        {"python", python},
                        {"rounds", rounds},
                        // Wall time of every query on each of two threads over one thread's (target < 1.6).
                        {"python_two_threads_wall_ratio", thread_ratios[thread_ratios.size() / 2]},
                        {"ratio_python_over_cpp_api_qps", ratio},
                        {"ratio_python_over_cpp_api_p50_latency", cpp_p50 > 0 ? py_p50 / cpp_p50 : 0},
                        {"ratio_python_over_cpp_session_qps", session_qps > 0 ? py_qps / session_qps : 0},
                        // Less sensitive to other load on the machine than the wall-clock ratio.
                        {"ratio_cpp_api_over_python_cpu_per_query", py_cpu > 0 ? cpp_cpu / py_cpu : 0},
                        {"python_overhead_over_cpp_api_p50_us", py_p50 - cpp_p50},
                        {"ids_checked", checked},
                        {"ids_match", mismatched == 0},
                        {"ids_mismatched_queries", mismatched},
                        {"session_ids_match", session_mismatched == 0},
                        {"target_ratio", kRatioTarget},
                        {"meets_target", ratio >= kRatioTarget}};
}

Result<nlohmann::json> Run(const BenchArgs& args) {
  VIGIL_ASSIGN_OR_RETURN(Config c, ParseConfig(args));
  VIGIL_RETURN_IF_ERROR(CheckPython(c));
  double load[1] = {0};
  nlohmann::json out = {{"benchmark", "python"},
                        {"config",
                         {{"rows", c.rows},
                          {"dim", c.dim},
                          {"partitions", c.partitions},
                          {"sub_vectors", c.sub_vectors},
                          {"queries", c.queries},
                          {"k", c.k},
                          {"nprobes", c.nprobes},
                          {"add_rows", c.add_rows},
                          {"add_batch_rows", c.add_batch_rows},
                          {"python", c.python},
                          {"script", c.script},
                          {"pythonpath", c.pythonpath},
                          {"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
                          {"load_average_1m", getloadavg(load, 1) == 1 ? load[0] : -1}}}};
  // Add first: the children's wait4 peak RSS then barely counts this process's pages.
  if (c.add) {
    VIGIL_ASSIGN_OR_RETURN(out["add"], MeasureAdd(args, c));
  }
  if (c.search) {
    VIGIL_ASSIGN_OR_RETURN(out["search"], MeasureSearch(args, c));
  }
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "python",
     .description = "the Python package vs the C++ API: search queries/s (vs VectorSearch + TakeRows) and add "
                    "rows/s (vs vigil import)",
     .fn = Run,
     .int_options = {"add_batch_rows", "add_rows", "check", "dim", "k", "latent_dim", "nprobes", "partitions",
                     "queries", "rounds", "rows", "sub_vectors"},
     .text_options = {"noise", "phases", "python", "pythonpath", "script"}});

}  // namespace vigil::bench::python_bench

// `vigil bench lance`: IVF_PQ CREATE on a Lance dataset through Vigil against LanceDB
// called directly by a Node program (bench/lance_direct.mjs: connect, open, createIndex),
// in the same run. "Through Vigil" is the user's whole path: `vigil sql -c "CREATE OR
// REPLACE INDEX ..."` on an external table of a fresh root (admission reading the dataset,
// the durable job, dispatch, the isolated worker starting the Lance runner, the refresh)
// until the statement returns with the job FINISHED; the runner alone (lance::RunLance) is
// timed too.
//
// Then the time from a lost response to a settled job: the worker is killed right before
// LanceDB's commit (failpoint lance.before_commit), and the clock runs from the statement's
// OUTCOME_UNKNOWN to the job reading FAILED, NOT_COMMITTED (the reconciler proves that no
// version followed the admitted one), over `settle_rounds` BTREE CREATEs. (A kill after the
// commit is never settled automatically: nothing binds LanceDB's commit to the attempt.)
//
// The dataset: `rows` x `dim` generated vectors written by LanceDB itself (the tests'
// writer, src/lance/runner/testdata/lance_writer.mjs). Each round builds the index
// (replace) once each way, the direct program first; both are timed as whole processes
// (node's start included on both sides), and the direct program also reports its
// createIndex call alone. The figure is the median over the rounds of runner / direct
// (target <= 1.1x: the lifecycle costs almost nothing beside the build).
//
// Options: rows (200000), dim (128), partitions (256), sub_vectors (16), rounds (3),
// settle_rounds (3), node (/usr/bin/node), runner_dir (<source>/src/lance/runner).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "bench/bench.h"
#include "vigil/lance/lance_runner.h"
#include "vigil/lance/lance_table.h"

#ifndef VIGIL_SOURCE_DIR
#define VIGIL_SOURCE_DIR ""
#endif

namespace vigil::bench::lance_bench {

namespace {

// `vigil sql -c text` on `root` (this executable), with `env` added.
Result<ProgramRun> Sql(const std::string& root, const std::string& text, const std::vector<std::string>& env = {}) {
  return RunProgram({VigilProgram(), "--root", root, "sql", "-c", text}, env);
}

// A fresh root whose external table d.docs is the dataset at `dataset`.
Result<std::string> MakeRoot(const std::string& work_dir, const std::string& dataset, const std::string& node,
                             const std::string& runner_dir) {
  const std::string root = work_dir + "/root";
  VIGIL_RETURN_IF_ERROR(RunProgram({VigilProgram(), "init", root}).status());
  FILE* f = std::fopen((root + "/vigil.toml").c_str(), "w");  // every other setting: its default
  if (f == nullptr) return Status::IOError("cannot write " + root + "/vigil.toml");
  std::fprintf(f, "[sql]\nexternal_table_allowed_directories = [\"%s\"]\n", work_dir.c_str());
  std::fprintf(f, "[lance]\nnode = \"%s\"\nrunner = \"%s/lance_runner.mjs\"\n", node.c_str(), runner_dir.c_str());
  std::fclose(f);
  VIGIL_RETURN_IF_ERROR(Sql(root, "CREATE EXTERNAL TABLE d.docs ENGINE = lance LOCATION '" + dataset + "'").status());
  return root;
}

// Seconds from a CREATE whose worker was killed before LanceDB's commit returning
// OUTCOME_UNKNOWN to its job reading FAILED, NOT_COMMITTED.
Result<double> LostResponseToSettled(const std::string& root) {
  // A supervisor started by this statement carries the failpoint (and only it).
  (void)RunProgram({VigilProgram(), "--root", root, "supervise", "--stop"});
  Result<ProgramRun> lost = Sql(root, "CREATE OR REPLACE INDEX id_idx ON d.docs (id) USING BTREE",
                                {"VIGIL_FAILPOINTS=lance.before_commit=kill"});
  const auto returned = std::chrono::steady_clock::now();
  const std::string said = lost.ok() ? lost->output : lost.status().message();
  const size_t at = said.find("job ");
  if (lost.ok() || said.find("OUTCOME_UNKNOWN") == std::string::npos || at == std::string::npos) {
    return Status::Internal("the killed CREATE did not end OUTCOME_UNKNOWN: " + said.substr(0, 500));
  }
  const std::string job = said.substr(at + 4, said.find(' ', at + 4) - at - 4);
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(ProgramRun shown, Sql(root, "SHOW INDEX JOB " + job));
    if (shown.output.find("| NOT_COMMITTED") != std::string::npos) break;
    if (shown.output.find("| FINISHED") != std::string::npos || Since(returned) > 600) {
      return Status::Internal("job " + job + " did not settle as NOT_COMMITTED: " + shown.output.substr(0, 2000));
    }
  }
  const double seconds = Since(returned);
  (void)RunProgram({VigilProgram(), "--root", root, "supervise", "--stop"});
  return seconds;
}

Result<nlohmann::json> Run(const BenchArgs& args) {
  const std::string node = args.Str("node", "/usr/bin/node");
  const std::string runner_dir = args.Str("runner_dir", lance::DefaultRunnerDir());
  const std::string direct = std::string(VIGIL_SOURCE_DIR) + "/bench/lance_direct.mjs";
  const int64_t rows = args.Int("rows", 200000), dim = args.Int("dim", 128);
  const std::string partitions = std::to_string(args.Int("partitions", 256));
  const std::string sub_vectors = std::to_string(args.Int("sub_vectors", 16));
  const int64_t rounds = std::max<int64_t>(args.Int("rounds", 3), 1);
  if (!std::filesystem::exists(runner_dir + "/node_modules/@lancedb/lancedb")) {
    return Status::FailedPrecondition("the Lance runner's packages are not installed in " + runner_dir +
                                      " (scripts/install-deps.sh)");
  }
  const auto made_at = std::chrono::steady_clock::now();
  VIGIL_ASSIGN_OR_RETURN(ProgramRun made,
                         RunProgram({node, runner_dir + "/testdata/lance_writer.mjs", "create", args.work_dir, "docs",
                                     std::to_string(rows), std::to_string(dim)}));
  const double make_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - made_at).count();
  const std::string dataset = args.work_dir + "/docs.lance";
  lance::LanceRunnerOptions options;
  options.node_path = node;
  options.script_path = runner_dir + "/lance_runner.mjs";

  VIGIL_ASSIGN_OR_RETURN(const std::string root, MakeRoot(args.work_dir, dataset, node, runner_dir));
  const std::string create =
      "CREATE OR REPLACE INDEX emb_idx ON d.docs (vector) USING ANN PROPERTIES ('metric' = 'l2', "
      "'num_partitions' = '" +
      partitions + "', 'num_sub_vectors' = '" + sub_vectors + "')";

  nlohmann::json per_round = nlohmann::json::array();
  std::vector<double> ratios, vigil_ratios, direct_s, runner_s, vigil_s;
  for (int64_t round = 0; round < rounds; ++round) {
    VIGIL_ASSIGN_OR_RETURN(ProgramRun base, RunProgram({node, direct, runner_dir, dataset, partitions, sub_vectors}));
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json seen, lance::RunLance({{"op", "inspect"}, {"dataset", dataset}}, options));
    const nlohmann::json request = {
        {"op", "create_index"},
        {"dataset", dataset},
        {"expected_version", seen["version"]},
        {"name", "emb_idx"},
        {"column", "vector"},
        {"index_type", "IVF_PQ"},
        {"replace", true},
        {"properties", {{"metric", "l2"}, {"num_partitions", partitions}, {"num_sub_vectors", sub_vectors}}}};
    const auto start = std::chrono::steady_clock::now();
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json built, lance::RunLance(request, options));
    const double through = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (built["index"].is_null() || built["index"]["indexed_rows"] != rows) {
      return Status::Internal("the runner's index does not cover the dataset: " + built.dump());
    }
    VIGIL_ASSIGN_OR_RETURN(ProgramRun lifecycle, Sql(root, create));
    direct_s.push_back(base.seconds);
    runner_s.push_back(through);
    vigil_s.push_back(lifecycle.seconds);
    ratios.push_back(through / base.seconds);
    vigil_ratios.push_back(lifecycle.seconds / base.seconds);
    per_round.push_back({{"direct_seconds", base.seconds},
                         {"direct_create_index_ms", std::stoll(base.output)},
                         {"runner_seconds", through},
                         {"runner_ratio", through / base.seconds},
                         {"vigil_seconds", lifecycle.seconds},
                         {"vigil_ratio", lifecycle.seconds / base.seconds}});
    std::fprintf(stderr,
                 "round %lld: LanceDB directly %.2f s (createIndex %s ms), through the runner %.2f s (%.3fx), "
                 "through vigil sql %.2f s (%.3fx)\n",
                 static_cast<long long>(round + 1), base.seconds, base.output.substr(0, base.output.find('\n')).c_str(),
                 through, through / base.seconds, lifecycle.seconds, lifecycle.seconds / base.seconds);
  }
  std::vector<double> settle_s;
  for (int64_t i = 0; i < std::max<int64_t>(args.Int("settle_rounds", 3), 1); ++i) {
    VIGIL_ASSIGN_OR_RETURN(double settled, LostResponseToSettled(root));
    settle_s.push_back(settled);
    std::fprintf(stderr, "lost response %lld: settled as NOT_COMMITTED after %.2f s\n", static_cast<long long>(i + 1),
                 settled);
  }
  nlohmann::json out = {{"rows", rows},
                        {"dim", dim},
                        {"partitions", partitions},
                        {"sub_vectors", sub_vectors},
                        {"dataset_write_seconds", make_seconds},
                        {"dataset_versions_written", std::stoll(made.output)},
                        {"rounds", per_round},
                        {"direct_seconds_median", Median(direct_s)},
                        {"runner_seconds_median", Median(runner_s)},
                        {"runner_ratio_median", Median(ratios)},
                        {"vigil_seconds_median", Median(vigil_s)},
                        {"vigil_ratio_median", Median(vigil_ratios)},
                        {"target_ratio_max", 1.1},
                        {"lost_response_to_settled_seconds", settle_s},
                        {"lost_response_to_settled_median_seconds", Median(settle_s)}};
  std::fprintf(stderr,
               "IVF_PQ CREATE on %lld x %lld, median of %lld rounds: through vigil sql / LanceDB directly = %.3fx, "
               "runner alone %.3fx; lost response to settled: median %.2f s\n",
               static_cast<long long>(rows), static_cast<long long>(dim), static_cast<long long>(rounds),
               Median(vigil_ratios), Median(ratios), Median(settle_s));
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH(
    {.name = "lance",
     .description = "IVF_PQ CREATE on a LanceDB-written dataset through vigil sql (and the runner alone) vs "
                    "LanceDB directly; lost response to settled job",
     .fn = Run,
     .int_options = {"dim", "partitions", "rounds", "rows", "settle_rounds", "sub_vectors"},
     .text_options = {"node", "runner_dir"}});

}  // namespace vigil::bench::lance_bench

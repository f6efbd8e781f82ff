// `vigil bench lance`: IVF_PQ CREATE on a Lance dataset through Vigil's Lance runner
// (lance::RunLance: a runner process with its own group, the version check, the
// listings before and after, the build) against LanceDB called directly by a Node
// program (bench/lance_direct.mjs: connect, open, createIndex), in the same run.
//
// The dataset: `rows` x `dim` generated vectors written by LanceDB itself (the tests'
// writer, src/lance/runner/testdata/lance_writer.mjs). Each round builds the index
// (replace) once each way, the direct program first; both are timed as whole processes
// (node's start included on both sides), and the direct program also reports its
// createIndex call alone. The figure is the median over the rounds of runner / direct
// (target <= 1.1x: the lifecycle costs almost nothing beside the build).
//
// Options: rows (200000), dim (128), partitions (256), sub_vectors (16), rounds (3),
// node (/usr/bin/node), runner_dir (<source>/src/lance/runner).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "bench/bench.h"
#include "vigil/lance/lance_runner.h"

#ifndef VIGIL_SOURCE_DIR
#define VIGIL_SOURCE_DIR ""
#endif

namespace vigil::bench {

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Result<nlohmann::json> Run(const BenchArgs& args) {
  const std::string node = args.Str("node", "/usr/bin/node");
  const std::string runner_dir = args.Str("runner_dir", std::string(VIGIL_SOURCE_DIR) + "/src/lance/runner");
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

  nlohmann::json per_round = nlohmann::json::array();
  std::vector<double> ratios, direct_s, runner_s;
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
    direct_s.push_back(base.seconds);
    runner_s.push_back(through);
    ratios.push_back(through / base.seconds);
    per_round.push_back({{"direct_seconds", base.seconds},
                         {"direct_create_index_ms", std::stoll(base.output)},
                         {"runner_seconds", through},
                         {"ratio", through / base.seconds}});
    std::fprintf(stderr, "round %lld: LanceDB directly %.2f s (createIndex %s ms), through the runner %.2f s: %.3fx\n",
                 static_cast<long long>(round + 1), base.seconds, base.output.substr(0, base.output.find('\n')).c_str(),
                 through, through / base.seconds);
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
                        {"ratio_median", Median(ratios)},
                        {"target_ratio_max", 1.1}};
  std::fprintf(stderr, "IVF_PQ CREATE on %lld x %lld: runner / LanceDB directly = %.3fx (median of %lld rounds)\n",
               static_cast<long long>(rows), static_cast<long long>(dim), Median(ratios),
               static_cast<long long>(rounds));
  return out;
}

}  // namespace

VIGIL_REGISTER_BENCH("lance",
                     "IVF_PQ CREATE on a LanceDB-written dataset through Vigil's Lance runner vs LanceDB directly",
                     Run);

}  // namespace vigil::bench

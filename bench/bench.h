// `vigil bench <name>`: benchmarks that print one JSON document with figures
// and ratios against a baseline measured in the same run. Each benchmark file
// registers itself with VIGIL_REGISTER_BENCH. Registration happens during
// static initialization; running is single-threaded from the CLI.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vigil/common/status.h"

namespace vigil::bench {

struct BenchInfo;

struct BenchArgs {
  std::string work_dir;                        // scratch space; created by the caller
  std::map<std::string, std::string> options;  // --opt key=value pairs, checked by CheckOptions
  const BenchInfo* info = nullptr;             // the benchmark run; reads must be of options it declares

  // Option `key` (an integer option of `info`) as an integer, or `def` when absent.
  int64_t Int(const std::string& key, int64_t def) const;
  // Option `key` (a text option of `info`), or `def` when absent.
  std::string Str(const std::string& key, const std::string& def) const;
  // Whether option `key` (declared by `info`) was given.
  bool Has(const std::string& key) const;
};

using BenchFn = std::function<Result<nlohmann::json>(const BenchArgs&)>;

// A benchmark and the options it reads: integers (`--rows 1000`) and texts (`--connections
// 4,32`). Reading an option it does not declare fails its invariant check.
struct BenchInfo {
  std::string name;
  std::string description;
  BenchFn fn;
  std::vector<std::string> int_options;
  std::vector<std::string> text_options;
};

// InvalidArgument naming the option when `options` has a name none of `benches` declares, or
// an integer option whose value is not a whole integer; run before any work.
Status CheckOptions(const std::map<std::string, std::string>& options, const std::vector<BenchInfo>& benches);

// Registers a benchmark; returns true so it can initialize a static.
bool Register(BenchInfo info);
// All registered benchmarks, sorted by name.
std::vector<BenchInfo> All();

using Clock = std::chrono::steady_clock;

// Seconds from `t` to now.
double Since(Clock::time_point t);
// The element at rank floor(p * size) of `v` sorted (the last for p = 1); 0 for an empty `v`.
double Percentile(std::vector<double> v, double p);
// Percentile(v, 0.5): the upper median of an even count.
double Median(std::vector<double> v);
// User plus system CPU seconds this process has used so far.
double SelfCpuSeconds();

// Peak resident set size of this process so far, in bytes.
int64_t PeakRssBytes();

// Everything readable from `fd` until end of file (a child's pipe); closes `fd`.
std::string ReadToEnd(int fd);

// Reads the whole file with read(2) in 1 MiB requests, the raw baseline of an import or a
// scan: bytes read and seconds taken.
struct RawRead {
  uint64_t bytes = 0;
  double seconds = 0;
};
Result<RawRead> RawReadFile(const std::string& path);

// The `vigil` program the benchmarks run (`vigil --root R sql -c ...`, `vigil serve`):
// $VIGIL_PROGRAM (`vigil bench` sets it to itself), else `vigil` beside this program (an
// installed pair), else the one this build tree made.
const std::string& VigilProgram();

// Resident set size of this process now, in bytes (/proc/self/statm).
int64_t CurrentRssBytes();

// What a program run by RunProgram printed (stdout and stderr together), the CPU it used
// (user + system seconds), its wall time and its peak RSS (wait4, which counts the pages it
// shared with this process at fork too: run it while this process is small).
struct ProgramRun {
  std::string output;
  double cpu_seconds = 0;
  double seconds = 0;
  int64_t peak_rss_bytes = 0;
};

// Runs the program at argv[0] with argv, `env` ("NAME=value") added to this process's
// environment, and waits for it; Internal naming the command, its wait status and its output
// when it does not exit with 0. VigilProgram() runs `vigil`.
Result<ProgramRun> RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

// Runs `body` in a forked child, which sends its JSON back through a pipe; the JSON and
// the child's peak RSS (bytes, wait4). Internal when the child fails or its JSON has an
// "error" member. The caller must not have started OpenMP threads (libgomp is not
// fork-safe) when the child uses OpenMP.
Result<std::pair<nlohmann::json, int64_t>> RunForked(const std::function<nlohmann::json()>& body);

}  // namespace vigil::bench

// VIGIL_REGISTER_BENCH({.name = ..., .description = ..., .fn = ..., .int_options = {...}, .text_options = {...}});
#define VIGIL_REGISTER_BENCH(...) \
  static const bool VIGIL_CONCAT_(vigil_bench_registered_, __LINE__) = ::vigil::bench::Register(__VA_ARGS__)

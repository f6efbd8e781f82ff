// `vigil-bench [NAME] [--opt key=value ...] [--out FILE]` (also run as `vigil bench
// ...`): runs a registered benchmark and prints its JSON result; lists the benchmarks
// without NAME. Options may also follow NAME as `--key value` (`vigil bench server
// --rows 1000`). A program of its own, so that `vigil` links none of the peers the
// benchmarks measure against (Xapian, ...).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>
#include "bench/bench.h"

namespace vigil::bench {

namespace {

struct BenchCliArgs {
  std::string name;
  std::vector<std::string> opts;
  std::string out;
  std::string work_dir;
  bool keep = false;
};

Status ListBenchmarks() {
  std::printf("benchmarks (run with: vigil bench NAME [--key value ... | --opt key=value ...] [--out FILE]):\n");
  for (const auto& b : All()) {
    std::printf("  %-12s %s\n", b.name.c_str(), b.description.c_str());
    std::string ints, texts;
    for (const auto& o : b.int_options) ints += " --" + o;
    for (const auto& o : b.text_options) texts += " --" + o;
    if (!ints.empty()) std::printf("  %-12s integers:%s\n", "", ints.c_str());
    if (!texts.empty()) std::printf("  %-12s texts:%s\n", "", texts.c_str());
  }
  return Status::OK();
}

Result<std::map<std::string, std::string>> ParseOpts(const std::vector<std::string>& opts) {
  std::map<std::string, std::string> out;
  for (const auto& o : opts) {
    size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0) return Status::InvalidArgument("--opt '" + o + "' must be key=value");
    out[o.substr(0, eq)] = o.substr(eq + 1);
  }
  return out;
}

// Arguments after NAME that are not the command's own, `--key value` or `--key=value`, as
// --opt key=value (a '-' in key becomes '_'): `vigil bench server --rows 1000`.
Result<std::vector<std::string>> ExtrasAsOpts(const std::vector<std::string>& extras) {
  std::vector<std::string> out;
  for (size_t i = 0; i < extras.size(); ++i) {
    const std::string& a = extras[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      return Status::InvalidArgument("unexpected argument '" + a + "' (benchmark options are --key value)");
    }
    std::string key = a.substr(2), value;
    if (size_t eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key.resize(eq);
    } else if (i + 1 < extras.size() && extras[i + 1].rfind("--", 0) != 0) {
      value = extras[++i];
    } else {
      return Status::InvalidArgument("benchmark option " + a + " needs a value");
    }
    std::replace(key.begin(), key.end(), '-', '_');
    out.push_back(key + "=" + value);
  }
  return out;
}

Result<std::string> ScratchDir(const std::string& given) {
  if (!given.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(given, ec);
    if (ec) return Status::IOError("cannot create " + given + ": " + ec.message());
    return given;
  }
  const char* t = std::getenv("TMPDIR");
  std::string tmpl = std::string(t && *t ? t : "/tmp") + "/vigil-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno(errno, "mkdtemp " + tmpl);
  return tmpl;
}

// Runs one benchmark with `options` in its own scratch directory.
Result<nlohmann::json> RunOne(const BenchInfo& info, const std::map<std::string, std::string>& options,
                              const BenchCliArgs& args) {
  BenchArgs bargs;
  bargs.options = options;
  bargs.info = &info;
  VIGIL_ASSIGN_OR_RETURN(bargs.work_dir, ScratchDir(args.work_dir));
  Result<nlohmann::json> result = info.fn(bargs);
  if (!args.keep && args.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(bargs.work_dir, ec);
  }
  return result;
}

// NAME selects one benchmark, or every benchmark named NAME-* (e.g. `index`
// runs index-ivfpq, index-scalar and index-fts) as one JSON object.
Status RunBench(const BenchCliArgs& args) {
  if (args.name.empty()) return ListBenchmarks();
  std::vector<BenchInfo> selected;
  for (const auto& b : All()) {
    if (b.name == args.name || b.name.rfind(args.name + "-", 0) == 0) selected.push_back(b);
  }
  if (selected.empty()) {
    return Status::NotFound("no benchmark named '" + args.name + "' (run `vigil bench` to list them)");
  }
  VIGIL_ASSIGN_OR_RETURN(auto options, ParseOpts(args.opts));
  VIGIL_RETURN_IF_ERROR(CheckOptions(options, selected));
  nlohmann::json out;
  if (selected.size() == 1 && selected[0].name == args.name) {
    VIGIL_ASSIGN_OR_RETURN(out, RunOne(selected[0], options, args));
  } else {
    for (const auto& b : selected) {
      VIGIL_ASSIGN_OR_RETURN(out[b.name], RunOne(b, options, args));
    }
  }
  std::string text = out.dump(2) + "\n";
  std::fputs(text.c_str(), stdout);
  if (!args.out.empty()) {
    std::ofstream f(args.out, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f.good()) return Status::IOError("cannot write " + args.out);
  }
  return Status::OK();
}

}  // namespace

}  // namespace vigil::bench

int main(int argc, char** argv) {
  using namespace vigil::bench;
  CLI::App app("Runs a benchmark of Vigil (JSON output); lists the benchmarks when NAME is omitted", "vigil bench");
  BenchCliArgs args;
  app.add_option("NAME", args.name, "Benchmark name");
  app.add_option("--opt", args.opts, "Benchmark option key=value (repeatable), e.g. --opt rows=100000");
  app.add_option("--out", args.out, "Also write the JSON result to FILE");
  app.add_option("--work-dir", args.work_dir, "Scratch directory (default: a temporary one, removed afterwards)");
  app.add_flag("--keep", args.keep, "Keep the temporary scratch directory");
  app.allow_extras();
  app.footer("Options may also follow NAME as --key value, e.g. `vigil bench server --rows 20000 --duration 5`.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  vigil::Status st = [&]() -> vigil::Status {
    VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> extra, ExtrasAsOpts(app.remaining()));
    args.opts.insert(args.opts.end(), extra.begin(), extra.end());
    return RunBench(args);
  }();
  if (!st.ok()) {
    std::fprintf(stderr, "vigil bench: error: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

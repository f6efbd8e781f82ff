// `vigil bench [NAME] [--opt key=value ...] [--out FILE]`: runs a registered
// benchmark and prints its JSON result; lists the benchmarks without NAME.
// Options may also follow NAME as `--key value` (`vigil bench server --rows 1000`).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/bench.h"
#include "cli/commands.h"

namespace vigil::cli {

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
  for (const auto& b : bench::All()) {
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
Result<nlohmann::json> RunOne(const bench::BenchInfo& info, const std::map<std::string, std::string>& options,
                              const BenchCliArgs& args) {
  bench::BenchArgs bargs;
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
  std::vector<bench::BenchInfo> selected;
  for (const auto& b : bench::All()) {
    if (b.name == args.name || b.name.rfind(args.name + "-", 0) == 0) selected.push_back(b);
  }
  if (selected.empty()) {
    return Status::NotFound("no benchmark named '" + args.name + "' (run `vigil bench` to list them)");
  }
  VIGIL_ASSIGN_OR_RETURN(auto options, ParseOpts(args.opts));
  VIGIL_RETURN_IF_ERROR(bench::CheckOptions(options, selected));
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

void AddBenchCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("bench", "Run a benchmark (JSON output); lists the benchmarks when NAME is omitted");
  auto args = std::make_shared<BenchCliArgs>();
  sub->add_option("NAME", args->name, "Benchmark name");
  sub->add_option("--opt", args->opts, "Benchmark option key=value (repeatable), e.g. --opt rows=100000");
  sub->add_option("--out", args->out, "Also write the JSON result to FILE");
  sub->add_option("--work-dir", args->work_dir, "Scratch directory (default: a temporary one, removed afterwards)");
  sub->add_flag("--keep", args->keep, "Keep the temporary scratch directory");
  sub->allow_extras();
  sub->footer("Options may also follow NAME as --key value, e.g. `vigil bench server --rows 20000 --duration 5`.");
  ctx->actions.emplace_back(sub, [args, sub]() -> Status {
    VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> extra, ExtrasAsOpts(sub->remaining()));
    BenchCliArgs all = *args;
    all.opts.insert(all.opts.end(), extra.begin(), extra.end());
    return RunBench(all);
  });
}

}  // namespace vigil::cli

// `vigil bench ...`: runs the `vigil-bench` program with the same arguments. The
// benchmarks live in that program so that `vigil` links none of the peers they
// measure against (Xapian, ...). It is found as $VIGIL_BENCH_PROGRAM, else beside
// this `vigil` (an installed pair), else where this build tree made it; it runs
// this `vigil` for the commands it times ($VIGIL_PROGRAM).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace vigil::cli {

namespace {

// This program's own path.
std::string SelfPath() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.string();
}

Result<std::string> BenchProgram(const std::string& self) {
  std::vector<std::string> tried;
  if (const char* given = std::getenv("VIGIL_BENCH_PROGRAM"); given != nullptr && *given != '\0') {
    tried.push_back(given);
  }
  if (!self.empty()) tried.push_back((std::filesystem::path(self).parent_path() / "vigil-bench").string());
#ifdef VIGIL_BUILT_BENCH_PROGRAM
  tried.push_back(VIGIL_BUILT_BENCH_PROGRAM);
#endif
  for (const std::string& p : tried) {
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  std::string where;
  for (const std::string& p : tried) where += (where.empty() ? "" : ", ") + p;
  return Status::NotFound("`vigil bench` runs the vigil-bench program, which is not at " + where +
                          " (build it with `cmake --build build/release --target vigil-bench`, or set "
                          "VIGIL_BENCH_PROGRAM)");
}

}  // namespace

void AddBenchCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("bench", "Run a benchmark (JSON output); lists the benchmarks when NAME is omitted");
  sub->prefix_command();  // every argument after `bench` is vigil-bench's, --help too
  sub->set_help_flag();
  ctx->actions.emplace_back(sub, [sub]() -> Status {
    const std::string self = SelfPath();
    VIGIL_ASSIGN_OR_RETURN(std::string program, BenchProgram(self));
    if (!self.empty() && ::setenv("VIGIL_PROGRAM", self.c_str(), 1) != 0) {
      return Status::FromErrno(errno, "setenv VIGIL_PROGRAM");
    }
    std::vector<std::string> args = sub->remaining();
    std::vector<char*> argv{const_cast<char*>("vigil-bench")};
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    return Status::FromErrno(errno, "cannot run " + program);
  });
}

}  // namespace vigil::cli

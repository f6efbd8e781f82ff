// The `vigil` subcommands. Each Add*Command registers one subcommand on the
// app and an action that main() runs after parsing. Single-threaded.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "vigil/common/status.h"
#include "vigil/storage/root.h"

namespace vigil::cli {

struct Context {
  std::string root_dir;  // --root or VIGIL_ROOT; empty when neither
  std::vector<std::pair<CLI::App*, std::function<Status()>>> actions;

  // Opens the root named by --root / VIGIL_ROOT; InvalidArgument when none was given.
  Result<Root> OpenRoot() const;
};

void AddInitCommand(CLI::App* app, Context* ctx);
void AddImportCommand(CLI::App* app, Context* ctx);
void AddDemoCommand(CLI::App* app, Context* ctx);
void AddBenchCommand(CLI::App* app, Context* ctx);
void AddDoctorCommand(CLI::App* app, Context* ctx);
void AddSuperviseCommand(CLI::App* app, Context* ctx);
void AddSqlCommand(CLI::App* app, Context* ctx);
void AddNodesCommand(CLI::App* app, Context* ctx);
void AddServeCommand(CLI::App* app, Context* ctx);

}  // namespace vigil::cli

// `vigil`: entry point. Parses the global options and runs one subcommand.
#include <cstdio>

#include "cli/commands.h"
#include "vigil/common/logging.h"

namespace vigil::cli {

Result<Root> Context::OpenRoot() const {
  if (root_dir.empty()) {
    return Status::InvalidArgument(
        "no root given: pass --root DIR or set VIGIL_ROOT (create one with `vigil init DIR`)");
  }
  return Root::Open(root_dir);
}

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"Vigil: versioned tables with secondary indexes and crash-safe index jobs"};
  app.require_subcommand(1);
  Context ctx;
  app.add_option("--root", ctx.root_dir, "Root directory (default: $VIGIL_ROOT)")->envname("VIGIL_ROOT");
  AddInitCommand(&app, &ctx);
  AddImportCommand(&app, &ctx);
  AddDemoCommand(&app, &ctx);
  AddBenchCommand(&app, &ctx);
  AddDoctorCommand(&app, &ctx);
  AddSuperviseCommand(&app, &ctx);
  AddSqlCommand(&app, &ctx);
  AddNodesCommand(&app, &ctx);
  AddServeCommand(&app, &ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, action] : ctx.actions) {
    if (!sub->parsed()) continue;
    Status st = action();
    if (!st.ok()) {
      // A command that reported its own failures returns Cancelled without a message.
      if (st.code() == StatusCode::kCancelled && st.message().empty()) return 1;
      std::fprintf(stderr, "vigil %s: error: %s\n", sub->get_name().c_str(), st.ToString().c_str());
      return 1;
    }
    return 0;
  }
  return 2;
}

}  // namespace
}  // namespace vigil::cli

int main(int argc, char** argv) {
  vigil::InitLogging();
  return vigil::cli::Run(argc, argv);
}

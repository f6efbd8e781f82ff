// `vigil init [DIR]`: creates a root.
#include <cstdio>

#include "cli/commands.h"

namespace vigil::cli {

void AddInitCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("init", "Create a new root (local catalog) in DIR (default: --root / $VIGIL_ROOT)");
  auto dir = std::make_shared<std::string>();
  sub->add_option("DIR", *dir, "Directory to create; must be missing or empty");
  ctx->actions.emplace_back(sub, [ctx, dir]() -> Status {
    std::string path = dir->empty() ? ctx->root_dir : *dir;
    if (path.empty()) return Status::InvalidArgument("no directory given: vigil init DIR (or --root DIR)");
    VIGIL_ASSIGN_OR_RETURN(Root root, Root::Init(path));
    std::printf("initialized vigil root %s (catalog %s, incarnation %s)\n", root.path().c_str(),
                root.marker().catalog.c_str(), root.marker().incarnation.ToString().c_str());
    return Status::OK();
  });
}

}  // namespace vigil::cli

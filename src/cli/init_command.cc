// `vigil init [DIR] [--meta-url URL] [--bootstrap-token]`: creates a root (its
// metadata in its own SQLite file, or in the PostgreSQL database of --meta-url,
// which its vigil.toml then names) and prints the bootstrap administrator's
// bearer token (user "admin" of realm "default"), once. On an
// existing root, plain `init` fails and changes nothing; `--bootstrap-token`
// issues a new administrator token only when the realm has no enabled
// administrator (a lost token with nobody left to rotate it).
#include <cstdio>

#include "cli/commands.h"
#include "vigil/auth/root_auth.h"
#include "vigil/common/config.h"
#include "vigil/meta/database.h"

namespace vigil::cli {

namespace {

constexpr const char* kBootstrapHint =
    "vigil init --bootstrap-token issues an administrator token when no enabled administrator exists";

// Bootstraps the realm's administrator and prints its token with how to replace it.
Status PrintBootstrapToken(const Root& root) {
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<auth::PrincipalStore> store, auth::OpenRootPrincipalStore(root));
  Result<auth::IssuedToken> issued = store->Bootstrap(auth::kDefaultRealm);
  if (issued.status().Is(StatusCode::kAlreadyExists)) {
    return Status::AlreadyExists(
        "realm " + std::string(auth::kDefaultRealm) +
        " already has an enabled administrator; no token was issued. An administrator replaces a token with "
        "ALTER USER <name> ROTATE TOKEN (`vigil --root " +
        root.path() + " sql` runs as the local administrator)");
  }
  VIGIL_RETURN_IF_ERROR(issued.status());
  std::printf("administrator token for user %s (realm %s), shown only this once; store it now:\n%s\n",
              issued->user.c_str(), issued->realm.c_str(), issued->token.c_str());
  std::printf("replace it with: vigil --root %s sql -c 'ALTER USER %s ROTATE TOKEN'\n", root.path().c_str(),
              issued->user.c_str());
  return Status::OK();
}

// A new root with its administrator token. A bad or unreachable --meta-url creates nothing.
Status InitRoot(const std::string& path, bool bootstrap_token, const std::string& meta_url) {
  Config config;
  if (!meta_url.empty()) {
    Status url = CheckMetaUrl(meta_url);
    if (!url.ok()) return Status::InvalidArgument("--meta-url " + url.message());
    VIGIL_RETURN_IF_ERROR(
        meta::Database::Open(meta_url).status().WithContext("--meta-url: the metadata store is not reachable"));
    config.meta.url = meta_url;
  }
  Result<Root> root = Root::Init(path, Env::Default(), config);
  if (root.status().Is(StatusCode::kAlreadyExists)) {
    if (!bootstrap_token) {
      return Status::AlreadyExists(root.status().message() + "; nothing changed (" + kBootstrapHint + ")");
    }
    VIGIL_ASSIGN_OR_RETURN(Root existing, Root::Open(path));
    return PrintBootstrapToken(existing);
  }
  VIGIL_RETURN_IF_ERROR(root.status());
  std::printf("initialized vigil root %s (catalog %s, incarnation %s)\n", root->path().c_str(),
              root->marker().catalog.c_str(), root->marker().incarnation.ToString().c_str());
  Status st = PrintBootstrapToken(*root);
  if (!st.ok())
    return st.WithContext("the root was created but no administrator token was issued (" + std::string(kBootstrapHint) +
                          ")");
  return Status::OK();
}

}  // namespace

void AddInitCommand(CLI::App* app, Context* ctx) {
  auto* sub = app->add_subcommand("init", "Create a new root (local catalog) in DIR (default: --root / $VIGIL_ROOT)");
  auto dir = std::make_shared<std::string>();
  auto bootstrap_token = std::make_shared<bool>(false);
  auto meta_url = std::make_shared<std::string>();
  sub->add_option("DIR", *dir, "Directory to create; must be missing or empty");
  sub->add_option("--meta-url", *meta_url,
                  "Keep the metadata in this PostgreSQL database (postgresql://user@host:port/db), shared by "
                  "several `vigil serve` nodes; written to vigil.toml [meta] url");
  sub->add_flag("--bootstrap-token", *bootstrap_token,
                "On an existing root: issue a token for administrator 'admin' when no enabled administrator exists");
  ctx->actions.emplace_back(sub, [ctx, dir, bootstrap_token, meta_url]() -> Status {
    std::string path = dir->empty() ? ctx->root_dir : *dir;
    if (path.empty()) return Status::InvalidArgument("no directory given: vigil init DIR (or --root DIR)");
    return InitRoot(path, *bootstrap_token, *meta_url);
  });
}

}  // namespace vigil::cli

// The web console's routes: GET /console (the page) and GET /console/{asset}, public
// (they hold no data and no secret; every datum the console shows comes from the API
// with the user's token), under a strict Content-Security-Policy: scripts, styles and
// connections from this origin only, no inline code, no framing.
#include "server/api_internal.h"
#include "server/console_assets.h"

namespace vigil::server {

namespace {

constexpr char kConsoleCsp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

HttpResponse Asset(std::string_view name) {
  std::optional<ConsoleAsset> asset = FindConsoleAsset(name);
  if (!asset) return ProblemResponse(404, "NOT_FOUND", "the console has no file " + std::string(name));
  HttpResponse r;
  r.headers.emplace_back("Content-Type", std::string(asset->content_type));
  r.headers.emplace_back("Content-Security-Policy", kConsoleCsp);
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.body = std::string(asset->body);
  return r;
}

}  // namespace

void ApiServer::Impl::AddConsoleRoutes() {
  Add({"GET", "/console", true, false, false, [](Call&) { return Asset("index.html"); }});
  Add({"GET", "/console/{asset}", true, false, false, [](Call& call) { return Asset(call.params.at("asset")); }});
}

}  // namespace vigil::server

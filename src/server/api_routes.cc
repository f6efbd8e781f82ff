// ApiRoutes (api_server.h): the route table of the HTTP API without serving it,
// built by the same registration code ApiServer::Start runs, so a test can hold
// the OpenAPI document to the router itself.
#include "server/api_internal.h"

namespace vigil::server {

Result<std::vector<ApiRoute>> ApiRoutes(const std::string& root_dir) {
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(root_dir));
  ApiServerOptions options;  // a named object: GCC 12 warns falsely of a temporary's strings
  ApiServer::Impl impl(std::move(options), std::move(root), Config{});
  impl.AddServiceRoutes();
  impl.AddSqlRoutes();
  impl.AddTableRoutes();
  impl.AddJobRoutes();
  impl.AddConsoleRoutes();
  std::vector<ApiRoute> out;
  for (const RouteSpec& spec : impl.routes_) {
    out.push_back(ApiRoute{spec.method, spec.pattern, spec.public_route, spec.mutating, spec.key_required});
  }
  return out;
}

}  // namespace vigil::server

// Routes of the HTTP API: a method and a path pattern ("/v1/jobs/{id}") to a
// handler that receives the request and the pattern's parameters. Dispatch
// answers 404 for an unknown path and 405 (with Allow) for a known path with
// another method. Errors are RFC 9457 problem documents carrying Vigil's typed
// code (StatusCode name, and the typed sub-code a message starts with, e.g.
// INDEX_FENCED), with the HTTP status that code maps to.
// Thread safety: Add before serving; Dispatch is thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/server/http_server.h"

namespace vigil::server {

using PathParams = std::map<std::string, std::string>;
using RouteHandler = std::function<HttpResponse(HttpRequest&, const PathParams&)>;

struct Route {
  std::string method;
  std::string pattern;  // segments; "{name}" matches one non-empty segment
  RouteHandler handler;
  std::vector<std::string> segments;  // the pattern's, split once by Add
};

// The route a request names, or the 404 / 405 answer when none does.
struct RouteMatch {
  const Route* route = nullptr;
  PathParams params;
  HttpResponse error;  // when route is null
};

class Router {
 public:
  void Add(std::string method, std::string pattern, RouteHandler handler);
  // The route matching the request's method and path.
  RouteMatch Find(const HttpRequest& req) const;
  // Runs the matching route; `matched` (may be null) gets the route's pattern or "" when none.
  HttpResponse Dispatch(HttpRequest& req, std::string* matched = nullptr) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// The HTTP status of a Status code (OK: 200).
int HttpStatusOf(StatusCode code);
// A problem+json response for `st` (not OK), with its typed code and sub-code.
HttpResponse ProblemResponse(const Status& st);
// A problem+json response with an explicit status and code.
HttpResponse ProblemResponse(int http_status, std::string_view code, std::string_view detail);
// A 200 (or `status`) application/json response.
HttpResponse JsonResponse(std::string body, int status = 200);

}  // namespace vigil::server

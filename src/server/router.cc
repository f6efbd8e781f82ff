#include "vigil/server/router.h"

#include <nlohmann/json.hpp>

#include "server/connection.h"
#include "vigil/sql/result.h"

namespace vigil::server {

namespace {

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const std::string_view seg =
        path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (!seg.empty()) out.push_back(seg);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

bool IsParam(std::string_view seg) { return seg.size() > 2 && seg.front() == '{' && seg.back() == '}'; }

// Whether the path's segments `got` match the route's; fills `params` when they do.
bool Match(const Route& route, const std::vector<std::string_view>& got, PathParams* params) {
  const std::vector<std::string>& want = route.segments;
  if (want.size() != got.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!IsParam(want[i]) && want[i] != got[i]) return false;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (IsParam(want[i])) (*params)[want[i].substr(1, want[i].size() - 2)] = std::string(got[i]);
  }
  return true;
}

}  // namespace

void Router::Add(std::string method, std::string pattern, RouteHandler handler) {
  std::vector<std::string> segments;
  for (std::string_view seg : Segments(pattern)) segments.emplace_back(seg);
  routes_.push_back(Route{std::move(method), std::move(pattern), std::move(handler), std::move(segments)});
}

RouteMatch Router::Find(const HttpRequest& req) const {
  RouteMatch m;
  std::string allow;
  const std::vector<std::string_view> got = Segments(req.path);
  for (const Route& r : routes_) {
    PathParams params;
    if (!Match(r, got, &params)) continue;
    if (r.method != req.method) {
      allow += (allow.empty() ? "" : ", ") + r.method;
      continue;
    }
    m.route = &r;
    m.params = std::move(params);
    return m;
  }
  if (!allow.empty()) {
    m.error = ProblemResponse(405, "METHOD_NOT_ALLOWED", req.method + " is not allowed on " + req.path);
    m.error.headers.emplace_back("Allow", allow);
    return m;
  }
  m.error = ProblemResponse(404, "NOT_FOUND", "no such resource: " + req.path);
  return m;
}

HttpResponse Router::Dispatch(HttpRequest& req, std::string* matched) const {
  RouteMatch m = Find(req);
  if (matched) *matched = m.route ? m.route->pattern : "";
  if (!m.route) return m.error;
  return m.route->handler(req, m.params);
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kDeadlineExceeded:
      return 408;
    case StatusCode::kAlreadyExists:
    case StatusCode::kCommitConflict:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kCancelled:
    case StatusCode::kStaleIncarnation:
      return 409;
    case StatusCode::kNotSupported:
      return 501;
    case StatusCode::kResourceExhausted:
    case StatusCode::kBusy:
      return 503;
    case StatusCode::kCorruption:
    case StatusCode::kIOError:
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

HttpResponse ProblemResponse(int http_status, std::string_view code, std::string_view detail) {
  HttpResponse r;
  r.status = http_status;
  r.headers.emplace_back("Content-Type", "application/problem+json");
  r.body = ProblemJson(http_status, code, detail);
  return r;
}

HttpResponse ProblemResponse(const Status& st) {
  const std::string sub(SubCodeOf(st.message()));
  // A body or a result past a bound is the client's to shrink: 413 / 422, where a retry cannot
  // help (no Retry-After).
  const bool exhausted = st.code() == StatusCode::kResourceExhausted;
  const int http = exhausted && sub == kBodyTooLarge          ? 413
                   : exhausted && sub == sql::kResultTooLarge ? 422
                                                              : HttpStatusOf(st.code());
  nlohmann::json j = nlohmann::json::parse(ProblemJson(http, StatusCodeName(st.code()), st.message()));
  if (!sub.empty()) j["subcode"] = sub;
  HttpResponse r;
  r.status = http;
  r.headers.emplace_back("Content-Type", "application/problem+json");
  if (http == 503) r.headers.emplace_back("Retry-After", "1");
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

HttpResponse JsonResponse(std::string body, int status) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

}  // namespace vigil::server

#include "vigil/server/router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vigil::server {
namespace {

using ::testing::HasSubstr;

class NoBody : public BodySource {
 public:
  Result<size_t> Read(char*, size_t) override { return size_t{0}; }
};

HttpRequest Req(std::string method, std::string path) {
  static NoBody none;
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.body = &none;
  return r;
}

TEST(RouterTest, MatchesPatternsAndAnswers404And405) {
  Router router;
  router.Add("GET", "/v1/jobs/{id}", [](HttpRequest&, const PathParams& p) { return JsonResponse(p.at("id")); });
  router.Add("POST", "/v1/jobs/{id}/cancel",
             [](HttpRequest&, const PathParams& p) { return JsonResponse("cancel " + p.at("id")); });
  auto r = Req("GET", "/v1/jobs/42");
  std::string matched;
  EXPECT_EQ(router.Dispatch(r, &matched).body, "42");
  EXPECT_EQ(matched, "/v1/jobs/{id}");
  auto c = Req("POST", "/v1/jobs/7/cancel");
  EXPECT_EQ(router.Dispatch(c).body, "cancel 7");
  auto wrong = Req("DELETE", "/v1/jobs/42");
  HttpResponse not_allowed = router.Dispatch(wrong);
  EXPECT_EQ(not_allowed.status, 405);
  EXPECT_EQ(not_allowed.headers.back(), (std::pair<std::string, std::string>{"Allow", "GET"}));
  auto missing = Req("GET", "/v1/nope");
  EXPECT_EQ(router.Dispatch(missing, &matched).status, 404);
  EXPECT_EQ(matched, "");
  auto deeper = Req("GET", "/v1/jobs/42/x");
  EXPECT_EQ(router.Dispatch(deeper).status, 404);
}

TEST(RouterTest, ProblemsCarryTheTypedCodeAndStatus) {
  HttpResponse fenced = ProblemResponse(Status::FailedPrecondition("INDEX_FENCED: index 'x' is held by job 3"));
  EXPECT_EQ(fenced.status, 409);
  auto j = nlohmann::json::parse(fenced.body);
  EXPECT_EQ(j["code"], "FAILED_PRECONDITION");
  EXPECT_EQ(j["subcode"], "INDEX_FENCED");
  EXPECT_EQ(j["status"], 409);
  EXPECT_THAT(j["detail"].get<std::string>(), HasSubstr("held by job 3"));
  EXPECT_EQ(ProblemResponse(Status::NotFound("x")).status, 404);
  EXPECT_EQ(ProblemResponse(Status::PermissionDenied("x")).status, 403);
  EXPECT_EQ(ProblemResponse(Status::DeadlineExceeded("x")).status, 408);
  EXPECT_EQ(ProblemResponse(Status::Busy("x")).status, 503);
  EXPECT_FALSE(nlohmann::json::parse(ProblemResponse(Status::NotFound("lower: case")).body).contains("subcode"));
}

}  // namespace
}  // namespace vigil::server

// The README's "Serving over HTTP" walk-through, as a new user runs it: the
// bootstrap token `vigil init` prints, a user created and granted ALTER on one
// database through POST /v1/sql, and, as that user, a table, an upload, an
// index through idempotent requests, its progress as events, and a query.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/serve_fixture.h"
#include "testutil/run_command.h"
#include "testutil/temp_dir.h"
#include "vigil/server/http_client.h"

namespace vigil {
namespace {

using Json = nlohmann::json;
using Headers = std::vector<std::pair<std::string, std::string>>;

std::string InitAndReadToken(const std::string& root) {
  const std::string cmd = "env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) + " init " + root + " 2>&1";
  const std::string out = testing::RunCommand(cmd).output;
  std::smatch m;
  static const std::regex kToken("vgl_[0-9a-f]{16}_[0-9a-f]{64}");
  return std::regex_search(out, m, kToken) ? m.str() : "";
}

TEST(ServeQuickstartTest, TheReadmeWalkThroughWorksForANewUser) {
  testing::TempDir dir;
  const std::string root = dir.Join("srv");
  const std::string admin = InitAndReadToken(root);
  ASSERT_FALSE(admin.empty()) << "vigil init printed no token";
  ServeProcess server(root);
  ASSERT_GT(server.port(), 0);
  auto client = server::HttpClient::Connect(server.url());
  ASSERT_TRUE(client.ok());
  auto call = [&](const std::string& method, const std::string& target, const std::string& token,
                  const std::string& body, Headers h = {}) {
    h.emplace_back("Authorization", "Bearer " + token);
    if (std::none_of(h.begin(), h.end(), [](const auto& p) { return p.first == "Content-Type"; })) {
      h.emplace_back("Content-Type", "application/json");
    }
    auto r = (*client)->Call(method, target, h, body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : server::ClientResponse{};
  };
  auto users = call(
      "POST", "/v1/sql", admin,
      Json{{"sql", "CREATE DATABASE shop; CREATE USER bob; GRANT ALTER ON shop.* TO bob"}, {"script", true}}.dump());
  ASSERT_EQ(users.status, 200) << users.body;
  const std::string bob = Json::parse(users.body)["results"][1]["rows"][0][1];
  ASSERT_EQ(bob.rfind("vgl_", 0), 0u);

  auto table = call("POST", "/v1/databases/shop/tables", bob,
                    Json{{"name", "items"},
                         {"columns",
                          {{{"name", "id"}, {"type", "BIGINT"}, {"not_null", true}},
                           {{"name", "emb"}, {"type", "VECTOR(FLOAT32, 4)"}, {"not_null", true}}}}}
                        .dump(),
                    {{"Idempotency-Key", "create-items"}});
  ASSERT_EQ(table.status, 201) << table.body;
  std::string csv = "id,emb\n";
  for (int i = 0; i < 300; ++i) {
    csv += std::to_string(i) + ",\"[" + std::to_string(i % 7) + ", " + std::to_string(i % 5) + ", " +
           std::to_string(i % 3) + ", 1]\"\n";
  }
  auto upload = call("POST", "/v1/databases/shop/tables/items/rows", bob, csv,
                     {{"Content-Type", "text/csv"}, {"Idempotency-Key", "upload-1"}});
  ASSERT_EQ(upload.status, 200) << upload.body;
  const Json index_body = {
      {"name", "emb_idx"},
      {"columns", {"emb"}},
      {"using", "ANN"},
      {"properties", {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", 8}, {"num_sub_vectors", 2}}}};
  auto index =
      call("POST", "/v1/databases/shop/tables/items/indexes", bob, index_body.dump(), {{"Idempotency-Key", "index-1"}});
  ASSERT_EQ(index.status, 202) << index.body;
  // The client lost the answer and retries: the same job, replayed, no second admission.
  auto retried =
      call("POST", "/v1/databases/shop/tables/items/indexes", bob, index_body.dump(), {{"Idempotency-Key", "index-1"}});
  EXPECT_EQ(retried.status, 202);
  EXPECT_EQ(retried.Header("idempotency-replayed"), "true");
  EXPECT_EQ(retried.Header("location"), index.Header("location"));
  std::string events;
  auto sse = server::HttpClient::Connect(server.url());
  ASSERT_TRUE(sse.ok());
  auto streamed = (*sse)->Stream(index.Header("location") + "/events", {{"Authorization", "Bearer " + bob}},
                                 [&](std::string_view data) {
                                   events.append(data);
                                   return events.find("event: end") == std::string::npos;
                                 });
  ASSERT_TRUE(streamed.ok());
  EXPECT_NE(events.find("\"State\":\"FINISHED\""), std::string::npos) << events;
  auto query = call("POST", "/v1/databases/shop/tables/items/query", bob,
                    Json{{"vector", {6, 4, 2, 1}}, {"column", "emb"}, {"k", 3}}.dump());
  ASSERT_EQ(query.status, 200) << query.body;
  // As the README shows: every column but the vector, then the distance.
  EXPECT_EQ(Json::parse(query.body)["columns"], Json({"id", "_distance"})) << query.body;
  const Json rows = Json::parse(query.body)["rows"];
  ASSERT_EQ(rows.size(), 3u);
  // (6, 4, 2, 1) is the vector of rows 104 and 209 exactly.
  const int64_t nearest = rows[0]["id"].get<int64_t>();
  EXPECT_TRUE(nearest == 104 || nearest == 209) << query.body;
  EXPECT_LT(rows[0]["_distance"].get<double>(), 1e-3);
  auto jobs = Json::parse(call("GET", "/v1/jobs?database=shop", bob, "").body);
  EXPECT_EQ(jobs["jobs"].size(), 1u);
}

}  // namespace
}  // namespace vigil

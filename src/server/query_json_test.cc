#include "server/query_json.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "server/api_internal.h"

namespace vigil::server {
namespace {

// The document the query route used to build, dumped as the route dumps it.
std::string ViaDocument(const sql::ResultSet& r) {
  nlohmann::json j = {{"rows", RowObjects(r)}, {"columns", r.columns}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TEST(QueryJsonTest, WritesTheSameBytesAsTheDocumentForEveryKindOfValue) {
  sql::ResultSet r;
  r.columns = {"id", "_distance", "emb", "name", "missing"};
  r.rows.push_back(
      {int64_t{1}, 0.25, sql::Blob{std::string("\x00\x01\xff", 3)}, std::string("plain"), std::monostate{}});
  r.rows.push_back({int64_t{-9'223'372'036'854'775'807} - 1, 1e300, sql::Blob{}, std::string("quote \" back \\ tab\t"),
                    std::monostate{}});
  r.rows.push_back({int64_t{0}, std::numeric_limits<double>::quiet_NaN(), sql::Blob{std::string("a")},
                    std::string("caf\xc3\xa9 \xff\xfe bad utf-8, nul \x01"), std::monostate{}});
  r.rows.push_back({int64_t{42}, -std::numeric_limits<double>::infinity(), sql::Blob{}, std::string(""), 3.0});
  EXPECT_EQ(RowsDocument(r), ViaDocument(r));
}

TEST(QueryJsonTest, KeysAreInByteOrderAndARepeatedColumnKeepsItsLastValue) {
  sql::ResultSet r;
  r.columns = {"b", "a", "B", "b", "\xc3\xa9", "a_"};
  r.rows.push_back({int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{6}});
  const std::string doc = RowsDocument(r);
  EXPECT_EQ(doc, ViaDocument(r));
  EXPECT_NE(doc.find("{\"B\":3,\"a\":2,\"a_\":6,\"b\":4,\"\xc3\xa9\":5}"), std::string::npos) << doc;
}

TEST(QueryJsonTest, AnEmptyResultIsAnEmptyListOfRows) {
  sql::ResultSet none;
  EXPECT_EQ(RowsDocument(none), "{\"columns\":[],\"rows\":[]}");
  EXPECT_EQ(RowsDocument(none), ViaDocument(none));
  sql::ResultSet columns_only;
  columns_only.columns = {"id"};
  EXPECT_EQ(RowsDocument(columns_only), ViaDocument(columns_only));
}

}  // namespace
}  // namespace vigil::server

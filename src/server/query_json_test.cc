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

TEST(QueryJsonTest, DoublesAreWrittenAsTheDocumentWritesThem) {
  sql::ResultSet r;
  r.columns = {"x", "y"};
  const double values[] = {0.0,
                           -0.0,
                           1.0,
                           -2.5,
                           100000.0,
                           1e15,
                           1e16,
                           123456789012345678.0,
                           1e-4,
                           1e-5,
                           0.1 + 0.2,
                           1.0 / 3.0,
                           5e-324,
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::signaling_NaN()};
  for (double x : values) r.rows.push_back({x, -x});
  EXPECT_EQ(RowsDocument(r), ViaDocument(r));
}

TEST(QueryJsonTest, ManyRowsOfUnequalSizeAreAllWritten) {
  sql::ResultSet r;
  r.columns = {"id", "text"};
  r.rows.push_back({int64_t{0}, std::string("")});
  for (int64_t i = 1; i < 300; ++i) r.rows.push_back({i * 1'000'003, std::string(static_cast<size_t>(i % 97), 'a')});
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

// A statement's result for POST /v1/sql: the bytes of the nlohmann document it replaces,
// with a vector's elements in their shortest form (nlohmann would print 0.1f's double).
TEST(QueryJsonTest, AResultDocumentIsTheDocumentItReplacedWithVectorsShortest) {
  sql::ResultSet r;
  r.columns = {"id", "score", "name", "raw", "emb"};
  r.rows.push_back(
      {int64_t{1}, 0.5, std::string("caf\xc3\xa9 \xff bad"), sql::Blob{std::string("\x01\xab")}, std::monostate{}});
  r.rows.push_back(
      {std::monostate{}, std::numeric_limits<double>::infinity(), std::string("q\"\\"), sql::Blob{}, std::monostate{}});
  r.message = "2 rows";
  r.notices = {"a notice"};
  r.warnings = {"a \"warning\""};
  r.admitted_jobs = {7, 9};
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back({1, 0.5, "caf\xc3\xa9 \xff bad", "x'01ab'", nullptr});
  rows.push_back({nullptr, nullptr, "q\"\\", "x''", nullptr});
  const nlohmann::json doc = {{"columns", r.columns}, {"rows", rows},           {"message", r.message},
                              {"notices", r.notices}, {"warnings", r.warnings}, {"admitted_jobs", r.admitted_jobs}};
  EXPECT_EQ(ResultDocument(r), doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));

  r.rows = {{int64_t{3}, 1.0, std::string(""), sql::Blob{}, sql::FloatVector{{0.1f, -2.0f}}}};
  const std::string with_vector = ResultDocument(r);
  EXPECT_NE(with_vector.find("\"rows\":[[3,1.0,\"\",\"x''\",[0.1,-2]]]"), std::string::npos) << with_vector;
  EXPECT_EQ(nlohmann::json::parse(with_vector)["rows"][0][4][0].get<double>(), 0.1);
}

}  // namespace
}  // namespace vigil::server

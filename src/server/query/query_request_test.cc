#include "server/query/query_request.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace vigil::server {
namespace {

// The statement of a body, or the error's message prefixed with "error: ".
std::string StatementOf(std::string_view body) {
  Result<QueryRequest> q = ParseQueryRequest(body);
  if (!q.ok()) return "error: " + q.status().message();
  Result<BoundQuery> s = QueryStatement("db.t", *q);
  return s.ok() ? s->sql : "error: " + s.status().message();
}

TEST(QueryRequestTest, AVectorElementIsTheShortestTextOfItsFloat32) {
  const auto text = [](double x) {
    std::string out = VectorText({x});
    return out.substr(1, out.size() - 2);
  };
  EXPECT_EQ(VectorText({0.5, -1}), "[0.5, -1]");
  EXPECT_EQ(text(0.1), "0.1");
  EXPECT_EQ(text(1.0 / 3.0), "0.33333334");
  EXPECT_EQ(text(-2.0), "-2");
  EXPECT_EQ(text(1e-7), "1e-07");
  // Each reads back as the FLOAT32 nearest the value.
  for (double x : {0.1, 1.0 / 3.0, 0.7000000001, -1e-7, 3.4e38, 1e-45}) {
    EXPECT_EQ(std::strtof(text(x).c_str(), nullptr), static_cast<float>(x)) << x;
  }
  // Past FLOAT32's range the double's own digits go on, for the engine to refuse.
  EXPECT_EQ(text(1e39), "1e+39");
  EXPECT_EQ(text(-1e300), "-1e+300");
}

TEST(QueryRequestTest, AnEmptyBodyOrObjectIsAScanOfAHundredRows) {
  EXPECT_EQ(StatementOf(""), "SELECT * FROM db.t LIMIT 100");
  EXPECT_EQ(StatementOf(" { } "), "SELECT * FROM db.t LIMIT 100");
  EXPECT_EQ(StatementOf(R"({"select": ["id", "_rowid"], "filter": "id > 3", "limit": 7})"),
            "SELECT id, _rowid FROM db.t WHERE (id > 3) LIMIT 7");
}

TEST(QueryRequestTest, TheDefaultSelectIsEveryColumnButTheVectorsThenTheSearchsOwn) {
  auto schema = Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                              {-1, "emb", DataType::Vector(VectorElement::kFloat32, 4), false},
                              {-1, "order", DataType::Of(TypeId::kString), true},
                              {-1, "h", DataType::Vector(VectorElement::kFloat16, 2), true}});
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  const auto select = [&](std::string_view body) {
    Result<QueryRequest> q = ParseQueryRequest(body);
    EXPECT_TRUE(q.ok()) << body;
    q->select = DefaultSelect(**schema, *q);
    return QueryStatement("db.t", *q)->sql;
  };
  EXPECT_EQ(select(R"({"column": "emb", "vector": [1, 2, 3, 4]})"),
            "SELECT \"id\", \"order\", _distance FROM vector_search('db.t', 'emb', ?1, 10, '{}')");
  EXPECT_EQ(select(R"({"column": "order", "text": "fox", "k": 3})"),
            "SELECT \"id\", \"order\", _score FROM fts_search('db.t', 'order', 'fox', 3)");
  EXPECT_EQ(select(R"({"limit": 5})"), "SELECT \"id\", \"order\" FROM db.t LIMIT 5");
  // A table of nothing but vectors answers them.
  auto vectors = Schema::Make({{-1, "emb", DataType::Vector(VectorElement::kFloat32, 4), false}});
  ASSERT_TRUE(vectors.ok());
  EXPECT_EQ(DefaultSelect(**vectors, QueryRequest{}), std::vector<std::string>{"*"});
}

TEST(QueryRequestTest, AVectorQueryBecomesAVectorSearchWithItsOptions) {
  EXPECT_EQ(StatementOf(R"({"vector": [0.5, -1, 2e-3, 3], "column": "emb", "k": 4, "nprobes": 20,
                            "refine_factor": 5, "use_index": false, "select": ["id", "_distance"]})"),
            "SELECT id, _distance FROM vector_search('db.t', 'emb', ?1, 4, "
            "'{\"nprobes\":20,\"refine_factor\":5,\"use_index\":false}')");
  EXPECT_EQ(StatementOf(R"({"column": "emb", "vector": [1]})"),
            "SELECT * FROM vector_search('db.t', 'emb', ?1, 10, '{}')");
  // The vector is bound as its FLOAT32 bytes (little-endian); a value past FLOAT32's range
  // is bound as text, for the engine to refuse with its message.
  Result<BoundQuery> bound = QueryStatement("db.t", *ParseQueryRequest(R"({"column": "e", "vector": [1, -2]})"));
  ASSERT_TRUE(bound.ok());
  ASSERT_EQ(bound->params.size(), 1u);
  EXPECT_EQ(std::get<sql::Blob>(bound->params[0]).bytes, std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
  bound = QueryStatement("db.t", *ParseQueryRequest(R"({"column": "e", "vector": [1, 1e39]})"));
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(std::get<std::string>(bound->params[0]), "[1, 1e+39]");
  Result<QueryRequest> q = ParseQueryRequest(R"({"vector": [0.1, 18446744073709551615, -7], "column": "e"})");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(*q->vector, (std::vector<double>{0.1, 18446744073709551615.0, -7.0}));
}

TEST(QueryRequestTest, ATextQueryBecomesAFullTextSearchWithItsTextQuoted) {
  EXPECT_EQ(StatementOf(R"({"text": "it's a fox", "column": "body", "k": 3, "filter": "year > 2000"})"),
            "SELECT * FROM fts_search('db.t', 'body', 'it''s a fox', 3) WHERE (year > 2000)");
  EXPECT_EQ(StatementOf(R"({"text": "nul \u0000 byte", "column": "body"})").rfind("error: ", 0), 0u);
}

TEST(QueryRequestTest, BodiesOfEverySizeParseAlikeOnOneThread) {
  // Small bodies share the thread's parser; one past 64 KiB gets its own. Each sees only itself.
  const std::string small = R"({"filter": "id > 3", "limit": 7})";
  const std::string large = R"({"filter": "id > 4",)" + std::string(70 * 1024, ' ') + R"("limit": 8})";
  const std::string small_sql = StatementOf(small);
  EXPECT_EQ(small_sql, "SELECT * FROM db.t WHERE (id > 3) LIMIT 7");
  EXPECT_EQ(StatementOf(large), "SELECT * FROM db.t WHERE (id > 4) LIMIT 8");
  EXPECT_EQ(StatementOf(small), small_sql);
  // A cut-short body after a good one is refused: nothing of the previous parse is left over.
  EXPECT_EQ(StatementOf(R"({"limit": 9)").rfind("error: the request body is not valid JSON", 0), 0u);
}

TEST(QueryRequestTest, MalformedBodiesAreRefusedNamingWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"k\": ", "not valid JSON"},
      {"{\"k\": 1} trailing", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"\"text\"", "must be a JSON object"},
      {R"({"vectr": [1]})", "unknown field \"vectr\""},
      {R"({"k": 1, "k": 2, "text": "a", "column": "b"})", "\"k\" appears twice"},
      {R"({"vector": [], "column": "e"})", "\"vector\" must be a non-empty array"},
      {R"({"vector": "1,2", "column": "e"})", "\"vector\" must be a non-empty array"},
      {R"({"vector": [1, "2"], "column": "e"})", "\"vector\" must contain only numbers"},
      {R"({"vector": [1, null], "column": "e"})", "\"vector\" must contain only numbers"},
      {R"({"vector": [1], "text": "a", "column": "e"})", "not both"},
      {R"({"vector": [1]})", "needs \"column\""},
      {R"({"vector": [1], "column": "e; DROP"})", "column name"},
      {R"({"vector": [1], "column": 5})", "\"column\" must be a string"},
      {R"({"vector": [1], "column": "e", "k": 0})", "\"k\" must be an integer in 1..10000"},
      {R"({"vector": [1], "column": "e", "k": 10001})", "\"k\" must be an integer in 1..10000"},
      {R"({"vector": [1], "column": "e", "k": 2.0})", "\"k\" must be an integer"},
      {R"({"vector": [1], "column": "e", "k": 99999999999999999999})", "not valid JSON"},
      {R"({"vector": [1], "column": "e", "k": 18446744073709551615})", "\"k\" must be an integer in 1..10000"},
      {R"({"vector": [1], "column": "e", "nprobes": 1000001})", "\"nprobes\" must be an integer in 1..1000000"},
      {R"({"vector": [1], "column": "e", "refine_factor": -1})", "\"refine_factor\" must be an integer"},
      {R"({"vector": [1], "column": "e", "use_index": 1})", "\"use_index\" must be true or false"},
      {R"({"vector": [1], "column": "e", "limit": 5})", "\"limit\" applies to a scan"},
      {R"({"text": "a", "column": "e", "nprobes": 5})", "\"nprobes\" applies to a vector query only"},
      {R"({"use_index": true})", "\"use_index\" applies to a vector query only"},
      {R"({"k": 5})", "\"k\" applies to a vector or text query"},
      {R"({"column": "e"})", "\"column\" applies to a vector or text query only"},
      {R"({"limit": 100001})", "\"limit\" must be an integer in 1..100000"},
      {R"({"filter": ""})", "\"filter\" must be a SQL expression"},
      {R"({"filter": 3})", "\"filter\" must be a string"},
      {R"({"filter": "id = ?"})", "\"filter\" cannot hold parameters"},
      {R"({"filter": "id = $1 OR id = 2"})", "\"filter\" cannot hold parameters"},
      {R"({"select": []})", "\"select\" must be a non-empty array"},
      {R"({"select": [1]})", "\"select\" must list column names"},
      {R"({"select": ["id", "a b"]})", "column name"},
      {"{\"text\": \"\xff\", \"column\": \"e\"}", "not valid JSON"},
  };
  // A long unknown name is quoted only in part, cut at a character boundary.
  const std::string long_name = std::string(63, 'a') + "\xc3\xa9" + std::string(100, 'b');
  Result<QueryRequest> long_field = ParseQueryRequest("{\"" + long_name + "\": 1}");
  ASSERT_FALSE(long_field.ok());
  EXPECT_NE(long_field.status().message().find("unknown field \"" + std::string(63, 'a') + "...\""), std::string::npos)
      << long_field.status().message();
  for (const auto& [body, expected] : cases) {
    Result<QueryRequest> q = ParseQueryRequest(body);
    Status st = q.ok() ? QueryStatement("db.t", *q).status() : q.status();
    ASSERT_FALSE(st.ok()) << body;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << body;
    EXPECT_NE(st.message().find(expected), std::string::npos) << body << " -> " << st.message();
  }
}

}  // namespace
}  // namespace vigil::server

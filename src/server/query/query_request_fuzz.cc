// Fuzz target for the query route's body (POST .../query): any bytes are either
// refused with InvalidArgument or read into a request within its bounds, whose
// SELECT (QueryStatement) is refused or, when it parses as one statement, is a
// SELECT: no body turns the route's statement into another kind. Nothing may
// crash, however deep or wide the document.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/query/query_request.h"
#include "vigil/common/status.h"
#include "vigil/sql/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vigil;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Result<server::QueryRequest> q = server::ParseQueryRequest(body);
  if (!q.ok()) {
    VIGIL_CHECK(q.status().code() == StatusCode::kInvalidArgument);
    return 0;
  }
  VIGIL_CHECK(q->k >= 1 && q->k <= 10'000);
  VIGIL_CHECK(q->limit >= 1 && q->limit <= 100'000);
  VIGIL_CHECK(!q->filter || !q->filter->empty());
  VIGIL_CHECK(!q->vector || !q->vector->empty());
  Result<server::BoundQuery> bound = server::QueryStatement("d.t", *q);
  if (!bound.ok()) {
    VIGIL_CHECK(bound.status().code() == StatusCode::kInvalidArgument);
    return 0;
  }
  Result<sql::Statement> stmt = sql::ParseStatement(bound->sql);
  if (stmt.ok()) VIGIL_CHECK(std::holds_alternative<sql::SelectStatement>(stmt->node));
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  out->push_back("");
  out->push_back("{}");
  out->push_back(R"j({"vector": [0.5, -1, 2e3, 1e-40], "column": "emb", "k": 5, "nprobes": 8,
                     "refine_factor": 2, "use_index": true, "filter": "price < 10", "select": ["id", "_distance"]})j");
  out->push_back(R"j({"text": "it's \"quoted\"", "column": "body", "k": 3, "filter": "id IN (1, 2)"})j");
  out->push_back(R"j({"filter": "a = 1) UNION SELECT * FROM d.u WHERE (1 = 1", "limit": 100000})j");
  out->push_back(R"j({"filter": "1); DROP TABLE d.t; --", "select": ["\"x\""]})j");
  out->push_back(R"j({"vector": [1e400], "column": "emb"})j");
  out->push_back(R"j({"k": 10001})j");
  out->push_back(R"j({"select": ["a", "a"], "select": []})j");
  out->push_back(std::string(70, '[') + std::string(70, ']'));
  std::string wide = "{\"vector\": [";
  for (int i = 0; i < 2000; ++i) wide += (i ? "," : "") + std::to_string(i * 0.25);
  out->push_back(wide + "], \"column\": \"emb\"}");
}

// Fuzz target for the SQL parser. Any input must either parse, with every
// statement printing to SQL that parses back equal and prints identically, or
// fail with InvalidArgument at a position inside the input whose line and
// column agree with its byte offset. Nothing may crash.
#include <cstdint>
#include <string>
#include <vector>

#include "vigil/sql/parser.h"

namespace {

using vigil::sql::SourcePos;

SourcePos PosOf(std::string_view s, size_t offset) {
  SourcePos p;
  p.offset = offset;
  for (size_t i = 0; i < offset && i < s.size(); ++i) {
    if (s[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      ++p.column;
    }
  }
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vigil::sql;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ParseError err;
  auto stmts = ParseScript(input, &err);
  if (!stmts.ok()) {
    VIGIL_CHECK(stmts.status().code() == vigil::StatusCode::kInvalidArgument);
    VIGIL_CHECK(err.pos.offset <= size);
    VIGIL_CHECK(err.pos == PosOf(input, err.pos.offset));
    VIGIL_CHECK(stmts.status().message() == err.ToStatus().message());
  } else {
    for (const Statement& s : *stmts) {
      VIGIL_CHECK(s.pos.offset + s.length <= size);
      std::string printed = ToSql(s);
      auto again = ParseStatement(printed);
      VIGIL_CHECK(again.ok());
      VIGIL_CHECK(*again == s);
      VIGIL_CHECK(ToSql(*again) == printed);
    }
  }
  auto toks = Tokenize(input);
  if (toks.ok()) {
    for (const Token& t : *toks) VIGIL_CHECK(input.substr(t.pos.offset, t.text.size()) == t.text);
  }
  (void)IsCompleteInput(input);
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  const char* kSeeds[] = {
      "CREATE DATABASE IF NOT EXISTS db; DROP DATABASE IF EXISTS db; SHOW DATABASES; SHOW TABLES FROM db",
      "CREATE TABLE IF NOT EXISTS local.db.docs (id BIGINT NOT NULL, category STRING NOT NULL, ts TIMESTAMP, "
      "price DECIMAL(18,4), emb VECTOR(FLOAT32, 128) NOT NULL)",
      "INSERT INTO db.t (a, b, c) VALUES (-1, 2.5e-3, 'it''s'), (NULL, TRUE, DATE '2024-01-01'), "
      "(TIMESTAMP '2024-01-01 00:00:00', '[0.1, 2]', FALSE)",
      "COPY db.t FROM 'x.csv' WITH (FORMAT csv); REFRESH TABLE db.t; DROP TABLE IF EXISTS db.t",
      "DELETE FROM t WHERE a IN (1, 2) AND NOT (b BETWEEN 1 AND 2) OR c IS NOT NULL",
      "UPDATE t SET a = a + 1, b = -(c * 2) WHERE d <> 'x' AND e NOT IN ('y')",
      "CREATE OR REPLACE INDEX emb_idx ON db.docs (emb) USING ANN PROPERTIES (\"index_type\" = \"IVF_PQ\", "
      "\"metric\" = \"l2\", \"num_partitions\" = \"256\", \"num_sub_vectors\" = \"16\")",
      "CREATE INDEX IF NOT EXISTS c ON t (category) USING BITMAP; DROP INDEX IF EXISTS c ON t; BUILD INDEX c ON t",
      "VACUUM t RETAIN 3 VERSIONS; VACUUM t OLDER THAN '7 days'; SHOW INDEX FROM t; SHOW KEYS FROM t",
      "SHOW INDEX JOBS FROM db WHERE TableName = \"tbl\" AND State = 'OUTCOME_UNKNOWN'; SHOW INDEX JOB 42",
      "CANCEL INDEX JOB 1; RESOLVE INDEX JOB 2 AS FORCE_RELEASE WITHOUT REFRESH COMMENT 'lost'; "
      "WAIT INDEX JOB 3 TIMEOUT 1.5",
      "EXPLAIN ANALYZE SELECT id, _distance FROM vector_search('db.docs', 'emb', '[0.1, 2]', 10) -- c\n;",
      "/* block */ SELECT `a`, \"b\", X'0A', ?1, :p FROM t WHERE a ->> '$.x' || 'y' >= 0x1F;",
  };
  for (const char* s : kSeeds) out->push_back(s);
}

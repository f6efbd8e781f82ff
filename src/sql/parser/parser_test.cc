#include "vigil/sql/parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "testutil/golden_runner.h"

namespace vigil::sql {
namespace {

template <typename T>
T ParseAs(std::string_view sql) {
  auto st = ParseStatement(sql);
  EXPECT_TRUE(st.ok()) << sql.substr(0, 200) << ": " << st.status().ToString();
  if (!st.ok()) return T{};
  const T* node = std::get_if<T>(&st->node);
  EXPECT_NE(node, nullptr) << sql.substr(0, 200) << " parsed as " << StatementName(st->node);
  return node ? *node : T{};
}

ParseError ErrorOf(std::string_view sql) {
  ParseError err;
  auto st = ParseScript(sql, &err);
  EXPECT_FALSE(st.ok()) << sql.substr(0, 200);
  if (!st.ok()) {
    EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.status().message(), "line " + std::to_string(err.pos.line) + ", column " +
                                         std::to_string(err.pos.column) + ": " + err.message);
  }
  return err;
}

// ---- tokenizer ----

TEST(TokenizeTest, KindsValuesAndPositions) {
  auto toks = Tokenize("SELECT \"a\"\"b\", 'it''s', `x`, 12, 1.5, .5, 1e-3, 0x1F, X'0aFF', ?2, :p\n  <> ->> ||;");
  ASSERT_TRUE(toks.ok()) << toks.status().ToString();
  std::vector<TokenKind> kinds;
  for (const Token& t : *toks) kinds.push_back(t.kind);
  using K = TokenKind;
  std::vector<TokenKind> want = {
      K::kWord,      K::kQuotedIdentifier, K::kOperator, K::kString,   K::kOperator, K::kQuotedIdentifier, K::kOperator,
      K::kInteger,   K::kOperator,         K::kDecimal,  K::kOperator, K::kDecimal,  K::kOperator,         K::kFloat,
      K::kOperator,  K::kInteger,          K::kOperator, K::kBlob,     K::kOperator, K::kParameter,        K::kOperator,
      K::kParameter, K::kOperator,         K::kOperator, K::kOperator, K::kOperator};
  EXPECT_EQ(kinds, want);
  EXPECT_EQ((*toks)[1].value, "a\"b");
  EXPECT_EQ((*toks)[1].text, "\"a\"\"b\"");
  EXPECT_EQ((*toks)[3].value, "it's");
  EXPECT_EQ((*toks)[5].value, "x");
  EXPECT_EQ((*toks)[17].value, "0aFF");
  const Token& ne = (*toks)[22];
  EXPECT_EQ(ne.text, "<>");
  EXPECT_EQ(ne.pos.line, 2u);
  EXPECT_EQ(ne.pos.column, 3u);
  EXPECT_EQ(ne.pos.offset,
            std::string_view("SELECT \"a\"\"b\", 'it''s', `x`, 12, 1.5, .5, 1e-3, 0x1F, X'0aFF', ?2, :p\n  ").size());
  EXPECT_EQ((*toks)[23].text, "->>");
  EXPECT_EQ((*toks)[24].text, "||");
}

TEST(TokenizeTest, CommentsAndUtf8Columns) {
  // 'é' is two bytes but one column.
  auto toks = Tokenize("-- line comment ; 'x\n/* block ; \n comment */ 'é' x -- tail");
  ASSERT_TRUE(toks.ok()) << toks.status().ToString();
  ASSERT_EQ(toks->size(), 2u);
  EXPECT_EQ((*toks)[0].value, "é");
  EXPECT_EQ((*toks)[0].pos.line, 3u);
  EXPECT_EQ((*toks)[0].pos.column, 13u);
  EXPECT_EQ((*toks)[1].pos.column, 17u);
  EXPECT_EQ((*toks)[1].pos.offset, (*toks)[0].pos.offset + 5);
}

TEST(TokenizeTest, LexicalErrorsNamePositions) {
  ParseError err;
  EXPECT_FALSE(Tokenize("SELECT\n  'abc", &err).ok());
  EXPECT_EQ(err.message, "unterminated string literal");
  EXPECT_EQ(err.pos.line, 2u);
  EXPECT_EQ(err.pos.column, 3u);
  EXPECT_EQ(err.pos.offset, 9u);

  EXPECT_FALSE(Tokenize("x = 12ab", &err).ok());
  EXPECT_EQ(err.message, "invalid number '12ab'");
  EXPECT_EQ(err.pos.column, 5u);

  EXPECT_FALSE(Tokenize("a ! b", &err).ok());
  EXPECT_EQ(err.message, "unexpected character '!'");
  EXPECT_EQ(err.pos.column, 3u);

  EXPECT_FALSE(Tokenize("VALUES (1, [0.5])", &err).ok());
  EXPECT_EQ(err.message, "unexpected character '[': a vector literal is written as a string, e.g. '[0.5, 0.25]'");
  EXPECT_EQ(err.pos.column, 12u);

  EXPECT_FALSE(Tokenize("'\xff'", &err).ok());
  EXPECT_EQ(err.message, "invalid UTF-8 in string literal");
  EXPECT_EQ(err.pos.column, 2u);

  EXPECT_FALSE(Tokenize("/* open", &err).ok());
  EXPECT_EQ(err.message, "unterminated comment");
  EXPECT_FALSE(Tokenize("1e+", &err).ok());
  EXPECT_EQ(err.message, "invalid number '1e+'");
}

TEST(TokenizeTest, IsCompleteInput) {
  EXPECT_FALSE(IsCompleteInput(""));
  EXPECT_FALSE(IsCompleteInput("SELECT 1"));
  EXPECT_TRUE(IsCompleteInput("SELECT 1;"));
  EXPECT_TRUE(IsCompleteInput("SELECT 1; -- done"));
  EXPECT_FALSE(IsCompleteInput("SELECT ';"));
  EXPECT_FALSE(IsCompleteInput("SELECT 1 /* ; "));
  EXPECT_TRUE(IsCompleteInput("SELECT 1 ! 2"));  // an error more input cannot fix
}

// ---- statements ----

TEST(ParserTest, DatabasesAndTables) {
  auto cd = ParseAs<CreateDatabaseStatement>("create database if not exists Cat.Db");
  EXPECT_TRUE(cd.if_not_exists);
  EXPECT_EQ(cd.name.catalog, "Cat");
  EXPECT_EQ(cd.name.database, "Db");
  auto dd = ParseAs<DropDatabaseStatement>("DROP DATABASE IF EXISTS db");
  EXPECT_TRUE(dd.if_exists);
  EXPECT_EQ(dd.name.database, "db");
  ParseAs<ShowDatabasesStatement>("SHOW DATABASES");
  EXPECT_FALSE(ParseAs<ShowTablesStatement>("SHOW TABLES").database.has_value());
  EXPECT_EQ(ParseAs<ShowTablesStatement>("SHOW TABLES FROM db").database->database, "db");

  auto ct = ParseAs<CreateTableStatement>(
      "CREATE TABLE IF NOT EXISTS local.db.docs (id BIGINT NOT NULL, price DECIMAL(18, 4), "
      "emb VECTOR(FLOAT16, 8) NOT NULL, name VARCHAR(20) NULL, ok BOOLEAN, d DATE, ts TIMESTAMP, "
      "f FLOAT, g DOUBLE, t TINYINT, s SMALLINT, i INT, \"select\" STRING)");
  EXPECT_TRUE(ct.if_not_exists);
  EXPECT_EQ(ct.table.catalog, "local");
  EXPECT_EQ(ct.table.database, "db");
  EXPECT_EQ(ct.table.table, "docs");
  ASSERT_EQ(ct.columns.size(), 13u);
  EXPECT_EQ(ct.columns[0].type, DataType::Of(TypeId::kInt64));
  EXPECT_TRUE(ct.columns[0].not_null);
  EXPECT_EQ(ct.columns[1].type, DataType::Decimal(18, 4));
  EXPECT_FALSE(ct.columns[1].not_null);
  EXPECT_EQ(ct.columns[2].type, DataType::Vector(VectorElement::kFloat16, 8));
  EXPECT_EQ(ct.columns[3].type, DataType::Of(TypeId::kString));
  EXPECT_EQ(ct.columns[3].type.max_length, 20u);
  EXPECT_EQ(ct.columns[4].type, DataType::Of(TypeId::kBool));
  EXPECT_EQ(ct.columns[6].type, DataType::Of(TypeId::kTimestamp));
  EXPECT_EQ(ct.columns[12].name, "select");
  EXPECT_EQ(ToSql(Statement{ct}),
            "CREATE TABLE IF NOT EXISTS local.db.docs (id BIGINT NOT NULL, price DECIMAL(18,4), "
            "emb VECTOR(FLOAT16, 8) NOT NULL, name VARCHAR(20), ok BOOL, d DATE, ts TIMESTAMP, f FLOAT, g DOUBLE, "
            "t TINYINT, s SMALLINT, i INT, `select` STRING)");
  EXPECT_TRUE(ParseAs<DropTableStatement>("drop table if exists t").if_exists);
  EXPECT_EQ(ParseAs<RefreshTableStatement>("REFRESH TABLE db.t").table.database, "db");
}

TEST(ParserTest, InsertKeepsTypedLiterals) {
  auto ins = ParseAs<InsertStatement>(
      "INSERT INTO db.t (a, b, c, d, e, f, g, h, i) VALUES (-12, 0.50, 1e-3, 'it''s', NULL, TRUE, "
      "DATE '2024-02-29', TIMESTAMP '2024-01-01 10:00:00', '[0.1, 2, -3e-2]'), (1, 2, 3, '', null, false, "
      "date '1970-01-01', timestamp '1970-01-01T00:00:00Z', '[]')");
  ASSERT_EQ(ins.rows.size(), 2u);
  EXPECT_EQ(ins.columns.size(), 9u);
  const auto& r = ins.rows[0];
  EXPECT_EQ(r[0], Literal::Number(Literal::Kind::kInteger, "-12"));
  EXPECT_EQ(r[1], Literal::Number(Literal::Kind::kDecimal, "0.50"));
  EXPECT_EQ(r[2], Literal::Number(Literal::Kind::kFloat, "1e-3"));
  EXPECT_EQ(r[3], Literal::String("it's"));
  EXPECT_EQ(r[4], Literal::Null());
  EXPECT_EQ(r[5], Literal::Bool(true));
  EXPECT_EQ(r[6].kind, Literal::Kind::kDate);
  EXPECT_EQ(r[6].text, "2024-02-29");
  EXPECT_EQ(r[7].kind, Literal::Kind::kTimestamp);
  EXPECT_EQ(r[8], Literal::String("[0.1, 2, -3e-2]"));  // vectors stay strings; coerced by column type
  EXPECT_EQ(ins.rows[1][5], Literal::Bool(false));
}

TEST(ParserTest, InsertErrors) {
  ParseError e = ErrorOf("INSERT INTO t (a, b) VALUES (1, 2), (3)");
  EXPECT_EQ(e.message, "row 2 has 1 values, expected 2");
  EXPECT_EQ(e.pos.column, 37u);
  e = ErrorOf("INSERT INTO t VALUES (1, 2), (3)");
  EXPECT_EQ(e.message, "row 2 has 1 values, expected 2");
  e = ErrorOf("INSERT INTO t VALUES (DATE '2024-02-30')");
  EXPECT_EQ(e.pos.column, 28u);
  EXPECT_EQ(e.message.rfind("invalid DATE literal: '2024-02-30' is not a DATE", 0), 0u) << e.message;
  e = ErrorOf("INSERT INTO t VALUES (a)");
  EXPECT_EQ(e.message, "expected a literal, found a");
  e = ErrorOf("INSERT INTO t VALUES (0x10)");
  EXPECT_EQ(e.message, "hexadecimal numbers are not supported here");
}

TEST(ParserTest, CopyDeleteUpdate) {
  auto cp = ParseAs<CopyStatement>("COPY db.t FROM '/data/x.fvecs' WITH (FORMAT fvecs)");
  EXPECT_EQ(cp.path, "/data/x.fvecs");
  EXPECT_EQ(cp.format, CopyFormat::kFvecs);
  EXPECT_FALSE(ParseAs<CopyStatement>("COPY t FROM 'a.csv'").format.has_value());
  EXPECT_EQ(ParseAs<CopyStatement>("COPY t FROM 'a' WITH (FORMAT 'ndjson')").format, CopyFormat::kJsonl);
  EXPECT_EQ(ErrorOf("COPY t FROM 'a' WITH (FORMAT parquet)").message,
            "unknown COPY format parquet: expected csv, jsonl, fvecs or npy");

  auto del = ParseAs<DeleteStatement>("DELETE FROM t WHERE id IN (1, 2, 3) AND NOT (x BETWEEN 1 AND 5)");
  ASSERT_TRUE(del.where.has_value());
  EXPECT_EQ(del.where->kind, ExprKind::kBinary);
  EXPECT_EQ(del.where->op, BinaryOp::kAnd);
  ASSERT_EQ(del.where->args.size(), 2u);
  EXPECT_EQ(del.where->args[0].kind, ExprKind::kIn);
  EXPECT_EQ(del.where->args[0].args.size(), 4u);
  EXPECT_EQ(del.where->args[1].kind, ExprKind::kNot);
  EXPECT_EQ(del.where->args[1].args[0].kind, ExprKind::kBetween);
  EXPECT_FALSE(ParseAs<DeleteStatement>("DELETE FROM t").where.has_value());

  auto up = ParseAs<UpdateStatement>("UPDATE t SET a = a + 1, b = 'x' WHERE c IS NOT NULL");
  ASSERT_EQ(up.assignments.size(), 2u);
  EXPECT_EQ(up.assignments[0].column, "a");
  EXPECT_EQ(up.assignments[0].value.op, BinaryOp::kAdd);
  EXPECT_EQ(up.where->kind, ExprKind::kIsNull);
  EXPECT_TRUE(up.where->negated);
  EXPECT_EQ(ErrorOf("UPDATE t SET a = 1, A = 2").message, "column A is assigned twice");
}

TEST(ParserTest, ExpressionPrecedence) {
  auto del = ParseAs<DeleteStatement>("DELETE FROM t WHERE a = 1 OR b = 2 AND NOT c IS NULL OR d < -e * 2 + 3");
  const Expr& w = *del.where;
  ASSERT_EQ(w.op, BinaryOp::kOr);
  ASSERT_EQ(w.args.size(), 3u);  // OR is n-ary
  EXPECT_EQ(w.args[1].op, BinaryOp::kAnd);
  EXPECT_EQ(w.args[1].args[1].kind, ExprKind::kNot);
  EXPECT_EQ(w.args[1].args[1].args[0].kind, ExprKind::kIsNull);
  const Expr& lt = w.args[2];
  EXPECT_EQ(lt.op, BinaryOp::kLt);
  EXPECT_EQ(lt.args[1].op, BinaryOp::kAdd);
  EXPECT_EQ(lt.args[1].args[0].op, BinaryOp::kMul);
  EXPECT_EQ(lt.args[1].args[0].args[0].kind, ExprKind::kNegate);
  EXPECT_EQ(ToSql(w), "a = 1 OR b = 2 AND NOT c IS NULL OR d < -e * 2 + 3");
  // Explicit grouping survives printing; redundant parentheses do not.
  EXPECT_EQ(ToSql(*ParseAs<DeleteStatement>("DELETE FROM t WHERE (a OR b) AND ((c))").where), "(a OR b) AND c");
  EXPECT_EQ(ToSql(*ParseAs<DeleteStatement>("DELETE FROM t WHERE a - (b - c) = - -1").where), "a - (b - c) = -(-1)");
  EXPECT_EQ(ErrorOf("DELETE FROM t WHERE a = b = c").message, "expected end of statement, found '='");
  EXPECT_EQ(ErrorOf("DELETE FROM t WHERE a NOT LIKE 'x'").message, "expected IN or BETWEEN after NOT, found LIKE");
  EXPECT_EQ(ErrorOf("DELETE FROM t WHERE a IN ()").message, "expected an expression, found ')'");
}

TEST(ParserTest, CreateIndex) {
  auto ci = ParseAs<CreateIndexStatement>(
      "CREATE INDEX emb_idx ON db.docs (emb) USING ANN PROPERTIES (\"index_type\" = \"IVF_PQ\", "
      "'metric' = 'l2', \"num_partitions\" = \"256\")");
  EXPECT_EQ(ci.name, "emb_idx");
  EXPECT_EQ(ci.table.database, "db");
  EXPECT_EQ(ci.columns, std::vector<std::string>{"emb"});
  EXPECT_EQ(ci.method, IndexMethod::kAnn);
  ASSERT_EQ(ci.properties.size(), 3u);
  EXPECT_EQ(ci.properties[1].key, "metric");
  EXPECT_EQ(ci.properties[1].value, "l2");
  EXPECT_FALSE(ci.or_replace);
  auto rep = ParseAs<CreateIndexStatement>("create or replace index i on t (a, b) using fts");
  EXPECT_TRUE(rep.or_replace);
  EXPECT_EQ(rep.method, IndexMethod::kFts);
  EXPECT_EQ(rep.columns.size(), 2u);
  EXPECT_TRUE(ParseAs<CreateIndexStatement>("CREATE INDEX IF NOT EXISTS i ON t (a) USING BITMAP").if_not_exists);

  ParseError e = ErrorOf("CREATE OR REPLACE INDEX IF NOT EXISTS i ON t (a) USING BTREE");
  EXPECT_EQ(e.message, "IF NOT EXISTS and OR REPLACE cannot be used together");
  EXPECT_EQ(e.pos.column, 25u);
  EXPECT_EQ(e.pos.offset, 24u);
  e = ErrorOf("CREATE INDEX i ON t (a)");
  EXPECT_EQ(e.message, "expected USING, found end of input");
  EXPECT_EQ(e.pos.column, 24u);
  e = ErrorOf("CREATE INDEX i ON t (a) PROPERTIES (\"a\" = \"b\");");
  EXPECT_EQ(e.message, "expected USING, found PROPERTIES");
  e = ErrorOf("CREATE INDEX i ON t (a) USING HASH");
  EXPECT_EQ(e.message, "expected ANN, BTREE, BITMAP or FTS, found HASH");
  e = ErrorOf("CREATE INDEX i ON t (a) USING ANN PROPERTIES (\"k\" = \"1\", \"K\" = \"2\")");
  EXPECT_EQ(e.message, "duplicate property \"K\"");
  EXPECT_EQ(e.pos.column, 58u);
  e = ErrorOf("CREATE INDEX i ON t (a) USING ANN PROPERTIES (k = \"1\")");
  EXPECT_EQ(e.message, "expected property name in quotes, found k");
}

TEST(ParserTest, IndexMaintenanceAndJobs) {
  auto di = ParseAs<DropIndexStatement>("DROP INDEX IF EXISTS i ON db.t");
  EXPECT_TRUE(di.if_exists);
  EXPECT_EQ(di.name, "i");
  EXPECT_EQ(ParseAs<BuildIndexStatement>("BUILD INDEX i ON db.t").table.table, "t");
  EXPECT_EQ(ParseAs<VacuumStatement>("VACUUM t RETAIN 3 VERSIONS").retain_versions, 3);
  EXPECT_EQ(ParseAs<VacuumStatement>("VACUUM t OLDER THAN '7 days'").older_than, "7 days");
  auto plain = ParseAs<VacuumStatement>("VACUUM t");
  EXPECT_FALSE(plain.retain_versions || plain.older_than);
  EXPECT_EQ(ErrorOf("VACUUM t RETAIN 0 VERSIONS").message, "number of versions must be positive");

  for (const char* s : {"SHOW INDEX FROM db.t", "SHOW INDEXES FROM db.t", "show keys from db.t"}) {
    EXPECT_EQ(ParseAs<ShowIndexStatement>(s).table.database, "db") << s;
  }
  auto jobs = ParseAs<ShowIndexJobsStatement>("SHOW INDEX JOBS FROM db WHERE TableName = \"tbl\" AND State = 'X'");
  EXPECT_EQ(jobs.database->database, "db");
  ASSERT_TRUE(jobs.where.has_value());
  EXPECT_TRUE(jobs.where->args[0].args[1].double_quoted);
  EXPECT_EQ(jobs.where->args[0].args[1].column, "tbl");
  EXPECT_EQ(ParseAs<ShowIndexJobStatement>("SHOW INDEX JOB 42").job_id, 42);
  EXPECT_EQ(ParseAs<CancelIndexJobStatement>("CANCEL INDEX JOB 7").job_id, 7);
  auto res = ParseAs<ResolveIndexJobStatement>(
      "RESOLVE INDEX JOB 42 AS FORCE_RELEASE WITHOUT REFRESH COMMENT 'worker host lost; accepted'");
  EXPECT_EQ(res.action, ResolveAction::kForceRelease);
  EXPECT_TRUE(res.without_refresh);
  EXPECT_EQ(res.comment, "worker host lost; accepted");
  EXPECT_EQ(ParseAs<ResolveIndexJobStatement>("RESOLVE INDEX JOB 1 AS ACKNOWLEDGED COMMENT 'ok'").action,
            ResolveAction::kAcknowledged);
  EXPECT_EQ(ErrorOf("RESOLVE INDEX JOB 1 AS ACKNOWLEDGED WITHOUT REFRESH COMMENT 'x'").message,
            "WITHOUT REFRESH applies only to FORCE_RELEASE");
  EXPECT_EQ(ErrorOf("RESOLVE INDEX JOB 1 AS FORCE_RELEASE").message, "expected COMMENT, found end of input");
  EXPECT_EQ(ParseAs<WaitIndexJobStatement>("WAIT INDEX JOB 3 TIMEOUT 1.5").timeout_seconds, 1.5);
  EXPECT_FALSE(ParseAs<WaitIndexJobStatement>("WAIT INDEX JOB 3").timeout_seconds.has_value());
  EXPECT_EQ(ErrorOf("SHOW INDEX JOB 0").message, "job id must be positive");
  EXPECT_EQ(ErrorOf("SHOW INDEX JOB 9223372036854775808").message, "job id 9223372036854775808 is out of range");
  EXPECT_EQ(ErrorOf("CANCEL INDEX JOB x").message, "expected job id, found x");
}

TEST(ParserTest, SelectKeepsTextAndTokens) {
  const std::string sql =
      "  -- lead\nSELECT id, _distance FROM vector_search('db.docs', 'emb', '[0.1; 2]', 10)\n"
      "  WHERE category = 'news' /* c */ ;\nEXPLAIN ANALYZE select 1";
  auto stmts = ParseScript(sql);
  ASSERT_TRUE(stmts.ok()) << stmts.status().ToString();
  ASSERT_EQ(stmts->size(), 2u);
  const auto& sel = std::get<SelectStatement>((*stmts)[0].node);
  EXPECT_EQ(sel.text,
            "SELECT id, _distance FROM vector_search('db.docs', 'emb', '[0.1; 2]', 10)\n  WHERE category = 'news'");
  EXPECT_EQ(sel.text_offset, 10u);
  EXPECT_EQ((*stmts)[0].pos.line, 2u);
  EXPECT_EQ((*stmts)[0].length, sel.text.size());
  for (const Token& t : sel.tokens) {
    EXPECT_EQ(sel.text.substr(t.pos.offset - sel.text_offset, t.text.size()), t.text);
  }
  EXPECT_EQ(sel.tokens.back().value, "news");
  const auto& ex = std::get<ExplainStatement>((*stmts)[1].node);
  EXPECT_TRUE(ex.analyze);
  EXPECT_EQ(ex.select.text, "select 1");
  EXPECT_EQ(ToSql((*stmts)[1]), "EXPLAIN ANALYZE select 1");
  EXPECT_EQ(ErrorOf("EXPLAIN DELETE FROM t").message, "expected SELECT, found DELETE");
}

TEST(ParserTest, ScriptsAndStatementBoundaries) {
  auto stmts = ParseScript(";; SHOW DATABASES ;\n;INSERT INTO t VALUES ('a;b') -- x;\n; /* only */");
  ASSERT_TRUE(stmts.ok()) << stmts.status().ToString();
  ASSERT_EQ(stmts->size(), 2u);
  EXPECT_EQ((*stmts)[1].pos.line, 2u);
  EXPECT_EQ((*stmts)[1].pos.column, 2u);
  EXPECT_EQ(ToSql((*stmts)[1]), "INSERT INTO t VALUES ('a;b')");
  EXPECT_TRUE(ParseScript("  -- nothing\n").value().empty());

  ParseError e;
  EXPECT_FALSE(ParseStatement("  ", &e).ok());
  EXPECT_EQ(e.message, "expected a statement, found end of input");
  EXPECT_EQ(e.pos.column, 3u);
  EXPECT_FALSE(ParseStatement("SHOW TABLES; SHOW DATABASES", &e).ok());
  EXPECT_EQ(e.message, "expected one statement, found a second SHOW DATABASES");
  EXPECT_EQ(e.pos.column, 14u);
  EXPECT_TRUE(ParseStatement("SHOW TABLES;").ok());

  // Statements before an error are delivered before the error.
  ScriptParser sp("SHOW TABLES; SHOW NOTHING; SHOW DATABASES");
  auto first = sp.Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  auto second = sp.Next();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(),
            "line 1, column 19: expected DATABASES, TABLES, INDEX, INDEXES, KEYS, VERSIONS, GENERATIONS, USERS, GRANTS "
            "or NODES, found NOTHING");
  EXPECT_FALSE(sp.Next().ok());
  ASSERT_TRUE(sp.error().has_value());
  EXPECT_EQ(sp.error()->pos.offset, 18u);
}

TEST(ParserTest, ErrorPositionsAcrossLines) {
  ParseError e = ErrorOf("SHOW TABLES;\nCREATE TABLE db.t (\n  a INT,\n  b NUMBER\n)");
  EXPECT_EQ(e.pos.line, 4u);
  EXPECT_EQ(e.pos.column, 5u);
  EXPECT_EQ(e.pos.offset, 46u);
  EXPECT_NE(e.message.find("invalid column type NUMBER"), std::string::npos) << e.message;
  e = ErrorOf("CREATE TABLE t (a VECTOR(FLOAT64, 4))");
  EXPECT_EQ(e.pos.column, 19u);
  e = ErrorOf("CREATE TABLE");
  EXPECT_EQ(e.message, "expected table name, found end of input");
  EXPECT_EQ(e.pos.column, 13u);
  e = ErrorOf("CREATE TABLE t (a INT,)");
  EXPECT_EQ(e.message, "expected column name, found ')'");
  e = ErrorOf("DROP TABLE a.b.c.d");
  EXPECT_EQ(e.message, "a table name has at most three parts: catalog.database.table");
  e = ErrorOf("FROB t");
  EXPECT_EQ(e.message, "expected a statement, found FROB");
  e = ErrorOf("DROP TABLE t;\nDROP TABLE select");
  EXPECT_EQ(e.message, "expected table name, found select");
  EXPECT_EQ(e.pos.line, 2u);
  EXPECT_EQ(e.pos.column, 12u);
  e = ErrorOf("DROP TABLE ``");
  EXPECT_EQ(e.message, "empty quoted identifier");
}

// ---- bounds: an error naming the bound, never truncation ----

TEST(ParserBoundsTest, Identifiers) {
  std::string ok(kMaxIdentifierBytes, 'a');
  EXPECT_EQ(ParseAs<DropTableStatement>("DROP TABLE " + ok).table.table, ok);
  ParseError e = ErrorOf("DROP TABLE " + ok + "b");
  EXPECT_EQ(e.message, "identifier exceeds 256 bytes");
  EXPECT_EQ(e.pos.column, 12u);
  e = ErrorOf("DROP TABLE \"" + ok + "b\"");
  EXPECT_EQ(e.message, "identifier exceeds 256 bytes");
  e = ErrorOf("DROP TABLE `" + ok + "b`");
  EXPECT_EQ(e.message, "quoted identifier exceeds 256 bytes");
}

TEST(ParserBoundsTest, StringsAndStatements) {
  // The largest string that fits in a statement; one byte more than the
  // string bound fails on the string, not on the statement.
  std::string big(kMaxStatementBytes - 25, 'x');
  auto ins = ParseAs<InsertStatement>("INSERT INTO t VALUES ('" + big + "')");
  ASSERT_EQ(ins.rows.size(), 1u);
  EXPECT_EQ(ins.rows[0][0].text, big);
  EXPECT_EQ(ErrorOf("INSERT INTO t VALUES ('" + big + "x')").message, "statement exceeds 1048576 bytes");
  ParseError e = ErrorOf("INSERT INTO t VALUES ('" + std::string(kMaxStringLiteralBytes + 1, 'x') + "')");
  EXPECT_EQ(e.message, "string literal exceeds 1048576 bytes");
  EXPECT_EQ(e.pos.column, 23u);

  std::string values = "INSERT INTO t VALUES (1)";
  while (values.size() <= kMaxStatementBytes) values += ", (1)";
  e = ErrorOf("SHOW TABLES; " + values);
  EXPECT_EQ(e.message, "statement exceeds 1048576 bytes");
  EXPECT_EQ(e.pos.column, 14u);
}

TEST(ParserBoundsTest, Nesting) {
  auto nested = [](int n) {
    return "DELETE FROM t WHERE " + std::string(static_cast<size_t>(n), '(') + "a" +
           std::string(static_cast<size_t>(n), ')');
  };
  EXPECT_TRUE(ParseStatement(nested(kMaxNestingDepth)).ok());
  ParseError e = ErrorOf(nested(kMaxNestingDepth + 1));
  EXPECT_EQ(e.message, "parentheses nest deeper than 64");
  EXPECT_EQ(e.pos.column, 21u + kMaxNestingDepth);

  std::string nots = "DELETE FROM t WHERE ";
  for (int i = 0; i < 100000; ++i) nots += "NOT ";
  e = ErrorOf(nots + "a");
  EXPECT_EQ(e.message, "expression nesting depth exceeds 64");

  std::string sum = "DELETE FROM t WHERE a";
  for (int i = 0; i < kMaxNestingDepth; ++i) sum += " + 1";
  e = ErrorOf(sum);
  EXPECT_EQ(e.message, "expression nesting depth exceeds 64");
  // AND / OR chains are flat, so long conjunctions are fine.
  std::string conj = "DELETE FROM t WHERE a = 1";
  for (int i = 0; i < 5000; ++i) conj += " AND a = 1";
  auto del = ParseAs<DeleteStatement>(conj);
  EXPECT_EQ(del.where->args.size(), 5001u);
}

TEST(ParserBoundsTest, Properties) {
  auto props = [](size_t n) {
    std::string s = "CREATE INDEX i ON t (a) USING ANN PROPERTIES (";
    for (size_t i = 0; i < n; ++i) s += (i ? ", \"k" : "\"k") + std::to_string(i) + "\" = \"v\"";
    return s + ")";
  };
  EXPECT_EQ(ParseAs<CreateIndexStatement>(props(kMaxProperties)).properties.size(), kMaxProperties);
  EXPECT_EQ(ErrorOf(props(kMaxProperties + 1)).message, "PROPERTIES exceed 64 entries");
  std::string cols = "CREATE INDEX i ON t (";
  for (size_t i = 0; i <= kMaxIndexColumns; ++i) cols += (i ? ", c" : "c") + std::to_string(i);
  EXPECT_EQ(ErrorOf(cols + ") USING BTREE").message, "index columns exceed 64 columns");
}

// ---- golden files ----

using testing::FormatGoldenError;
using testing::GoldenRecord;

std::string RunParseRecord(const std::string& input) {
  ParseError err;
  auto stmts = ParseScript(input, &err);
  if (!stmts.ok()) {
    return FormatGoldenError(std::string(StatusCodeName(err.code)), err.pos.line, err.pos.column, err.message);
  }
  std::string out;
  for (const Statement& s : *stmts) {
    if (!out.empty()) out += '\n';
    out += ToSql(s);
  }
  return out;
}

// The canonical form of the statements of a record that parses is a fixed point.
void ExpectFixedPoint(const GoldenRecord& r, const std::string& printed) {
  auto stmts = ParseScript(r.input).value();
  std::string script;
  for (const Statement& s : stmts) script += ToSql(s) + ";\n";
  auto again = ParseScript(script);
  ASSERT_TRUE(again.ok()) << script << ": " << again.status().ToString();
  EXPECT_EQ(*again, stmts) << "line " << r.line;
  EXPECT_EQ(RunParseRecord(script), printed) << "line " << r.line;
}

class ParseGoldenTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(ParseGoldenTest, Matches) {
  size_t records = testing::RunGoldenFile(GetParam(), [](const GoldenRecord& r) -> std::optional<std::string> {
    EXPECT_EQ(r.directive, "parse") << "line " << r.line;
    std::string actual = RunParseRecord(r.input);
    if (actual.rfind("error: ", 0) != 0) ExpectFixedPoint(r, actual);
    return actual;
  });
  EXPECT_GT(records, 5u);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ParseGoldenTest);
INSTANTIATE_TEST_SUITE_P(Parse, ParseGoldenTest,
                         ::testing::ValuesIn(testing::GoldenFiles(std::filesystem::path(VIGIL_SQL_TESTDATA_DIR) /
                                                                  "parse")),
                         testing::GoldenFileName);

}  // namespace
}  // namespace vigil::sql

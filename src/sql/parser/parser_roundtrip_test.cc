// Property tests: random syntax trees print to SQL that parses back to an
// equal tree; a corpus reaches a print/parse fixed point; token soup either
// parses to a fixed point or fails at a position consistent with its offset.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <filesystem>

#include "testutil/golden.h"
#include "vigil/sql/parser.h"

namespace vigil::sql {
namespace {

std::string GenWord() {
  static const std::vector<std::string> kPool = {"a",           "b",         "Col_1", "_x",        "docs",   "emb",
                                                 "select",      "Index",     "from",  "my name",   "tick`s", "quote\"d",
                                                 "caf\xc3\xa9", "123abc",    "date",  "timestamp", "jobs",   "NULL",
                                                 "x",           "TableName", "where", "ann"};
  if (*rc::gen::inRange(0, 4) == 0) {
    auto chars = rc::gen::elementOf(std::string("abcXYZ_019 $`\"'"));
    std::string s = *rc::gen::resize(12, rc::gen::nonEmpty(rc::gen::container<std::string>(chars)));
    return s;
  }
  return *rc::gen::elementOf(kPool);
}

std::string GenText() {
  static const std::string kChars = std::string("abc XYZ 019;'\"`-/*\n\t,()[]{}.") + std::string(1, '\0');
  std::string s = *rc::gen::resize(20, rc::gen::container<std::string>(rc::gen::elementOf(kChars)));
  if (*rc::gen::inRange(0, 5) == 0) s += "\xe2\x82\xac";  // a multi-byte character
  return s;
}

std::string GenDigits(int max_len) {
  return *rc::gen::resize(
      max_len, rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::elementOf(std::string("0123456789")))));
}

TableRef GenTable() {
  TableRef t;
  t.table = GenWord();
  int parts = *rc::gen::inRange(1, 4);
  if (parts >= 2) t.database = GenWord();
  if (parts == 3) t.catalog = GenWord();
  return t;
}

DatabaseName GenDatabase() {
  DatabaseName d;
  d.database = GenWord();
  if (*rc::gen::arbitrary<bool>()) d.catalog = GenWord();
  return d;
}

Literal GenLiteral() {
  std::string sign = *rc::gen::arbitrary<bool>() ? "-" : "";
  switch (*rc::gen::inRange(0, 8)) {
    case 0:
      return Literal::Null();
    case 1:
      return Literal::Bool(*rc::gen::arbitrary<bool>());
    case 2:
      return Literal::Number(Literal::Kind::kInteger, sign + GenDigits(20));
    case 3: {
      int form = *rc::gen::inRange(0, 3);
      std::string text = form == 0   ? GenDigits(6) + "." + GenDigits(6)
                         : form == 1 ? "." + GenDigits(4)
                                     : GenDigits(4) + ".";
      return Literal::Number(Literal::Kind::kDecimal, sign + text);
    }
    case 4: {
      std::string exp = *rc::gen::elementOf(std::vector<std::string>{"e", "E", "e-", "e+"});
      return Literal::Number(Literal::Kind::kFloat, sign + GenDigits(3) + exp + GenDigits(3));
    }
    case 5:
      return Literal::String(GenText());
    case 6:
      return Literal{Literal::Kind::kDate,
                     *rc::gen::elementOf(std::vector<std::string>{"2024-02-29", "1970-01-01", "0001-01-01"}), false};
    default:
      return Literal{Literal::Kind::kTimestamp,
                     *rc::gen::elementOf(std::vector<std::string>{"2024-01-01 10:00:00", "1970-01-01T00:00:00Z",
                                                                  "2000-12-31 23:59:59.123456"}),
                     false};
  }
}

Expr GenExpr(int depth) {
  int kind = *rc::gen::inRange(0, depth > 0 ? 9 : 2);
  Expr e;
  switch (kind) {
    case 0:
      return Expr::Lit(GenLiteral());
    case 1:
      return Expr::Column(GenWord(), *rc::gen::arbitrary<bool>());
    case 2:
      e.kind = ExprKind::kNot;
      e.args.push_back(GenExpr(depth - 1));
      return e;
    case 3:
      e.kind = ExprKind::kNegate;
      e.args.push_back(GenExpr(depth - 1));
      return e;
    case 4:
    case 5: {
      BinaryOp op = *rc::gen::element(BinaryOp::kOr, BinaryOp::kAnd, BinaryOp::kEq, BinaryOp::kNe, BinaryOp::kLt,
                                      BinaryOp::kLe, BinaryOp::kGt, BinaryOp::kGe, BinaryOp::kAdd, BinaryOp::kSub,
                                      BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kMod);
      int n = (op == BinaryOp::kOr || op == BinaryOp::kAnd) ? *rc::gen::inRange(2, 5) : 2;
      std::vector<Expr> args;
      for (int i = 0; i < n; ++i) args.push_back(GenExpr(depth - 1));
      return Expr::Binary(op, std::move(args));
    }
    case 6:
      e.kind = ExprKind::kIsNull;
      e.negated = *rc::gen::arbitrary<bool>();
      e.args.push_back(GenExpr(depth - 1));
      return e;
    case 7: {
      e.kind = ExprKind::kIn;
      e.negated = *rc::gen::arbitrary<bool>();
      int n = *rc::gen::inRange(2, 6);
      for (int i = 0; i < n; ++i) e.args.push_back(GenExpr(depth - 1));
      return e;
    }
    default:
      e.kind = ExprKind::kBetween;
      e.negated = *rc::gen::arbitrary<bool>();
      for (int i = 0; i < 3; ++i) e.args.push_back(GenExpr(depth - 1));
      return e;
  }
}

std::optional<Expr> GenWhere() {
  if (*rc::gen::arbitrary<bool>()) return std::nullopt;
  return GenExpr(*rc::gen::inRange(0, 5));
}

DataType GenType() {
  switch (*rc::gen::inRange(0, 3)) {
    case 0: {
      uint8_t p = static_cast<uint8_t>(*rc::gen::inRange(1, 19));
      return DataType::Decimal(p, static_cast<uint8_t>(*rc::gen::inRange(0, p + 1)));
    }
    case 1:
      return DataType::Vector(*rc::gen::element(VectorElement::kFloat16, VectorElement::kFloat32),
                              static_cast<uint32_t>(*rc::gen::inRange(1, 65537)));
    default:
      return DataType::Of(*rc::gen::element(TypeId::kBool, TypeId::kInt8, TypeId::kInt16, TypeId::kInt32,
                                            TypeId::kInt64, TypeId::kFloat32, TypeId::kFloat64, TypeId::kString,
                                            TypeId::kDate, TypeId::kTimestamp));
  }
}

std::vector<std::string> GenNames(int min, int max) {
  std::vector<std::string> out;
  int n = *rc::gen::inRange(min, max + 1);
  for (int i = 0; i < n; ++i) out.push_back(GenWord());
  return out;
}

// Names distinct case-insensitively (UPDATE targets, PROPERTIES keys).
std::vector<std::string> GenDistinct(int min, int max) {
  std::vector<std::string> out;
  for (const std::string& n : GenNames(min, max)) {
    std::string up = n;
    for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    bool seen = false;
    for (const std::string& o : out) {
      std::string oup = o;
      for (char& c : oup) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      seen = seen || oup == up;
    }
    if (!seen) out.push_back(n);
  }
  return out;
}

int64_t GenJobId() { return *rc::gen::inRange<int64_t>(1, INT64_MAX); }

SelectStatement GenSelect() {
  SelectStatement s;
  s.text = *rc::gen::elementOf(std::vector<std::string>{
      "SELECT 1", "select a, b FROM db.t WHERE c = 'x;y'",
      "SELECT id, _distance FROM vector_search('db.docs', 'emb', '[0.1, 2]', 10) WHERE category = 'news'",
      "WITH q AS (SELECT 1) SELECT * FROM q", "SELECT COUNT(*) /* n */ FROM vigil_indexes('db.docs')"});
  return s;
}

GrantObject GenGrantObject() {
  GrantObject o;
  if (*rc::gen::inRange(0, 4) == 0) {
    o.global = true;
    return o;
  }
  o.database = GenWord();
  if (*rc::gen::arbitrary<bool>()) o.table = GenWord();
  if (*rc::gen::arbitrary<bool>()) o.catalog = GenWord();
  return o;
}

auth::Privilege GenPrivilege() {
  return *rc::gen::element(auth::Privilege::kShow, auth::Privilege::kAlter, auth::Privilege::kAdmin);
}

// Users, tokens and grants.
StatementNode GenUserStatement() {
  switch (*rc::gen::inRange(0, 10)) {
    case 0:
      return CreateUserStatement{GenWord(), *rc::gen::arbitrary<bool>()};
    case 1:
      return DropUserStatement{GenWord(), *rc::gen::arbitrary<bool>()};
    case 2:
      return AlterUserStatement{GenWord(), *rc::gen::element(AlterUserAction::kRotateToken, AlterUserAction::kDisable,
                                                             AlterUserAction::kEnable, AlterUserAction::kSetAdmin,
                                                             AlterUserAction::kUnsetAdmin)};
    case 3:
      return GrantStatement{*rc::gen::arbitrary<bool>(), GenPrivilege(), GenGrantObject(), GenWord()};
    case 4:
      return ShowUsersStatement{};
    case 5:
      return ShowNodesStatement{};
    case 6:
      return DrainNodeStatement{GenText(), *rc::gen::arbitrary<bool>()};
    case 7: {
      ShowVersionsStatement s{GenTable(), std::nullopt};
      if (*rc::gen::arbitrary<bool>()) s.limit = *rc::gen::inRange<int64_t>(1, 1000000);
      return s;
    }
    case 8:
      return ShowGenerationsStatement{GenTable()};
    default: {
      ShowGrantsStatement s;
      if (*rc::gen::arbitrary<bool>()) s.user = GenWord();
      return s;
    }
  }
}

// PREPARE / EXECUTE / DEALLOCATE.
StatementNode GenPreparedStatement() {
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      return PrepareStatement{GenWord(), GenSelect()};
    case 1: {
      ExecuteStatement s;
      s.name = GenWord();
      const int n = *rc::gen::inRange(0, 4);
      for (int i = 0; i < n; ++i) {
        if (*rc::gen::arbitrary<bool>()) {
          s.values.push_back(GenLiteral());
        } else {
          s.values.push_back(BlobLiteral{*rc::gen::container<std::string>(rc::gen::arbitrary<char>())});
        }
      }
      return s;
    }
    default: {
      DeallocateStatement s;
      if (*rc::gen::arbitrary<bool>()) s.name = GenWord();
      return s;
    }
  }
}

StatementNode GenStatement() {
  switch (*rc::gen::inRange(0, 25)) {
    case 0:
      return CreateDatabaseStatement{GenDatabase(), *rc::gen::arbitrary<bool>()};
    case 1:
      return DropDatabaseStatement{GenDatabase(), *rc::gen::arbitrary<bool>()};
    case 2:
      return ShowDatabasesStatement{};
    case 3: {
      ShowTablesStatement s;
      if (*rc::gen::arbitrary<bool>()) s.database = GenDatabase();
      return s;
    }
    case 4: {
      CreateTableStatement s{GenTable(), *rc::gen::arbitrary<bool>(), {}};
      if (*rc::gen::inRange(0, 4) == 0) {  // CREATE EXTERNAL TABLE ... ENGINE = LANCE LOCATION '...'
        s.engine = "lance";
        s.location = GenText();
        return s;
      }
      for (const std::string& n : GenNames(1, 5)) s.columns.push_back({n, GenType(), *rc::gen::arbitrary<bool>()});
      return s;
    }
    case 5:
      return DropTableStatement{GenTable(), *rc::gen::arbitrary<bool>()};
    case 6: {
      InsertStatement s;
      s.table = GenTable();
      if (*rc::gen::arbitrary<bool>()) s.columns = GenNames(1, 4);
      size_t width = s.columns.empty() ? static_cast<size_t>(*rc::gen::inRange(1, 5)) : s.columns.size();
      int rows = *rc::gen::inRange(1, 4);
      for (int r = 0; r < rows; ++r) {
        std::vector<Literal> row;
        for (size_t i = 0; i < width; ++i) row.push_back(GenLiteral());
        s.rows.push_back(std::move(row));
      }
      return s;
    }
    case 7: {
      CopyStatement s{GenTable(), GenText(), std::nullopt};
      if (*rc::gen::arbitrary<bool>()) {
        s.format = *rc::gen::element(CopyFormat::kCsv, CopyFormat::kJsonl, CopyFormat::kFvecs, CopyFormat::kNpy);
      }
      return s;
    }
    case 8:
      return DeleteStatement{GenTable(), GenWhere()};
    case 9: {
      UpdateStatement s;
      s.table = GenTable();
      for (const std::string& c : GenDistinct(1, 4)) s.assignments.push_back({c, GenExpr(3)});
      s.where = GenWhere();
      return s;
    }
    case 10:
      return RefreshTableStatement{GenTable()};
    case 11: {
      CreateIndexStatement s;
      s.name = GenWord();
      s.table = GenTable();
      s.columns = GenNames(1, 3);
      s.method = *rc::gen::element(IndexMethod::kAnn, IndexMethod::kBtree, IndexMethod::kBitmap, IndexMethod::kFts);
      if (*rc::gen::arbitrary<bool>()) {
        for (const std::string& k : GenDistinct(1, 5)) s.properties.push_back({k, GenText()});
      }
      s.or_replace = *rc::gen::arbitrary<bool>();
      s.if_not_exists = !s.or_replace && *rc::gen::arbitrary<bool>();
      return s;
    }
    case 12:
      return DropIndexStatement{GenWord(), GenTable(), *rc::gen::arbitrary<bool>()};
    case 13:
      return BuildIndexStatement{GenWord(), GenTable()};
    case 14: {
      VacuumStatement s;
      s.table = GenTable();
      int form = *rc::gen::inRange(0, 3);
      if (form == 1) s.retain_versions = *rc::gen::inRange<int64_t>(1, INT64_MAX);
      if (form == 2) s.older_than = GenText() + "d";
      return s;
    }
    case 15:
      return ShowIndexStatement{GenTable()};
    case 16: {
      ShowIndexJobsStatement s;
      if (*rc::gen::arbitrary<bool>()) s.database = GenDatabase();
      s.where = GenWhere();
      return s;
    }
    case 17:
      return ShowIndexJobStatement{GenJobId()};
    case 18:
      return CancelIndexJobStatement{GenJobId()};
    case 19: {
      ResolveIndexJobStatement s;
      s.job_id = GenJobId();
      s.action = *rc::gen::element(ResolveAction::kAcknowledged, ResolveAction::kForceRelease);
      s.without_refresh = s.action == ResolveAction::kForceRelease && *rc::gen::arbitrary<bool>();
      s.comment = GenText();
      return s;
    }
    case 20: {
      WaitIndexJobStatement s;
      s.job_id = GenJobId();
      if (*rc::gen::arbitrary<bool>()) {
        double v = std::fabs(*rc::gen::arbitrary<double>());
        if (std::isfinite(v)) s.timeout_seconds = v;
      }
      return s;
    }
    case 21:
      return GenSelect();
    case 22:
      return GenUserStatement();
    case 23:
      return GenPreparedStatement();
    default:
      return ExplainStatement{*rc::gen::arbitrary<bool>(), GenSelect()};
  }
}

RC_GTEST_PROP(ParserRoundTrip, PrintedTreesParseBackEqual, ()) {
  for (int i = 0; i < 20; ++i) {
    StatementNode node = GenStatement();
    std::string sql = ToSql(node);
    RC_LOG() << sql;
    ParseError err;
    auto parsed = ParseStatement(sql, &err);
    RC_ASSERT(parsed.ok());
    RC_ASSERT(parsed->node == node);
    RC_ASSERT(ToSql(*parsed) == sql);
  }
}

RC_GTEST_PROP(ParserRoundTrip, ScriptsSplitWhereWritten, ()) {
  std::vector<StatementNode> nodes;
  std::string script;
  int n = *rc::gen::inRange(1, 5);
  for (int i = 0; i < n; ++i) {
    nodes.push_back(GenStatement());
    script += ToSql(nodes.back()) + *rc::gen::elementOf(std::vector<std::string>{";", " ;\n", ";;", "; -- c\n"});
  }
  auto parsed = ParseScript(script);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(parsed->size() == nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    RC_ASSERT((*parsed)[i].node == nodes[i]);
    RC_ASSERT(script.substr((*parsed)[i].pos.offset, (*parsed)[i].length) == ToSql(nodes[i]));
  }
}

// Line and column of a byte offset, computed independently of the lexer.
SourcePos PosOf(const std::string& s, size_t offset) {
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

RC_GTEST_PROP(ParserRoundTrip, TokenSoupFailsAtConsistentPositions, ()) {
  static const std::vector<std::string> kPieces = {"CREATE",   "TABLE",
                                                   "INDEX",    "OR",
                                                   "REPLACE",  "IF",
                                                   "NOT",      "EXISTS",
                                                   "ON",       "USING",
                                                   "ANN",      "PROPERTIES",
                                                   "(",        ")",
                                                   ",",        ";",
                                                   "=",        "<>",
                                                   "-",        "+",
                                                   "*",        "t",
                                                   "db.t",     "'s'",
                                                   "\"k\"",    "`q`",
                                                   "1",        "-2.5",
                                                   "1e3",      "SHOW",
                                                   "INDEX",    "JOBS",
                                                   "JOB",      "FROM",
                                                   "WHERE",    "AND",
                                                   "IN",       "BETWEEN",
                                                   "IS",       "NULL",
                                                   "INSERT",   "INTO",
                                                   "VALUES",   "DELETE",
                                                   "UPDATE",   "SET",
                                                   "SELECT",   "EXPLAIN",
                                                   "VACUUM",   "RETAIN",
                                                   "VERSIONS", "\n",
                                                   "--c\n",    "/*x*/",
                                                   "DATE",     "'2024-01-01'",
                                                   "INT",      "VECTOR(FLOAT32, 4)",
                                                   "NOT NULL", "WAIT",
                                                   "TIMEOUT",  "COPY",
                                                   "USER",     "USERS",
                                                   "ALTER",    "GRANT",
                                                   "REVOKE",   "GRANTS",
                                                   "FOR",      "TO",
                                                   "ADMIN",    "ROTATE",
                                                   "TOKEN",    "db.*"};
  std::string sql;
  int n = *rc::gen::inRange(0, 25);
  for (int i = 0; i < n; ++i) sql += *rc::gen::elementOf(kPieces) + " ";
  RC_LOG() << sql;
  ParseError err;
  auto parsed = ParseScript(sql, &err);
  if (!parsed.ok()) {
    RC_ASSERT(err.pos.offset <= sql.size());
    RC_ASSERT(err.pos == PosOf(sql, err.pos.offset));
    RC_ASSERT(!err.message.empty());
    return;
  }
  std::string printed;
  for (const Statement& s : *parsed) printed += ToSql(s) + ";\n";
  auto again = ParseScript(printed);
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *parsed);
}

TEST(ParserRoundTrip, CorpusIsAFixedPoint) {
  std::vector<std::string> corpus = {
      "CREATE TABLE db.docs (id BIGINT NOT NULL, category STRING NOT NULL, ts TIMESTAMP NOT NULL, "
      "body STRING NOT NULL, emb VECTOR(FLOAT32, 128) NOT NULL)",
      "COPY db.docs FROM 'docs.jsonl'",
      "CREATE INDEX emb_idx ON db.docs (emb) USING ANN PROPERTIES (\n  \"index_type\" = \"IVF_PQ\", \"metric\" = "
      "\"l2\", \"num_partitions\" = \"256\", \"num_sub_vectors\" = \"16\")",
      "SHOW INDEX JOBS FROM db",
      "BUILD INDEX emb_idx ON db.docs",
      "RESOLVE INDEX JOB 42 AS FORCE_RELEASE COMMENT 'worker host lost; accepted'",
      "update t set a = -(-1), b = not a is null where (a or b) and c not between 1 and 2 - 3"};
  const std::filesystem::path dir = std::filesystem::path(VIGIL_SQL_TESTDATA_DIR) / "parse";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto recs = testing::ReadGoldenFile(entry.path());
    ASSERT_TRUE(recs.ok()) << recs.status().ToString();
    for (const testing::GoldenRecord& r : *recs) {
      if (r.directive == "parse") corpus.push_back(r.input);
    }
  }
  size_t parsed_ok = 0;
  for (const std::string& sql : corpus) {
    auto first = ParseScript(sql);
    if (!first.ok()) continue;
    ++parsed_ok;
    std::string printed;
    for (const Statement& s : *first) printed += ToSql(s) + ";\n";
    auto second = ParseScript(printed);
    ASSERT_TRUE(second.ok()) << printed << ": " << second.status().ToString();
    EXPECT_EQ(*second, *first) << sql;
    std::string reprinted;
    for (const Statement& s : *second) reprinted += ToSql(s) + ";\n";
    EXPECT_EQ(reprinted, printed);
  }
  EXPECT_GT(parsed_ok, 50u);
}

}  // namespace
}  // namespace vigil::sql

// SET: parsing, its tree, and the print/parse round trip of random SET
// statements (parse goldens are in testdata/parse/set.test).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "vigil/sql/parser.h"

namespace vigil::sql {
namespace {

TEST(ParserSetTest, NameValueAndDefault) {
  auto s = ParseStatement("set Statement_Timeout TO '5s';");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const auto& set = std::get<SetStatement>(s->node);
  EXPECT_EQ(set.name, "Statement_Timeout");
  EXPECT_EQ(set.value, Literal::String("5s"));
  EXPECT_EQ(StatementName(s->node), "SET");

  s = ParseStatement("SET statement_timeout = -250");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(std::get<SetStatement>(s->node).value, Literal::Number(Literal::Kind::kInteger, "-250"));

  s = ParseStatement("SET statement_timeout = DEFAULT");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(std::get<SetStatement>(s->node).value.has_value());
  EXPECT_EQ(ToSql(*s), "SET statement_timeout = DEFAULT");

  ParseError err;
  EXPECT_FALSE(ParseStatement("SET statement_timeout = (1)", &err).ok());
  EXPECT_EQ(err.message, "expected a literal or DEFAULT, found '('");
  EXPECT_FALSE(ParseStatement("SET SELECT = 1", &err).ok());
  EXPECT_EQ(err.message, "expected setting name, found SELECT");
}

RC_GTEST_PROP(ParserSetRoundTrip, PrintedSetParsesBackEqual, ()) {
  SetStatement s;
  s.name = *rc::gen::elementOf(std::vector<std::string>{"statement_timeout", "STATEMENT_TIMEOUT", "x", "my name",
                                                        "tick`s", "select", "caf\xc3\xa9", "_a1"});
  switch (*rc::gen::inRange(0, 6)) {
    case 0:
      break;  // DEFAULT
    case 1:
      s.value = Literal::Null();
      break;
    case 2:
      s.value = Literal::Bool(*rc::gen::arbitrary<bool>());
      break;
    case 3: {
      int64_t v = *rc::gen::arbitrary<int64_t>();
      s.value = Literal::Number(Literal::Kind::kInteger, std::to_string(v));
      break;
    }
    case 4:
      s.value = Literal::Number(Literal::Kind::kDecimal, "-1.50");
      break;
    default: {
      auto chars = rc::gen::elementOf(std::string("0123456789 msdhx'\";-\n"));
      s.value = Literal::String(*rc::gen::resize(12, rc::gen::container<std::string>(chars)));
    }
  }
  const std::string sql = ToSql(StatementNode(s));
  RC_LOG() << sql;
  auto parsed = ParseStatement(sql);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(parsed->node == StatementNode(s));
  RC_ASSERT(ToSql(*parsed) == sql);
  // In a script between other statements.
  auto script = ParseScript("SHOW DATABASES; " + sql + " ; SELECT 1");
  RC_ASSERT(script.ok());
  RC_ASSERT(script->size() == 3u);
  RC_ASSERT((*script)[1].node == StatementNode(s));
}

}  // namespace
}  // namespace vigil::sql

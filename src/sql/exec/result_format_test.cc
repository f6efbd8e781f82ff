#include "vigil/sql/result_format.h"

#include <gtest/gtest.h>

namespace vigil::sql {
namespace {

ResultSet Sample() {
  ResultSet r;
  r.columns = {"id", "name", "score", "raw"};
  r.rows.push_back({int64_t{1}, std::string("plain"), 0.5, Blob{"\x01\xab"}});
  r.rows.push_back({int64_t{-2}, std::string("a,b \"q\"\nline"), 3.0, Value{}});
  r.rows.push_back({Value{}, std::string(""), 0.1, Blob{""}});
  return r;
}

TEST(ResultFormatTest, CsvQuotesOnlyWhereNeededWithLfLineEnds) {
  EXPECT_EQ(FormatCsv(Sample()),
            "id,name,score,raw\n"
            "1,plain,0.5,01ab\n"
            "-2,\"a,b \"\"q\"\"\nline\",3.0,\n"
            ",,0.1,\n");
  EXPECT_EQ(FormatCsv(ResultSet{}), "");
  ResultSet header_only;
  header_only.columns = {"a,b"};
  EXPECT_EQ(FormatCsv(header_only), "\"a,b\"\n");
}

TEST(ResultFormatTest, JsonIsOneArrayOfObjectsInColumnOrder) {
  EXPECT_EQ(FormatJson(Sample()),
            "[{\"id\":1,\"name\":\"plain\",\"score\":0.5,\"raw\":\"01ab\"},"
            "{\"id\":-2,\"name\":\"a,b \\\"q\\\"\\nline\",\"score\":3.0,\"raw\":null},"
            "{\"id\":null,\"name\":\"\",\"score\":0.1,\"raw\":\"\"}]\n");
  EXPECT_EQ(FormatJson(ResultSet{}), "[]\n");
  ResultSet bad;
  bad.columns = {"t"};
  bad.rows.push_back({std::string("\xff")});
  EXPECT_NE(FormatJson(bad).find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD, as UTF-8
}

// NUL and other control characters: CSV keeps the bytes inside quotes, JSON escapes them.
TEST(ResultFormatTest, ControlCharactersAreKeptWholeInCsvAndEscapedInJson) {
  ResultSet r;
  r.columns = {"v", "w"};
  r.rows.push_back({std::string("a\0b", 3), std::string("x\x01\ty\x7f")});
  r.rows.push_back({std::string("after"), Value{}});
  const std::string csv = FormatCsv(r);
  EXPECT_EQ(csv, std::string("v,w\n\"a\0b\",\"x\x01\ty\x7f\"\nafter,\n", 25));
  EXPECT_EQ(FormatJson(r), "[{\"v\":\"a\\u0000b\",\"w\":\"x\\u0001\\ty\x7f\"},{\"v\":\"after\",\"w\":null}]\n");
}

TEST(ResultFormatTest, CellsReadBackExactly) {
  EXPECT_EQ(CellText(Value{}), "NULL");
  EXPECT_EQ(CellText(0.1), "0.1");
  EXPECT_EQ(CellText(1e300), "1e+300");
  EXPECT_EQ(CellText(2.0), "2.0");
  EXPECT_EQ(CellText(Blob{"\x0f"}), "x'0f'");
  EXPECT_EQ(std::stod(CellText(1.0 / 3.0)), 1.0 / 3.0);
}

}  // namespace
}  // namespace vigil::sql

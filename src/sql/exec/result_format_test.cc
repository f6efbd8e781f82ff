#include "vigil/sql/result_format.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

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

// A name given twice (SELECT a, b, a) is one key, where it first appears, with the last value.
TEST(ResultFormatTest, ARepeatedColumnIsOneJsonKeyWithItsLastValue) {
  ResultSet r;
  r.columns = {"a", "b", "a"};
  r.rows.push_back({int64_t{1}, int64_t{2}, int64_t{3}});
  EXPECT_EQ(FormatJson(r), "[{\"a\":3,\"b\":2}]\n");
}

TEST(ResultFormatTest, CellsReadBackExactly) {
  EXPECT_EQ(CellText(Value{}), "NULL");
  EXPECT_EQ(CellText(0.1), "0.1");
  EXPECT_EQ(CellText(1e300), "1e+300");
  EXPECT_EQ(CellText(2.0), "2.0");
  EXPECT_EQ(CellText(Blob{"\x0f"}), "x'0f'");
  EXPECT_EQ(std::stod(CellText(1.0 / 3.0)), 1.0 / 3.0);
}

TEST(ResultFormatTest, VectorsAreTheirLiteralTextInATableAndCsvAndNumberArraysInJson) {
  const FloatVector v{{0.5f, 0.25f, 1.0f, 2.0f, 0.1f, -3e-7f, 1.5e20f, 0.0f, 123456.0f}};
  const std::string text = "[0.5,0.25,1,2,0.1,-3e-07,1.5e+20,0,123456]";
  EXPECT_EQ(CellText(v), text);
  EXPECT_EQ(CellText(FloatVector{{1e-4f, 1e-5f, 1e14f, 1e15f, -0.0f, 1e-45f, 3.4028235e38f}}),
            "[1e-04,1e-05,1e+14,1e+15,-0,1e-45,3.4028235e+38]");
  ResultSet r;
  r.columns = {"id", "emb"};
  r.rows.push_back({int64_t{7}, v});
  EXPECT_EQ(FormatCsv(r), "id,emb\n7,\"" + text + "\"\n");
  EXPECT_EQ(FormatJson(r), "[{\"id\":7,\"emb\":" + text + "}]\n");
  std::string json;
  AppendVectorJson(json, v);
  EXPECT_EQ(json, text);

  const float inf = std::numeric_limits<float>::infinity();
  const FloatVector odd{{std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1.0f}};
  EXPECT_EQ(CellText(odd), "[NaN,Inf,-Inf,1]");
  json.clear();
  AppendVectorJson(json, odd);
  EXPECT_EQ(json, "[null,null,null,1]");
}

// Every written element reads back as the same FLOAT32 through a double, as JSON readers
// and Vigil's own vector text read it, and is written the same in text and in JSON.
// VIGIL_FLOAT_SWEEP_STRIDE=1 (the long tier) checks every FLOAT32.
TEST(ResultFormatTest, VectorElementsReadBackExactlyThroughADouble) {
  const char* env = std::getenv("VIGIL_FLOAT_SWEEP_STRIDE");
  const uint64_t stride = env ? std::strtoull(env, nullptr, 10) : 65521;
  ASSERT_GT(stride, 0u);
  auto check = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    if (!std::isfinite(f)) return;
    const std::string text = CellText(FloatVector{{f}});
    double d = 0;
    const auto res = std::from_chars(text.data() + 1, text.data() + text.size() - 1, d);
    ASSERT_EQ(res.ptr, text.data() + text.size() - 1) << text;
    const float back = static_cast<float>(d);
    ASSERT_EQ(std::memcmp(&back, &f, sizeof f), 0) << text << " from bits " << bits;
    std::string json;
    AppendVectorJson(json, FloatVector{{f}});
    ASSERT_EQ(json, text) << "bits " << bits;
  };
  for (uint64_t u = 0; u <= UINT32_MAX; u += stride) check(static_cast<uint32_t>(u));
  // The one magnitude whose shortest digits do not read back through a double.
  for (uint32_t bits : {0x15ae43fdu, 0x95ae43fdu, 0x15ae43fcu, 0x15ae43feu}) check(bits);
  EXPECT_EQ(CellText(FloatVector{{-7.0385307e-26f}}), "[-7.03853069e-26]");
  double shortest = 0;
  const std::string digits = "7.038531e-26";
  std::from_chars(digits.data(), digits.data() + digits.size(), shortest);
  EXPECT_NE(static_cast<float>(shortest), 7.0385307e-26f);
}

}  // namespace
}  // namespace vigil::sql

#include "vigil/storage/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vigil/storage/column.h"

namespace vigil {
namespace {

TEST(DataTypeTest, ParsePrintRoundTrip) {
  for (const char* t : {"BOOL", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "DATE",
                        "TIMESTAMP", "DECIMAL(18,4)", "VECTOR(FLOAT32, 128)", "VECTOR(FLOAT16, 3)"}) {
    auto parsed = DataType::Parse(t);
    ASSERT_TRUE(parsed.ok()) << t << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->ToString(), t);
  }
  EXPECT_EQ(DataType::Parse("int64")->id, TypeId::kInt64);
  EXPECT_EQ(DataType::Parse(" varchar ")->id, TypeId::kString);
  EXPECT_EQ(DataType::Parse("vector(float, 4)")->dim, 4u);
}

TEST(DataTypeTest, RejectsBadParameters) {
  EXPECT_FALSE(DataType::Parse("DECIMAL(19,2)").ok());
  EXPECT_FALSE(DataType::Parse("DECIMAL(4,5)").ok());
  EXPECT_FALSE(DataType::Parse("DECIMAL(0,0)").ok());
  EXPECT_FALSE(DataType::Parse("VECTOR(FLOAT64, 4)").ok());
  EXPECT_FALSE(DataType::Parse("VECTOR(FLOAT32, 0)").ok());
  EXPECT_FALSE(DataType::Parse("VECTOR(FLOAT32, 70000)").ok());
  EXPECT_FALSE(DataType::Parse("VECTOR(FLOAT32)").ok());
  Status st = DataType::Parse("BLOB").status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("BLOB"), std::string::npos);
}

TEST(DataTypeTest, FixedWidths) {
  EXPECT_EQ(DataType::Vector(VectorElement::kFloat32, 128).FixedWidth(), 512u);
  EXPECT_EQ(DataType::Vector(VectorElement::kFloat16, 128).FixedWidth(), 256u);
  EXPECT_EQ(DataType::Of(TypeId::kDate).FixedWidth(), 4u);
  EXPECT_EQ(DataType::Of(TypeId::kString).FixedWidth(), 0u);
}

Result<SchemaPtr> DocsSchema() {
  return Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                       {-1, "category", DataType::Of(TypeId::kString), false},
                       {-1, "emb", DataType::Vector(VectorElement::kFloat32, 4), false}});
}

TEST(SchemaTest, AssignsIdsAndFingerprints) {
  auto s = DocsSchema();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->field(0).id, 0);
  EXPECT_EQ((*s)->field(2).id, 2);
  EXPECT_EQ((*s)->fingerprint().size(), 16u);
  EXPECT_EQ(*(*s)->IndexOf("CATEGORY"), 1u);
  EXPECT_FALSE((*s)->IndexOf("nope").has_value());
  auto same = DocsSchema();
  EXPECT_EQ((*s)->fingerprint(), (*same)->fingerprint());
  auto other = Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), true}});
  EXPECT_NE((*s)->fingerprint(), (*other)->fingerprint());
}

TEST(SchemaTest, RejectsBadSchemas) {
  EXPECT_FALSE(Schema::Make({}).ok());
  EXPECT_FALSE(Schema::Make({{-1, "a", DataType::Of(TypeId::kInt64)}, {-1, "A", DataType::Of(TypeId::kInt64)}}).ok());
  EXPECT_FALSE(Schema::Make({{3, "a", DataType::Of(TypeId::kInt64)}, {3, "b", DataType::Of(TypeId::kInt64)}}).ok());
  Status st = Schema::Make({{-1, "bad name", DataType::Of(TypeId::kInt64)}}).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("bad name"), std::string::npos);
}

TEST(SchemaTest, JsonRoundTripAndCorruption) {
  auto s = DocsSchema();
  nlohmann::json j = (*s)->ToJson();
  auto back = Schema::FromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->fingerprint(), (*s)->fingerprint());
  EXPECT_EQ((*back)->ToString(), (*s)->ToString());
  j["fields"][0]["type"] = "INT";
  EXPECT_EQ(Schema::FromJson(j).status().code(), StatusCode::kCorruption);  // fingerprint mismatch
  j["fields"][0]["type"] = 7;
  EXPECT_EQ(Schema::FromJson(j).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(Schema::FromJson(nlohmann::json::array()).status().code(), StatusCode::kCorruption);
}

TEST(DataTypeTest, VarcharKeepsItsLengthInCharacters) {
  for (const char* t : {"VARCHAR(5)", "varchar( 5 )", "CHAR(5)", "STRING(5)"}) {
    auto parsed = DataType::Parse(t);
    ASSERT_TRUE(parsed.ok()) << t << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->id, TypeId::kString);
    EXPECT_EQ(parsed->max_length, 5u);
    EXPECT_EQ(parsed->ToString(), "VARCHAR(5)");
  }
  EXPECT_EQ(DataType::Parse("VARCHAR")->max_length, 0u);
  EXPECT_THAT(DataType::Parse("VARCHAR(0)").status().message(), ::testing::HasSubstr("at least 1"));
  EXPECT_FALSE(DataType::Parse("VARCHAR(x)").ok());
  EXPECT_FALSE(DataType::Parse("VARCHAR(1,2)").ok());
  EXPECT_FALSE(DataType::Parse("VARCHAR(16777217)").ok());  // longer than any STRING value may be
  // The stored type is STRING: fragments and columns of either compare equal.
  EXPECT_EQ(DataType::Varchar(5), DataType::Of(TypeId::kString));

  const DataType v5 = DataType::Varchar(5);
  EXPECT_TRUE(v5.CheckLength("abcde").ok());
  EXPECT_TRUE(v5.CheckLength("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9").ok());  // 5 characters in 10 bytes
  Status st = v5.CheckLength("abcdefghij");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "a value of 10 characters exceeds VARCHAR(5)");
  EXPECT_TRUE(DataType::Of(TypeId::kString).CheckLength(std::string(1000, 'x')).ok());

  Column c(v5);
  EXPECT_TRUE(c.Append(std::string("abc")).ok());
  EXPECT_EQ(c.Append(std::string("abcdef")).message(), "a value of 6 characters exceeds VARCHAR(5)");
  EXPECT_EQ(c.size(), 1u);
}

// Manifests store the schema as JSON: a VARCHAR(n) length round-trips, and a
// schema without lengths (every manifest written before they were kept) decodes
// with the fingerprint it was written with.
TEST(SchemaTest, VarcharInJsonAndOlderSchemas) {
  auto docs = DocsSchema();
  ASSERT_TRUE(docs.ok());
  EXPECT_EQ((*docs)->fingerprint(), "088193c7e4216da2");
  nlohmann::json old = nlohmann::json::parse(
      R"j({"fields":[{"id":0,"name":"id","type":"BIGINT","nullable":false},)j"
      R"j({"id":1,"name":"category","type":"STRING","nullable":false},)j"
      R"j({"id":2,"name":"emb","type":"VECTOR(FLOAT32, 4)","nullable":false}],"fingerprint":"088193c7e4216da2"})j");
  auto decoded = Schema::FromJson(old);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ((*decoded)->field(1).type.max_length, 0u);

  auto v = Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                         {-1, "category", DataType::Varchar(12), false},
                         {-1, "emb", DataType::Vector(VectorElement::kFloat32, 4), false}});
  ASSERT_TRUE(v.ok());
  EXPECT_NE((*v)->fingerprint(), (*docs)->fingerprint());
  EXPECT_EQ((*v)->ToString(), "id BIGINT NOT NULL, category VARCHAR(12) NOT NULL, emb VECTOR(FLOAT32, 4) NOT NULL");
  auto back = Schema::FromJson((*v)->ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)->field(1).type.max_length, 12u);
  EXPECT_EQ((*back)->fingerprint(), (*v)->fingerprint());
}

TEST(Utf8Test, FindsTheFirstByteThatIsNotUtf8) {
  const size_t npos = std::string_view::npos;
  EXPECT_EQ(FindInvalidUtf8(""), npos);
  EXPECT_EQ(FindInvalidUtf8(std::string("plain ascii, long enough for words\0\x01\x7f", 37)), npos);
  EXPECT_EQ(FindInvalidUtf8("\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \xf4\x8f\xbf\xbf"), npos);  // é € 𝄞 U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("ab\xff"), 2u);
  EXPECT_EQ(FindInvalidUtf8("0123456789abcdef\x80"), 16u);  // a lone continuation byte
  EXPECT_EQ(FindInvalidUtf8("a\xc0\x80"), 1u);              // overlong NUL
  EXPECT_EQ(FindInvalidUtf8("a\xe0\x80\xaf"), 1u);          // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("a\xed\xa0\x80"), 1u);          // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("a\xf4\x90\x80\x80"), 1u);      // past U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("a\xe2\x82"), 1u);              // cut short
  EXPECT_EQ(Utf8Length("a\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e"), 4u);
}

TEST(ColumnTest, AppendChecksTypesAndRanges) {
  Column c8(DataType::Of(TypeId::kInt8));
  EXPECT_TRUE(c8.Append(int64_t{127}).ok());
  EXPECT_EQ(c8.Append(int64_t{128}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c8.Append(std::string("x")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c8.size(), 1u);
  Column dec(DataType::Decimal(4, 2));
  EXPECT_TRUE(dec.Append(int64_t{9999}).ok());
  EXPECT_FALSE(dec.Append(int64_t{10000}).ok());
  EXPECT_EQ(ValueToString(dec.ValueAt(0), dec.type()), "99.99");
  Column vec(DataType::Vector(VectorElement::kFloat32, 3));
  EXPECT_FALSE(vec.Append(std::vector<float>{1, 2}).ok());
  EXPECT_TRUE(vec.Append(std::vector<float>{1, 2, 3}).ok());
  EXPECT_EQ(std::get<std::vector<float>>(vec.ValueAt(0)), (std::vector<float>{1, 2, 3}));
}

TEST(ColumnTest, NullsStringsFilterAndRanges) {
  Column s(DataType::Of(TypeId::kString));
  ASSERT_TRUE(s.Append(std::string("a")).ok());
  s.AppendNull();
  ASSERT_TRUE(s.Append(std::string("ccc")).ok());
  EXPECT_TRUE(s.has_nulls());
  EXPECT_FALSE(s.IsValid(1));
  EXPECT_EQ(s.StringAt(2), "ccc");
  Column f = s.Filter({1, 0, 1});
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f.StringAt(1), "ccc");
  Column r(s.type());
  r.AppendRange(s, 1, 3);
  EXPECT_EQ(r.size(), 2u);
  EXPECT_TRUE(IsNull(r.ValueAt(0)));
  EXPECT_EQ(std::get<std::string>(r.ValueAt(1)), "ccc");
}

TEST(ColumnTest, DatesTimestampsRender) {
  EXPECT_EQ(ValueToString(int64_t{19000}, DataType::Of(TypeId::kDate)), "2022-01-08");
  EXPECT_EQ(ValueToString(int64_t{1500000}, DataType::Of(TypeId::kTimestamp)), "1970-01-01 00:00:01.500000");
  EXPECT_EQ(ValueToString(int64_t{-5}, DataType::Decimal(3, 2)), "-0.05");
}

TEST(ColumnTest, HalfPrecisionRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 0.333f, 65504.0f, 1e-5f}) {
    float back = HalfToFloat(FloatToHalf(f));
    EXPECT_NEAR(back, f, std::abs(f) * 1e-3 + 1e-7) << f;
  }
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
}

TEST(RecordBatchTest, AppendRowRollsBackOnError) {
  auto s = DocsSchema();
  RecordBatch b = RecordBatch::Empty(*s);
  ASSERT_TRUE(b.AppendRow({int64_t{1}, std::string("x"), std::vector<float>{1, 2, 3, 4}}).ok());
  Status st = b.AppendRow({int64_t{2}, std::string("y"), std::vector<float>{1, 2}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("emb"), std::string::npos);
  EXPECT_EQ(b.num_rows, 1u);
  EXPECT_TRUE(b.Validate().ok());
  EXPECT_FALSE(b.AppendRow({std::monostate{}, std::string("y"), std::vector<float>{1, 2, 3, 4}}).ok());
  EXPECT_TRUE(b.Validate().ok());
}

}  // namespace
}  // namespace vigil

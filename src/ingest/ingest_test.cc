#include "vigil/ingest/ingest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/temp_dir.h"
#include "vigil/ingest/datagen.h"
#include "vigil/storage/dataset.h"

namespace vigil {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SchemaPtr MakeSchemaOrDie(std::vector<Field> fields) {
  auto s = Schema::Make(std::move(fields));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

Field F(std::string name, DataType t, bool nullable = true) { return Field{-1, std::move(name), t, nullable}; }

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Reads every batch of an in-memory file; returns the status of the first failure.
Result<std::vector<RecordBatch>> ReadAll(const std::string& data, IngestFormat format, SchemaPtr schema = nullptr,
                                         size_t batch_rows = kDefaultIngestBatchRows) {
  IngestOptions o;
  o.format = format;
  o.schema = std::move(schema);
  o.batch_rows = batch_rows;
  VIGIL_ASSIGN_OR_RETURN(auto reader, OpenIngestReaderFromBuffer(data, "in.txt", o));
  std::vector<RecordBatch> out;
  while (true) {
    VIGIL_ASSIGN_OR_RETURN(auto batch, reader->Next());
    if (!batch) break;
    VIGIL_RETURN_IF_ERROR(batch->Validate());
    out.push_back(std::move(*batch));
  }
  return out;
}

std::string ErrorOf(const std::string& data, IngestFormat format, SchemaPtr schema = nullptr) {
  auto r = ReadAll(data, format, std::move(schema));
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  return r.status().message();
}

TEST(IngestFormatTest, DetectsFromExtension) {
  EXPECT_EQ(*DetectIngestFormat("/a/b.csv"), IngestFormat::kCsv);
  EXPECT_EQ(*DetectIngestFormat("x.JSONL"), IngestFormat::kJsonl);
  EXPECT_EQ(*DetectIngestFormat("x.ndjson"), IngestFormat::kJsonl);
  EXPECT_EQ(*DetectIngestFormat("base.fvecs"), IngestFormat::kFvecs);
  EXPECT_EQ(*DetectIngestFormat("v.npy"), IngestFormat::kNpy);
  EXPECT_FALSE(DetectIngestFormat("dir.csv/noext").ok());
  EXPECT_FALSE(DetectIngestFormat("x.parquet").ok());
  EXPECT_FALSE(ParseIngestFormat("xml").ok());
}

TEST(ParseTextValueTest, TypesAndRanges) {
  EXPECT_EQ(std::get<int64_t>(*ParseTextValue("-42", DataType::Of(TypeId::kInt64))), -42);
  EXPECT_FALSE(ParseTextValue("128", DataType::Of(TypeId::kInt8)).ok());
  EXPECT_FALSE(ParseTextValue("99999999999999999999", DataType::Of(TypeId::kInt64)).ok());
  EXPECT_FALSE(ParseTextValue("1.5", DataType::Of(TypeId::kInt32)).ok());
  EXPECT_FALSE(ParseTextValue("1e39", DataType::Of(TypeId::kFloat32)).ok());
  EXPECT_TRUE(ParseTextValue("1e39", DataType::Of(TypeId::kFloat64)).ok());
  EXPECT_FALSE(ParseTextValue("nan", DataType::Of(TypeId::kFloat64)).ok());
  EXPECT_EQ(std::get<bool>(*ParseTextValue("TRUE", DataType::Of(TypeId::kBool))), true);
  EXPECT_EQ(std::get<int64_t>(*ParseTextValue("1970-01-02", DataType::Of(TypeId::kDate))), 1);
  EXPECT_FALSE(ParseTextValue("2023-02-29", DataType::Of(TypeId::kDate)).ok());
  EXPECT_TRUE(ParseTextValue("2024-02-29", DataType::Of(TypeId::kDate)).ok());
  EXPECT_EQ(std::get<int64_t>(*ParseTextValue("1970-01-01T00:00:01.5Z", DataType::Of(TypeId::kTimestamp))), 1500000);
  EXPECT_EQ(std::get<int64_t>(*ParseTextValue("1970-01-01 01:00:00+01:00", DataType::Of(TypeId::kTimestamp))), 0);
  EXPECT_FALSE(ParseTextValue("1970-01-01T25:00:00", DataType::Of(TypeId::kTimestamp)).ok());
  EXPECT_EQ(std::get<int64_t>(*ParseTextValue("-12.5", DataType::Decimal(5, 2))), -1250);
  EXPECT_FALSE(ParseTextValue("1234.5", DataType::Decimal(5, 2)).ok());
  EXPECT_FALSE(ParseTextValue("1.234", DataType::Decimal(5, 2)).ok());
  auto v = ParseTextValue(" [1, -2.5,3e2] ", DataType::Vector(VectorElement::kFloat32, 3));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(std::get<std::vector<float>>(*v), (std::vector<float>{1.0f, -2.5f, 300.0f}));
  EXPECT_FALSE(ParseTextValue("[1,2]", DataType::Vector(VectorElement::kFloat32, 3)).ok());
  EXPECT_FALSE(ParseTextValue("[1,2,3,4]", DataType::Vector(VectorElement::kFloat32, 3)).ok());
  EXPECT_FALSE(ParseTextValue("[1,,3]", DataType::Vector(VectorElement::kFloat32, 3)).ok());
  EXPECT_FALSE(ParseTextValue("[1,2,1e40]", DataType::Vector(VectorElement::kFloat32, 3)).ok());
  EXPECT_FALSE(ParseTextValue("[1,2,70000]", DataType::Vector(VectorElement::kFloat16, 3)).ok());
}

TEST(CsvIngestTest, ParsesTypedColumnsQuotesAndNulls) {
  auto schema =
      MakeSchemaOrDie({F("id", DataType::Of(TypeId::kInt64), false), F("name", DataType::Of(TypeId::kString)),
                       F("score", DataType::Of(TypeId::kFloat64)), F("ok", DataType::Of(TypeId::kBool)),
                       F("day", DataType::Of(TypeId::kDate)), F("v", DataType::Vector(VectorElement::kFloat32, 2))});
  std::string csv =
      "id,name,score,ok,day,v\r\n"
      "1,\"a, \"\"quoted\"\"\",1.5,true,2024-01-02,\"[1,2]\"\r\n"
      "2,,,,,\n"
      "3,\"\",2,false,1970-01-01,\"[3, 4]\"\n"
      "4,\"two\nlines\",-1,0,1970-01-03,\"[5,6]\"\n";
  auto r = ReadAll(csv, IngestFormat::kCsv, schema);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  const RecordBatch& b = (*r)[0];
  ASSERT_EQ(b.num_rows, 4u);
  EXPECT_EQ(b.columns[1].StringAt(0), "a, \"quoted\"");
  EXPECT_FALSE(b.columns[1].IsValid(1));  // unquoted empty = NULL
  EXPECT_TRUE(b.columns[1].IsValid(2));   // quoted empty = ""
  EXPECT_EQ(b.columns[1].StringAt(2), "");
  EXPECT_EQ(b.columns[1].StringAt(3), "two\nlines");
  EXPECT_DOUBLE_EQ(b.columns[2].values<double>()[0], 1.5);
  EXPECT_FALSE(b.columns[5].IsValid(1));
  EXPECT_EQ(std::get<std::vector<float>>(b.columns[5].ValueAt(2)), (std::vector<float>{3, 4}));
  EXPECT_EQ(std::get<int64_t>(b.columns[4].ValueAt(0)), 19724);
}

TEST(CsvIngestTest, InfersSchemaFromSample) {
  std::string csv =
      "id,price,flag,day,ts,label,emb,empty\n"
      "1,2,true,2024-01-01,2024-01-01T10:00:00Z,x,\"[1,2,3]\",\n"
      "2,2.5,false,2024-01-02,2024-01-01 11:00:00,7,\"[4,5,6]\",\n";
  auto r = ReadAll(csv, IngestFormat::kCsv);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Schema& s = *(*r)[0].schema;
  EXPECT_EQ(s.ToString(),
            "id BIGINT, price DOUBLE, flag BOOL, day DATE, ts TIMESTAMP, label STRING, "
            "emb VECTOR(FLOAT32, 3), empty STRING");
}

TEST(CsvIngestTest, BatchesAreBounded) {
  std::string csv = "id\n";
  for (int i = 0; i < 40000; ++i) csv += std::to_string(i) + "\n";
  auto r = ReadAll(csv, IngestFormat::kCsv, nullptr, 16384);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].num_rows, 16384u);
  EXPECT_EQ((*r)[2].num_rows, 40000u - 2 * 16384u);
  EXPECT_EQ((*r)[2].columns[0].values<int64_t>()[7231], 39999);
}

TEST(CsvIngestTest, ErrorsNameFileLineAndColumn) {
  auto schema = MakeSchemaOrDie({F("id", DataType::Of(TypeId::kInt32), false), F("name", DataType::Of(TypeId::kString)),
                                 F("v", DataType::Vector(VectorElement::kFloat32, 2))});
  EXPECT_THAT(ErrorOf("id,name,v\n1,a,\"[1,2]\"\n2,b\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:3:3: expected 3 fields, found 2"));
  EXPECT_THAT(ErrorOf("id,name,v\n1,a,\"[1,2]\"\nx,b,\"[1,2]\"\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:3:1: column 'id': 'x' is not an integer"));
  EXPECT_THAT(ErrorOf("id,name,v\n3000000000,a,\"[1,2]\"\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:2:1: column 'id': value 3000000000 is out of range for INT"));
  EXPECT_THAT(ErrorOf("id,name,v\n1,a,\"[1,2,3]\"\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:2:5: column 'v': vector has more than 2 elements"));
  EXPECT_THAT(ErrorOf("id,name,v,extra\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:1:11: unknown column 'extra'"));
  EXPECT_THAT(ErrorOf("id,9name\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:1:4: column name '9...' must start with a letter or '_'"));
  EXPECT_THAT(ErrorOf("name,v\n", IngestFormat::kCsv, schema), HasSubstr("missing non-nullable column 'id'"));
  EXPECT_THAT(ErrorOf("id,name,v\n,a,\"[1,2]\"\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:2:1: column 'id': missing value for non-nullable column"));
  EXPECT_THAT(ErrorOf("id,name\n1,\"open\n", IngestFormat::kCsv), HasSubstr("in.txt:2:3: unterminated quoted field"));
  EXPECT_THAT(ErrorOf("id,name\n1,a\"b\n", IngestFormat::kCsv), HasSubstr("in.txt:2:4: unexpected '\"'"));
  EXPECT_THAT(ErrorOf("", IngestFormat::kCsv), HasSubstr("header line is required"));
  // A value that does not fit the type inferred from the sample.
  std::string late = "n\n";
  for (int i = 0; i < 5; ++i) late += "1\n";
  IngestOptions o;
  o.format = IngestFormat::kCsv;
  o.infer_sample_rows = 3;
  auto reader = OpenIngestReaderFromBuffer(late + "abc\n", "late.csv", o);
  ASSERT_TRUE(reader.ok());
  auto batch = (*reader)->Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_THAT(batch.status().message(), HasSubstr("late.csv:7:1: column 'n'"));
}

TEST(JsonlIngestTest, ParsesAndInfers) {
  std::string jsonl =
      "{\"id\": 1, \"cat\": \"a\", \"ts\": \"2024-01-01T00:00:00Z\", \"emb\": [1, 2.5], \"x\": 1.5}\n"
      "\n"
      "{\"id\": 2, \"cat\": null, \"ts\": \"2024-01-02T00:00:00Z\", \"emb\": [3, 4]}\n";
  auto r = ReadAll(jsonl, IngestFormat::kJsonl);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const RecordBatch& b = (*r)[0];
  EXPECT_EQ(b.schema->ToString(), "id BIGINT, cat STRING, ts TIMESTAMP, emb VECTOR(FLOAT32, 2), x DOUBLE");
  ASSERT_EQ(b.num_rows, 2u);
  EXPECT_FALSE(b.columns[1].IsValid(1));
  EXPECT_FALSE(b.columns[4].IsValid(1));
  EXPECT_EQ(std::get<std::vector<float>>(b.columns[3].ValueAt(0)), (std::vector<float>{1, 2.5}));
  EXPECT_EQ(b.columns[2].values<int64_t>()[1], 1704153600000000);
}

TEST(JsonlIngestTest, ErrorsNameFileLineAndColumn) {
  auto schema = MakeSchemaOrDie({F("id", DataType::Of(TypeId::kInt16), false), F("name", DataType::Of(TypeId::kString)),
                                 F("v", DataType::Vector(VectorElement::kFloat32, 2))});
  EXPECT_THAT(ErrorOf("{\"id\": 1}\n{\"id\": 2,, }\n", IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:2:10: malformed JSON"));
  EXPECT_THAT(ErrorOf("{\"id\": 1, \"nope\": 2}\n", IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:1:11: unknown column 'nope'"));
  EXPECT_THAT(ErrorOf("{\"id\": 1, \"bad-name\": 2}\n", IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:1:11: column name 'bad-...' has an invalid character at position 4"));
  EXPECT_THAT(ErrorOf("{\"name\": \"a\"}\n", IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:1:1: missing non-nullable column 'id'"));
  EXPECT_THAT(ErrorOf("{\"id\": 40000}\n", IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:1:2: column 'id': value 40000 is out of range for SMALLINT"));
  EXPECT_THAT(ErrorOf("{\"id\": 1, \"v\": [1, 2, 3]}\n", IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:1:11: column 'v': vector has dimension 3, expected 2"));
  EXPECT_THAT(ErrorOf("{\"id\": 1, \"name\": 5}\n", IngestFormat::kJsonl, schema),
              HasSubstr("column 'name': expected a string"));
  EXPECT_THAT(ErrorOf("[1, 2]\n", IngestFormat::kJsonl, schema), HasSubstr("in.txt:1:1: expected a JSON object"));
}

// CSV and JSON Lines agree on text: a file is UTF-8, and the same bad bytes are
// refused with the same message at their file:line:column; NUL is a character of a
// STRING in both (a raw byte in CSV, "\u0000" in JSON, which must escape it).
TEST(TextIngestTest, CsvAndJsonlAgreeOnUtf8AndNul) {
  auto schema = MakeSchemaOrDie({F("id", DataType::Of(TypeId::kInt64), false), F("s", DataType::Of(TypeId::kString))});
  struct Bad {
    std::string bytes;
    std::string hex;
  };
  for (const Bad& bad : {Bad{"\xff", "ff"}, Bad{"\xc0\x80", "c0"}, Bad{"\xed\xa0\x80", "ed"}, Bad{"\xe2\x82", "e2"}}) {
    const std::string message = "invalid UTF-8 (byte 0x" + bad.hex + ")";
    EXPECT_THAT(ErrorOf("id,s\n1,ok\n2,a" + bad.bytes + "b\n", IngestFormat::kCsv, schema),
                HasSubstr("in.txt:3:4: " + message));
    EXPECT_THAT(
        ErrorOf("{\"id\":1,\"s\":\"ok\"}\n{\"id\":2,\"s\":\"a" + bad.bytes + "b\"}\n", IngestFormat::kJsonl, schema),
        HasSubstr("in.txt:2:15: " + message));
    // Without a schema too: inference reads the same lines.
    EXPECT_THAT(ErrorOf("id,s\n1,a" + bad.bytes + "\n", IngestFormat::kCsv), HasSubstr("in.txt:2:4: " + message));
    EXPECT_THAT(ErrorOf("{\"s\":\"a" + bad.bytes + "\"}\n", IngestFormat::kJsonl), HasSubstr("in.txt:1:8: " + message));
  }
  // Inside a quoted CSV field that spans lines: the line and column of the byte itself.
  EXPECT_THAT(ErrorOf("id,s\n1,\"two\nli\xfe\"\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:3:3: invalid UTF-8 (byte 0xfe)"));

  const std::string valid = "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e";  // é € 𝄞
  auto csv = ReadAll("id,s\n1,a" + std::string(1, '\0') + "b\n2," + valid + "\n", IngestFormat::kCsv, schema);
  auto jsonl =
      ReadAll("{\"id\":1,\"s\":\"a\\u0000b\"}\n{\"id\":2,\"s\":\"" + valid + "\"}\n", IngestFormat::kJsonl, schema);
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  ASSERT_TRUE(jsonl.ok()) << jsonl.status().ToString();
  for (const auto* batches : {&*csv, &*jsonl}) {
    const Column& col = (*batches)[0].columns[1];
    EXPECT_EQ(col.StringAt(0), std::string_view("a\0b", 3));
    EXPECT_EQ(col.StringAt(1), valid);
  }
  // JSON itself refuses a raw control character in a string.
  EXPECT_THAT(ErrorOf("{\"id\":1,\"s\":\"a" + std::string(1, '\0') + "b\"}\n", IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:1:"));
}

// A VARCHAR(n) column takes at most n characters (not bytes) from either format.
TEST(TextIngestTest, VarcharLengthsAreEnforcedInCharacters) {
  auto schema = MakeSchemaOrDie({F("id", DataType::Of(TypeId::kInt64), false), F("code", DataType::Varchar(3))});
  const std::string three = "\xc3\xa9\xc3\xa9\xc3\xa9";  // 3 characters, 6 bytes
  auto csv = ReadAll("id,code\n1,abc\n2," + three + "\n3,\n", IngestFormat::kCsv, schema);
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  EXPECT_EQ((*csv)[0].columns[1].StringAt(1), three);
  auto jsonl =
      ReadAll("{\"id\":1,\"code\":\"abc\"}\n{\"id\":2,\"code\":\"" + three + "\"}\n", IngestFormat::kJsonl, schema);
  ASSERT_TRUE(jsonl.ok()) << jsonl.status().ToString();

  EXPECT_THAT(ErrorOf("id,code\n1,abc\n2,abcd\n", IngestFormat::kCsv, schema),
              HasSubstr("in.txt:3:3: column 'code': a value of 4 characters exceeds VARCHAR(3)"));
  EXPECT_THAT(ErrorOf("{\"id\":1,\"code\":\"abc\"}\n{\"id\":2,\"code\":\"" + three + "\xc3\xa9\"}\n",
                      IngestFormat::kJsonl, schema),
              HasSubstr("in.txt:2:9: column 'code': a value of 4 characters exceeds VARCHAR(3)"));
}

class VectorFileTest : public ::testing::Test {
 protected:
  std::shared_ptr<const DataGenerator> Gen(uint64_t rows, uint32_t dim) {
    DatagenOptions o;
    o.rows = rows;
    o.dim = dim;
    o.latent_dim = std::min<uint32_t>(dim, 8);
    o.columns = {"emb"};
    return *DataGenerator::Make(o);
  }

  // Reads `path` and checks every row equals the generator's embedding (within `tol`).
  void ExpectMatches(const std::string& path, const DataGenerator& gen, float tol) {
    IngestOptions o;
    o.batch_rows = 1000;
    auto reader = OpenIngestReader(path, o);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    EXPECT_EQ((*reader)->schema()->ToString(),
              "id BIGINT NOT NULL, vector VECTOR(FLOAT32, " + std::to_string(gen.options().dim) + ") NOT NULL");
    uint64_t row = 0;
    std::vector<float> want(gen.options().dim);
    while (true) {
      auto b = (*reader)->Next();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (!*b) break;
      ASSERT_LE((*b)->num_rows, 1000u);
      for (size_t i = 0; i < (*b)->num_rows; ++i, ++row) {
        EXPECT_EQ((*b)->columns[0].values<int64_t>()[i], static_cast<int64_t>(row));
        gen.Embedding(row, want.data());
        const float* got = (*b)->columns[1].values<float>() + i * want.size();
        for (size_t d = 0; d < want.size(); ++d) ASSERT_NEAR(got[d], want[d], tol) << row << "," << d;
      }
    }
    EXPECT_EQ(row, gen.options().rows);
  }

  testing::TempDir dir_;
};

TEST_F(VectorFileTest, FvecsRoundTrip) {
  auto gen = Gen(2500, 16);
  ASSERT_TRUE(WriteFvecs(*gen, dir_.Join("a.fvecs")).ok());
  ExpectMatches(dir_.Join("a.fvecs"), *gen, 0);
}

TEST_F(VectorFileTest, NpyRoundTripF4AndF2) {
  auto gen = Gen(1500, 12);
  ASSERT_TRUE(WriteNpy(*gen, dir_.Join("a.npy")).ok());
  ExpectMatches(dir_.Join("a.npy"), *gen, 0);
  ASSERT_TRUE(WriteNpy(*gen, dir_.Join("h.npy"), VectorElement::kFloat16).ok());
  ExpectMatches(dir_.Join("h.npy"), *gen, 0.01f);
}

TEST_F(VectorFileTest, FvecsDimensionMismatchAndTruncation) {
  std::string rec;
  auto add = [&](int32_t d, int n) {
    rec.append(reinterpret_cast<const char*>(&d), 4);
    for (int i = 0; i < n; ++i) {
      float f = static_cast<float>(i);
      rec.append(reinterpret_cast<const char*>(&f), 4);
    }
  };
  add(2, 2);
  add(2, 2);
  add(3, 3);
  EXPECT_THAT(ErrorOf(rec, IngestFormat::kFvecs), HasSubstr("in.txt: record 2 (byte offset 24): vector dimension 3"));
  rec.clear();
  add(2, 2);
  add(2, 1);
  EXPECT_THAT(ErrorOf(rec, IngestFormat::kFvecs), HasSubstr("in.txt: record 1 (byte offset 12): truncated record"));
  rec.clear();
  add(2, 1);
  float inf = std::numeric_limits<float>::infinity();
  rec.append(reinterpret_cast<const char*>(&inf), 4);
  EXPECT_THAT(ErrorOf(rec, IngestFormat::kFvecs),
              HasSubstr("record 0 (byte offset 8): vector element 1 is not a finite"));
  EXPECT_THAT(ErrorOf(std::string("\x01\x00", 2), IngestFormat::kFvecs), HasSubstr("too short"));
  rec.clear();
  add(-1, 0);
  EXPECT_THAT(ErrorOf(rec, IngestFormat::kFvecs), HasSubstr("dimension -1 is out of range"));
}

std::string Npy(const std::string& dict, const std::string& data) {
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  h.push_back(static_cast<char>(dict.size()));
  h.push_back(0);
  return h + dict + data;
}

TEST_F(VectorFileTest, NpyHeaderErrors) {
  std::string eight(8, '\0');
  EXPECT_TRUE(
      ReadAll(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }\n", eight), IngestFormat::kNpy).ok());
  EXPECT_THAT(ErrorOf(Npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 1), }", eight), IngestFormat::kNpy),
              HasSubstr("dtype '>f4' is not supported"));
  EXPECT_THAT(ErrorOf(Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }", eight), IngestFormat::kNpy),
              HasSubstr("only C order"));
  EXPECT_THAT(ErrorOf(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", eight), IngestFormat::kNpy),
              HasSubstr("shape must be 2-D"));
  EXPECT_THAT(ErrorOf(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 1), }", eight), IngestFormat::kNpy),
              HasSubstr("record 2 (byte offset 77): truncated data"));
  EXPECT_THAT(ErrorOf(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }", eight), IngestFormat::kNpy),
              HasSubstr("4 unexpected bytes"));
  EXPECT_THAT(ErrorOf("NUMPY", IngestFormat::kNpy), HasSubstr("bad magic"));
}

TEST_F(VectorFileTest, GivenSchemaTargetsNamedAndFloat16Columns) {
  auto gen = Gen(100, 4);
  ASSERT_TRUE(WriteFvecs(*gen, dir_.Join("a.fvecs")).ok());
  IngestOptions o;
  o.schema = MakeSchemaOrDie({F("id", DataType::Of(TypeId::kInt64), false), F("note", DataType::Of(TypeId::kString)),
                              F("emb", DataType::Vector(VectorElement::kFloat16, 4), false)});
  auto reader = OpenIngestReader(dir_.Join("a.fvecs"), o);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto b = (*reader)->Next();
  ASSERT_TRUE(b.ok() && *b);
  EXPECT_EQ((*b)->num_rows, 100u);
  EXPECT_FALSE((*b)->columns[1].IsValid(0));
  std::vector<float> want(4);
  gen->Embedding(99, want.data());
  EXPECT_NEAR(std::get<std::vector<float>>((*b)->columns[2].ValueAt(99))[3], want[3], 0.01);

  o.schema = MakeSchemaOrDie({F("emb", DataType::Vector(VectorElement::kFloat32, 5), false)});
  EXPECT_THAT(OpenIngestReader(dir_.Join("a.fvecs"), o).status().message(), HasSubstr("vectors have dimension 4"));
}

// ---- What of the input an error may quote ----

// A file that is not valid input is never echoed: an error quotes at most a
// kExcerptBytes (32) excerpt of it, bytes other than printable ASCII as \xNN.
constexpr char kPublic[] = "abcdefghijklmnopqrstuvwxyz012345";  // 32 bytes
const std::string kSecret = std::string(kPublic) + "-hunter2-S3CR3T";

void ExpectNoEcho(const std::string& message, const std::string& context) {
  EXPECT_THAT(message, Not(HasSubstr("hunter2"))) << context;
  EXPECT_LT(message.size(), 400u) << context << ": " << message;
  for (char c : message) {
    unsigned char u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << context << ": a raw byte " << int(u) << " in " << message;
  }
}

TEST(IngestExcerptTest, CsvErrorsQuoteOnlyAShortExcerpt) {
  auto schema = MakeSchemaOrDie(
      {F("id", DataType::Of(TypeId::kInt32), false), F("v", DataType::Vector(VectorElement::kFloat32, 2))});
  // The first line of a password file as a header: quoted up to its first bad character.
  std::string m = ErrorOf("root:$6$" + kSecret + ":19000:0:99999:7:::\nx\n", IngestFormat::kCsv);
  EXPECT_THAT(m, HasSubstr("in.txt:1:1: column name 'root:...' has an invalid character at position 5"));
  ExpectNoEcho(m, "invalid header");
  m = ErrorOf(std::string(kPublic) + std::string(40, '_') + "hunter2\n", IngestFormat::kCsv);
  EXPECT_THAT(m, HasSubstr("column name '" + std::string(kPublic) + "...' is 79 characters long"));
  ExpectNoEcho(m, "long header");
  m = ErrorOf("id,v,x_" + std::string(kPublic) + "_hunter2\n", IngestFormat::kCsv, schema);
  EXPECT_THAT(m, HasSubstr("unknown column 'x_abcdefghijklmnopqrstuvwxyz0123...'"));
  ExpectNoEcho(m, "unknown column");
  m = ErrorOf("abc,abc\n", IngestFormat::kCsv);
  EXPECT_THAT(m, HasSubstr("in.txt:1:5: column 'abc' appears twice in the header"));
  // Values: the same excerpt, control characters and non-ASCII bytes escaped.
  m = ErrorOf("id,v\n" + kSecret + ",\"[1,2]\"\n", IngestFormat::kCsv, schema);
  EXPECT_THAT(m, HasSubstr("column 'id': '" + std::string(kPublic) + "...' is not an integer"));
  ExpectNoEcho(m, "value");
  m = ErrorOf("id,v\n\x01\x1b[2J\xc3\xa9\\,\"[1,2]\"\n", IngestFormat::kCsv, schema);
  EXPECT_THAT(m, HasSubstr("'\\x01\\x1b[2J\\xc3\\xa9\\x5c' is not an integer"));
  ExpectNoEcho(m, "control characters");
  m = ErrorOf("id,v\n1,\"" + kSecret + "\"\n", IngestFormat::kCsv, schema);
  EXPECT_THAT(m, HasSubstr("got '" + std::string(kPublic) + "...'"));
  ExpectNoEcho(m, "vector");
}

TEST(IngestExcerptTest, JsonlErrorsQuoteOnlyAShortExcerpt) {
  auto schema = MakeSchemaOrDie({F("id", DataType::Of(TypeId::kInt64), false), F("d", DataType::Decimal(5, 2))});
  std::string m = ErrorOf("TOKEN=" + kSecret + "\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("in.txt:1:1: malformed JSON: parse error"));
  EXPECT_THAT(m, HasSubstr("invalid literal; near 'T'"));
  ExpectNoEcho(m, "first line");
  // nlohmann quotes the whole token read so far; only its last bytes are shown.
  m = ErrorOf("{\"id\": \"" + kSecret + std::string(200, 'x') + "\x01\"}\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("near '..." + std::string(31, 'x') + "\\x01'"));
  ExpectNoEcho(m, "long string");
  m = ErrorOf("{\"id\": 1} " + kSecret + "\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("near '{\"id\": 1} a'; expected end of input"));
  ExpectNoEcho(m, "trailing text");
  m = ErrorOf("{\"id\": 1" + std::string(400, '0') + "}\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("malformed JSON: a number is out of range"));
  EXPECT_THAT(m, Not(HasSubstr("0000000000")));
  m = ErrorOf("{\"id\": 1, \"a" + kSecret + "\": 2}\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("column name '" + std::string("a") + std::string(kPublic).substr(0, 31) +
                           "...' has an invalid character at position 34"));
  ExpectNoEcho(m, "bad key");
  m = ErrorOf("{\"id\": 1, \"" + std::string(kPublic) + std::string(40, 'y') + "_hunter2\": 2}\n", IngestFormat::kJsonl,
              schema);
  EXPECT_THAT(m, HasSubstr("column name '" + std::string(kPublic) + "...' is 80 characters long"));
  ExpectNoEcho(m, "long key");
  m = ErrorOf("{\"id\": 1, \"" + std::string(kPublic) + "_hunter2\": 2}\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("unknown column '" + std::string(kPublic) + "...'"));
  ExpectNoEcho(m, "unknown key");
  m = ErrorOf("{\"id\": 1, \"d\": \"" + kSecret + "\"}\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("'" + std::string(kPublic) + "...' is not a DECIMAL(5,2)"));
  ExpectNoEcho(m, "decimal");
  m = ErrorOf("{\"id\": 1}\n" + kSecret + "\xff\n", IngestFormat::kJsonl, schema);
  EXPECT_THAT(m, HasSubstr("in.txt:2:48: invalid UTF-8 (byte 0xff)"));
  ExpectNoEcho(m, "utf-8");
}

TEST(IngestExcerptTest, NpyHeaderErrorsQuoteOnlyAShortExcerpt) {
  const std::string eight(8, '\0');
  std::string m = ErrorOf(Npy("{'" + kSecret + "': 1}", eight), IngestFormat::kNpy);
  EXPECT_THAT(m, HasSubstr("unexpected key '" + std::string(kPublic) + "...'"));
  ExpectNoEcho(m, "npy key");
  m = ErrorOf(Npy("{'descr': '" + kSecret + "', 'fortran_order': False, 'shape': (2, 1), }", eight),
              IngestFormat::kNpy);
  EXPECT_THAT(m, HasSubstr("dtype '" + std::string(kPublic) + "...' is not supported"));
  ExpectNoEcho(m, "npy dtype");
}

// ---- Which files are read ----

// Runs `fn` on a thread. When it has not returned after 10 s (it blocks on the
// FIFO) a writer opens and closes the FIFO to release it, and `*hung` is set: a
// regression fails the test instead of hanging it.
template <typename Fn>
auto WithFifoWatchdog(const std::string& fifo, bool* hung, Fn fn) {
  auto done = std::async(std::launch::async, fn);
  *hung = done.wait_for(std::chrono::seconds(10)) != std::future_status::ready;
  while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0) ::close(w);
  }
  return done.get();
}

TEST(IngestFileTest, OnlyRegularFilesAreRead) {
  testing::TempDir dir;
  const std::string fifo = dir.Join("pipe.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  IngestOptions o;
  bool hung = false;
  Status st = WithFifoWatchdog(fifo, &hung, [&] { return OpenIngestReader(fifo, o).status(); });
  EXPECT_FALSE(hung) << "opening a FIFO blocked";
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr(fifo + " is not a regular file (a FIFO)"));
  // `vigil import` goes the same way.
  ImportOptions import;
  import.create = true;
  st = WithFifoWatchdog(fifo, &hung, [&] { return ImportFile(dir.Join("t.vgl"), fifo, import).status(); });
  EXPECT_FALSE(hung) << "importing a FIFO blocked";
  EXPECT_THAT(st.message(), HasSubstr("is not a regular file (a FIFO)"));

  ASSERT_EQ(::mkdir(dir.Join("d.csv").c_str(), 0700), 0);
  EXPECT_THAT(OpenIngestReader(dir.Join("d.csv"), o).status().message(),
              HasSubstr("is not a regular file (a directory)"));
  o.format = IngestFormat::kCsv;
  EXPECT_THAT(OpenIngestReader("/dev/null", o).status().message(),
              HasSubstr("/dev/null is not a regular file (a character device)"));
  EXPECT_EQ(OpenIngestReader(dir.Join("missing.csv"), o).status().code(), StatusCode::kNotFound);
}

TEST(IngestFileTest, NoSymlinksRefusesALinkInAnyComponent) {
  testing::TempDir dir;
  WriteText(dir.Join("a.csv"), "x\n1\n");
  ASSERT_EQ(::mkdir(dir.Join("sub").c_str(), 0700), 0);
  WriteText(dir.Join("sub/b.csv"), "x\n2\n");
  ASSERT_EQ(::symlink(dir.Join("a.csv").c_str(), dir.Join("link.csv").c_str()), 0);
  ASSERT_EQ(::symlink(dir.Join("sub").c_str(), dir.Join("linkdir").c_str()), 0);
  ASSERT_TRUE(OpenIngestFile(dir.Join("link.csv")).ok());  // client-side: links are followed
  auto file = OpenIngestFile(dir.Join("sub/b.csv"), /*no_symlinks=*/true);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->Size(), 4u);
  EXPECT_EQ(OpenIngestFile(dir.Join("link.csv"), true).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenIngestFile(dir.Join("linkdir/b.csv"), true).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(OpenIngestFile(dir.Join("sub/../a.csv"), true).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenIngestFile("a.csv", true).status().code(), StatusCode::kInvalidArgument);
}

class ImportTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  std::string table_ = dir_.Join("db/t.vgl");
};

TEST_F(ImportTest, CreateAppendAndRejectBadFileWithoutCommitting) {
  WriteText(dir_.Join("good.csv"), "id,name\n1,a\n2,b\n");
  ImportOptions o;
  EXPECT_EQ(ImportFile(table_, dir_.Join("good.csv"), o).status().code(), StatusCode::kNotFound);
  o.create = true;
  uint64_t progress = 0;
  o.progress = [&](uint64_t rows) { progress = rows; };
  auto r = ImportFile(table_, dir_.Join("good.csv"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->created);
  EXPECT_EQ(r->rows, 2u);
  EXPECT_EQ(progress, 2u);
  auto ds = Dataset::Open(table_);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->CountRows(), 2u);
  EXPECT_EQ((*ds)->version(), r->version);

  WriteText(dir_.Join("bad.csv"), "id,name\n3,c\nfour,d\n");
  auto bad = ImportFile(table_, dir_.Join("bad.csv"), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("bad.csv:3:1: column 'id'"));
  EXPECT_EQ(*Dataset::LatestVersion(table_), r->version);
  EXPECT_EQ((*Dataset::Open(table_))->CountRows(), 2u);

  auto more = ImportFile(table_, dir_.Join("good.csv"), o);
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  EXPECT_FALSE(more->created);
  EXPECT_EQ(more->version, r->version + 1);
  EXPECT_EQ((*Dataset::Open(table_))->CountRows(), 4u);
}

TEST_F(ImportTest, FailedCreateLeavesNothingBehind) {
  WriteText(dir_.Join("bad.jsonl"), "{\"id\": 1}\n{\"id\": 2\n");
  ImportOptions o;
  o.create = true;
  o.ingest.infer_sample_rows = 1;  // the bad line is found while appending, after the table was staged
  auto r = ImportFile(table_, dir_.Join("bad.jsonl"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("bad.jsonl:2:"));
  EXPECT_FALSE(*DefaultFileSystem()->Exists(table_));
  EXPECT_TRUE(DefaultFileSystem()->ListDir(dir_.Join("db"))->empty());
}

TEST_F(ImportTest, ImportsFvecsIntoNamedVectorColumn) {
  DatagenOptions g;
  g.rows = 3000;
  g.dim = 8;
  g.latent_dim = 4;
  g.columns = {"emb"};
  auto gen = *DataGenerator::Make(g);
  ASSERT_TRUE(WriteFvecs(*gen, dir_.Join("v.fvecs")).ok());
  ImportOptions o;
  o.create = true;
  auto r = ImportFile(table_, dir_.Join("v.fvecs"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rows, 3000u);
  auto ds = *Dataset::Open(table_);
  auto scan = ds->Scan();
  ASSERT_TRUE(scan.ok());
  uint64_t rows = 0;
  while (true) {
    auto b = (*scan)->Next();
    ASSERT_TRUE(b.ok());
    if (!*b) break;
    rows += (*b)->num_rows;
  }
  EXPECT_EQ(rows, 3000u);
}

}  // namespace
}  // namespace vigil

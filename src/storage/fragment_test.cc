#include "vigil/storage/fragment.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <random>
#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/common/file_system.h"

namespace vigil {
namespace {

constexpr size_t kLongStringRow = 5;

template <typename T>
T Unwrap(Result<T> r) {
  VIGIL_CHECK(r.ok());
  return std::move(r).value();
}

SchemaPtr AllTypesSchema(bool nullable) {
  std::vector<Field> fields = {
      {-1, "b", DataType::Of(TypeId::kBool), nullable},
      {-1, "i8", DataType::Of(TypeId::kInt8), nullable},
      {-1, "i16", DataType::Of(TypeId::kInt16), nullable},
      {-1, "i32", DataType::Of(TypeId::kInt32), nullable},
      {-1, "i64", DataType::Of(TypeId::kInt64), nullable},
      {-1, "f32", DataType::Of(TypeId::kFloat32), nullable},
      {-1, "f64", DataType::Of(TypeId::kFloat64), nullable},
      {-1, "s", DataType::Of(TypeId::kString), nullable},
      {-1, "d", DataType::Of(TypeId::kDate), nullable},
      {-1, "ts", DataType::Of(TypeId::kTimestamp), nullable},
      {-1, "dec", DataType::Decimal(10, 2), nullable},
      {-1, "v16", DataType::Vector(VectorElement::kFloat16, 4), nullable},
      {-1, "v32", DataType::Vector(VectorElement::kFloat32, 3), nullable},
  };
  auto s = Schema::Make(std::move(fields));
  VIGIL_CHECK(s.ok());
  return *s;
}

// A deterministic value of `type` for `row`; every value is exactly representable.
Value ValueFor(const DataType& type, bool nullable, size_t row) {
  if (nullable && row % 7 == 3) return std::monostate{};
  const auto r = static_cast<int64_t>(row);
  switch (type.id) {
    case TypeId::kBool:
      return row % 3 == 0;
    case TypeId::kInt8:
      return r % 200 - 100;
    case TypeId::kInt16:
      return r * 37 - 20000;
    case TypeId::kInt32:
      return r * 100003 - 7;
    case TypeId::kInt64:
      return r * 1000000007LL - (1LL << 40);
    case TypeId::kFloat32:
      return static_cast<double>(r) * 0.5;
    case TypeId::kFloat64:
      return static_cast<double>(r) / 3.0;
    case TypeId::kString:
      if (row == kLongStringRow) return std::string(100000, 'L');
      return std::string(row % 40, static_cast<char>('a' + row % 26));
    case TypeId::kDate:
      return r - 5000;
    case TypeId::kTimestamp:
      return r * 1000000 + 1700000000000000LL;
    case TypeId::kDecimal:
      return r * 12345 - 99999;
    case TypeId::kVector: {
      std::vector<float> v(type.dim);
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((row + i) % 100) * 0.25f - 3.0f;
      return v;
    }
  }
  return std::monostate{};
}

std::vector<Value> RowFor(const Schema& schema, size_t row) {
  std::vector<Value> out;
  for (const Field& f : schema.fields()) out.push_back(ValueFor(f.type, f.nullable, row));
  return out;
}

// Writes `rows` rows in batches of `batch_rows`, so batches straddle blocks.
Result<FragmentFileInfo> WriteFragment(const std::string& path, SchemaPtr schema, size_t rows,
                                       FragmentWriterOptions options, size_t batch_rows = 37) {
  VIGIL_ASSIGN_OR_RETURN(auto writer, FragmentWriter::Create(DefaultFileSystem(), path, schema, options));
  for (size_t begin = 0; begin < rows; begin += batch_rows) {
    RecordBatch batch = RecordBatch::Empty(schema);
    for (size_t r = begin; r < std::min(rows, begin + batch_rows); ++r) {
      VIGIL_RETURN_IF_ERROR(batch.AppendRow(RowFor(*schema, r)));
    }
    VIGIL_RETURN_IF_ERROR(writer->Write(batch));
  }
  return writer->Finish();
}

// Checks every value of every column against ValueFor.
void ExpectAllValues(const FragmentReader& reader, const Schema& schema) {
  for (const Field& f : schema.fields()) {
    auto column = reader.ReadColumn(f.id);
    ASSERT_TRUE(column.ok()) << column.status().ToString();
    ASSERT_EQ(column->size(), reader.num_rows());
    for (size_t r = 0; r < column->size(); ++r) {
      ASSERT_EQ(column->ValueAt(r), ValueFor(f.type, f.nullable, r)) << "field " << f.name << " row " << r;
    }
  }
}

class FragmentTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) { return dir_.Join(name); }
  testing::TempDir dir_;
};

class FragmentRoundTrip : public FragmentTest, public ::testing::WithParamInterface<bool> {};

TEST_P(FragmentRoundTrip, EveryTypeAcrossBlocksWithPartialLastBlock) {
  const bool nullable = GetParam();
  SchemaPtr schema = AllTypesSchema(nullable);
  FragmentWriterOptions options;
  options.rows_per_block = 64;
  auto info = WriteFragment(Path("a.frag"), schema, 300, options);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->num_rows, 300u);
  EXPECT_EQ(info->file_size, *DefaultFileSystem()->FileSize(Path("a.frag")));

  BlockCache cache(64 << 20);
  auto reader = FragmentReader::Open(DefaultFileSystem(), Path("a.frag"), &cache);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->num_rows(), 300u);
  EXPECT_EQ((*reader)->rows_per_block(), 64u);
  EXPECT_EQ((*reader)->num_blocks(), 5u);
  ASSERT_EQ((*reader)->fields().size(), schema->num_fields());
  for (size_t i = 0; i < schema->num_fields(); ++i) {
    EXPECT_EQ((*reader)->fields()[i].id, schema->field(i).id);
    EXPECT_TRUE((*reader)->fields()[i].type == schema->field(i).type) << schema->field(i).name;
    EXPECT_EQ((*reader)->fields()[i].nullable, nullable);
  }
  auto last = (*reader)->ReadBlock(schema->field(0).id, 4);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ((*last)->size(), 300u - 4 * 64);
  ExpectAllValues(**reader, *schema);
}

INSTANTIATE_TEST_SUITE_P(Nullability, FragmentRoundTrip, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "WithNulls" : "NoNulls"; });

TEST_F(FragmentTest, ReadRowAtBlockBoundaries) {
  SchemaPtr schema = AllTypesSchema(true);
  FragmentWriterOptions options;
  options.rows_per_block = 16;
  ASSERT_TRUE(WriteFragment(Path("r.frag"), schema, 50, options).ok());
  auto reader = FragmentReader::Open(DefaultFileSystem(), Path("r.frag"), nullptr);
  ASSERT_TRUE(reader.ok());
  std::vector<int32_t> ids;
  for (const Field& f : schema->fields()) ids.push_back(f.id);
  for (uint32_t row : {0u, 15u, 16u, 17u, 31u, 32u, 47u, 48u, 49u}) {
    auto values = (*reader)->ReadRow(row, ids);
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    EXPECT_EQ(*values, RowFor(*schema, row)) << "row " << row;
  }
  EXPECT_EQ((*reader)->ReadRow(50, ids).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*reader)->ReadRow(0, {999}).status().code(), StatusCode::kNotFound);
}

TEST_F(FragmentTest, EmptyStringsOnlyAndEmptyFragment) {
  auto schema = *Schema::Make({{-1, "s", DataType::Of(TypeId::kString), false}});
  {
    auto writer = Unwrap(FragmentWriter::Create(DefaultFileSystem(), Path("e.frag"), schema, {}));
    RecordBatch batch = RecordBatch::Empty(schema);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(batch.AppendRow({std::string()}).ok());
    ASSERT_TRUE(writer->Write(batch).ok());
    ASSERT_TRUE(writer->Finish().ok());
  }
  auto reader = FragmentReader::Open(DefaultFileSystem(), Path("e.frag"), nullptr);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto column = (*reader)->ReadColumn(0);
  ASSERT_TRUE(column.ok());
  ASSERT_EQ(column->size(), 10u);
  EXPECT_EQ(column->StringAt(9), "");

  auto empty_writer = Unwrap(FragmentWriter::Create(DefaultFileSystem(), Path("z.frag"), schema, {}));
  auto info = empty_writer->Finish();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->num_rows, 0u);
  auto empty = FragmentReader::Open(DefaultFileSystem(), Path("z.frag"), nullptr);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ((*empty)->num_blocks(), 0u);
  EXPECT_EQ((*empty)->ReadColumn(0)->size(), 0u);
  EXPECT_EQ((*empty)->ReadBlock(0, 0).status().code(), StatusCode::kInvalidArgument);
}

// Writes `rows` rows of one column whose cell is produced by `cell(row)`.
Result<FragmentFileInfo> WriteOneColumn(const std::string& path, DataType type, size_t rows,
                                        const std::function<Value(size_t)>& cell) {
  VIGIL_ASSIGN_OR_RETURN(SchemaPtr schema, Schema::Make({{-1, "c", type, false}}));
  VIGIL_ASSIGN_OR_RETURN(auto writer, FragmentWriter::Create(DefaultFileSystem(), path, schema, {}));
  RecordBatch batch = RecordBatch::Empty(schema);
  for (size_t r = 0; r < rows; ++r) VIGIL_RETURN_IF_ERROR(batch.AppendRow({cell(r)}));
  VIGIL_RETURN_IF_ERROR(writer->Write(batch));
  return writer->Finish();
}

TEST_F(FragmentTest, CompressesOnlyWhenItSavesAndNeverVectors) {
  constexpr size_t kRows = 10000;
  auto zeros = WriteOneColumn(Path("z.frag"), DataType::Of(TypeId::kInt64), kRows, [](size_t) { return int64_t{0}; });
  ASSERT_TRUE(zeros.ok());
  EXPECT_LT(zeros->file_size, kRows * 8 / 10);  // compressed

  std::mt19937_64 rng(7);
  auto random = WriteOneColumn(Path("r.frag"), DataType::Of(TypeId::kInt64), kRows,
                               [&](size_t) { return static_cast<int64_t>(rng()); });
  ASSERT_TRUE(random.ok());
  EXPECT_GE(random->file_size, kRows * 8);  // stored raw

  auto vectors = WriteOneColumn(Path("v.frag"), DataType::Vector(VectorElement::kFloat32, 16), kRows,
                                [](size_t) { return std::vector<float>(16, 0.0f); });
  ASSERT_TRUE(vectors.ok());
  EXPECT_GE(vectors->file_size, kRows * 16 * 4);  // vectors are raw even when compressible

  for (const char* name : {"z.frag", "r.frag", "v.frag"}) {
    auto reader = FragmentReader::Open(DefaultFileSystem(), Path(name), nullptr);
    ASSERT_TRUE(reader.ok());
    auto column = (*reader)->ReadColumn(0);
    ASSERT_TRUE(column.ok()) << column.status().ToString();
    EXPECT_EQ(column->size(), kRows);
  }
}

class CountingObserver : public IoObserver {
 public:
  void OnRead(const std::string& path, uint64_t offset, size_t bytes) override { ++reads; }
  std::atomic<int> reads{0};
};

TEST_F(FragmentTest, SecondReadBlockIsServedFromTheCache) {
  SchemaPtr schema = AllTypesSchema(false);
  ASSERT_TRUE(WriteFragment(Path("c.frag"), schema, 100, {}).ok());
  BlockCache cache(64 << 20);
  auto reader = Unwrap(FragmentReader::Open(DefaultFileSystem(), Path("c.frag"), &cache));
  CountingObserver observer;
  ScopedIoObserver scope(&observer);
  auto first = reader->ReadBlock(4, 0);
  ASSERT_TRUE(first.ok());
  EXPECT_GT(observer.reads.load(), 0);
  EXPECT_GT(cache.usage_bytes(), 0u);
  observer.reads = 0;
  auto second = reader->ReadBlock(4, 0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(observer.reads.load(), 0);
  EXPECT_EQ(first->get(), second->get());

  auto uncached = Unwrap(FragmentReader::Open(DefaultFileSystem(), Path("c.frag"), nullptr));
  observer.reads = 0;
  ASSERT_TRUE(uncached->ReadBlock(4, 0).ok());
  ASSERT_TRUE(uncached->ReadBlock(4, 0).ok());
  EXPECT_EQ(observer.reads.load(), 2);
}

TEST_F(FragmentTest, ConcurrentReadersAgree) {
  SchemaPtr schema = AllTypesSchema(true);
  FragmentWriterOptions options;
  options.rows_per_block = 32;
  ASSERT_TRUE(WriteFragment(Path("t.frag"), schema, 200, options).ok());
  BlockCache cache(1 << 16);  // small: forces eviction while threads read
  auto reader = Unwrap(FragmentReader::Open(DefaultFileSystem(), Path("t.frag"), &cache));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t row = t; row < 200; row += 3) {
        auto v = reader->ReadRow(row, {7, 11, 12});
        if (!v.ok() || (*v)[0] != ValueFor(schema->field(7).type, true, row)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(cache.usage_bytes(), cache.capacity_bytes());
}

TEST_F(FragmentTest, WriterRejectsBadInput) {
  SchemaPtr schema = AllTypesSchema(false);
  FragmentWriterOptions bad;
  bad.rows_per_block = 0;
  EXPECT_EQ(FragmentWriter::Create(DefaultFileSystem(), Path("x.frag"), schema, bad).status().code(),
            StatusCode::kInvalidArgument);
  bad = {};
  bad.zstd_level = 1000;
  EXPECT_EQ(FragmentWriter::Create(DefaultFileSystem(), Path("x.frag"), schema, bad).status().code(),
            StatusCode::kInvalidArgument);

  auto writer = Unwrap(FragmentWriter::Create(DefaultFileSystem(), Path("w.frag"), schema, {}));
  RecordBatch wrong = RecordBatch::Empty(AllTypesSchema(true));
  ASSERT_TRUE(wrong.AppendRow(RowFor(*AllTypesSchema(true), 3)).ok());  // row 3 holds nulls
  Status st = writer->Write(wrong);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("NOT NULL"), std::string::npos) << st.ToString();

  RecordBatch narrow = RecordBatch::Empty(*Schema::Make({{-1, "b", DataType::Of(TypeId::kBool), false}}));
  EXPECT_EQ(writer->Write(narrow).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(writer->Finish().ok());
  EXPECT_EQ(writer->Finish().status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(writer->Write(RecordBatch::Empty(schema)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(FragmentWriter::Create(DefaultFileSystem(), Path("w.frag"), schema, {}).status().code(),
            StatusCode::kAlreadyExists);
}

TEST_F(FragmentTest, ReaderRejectsBadRequests) {
  SchemaPtr schema = AllTypesSchema(false);
  ASSERT_TRUE(WriteFragment(Path("q.frag"), schema, 10, {}).ok());
  auto reader = Unwrap(FragmentReader::Open(DefaultFileSystem(), Path("q.frag"), nullptr));
  EXPECT_EQ(reader->ReadBlock(99, 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reader->ReadBlock(0, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reader->ReadColumn(-5).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FragmentReader::Open(DefaultFileSystem(), Path("missing.frag"), nullptr).status().code(),
            StatusCode::kNotFound);
}

// A small fragment with nulls, strings, vectors and compressed blocks.
class FragmentCorruptionTest : public FragmentTest {
 protected:
  void SetUp() override {
    schema_ = *Schema::Make({{-1, "i", DataType::Of(TypeId::kInt64), true},
                             {-1, "s", DataType::Of(TypeId::kString), true},
                             {-1, "v", DataType::Vector(VectorElement::kFloat16, 2), true}});
    FragmentWriterOptions options;
    options.rows_per_block = 40;
    ASSERT_TRUE(WriteFragment(Path("good.frag"), schema_, 100, options, 100).ok());
    good_ = *DefaultFileSystem()->ReadFile(Path("good.frag"), 1 << 20);
  }

  // Open + read every block of `bytes`; returns the first error, checking that
  // every block that does decode holds exactly the written values.
  Status OpenAndReadAll(const std::string& bytes) {
    const std::string path = Path("bad-" + std::to_string(counter_++) + ".frag");
    {  // not synced: thousands of files, none needs to survive a crash
      VIGIL_ASSIGN_OR_RETURN(auto file, DefaultFileSystem()->NewWritableFile(path));
      VIGIL_RETURN_IF_ERROR(file->Append(bytes));
      VIGIL_RETURN_IF_ERROR(file->Close());
    }
    auto reader = FragmentReader::Open(DefaultFileSystem(), path, nullptr);
    (void)DefaultFileSystem()->RemoveFile(path);
    if (!reader.ok()) return reader.status();
    Status first;
    for (const Field& f : schema_->fields()) {
      for (size_t b = 0; b < (*reader)->num_blocks(); ++b) {
        auto block = (*reader)->ReadBlock(f.id, b);
        if (!block.ok()) {
          if (first.ok()) first = block.status();
          continue;
        }
        for (size_t r = 0; r < (*block)->size(); ++r) {
          EXPECT_EQ((*block)->ValueAt(r), ValueFor(f.type, true, b * 40 + r)) << "wrong value decoded";
        }
      }
    }
    return first;
  }

  SchemaPtr schema_;
  std::string good_;
  int counter_ = 0;
};

TEST_F(FragmentCorruptionTest, EveryByteFlipIsCorruption) {
  ASSERT_TRUE(OpenAndReadAll(good_).ok());
  for (uint8_t mask : {0x01, 0x80}) {
    for (size_t i = 0; i < good_.size(); ++i) {
      std::string bad = good_;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      Status st = OpenAndReadAll(bad);
      ASSERT_EQ(st.code(), StatusCode::kCorruption) << "byte " << i << " mask " << int(mask) << ": " << st.ToString();
    }
  }
}

TEST_F(FragmentCorruptionTest, EveryTruncationIsCorruption) {
  for (size_t n = 0; n < good_.size(); ++n) {
    Status st = OpenAndReadAll(good_.substr(0, n));
    ASSERT_EQ(st.code(), StatusCode::kCorruption) << "length " << n << ": " << st.ToString();
  }
  Status st = OpenAndReadAll(good_ + "x");
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace vigil

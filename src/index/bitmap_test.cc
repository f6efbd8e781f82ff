#include <gtest/gtest.h>

#include <limits>

#include "index/scalar_testing.h"
#include "testutil/temp_dir.h"

namespace vigil::index {
namespace {

using Op = ScalarPredicate::Op;
using testing::Case;
using testing::TypeCase;

std::vector<TypeCase> BitmapCases() {
  using S = std::string;
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  return {
      Case(DataType::Of(TypeId::kBool), {true, false}, {}),
      Case(DataType::Of(TypeId::kInt8), {int64_t{-128}, int64_t{0}, int64_t{5}, int64_t{127}}, {int64_t{6}, 5.0, 5.5}),
      Case(DataType::Of(TypeId::kInt64),
           {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0}, int64_t{9}, kMax64},
           {int64_t{1}, 9.0, -0.0, 1e19, std::numeric_limits<double>::quiet_NaN()}),
      Case(DataType::Of(TypeId::kString), {S(""), S("cat"), S("cat_a"), S("cat_b"), S("dog"), S("\xff")},
           {S("ca"), S("cat_"), S("zebra")}),
      Case(DataType::Of(TypeId::kDate), {int64_t{-1}, int64_t{0}, int64_t{19000}}, {int64_t{1}, 0.5}),
  };
}

TEST(BitmapSegmentTest, ExactAgainstScanForEveryType) {
  for (const TypeCase& c : BitmapCases()) {
    SCOPED_TRACE(c.type.ToString());
    testing::CheckExactAgainstScan(c, "BITMAP");
  }
}

TEST(BitmapSegmentTest, AnswersOnlyEqualityInAndIsNull) {
  vigil::testing::TempDir dir;
  std::vector<Value> values;
  std::vector<size_t> deleted;
  for (int64_t i = 0; i < 300; ++i) values.push_back(i % 10);
  for (size_t i = 0; i < 300; i += 10) deleted.push_back(i);  // every row with value 0
  auto ds = testing::MakeDataset(dir.Join("t.vgl"), DataType::Of(TypeId::kInt32), values, deleted, 64);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto seg = testing::BuildAndOpen(**ds, "BITMAP");
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  EXPECT_TRUE((*seg)->Supports(Op::kIn));
  EXPECT_FALSE((*seg)->Supports(Op::kLt));
  EXPECT_EQ((*seg)->Evaluate({Op::kLt, {int64_t{3}}}).status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE((*seg)->Evaluate({Op::kEq, {int64_t{0}}})->isEmpty()) << "deleted at build";
  EXPECT_EQ((*seg)->Evaluate({Op::kIn, {int64_t{1}, int64_t{2}, int64_t{2}}})->cardinality(), 60u);
  EXPECT_TRUE((*seg)->Evaluate({Op::kIsNull, {}})->isEmpty());
  EXPECT_EQ((*seg)->Evaluate({Op::kEq, {std::string("1")}}).status().code(), StatusCode::kInvalidArgument);
}

TEST(BitmapSegmentTest, UnsupportedColumnsAreRejectedBeforeAnyFile) {
  vigil::testing::TempDir dir;
  for (DataType type : {DataType::Of(TypeId::kFloat64), DataType::Of(TypeId::kTimestamp), DataType::Decimal(9, 2)}) {
    auto ds = testing::MakeDataset(dir.Join("t" + std::to_string(static_cast<int>(type.id)) + ".vgl"), type,
                                   {type.id == TypeId::kFloat64 ? Value(1.0) : Value(int64_t{1})});
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    Uuid uuid = Uuid::Generate();
    auto writer = SegmentWriter::Create((*ds)->fs(), (*ds)->path(), uuid);
    ASSERT_TRUE(writer.ok());
    Status st =
        BuildBitmapSegment(**ds, (*ds)->schema()->field(0), testing::AllFragments(**ds), writer->get(), nullptr);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    auto names = (*ds)->fs()->ListDir((*ds)->AbsPath(SegmentDir(uuid)));
    ASSERT_TRUE(names.ok());
    EXPECT_TRUE(names->empty());
  }
}

// Every flipped byte and every truncation is Corruption at Open or Evaluate; never a wrong answer.
TEST(BitmapSegmentTest, CorruptFilesAreDetected) {
  vigil::testing::TempDir dir;
  std::vector<Value> values;
  for (int i = 0; i < 200; ++i) values.push_back(std::string(i % 3 == 0 ? "red" : (i % 3 == 1 ? "green" : "blue")));
  auto ds = testing::MakeDataset(dir.Join("t.vgl"), DataType::Of(TypeId::kString), values, {4, 5}, 80);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto seg = testing::BuildAndOpen(**ds, "BITMAP");
  ASSERT_TRUE(seg.ok());
  auto bytes = (*ds)->fs()->ReadFile((*seg)->files().FilePath("bitmap.idx"), 1 << 20);
  ASSERT_TRUE(bytes.ok());
  const Field& field = (*ds)->schema()->field(0);
  const ScalarPredicate all{Op::kIn, {std::string("red"), std::string("green"), std::string("blue")}};
  ASSERT_EQ((*seg)->Evaluate(all)->cardinality(), 198u);
  auto check = [&](const std::string& mutated, const std::string& what) {
    auto files = testing::WriteRawSegment(**ds, "BITMAP", "bitmap.idx", mutated);
    ASSERT_TRUE(files.ok());
    auto opened = OpenBitmapSegment(*files, field);
    if (!opened.ok()) {
      EXPECT_EQ(opened.status().code(), StatusCode::kCorruption) << what << ": " << opened.status().ToString();
      return;
    }
    auto got = (*opened)->Evaluate(all);
    EXPECT_FALSE(got.ok()) << what << " went undetected";
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), StatusCode::kCorruption) << what;
    }
  };
  for (size_t pos = 0; pos < bytes->size(); pos += 1 + bytes->size() / 47) {
    std::string mutated = *bytes;
    mutated[pos] ^= 0x04;
    check(mutated, "flip at " + std::to_string(pos));
  }
  for (size_t n : {size_t{0}, size_t{8}, size_t{47}, bytes->size() / 2, bytes->size() - 1}) {
    check(bytes->substr(0, n), "truncation to " + std::to_string(n));
  }
}

}  // namespace
}  // namespace vigil::index

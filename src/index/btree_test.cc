#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <limits>
#include <random>

#include "index/scalar_testing.h"
#include "testutil/temp_dir.h"

namespace vigil::index {
namespace {

using Op = ScalarPredicate::Op;
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

using testing::Case;
using testing::CheckExactAgainstScan;
using testing::RandomDataset;
using testing::TypeCase;

std::vector<TypeCase> BtreeCases() {
  using S = std::string;
  return {
      Case(DataType::Of(TypeId::kInt64),
           {kMin64, int64_t{-20}, int64_t{-1}, int64_t{0}, int64_t{3}, int64_t{7}, kMax64},
           {int64_t{4}, int64_t{-21}, 2.5, -0.0, 7.0, 1e19, -1e19, kNaN}),
      Case(DataType::Of(TypeId::kInt32),
           {int64_t{-2147483648}, int64_t{-7}, int64_t{0}, int64_t{42}, int64_t{2147483647}},
           {kMax64, int64_t{6}, 0.5, -7.0}),
      Case(DataType::Of(TypeId::kFloat64), {-kInf, -1e300, -2.5, -0.0, 0.0, 1e-300, 1.5, 3.0, kInf, kNaN},
           {int64_t{0}, int64_t{3}, int64_t{-3}, 2.0, kMax64}),
      Case(DataType::Of(TypeId::kString),
           {S(""), S("a"), S("pre"), S("pref"), S("prefix"), S("prefix_a"), S("prefix_b"), S("pre\xff"), S("\xff"),
            S("b")},
           {S("prefix_"), S("zzz"), S("pr"), S("prefix_a\0", 9)}),
      Case(DataType::Of(TypeId::kDate), {int64_t{-719162}, int64_t{-1}, int64_t{0}, int64_t{19000}, int64_t{19001}},
           {int64_t{2}, 19000.5, kMin64}),
      Case(DataType::Of(TypeId::kTimestamp), {int64_t{-1000000}, int64_t{0}, int64_t{1}, int64_t{1704067200000000}},
           {int64_t{2}, kMax64, kMin64, 0.5}),
      Case(DataType::Decimal(10, 2), {int64_t{-99999}, int64_t{-150}, int64_t{0}, int64_t{150}, int64_t{151}},
           {int64_t{149}, 1.5, 1.505, -1.5, -0.0}),
  };
}

// Random data from `c`, deleting about one row in eight.

TEST(BtreeSegmentTest, ExactAgainstScanForEveryType) {
  for (const TypeCase& c : BtreeCases()) {
    SCOPED_TRACE(c.type.ToString());
    CheckExactAgainstScan(c, "BTREE");
  }
}

TEST(BtreeSegmentTest, DeletedAtBuildRowsAreAbsent) {
  vigil::testing::TempDir dir;
  std::vector<Value> values;
  std::vector<size_t> deleted;
  for (int64_t i = 0; i < 100; ++i) values.push_back(i);
  for (size_t i = 10; i < 20; ++i) deleted.push_back(i);
  auto ds = testing::MakeDataset(dir.Join("t.vgl"), DataType::Of(TypeId::kInt64), values, deleted, 40);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto seg = testing::BuildAndOpen(**ds, "BTREE", 8);
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  EXPECT_TRUE((*seg)->Evaluate({Op::kEq, {int64_t{15}}})->isEmpty());
  EXPECT_EQ((*seg)->Evaluate({Op::kBetween, {int64_t{0}, int64_t{99}}})->cardinality(), 90u);
  EXPECT_EQ((*seg)->Evaluate({Op::kLt, {int64_t{20}}})->cardinality(), 10u);
}

TEST(BtreeSegmentTest, MalformedPredicatesAreInvalidArgument) {
  vigil::testing::TempDir dir;
  auto ds = testing::MakeDataset(dir.Join("t.vgl"), DataType::Of(TypeId::kInt64), {int64_t{1}, int64_t{2}});
  ASSERT_TRUE(ds.ok());
  auto seg = testing::BuildAndOpen(**ds, "BTREE");
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ((*seg)->Evaluate({Op::kBetween, {int64_t{1}}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*seg)->Evaluate({Op::kEq, {}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*seg)->Evaluate({Op::kEq, {std::string("1")}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*seg)->Evaluate({Op::kIn, {int64_t{1}, true}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*seg)->Evaluate({Op::kEq, {std::monostate{}}})->isEmpty());
  EXPECT_TRUE((*seg)->Evaluate({Op::kBetween, {int64_t{2}, int64_t{1}}})->isEmpty());
  EXPECT_TRUE((*seg)->Evaluate({Op::kIn, {}})->isEmpty());
}

TEST(BtreeSegmentTest, UnsupportedColumnsAreRejectedBeforeAnyFile) {
  vigil::testing::TempDir dir;
  auto ds = testing::MakeDataset(dir.Join("t.vgl"), DataType::Of(TypeId::kBool), {true, false});
  ASSERT_TRUE(ds.ok());
  Field bool_field = (*ds)->schema()->field(0);
  Field vector_field{bool_field.id, "v", DataType::Vector(VectorElement::kFloat32, 4), false};
  Field nullable = bool_field;
  nullable.type = DataType::Of(TypeId::kInt64);
  nullable.nullable = true;
  for (const Field& f : {bool_field, vector_field, nullable}) {
    Uuid uuid = Uuid::Generate();
    auto writer = SegmentWriter::Create((*ds)->fs(), (*ds)->path(), uuid);
    ASSERT_TRUE(writer.ok());
    Status st = BuildBtreeSegment(**ds, f, testing::AllFragments(**ds), writer->get(), nullptr);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    auto names = (*ds)->fs()->ListDir((*ds)->AbsPath(SegmentDir(uuid)));
    ASSERT_TRUE(names.ok());
    EXPECT_TRUE(names->empty());
  }
  auto writer = SegmentWriter::Create((*ds)->fs(), (*ds)->path(), Uuid::Generate());
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(BuildBtreeSegment(**ds, bool_field, {9999}, writer->get(), nullptr).code(), StatusCode::kInvalidArgument);
}

class CountingObserver : public IoObserver {
 public:
  void OnRead(const std::string& path, uint64_t offset, size_t bytes) override {
    if (path.size() >= 9 && path.compare(path.size() - 9, 9, "btree.idx") == 0) ++reads;
  }
  int reads = 0;
};

TEST(BtreeSegmentTest, PointLookupReadsAtMostTwoPages) {
  vigil::testing::TempDir dir;
  std::vector<Value> values;
  for (int64_t i = 0; i < 1000; ++i) values.push_back((i * 7919) % 1000);  // each of 0..999 once, shuffled
  auto ds = testing::MakeDataset(dir.Join("t.vgl"), DataType::Of(TypeId::kInt64), values, {}, 1000);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto built = testing::BuildAndOpen(**ds, "BTREE", 64);  // 16 pages
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const Field& field = (*ds)->schema()->field(0);
  auto files = SegmentFiles::Open((*ds)->fs(), (*ds)->path(), (*built)->meta());
  ASSERT_TRUE(files.ok());
  for (int64_t v : {int64_t{0}, int64_t{63}, int64_t{64}, int64_t{500}, int64_t{999}, int64_t{-1}, int64_t{1000}}) {
    auto seg = OpenBtreeSegment(*files, field);
    ASSERT_TRUE(seg.ok());
    CountingObserver observer;
    {
      ScopedIoObserver scope(&observer);
      auto got = (*seg)->Evaluate({Op::kEq, {v}});
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(got->cardinality(), v >= 0 && v < 1000 ? 1u : 0u) << v;
      EXPECT_LE(observer.reads, 2) << v;
      observer.reads = 0;
      ASSERT_TRUE((*seg)->Evaluate({Op::kEq, {v}}).ok());
    }
    EXPECT_EQ(observer.reads, 0) << "decoded pages are cached";
  }
}

// Every flipped byte and every truncation is Corruption at Open or Evaluate; never a wrong answer.
TEST(BtreeSegmentTest, CorruptFilesAreDetected) {
  vigil::testing::TempDir dir;
  TypeCase c = BtreeCases()[3];  // STRING
  auto ds = RandomDataset(dir.Join("t.vgl"), c, 3, 150);
  ASSERT_TRUE(ds.ok());
  auto seg = testing::BuildAndOpen(**ds, "BTREE", 16);
  ASSERT_TRUE(seg.ok());
  auto bytes = (*ds)->fs()->ReadFile((*seg)->files().FilePath("btree.idx"), 1 << 20);
  ASSERT_TRUE(bytes.ok());
  const Field& field = (*ds)->schema()->field(0);
  const ScalarPredicate all{Op::kGe, {std::string("")}};
  const Roaring64Map expected = *(*seg)->Evaluate(all);
  auto check = [&](const std::string& mutated, const std::string& what) {
    auto files = testing::WriteRawSegment(**ds, "BTREE", "btree.idx", mutated);
    ASSERT_TRUE(files.ok());
    auto opened = OpenBtreeSegment(*files, field);
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
    mutated[pos] ^= 0x20;
    check(mutated, "flip at " + std::to_string(pos));
  }
  for (size_t n : {size_t{0}, size_t{8}, size_t{40}, size_t{48}, bytes->size() / 2, bytes->size() - 1}) {
    check(bytes->substr(0, n), "truncation to " + std::to_string(n));
  }
  ASSERT_TRUE((*ds)->fs()->RemoveFile((*seg)->files().FilePath("btree.idx")).ok());
  ASSERT_TRUE(WriteFileDurably((*ds)->fs(), (*seg)->files().FilePath("btree.idx"), bytes->substr(1)).ok());
  EXPECT_EQ(SegmentFiles::Open((*ds)->fs(), (*ds)->path(), (*seg)->meta()).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(expected.cardinality(), testing::ScanMatches(testing::LiveRows(**ds), all, c.type).cardinality());
}

}  // namespace
}  // namespace vigil::index

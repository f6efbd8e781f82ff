#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>

#include "index/scalar_format.h"

namespace vigil::index {
namespace {

using Op = ScalarPredicate::Op;
const DataType kBigint = DataType::Of(TypeId::kInt64);
const DataType kDouble = DataType::Of(TypeId::kFloat64);
const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(PredicateTest, NumbersCompareExactlyAcrossIntAndDouble) {
  constexpr int64_t kBig = (int64_t{1} << 53) + 1;  // not representable as a double
  EXPECT_EQ(CompareValues(kBig, static_cast<double>(kBig - 1), kBigint), 1);
  EXPECT_EQ(CompareValues(int64_t{2}, 2.5, kBigint), -1);
  EXPECT_EQ(CompareValues(int64_t{-3}, -2.5, kBigint), -1);
  EXPECT_EQ(CompareValues(int64_t{3}, 3.0, kBigint), 0);
  EXPECT_EQ(CompareValues(std::numeric_limits<int64_t>::max(), 9.3e18, kBigint), -1);
  EXPECT_EQ(CompareValues(std::numeric_limits<int64_t>::min(), -9.3e18, kBigint), 1);
  EXPECT_EQ(CompareValues(2.5, int64_t{2}, kDouble), 1);
}

TEST(PredicateTest, NegativeZeroEqualsZeroAndNaNSortsLast) {
  EXPECT_EQ(CompareValues(-0.0, 0.0, kDouble), 0);
  EXPECT_TRUE(PredicateMatches({Op::kEq, {0.0}}, -0.0, kDouble));
  EXPECT_EQ(CompareValues(kNaN, kNaN, kDouble), 0);
  EXPECT_EQ(CompareValues(kNaN, std::numeric_limits<double>::infinity(), kDouble), 1);
  EXPECT_EQ(CompareValues(int64_t{5}, kNaN, kBigint), -1);
  EXPECT_TRUE(PredicateMatches({Op::kEq, {kNaN}}, kNaN, kDouble));
}

TEST(PredicateTest, DecimalDoublesAreRealValues) {
  const DataType dec = DataType::Decimal(10, 2);
  EXPECT_EQ(CompareValues(int64_t{150}, 1.5, dec), 0);  // 1.50
  EXPECT_EQ(CompareValues(int64_t{150}, int64_t{150}, dec), 0);
  EXPECT_EQ(CompareValues(int64_t{151}, 1.505, dec), 1);
}

TEST(PredicateTest, StringsCompareBytewise) {
  const DataType str = DataType::Of(TypeId::kString);
  EXPECT_EQ(CompareValues(std::string("pre"), std::string("prefix"), str), -1);
  EXPECT_EQ(CompareValues(std::string("\xff"), std::string("a"), str), 1);
  EXPECT_TRUE(PredicateMatches({Op::kBetween, {std::string("a"), std::string("b")}}, std::string("ab"), str));
}

TEST(PredicateTest, NullsAndMalformedPredicatesMatchNothing) {
  EXPECT_TRUE(PredicateMatches({Op::kIsNull, {}}, std::monostate{}, kBigint));
  EXPECT_FALSE(PredicateMatches({Op::kIsNull, {}}, int64_t{1}, kBigint));
  EXPECT_FALSE(PredicateMatches({Op::kEq, {int64_t{1}}}, std::monostate{}, kBigint));
  EXPECT_FALSE(PredicateMatches({Op::kEq, {std::monostate{}}}, int64_t{1}, kBigint));
  EXPECT_FALSE(PredicateMatches({Op::kBetween, {int64_t{1}}}, int64_t{1}, kBigint));
  EXPECT_FALSE(PredicateMatches({Op::kEq, {std::string("1")}}, int64_t{1}, kBigint));
  EXPECT_FALSE(PredicateMatches({Op::kBetween, {int64_t{2}, int64_t{1}}}, int64_t{1}, kBigint));
  EXPECT_FALSE(PredicateMatches({Op::kIn, {}}, int64_t{1}, kBigint));
  EXPECT_TRUE(PredicateMatches({Op::kIn, {std::string("x"), int64_t{1}}}, int64_t{1}, kBigint));
  EXPECT_EQ(internal::ValidatePredicateShape({Op::kEq, {std::string("1")}}, kBigint).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(internal::ValidatePredicateShape({Op::kIsNull, {int64_t{1}}}, kBigint).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(internal::ValidatePredicateShape({Op::kIn, {std::monostate{}, 2.5}}, kBigint).ok());
}

// Sorting needs a total order: antisymmetric and transitive over doubles and ints mixed.
RC_GTEST_PROP(PredicateTest, CompareValuesIsATotalOrder, (int64_t a, double b, int64_t c)) {
  const Value va = a, vb = b, vc = static_cast<double>(c) / 3;
  RC_ASSERT(CompareValues(va, vb, kBigint) == -CompareValues(vb, va, kBigint));
  if (CompareValues(va, vb, kBigint) <= 0 && CompareValues(vb, vc, kBigint) <= 0) {
    RC_ASSERT(CompareValues(va, vc, kBigint) <= 0);
  }
}

// The float sort key orders canonical doubles like CompareValues and inverts exactly.
RC_GTEST_PROP(PredicateTest, FloatSortKeyMatchesCompareValues, (double a, double b)) {
  using internal::FixedKeyOf;
  const int64_t ka = FixedKeyOf(Value(a), internal::KeyKind::kFloat);
  const int64_t kb = FixedKeyOf(Value(b), internal::KeyKind::kFloat);
  RC_ASSERT(internal::FloatFromSortKey(internal::FloatSortKey(ka)) == ka);
  const int64_t sa = internal::FloatSortKey(ka), sb = internal::FloatSortKey(kb);
  RC_ASSERT((sa < sb ? -1 : (sa > sb ? 1 : 0)) == CompareValues(a, b, kDouble));
}

}  // namespace
}  // namespace vigil::index

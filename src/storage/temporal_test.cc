// DATE and TIMESTAMP text (vigil/storage/temporal.h): the forms accepted, the
// calendar checks, zones, integer microseconds, and the messages ingest and the
// SQL parser both show.
#include "vigil/storage/temporal.h"

#include <gtest/gtest.h>

#include "vigil/storage/column.h"

namespace vigil {
namespace {

TEST(TemporalTextTest, DatesAreExactlyYearMonthDay) {
  int64_t days = -1;
  ASSERT_TRUE(ParseDateText("1970-01-02", &days));
  EXPECT_EQ(days, 1);
  ASSERT_TRUE(ParseDateText("1969-12-31", &days));
  EXPECT_EQ(days, -1);
  EXPECT_TRUE(ParseDateText("2024-02-29", &days));
  EXPECT_TRUE(ParseDateText("2000-02-29", &days));
  for (const char* bad : {"2023-02-29", "1900-02-29", "2024-04-31", "2024-13-01", "2024-00-10", "0000-01-01",
                          "2024-1-01", " 2024-01-01", "2024-01-01T00:00", "24-01-01", ""}) {
    EXPECT_FALSE(ParseDateText(bad, &days)) << bad;
  }
}

TEST(TemporalTextTest, TimestampsTakeATimeAZoneAndAFraction) {
  int64_t us = -1;
  ASSERT_TRUE(ParseTimestampText("1970-01-01T00:00:01.5Z", &us, true));
  EXPECT_EQ(us, 1500000);
  ASSERT_TRUE(ParseTimestampText("1970-01-01 01:00:00+01:00", &us, true));
  EXPECT_EQ(us, 0);
  ASSERT_TRUE(ParseTimestampText("1970-01-01t00:00-0130", &us, true));
  EXPECT_EQ(us, 5400LL * 1000000);
  ASSERT_TRUE(ParseTimestampText("1970-01-01T00:00:00.1234567", &us, true));
  EXPECT_EQ(us, 123456);  // digits past microseconds are dropped
  EXPECT_FALSE(ParseTimestampText("1970-01-01", &us, true));
  ASSERT_TRUE(ParseTimestampText("1970-01-02", &us, false));
  EXPECT_EQ(us, 86400LL * 1000000);
  for (const char* bad : {"1970-01-01T25:00:00", "1970-01-01T00:60", "1970-01-01T00:00:00.", "1970-01-01T00:00+24:00",
                          "1970-01-01X00:00", "1970-01-01T00:00 "}) {
    EXPECT_FALSE(ParseTimestampText(bad, &us, false)) << bad;
  }
}

TEST(TemporalTextTest, ValuesIgnoreBlanksAndRoundTripThroughValueToString) {
  EXPECT_EQ(*ParseDateValue(" \t2024-03-01 "), *ParseDateValue("2024-03-01"));
  EXPECT_EQ(ValueToString(Value(*ParseDateValue("2024-03-01")), DataType::Of(TypeId::kDate)), "2024-03-01");
  Result<int64_t> ts = ParseTimestampValue(" 2024-03-01T12:34:56.000789Z\t");
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  EXPECT_EQ(ValueToString(Value(*ts), DataType::Of(TypeId::kTimestamp)), "2024-03-01 12:34:56.000789");
  // A TIMESTAMP may also be given as microseconds since the epoch.
  EXPECT_EQ(*ParseTimestampValue("+1500000"), 1500000);
  EXPECT_EQ(*ParseTimestampValue("-1"), -1);
}

TEST(TemporalTextTest, ErrorsQuoteAnExcerptOfTheText) {
  Result<int64_t> d = ParseDateValue("2023-02-30");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(), "'2023-02-30' is not a DATE (expected YYYY-MM-DD)");
  Result<int64_t> t = ParseTimestampValue(std::string(40, 'x') + "\n");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "'" + std::string(32, 'x') +
                                      "...' is not a TIMESTAMP (expected YYYY-MM-DD[THH:MM[:SS[.ffffff]]][Z|+HH:MM])");
}

}  // namespace
}  // namespace vigil

#include "vigil/common/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace vigil {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Status UseHalf(int x, int* out) {
  VIGIL_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::OK();
}

TEST(StatusTest, CodesRoundTripThroughNames) {
  for (int c = 0; c <= static_cast<int>(kLastStatusCode); ++c) {
    auto code = static_cast<StatusCode>(c);
    auto parsed = StatusCodeFromName(StatusCodeName(code));
    ASSERT_TRUE(parsed.has_value()) << c;
    EXPECT_EQ(*parsed, code);
  }
  EXPECT_FALSE(StatusCodeFromName("NO_SUCH_CODE").has_value());
}

TEST(StatusTest, SubCodeIsTheTypedWordLeadingAMessage) {
  EXPECT_EQ(SubCodeOf("INDEX_FENCED: index 'i' is held by job 7"), "INDEX_FENCED");
  EXPECT_EQ(SubCodeOf("RESULT_TOO_LARGE: 12 rows"), "RESULT_TOO_LARGE");
  EXPECT_EQ(SubCodeOf("table d.t: not found"), "");  // lower case: prose, not a code
  EXPECT_EQ(SubCodeOf(": x"), "");
  EXPECT_EQ(SubCodeOf("NO_SEPARATOR"), "");
  EXPECT_EQ(SubCodeOf(std::string(65, 'A') + ": too long"), "");
  EXPECT_EQ(SubCodeOf(std::string(64, 'A') + ": fits"), std::string(64, 'A'));
}

TEST(StatusTest, ToStringAndContext) {
  Status s = Status::Corruption("bad block").WithContext("data/x.frag");
  EXPECT_EQ(s.ToString(), "CORRUPTION: data/x.frag: bad block");
  EXPECT_EQ(Status::OK().ToString(), "OK");
  EXPECT_TRUE(Status::OK().WithContext("x").ok());
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(Status::FromErrno(ENOSPC, "write").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Status::FromErrno(EIO, "write").code(), StatusCode::kIOError);
  EXPECT_NE(Status::FromErrno(EIO, "write a").message().find("write a"), std::string::npos);
}

TEST(ResultTest, ValueAndErrorPropagate) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status st = UseHalf(7, &out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "odd: 7");
  EXPECT_EQ(out, 4);
}

}  // namespace
}  // namespace vigil

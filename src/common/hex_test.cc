#include "vigil/common/hex.h"

#include <gtest/gtest.h>

#include <string>

namespace vigil {
namespace {

TEST(HexTest, EveryByteValueIsTwoLowerCaseDigits) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string hex = LowerHex(all);
  ASSERT_EQ(hex.size(), 512u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(std::stoi(hex.substr(2 * static_cast<size_t>(b), 2), nullptr, 16), b) << "byte " << b;
  }
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(HexTest, EveryLengthAndOffsetMatchesTheDigitsOfEachByte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) bytes += static_cast<char>((i * 37 + 11) & 0xff);
  constexpr char kDigits[] = "0123456789abcdef";
  for (size_t offset = 0; offset < 17; ++offset) {
    for (size_t len = 0; offset + len <= 100; ++len) {
      std::string expected = "<";
      for (size_t i = offset; i < offset + len; ++i) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        expected += kDigits[b >> 4];
        expected += kDigits[b & 15];
      }
      std::string out = "<";
      AppendLowerHex(out, std::string_view(bytes).substr(offset, len));
      ASSERT_EQ(out, expected) << "offset " << offset << " length " << len;
    }
  }
}

TEST(HexTest, AppendsAfterWhatIsThere) {
  std::string out = "x'";
  AppendLowerHex(out, std::string("\x00\x7f\xff", 3));
  AppendLowerHex(out, "");
  EXPECT_EQ(out, "x'007fff");
}

TEST(HexTest, ParsesWhatItWritesInEitherCaseAndNothingElse) {
  const std::string bytes("\x00\x7f\xff\x10", 4);
  EXPECT_EQ(ParseHex(LowerHex(bytes)), bytes);
  EXPECT_EQ(ParseHex("007FfF10"), bytes);
  EXPECT_EQ(ParseHex(""), std::string());
  for (const char* bad : {"0", "0g", "zz", "00 1", "-1"}) EXPECT_FALSE(ParseHex(bad).has_value()) << bad;
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('b'), 11);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
}

}  // namespace
}  // namespace vigil

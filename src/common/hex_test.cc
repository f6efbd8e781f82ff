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

TEST(HexTest, AppendsAfterWhatIsThere) {
  std::string out = "x'";
  AppendLowerHex(out, std::string("\x00\x7f\xff", 3));
  AppendLowerHex(out, "");
  EXPECT_EQ(out, "x'007fff");
}

}  // namespace
}  // namespace vigil

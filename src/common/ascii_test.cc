#include "vigil/common/ascii.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace vigil {
namespace {

TEST(AsciiTest, EveryByteFoldsAsTheCLocaleFoldsIt) {
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    const char expected = b < 128 ? static_cast<char>(std::tolower(b)) : c;
    EXPECT_EQ(AsciiLower(c), expected) << "byte " << b;
  }
}

TEST(AsciiTest, LoweredAndEqualsIgnoreCase) {
  EXPECT_EQ(AsciiLowered("Idempotency-KEY"), "idempotency-key");
  EXPECT_EQ(AsciiLowered(""), "");
  EXPECT_EQ(AsciiLowered("\xC3\x89t\xC3\xA9 Z@[`{"), "\xC3\x89t\xC3\xA9 z@[`{");  // UTF-8 and A-Z's neighbours
  EXPECT_TRUE(AsciiEqualsIgnoreCase("Content-Length", "content-LENGTH"));
  EXPECT_TRUE(AsciiEqualsIgnoreCase("", ""));
  EXPECT_FALSE(AsciiEqualsIgnoreCase("content-length", "content-lengths"));
  EXPECT_FALSE(AsciiEqualsIgnoreCase("@", "`"));  // 0x40 and 0x60 differ by the case bit, but are not letters
  EXPECT_FALSE(AsciiEqualsIgnoreCase("\xC3\x89", "\xC3\xA9"));
}

}  // namespace
}  // namespace vigil

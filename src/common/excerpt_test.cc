// Excerpts of input in messages (vigil/common/excerpt.h): at most kExcerptBytes
// bytes, quoted, bytes other than printable ASCII (and '\') escaped.
#include "vigil/common/excerpt.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(ExcerptTest, QuotesAShortPrefixAndEscapesWhatIsNotPrintable) {
  EXPECT_EQ(Excerpt("abc"), "'abc'");
  EXPECT_EQ(Excerpt(std::string_view("a\0b\\", 4)), "'a\\x00b\\x5c'");
  EXPECT_EQ(Excerpt("\xff\n"), "'\\xff\\x0a'");
  EXPECT_EQ(Excerpt(std::string(33, 'x')), "'" + std::string(kExcerptBytes, 'x') + "...'");
  EXPECT_EQ(Excerpt("abcdef", 2), "'ab...'");
  EXPECT_EQ(Excerpt("abcdef", 100), "'abcdef'");
}

TEST(ExcerptTest, TheEndQuotesAShortSuffix) {
  EXPECT_EQ(ExcerptEnd("abc"), "'abc'");
  EXPECT_EQ(ExcerptEnd(std::string(40, 'x') + "end"), "'..." + std::string(kExcerptBytes - 3, 'x') + "end'");
}

}  // namespace
}  // namespace vigil

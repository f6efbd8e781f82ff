#include "vigil/common/json_nesting.h"

#include <gtest/gtest.h>

#include <string>

#include "vigil/common/bounds.h"

namespace vigil {
namespace {

std::string Nested(int depth, char open, char close) { return std::string(depth, open) + std::string(depth, close); }

TEST(JsonNestingTest, DocumentsUpToTheBoundPassAndOneLevelMoreIsRefusedWithItsOffset) {
  EXPECT_TRUE(CheckJsonNesting(Nested(bounds::kMaxJsonDepth, '[', ']'), bounds::kMaxJsonDepth, "the body").ok());
  const Status deep = CheckJsonNesting(Nested(bounds::kMaxJsonDepth + 1, '[', ']'), bounds::kMaxJsonDepth, "the body");
  ASSERT_EQ(deep.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deep.message(), "the body nests arrays and objects deeper than 64 levels (at byte 64)");
  std::string objects;
  for (int i = 0; i <= bounds::kMaxJsonDepth; ++i) objects += "{\"a\":";
  EXPECT_EQ(CheckJsonNesting(objects + "1", bounds::kMaxJsonDepth, "a row").code(), StatusCode::kInvalidArgument);
}

TEST(JsonNestingTest, BracketsInStringsAndEscapedQuotesDoNotCount) {
  const std::string in_string = "{\"k\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  EXPECT_TRUE(CheckJsonNesting(in_string, 2, "x").ok());
  // An escaped backslash ends the escape: the quote after it closes the string.
  EXPECT_EQ(CheckJsonNesting("[\"\\\\\", [[1]]]", 2, "x").code(), StatusCode::kInvalidArgument);
}

TEST(JsonNestingTest, AHundredThousandLevelsAndAMillionSiblingsTakeOnePass) {
  EXPECT_EQ(CheckJsonNesting(Nested(100'000, '[', ']'), bounds::kMaxJsonDepth, "x").code(),
            StatusCode::kInvalidArgument);
  std::string wide = "[";
  for (int i = 0; i < 1'000'000; ++i) wide += "[],";
  wide += "[]]";
  EXPECT_TRUE(CheckJsonNesting(wide, 2, "x").ok());
  // Closers past the top level never make room for deeper nesting.
  EXPECT_EQ(CheckJsonNesting("]]]]" + Nested(3, '[', ']'), 2, "x").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vigil

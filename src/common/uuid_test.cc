#include "vigil/common/uuid.h"

#include <gtest/gtest.h>

#include <set>

#include "vigil/common/checksum.h"
#include "vigil/common/names.h"

namespace vigil {
namespace {

TEST(UuidTest, GenerateIsV4AndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    Uuid u = Uuid::Generate();
    std::string s = u.ToString();
    ASSERT_EQ(s.size(), 36u);
    EXPECT_EQ(s[14], '4');
    EXPECT_TRUE(s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b');
    EXPECT_TRUE(seen.insert(s).second);
    auto parsed = Uuid::Parse(s);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, u);
  }
}

TEST(UuidTest, ParseRejectsMalformed) {
  EXPECT_FALSE(Uuid::Parse("").ok());
  EXPECT_FALSE(Uuid::Parse("3f1e0c2a-8b7d-4c1e-9a2b-0d4e5f60718").ok());
  EXPECT_FALSE(Uuid::Parse("3f1e0c2a_8b7d-4c1e-9a2b-0d4e5f607182").ok());
  EXPECT_FALSE(Uuid::Parse("3f1e0c2a-8b7d-4c1e-9a2b-0d4e5f60718g").ok());
  EXPECT_TRUE(Uuid::Parse("3F1E0C2A-8B7D-4C1E-9A2B-0D4E5F607182").ok());
  EXPECT_TRUE(Uuid().IsNil());
}

TEST(ChecksumTest, StreamingEqualsOneShot) {
  std::string data(10000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  StreamingChecksum s;
  s.Update(data.data(), 1234);
  s.Update(data.data() + 1234, data.size() - 1234);
  EXPECT_EQ(s.Digest(), Checksum64(data));
  std::string flipped = data;
  flipped[5000] ^= 1;
  EXPECT_NE(Checksum64(flipped), Checksum64(data));
  EXPECT_EQ(ChecksumToHex(0x1234), "0000000000001234");
}

TEST(NamesTest, Identifiers) {
  EXPECT_TRUE(ValidateIdentifier("docs", "table name").ok());
  EXPECT_TRUE(ValidateIdentifier("_x9", "table name").ok());
  EXPECT_TRUE(ValidateIdentifier(std::string(64, 'a'), "t").ok());
  EXPECT_FALSE(ValidateIdentifier(std::string(65, 'a'), "t").ok());
  EXPECT_FALSE(ValidateIdentifier("", "t").ok());
  EXPECT_FALSE(ValidateIdentifier("9x", "t").ok());
  Status st = ValidateIdentifier("a-b", "column name");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("column name 'a-b'"), std::string::npos);
  EXPECT_NE(st.message().find("position 2"), std::string::npos);
}

}  // namespace
}  // namespace vigil

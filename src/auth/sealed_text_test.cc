#include "vigil/auth/sealed_text.h"

#include <gtest/gtest.h>

#include <string>

namespace vigil::auth {
namespace {

ServerSecret SecretOf(char fill) { return *ServerSecret::FromBytes(std::string(ServerSecret::kSize, fill)); }

TEST(SealedTextTest, OpensUnderTheSameSecretAndContextOnly) {
  const ServerSecret secret = SecretOf('a');
  const std::string text = R"({"results":[{"columns":["User","Token"],"rows":[["bob","vgl_0123_abcd"]]}]})";
  Result<std::string> sealed = SealText(secret, "default:admin\nkey-1", text);
  ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
  EXPECT_EQ(sealed->size(), SealedTextSize(text.size()));
  EXPECT_EQ(sealed->find("vgl_0123"), std::string::npos);
  EXPECT_EQ(*OpenSealedText(secret, "default:admin\nkey-1", *sealed), text);

  EXPECT_TRUE(OpenSealedText(SecretOf('b'), "default:admin\nkey-1", *sealed).status().Is(StatusCode::kCorruption));
  EXPECT_TRUE(OpenSealedText(secret, "default:admin\nkey-2", *sealed).status().Is(StatusCode::kCorruption));
}

TEST(SealedTextTest, EachSealingDrawsANewNonce) {
  const ServerSecret secret = SecretOf('a');
  EXPECT_NE(*SealText(secret, "c", "same text"), *SealText(secret, "c", "same text"));
  EXPECT_EQ(*OpenSealedText(secret, "c", *SealText(secret, "c", "")), "");
}

TEST(SealedTextTest, AnAlteredOrMalformedTextIsCorruption) {
  const ServerSecret secret = SecretOf('a');
  const std::string sealed = *SealText(secret, "c", "a bearer token");
  for (size_t at : {size_t{3}, size_t{3 + 24}, sealed.size() - 1}) {
    std::string altered = sealed;
    altered[at] = altered[at] == '0' ? '1' : '0';
    Status st = OpenSealedText(secret, "c", altered).status();
    EXPECT_TRUE(st.Is(StatusCode::kCorruption)) << "flip at " << at << ": " << st.ToString();
    EXPECT_EQ(st.message().find(altered), std::string::npos);
  }
  for (const std::string& bad : {std::string(""), std::string("v2:") + sealed.substr(3), sealed.substr(0, 40),
                                 sealed.substr(0, sealed.size() - 1), "v1:" + std::string(56, 'Z')}) {
    EXPECT_TRUE(OpenSealedText(secret, "c", bad).status().Is(StatusCode::kCorruption)) << bad;
  }
  EXPECT_EQ(SealText(ServerSecret(), "c", "x").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vigil::auth

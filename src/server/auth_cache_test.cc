#include "server/auth_cache.h"

#include <gtest/gtest.h>

#include "testutil/fake_env.h"

namespace vigil::server {
namespace {

auth::Authenticated Caller(const std::string& user) {
  auth::Authenticated a;
  a.realm = "default";
  a.token_id = "t-" + user;
  a.principal.name = user;
  return a;
}

TEST(AuthCacheTest, ATokenIsTrustedForTheTtlOnly) {
  testing::FakeEnv env;
  AuthCache cache(&env, 1000, 16);
  EXPECT_FALSE(cache.Find("token-a").has_value());
  cache.Insert("token-a", Caller("alice"), cache.Generation());
  auto found = cache.Find("token-a");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->principal.name, "alice");
  EXPECT_FALSE(cache.Find("token-b").has_value());
  env.AdvanceMs(999);
  EXPECT_TRUE(cache.Find("token-a").has_value());
  env.AdvanceMs(1);
  EXPECT_FALSE(cache.Find("token-a").has_value());
}

TEST(AuthCacheTest, AClearForgetsEverythingAndRefusesAnAuthenticationThatBeganBeforeIt) {
  testing::FakeEnv env;
  AuthCache cache(&env, 1000, 16);
  cache.Insert("token-a", Caller("alice"), cache.Generation());
  const uint64_t before = cache.Generation();  // an authentication reads the store now...
  cache.Clear();                               // ... a GRANT commits and clears ...
  EXPECT_FALSE(cache.Find("token-a").has_value());
  cache.Insert("token-b", Caller("bob"), before);  // ... and its older answer is not kept
  EXPECT_FALSE(cache.Find("token-b").has_value());
  cache.Insert("token-b", Caller("bob"), cache.Generation());
  EXPECT_TRUE(cache.Find("token-b").has_value());
}

TEST(AuthCacheTest, ItHoldsAtMostItsCapacityAndAZeroTtlKeepsNothing) {
  testing::FakeEnv env;
  AuthCache cache(&env, 1000, 2);
  cache.Insert("t1", Caller("a"), cache.Generation());
  env.AdvanceMs(1000);  // t1 expired
  cache.Insert("t2", Caller("b"), cache.Generation());
  cache.Insert("t3", Caller("c"), cache.Generation());  // full: the expired entry goes
  EXPECT_TRUE(cache.Find("t2").has_value());
  EXPECT_TRUE(cache.Find("t3").has_value());
  cache.Insert("t4", Caller("d"), cache.Generation());  // full of live entries: all go
  EXPECT_FALSE(cache.Find("t2").has_value());
  EXPECT_TRUE(cache.Find("t4").has_value());

  AuthCache off(&env, 0, 16);
  off.Insert("t1", Caller("a"), off.Generation());
  EXPECT_FALSE(off.Find("t1").has_value());
}

}  // namespace
}  // namespace vigil::server

#include "server/rate_limiter.h"

#include <string>

#include <gtest/gtest.h>

namespace vigil::server {
namespace {

constexpr int64_t kSecond = 1'000'000;

TEST(RateLimiterTest, AUserBurstsOneSecondsWorthThenKeepsTheRate) {
  RateLimiter limiter(4);
  const int64_t t0 = 50 * kSecond;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(limiter.Admit("alice", t0), 0) << i;
  // The fifth waits for a quarter second's refill.
  EXPECT_EQ(limiter.Admit("alice", t0), kSecond / 4);
  EXPECT_EQ(limiter.Admit("alice", t0 + kSecond / 8), kSecond / 8);
  EXPECT_EQ(limiter.Admit("alice", t0 + kSecond / 4), 0);
  EXPECT_GT(limiter.Admit("alice", t0 + kSecond / 4), 0);
  // Idle time refills at most one second's worth.
  const int64_t later = t0 + 60 * kSecond;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(limiter.Admit("alice", later), 0) << i;
  EXPECT_GT(limiter.Admit("alice", later), 0);
}

TEST(RateLimiterTest, UsersHaveTheirOwnBuckets) {
  RateLimiter limiter(1);
  EXPECT_EQ(limiter.Admit("alice", kSecond), 0);
  EXPECT_EQ(limiter.Admit("alice", kSecond), kSecond);
  EXPECT_EQ(limiter.Admit("bob", kSecond), 0);
}

TEST(RateLimiterTest, ZeroMeansNoLimit) {
  RateLimiter limiter(0);
  for (int i = 0; i < 10'000; ++i) ASSERT_EQ(limiter.Admit("alice", kSecond), 0);
  EXPECT_EQ(limiter.tracked(), 0u);
}

TEST(RateLimiterTest, AClockThatStepsBackGrantsNothingExtra) {
  RateLimiter limiter(2);
  EXPECT_EQ(limiter.Admit("alice", 10 * kSecond), 0);
  EXPECT_EQ(limiter.Admit("alice", 10 * kSecond), 0);
  EXPECT_GT(limiter.Admit("alice", 5 * kSecond), 0);
}

TEST(RateLimiterTest, UsersWhoseBucketsRefilledAreForgottenPastTheBound) {
  RateLimiter limiter(10);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(limiter.Admit("user" + std::to_string(i), kSecond), 0);
  EXPECT_EQ(limiter.tracked(), 4096u);
  // A second later every bucket is full again: the next new user's admission forgets them.
  EXPECT_EQ(limiter.Admit("newcomer", 2 * kSecond), 0);
  EXPECT_EQ(limiter.tracked(), 1u);
  // Buckets short of tokens are kept: a busy user stays limited however many others come.
  for (int i = 0; i < 10; ++i) ASSERT_EQ(limiter.Admit("busy", 2 * kSecond), 0);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(limiter.Admit("other" + std::to_string(i), 2 * kSecond), 0);
  EXPECT_EQ(limiter.tracked(), 4098u);
  EXPECT_GT(limiter.Admit("busy", 2 * kSecond), 0);
}

}  // namespace
}  // namespace vigil::server

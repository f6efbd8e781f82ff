#include "testutil/fake_env.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/common/file_system.h"
#include "vigil/common/mutex.h"

namespace vigil::testing {
namespace {

TEST(FakeEnvTest, TimeMovesOnlyWhenTold) {
  FakeEnv env(5'000'000);
  EXPECT_EQ(env.NowMicros(), 5'000'000);
  EXPECT_EQ(env.NowMs(), 5'000);
  EXPECT_EQ(env.NowMicros(), 5'000'000);
  env.AdvanceMs(3);
  EXPECT_EQ(env.NowMicros(), 5'003'000);
  EXPECT_EQ(env.MonotonicMicros(), 5'003'000);
}

TEST(FakeEnvTest, SetMovesOnlyTheWallClock) {
  FakeEnv env(10'000);
  env.Set(1'000);
  EXPECT_EQ(env.NowMicros(), 1'000);
  EXPECT_EQ(env.MonotonicMicros(), 10'000);
}

TEST(FakeEnvTest, SleepAdvancesTimeWithoutWaiting) {
  FakeEnv env(0);
  const int64_t real_start = Env::Default()->MonotonicMicros();
  env.SleepForMs(3'600'000);  // an hour of fake time
  EXPECT_EQ(env.NowMs(), 3'600'000);
  EXPECT_EQ(env.sleeps(), 1);
  EXPECT_LT(Env::Default()->MonotonicMicros() - real_start, 10'000'000);
}

TEST(FakeEnvTest, WaitForSleepsOrdersThreads) {
  FakeEnv env(0);
  std::thread sleeper([&] {
    for (int i = 0; i < 3; ++i) env.SleepForMs(10);
  });
  env.WaitForSleeps(3);
  EXPECT_EQ(env.NowMs(), 30);
  sleeper.join();
}

// A wait times out when the test moves fake time past its timeout, not before, and never by
// itself; a notified condition ends it at once.
TEST(FakeEnvTest, AWaitTimesOutOnlyWhenFakeTimePassesItsTimeout) {
  FakeEnv env(0);
  Mutex mu;
  std::condition_variable cv;
  bool done = false;
  int64_t returned = -1;  // 0: timed out, 1: done
  std::thread waiter([&] {
    MutexLock lock(&mu);
    returned = env.WaitForMs(lock, cv, 5'000, [&] { return done; }) ? 1 : 0;
  });
  env.WaitForWaits(1);
  EXPECT_EQ(env.waits(), 1);
  env.AdvanceMs(4'999);
  env.AdvanceMs(1);
  waiter.join();
  EXPECT_EQ(returned, 0);
  EXPECT_EQ(env.NowMs(), 5'000);  // the wait moved no time itself

  std::thread notified([&] {
    MutexLock lock(&mu);
    returned = env.WaitForMs(lock, cv, 5'000, [&] { return done; }) ? 1 : 0;
  });
  env.WaitForWaits(2);
  {
    MutexLock lock(&mu);
    done = true;
  }
  cv.notify_all();
  notified.join();
  EXPECT_EQ(returned, 1);
  EXPECT_EQ(env.NowMs(), 5'000);
}

TEST(FakeEnvTest, FilesGoToTheGivenFileSystem) {
  TempDir dir;
  FakeEnv real(0);
  EXPECT_EQ(real.fs(), DefaultFileSystem());
  ASSERT_TRUE(WriteFileDurably(real.fs(), dir.Join("a"), "x").ok());
  EXPECT_EQ(*real.fs()->ReadFile(dir.Join("a"), 10), "x");
}

TEST(EnvTest, DefaultClocksAdvance) {
  Env* env = Env::Default();
  EXPECT_EQ(env, Env::Default());
  EXPECT_GT(env->NowMs(), int64_t{1'700'000'000'000});  // after 2023
  const int64_t t0 = env->MonotonicMicros();
  env->SleepForMicros(2'000);
  EXPECT_GE(env->MonotonicMicros() - t0, 2'000);
  EXPECT_EQ(env->fs(), DefaultFileSystem());
}

TEST(EnvTest, DefaultWaitEndsOnItsConditionOrItsTimeout) {
  Env* env = Env::Default();
  Mutex mu;
  std::condition_variable cv;
  bool done = false;
  MutexLock lock(&mu);
  const int64_t t0 = env->MonotonicMicros();
  EXPECT_FALSE(env->WaitFor(lock, cv, 2'000, [&] { return done; }));
  EXPECT_GE(env->MonotonicMicros() - t0, 2'000);
  done = true;
  EXPECT_TRUE(env->WaitFor(lock, cv, 60'000'000, [&] { return done; }));  // at once
  EXPECT_FALSE(env->WaitFor(lock, cv, 0, [] { return false; }));
}

}  // namespace
}  // namespace vigil::testing

#include "testutil/fake_env.h"

#include <gtest/gtest.h>

#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/common/file_system.h"

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

}  // namespace
}  // namespace vigil::testing

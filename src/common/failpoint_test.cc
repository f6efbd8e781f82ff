#include "vigil/common/failpoint.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace vigil {
namespace {

class FailpointTest : public ::testing::Test {
 protected:
  void TearDown() override { failpoint::DisarmAll(); }
};

Status Guarded() {
  VIGIL_FAILPOINT("test.guarded");
  return Status::OK();
}

TEST_F(FailpointTest, UnarmedIsOk) { EXPECT_TRUE(Guarded().ok()); }

TEST_F(FailpointTest, ErrorWithCodeAndHitCount) {
  ASSERT_TRUE(failpoint::ArmFromSpec("test.guarded=error(CORRUPTION)@2").ok());
  EXPECT_TRUE(Guarded().ok());
  Status st = Guarded();
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("test.guarded"), std::string::npos);
  EXPECT_TRUE(Guarded().ok());  // only the 2nd evaluation fires
  EXPECT_EQ(failpoint::HitCount("test.guarded"), 3);
}

TEST_F(FailpointTest, SpecRoundTrips) {
  ASSERT_TRUE(failpoint::ArmFromSpec("a=kill@3;b=hang;c=error;d=delay(250)@2").ok());
  EXPECT_EQ(failpoint::ArmedSpec(), "a=kill@3;b=hang;c=error(IO_ERROR);d=delay(250)@2");
  ASSERT_TRUE(failpoint::ArmFromSpec("b=off").ok());
  EXPECT_EQ(failpoint::ArmedSpec(), "a=kill@3;c=error(IO_ERROR);d=delay(250)@2");
}

TEST_F(FailpointTest, MalformedSpecsAreRejected) {
  EXPECT_EQ(failpoint::ArmFromSpec("nameonly").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(failpoint::ArmFromSpec("x=explode").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(failpoint::ArmFromSpec("x=kill@0").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(failpoint::ArmFromSpec("x=error(NOPE)").code(), StatusCode::kInvalidArgument);
  for (const char* bad : {"x=delay()", "x=delay(0)", "x=delay(-5)", "x=delay(12ms)", "x=delay(3600001)"}) {
    Status st = failpoint::ArmFromSpec(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("bad delay"), std::string::npos) << st.ToString();
  }
  EXPECT_EQ(failpoint::ArmedSpec(), "");
}

TEST_F(FailpointTest, KillTerminatesTheProcessWithSigkill) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    failpoint::Arm("test.guarded", failpoint::Action::kKill);
    (void)Guarded();
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST_F(FailpointTest, EnvironmentArmsAChild) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A fresh exec is the real use; here the child re-reads nothing, so arm from the spec the
    // environment would carry and check it parses exactly like the variable.
    setenv(failpoint::kEnvVar, "test.guarded=error(BUSY)", 1);
    execl("/proc/self/exe", "/proc/self/exe", "--gtest_filter=FailpointChild.*", nullptr);
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(FailpointChild, SeesEnvironmentSpec) {
  const char* spec = getenv(failpoint::kEnvVar);
  if (spec == nullptr) GTEST_SKIP() << "runs only as the child of EnvironmentArmsAChild";
  EXPECT_EQ(Guarded().code(), StatusCode::kBusy);
}

TEST_F(FailpointTest, HangBlocksUntilDisarmed) {
  failpoint::Arm("test.guarded", failpoint::Action::kHang);
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_TRUE(Guarded().ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load());
  failpoint::Disarm("test.guarded");
  t.join();
  EXPECT_TRUE(done.load());
}

TEST_F(FailpointTest, DelaySleepsThenContinues) {
  ASSERT_TRUE(failpoint::ArmFromSpec("test.guarded=delay(120)@2").ok());
  EXPECT_TRUE(Guarded().ok());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(Guarded().ok());  // the 2nd evaluation sleeps, then passes
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(120));
  EXPECT_EQ(failpoint::HitCount("test.guarded"), 2);
}

TEST_F(FailpointTest, PauseSignalsThatItWasReachedAndWaitsForItsRelease) {
  char dir_template[] = "/tmp/vigil-pause-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string release = std::string(dir_template) + "/release";
  ASSERT_TRUE(failpoint::ArmFromSpec("test.guarded=pause(" + release + ")").ok());
  EXPECT_EQ(failpoint::ArmedSpec(), "test.guarded=pause(" + release + ")");
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_TRUE(Guarded().ok());
    done = true;
  });
  while (::access((release + ".reached").c_str(), F_OK) != 0) std::this_thread::yield();
  EXPECT_FALSE(done.load()) << "passed the pause before its release existed";
  std::FILE* f = std::fopen(release.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  t.join();
  EXPECT_TRUE(done.load());
  std::filesystem::remove_all(dir_template);
}

TEST_F(FailpointTest, PausePathsAreAbsoluteAndOfAnAllowlistedAlphabet) {
  for (const char* bad :
       {"x=pause()", "x=pause(relative/p)", "x=pause(/tmp/a b)", "x=pause(/tmp/../etc/x)", "x=pause(/tmp/$(id))"}) {
    Status st = failpoint::ArmFromSpec(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("bad pause path"), std::string::npos) << st.ToString();
  }
  EXPECT_EQ(failpoint::ArmedSpec(), "");
}

TEST_F(FailpointTest, SignalCreatesItsFileOnEachEvaluationAndPassesAtOnce) {
  char dir_template[] = "/tmp/vigil-signal-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string signal = std::string(dir_template) + "/reached";
  ASSERT_TRUE(failpoint::ArmFromSpec("test.guarded=signal(" + signal + ")@2").ok());
  EXPECT_EQ(failpoint::ArmedSpec(), "test.guarded=signal(" + signal + ")@2");
  EXPECT_TRUE(Guarded().ok());
  EXPECT_NE(::access(signal.c_str(), F_OK), 0) << "signalled on an evaluation other than the 2nd";
  EXPECT_TRUE(Guarded().ok());
  EXPECT_EQ(::access(signal.c_str(), F_OK), 0) << "the 2nd evaluation did not create its file";
  EXPECT_EQ(failpoint::HitCount("test.guarded"), 2);
  EXPECT_EQ(failpoint::ArmFromSpec("x=signal(relative)").code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failpoint::ArmFromSpec("x=signal(/tmp/a b)").message().find("bad signal path"), std::string::npos);
  std::filesystem::remove_all(dir_template);
}

}  // namespace
}  // namespace vigil

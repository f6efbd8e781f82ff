#include "vigil/common/file_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace vigil {
namespace {

TEST(FileLockTest, SecondAcquireIsBusyUntilRelease) {
  testing::TempDir dir;
  const std::string path = dir.Join("a/b/attempt.lock");
  auto first = FileLock::Acquire(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = FileLock::Acquire(path);
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_EQ(FileLock::IsHeld(path).value(), true);
  first->Release();
  EXPECT_EQ(FileLock::IsHeld(path).value(), false);
  EXPECT_TRUE(FileLock::Acquire(path).ok());
}

TEST(FileLockTest, MissingFileIsNotFound) {
  testing::TempDir dir;
  EXPECT_EQ(FileLock::IsHeld(dir.Join("none.lock")).status().code(), StatusCode::kNotFound);
}

TEST(FileLockTest, InheritedDescriptorKeepsTheLockUntilTheChildDies) {
  testing::TempDir dir;
  const std::string path = dir.Join("attempt.lock");
  auto lock = FileLock::Acquire(path);
  ASSERT_TRUE(lock.ok());
  int to_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child keeps the inherited descriptor until the parent says go.
    char c;
    ::close(to_child[1]);
    (void)!::read(to_child[0], &c, 1);
    ::_exit(0);
  }
  ::close(to_child[0]);
  lock->Release();  // the parent lets go; the child still holds the open file
  EXPECT_EQ(FileLock::IsHeld(path).value(), true);
  ASSERT_EQ(::write(to_child[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(to_child[1]);
  EXPECT_EQ(FileLock::IsHeld(path).value(), false);
}

}  // namespace
}  // namespace vigil

// Parsing of /proc/self/mountinfo and /proc/<pid>/cgroup for the cgroup placement and the
// isolation probe.
#include "worker/proc_cgroup.h"

#include <gtest/gtest.h>

namespace vigil::worker {
namespace {

TEST(ProcCgroupTest, MountinfoGivesCgroupMountsWithEscapesUndone) {
  const std::string text =
      "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
      "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
      "31 25 0:27 /jobs /mnt/my\\040cgroups rw - cgroup cgroup rw,memory,pids\n"
      "32 25 0:28 / /broken rw - cgroup2\n";  // no source and options: skipped
  const std::vector<CgroupMount> mounts = ParseCgroupMounts(text);
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].fstype, "cgroup2");
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup");
  EXPECT_EQ(mounts[1].root, "/jobs");
  EXPECT_EQ(mounts[1].mount_point, "/mnt/my cgroups");
  EXPECT_EQ(mounts[1].super_options, (std::vector<std::string>{"rw", "memory", "pids"}));
}

TEST(ProcCgroupTest, CgroupLinesTellV1ControllersFromTheV2Line) {
  const std::vector<CgroupLine> lines = ParseCgroupLines("12:memory:/a\n4:pids,cpu:/b\n0::/user.slice\nbad\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].controllers, std::vector<std::string>{"memory"});
  EXPECT_FALSE(lines[0].v2);
  EXPECT_EQ(lines[1].controllers, (std::vector<std::string>{"pids", "cpu"}));
  EXPECT_TRUE(lines[2].v2);
  EXPECT_EQ(lines[2].path, "/user.slice");
}

TEST(ProcCgroupTest, DirUnderMapsAHierarchyPathOnlyInsideTheMountedRoot) {
  const CgroupMount whole{"/", "/sys/fs/cgroup", "cgroup2", {}};
  EXPECT_EQ(DirUnder(whole, "/"), "/sys/fs/cgroup");
  EXPECT_EQ(DirUnder(whole, "/user.slice"), "/sys/fs/cgroup/user.slice");
  const CgroupMount part{"/jobs", "/mnt/cg", "cgroup", {}};
  EXPECT_EQ(DirUnder(part, "/jobs"), "/mnt/cg");
  EXPECT_EQ(DirUnder(part, "/jobs/w1"), "/mnt/cg/w1");
  EXPECT_EQ(DirUnder(part, "/jobsx/w1"), "");  // a prefix of the name is not the same directory
  EXPECT_EQ(DirUnder(part, "/other"), "");
}

TEST(ProcCgroupTest, ThisProcessHasCgroupLines) {
  EXPECT_FALSE(ProcCgroupLines("self").empty());
  EXPECT_TRUE(ProcCgroupLines("999999999").empty());  // no such process
  EXPECT_EQ(SplitNonEmpty("memory  pids", ' '), (std::vector<std::string>{"memory", "pids"}));
}

}  // namespace
}  // namespace vigil::worker

#include "vigil/worker/isolation.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace vigil::worker {
namespace {

using ::testing::HasSubstr;

bool IsDir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// No assertion about what this machine offers: only that the report is
// consistent with itself and with the file system.
TEST(IsolationTest, ReportIsSelfConsistent) {
  IsolationReport r = ProbeIsolation();
  const CgroupV2Probe& v2 = r.cgroup_v2;
  if (!v2.mounted) {
    EXPECT_FALSE(v2.unified);
    EXPECT_FALSE(v2.child_created);
    EXPECT_FALSE(v2.detail.empty());
  } else {
    EXPECT_TRUE(IsDir(v2.mount)) << v2.mount;
  }
  if (v2.candidate_exists) {
    EXPECT_TRUE(IsDir(v2.candidate_dir)) << v2.candidate_dir;
    EXPECT_EQ(v2.candidate_dir, v2.own_cgroup_dir);  // no parent configured
  }
  if (v2.candidate_writable) {
    EXPECT_TRUE(v2.candidate_exists);
  }
  if (v2.child_created) {
    EXPECT_TRUE(v2.candidate_writable);
  }
  if (v2.child_has_memory_max || v2.child_has_pids_max) {
    EXPECT_TRUE(v2.child_created);
  }
  EXPECT_EQ(r.CgroupV2Usable(), v2.child_created && v2.child_has_memory_max && v2.child_has_pids_max);

  for (const CgroupV1Probe* v1 : {&r.cgroup_v1_memory, &r.cgroup_v1_pids}) {
    if (v1->writable) {
      EXPECT_TRUE(v1->mounted);
      EXPECT_TRUE(IsDir(v1->dir)) << v1->dir;
      EXPECT_EQ(::access(v1->dir.c_str(), W_OK), 0) << v1->dir;
    } else {
      EXPECT_FALSE(v1->detail.empty()) << v1->controller;
    }
    if (!v1->dir.empty()) {
      EXPECT_TRUE(IsDir(v1->dir)) << v1->dir;
    }
  }
  EXPECT_EQ(r.cgroup_v1_memory.controller, "memory");
  EXPECT_EQ(r.cgroup_v1_pids.controller, "pids");
  EXPECT_EQ(r.CgroupAvailable(), r.CgroupV2Usable() || (r.cgroup_v1_memory.writable && r.cgroup_v1_pids.writable));

  EXPECT_EQ(r.is_root, ::geteuid() == 0);
  if (!r.child_probe_ran) {
    EXPECT_FALSE(r.pdeathsig || r.rlimit_as || r.rlimit_nofile || r.rlimit_core || r.close_range);
    EXPECT_FALSE(r.child_detail.empty());
  } else {
    bool all = r.pdeathsig && r.rlimit_as && r.rlimit_nofile && r.rlimit_core && r.not_dumpable && r.close_range;
    EXPECT_EQ(all, r.child_detail.empty()) << r.child_detail;
  }
}

TEST(IsolationTest, ProbeLeavesNoChildCgroupBehind) {
  IsolationReport r = ProbeIsolation();
  for (const std::string& dir : {r.cgroup_v2.candidate_dir, r.cgroup_v1_memory.dir, r.cgroup_v1_pids.dir}) {
    if (dir.empty()) continue;
    std::string leftover = dir + "/vigil-probe-" + std::to_string(::getpid()) + "-0";
    EXPECT_FALSE(IsDir(leftover)) << leftover;
  }
}

TEST(IsolationTest, DescribeListsEveryCapabilityOnceWithDetails) {
  IsolationReport r = ProbeIsolation();
  std::vector<IsolationCapability> caps = DescribeIsolation(r);
  std::set<std::string> names;
  for (const IsolationCapability& c : caps) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_FALSE(c.detail.empty()) << c.name;
  }
  for (const char* n : {"cgroup.v2.delegated", "cgroup.v1.memory", "cgroup.v1.pids", "pdeathsig", "rlimit.as",
                        "rlimit.nofile", "rlimit.core", "not_dumpable", "close_range", "root", "rlimit.nproc"}) {
    EXPECT_EQ(names.count(n), 1u) << n;
  }
  for (const IsolationCapability& c : caps) {
    if (c.name == "cgroup.v2.delegated") {
      EXPECT_EQ(c.available, r.CgroupV2Usable());
    }
    if (c.name == "cgroup.v1.memory") {
      EXPECT_EQ(c.available, r.cgroup_v1_memory.writable);
    }
    if (c.name == "rlimit.as") {
      EXPECT_EQ(c.available, r.rlimit_as);
    }
    if (c.name == "root") {
      EXPECT_EQ(c.available, r.is_root);
    }
    if (c.name == "rlimit.nproc") {
      EXPECT_EQ(c.available, r.nproc_binds);
    }
  }
}

TEST(IsolationTest, ConfiguredParentThatIsNoCgroupIsReportedUnusable) {
  IsolationReport r = ProbeIsolation("/nonexistent/vigil-cgroup");
  EXPECT_FALSE(r.CgroupV2Usable());
  EXPECT_FALSE(r.cgroup_v2.child_created);
  EXPECT_FALSE(r.cgroup_v2.detail.empty());

  WorkerConfig w;
  w.cgroup_parent = "/nonexistent/vigil-cgroup";
  EXPECT_THAT(IsolationRefusal(w, r), HasSubstr("worker.cgroup_parent /nonexistent/vigil-cgroup is not usable"));
}

TEST(IsolationTest, RefusalFollowsTheSettings) {
  IsolationReport r;
  r.rlimit_as = true;
  WorkerConfig w;
  EXPECT_EQ(IsolationRefusal(w, r), "");  // the embedded default: rlimits suffice
  w.require_cgroup = true;
  EXPECT_THAT(IsolationRefusal(w, r), HasSubstr("worker.require_cgroup is true"));

  w.cgroup_parent = "v1";
  EXPECT_THAT(IsolationRefusal(w, r), HasSubstr("cgroup v1 is not usable"));
  r.cgroup_v1_memory.writable = true;
  r.cgroup_v1_pids.writable = true;
  EXPECT_EQ(IsolationRefusal(w, r), "");

  w.cgroup_parent = "/sys/fs/cgroup/vigil";
  EXPECT_THAT(IsolationRefusal(w, r), HasSubstr("is not usable"));
  r.cgroup_v2.child_created = r.cgroup_v2.child_has_memory_max = r.cgroup_v2.child_has_pids_max = true;
  EXPECT_EQ(IsolationRefusal(w, r), "");

  WorkerConfig plain;
  IsolationReport none;
  EXPECT_THAT(IsolationRefusal(plain, none), HasSubstr("no memory boundary"));
}

}  // namespace
}  // namespace vigil::worker

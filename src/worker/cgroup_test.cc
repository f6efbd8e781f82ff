#include "vigil/worker/cgroup.h"

#include <gtest/gtest.h>

#include "testutil/temp_dir.h"

namespace vigil::worker {
namespace {

TEST(CgroupTest, ParentsThatCannotHoldWorkerCgroupsAreRefusedWithTheReason) {
  EXPECT_EQ(ResolveCgroup("").status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(ResolveCgroup("relative/path").status().code(), StatusCode::kInvalidArgument);
  testing::TempDir dir;
  auto plain = ResolveCgroup(dir.path());
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(plain.status().message().find("cgroup2"), std::string::npos) << plain.status().ToString();
  CgroupOptions o;
  o.parent = dir.path();
  EXPECT_EQ(ProbeCgroup(o).code(), StatusCode::kNotSupported);
}

}  // namespace
}  // namespace vigil::worker

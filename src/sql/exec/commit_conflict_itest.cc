// Concurrent writers through SQL: a DELETE that lost the race on the same
// fragment is COMMIT_CONFLICT, changes nothing, and says that it is safe to
// retry; the retry succeeds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

TEST(CommitConflictTest, LosingDeleteSaysItIsSafeToRetry) {
  testing::TempDir dir;
  const std::string root = dir.Join("root");
  ASSERT_TRUE(Root::Init(root).ok());
  auto a = std::move(*Session::Open(root));
  auto b = std::move(*Session::Open(root));
  ASSERT_TRUE(a->Execute("CREATE TABLE d.t (id BIGINT NOT NULL)").ok());
  ASSERT_TRUE(a->Execute("INSERT INTO d.t VALUES (1), (2), (3)").ok());

  // `a` stops with its next manifest written but not yet published (the failpoint hangs its
  // first evaluation only); `b` deletes another row of the same fragment and wins the version.
  failpoint::Arm("commit.after_manifest_temp", failpoint::Action::kHang, /*hit=*/1);
  Status lost;
  std::thread loser([&] { lost = a->Execute("DELETE FROM d.t WHERE id = 1").status(); });
  while (failpoint::HitCount("commit.after_manifest_temp") == 0) std::this_thread::yield();
  auto won = b->Execute("DELETE FROM d.t WHERE id = 2");
  ASSERT_TRUE(won.ok()) << won.status().ToString();
  failpoint::DisarmAll();
  loser.join();
  EXPECT_EQ(lost.code(), StatusCode::kCommitConflict) << lost.ToString();
  EXPECT_THAT(lost.message(), HasSubstr("nothing was committed: it is safe to retry"));
  auto count = a->Execute("SELECT count(*) FROM d.t");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(std::get<int64_t>(count->rows[0][0]), 2);
  ASSERT_TRUE(a->Execute("DELETE FROM d.t WHERE id = 1").ok());  // the retry
  count = a->Execute("SELECT count(*) FROM d.t");
  EXPECT_EQ(std::get<int64_t>(count->rows[0][0]), 1);
}

}  // namespace
}  // namespace vigil::sql

// ClusterStore on PostgreSQL: the conformance suite against the throwaway
// server of the vigil_pg ctest fixture (scripts/pg-test-server.sh), and the
// lease decided on the server's clock whatever clock a caller passes.
#include <gtest/gtest.h>

#include "jobs/cluster_store_conformance.h"
#include "testutil/test_database.h"

namespace vigil::jobs {

INSTANTIATE_TEST_SUITE_P(Postgres, ClusterStoreConformanceTest, ::testing::Values(testing::PostgresBackend()),
                         testing::BackendName);

TEST(PostgresLeaseClockTest, LeasesAndNodesReadTheServersClockNotTheCallers) {
  auto env = testing::PostgresBackend().make();
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  JobStoreOptions opts;
  opts.uri = (*env)->uri();
  auto store = JobStore::Open(opts);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto before = (*store)->cluster().LeaseClockMs(0);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_GT(*before, int64_t{1'600'000'000'000});  // the server's time, not the 0 passed
  // A caller whose clock reads 1 s after the epoch still gets a lease on the server's time.
  auto lease = (*store)->cluster().AcquireLeader("a", 1000, 5000);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_GE(lease->acquired_at_ms, *before);
  EXPECT_EQ(lease->expires_at_ms - lease->acquired_at_ms, 5000);
  // A caller whose clock runs a day ahead cannot take that live lease ...
  const int64_t day = 86'400'000;
  EXPECT_EQ((*store)->cluster().AcquireLeader("b", *before + day, 5000).status().code(), StatusCode::kBusy);
  // ... nor can its holder's check fail for it.
  auto txn = (*store)->database().Begin(meta::TxnMode::kWrite);
  ASSERT_TRUE(txn.ok());
  EXPECT_TRUE((*store)->cluster().CheckLeader(*txn, lease->epoch, *before + day).ok());
  ASSERT_TRUE(txn->Rollback().ok());
  auto node = (*store)->cluster().RegisterNode("n1", 1, "h:1", 0);
  ASSERT_TRUE(node.ok());
  auto info = (*store)->cluster().GetNode("n1");
  ASSERT_TRUE(info.ok() && info->has_value());
  EXPECT_GE((**info).heartbeat_at_ms, *before);
}

}  // namespace vigil::jobs

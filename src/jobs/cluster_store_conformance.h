// The ClusterStore conformance suite: every contract of cluster_store.h (the
// leader lease and the node registry), run on SQLite by cluster_store_test.cc
// and on PostgreSQL by cluster_store_itest.cc, on a ClusterStore of its own over
// a migrated database. Times are explicit arguments (LeaseClock::kCaller), so
// expiry is tested without sleeping. Include from exactly one file per test binary.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "testutil/test_database.h"
#include "vigil/jobs/cluster_store.h"
#include "vigil/jobs/job_store.h"
#include "vigil/meta/database.h"

namespace vigil::jobs {

constexpr int64_t kClusterT0 = 1'700'000'000'000;  // Unix ms
constexpr int64_t kClusterLeaseTtl = 10'000;

class ClusterStoreConformanceTest : public ::testing::TestWithParam<testing::DatabaseBackend> {
 protected:
  void SetUp() override {
    auto env = GetParam().make();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(env).value();
    auto db = meta::Database::Open(env_->uri());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    ASSERT_TRUE(JobStore::MigrateSchema(*db_, now_).ok());
    cluster_ = std::make_unique<ClusterStore>(db_.get(), LeaseClock::kCaller);  // the suite drives lease time
    auto lease = cluster_->AcquireLeader("leader-a", now_, kClusterLeaseTtl);
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    epoch_ = lease->epoch;
    auto node = cluster_->RegisterNode("node-1", 4242, "host-1", now_);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_epoch_ = *node;
  }

  std::unique_ptr<testing::TestDatabaseEnv> env_;
  std::unique_ptr<meta::Database> db_;
  std::unique_ptr<ClusterStore> cluster_;
  int64_t now_ = kClusterT0;
  int64_t epoch_ = 0;
  int64_t node_epoch_ = 0;
};

TEST_P(ClusterStoreConformanceTest, LeaderLeaseEpochsAcrossTwoHoldersWithExpiry) {
  auto same = cluster_->AcquireLeader("leader-a", now_ + 1, kClusterLeaseTtl);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->epoch, epoch_);
  EXPECT_EQ(same->expires_at_ms, now_ + 1 + kClusterLeaseTtl);
  EXPECT_EQ(cluster_->AcquireLeader("leader-b", now_ + 2, kClusterLeaseTtl).status().code(), StatusCode::kBusy);
  auto renewed = cluster_->RenewLeader("leader-a", epoch_, now_ + 5000, kClusterLeaseTtl);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->expires_at_ms, now_ + 5000 + kClusterLeaseTtl);
  int64_t t = now_ + 5000 + kClusterLeaseTtl;  // expired exactly now
  auto b = cluster_->AcquireLeader("leader-b", t, kClusterLeaseTtl);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->epoch, epoch_ + 1);
  EXPECT_EQ(cluster_->RenewLeader("leader-a", epoch_, t, kClusterLeaseTtl).status().code(),
            StatusCode::kCommitConflict);
  auto back = cluster_->AcquireLeader("leader-a", t + kClusterLeaseTtl, kClusterLeaseTtl);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->epoch, epoch_ + 2);
  auto got = cluster_->GetLeader();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->holder, "leader-a");
  EXPECT_EQ(got->epoch, epoch_ + 2);
  auto txn = db_->Begin(meta::TxnMode::kWrite);
  ASSERT_TRUE(txn.ok());
  EXPECT_TRUE(cluster_->CheckLeader(*txn, epoch_ + 2, t + kClusterLeaseTtl).ok());
  EXPECT_EQ(cluster_->CheckLeader(*txn, epoch_ + 1, t + kClusterLeaseTtl).code(), StatusCode::kCommitConflict);
}

TEST_P(ClusterStoreConformanceTest, NodeEpochsIncreasePerStart) {
  auto e2 = cluster_->RegisterNode("node-1", 5000, "host-1b", now_ + 1);
  ASSERT_TRUE(e2.ok());
  EXPECT_EQ(*e2, node_epoch_ + 1);
  EXPECT_EQ(cluster_->RegisterNode("node-2", 1, "host-2", now_).value(), 1);
  EXPECT_EQ(cluster_->Heartbeat("node-1", node_epoch_, now_ + 2).code(), StatusCode::kCommitConflict);
  ASSERT_TRUE((cluster_->Heartbeat("node-1", *e2, now_ + 3)).ok());
  EXPECT_EQ(cluster_->Heartbeat("node-9", 1, now_).code(), StatusCode::kNotFound);
  auto n = cluster_->GetNode("node-1");
  ASSERT_TRUE(n.ok() && n->has_value());
  EXPECT_EQ((*n)->epoch, *e2);
  EXPECT_EQ((*n)->pid, 5000);
  EXPECT_EQ((*n)->host, "host-1b");
  EXPECT_EQ((*n)->heartbeat_at_ms, now_ + 3);
  EXPECT_FALSE(cluster_->GetNode("node-9").value().has_value());
}

TEST_P(ClusterStoreConformanceTest, ADrainMarkLastsUntilClearedAcrossRestarts) {
  EXPECT_FALSE(cluster_->GetNode("node-1").value()->draining);
  ASSERT_TRUE((cluster_->SetNodeDraining("node-1", true)).ok());
  ASSERT_TRUE((cluster_->Heartbeat("node-1", node_epoch_, now_ + 1)).ok());
  auto restarted = cluster_->RegisterNode("node-1", 5001, "host-1", now_ + 2);
  ASSERT_TRUE(restarted.ok());
  EXPECT_TRUE(cluster_->GetNode("node-1").value()->draining);
  auto listed = cluster_->ListNodes();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE((*listed)[0].draining);
  ASSERT_TRUE((cluster_->SetNodeDraining("node-1", false)).ok());
  EXPECT_FALSE(cluster_->GetNode("node-1").value()->draining);
  EXPECT_EQ(cluster_->SetNodeDraining("node-9", true).code(), StatusCode::kNotFound);
}

TEST_P(ClusterStoreConformanceTest, TheJobStoresClusterSharesItsDatabase) {
  cluster_.reset();
  JobStore jobs(std::move(db_), LeaseClock::kCaller);
  auto lease = jobs.cluster().GetLeader();
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ(lease->holder, "leader-a");
  EXPECT_EQ(lease->epoch, epoch_);
  auto node = jobs.cluster().GetNode("node-1");
  ASSERT_TRUE(node.ok() && node->has_value());
  EXPECT_EQ((*node)->epoch, node_epoch_);
  EXPECT_EQ(jobs.cluster().lease_clock(), LeaseClock::kCaller);
}

TEST_P(ClusterStoreConformanceTest, NamesAndTtlsAreValidated) {
  EXPECT_EQ(cluster_->AcquireLeader("", now_, kClusterLeaseTtl).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster_->AcquireLeader("leader-a", now_, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster_->RegisterNode("node-2", 1, "host", now_, kMaxNodeCapacity + 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster_->RegisterNode("node\n2", 1, "host", now_).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace vigil::jobs

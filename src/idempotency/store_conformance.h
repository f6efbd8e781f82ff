// The IdempotencyStore conformance suite: every contract of store.h, run on
// SQLite by store_test.cc and on PostgreSQL by store_itest.cc. Time comes from
// a FakeEnv, so expiry and staleness are tested without sleeping. Include
// from exactly one file per test binary.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "testutil/fake_env.h"
#include "testutil/test_database.h"
#include "vigil/idempotency/store.h"
#include "vigil/meta/migrations.h"

namespace vigil::idempotency {

constexpr int64_t kT0 = 1'700'000'000'000;  // the test clock's start, Unix ms
constexpr int64_t kTtl = 60'000;

class StoreConformanceTest : public ::testing::TestWithParam<testing::DatabaseBackend> {
 protected:
  void SetUp() override {
    auto env = GetParam().make();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(env).value();
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    env_.reset();
  }

  std::unique_ptr<IdempotencyStore> OpenStore() {
    StoreOptions opts;
    opts.uri = env_->uri();
    opts.env = &clock_;
    auto store = IdempotencyStore::Open(opts);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static ReserveRequest Req(const std::string& key, const std::string& executor = "node-a:1",
                            const std::string& realm = "realm-1") {
    ReserveRequest r;
    r.realm_id = realm;
    r.idempotency_key = key;
    r.operation_type = "create-index";
    r.resource_id = "local.db.docs";
    r.request_fingerprint = "sha256:abc";
    r.executor_id = executor;
    r.ttl_ms = kTtl;
    return r;
  }

  static FinalizeRequest Fin(const std::string& key, const std::string& executor = "node-a:1", int status = 201,
                             const std::string& realm = "realm-1") {
    FinalizeRequest f;
    f.realm_id = realm;
    f.idempotency_key = key;
    f.executor_id = executor;
    f.http_status = status;
    f.response_summary = R"({"job_id":42})";
    f.response_headers = {{"Location", "/v1/jobs/42"}, {"Content-Type", "application/json"}};
    return f;
  }

  ReserveResult MustReserve(const ReserveRequest& r) {
    auto res = store_->Reserve(r);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? *res : ReserveResult{ReserveStatus::kDuplicate, {}};
  }

  std::optional<IdempotencyRecord> MustLoad(const std::string& key, const std::string& realm = "realm-1") {
    auto rec = store_->Load(realm, key);
    EXPECT_TRUE(rec.ok()) << rec.status().ToString();
    return rec.ok() ? *rec : std::nullopt;
  }

  std::unique_ptr<testing::TestDatabaseEnv> env_;
  testing::FakeEnv clock_{kT0 * 1000};
  std::unique_ptr<IdempotencyStore> store_;
};

TEST_P(StoreConformanceTest, ReserveCreatesInProgressRecordOwnedByCaller) {
  ReserveResult r = MustReserve(Req("k1"));
  EXPECT_EQ(r.status, ReserveStatus::kOwned);
  const IdempotencyRecord& rec = r.record;
  EXPECT_EQ(rec.realm_id, "realm-1");
  EXPECT_EQ(rec.idempotency_key, "k1");
  EXPECT_EQ(rec.operation_type, "create-index");
  EXPECT_EQ(rec.resource_id, "local.db.docs");
  EXPECT_EQ(rec.request_fingerprint, "sha256:abc");
  EXPECT_EQ(rec.executor_id, "node-a:1");
  EXPECT_TRUE(rec.in_progress());
  EXPECT_FALSE(rec.finalized_at_ms.has_value());
  EXPECT_TRUE(rec.response_headers.empty());
  EXPECT_EQ(rec.created_at_ms, kT0);
  EXPECT_EQ(rec.updated_at_ms, kT0);
  EXPECT_EQ(rec.heartbeat_at_ms, kT0);
  EXPECT_EQ(rec.expires_at_ms, kT0 + kTtl);
  auto loaded = MustLoad("k1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, rec);
}

TEST_P(StoreConformanceTest, SecondReserveIsDuplicateWithTheOriginalBinding) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  clock_.AdvanceMs(5);
  ReserveRequest other = Req("k1", "node-b:7");
  other.request_fingerprint = "sha256:different";
  ReserveResult dup = MustReserve(other);
  EXPECT_EQ(dup.status, ReserveStatus::kDuplicate);
  EXPECT_EQ(dup.record.executor_id, "node-a:1");
  EXPECT_EQ(dup.record.request_fingerprint, "sha256:abc");
  EXPECT_EQ(dup.record.created_at_ms, kT0);
  EXPECT_EQ(MustLoad("k1")->executor_id, "node-a:1");
}

TEST_P(StoreConformanceTest, SameKeyInAnotherRealmIsIndependent) {
  ASSERT_EQ(MustReserve(Req("k1", "a", "realm-1")).status, ReserveStatus::kOwned);
  ASSERT_EQ(MustReserve(Req("k1", "b", "realm-2")).status, ReserveStatus::kOwned);
  EXPECT_EQ(MustLoad("k1", "realm-1")->executor_id, "a");
  EXPECT_EQ(MustLoad("k1", "realm-2")->executor_id, "b");
  EXPECT_FALSE(MustLoad("k1", "realm-3").has_value());
}

TEST_P(StoreConformanceTest, RacingReservesYieldExactlyOneOwner) {
  constexpr int kThreads = 16;
  constexpr int kKeys = 5;
  for (int k = 0; k < kKeys; ++k) {
    std::string key = "race-" + std::to_string(k);
    std::atomic<int> owned{0};
    std::atomic<int> errors{0};
    std::vector<std::string> owners(kThreads);
    std::vector<std::string> seen(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        auto r = store_->Reserve(Req(key, "exec-" + std::to_string(t)));
        if (!r.ok()) {
          ++errors;
          return;
        }
        if (r->status == ReserveStatus::kOwned) {
          ++owned;
          owners[t] = r->record.executor_id;
        }
        seen[t] = r->record.executor_id;
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(errors.load(), 0);
    ASSERT_EQ(owned.load(), 1) << key;
    std::string owner;
    for (const auto& o : owners) {
      if (!o.empty()) owner = o;
    }
    // Every loser saw the winner's record.
    for (const auto& s : seen) EXPECT_EQ(s, owner);
    EXPECT_EQ(MustLoad(key)->executor_id, owner);
  }
}

TEST_P(StoreConformanceTest, HeartbeatByOwnerMovesHeartbeatOnly) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  clock_.AdvanceMs(1000);
  auto hb = store_->UpdateHeartbeat("realm-1", "k1", "node-a:1");
  ASSERT_TRUE(hb.ok()) << hb.status().ToString();
  EXPECT_EQ(hb->status, HeartbeatStatus::kUpdated);
  ASSERT_TRUE(hb->record.has_value());
  EXPECT_EQ(hb->record->heartbeat_at_ms, kT0 + 1000);
  EXPECT_EQ(hb->record->updated_at_ms, kT0 + 1000);
  EXPECT_EQ(hb->record->expires_at_ms, kT0 + kTtl);
  EXPECT_EQ(MustLoad("k1")->heartbeat_at_ms, kT0 + 1000);
}

TEST_P(StoreConformanceTest, HeartbeatByAnotherExecutorIsLostOwnershipAndChangesNothing) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  clock_.AdvanceMs(1000);
  auto hb = store_->UpdateHeartbeat("realm-1", "k1", "node-b:9");
  ASSERT_TRUE(hb.ok()) << hb.status().ToString();
  EXPECT_EQ(hb->status, HeartbeatStatus::kLostOwnership);
  ASSERT_TRUE(hb->record.has_value());
  EXPECT_EQ(hb->record->executor_id, "node-a:1");
  EXPECT_EQ(hb->record->heartbeat_at_ms, kT0);
  auto rec = MustLoad("k1");
  EXPECT_EQ(rec->heartbeat_at_ms, kT0);
  EXPECT_EQ(rec->updated_at_ms, kT0);
}

TEST_P(StoreConformanceTest, HeartbeatAfterFinalizeIsFinalized) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  auto fin = store_->Finalize(Fin("k1"));
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  clock_.AdvanceMs(1000);
  auto hb = store_->UpdateHeartbeat("realm-1", "k1", "node-a:1");
  ASSERT_TRUE(hb.ok()) << hb.status().ToString();
  EXPECT_EQ(hb->status, HeartbeatStatus::kFinalized);
  ASSERT_TRUE(hb->record.has_value());
  EXPECT_EQ(hb->record->http_status, 201);
  EXPECT_EQ(hb->record->heartbeat_at_ms, kT0);
}

TEST_P(StoreConformanceTest, HeartbeatOfMissingRecordIsNotFound) {
  auto hb = store_->UpdateHeartbeat("realm-1", "nope", "node-a:1");
  ASSERT_TRUE(hb.ok()) << hb.status().ToString();
  EXPECT_EQ(hb->status, HeartbeatStatus::kNotFound);
  EXPECT_FALSE(hb->record.has_value());
}

TEST_P(StoreConformanceTest, FinalizeStoresTheOutcome) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  clock_.AdvanceMs(250);
  FinalizeRequest f = Fin("k1", "node-a:1", 409);
  f.error_subtype = "FENCE_BUSY";
  auto fin = store_->Finalize(f);
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  EXPECT_EQ(fin->status, FinalizeStatus::kFinalized);
  auto rec = MustLoad("k1");
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(*rec, *fin->record);
  EXPECT_FALSE(rec->in_progress());
  EXPECT_EQ(rec->http_status, 409);
  EXPECT_EQ(rec->error_subtype, "FENCE_BUSY");
  EXPECT_EQ(rec->response_summary, R"({"job_id":42})");
  std::map<std::string, std::string> want = {{"location", "/v1/jobs/42"}, {"content-type", "application/json"}};
  EXPECT_EQ(rec->response_headers, want);
  EXPECT_EQ(rec->finalized_at_ms, kT0 + 250);
  EXPECT_EQ(rec->updated_at_ms, kT0 + 250);
  EXPECT_EQ(rec->created_at_ms, kT0);
  EXPECT_EQ(rec->expires_at_ms, kT0 + kTtl);
}

TEST_P(StoreConformanceTest, RepeatedFinalizeIsToleratedAndKeepsFirstOutcome) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  ASSERT_EQ(store_->Finalize(Fin("k1", "node-a:1", 201))->status, FinalizeStatus::kFinalized);
  clock_.AdvanceMs(10);
  auto again = store_->Finalize(Fin("k1", "node-a:1", 500));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, FinalizeStatus::kAlreadyFinalized);
  ASSERT_TRUE(again->record.has_value());
  EXPECT_EQ(again->record->http_status, 201);
  EXPECT_EQ(MustLoad("k1")->http_status, 201);
  EXPECT_EQ(MustLoad("k1")->finalized_at_ms, kT0);
}

TEST_P(StoreConformanceTest, FinalizeByAnotherExecutorIsRefused) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  auto fin = store_->Finalize(Fin("k1", "node-b:9"));
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  EXPECT_EQ(fin->status, FinalizeStatus::kLostOwnership);
  EXPECT_TRUE(MustLoad("k1")->in_progress());
  // Also after the owner finished it.
  ASSERT_EQ(store_->Finalize(Fin("k1"))->status, FinalizeStatus::kFinalized);
  EXPECT_EQ(store_->Finalize(Fin("k1", "node-b:9", 500))->status, FinalizeStatus::kLostOwnership);
  EXPECT_EQ(MustLoad("k1")->http_status, 201);
}

TEST_P(StoreConformanceTest, FinalizeOfMissingRecordIsNotFound) {
  auto fin = store_->Finalize(Fin("nope"));
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  EXPECT_EQ(fin->status, FinalizeStatus::kNotFound);
  EXPECT_FALSE(MustLoad("nope").has_value());
}

TEST_P(StoreConformanceTest, CancelOnlyByOwnerAndOnlyInProgress) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  auto by_other = store_->CancelInProgressReservation("realm-1", "k1", "node-b:9");
  ASSERT_TRUE(by_other.ok());
  EXPECT_FALSE(*by_other);
  EXPECT_TRUE(MustLoad("k1").has_value());
  auto by_owner = store_->CancelInProgressReservation("realm-1", "k1", "node-a:1");
  ASSERT_TRUE(by_owner.ok());
  EXPECT_TRUE(*by_owner);
  EXPECT_FALSE(MustLoad("k1").has_value());
  // The key is free again.
  ReserveResult again = MustReserve(Req("k1", "node-b:9"));
  EXPECT_EQ(again.status, ReserveStatus::kOwned);
  EXPECT_EQ(again.record.executor_id, "node-b:9");
  // A finished record cannot be cancelled.
  ASSERT_EQ(store_->Finalize(Fin("k1", "node-b:9"))->status, FinalizeStatus::kFinalized);
  EXPECT_FALSE(*store_->CancelInProgressReservation("realm-1", "k1", "node-b:9"));
  EXPECT_EQ(MustLoad("k1")->http_status, 201);
  EXPECT_FALSE(*store_->CancelInProgressReservation("realm-1", "never", "node-b:9"));
}

TEST_P(StoreConformanceTest, AStaleReservationIsReleasedOnlyWhileItsHeartbeatIsStale) {
  ReserveResult r = MustReserve(Req("k1"));
  ASSERT_EQ(r.status, ReserveStatus::kOwned);
  const int64_t reserved_at = r.record.created_at_ms;
  clock_.AdvanceMs(10'000);
  // Not stale before the cutoff, and never another executor's record.
  EXPECT_FALSE(*store_->ReleaseStale("realm-1", "k1", "node-a:1", reserved_at));
  EXPECT_FALSE(*store_->ReleaseStale("realm-1", "k1", "node-b:9", reserved_at + 1));
  // The owner confirms in its own transaction: the heartbeat is renewed, so a release with
  // the cutoff read before that confirm no longer applies.
  Status confirmed = store_->database().Write(
      [&](meta::Connection& conn) { return store_->ConfirmOwner(conn, "realm-1", "k1", "node-a:1", reserved_at); });
  ASSERT_TRUE(confirmed.ok()) << confirmed.ToString();
  EXPECT_EQ(MustLoad("k1")->heartbeat_at_ms, reserved_at + 10'000);
  EXPECT_FALSE(*store_->ReleaseStale("realm-1", "k1", "node-a:1", reserved_at + 1));
  clock_.AdvanceMs(10'000);
  EXPECT_TRUE(*store_->ReleaseStale("realm-1", "k1", "node-a:1", reserved_at + 10'001));
  EXPECT_FALSE(MustLoad("k1").has_value());
  // Once released (or re-reserved by another executor, or finished), the old owner's confirm
  // fails, and the transaction it ran in rolls back with its effect.
  auto refused = [&](const std::string& executor, int64_t created_at) {
    return store_->database()
        .Write(
            [&](meta::Connection& conn) { return store_->ConfirmOwner(conn, "realm-1", "k1", executor, created_at); })
        .code();
  };
  EXPECT_EQ(refused("node-a:1", reserved_at), StatusCode::kFailedPrecondition);
  ReserveResult again = MustReserve(Req("k1", "node-b:9"));
  EXPECT_EQ(refused("node-a:1", reserved_at), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused("node-b:9", again.record.created_at_ms + 1), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused("node-b:9", again.record.created_at_ms), StatusCode::kOk);
  ASSERT_EQ(store_->Finalize(Fin("k1", "node-b:9"))->status, FinalizeStatus::kFinalized);
  EXPECT_EQ(refused("node-b:9", again.record.created_at_ms), StatusCode::kFailedPrecondition);
}

TEST_P(StoreConformanceTest, ExpiredFinishedRecordFreesTheKeyButInProgressDoesNot) {
  ASSERT_EQ(MustReserve(Req("done")).status, ReserveStatus::kOwned);
  ASSERT_EQ(store_->Finalize(Fin("done"))->status, FinalizeStatus::kFinalized);
  ASSERT_EQ(MustReserve(Req("stuck")).status, ReserveStatus::kOwned);
  clock_.AdvanceMs(kTtl - 1);
  EXPECT_EQ(MustReserve(Req("done", "node-b:9")).status, ReserveStatus::kDuplicate);
  clock_.AdvanceMs(1);
  ReserveResult fresh = MustReserve(Req("done", "node-b:9"));
  EXPECT_EQ(fresh.status, ReserveStatus::kOwned);
  EXPECT_EQ(fresh.record.executor_id, "node-b:9");
  EXPECT_TRUE(fresh.record.in_progress());
  EXPECT_FALSE(fresh.record.response_summary.has_value());
  EXPECT_TRUE(fresh.record.response_headers.empty());
  EXPECT_EQ(fresh.record.created_at_ms, kT0 + kTtl);
  EXPECT_EQ(fresh.record.expires_at_ms, kT0 + 2 * kTtl);
  ReserveResult stuck = MustReserve(Req("stuck", "node-b:9"));
  EXPECT_EQ(stuck.status, ReserveStatus::kDuplicate);
  EXPECT_EQ(stuck.record.executor_id, "node-a:1");
}

TEST_P(StoreConformanceTest, PurgeExpiredIsRealmScopedAndSparesInProgress) {
  for (const char* realm : {"realm-1", "realm-2"}) {
    for (int i = 0; i < 3; ++i) {
      std::string key = "old-" + std::to_string(i);
      ASSERT_EQ(MustReserve(Req(key, "a", realm)).status, ReserveStatus::kOwned);
      ASSERT_EQ(store_->Finalize(Fin(key, "a", 200, realm))->status, FinalizeStatus::kFinalized);
    }
    ASSERT_EQ(MustReserve(Req("old-stuck", "a", realm)).status, ReserveStatus::kOwned);
  }
  clock_.AdvanceMs(kTtl);
  ASSERT_EQ(MustReserve(Req("young", "a", "realm-1")).status, ReserveStatus::kOwned);
  ASSERT_EQ(store_->Finalize(Fin("young", "a", 200, "realm-1"))->status, FinalizeStatus::kFinalized);

  // `before` is exclusive: records expiring exactly at kT0 + kTtl stay.
  auto none = store_->PurgeExpired("realm-1", kT0 + kTtl);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  auto purged = store_->PurgeExpired("realm-1", kT0 + kTtl + 1);
  ASSERT_TRUE(purged.ok()) << purged.status().ToString();
  EXPECT_EQ(*purged, 3);
  for (int i = 0; i < 3; ++i) {
    std::string key = "old-" + std::to_string(i);
    EXPECT_FALSE(MustLoad(key, "realm-1").has_value());
    EXPECT_TRUE(MustLoad(key, "realm-2").has_value()) << "purge touched another realm";
  }
  EXPECT_TRUE(MustLoad("old-stuck", "realm-1").has_value());
  EXPECT_TRUE(MustLoad("young", "realm-1").has_value());
  EXPECT_EQ(*store_->PurgeExpired("realm-2", kT0 + kTtl + 1), 3);
  EXPECT_TRUE(MustLoad("old-stuck", "realm-2").has_value());
}

TEST_P(StoreConformanceTest, ListRealmsWalksEveryRealmWithRecordsInOrder) {
  EXPECT_TRUE(store_->ListRealms("", 10)->empty());
  for (const char* realm : {"realm-c", "realm-a", "realm-b"}) {
    for (const char* key : {"k1", "k2", "k3"})
      ASSERT_EQ(MustReserve(Req(key, "a", realm)).status, ReserveStatus::kOwned);
  }
  ASSERT_EQ(store_->Finalize(Fin("k1", "a", 200, "realm-b"))->status, FinalizeStatus::kFinalized);
  using Realms = std::vector<std::string>;
  EXPECT_EQ(*store_->ListRealms("", 10), (Realms{"realm-a", "realm-b", "realm-c"}));
  EXPECT_EQ(*store_->ListRealms("", 2), (Realms{"realm-a", "realm-b"}));
  EXPECT_EQ(*store_->ListRealms("realm-b", 2), (Realms{"realm-c"}));
  EXPECT_EQ(*store_->ListRealms("realm-a0", 1), (Realms{"realm-b"}));
  EXPECT_TRUE(store_->ListRealms("realm-c", 10)->empty());
  EXPECT_EQ(store_->ListRealms("", 0).status().code(), StatusCode::kInvalidArgument);
  // A realm whose last record is purged is no longer listed.
  ASSERT_TRUE(store_->Finalize(Fin("k2", "a", 200, "realm-b")).ok());
  ASSERT_TRUE(store_->Finalize(Fin("k3", "a", 200, "realm-b")).ok());
  clock_.AdvanceMs(kTtl + 1);
  EXPECT_EQ(*store_->PurgeExpired("realm-b", kT0 + kTtl + 1), 3);
  EXPECT_EQ(*store_->ListRealms("", 10), (Realms{"realm-a", "realm-c"}));
}

TEST_P(StoreConformanceTest, ListStaleReturnsOldHeartbeatsOfOneRealmInOrder) {
  ASSERT_EQ(MustReserve(Req("a")).status, ReserveStatus::kOwned);
  clock_.AdvanceMs(10);
  ASSERT_EQ(MustReserve(Req("b")).status, ReserveStatus::kOwned);
  ASSERT_EQ(MustReserve(Req("other", "x", "realm-2")).status, ReserveStatus::kOwned);
  clock_.AdvanceMs(10);
  ASSERT_EQ(MustReserve(Req("c")).status, ReserveStatus::kOwned);
  ASSERT_EQ(MustReserve(Req("done")).status, ReserveStatus::kOwned);
  ASSERT_EQ(store_->Finalize(Fin("done"))->status, FinalizeStatus::kFinalized);
  clock_.AdvanceMs(10);
  // "a" heartbeats, so it is no longer stale.
  ASSERT_EQ(store_->UpdateHeartbeat("realm-1", "a", "node-a:1")->status, HeartbeatStatus::kUpdated);

  auto stale = store_->ListStale("realm-1", kT0 + 25, 10);
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  ASSERT_EQ(stale->size(), 2u);
  EXPECT_EQ(stale->at(0).idempotency_key, "b");
  EXPECT_EQ(stale->at(1).idempotency_key, "c");
  auto limited = store_->ListStale("realm-1", kT0 + 25, 1);
  ASSERT_TRUE(limited.ok());
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ(limited->at(0).idempotency_key, "b");
  EXPECT_EQ(store_->ListStale("realm-1", kT0 + 10, 10)->size(), 0u);
  EXPECT_EQ(store_->ListStale("realm-1", kT0, 10).value().size(), 0u);
  EXPECT_EQ(store_->ListStale("realm-1", kT0 + 1, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, MalformedFieldsAreRejectedBeforeTouchingTheDatabase) {
  auto code = [&](const ReserveRequest& r) { return store_->Reserve(r).status().code(); };
  EXPECT_EQ(code(Req(std::string(kMaxKeyBytes + 1, 'k'))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req("")), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req("bad\nkey")), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req(std::string("nul\0key", 7))), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req("k", "")), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req("k", "a", "")), StatusCode::kInvalidArgument);
  ReserveRequest no_ttl = Req("k");
  no_ttl.ttl_ms = 0;
  EXPECT_EQ(code(no_ttl), StatusCode::kInvalidArgument);
  ReserveRequest long_resource = Req("k");
  long_resource.resource_id = std::string(kMaxResourceIdBytes + 1, 'r');
  EXPECT_EQ(code(long_resource), StatusCode::kInvalidArgument);
  EXPECT_FALSE(MustLoad("k").has_value());

  // The largest key is accepted.
  std::string max_key(kMaxKeyBytes, 'k');
  ASSERT_EQ(MustReserve(Req(max_key)).status, ReserveStatus::kOwned);
  EXPECT_EQ(MustLoad(max_key)->idempotency_key, max_key);

  auto fcode = [&](const FinalizeRequest& f) { return store_->Finalize(f).status().code(); };
  FinalizeRequest big = Fin(max_key);
  big.response_summary = "\"" + std::string(kMaxResponseSummaryBytes - 1, 's') + "\"";
  EXPECT_EQ(fcode(big), StatusCode::kInvalidArgument);
  FinalizeRequest not_json = Fin(max_key);
  not_json.response_summary = "{job_id: 42";
  EXPECT_EQ(fcode(not_json), StatusCode::kInvalidArgument);
  FinalizeRequest cookie = Fin(max_key);
  cookie.response_headers["Set-Cookie"] = "session=1";
  EXPECT_EQ(fcode(cookie), StatusCode::kInvalidArgument);
  FinalizeRequest split = Fin(max_key);
  split.response_headers["Location"] = "/x\r\nX-Evil: 1";
  EXPECT_EQ(fcode(split), StatusCode::kInvalidArgument);
  FinalizeRequest twice = Fin(max_key);
  twice.response_headers["LOCATION"] = "/y";
  EXPECT_EQ(fcode(twice), StatusCode::kInvalidArgument);
  for (int status : {99, 600}) {
    FinalizeRequest f = Fin(max_key, "node-a:1", status);
    EXPECT_EQ(fcode(f), StatusCode::kInvalidArgument) << status;
  }
  EXPECT_TRUE(MustLoad(max_key)->in_progress());

  // A summary of exactly 16 KiB is accepted and stored intact.
  FinalizeRequest exact = Fin(max_key);
  exact.response_summary = "\"" + std::string(kMaxResponseSummaryBytes - 2, 's') + "\"";
  auto fin = store_->Finalize(exact);
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  EXPECT_EQ(fin->status, FinalizeStatus::kFinalized);
  EXPECT_EQ(MustLoad(max_key)->response_summary, exact.response_summary);

  EXPECT_EQ(store_->Load("realm-1", std::string(kMaxKeyBytes + 1, 'k')).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->PurgeExpired("", kT0).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, ReserveAndFinalizeCommitWithTheCallersTransaction) {
  meta::Database& db = store_->database();
  ASSERT_TRUE(db.Write([](meta::Connection& c) {
                  return c.ExecuteScript("CREATE TABLE admitted_jobs (job_id BIGINT PRIMARY KEY)");
                }).ok());
  auto jobs = [&]() {
    auto conn = db.Acquire();
    EXPECT_TRUE(conn.ok());
    return (*conn)->Query("SELECT count(*) FROM admitted_jobs", {})->at(0).Int(0).value();
  };
  {
    auto txn = db.Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok()) << txn.status().ToString();
    ASSERT_TRUE(txn->conn().Execute("INSERT INTO admitted_jobs (job_id) VALUES (1)", {}).ok());
    auto r = store_->Reserve(*txn, Req("job-key"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, ReserveStatus::kOwned);
    ASSERT_TRUE(txn->Rollback().ok());
  }
  EXPECT_FALSE(MustLoad("job-key").has_value());
  EXPECT_EQ(jobs(), 0);
  {
    auto txn = db.Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(txn->conn().Execute("INSERT INTO admitted_jobs (job_id) VALUES (1)", {}).ok());
    ASSERT_EQ(store_->Reserve(*txn, Req("job-key"))->status, ReserveStatus::kOwned);
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_TRUE(MustLoad("job-key")->in_progress());
  EXPECT_EQ(jobs(), 1);
  {
    auto txn = db.Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    auto f = store_->Finalize(*txn, Fin("job-key"));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(f->status, FinalizeStatus::kFinalized);
    // Destroyed without commit: rolled back.
  }
  EXPECT_TRUE(MustLoad("job-key")->in_progress());
  {
    auto txn = db.Begin(meta::TxnMode::kWrite);
    ASSERT_TRUE(txn.ok());
    ASSERT_EQ(store_->Finalize(*txn, Fin("job-key"))->status, FinalizeStatus::kFinalized);
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(MustLoad("job-key")->http_status, 201);
}

TEST_P(StoreConformanceTest, ReopeningAppliesNoMigrationTwiceAndKeepsRecords) {
  ASSERT_EQ(MustReserve(Req("k1")).status, ReserveStatus::kOwned);
  store_.reset();
  store_ = OpenStore();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(MustLoad("k1")->executor_id, "node-a:1");
  auto applied = meta::ListAppliedMigrations(store_->database(), "idempotency");
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  ASSERT_EQ(applied->size(), 1u);
  EXPECT_EQ(applied->at(0).version, 1);
  EXPECT_EQ(applied->at(0).applied_at_ms, kT0);
}

TEST_P(StoreConformanceTest, ConcurrentReserveFinalizePairsAllLand) {
  constexpr int kThreads = 8;
  constexpr int kPairs = 25;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string exec = "exec-" + std::to_string(t);
      for (int i = 0; i < kPairs; ++i) {
        std::string key = exec + "-" + std::to_string(i);
        auto r = store_->Reserve(Req(key, exec));
        if (!r.ok() || r->status != ReserveStatus::kOwned) ++bad;
        auto f = store_->Finalize(Fin(key, exec));
        if (!f.ok() || f->status != FinalizeStatus::kFinalized) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  clock_.AdvanceMs(kTtl);
  auto purged = store_->PurgeExpired("realm-1", kT0 + kTtl + 1);
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(*purged, kThreads * kPairs);
}

}  // namespace vigil::idempotency

#include "server/idempotency_gate.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "testutil/temp_dir.h"
#include "vigil/server/router.h"

namespace vigil::server {
namespace {

class IdempotencyGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    idempotency::StoreOptions so;
    so.uri = "sqlite://" + dir_.Join("idempotency.db");
    auto store = idempotency::IdempotencyStore::Open(so);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    gate_ = std::make_unique<IdempotencyGate>(store_.get(), &metrics_, "executor-1", 3'600'000);
  }

  static IdempotentRequest Request(const std::string& key) {
    return {"default:alice", key, "POST /v1/databases", "/v1/databases",
            RequestFingerprint("POST", "/v1/databases", "", "{\"name\":\"d\"}")};
  }

  testing::TempDir dir_;
  Metrics metrics_;
  std::unique_ptr<idempotency::IdempotencyStore> store_;
  std::unique_ptr<IdempotencyGate> gate_;
};

TEST_F(IdempotencyGateTest, ARequestRunsOnceAndIsReplayed) {
  int runs = 0;
  auto run = [&](const std::string&) {
    ++runs;
    return JsonResponse("{\"created\":true}", 201);
  };
  HttpResponse first = gate_->Run(Request("k1"), run);
  HttpResponse again = gate_->Run(Request("k1"), run);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(first.status, 201);
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  bool replayed = false;
  for (const auto& [name, value] : again.headers)
    replayed = replayed || (name == "Idempotency-Replayed" && value == "true");
  EXPECT_TRUE(replayed);
}

TEST_F(IdempotencyGateTest, AHandlerThatThrowsLeavesTheKeyFreeForTheRetry) {
  EXPECT_THROW(
      gate_->Run(Request("k2"), [](const std::string&) -> HttpResponse { throw std::runtime_error("boom"); }),
      std::runtime_error);
  // Not a 409 "still running" until the record expires: the retry runs.
  int runs = 0;
  HttpResponse retry = gate_->Run(Request("k2"), [&](const std::string&) {
    ++runs;
    return JsonResponse("{}", 201);
  });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(retry.status, 201) << retry.body;
}

}  // namespace
}  // namespace vigil::server

#include "server/idempotency_gate.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "testutil/fake_env.h"
#include "testutil/temp_dir.h"
#include "vigil/server/router.h"

namespace vigil::server {
namespace {

class IdempotencyGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    idempotency::StoreOptions so;
    so.uri = "sqlite://" + dir_.Join("idempotency.db");
    so.env = &env_;
    auto store = idempotency::IdempotencyStore::Open(so);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    gate_ = std::make_unique<IdempotencyGate>(store_.get(), &metrics_, "executor-1", 3'600'000, SecretOf('s'),
                                              kHeartbeatMs, &env_);
  }

  static auth::ServerSecret SecretOf(char fill) {
    return *auth::ServerSecret::FromBytes(std::string(auth::ServerSecret::kSize, fill));
  }

  static IdempotentRequest Request(const std::string& key) {
    return {"default:alice", key, "POST /v1/databases", "/v1/databases",
            RequestFingerprint("POST", "/v1/databases", "", "{\"name\":\"d\"}")};
  }

  // Reserves `key` as another server would (one that may then die).
  void ReserveAs(const std::string& executor, const std::string& key) {
    const IdempotentRequest r = Request(key);
    auto reserved = store_->Reserve({r.realm, r.key, r.operation, r.resource, r.fingerprint, executor, 3'600'000});
    ASSERT_TRUE(reserved.ok() && reserved->status == idempotency::ReserveStatus::kOwned);
  }
  std::optional<idempotency::IdempotencyRecord> Load(const std::string& key) {
    auto r = store_->Load("default:alice", key);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  }

  testing::TempDir dir_;
  testing::FakeEnv env_;
  Metrics metrics_;
  std::unique_ptr<idempotency::IdempotencyStore> store_;
  std::unique_ptr<IdempotencyGate> gate_;
};

// A commit conflict committed nothing and says it is safe to retry: the key is freed, and the
// same key runs the request again instead of replaying the conflict for ever.
TEST_F(IdempotencyGateTest, ACommitConflictIsNotStoredAndTheSameKeyRunsAgain) {
  int runs = 0;
  auto run = [&](const jobs::RequestClaim&) {
    return ++runs == 1 ? ProblemResponse(Status::CommitConflict("lost every rebase; nothing was committed"))
                       : JsonResponse("{\"created\":true}", 201);
  };
  HttpResponse first = gate_->Run(Request("k-conflict"), run);
  EXPECT_EQ(first.status, 409);
  EXPECT_FALSE(Load("k-conflict").has_value());
  HttpResponse again = gate_->Run(Request("k-conflict"), run);
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(runs, 2);
  // Another 409 (a client-side conflict) is the request's answer and is replayed.
  auto exists = [&](const jobs::RequestClaim&) {
    ++runs;
    return ProblemResponse(Status::AlreadyExists("database d already exists"));
  };
  EXPECT_EQ(gate_->Run(Request("k-exists"), exists).status, 409);
  EXPECT_EQ(gate_->Run(Request("k-exists"), exists).status, 409);
  EXPECT_EQ(runs, 3);
}

TEST_F(IdempotencyGateTest, ARequestRunsOnceAndIsReplayed) {
  int runs = 0;
  auto run = [&](const jobs::RequestClaim&) {
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

// A response that holds a bearer token is never stored in clear: the record holds it sealed,
// the replay gives the original body back, and a server with another secret answers Corruption.
TEST_F(IdempotencyGateTest, AResponseHoldingATokenIsStoredSealedAndReplayedWhole) {
  const std::string token = "vgl_00112233aabbccdd_" + std::string(64, 'e');
  int runs = 0;
  auto run = [&](const jobs::RequestClaim&) {
    ++runs;
    HttpResponse resp = JsonResponse("{\"results\":[{\"rows\":[[\"bob\",\"" + token + "\"]]}]}");
    resp.holds_secret = true;
    return resp;
  };
  HttpResponse first = gate_->Run(Request("k-token"), run);
  ASSERT_EQ(first.status, 200);
  std::optional<idempotency::IdempotencyRecord> record = Load("k-token");
  ASSERT_TRUE(record && record->response_summary);
  EXPECT_EQ(record->response_summary->find(std::string(64, 'e')), std::string::npos) << *record->response_summary;
  EXPECT_NE(record->response_summary->find("sealed_response"), std::string::npos);

  HttpResponse again = gate_->Run(Request("k-token"), run);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);

  IdempotencyGate other(store_.get(), &metrics_, "executor-2", 3'600'000, SecretOf('t'), kHeartbeatMs, &env_);
  HttpResponse foreign = other.Run(Request("k-token"), run);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(foreign.status, 500);
  EXPECT_NE(foreign.body.find("CORRUPTION"), std::string::npos) << foreign.body;
  EXPECT_EQ(foreign.body.find(token), std::string::npos);
}

TEST(UserKeyRealmTest, NamesTheUserIncarnationAndParsesBack) {
  const KeyRealmOwner bob{"default", "bob", "00ff00ff00ff00ff"};
  EXPECT_EQ(UserKeyRealm(bob), "default:bob:00ff00ff00ff00ff");
  EXPECT_EQ(ParseUserKeyRealm("default:bob:00ff00ff00ff00ff"), bob);
  // A user of schema version 1 has no incarnation; its realm is the one those versions wrote.
  const KeyRealmOwner old_bob{"default", "bob", ""};
  EXPECT_EQ(UserKeyRealm(old_bob), "default:bob");
  EXPECT_EQ(ParseUserKeyRealm("default:bob"), old_bob);
  for (const char* other : {"", "default", ":bob", "default:", "default:bob:", "::x", "a:b:c:d"}) {
    EXPECT_FALSE(ParseUserKeyRealm(other).has_value()) << other;
  }
}

TEST_F(IdempotencyGateTest, AHandlerThatThrowsLeavesTheKeyFreeForTheRetry) {
  EXPECT_THROW(
      gate_->Run(Request("k2"), [](const jobs::RequestClaim&) -> HttpResponse { throw std::runtime_error("boom"); }),
      std::runtime_error);
  // Not a 409 "still running" until the record expires: the retry runs.
  int runs = 0;
  HttpResponse retry = gate_->Run(Request("k2"), [&](const jobs::RequestClaim&) {
    ++runs;
    return JsonResponse("{}", 201);
  });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(retry.status, 201) << retry.body;
}

TEST_F(IdempotencyGateTest, TheReconcilerSettlesOnlyStaleReservationsOfOtherServersFromEvidence) {
  ReserveAs("dead-server", "found");
  ReserveAs("dead-server", "absent");
  ReserveAs("dead-server", "unknown");
  ReserveAs("dead-server", "no-evidence");
  ReserveAs("executor-1", "mine");
  std::vector<std::string> asked;
  const auto settle_of = [&](const idempotency::IdempotencyRecord& record) -> SettleFn {
    if (record.idempotency_key == "no-evidence") return nullptr;
    return [&asked, key = record.idempotency_key](const std::string& token) -> Result<std::optional<HttpResponse>> {
      asked.push_back(token);
      if (key == "found") return std::optional<HttpResponse>(JsonResponse("{\"settled\":true}", 201));
      if (key == "absent") return std::optional<HttpResponse>();
      return Status::IOError("the evidence cannot be read");
    };
  };
  // Heartbeats younger than kStaleReservationMs: their servers may be alive.
  env_.AdvanceMs(kStaleReservationMs - 1);
  auto none = gate_->SettleStale("default:alice", settle_of);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0);
  EXPECT_TRUE(asked.empty());

  env_.AdvanceMs(2);
  auto settled = gate_->SettleStale("default:alice", settle_of);
  ASSERT_TRUE(settled.ok()) << settled.status().ToString();
  EXPECT_EQ(*settled, 3);
  // Each settle is asked about its own reservation's token.
  const int64_t reserved_at = env_.NowMs() - kStaleReservationMs - 1;
  EXPECT_EQ(std::set<std::string>(asked.begin(), asked.end()),
            (std::set<std::string>{"default:alice/found/" + std::to_string(reserved_at),
                                   "default:alice/absent/" + std::to_string(reserved_at),
                                   "default:alice/unknown/" + std::to_string(reserved_at)}));
  // Found: finished as the dead server's result, replayed from now on.
  auto found = Load("found");
  ASSERT_TRUE(found && !found->in_progress());
  EXPECT_EQ(found->http_status, 201);
  int runs = 0;
  HttpResponse replay = gate_->Run(Request("found"), [&](const jobs::RequestClaim&) {
    ++runs;
    return JsonResponse("{}", 201);
  });
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(replay.body, "{\"settled\":true}");
  // Provably absent: the key is free again.
  EXPECT_FALSE(Load("absent").has_value());
  // No route that can tell: a stable outcome-unknown answer, replayed without running.
  HttpResponse unknown = gate_->Run(Request("no-evidence"), [&](const jobs::RequestClaim&) {
    ++runs;
    return JsonResponse("{}", 201);
  });
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(unknown.status, 409);
  EXPECT_NE(unknown.body.find("IDEMPOTENCY_OUTCOME_UNKNOWN"), std::string::npos) << unknown.body;
  // Evidence that cannot be read now, or this server's own running request: untouched.
  for (const char* key : {"unknown", "mine"}) {
    auto r = Load(key);
    ASSERT_TRUE(r.has_value()) << key;
    EXPECT_TRUE(r->in_progress()) << key;
  }
}

TEST_F(IdempotencyGateTest, AKeyReusedAfterItsRecordWasPurgedMarksItsEffectWithANewToken) {
  std::string first_token, second_token;
  gate_->Run(Request("k3"), [&](const jobs::RequestClaim& claim) {
    first_token = claim.token;
    return JsonResponse("{}", 201);
  });
  // Past the TTL the record goes; the same key is a new request with a new reservation.
  env_.AdvanceMs(3'600'001);
  auto purged = store_->PurgeExpired("default:alice", env_.NowMs());
  ASSERT_TRUE(purged.ok() && *purged == 1);
  gate_->Run(Request("k3"), [&](const jobs::RequestClaim& claim) {
    second_token = claim.token;
    return JsonResponse("{}", 201);
  });
  EXPECT_FALSE(first_token.empty());
  EXPECT_NE(first_token, second_token);
}

// Confirms `claim` in a write transaction of its own, as an effect's transaction would.
Status Confirm(idempotency::IdempotencyStore& store, const jobs::RequestClaim& claim) {
  return store.database().Write([&](meta::Connection& conn) { return claim.confirm(conn); });
}

TEST_F(IdempotencyGateTest, AStalledServerWhoseKeyWasTakenOverChangesNothingAndSaysSo) {
  // Two servers on one store; neither renews its heartbeat during the test.
  Metrics other_metrics;
  IdempotencyGate stalled(store_.get(), &metrics_, "stalled-server", 3'600'000, SecretOf('s'), 3'600'000, &env_);
  IdempotencyGate other(store_.get(), &other_metrics, "other-server", 3'600'000, SecretOf('s'), 3'600'000, &env_);
  const auto nothing_done = [](const std::string&) -> Result<std::optional<HttpResponse>> {
    return std::optional<HttpResponse>();
  };
  int effects = 0;
  Status stalled_confirm;
  HttpResponse late = stalled.Run(Request("k4"), [&](const jobs::RequestClaim& claim) {
    // The server stalls past kStaleReservationMs before its effect; a retry reaches the other
    // server, which finds no effect, takes the key over and runs the request.
    env_.AdvanceMs(kStaleReservationMs + 1);
    HttpResponse taken = other.Run(
        Request("k4"),
        [&](const jobs::RequestClaim& mine) {
          EXPECT_TRUE(Confirm(*store_, mine).ok());
          ++effects;
          return JsonResponse("{\"by\":\"other\"}", 201);
        },
        nothing_done);
    EXPECT_EQ(taken.status, 201) << taken.body;
    // The stalled server resumes: its effect's confirm is refused, so it changes nothing.
    stalled_confirm = Confirm(*store_, claim);
    if (stalled_confirm.ok()) ++effects;
    return JsonResponse("{\"by\":\"stalled\"}", 201);
  });
  EXPECT_EQ(stalled_confirm.code(), StatusCode::kFailedPrecondition) << stalled_confirm.ToString();
  EXPECT_EQ(effects, 1);
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_NE(late.body.find("IDEMPOTENCY_REQUEST_TAKEN_OVER"), std::string::npos) << late.body;
  // The key holds the other server's answer, replayed to every retry.
  auto record = Load("k4");
  ASSERT_TRUE(record && !record->in_progress());
  EXPECT_EQ(record->executor_id, "other-server");
  EXPECT_EQ(record->response_summary, "{\"by\":\"other\"}");
  EXPECT_NE(metrics_.Render().find("outcome=\"lost_ownership\"} 1"), std::string::npos);
}

TEST_F(IdempotencyGateTest, AnOwnerThatConfirmedItsEffectKeepsItsKeyFromATakeover) {
  IdempotencyGate owner(store_.get(), &metrics_, "slow-server", 3'600'000, SecretOf('s'), 3'600'000, &env_);
  int effects = 0;
  HttpResponse resp = owner.Run(Request("k5"), [&](const jobs::RequestClaim& claim) {
    env_.AdvanceMs(kStaleReservationMs + 1);
    // The reconciler reads the evidence and finds nothing; before it releases the key, the
    // owner's effect commits with its confirm. The release must then fail.
    auto settled = gate_->SettleStale("default:alice", [&](const idempotency::IdempotencyRecord&) -> SettleFn {
      return [&](const std::string&) -> Result<std::optional<HttpResponse>> {
        EXPECT_TRUE(Confirm(*store_, claim).ok());
        ++effects;
        return std::optional<HttpResponse>();
      };
    });
    EXPECT_TRUE(settled.ok() && *settled == 0);
    return JsonResponse("{}", 201);
  });
  EXPECT_EQ(effects, 1);
  EXPECT_EQ(resp.status, 201) << resp.body;
  auto record = Load("k5");
  ASSERT_TRUE(record && !record->in_progress());
  EXPECT_EQ(record->executor_id, "slow-server");
}

}  // namespace
}  // namespace vigil::server

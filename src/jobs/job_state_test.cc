#include "vigil/jobs/job_state.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string_view>
#include <vector>

#include "jobs/job_schema.h"

namespace vigil::jobs {
namespace {

JobState Steps(std::initializer_list<std::function<Result<JobState>(const JobState&)>> steps) {
  JobState s = *Admit();
  for (const auto& step : steps) {
    auto next = step(s);
    EXPECT_TRUE(next.ok()) << next.status().ToString();
    if (!next.ok()) return s;
    s = *next;
  }
  return s;
}

auto Attempt(AttemptResult r, bool changed = false) {
  return [=](const JobState& s) { return FinishAttempt(s, r, changed); };
}
auto Refresh(bool ok) {
  return [=](const JobState& s) -> Result<JobState> {
    VIGIL_ASSIGN_OR_RETURN(JobState n, StartRefresh(s));
    return FinishRefresh(n, ok);
  };
}

TEST(JobStateTest, T1AdmitIsPendingAndHoldsTheFence) {
  JobState s = *Admit();
  EXPECT_EQ(DerivedState(s), "PENDING");
  EXPECT_TRUE(HoldsFence(s));
  EXPECT_TRUE(CheckLegal(s).ok());
  EXPECT_FALSE(IsFinal(s));
}

TEST(JobStateTest, T2CancelOnlyWhilePending) {
  JobState s = Steps({BeginCancel, FinishCancel});
  EXPECT_EQ(s.outcome, Outcome::kCancelledBeforeDispatch);
  EXPECT_EQ(DerivedState(s), "CANCELLED");
  EXPECT_FALSE(HoldsFence(s));
  JobState running = Steps({Dispatch});
  EXPECT_EQ(BeginCancel(running).status().code(), StatusCode::kFailedPrecondition);
}

TEST(JobStateTest, T3DispatchOnce) {
  JobState s = Steps({Dispatch});
  EXPECT_EQ(DerivedState(s), "RUNNING");
  EXPECT_TRUE(ExecutorMayCommit(s));
  EXPECT_EQ(Dispatch(s).status().code(), StatusCode::kFailedPrecondition);  // I2: never twice
}

TEST(JobStateTest, T4NotInvokedIsNotCommitted) {
  JobState quiet = Steps({Dispatch, Attempt(AttemptResult::kNotInvoked)});
  EXPECT_EQ(quiet.outcome, Outcome::kNotCommitted);
  EXPECT_EQ(quiet.refresh, RefreshState::kNotRequired);
  EXPECT_FALSE(HoldsFence(quiet));
  JobState changed = Steps({Dispatch, Attempt(AttemptResult::kNotInvoked, true)});
  EXPECT_EQ(changed.refresh, RefreshState::kRequired);
  EXPECT_TRUE(HoldsFence(changed));  // until the refresh is done
}

TEST(JobStateTest, T5SuccessHoldsFenceUntilRefreshDone) {
  JobState s = Steps({Dispatch, Attempt(AttemptResult::kCommitted)});
  EXPECT_EQ(DerivedState(s), "REFRESHING");
  EXPECT_TRUE(HoldsFence(s));
  JobState failed_refresh = *FinishRefresh(*StartRefresh(s), false);
  EXPECT_EQ(DerivedState(failed_refresh), "COMMITTED_REFRESH_PENDING");
  EXPECT_TRUE(HoldsFence(failed_refresh));
  JobState done = *FinishRefresh(*StartRefresh(failed_refresh), true);
  EXPECT_EQ(DerivedState(done), "FINISHED");
  EXPECT_FALSE(HoldsFence(done));
  EXPECT_TRUE(IsFinal(done));
}

TEST(JobStateTest, T6AndT7NoCommit) {
  JobState t6 = Steps({Dispatch, Attempt(AttemptResult::kNotCommitted)});
  EXPECT_EQ(DerivedState(t6), "FAILED");
  EXPECT_FALSE(HoldsFence(t6));
  JobState t7 = Steps({Dispatch, Attempt(AttemptResult::kNotCommittedChanged)});
  EXPECT_EQ(t7.refresh, RefreshState::kRequired);
  EXPECT_TRUE(HoldsFence(t7));
  JobState noop = Steps({Dispatch, Attempt(AttemptResult::kNoop), Refresh(true)});
  EXPECT_EQ(noop.outcome, Outcome::kNoop);
  EXPECT_EQ(DerivedState(noop), "FINISHED");
  JobState pre = *FinishBeforeDispatch(*Admit(), AttemptResult::kNoop, false);
  EXPECT_EQ(pre.outcome, Outcome::kNoop);
  EXPECT_FALSE(HoldsFence(pre));
}

TEST(JobStateTest, T8UnknownWatchesAndKeepsTheFence) {
  JobState s = Steps({Dispatch, Attempt(AttemptResult::kUnknown)});
  EXPECT_EQ(DerivedState(s), "OUTCOME_UNKNOWN");
  EXPECT_EQ(s.reconcile, ReconcileState::kWatching);
  EXPECT_TRUE(HoldsFence(s));
  EXPECT_TRUE(ExecutorMayCommit(s));
  EXPECT_TRUE(IsFinal(s));
}

TEST(JobStateTest, T9ObservedChangeRequiresRefresh) {
  JobState s = Steps({Dispatch, Attempt(AttemptResult::kUnknown), ObserveChange});
  EXPECT_EQ(s.refresh, RefreshState::kRequired);
  EXPECT_EQ(s.outcome, Outcome::kUnknown);
  s = *FinishRefresh(*StartRefresh(s), true);
  EXPECT_TRUE(HoldsFence(s));  // a refresh never releases an UNKNOWN fence
  EXPECT_EQ(s.reconcile, ReconcileState::kWatching);
}

TEST(JobStateTest, T10TerminationProofStopsWatchingButKeepsUnknown) {
  JobState s = Steps({Dispatch, Attempt(AttemptResult::kUnknown), ProveTermination});
  EXPECT_EQ(s.reconcile, ReconcileState::kFinalReadPending);
  EXPECT_FALSE(ExecutorMayCommit(s));
  s = *FinishFinalRead(s);
  EXPECT_EQ(s.reconcile, ReconcileState::kStoppedTerminationProven);
  EXPECT_EQ(s.outcome, Outcome::kUnknown);
  EXPECT_TRUE(HoldsFence(s));
}

TEST(JobStateTest, AttributionLeavesUnknownOnlyAfterTerminationProof) {
  JobState watching = Steps({Dispatch, Attempt(AttemptResult::kUnknown)});
  EXPECT_EQ(Attribute(watching, true).status().code(), StatusCode::kFailedPrecondition);
  JobState proven = *ProveTermination(watching);
  JobState committed = *Attribute(proven, true);
  EXPECT_EQ(committed.outcome, Outcome::kCommitted);
  EXPECT_EQ(committed.refresh, RefreshState::kRequired);
  EXPECT_TRUE(HoldsFence(committed));
  EXPECT_FALSE(HoldsFence(*FinishRefresh(*StartRefresh(committed), true)));
  EXPECT_EQ(Attribute(proven, false)->outcome, Outcome::kNotCommitted);
}

TEST(JobStateTest, T11RefreshRetries) {
  JobState s = Steps({Dispatch, Attempt(AttemptResult::kCommitted), Refresh(false), Refresh(false), Refresh(true)});
  EXPECT_EQ(s.refresh, RefreshState::kDone);
  EXPECT_EQ(StartRefresh(s).status().code(), StatusCode::kFailedPrecondition);
}

TEST(JobStateTest, T12AckNeverReleasesTheFence) {
  JobState s = Steps({Dispatch, Attempt(AttemptResult::kUnknown), RequestAck});
  EXPECT_EQ(s.disposition, Disposition::kAckRefreshPending);
  s = *FinishRefresh(*StartRefresh(s), true);
  EXPECT_EQ(s.disposition, Disposition::kAcknowledged);
  EXPECT_EQ(s.outcome, Outcome::kUnknown);
  EXPECT_TRUE(HoldsFence(s));
  EXPECT_EQ(RequestAck(s).status().code(), StatusCode::kFailedPrecondition);
}

TEST(JobStateTest, T13ForceReleasesWithoutChangingTheOutcome) {
  JobState s = Steps({Dispatch, Attempt(AttemptResult::kUnknown), RequestAck, Refresh(true), RequestForce});
  EXPECT_EQ(s.disposition, Disposition::kForceRefreshPending);
  EXPECT_TRUE(HoldsFence(s));
  s = *FinishRefresh(*StartRefresh(s), true);
  EXPECT_EQ(s.disposition, Disposition::kForceReleased);
  EXPECT_EQ(s.reconcile, ReconcileState::kStoppedByForce);
  EXPECT_EQ(s.outcome, Outcome::kUnknown);
  EXPECT_FALSE(HoldsFence(s));
  EXPECT_EQ(DerivedState(s), "OUTCOME_UNKNOWN");
}

// Event streams end at a settled state: an UNKNOWN outcome is final for WAIT but not settled
// until FORCE_RELEASE, since the reconciler or a RESOLVE may still change what SHOW says.
TEST(JobStateTest, AnUnknownOutcomeIsSettledOnlyOnceForceReleased) {
  const auto settled = [](const JobState& s) { return IsSettledStateName(DerivedState(s), Name(s.disposition)); };
  JobState unknown = Steps({Dispatch, Attempt(AttemptResult::kUnknown)});
  EXPECT_TRUE(IsFinal(unknown));
  EXPECT_FALSE(settled(unknown));
  JobState acked = *FinishRefresh(*StartRefresh(*RequestAck(unknown)), true);
  EXPECT_FALSE(settled(acked));
  JobState forced = *FinishRefresh(*StartRefresh(*RequestForce(acked)), true);
  EXPECT_TRUE(settled(forced));
  EXPECT_TRUE(settled(Steps({Dispatch, Attempt(AttemptResult::kCommitted), Refresh(true)})));
  EXPECT_FALSE(settled(Steps({Dispatch})));
  EXPECT_FALSE(IsFinalStateName("RUNNING"));
}

TEST(JobStateTest, T14ForceWithoutRefresh) {
  JobState unknown = Steps({Dispatch, Attempt(AttemptResult::kUnknown), RequestForce});
  JobState s = *ForceWithoutRefresh(unknown);
  EXPECT_EQ(s.refresh, RefreshState::kSkippedByForce);
  EXPECT_EQ(s.outcome, Outcome::kUnknown);
  EXPECT_FALSE(HoldsFence(s));
  JobState stuck = Steps({Dispatch, Attempt(AttemptResult::kCommitted), Refresh(false)});
  JobState skipped = *ForceWithoutRefresh(stuck);
  EXPECT_EQ(DerivedState(skipped), "COMMITTED_REFRESH_SKIPPED");
  EXPECT_FALSE(HoldsFence(skipped));
  JobState finished = Steps({Dispatch, Attempt(AttemptResult::kCommitted), Refresh(true)});
  EXPECT_EQ(ForceWithoutRefresh(finished).status().code(), StatusCode::kFailedPrecondition);
}

TEST(JobStateTest, LegalityRules) {
  EXPECT_FALSE(CheckLegal({Execution::kRunning, Outcome::kCommitted}).ok());
  EXPECT_FALSE(CheckLegal({Execution::kTerminal, Outcome::kNone}).ok());
  EXPECT_FALSE(
      CheckLegal({Execution::kTerminal, Outcome::kCommitted, RefreshState::kDone, ReconcileState::kWatching}).ok());
  EXPECT_FALSE(CheckLegal({Execution::kTerminal, Outcome::kUnknown, RefreshState::kDone, ReconcileState::kNone}).ok());
  EXPECT_FALSE(CheckLegal({Execution::kTerminal, Outcome::kCommitted, RefreshState::kSkippedByForce}).ok());
  EXPECT_FALSE(CheckLegal({Execution::kTerminal, Outcome::kCommitted, RefreshState::kDone, ReconcileState::kNone,
                           Disposition::kAcknowledged})
                   .ok());
  EXPECT_FALSE(CheckLegal({Execution::kTerminal, Outcome::kUnknown, RefreshState::kDone, ReconcileState::kWatching,
                           Disposition::kForceReleased})
                   .ok());
  EXPECT_TRUE(CheckLegal({Execution::kTerminal, Outcome::kUnknown, RefreshState::kDone, ReconcileState::kWatching,
                          Disposition::kAcknowledged})
                  .ok());
}

TEST(JobStateTest, NamesRoundTrip) {
  EXPECT_EQ(*ParseOutcome(Name(Outcome::kCancelledBeforeDispatch)), Outcome::kCancelledBeforeDispatch);
  EXPECT_EQ(*ParseDisposition("FORCE_RELEASED"), Disposition::kForceReleased);
  EXPECT_EQ(ParseRefreshState("BOGUS").status().code(), StatusCode::kCorruption);
}

// The vocabulary every surface sends (job JSON flags, /v1/config) is these lists and
// predicates: each name-level answer agrees with the state-level one for every legal state.
TEST(JobStateTest, TheStateVocabularyAgreesWithThePredicatesForEveryLegalState) {
  const auto has = [](const std::vector<std::string_view>& names, std::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  ASSERT_GT(LegalStates().size(), 20u);
  std::set<std::string_view> reached;
  for (const JobState& s : LegalStates()) {
    const std::string_view derived = DerivedState(s);
    const std::string_view disposition = Name(s.disposition);
    reached.insert(derived);
    EXPECT_TRUE(has(DerivedStateNames(), derived)) << derived;
    EXPECT_EQ(has(FinalStateNames(), derived), IsFinal(s)) << derived;
    EXPECT_EQ(HoldsFenceStateName(derived, disposition), HoldsFence(s)) << derived << " " << disposition;
    EXPECT_EQ(IsResolvableStateName(derived, disposition), IsResolvable(s)) << derived << " " << disposition;
    if (HoldsFence(s)) EXPECT_TRUE(has(FenceHoldingStateNames(), derived)) << derived;
    if (IsResolvable(s)) EXPECT_TRUE(has(ResolvableStateNames(), derived)) << derived;
  }
  EXPECT_EQ(reached.size(), DerivedStateNames().size());
  EXPECT_EQ(FenceHoldingStateNames(),
            (std::vector<std::string_view>{"PENDING", "RUNNING", "REFRESHING", "OUTCOME_UNKNOWN",
                                           "COMMITTED_REFRESH_PENDING", "FAILED_REFRESH_PENDING"}));
  EXPECT_EQ(ResolvableStateNames(), std::vector<std::string_view>{"OUTCOME_UNKNOWN"});
  EXPECT_EQ(FinalStateNames().size(), 6u);
}

// The schema's CHECK constraints name the persisted states of this header. Migration 1 is
// released and never edited (its checksum is verified on open), so it cannot be generated from
// the vocabulary; this holds the two to each other on both backends instead.
TEST(JobStateTest, TheSchemasChecksNameEveryPersistedStateAndNoOther) {
  // Every Name() of an enum whose last value is `last`.
  const auto names = [](auto last) {
    std::set<std::string> out;
    for (int i = 0; i <= static_cast<int>(last); ++i) out.insert(std::string(Name(decltype(last)(i))));
    return out;
  };
  const std::map<std::string, std::set<std::string>> want = {{"execution", names(Execution::kTerminal)},
                                                             {"outcome", names(Outcome::kUnknown)},
                                                             {"refresh", names(RefreshState::kSkippedByForce)},
                                                             {"reconcile", names(ReconcileState::kStoppedByForce)},
                                                             {"disposition", names(Disposition::kForceReleased)}};
  const std::regex check(R"((\w+) TEXT NOT NULL CHECK \(\1 IN \(([^)]*)\)\))");
  const std::regex quoted("'([A-Z_]+)'");
  for (meta::Dialect dialect : {meta::Dialect::kSqlite, meta::Dialect::kPostgres}) {
    const std::string sql(SchemaMigrations(dialect).front().sql);
    std::map<std::string, std::set<std::string>> got;
    for (std::sregex_iterator m(sql.begin(), sql.end(), check), end; m != end; ++m) {
      const std::string column = (*m)[1], list = (*m)[2];
      if (want.count(column) == 0) continue;
      for (std::sregex_iterator q(list.begin(), list.end(), quoted); q != end; ++q) got[column].insert((*q)[1]);
    }
    EXPECT_EQ(got, want) << (dialect == meta::Dialect::kSqlite ? "SQLite" : "PostgreSQL");
  }
}

// RESOLVE applies to an UNKNOWN outcome until it is force-released; not while an
// acknowledgement waits for its refresh, and never to a known outcome.
TEST(JobStateTest, AJobIsResolvableWhileAResolveWouldBeTaken) {
  JobState unknown = Steps({Dispatch, Attempt(AttemptResult::kUnknown)});
  EXPECT_TRUE(IsResolvable(unknown));
  JobState ack_pending = *RequestAck(unknown);
  EXPECT_FALSE(IsResolvable(ack_pending));
  JobState acked = *FinishRefresh(*StartRefresh(ack_pending), true);
  EXPECT_TRUE(IsResolvable(acked));  // FORCE_RELEASE after ACKNOWLEDGED
  JobState forced = *FinishRefresh(*StartRefresh(*RequestForce(acked)), true);
  EXPECT_FALSE(IsResolvable(forced));
  EXPECT_FALSE(IsResolvable(Steps({Dispatch, Attempt(AttemptResult::kCommitted), Refresh(true)})));
  EXPECT_FALSE(IsResolvable(Steps({Dispatch})));
}

// Random sequences of every transition: each step is either refused or lands
// in a legal state; FORCE never changes the outcome; ACK never releases the
// fence; a job is never CANCELLED while an executor may commit; an executor
// that may commit always has its fence.
RC_GTEST_PROP(JobStateProperty, RandomTransitionsStayLegal, ()) {
  JobState s = *Admit();
  const int steps = *rc::gen::inRange(1, 40);
  for (int i = 0; i < steps; ++i) {
    const int t = *rc::gen::inRange(0, 16);
    const bool flag = *rc::gen::arbitrary<bool>();
    const auto r = static_cast<AttemptResult>(*rc::gen::inRange(0, 6));
    Result<JobState> next = Status::Internal("unset");
    switch (t) {
      case 0:
        next = BeginCancel(s);
        break;
      case 1:
        next = FinishCancel(s);
        break;
      case 2:
        next = Dispatch(s);
        break;
      case 3:
        next = FinishAttempt(s, r, flag);
        break;
      case 4:
        next = FinishBeforeDispatch(s, flag ? AttemptResult::kNoop : AttemptResult::kNotInvoked, flag);
        break;
      case 5:
        next = ObserveChange(s);
        break;
      case 6:
        next = ProveTermination(s);
        break;
      case 7:
        next = FinishFinalRead(s);
        break;
      case 8:
        next = Attribute(s, flag);
        break;
      case 9:
        next = StartRefresh(s);
        break;
      case 10:
        next = FinishRefresh(s, flag);
        break;
      case 11:
        next = RequestAck(s);
        break;
      case 12:
        next = RequestForce(s);
        break;
      case 13:
        next = ForceWithoutRefresh(s);
        break;
      default:
        next = StartRefresh(s);
        break;
    }
    if (!next.ok()) {
      RC_ASSERT(next.status().code() == StatusCode::kFailedPrecondition);
      continue;
    }
    const JobState& n = *next;
    RC_ASSERT(CheckLegal(n).ok());
    if (s.disposition != n.disposition && (t == 11 || t == 12 || t == 13 || t == 10)) {
      RC_ASSERT(n.outcome == s.outcome);  // resolution never rewrites the outcome
    }
    if (t == 11) RC_ASSERT(HoldsFence(n));
    if (ExecutorMayCommit(n)) {
      RC_ASSERT(n.outcome != Outcome::kCancelledBeforeDispatch);
      RC_ASSERT(HoldsFence(n) || n.disposition == Disposition::kForceReleased);
    }
    if (s.execution != Execution::kPending)
      RC_ASSERT(n.execution != Execution::kRunning || s.execution == Execution::kRunning);
    s = n;
  }
}

}  // namespace
}  // namespace vigil::jobs

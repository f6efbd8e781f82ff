#include "vigil/jobs/classification.h"

#include <gtest/gtest.h>

namespace vigil::jobs {
namespace {

ExecutorReport Complete(bool invoked, StatusCode code) {
  ExecutorReport r;
  r.complete = true;
  r.invoked = invoked;
  r.code = code;
  return r;
}

TEST(ClassificationTest, NoInvocationIsProvenOnlyByCompleteReportsOrPreDelivery) {
  ExecutorReport launch_failed;
  launch_failed.failed_before_request = true;
  EXPECT_EQ(Classify(Operation::kCreate, IfMode::kNone, launch_failed).result, AttemptResult::kNotInvoked);
  EXPECT_EQ(Classify(Operation::kCreate, IfMode::kNone, Complete(false, StatusCode::kInvalidArgument)).result,
            AttemptResult::kNotInvoked);
  // Stale admission refused before invocation: not committed, but the table must be refreshed.
  auto stale = Classify(Operation::kCreate, IfMode::kNone, Complete(false, StatusCode::kFailedPrecondition));
  EXPECT_EQ(stale.result, AttemptResult::kNotInvoked);
  EXPECT_TRUE(stale.observed_change);
  // Silence after the request was accepted is never proof of non-invocation.
  ExecutorReport silent;
  EXPECT_EQ(Classify(Operation::kCreate, IfMode::kNone, silent).result, AttemptResult::kUnknown);
  silent.invoked = false;  // an invocation marker is meaningless without a complete report
  EXPECT_EQ(Classify(Operation::kDrop, IfMode::kIfExists, silent).result, AttemptResult::kUnknown);
}

TEST(ClassificationTest, TypedResultsAfterInvocation) {
  for (Operation op : {Operation::kCreate, Operation::kReplace, Operation::kDrop, Operation::kBuild}) {
    auto ok = Classify(op, IfMode::kNone, Complete(true, StatusCode::kOk));
    EXPECT_EQ(ok.result, AttemptResult::kCommitted);
    EXPECT_TRUE(ok.observed_change);
    EXPECT_EQ(Classify(op, IfMode::kNone, Complete(true, StatusCode::kCommitConflict)).result,
              AttemptResult::kNotCommittedChanged);
    for (StatusCode c : {StatusCode::kInvalidArgument, StatusCode::kNotSupported, StatusCode::kIOError,
                         StatusCode::kInternal, StatusCode::kCorruption, StatusCode::kResourceExhausted}) {
      EXPECT_EQ(Classify(op, IfMode::kNone, Complete(true, c)).result, AttemptResult::kUnknown) << StatusCodeName(c);
    }
  }
}

TEST(ClassificationTest, NotFoundAndAlreadyExistsDependOnOperationAndIfMode) {
  EXPECT_EQ(Classify(Operation::kCreate, IfMode::kNone, Complete(true, StatusCode::kNotFound)).result,
            AttemptResult::kUnknown);
  EXPECT_EQ(Classify(Operation::kReplace, IfMode::kNone, Complete(true, StatusCode::kNotFound)).result,
            AttemptResult::kUnknown);
  EXPECT_EQ(Classify(Operation::kDrop, IfMode::kNone, Complete(true, StatusCode::kNotFound)).result,
            AttemptResult::kNotCommittedChanged);
  EXPECT_EQ(Classify(Operation::kDrop, IfMode::kIfExists, Complete(true, StatusCode::kNotFound)).result,
            AttemptResult::kNoop);
  EXPECT_EQ(Classify(Operation::kCreate, IfMode::kIfNotExists, Complete(true, StatusCode::kAlreadyExists)).result,
            AttemptResult::kNoop);
  EXPECT_EQ(Classify(Operation::kCreate, IfMode::kNone, Complete(true, StatusCode::kAlreadyExists)).result,
            AttemptResult::kNotCommittedChanged);
}

}  // namespace
}  // namespace vigil::jobs

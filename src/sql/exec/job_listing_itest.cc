// The job listings through a Session (issue 13, "listings that never lose a
// job"): SHOW INDEX JOBS and vigil_index_jobs page through any number of jobs
// with their filters evaluated by the store, a non-administrator's listing is
// filtered in the store, an unresolved UNKNOWN job stays listed after archival,
// both surfaces show the same cells, FORCE_RELEASE is audited in vigil_audit(),
// and SHOW says when jobs wait for a leader that is not running.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sql/select/job_listing.h"
#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/jobs/executor.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/jobs/runner.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kStart = 1'700'000'000'000;
constexpr char kLeaderNotice[] =
    "1 job(s) wait for a leader; none is running: start `vigil supervise` or run any `vigil sql` statement";

// A fresh root, a session on a logical clock (one second per reading), the root's job
// store, and a runner playing the leader when asked.
class JobListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_path_ = dir_.Join("root");
    auto root = Root::Init(root_path_);
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    auto store = jobs::OpenRootJobStore(*root);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    Reopen(auth::Principal::LocalAdmin());
    Ok("CREATE TABLE db.docs (id BIGINT NOT NULL, category STRING NOT NULL)");
    Ok("INSERT INTO db.docs VALUES (1, 'a'), (2, 'b')");
  }
  void TearDown() override { failpoint::DisarmAll(); }

  void Reopen(const auth::Principal& who) {
    session_.reset();
    SessionOptions o;
    o.clock = [this] { return now_ += 1000; };
    o.resolve_wait_ms = 0;
    o.principal = who;
    auto s = Session::Open(root_path_, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    session_ = std::move(*s);
  }

  Result<ResultSet> Exec(const std::string& sql) { return session_->Execute(sql); }
  ResultSet Ok(const std::string& sql) {
    auto r = Exec(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    return r.ok() ? *r : ResultSet{};
  }
  int64_t Scalar(const std::string& sql) {
    ResultSet r = Ok(sql);
    if (r.rows.size() != 1 || !std::holds_alternative<int64_t>(r.rows[0][0])) return -1;
    return std::get<int64_t>(r.rows[0][0]);
  }

  // Dispatches every pending job and runs every due refresh.
  void RunJobs() {
    if (!runner_) {
      jobs::RunnerOptions options;
      options.lease_ttl_ms = int64_t{1} << 40;
      runner_ = std::make_unique<jobs::JobRunner>(store_.get(), &executor_, options);
      ASSERT_TRUE(runner_->Start(now_ += 1000).ok());
    }
    while (true) {
      auto id = runner_->RunOnePending(now_ += 1000);
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      if (!*id) break;
    }
    ASSERT_TRUE(runner_->RunRefreshes(now_ += 1000).ok());
  }

  // A CREATE INDEX whose provider fails after writing its segment: OUTCOME_UNKNOWN.
  int64_t UnknownJob(const std::string& name) {
    ResultSet r = Ok("CREATE INDEX " + name + " ON db.docs (id) USING BTREE");
    EXPECT_EQ(r.admitted_jobs.size(), 1u);
    failpoint::Arm("provider.after_segment_write", failpoint::Action::kError);
    RunJobs();
    failpoint::DisarmAll();
    return r.admitted_jobs.empty() ? 0 : r.admitted_jobs[0];
  }

  // Inserts `n` terminal FAILED jobs of db.<table> in one statement.
  void BulkJobs(int n, const std::string& table) {
    auto t = store_->catalog().LookupTable("local", "db", table);
    ASSERT_TRUE(t.ok() && t->has_value());
    auto conn = store_->database().Acquire();
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(
        (*conn)
            ->Execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)"
                      " INSERT INTO index_jobs (revision, creator, created_at, started_at, finished_at,"
                      " catalog_name, database_name, table_name, catalog_incarnation, table_incarnation,"
                      " locator, index_name, normalization_version, normalized_name, provider, operation,"
                      " if_mode, columns_json, properties_json, start_version, schema_fingerprint,"
                      " execution, outcome, refresh, reconcile, disposition)"
                      " SELECT 3, 'bulk', $2, $2, $2, 'local', 'db', $3, $4, $5, $6, 'bulk_idx', 1,"
                      " 'bulk_idx', 'DIRECTORY', 'CREATE', 'NONE', '[\"id\"]', '{}', 1, 'fp',"
                      " 'TERMINAL', 'NOT_COMMITTED', 'DONE', 'NONE', 'NONE' FROM n",
                      {int64_t{n}, now_, table, (*t)->catalog_incarnation, (*t)->table_incarnation, (*t)->locator})
            .ok());
  }

  static std::vector<int64_t> Ids(const ResultSet& r) {
    std::vector<int64_t> out;
    for (const auto& row : r.rows) out.push_back(std::get<int64_t>(row[0]));
    return out;
  }

  testing::TempDir dir_;
  std::string root_path_;
  int64_t now_ = kStart;
  std::unique_ptr<jobs::JobStore> store_;
  std::unique_ptr<Session> session_;
  jobs::InProcessExecutor executor_;
  std::unique_ptr<jobs::JobRunner> runner_;
};

// 2,500 jobs in the archive window: every listing form answers; SHOW pages by 1,000 with a
// notice naming the statement that continues it, and the table function streams them all.
TEST_F(JobListingTest, ListingsOfThousandsOfJobsArePagedNeverRefused) {
  BulkJobs(2500, "docs");
  ResultSet first = Ok("SHOW INDEX JOBS");
  ASSERT_EQ(first.rows.size(), 1000u);
  EXPECT_EQ(Ids(first).front(), 1);
  EXPECT_EQ(Ids(first).back(), 1000);
  ASSERT_EQ(first.notices.size(), 1u);
  EXPECT_EQ(first.notices[0], "1000 jobs shown and more match; continue with: SHOW INDEX JOBS WHERE JobId > 1000");
  ResultSet second = Ok("SHOW INDEX JOBS WHERE JobId > 1000");
  EXPECT_EQ(Ids(second).front(), 1001);
  EXPECT_THAT(second.notices.at(0), HasSubstr("continue with: SHOW INDEX JOBS WHERE JobId > 1000 AND JobId > 2000"));
  ResultSet last = Ok("SHOW INDEX JOBS WHERE JobId > 1000 AND JobId > 2000");
  EXPECT_EQ(last.rows.size(), 500u);
  EXPECT_TRUE(last.notices.empty());
  // Filtered forms: FROM, State, table, index name and creation time go to the store.
  EXPECT_EQ(Ok("SHOW INDEX JOBS FROM db WHERE State = 'FAILED' AND TableName = 'docs'").rows.size(), 1000u);
  EXPECT_EQ(Ok("SHOW INDEX JOBS WHERE IndexName = 'BULK_IDX' AND JobId >= 2400").rows.size(), 101u);
  const std::string day = FormatJobTime(now_).substr(0, 10);
  EXPECT_EQ(Ok("SHOW INDEX JOBS WHERE CreateTime < '" + day + "'").rows.size(), 0u);
  EXPECT_EQ(Ok("SHOW INDEX JOBS WHERE CreateTime >= '" + day + "' AND JobId <= 3").rows.size(), 3u);
  EXPECT_EQ(Ok("SHOW INDEX JOBS WHERE State = 'FINISHED'").rows.size(), 0u);
  // The table function streams every job and takes its filters from the constraints.
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs"), 2500);
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs WHERE JobId > 2000"), 500);
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs WHERE DatabaseName = 'db' AND State = 'FAILED'"), 2500);
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs WHERE CreateTime >= '" + day + "'"), 2500);
  EXPECT_EQ(Scalar("SELECT max(JobId) FROM (SELECT JobId FROM vigil_index_jobs ORDER BY JobId LIMIT 1200)"), 1200);
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs WHERE State = 'NO_SUCH_STATE'"), 0);
}

// A principal who may SHOW one table sees its jobs however many newer jobs other tables have.
TEST_F(JobListingTest, NonAdministratorListingIsFilteredInTheStore) {
  Ok("CREATE TABLE db.other (id BIGINT NOT NULL)");
  Ok("CREATE INDEX a_idx ON db.docs (id) USING BTREE");
  Ok("CREATE INDEX b_idx ON db.docs (category) USING BITMAP");
  BulkJobs(1500, "other");
  Reopen(auth::Principal{"analyst", false, {{"local.db.docs", {auth::Privilege::kShow}}}});
  ResultSet r = Ok("SHOW INDEX JOBS");
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs"), 2);
  EXPECT_EQ(Ok("SHOW INDEX JOBS WHERE TableName = 'other'").rows.size(), 0u);
  // The leader notice counts only what the principal may see.
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_THAT(r.notices[0], HasSubstr("2 job(s) wait for a leader"));
  Reopen(auth::Principal{"nobody", false, {}});
  EXPECT_TRUE(Ok("SHOW INDEX JOBS").rows.empty());
  EXPECT_TRUE(Ok("SHOW INDEX JOBS").notices.empty());
  Reopen(auth::Principal{"dba", false, {{"local.db.*", {auth::Privilege::kShow}}}});
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs"), 1502);
}

// Seed 000 I8: an unresolved UNKNOWN job, archived into its tombstone, is listed until an
// operator resolves it; then it leaves the listings with the other archived jobs.
TEST_F(JobListingTest, UnresolvedUnknownJobsStayListedAfterArchival) {
  Ok("CREATE INDEX done_idx ON db.docs (category) USING BITMAP");
  RunJobs();
  const int64_t unknown = UnknownJob("u_idx");
  auto archived = store_->Archive(now_ + 7 * 86'400'000LL, now_ + 7 * 86'400'000LL);
  ASSERT_TRUE(archived.ok()) << archived.status().ToString();
  EXPECT_EQ(archived->archived, 1);
  EXPECT_EQ(archived->tombstoned, 1);
  EXPECT_EQ(Ids(Ok("SHOW INDEX JOBS")), std::vector<int64_t>{unknown});
  EXPECT_EQ(Ids(Ok("SHOW INDEX JOBS WHERE State = 'OUTCOME_UNKNOWN'")), std::vector<int64_t>{unknown});
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs WHERE State = 'OUTCOME_UNKNOWN'"), 1);
  EXPECT_THAT(Exec("CREATE INDEX u_idx ON db.docs (id) USING BTREE").status().message(),
              HasSubstr("job " + std::to_string(unknown)));
  Ok("RESOLVE INDEX JOB " + std::to_string(unknown) + " AS FORCE_RELEASE WITHOUT REFRESH COMMENT 'gone'");
  EXPECT_TRUE(Ok("SHOW INDEX JOBS").rows.empty());
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_index_jobs"), 0);
  EXPECT_EQ(Ok("SHOW INDEX JOB " + std::to_string(unknown)).rows.at(kStateColumn).at(1), Value("OUTCOME_UNKNOWN"));
}

// One row builder: SHOW INDEX JOBS and vigil_index_jobs agree cell for cell, including the
// message with its error code, the principal who resolved and the time format.
TEST_F(JobListingTest, ShowAndTheTableFunctionAgreeCellForCell) {
  Ok("CREATE INDEX done_idx ON db.docs (category) USING BITMAP");
  RunJobs();
  const int64_t forced = UnknownJob("f_idx");
  const int64_t acked = UnknownJob("a_idx");
  Ok("RESOLVE INDEX JOB " + std::to_string(forced) + " AS FORCE_RELEASE COMMENT 'host lost'");
  Ok("RESOLVE INDEX JOB " + std::to_string(acked) + " AS ACKNOWLEDGED COMMENT 'checked'");
  RunJobs();  // the leader completes both after their refresh
  Ok("CREATE INDEX p_idx ON db.docs (id) USING BTREE");
  ResultSet show = Ok("SHOW INDEX JOBS");
  ResultSet select = Ok("SELECT * FROM vigil_index_jobs ORDER BY JobId");
  EXPECT_EQ(select.columns, show.columns);
  ASSERT_EQ(show.rows.size(), 4u);
  EXPECT_EQ(select.rows, show.rows);
  const std::vector<Value>& f = show.rows[1];
  EXPECT_EQ(f[0], Value(forced));
  EXPECT_EQ(f[15], Value("IO_ERROR: failpoint provider.after_segment_write fired"));
  EXPECT_EQ(f[16], Value("FORCE_RELEASE"));
  EXPECT_EQ(f[17], Value("local_admin"));
  EXPECT_EQ(show.rows[2][17], Value("local_admin"));
  EXPECT_EQ(std::get<std::string>(f[6]).size(), 19u);  // YYYY-MM-DD HH:MM:SS
  EXPECT_EQ(std::get<std::string>(f[18]).size(), 19u);
  ResultSet detail = Ok("SHOW INDEX JOB " + std::to_string(forced));
  for (size_t i = 0; i < show.columns.size(); ++i) EXPECT_EQ(detail.rows[i][1], f[i]) << show.columns[i];
}

// StartTime is the DISPATCHED event's time and FinishTime the RESULT event's: a build that ran
// 40 s shows 40 s, and the refresh events keep their own times.
TEST_F(JobListingTest, StartAndFinishTimesAreTheirEventsTimes) {
  ResultSet admitted = Ok("CREATE INDEX t_idx ON db.docs (id) USING BTREE");
  const int64_t id = admitted.admitted_jobs.at(0);
  auto lease = store_->cluster().AcquireLeader("test-leader", now_, int64_t{1} << 40);
  ASSERT_TRUE(lease.ok());
  auto node = store_->cluster().RegisterNode("node-1", 1, "host", now_);
  ASSERT_TRUE(node.ok());
  const int64_t t0 = now_ + 1'000;
  jobs::JobRecord job = *store_->Get(id);
  jobs::AttemptIdentity attempt{"node-1", *node, "attempt-1", 1, 1, lease->epoch, t0 + 3'600'000};
  auto running = store_->Dispatch({id, job.revision, lease->epoch, "test-leader", t0}, attempt);
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  jobs::AttemptReport report{"attempt-1", jobs::AttemptResult::kNotCommitted, false, true, "INTERNAL", "boom",
                             std::nullopt};
  auto done = store_->RecordResult({id, running->revision, lease->epoch, "test-leader", t0 + 40'000}, report);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ResultSet show = Ok("SHOW INDEX JOBS WHERE JobId = " + std::to_string(id));
  ASSERT_EQ(show.rows.size(), 1u);
  EXPECT_EQ(show.rows[0][7], Value(FormatJobTime(t0)));
  EXPECT_EQ(show.rows[0][8], Value(FormatJobTime(t0 + 40'000)));
  EXPECT_EQ(show.rows[0][15], Value("INTERNAL: boom"));
  ResultSet detail = Ok("SHOW INDEX JOB " + std::to_string(id));
  std::vector<std::string> events;
  for (const auto& row : detail.rows) {
    const std::string item = std::get<std::string>(row[0]);
    if (item.rfind("Event ", 0) == 0) events.push_back(std::get<std::string>(row[1]).substr(0, 19));
  }
  EXPECT_EQ(events, (std::vector<std::string>{FormatJobTime(job.created_at_ms), FormatJobTime(t0),
                                              FormatJobTime(t0 + 40'000)}));
}

// Every FORCE_RELEASE is audited (who, when, the COMMENT, the job, the warnings shown) in
// vigil_audit(), which outlives archival; it is ADMIN's: anyone else reads it empty.
TEST_F(JobListingTest, ForceReleaseIsAuditedInVigilAudit) {
  const int64_t a = UnknownJob("a_idx");
  const int64_t b = UnknownJob("b_idx");
  ResultSet resolved =
      Ok("RESOLVE INDEX JOB " + std::to_string(b) + " AS FORCE_RELEASE WITHOUT REFRESH COMMENT ' emergency '");
  Ok("RESOLVE INDEX JOB " + std::to_string(a) + " AS FORCE_RELEASE COMMENT 'host lost'");
  Ok("RESOLVE INDEX JOB " + std::to_string(a) + " AS FORCE_RELEASE COMMENT 'host lost'");  // joins
  ResultSet audit = Ok("SELECT * FROM vigil_audit() ORDER BY AuditId");
  EXPECT_EQ(audit.columns, (std::vector<std::string>{"AuditId", "Time", "Actor", "Action", "JobId", "CatalogName",
                                                     "DatabaseName", "TableName", "IndexName", "Comment", "Warnings"}));
  ASSERT_EQ(audit.rows.size(), 2u);
  const std::vector<Value>& e = audit.rows[0];
  EXPECT_EQ(e[2], Value("local_admin"));
  EXPECT_EQ(e[3], Value("FORCE_RELEASE WITHOUT REFRESH"));
  EXPECT_EQ(e[4], Value(b));
  EXPECT_EQ(e[7], Value("docs"));
  EXPECT_EQ(e[8], Value("b_idx"));
  EXPECT_EQ(e[9], Value("emergency"));
  ASSERT_EQ(resolved.warnings.size(), 2u);
  EXPECT_EQ(e[10], Value("[\"" + resolved.warnings[0] + "\", \"" + resolved.warnings[1] + "\"]"));
  EXPECT_EQ(audit.rows[1][3], Value("FORCE_RELEASE"));
  EXPECT_EQ(audit.rows[1][4], Value(a));
  ASSERT_TRUE(store_->Archive(now_ + 86'400'000, now_ + 86'400'000).ok());
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_audit()"), 2);
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_audit"), 2);
  Reopen(auth::Principal{"analyst", false, {{"local.db.*", {auth::Privilege::kAlter}}}});
  EXPECT_EQ(Scalar("SELECT count(*) FROM vigil_audit()"), 0);
}

// SHOW INDEX JOBS says when jobs wait for a leader and none holds a live lease (by the
// session's clock); not when the leader runs or nothing waits.
TEST_F(JobListingTest, ShowSaysWhenJobsWaitForALeaderThatIsNotRunning) {
  EXPECT_TRUE(Ok("SHOW INDEX JOBS").notices.empty());
  Ok("CREATE INDEX w_idx ON db.docs (id) USING BTREE");
  EXPECT_EQ(Ok("SHOW INDEX JOBS").notices, std::vector<std::string>{kLeaderNotice});
  EXPECT_EQ(Ok("SHOW INDEX JOBS FROM nowhere").notices, std::vector<std::string>{kLeaderNotice});
  auto lease = store_->cluster().AcquireLeader("live", now_, 60'000);
  ASSERT_TRUE(lease.ok());
  EXPECT_TRUE(Ok("SHOW INDEX JOBS").notices.empty());
  now_ += 60'000;  // the lease expired
  EXPECT_EQ(Ok("SHOW INDEX JOBS").notices, std::vector<std::string>{kLeaderNotice});
  ASSERT_TRUE(store_->cluster().ReleaseLeader("live", lease->epoch, now_).ok());
  RunJobs();
  EXPECT_TRUE(Ok("SHOW INDEX JOBS").notices.empty());  // nothing waits
}

}  // namespace
}  // namespace vigil::sql

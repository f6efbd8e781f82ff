// Process-level tests of `vigil sql`: the scripting contract (--csv is RFC
// 4180 with a header and LF line ends, --json one array per statement,
// notices on stderr only, non-zero exit on any failed statement or a waited
// job that ends FAILED), job waits with progress, and --detach.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testutil/await_file.h"
#include "testutil/run_command.h"
#include "testutil/temp_dir.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/root_jobs.h"
#include "vigil/storage/root.h"

namespace vigil {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::string_literals;

struct Out {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};

// Runs `vigil ARGS` with stdout and stderr captured separately.
Out Sql(const std::string& dir, const std::string& args, const std::string& env = "") {
  const std::string err = dir + "/stderr.txt";
  std::string cmd = "env -u VIGIL_ROOT " + env + " " + std::string(VIGIL_CLI_BINARY) + " " + args + " 2>" + err;
  Out o;
  testing::CommandResult ran = testing::RunCommand(cmd);
  o.stdout_text = std::move(ran.output);
  o.exit_code = ran.exit_code;
  std::ifstream e(err);
  o.stderr_text.assign(std::istreambuf_iterator<char>(e), {});
  return o;
}

class SqlShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("root");
    ASSERT_EQ(Sql(dir_.path(), "init " + root_).exit_code, 0);
    std::ofstream(root_ + "/vigil.toml") << "[jobs]\nsupervise_idle_exit_seconds = 1\n";
  }
  Out Run(const std::string& flags, const std::string& sql) {
    return Sql(dir_.path(), "--root " + root_ + " sql " + flags + " -c \"" + sql + "\"");
  }

  testing::TempDir dir_;
  std::string root_;
};

TEST_F(SqlShellTest, CsvAndJsonFollowTheScriptingContract) {
  Out made = Run("", "CREATE TABLE db.t (id BIGINT NOT NULL, name STRING)");
  ASSERT_EQ(made.exit_code, 0) << made.stderr_text;
  ASSERT_EQ(Run("", "INSERT INTO db.t VALUES (1, 'plain'), (2, 'a,b \\\"q\\\"'), (3, NULL)").exit_code, 0);
  Out csv = Run("--csv", "SELECT id, name FROM db.t ORDER BY id");
  ASSERT_EQ(csv.exit_code, 0) << csv.stderr_text;
  EXPECT_EQ(csv.stdout_text, "id,name\n1,plain\n2,\"a,b \"\"q\"\"\"\n3,\n");
  Out json = Run("--json", "SELECT id, name FROM db.t ORDER BY id; SELECT count(*) AS n FROM db.t");
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  EXPECT_EQ(json.stdout_text,
            "[{\"id\":1,\"name\":\"plain\"},{\"id\":2,\"name\":\"a,b \\\"q\\\"\"},{\"id\":3,\"name\":null}]\n"
            "[{\"n\":3}]\n");
  // Messages of statements without rows go to stderr, never into the data.
  Out del = Run("--csv", "DELETE FROM db.t WHERE id = 3");
  EXPECT_EQ(del.exit_code, 0) << del.stderr_text;
  EXPECT_EQ(del.stdout_text, "");
  EXPECT_THAT(del.stderr_text, HasSubstr("1 row"));
}

// A script binds values to a prepared SELECT: the vector as text or as a FLOAT32 blob
// gives the same rows; a missing value or statement fails the run and names it.
TEST_F(SqlShellTest, AScriptPreparesOnceAndExecutesWithBoundValues) {
  ASSERT_EQ(Run("", "CREATE TABLE db.v (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 2) NOT NULL)").exit_code, 0);
  ASSERT_EQ(Run("", "INSERT INTO db.v VALUES (1, '[1, 0]'), (2, '[0, 1]'), (3, '[1, 1]')").exit_code, 0);
  const std::string script = dir_.Join("search.sql");
  std::ofstream(script) << "PREPARE near AS SELECT id, _distance FROM vector_search('db.v', 'emb', $1, 2);\n"
                           "EXECUTE near('[1, 0.1]');\n"
                           "EXECUTE near(X'0000803FCDCCCC3D');\n"  // 1.0f, 0.1f little-endian
                           "PREPARE by_id AS SELECT id FROM db.v WHERE id >= ? ORDER BY id;\n"
                           "EXECUTE by_id(2);\n"
                           "EXECUTE by_id;\n"
                           "DEALLOCATE by_id;\n"
                           "EXECUTE by_id(1);\n";
  Out out = Sql(dir_.path(), "--root " + root_ + " sql --csv -f " + script);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.stdout_text,
            "id,_distance\n1,0.010000000707805157\n3,0.8100000023841858\n"
            "id,_distance\n1,0.010000000707805157\n3,0.8100000023841858\n"
            "id\n2\n3\n");
  EXPECT_THAT(out.stderr_text, HasSubstr("error: INVALID_ARGUMENT: EXECUTE by_id: the statement has 1 parameter; "
                                         "0 values were bound"));
  EXPECT_THAT(out.stderr_text, HasSubstr("error: NOT_FOUND: prepared statement by_id does not exist"));
}

// A job admitted while the supervisor is already on its way out (idle, about to exit, its
// lock still held) is not left PENDING: the waiting shell starts the next leader. The
// supervisor is held at its exit (a pause) until the second job is in the store.
TEST_F(SqlShellTest, AJobAdmittedAsTheLeaderExitsIdleIsRunByTheNext) {
  ASSERT_EQ(Run("", "CREATE TABLE db.t (id BIGINT NOT NULL); INSERT INTO db.t VALUES (1), (2)").exit_code, 0);
  const std::string exit_release = dir_.Join("idle-exit");
  // Released on every way out, so that a failed assertion leaves no supervisor held.
  struct Release {
    std::string path;
    ~Release() { std::ofstream(path).put('\n'); }
  } release{exit_release};
  // The first job starts a supervisor that, once idle for 1 s, holds at its exit.
  Out first = Sql(dir_.path(), "--root " + root_ + " sql -c \"CREATE INDEX a ON db.t (id) USING BTREE\"",
                  "VIGIL_FAILPOINTS='leader.idle_exit=pause(" + exit_release + ")'");
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  ASSERT_TRUE(testing::AwaitFile(exit_release + ".reached")) << "the supervisor never reached its idle exit";
  auto second = std::async(std::launch::async, [&] {
    return Sql(dir_.path(), "--root " + root_ + " sql --wait-timeout 60 -c \"DROP INDEX a ON db.t\"");
  });
  {
    auto root = Root::Open(root_);
    ASSERT_TRUE(root.ok());
    auto store = jobs::OpenRootJobStore(*root);
    ASSERT_TRUE(store.ok());
    jobs::JobFilter pending;
    pending.state = "PENDING";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((*store)->List(pending).value().empty()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the DROP INDEX job was never admitted";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::ofstream(exit_release).put('\n');  // the old supervisor exits without taking the job
  Out dropped = second.get();
  EXPECT_EQ(dropped.exit_code, 0) << dropped.stderr_text;
  EXPECT_THAT(dropped.stderr_text, HasSubstr("FINISHED"));
}

TEST_F(SqlShellTest, AnyFailedStatementMakesTheExitStatusNonZero) {
  Out bad = Run("", "CREATE TABLE db.t (id BIGINT NOT NULL); SELEC 1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.stderr_text, HasSubstr("line 1, column"));
  EXPECT_THAT(bad.stderr_text, HasSubstr("SELEC"));
  // The statement before the syntax error ran.
  EXPECT_EQ(Run("--csv", "SHOW TABLES FROM db").exit_code, 0);
  Out missing = Run("", "SELECT * FROM db.nope");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.stderr_text, HasSubstr("nope"));
}

// A vector written bare, as in other languages, is refused where it stands with the way to
// write it; the string form then inserts.
TEST_F(SqlShellTest, ABareVectorLiteralIsRefusedWithHowToWriteIt) {
  ASSERT_EQ(Run("", "CREATE TABLE db.v (id BIGINT, emb VECTOR(FLOAT32, 2))").exit_code, 0);
  Out bare = Run("", "INSERT INTO db.v VALUES (1, [0.5, 0.25])");
  EXPECT_NE(bare.exit_code, 0);
  EXPECT_THAT(bare.stderr_text, HasSubstr("error: INVALID_ARGUMENT: line 1, column 29: unexpected character '[': "
                                          "a vector literal is written as a string, e.g. '[0.5, 0.25]'"));
  EXPECT_EQ(Run("--csv", "SELECT COUNT(*) FROM db.v").stdout_text, "COUNT(*)\n0\n");
  EXPECT_EQ(Run("", "INSERT INTO db.v VALUES (1, '[0.5, 0.25]')").exit_code, 0);
  EXPECT_EQ(Run("--csv", "SELECT COUNT(*) FROM db.v").stdout_text, "COUNT(*)\n1\n");
}

// A vector prints as the literal it is written in, so the shell's CSV of a table loads
// back into a table of the same schema unchanged.
TEST_F(SqlShellTest, AVectorPrintsAsItsLiteralAndItsCsvLoadsBack) {
  const std::string columns = " (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 2), h VECTOR(FLOAT16, 2))";
  ASSERT_EQ(Run("", "CREATE TABLE db.v" + columns).exit_code, 0);
  ASSERT_EQ(Run("", "CREATE TABLE db.back" + columns).exit_code, 0);
  ASSERT_EQ(Run("", "INSERT INTO db.v VALUES (1, '[0.5, 1e-7]', '[2, -0.125]'), (2, NULL, '[0, 1]')").exit_code, 0);
  Out table = Run("", "SELECT emb, h FROM db.v ORDER BY id");
  EXPECT_THAT(table.stdout_text, HasSubstr("| [0.5,1e-07] | [2,-0.125] |"));
  Out csv = Run("--csv", "SELECT * FROM db.v ORDER BY id");
  EXPECT_EQ(csv.stdout_text, "id,emb,h\n1,\"[0.5,1e-07]\",\"[2,-0.125]\"\n2,,\"[0,1]\"\n");
  EXPECT_EQ(Run("--json", "SELECT emb FROM db.v WHERE id = 1").stdout_text, "[{\"emb\":[0.5,1e-07]}]\n");
  const std::string path = dir_.Join("v.csv");
  std::ofstream(path) << csv.stdout_text;
  ASSERT_EQ(Run("", "COPY db.back FROM '" + path + "'").exit_code, 0);
  EXPECT_EQ(Run("--csv", "SELECT * FROM db.back ORDER BY id").stdout_text, csv.stdout_text);
}

// A row whose vector is NULL has no distance (it is not a zero vector): a search passes
// over it, even when k asks for more rows than have a vector.
TEST_F(SqlShellTest, AVectorSearchPassesOverNullVectors) {
  ASSERT_EQ(Run("", "CREATE TABLE db.n (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 2))").exit_code, 0);
  ASSERT_EQ(
      Run("", "INSERT INTO db.n VALUES (1, NULL), (2, '[3, 4]'), (3, NULL), (4, '[0.5, 0]'), (5, '[6, 8]')").exit_code,
      0);
  Out hits = Run("--csv", "SELECT id, _distance FROM vector_search('db.n', 'emb', '[0, 0]', 10) ORDER BY _distance");
  ASSERT_EQ(hits.exit_code, 0) << hits.stderr_text;
  EXPECT_EQ(hits.stdout_text, "id,_distance\n4,0.25\n2,25.0\n5,100.0\n");
}

TEST_F(SqlShellTest, OneShotWaitsForItsJobsUnlessDetached) {
  ASSERT_EQ(Run("", "CREATE TABLE db.t (id BIGINT NOT NULL, c STRING NOT NULL)").exit_code, 0);
  ASSERT_EQ(Run("", "INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'a')").exit_code, 0);
  Out waited = Run("--csv", "CREATE INDEX c_idx ON db.t (c) USING BITMAP");
  ASSERT_EQ(waited.exit_code, 0) << waited.stderr_text;
  EXPECT_EQ(waited.stdout_text, "JobId\n1\n");
  EXPECT_THAT(waited.stderr_text, HasSubstr("job 1: FINISHED"));

  Out detached = Run("--csv --detach", "CREATE INDEX id_idx ON db.t (id) USING BTREE");
  ASSERT_EQ(detached.exit_code, 0) << detached.stderr_text;
  EXPECT_EQ(detached.stdout_text, "JobId\n2\n");
  EXPECT_THAT(detached.stderr_text, Not(HasSubstr("job 2: FINISHED")));
  Out wait = Run("--csv", "WAIT INDEX JOB 2 TIMEOUT 120");
  EXPECT_EQ(wait.exit_code, 0) << wait.stderr_text;
  Out jobs = Run("--csv", "SELECT JobId, State FROM vigil_index_jobs ORDER BY JobId");
  EXPECT_EQ(jobs.stdout_text, "JobId,State\n1,FINISHED\n2,FINISHED\n") << jobs.stderr_text;

  Out dup = Run("", "CREATE INDEX c_idx ON db.t (c) USING BITMAP");  // refused before any job exists
  EXPECT_NE(dup.exit_code, 0);
  EXPECT_THAT(dup.stderr_text, HasSubstr("c_idx"));
}

TEST_F(SqlShellTest, AWaitedJobThatFailsFailsTheRun) {
  ASSERT_EQ(Run("", "CREATE TABLE db.t (id BIGINT NOT NULL); INSERT INTO db.t VALUES (1), (2)").exit_code, 0);
  // The supervisor this run starts inherits the failpoint and forwards it to the worker, which
  // then answers invoked=false: a proven non-invocation, FAILED.
  Out failed = Sql(dir_.path(), "--root " + root_ + " sql -c \"CREATE INDEX id_idx ON db.t (id) USING BTREE\"",
                   "VIGIL_FAILPOINTS='worker.before_invoke=error(IO_ERROR)'");
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_THAT(failed.stderr_text, HasSubstr("job 1 ended FAILED"));
  EXPECT_THAT(failed.stdout_text, HasSubstr("JobId"));
}

// A writer killed (SIGKILL) between its commit in the root's metadata store and the link of
// its manifest has committed: the next statement reads its rows and links its manifest. One
// killed before the commit has not, and nothing of it is read.
TEST_F(SqlShellTest, AWriterKilledAfterItsCommitInTheStoreIsReadAndOneKilledBeforeIsNot) {
  ASSERT_EQ(Run("", "CREATE TABLE db.t (id BIGINT NOT NULL); INSERT INTO db.t VALUES (1), (2)").exit_code, 0);
  const std::string insert = "--root " + root_ + " sql -c \"INSERT INTO db.t VALUES (3), (4)\"";
  Out before = Sql(dir_.path(), insert, "VIGIL_FAILPOINTS='commit.after_manifest_temp=kill'");
  EXPECT_EQ(before.exit_code, 128 + SIGKILL) << before.stderr_text;
  Out count = Run("--csv", "SELECT count(*) AS n FROM db.t");
  EXPECT_EQ(count.stdout_text, "n\n2\n") << count.stderr_text;

  Out after = Sql(dir_.path(), insert, "VIGIL_FAILPOINTS='commit.after_catalog_claim=kill'");
  EXPECT_EQ(after.exit_code, 128 + SIGKILL) << after.stderr_text;
  count = Run("--csv", "SELECT count(*) AS n FROM db.t");
  EXPECT_EQ(count.stdout_text, "n\n4\n") << count.stderr_text;
  ASSERT_EQ(Run("", "INSERT INTO db.t VALUES (5)").exit_code, 0);
  count = Run("--csv", "SELECT count(*) AS n, max(id) AS top FROM db.t");
  EXPECT_EQ(count.stdout_text, "n,top\n5,5\n") << count.stderr_text;
}

// A NUL or other control character in a STRING never cuts the output short: --csv keeps the
// bytes in a quoted field, --json escapes them (\u0000) and the table shows them escaped.
TEST_F(SqlShellTest, ControlCharactersArePrintedInFullInEveryFormat) {
  ASSERT_EQ(Run("", "CREATE TABLE db.t (id BIGINT NOT NULL, s STRING)").exit_code, 0);
  const std::string csv_path = dir_.Join("nul.csv");
  std::ofstream(csv_path, std::ios::binary) << "id,s\n1,a\0b\n2,tab\there\n3,after\n"s;
  Out copied = Run("", "COPY db.t FROM '" + csv_path + "'");
  ASSERT_EQ(copied.exit_code, 0) << copied.stderr_text;

  Out csv = Run("--csv", "SELECT id, s FROM db.t ORDER BY id");
  ASSERT_EQ(csv.exit_code, 0) << csv.stderr_text;
  EXPECT_EQ(csv.stdout_text, "id,s\n1,\"a\0b\"\n2,\"tab\there\"\n3,after\n"s);

  Out json = Run("--json", "SELECT id, s FROM db.t ORDER BY id");
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  EXPECT_EQ(json.stdout_text,
            "[{\"id\":1,\"s\":\"a\\u0000b\"},{\"id\":2,\"s\":\"tab\\there\"},{\"id\":3,\"s\":\"after\"}]\n");

  Out table = Run("", "SELECT id, s FROM db.t ORDER BY id");
  ASSERT_EQ(table.exit_code, 0) << table.stderr_text;
  EXPECT_EQ(table.stdout_text,
            "+----+-----------+\n"
            "| id | s         |\n"
            "+----+-----------+\n"
            "| 1  | a\\0b      |\n"
            "| 2  | tab\\there |\n"
            "| 3  | after     |\n"
            "+----+-----------+\n"
            "(3 rows)\n");

  // The same through an expression SQLite evaluates, with a row after it.
  Out expr = Run("--csv", "SELECT 'a' || char(0) || 'b' || char(1) AS v UNION ALL SELECT 'next'");
  ASSERT_EQ(expr.exit_code, 0) << expr.stderr_text;
  EXPECT_EQ(expr.stdout_text, "v\n\"a\0b\x01\"\nnext\n"s);
  Out expr_table = Run("", "SELECT 'a' || char(0) || 'b' || char(1) AS v UNION ALL SELECT 'next'");
  EXPECT_THAT(expr_table.stdout_text, HasSubstr("| a\\0b\\x01 |"));
  EXPECT_THAT(expr_table.stdout_text, HasSubstr("| next     |"));
  EXPECT_THAT(expr_table.stdout_text, HasSubstr("(2 rows)"));
}

// `vigil sql` loads the user's own files client-side, as psql's \copy: no allowlist
// applies (copy_allowed_directories is empty), links are followed; only regular files
// are read, so a FIFO is refused at once instead of blocking the shell.
TEST_F(SqlShellTest, CopyReadsTheUsersOwnFilesClientSide) {
  ASSERT_EQ(Run("", "CREATE TABLE db.t (id BIGINT NOT NULL, s STRING)").exit_code, 0);
  const std::string csv = dir_.Join("mine.csv");
  std::ofstream(csv) << "id,s\n1,a\n2,b\n";
  Out copied = Run("", "COPY db.t FROM '" + csv + "'");
  ASSERT_EQ(copied.exit_code, 0) << copied.stderr_text;
  EXPECT_THAT(copied.stdout_text, HasSubstr("2 rows copied into local.db.t"));
  ASSERT_EQ(::symlink(csv.c_str(), dir_.Join("link.csv").c_str()), 0);
  Out linked = Run("", "COPY db.t FROM '" + dir_.Join("link.csv") + "'");
  ASSERT_EQ(linked.exit_code, 0) << linked.stderr_text;
  Out count = Run("--csv", "SELECT count(*) AS n FROM db.t");
  EXPECT_EQ(count.stdout_text, "n\n4\n") << count.stderr_text;

  const std::string fifo = dir_.Join("pipe.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // `timeout` (run by env before vigil) kills a shell that blocks on the FIFO.
  Out piped = Sql(dir_.path(), "--root " + root_ + " sql -c \"COPY db.t FROM '" + fifo + "'\"", "timeout -s KILL 30");
  EXPECT_EQ(piped.exit_code, 1) << "a COPY from a FIFO hung or passed: " << piped.stderr_text;
  EXPECT_THAT(piped.stderr_text, HasSubstr(fifo + " is not a regular file (a FIFO)"));
}

}  // namespace
}  // namespace vigil

// Process-level tests of the `vigil` binary: init (and its bootstrap token),
// import (good and bad files), tokens shown by `vigil sql`, --help, and error exits.
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testutil/run_command.h"
#include "testutil/temp_dir.h"
#include "vigil/auth/root_auth.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/filename.h"

namespace vigil {
namespace {

using ::testing::HasSubstr;

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the vigil binary with `args` (a shell-quoted string) and no VIGIL_ROOT.
RunResult Vigil(const std::string& args) {
  testing::CommandResult ran =
      testing::RunCommand("env -u VIGIL_ROOT " + std::string(VIGIL_CLI_BINARY) + " " + args + " 2>&1");
  return RunResult{ran.exit_code, std::move(ran.output)};
}

// The whole bearer tokens in `text`; a shortened token would not match.
std::vector<std::string> Tokens(const std::string& text) {
  static const std::regex kToken("vgl_[0-9a-f]{16}_[0-9a-f]{64}");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kToken); it != std::sregex_iterator(); ++it) {
    out.push_back(it->str());
  }
  return out;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Who `token` stands for in the principal store of the root at `dir`.
Result<auth::Authenticated> Authenticate(const std::string& dir, const std::string& token) {
  VIGIL_ASSIGN_OR_RETURN(Root root, Root::Open(dir));
  VIGIL_ASSIGN_OR_RETURN(auto store, auth::OpenRootPrincipalStore(root));
  return store->Authenticate(token);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("root");
    RunResult r = Vigil("init " + root_);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_.Join(name)) << text; }
  // The one incarnation directory `<root>/<db>/<table>.<uuid>.vgl` of a table; "" when not exactly one.
  std::string TableDir(const std::string& db, const std::string& table) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root_ + "/" + db, ec)) {
      auto parts = ParseTableDirName(e.path().filename().string());
      if (parts && parts->table == table && parts->incarnation) found.push_back(e.path().string());
    }
    return found.size() == 1 ? found[0] : "";
  }

  testing::TempDir dir_;
  std::string root_;
};

TEST_F(CliTest, HelpOnEveryCommand) {
  for (std::string cmd : {"", "init ", "import ", "demo ", "bench ", "sql ", "supervise ", "doctor "}) {
    RunResult r = Vigil(cmd + "--help");
    EXPECT_EQ(r.exit_code, 0) << cmd << r.output;
    EXPECT_THAT(r.output, HasSubstr("Usage")) << cmd;
  }
  EXPECT_THAT(Vigil("import --help").output, HasSubstr("--create"));
  EXPECT_NE(Vigil("no-such-command").exit_code, 0);
}

TEST_F(CliTest, InitRefusesExistingRootAndNonEmptyDirectory) {
  RunResult again = Vigil("init " + root_);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.output, HasSubstr("already a vigil root"));
  Write("x.txt", "x");
  RunResult busy = Vigil("init " + dir_.path());
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_THAT(busy.output, HasSubstr("not empty"));
}

// `vigil init` prints the bootstrap administrator's token once; init on an existing root prints
// none and changes nothing; --bootstrap-token issues one only when no enabled administrator exists.
TEST_F(CliTest, InitPrintsTheBootstrapTokenOnce) {
  const std::string fresh = dir_.Join("fresh");
  RunResult made = Vigil("init " + fresh);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::vector<std::string> tokens = Tokens(made.output);
  ASSERT_EQ(tokens.size(), 1u) << made.output;
  EXPECT_THAT(made.output, HasSubstr("shown only this once"));
  EXPECT_THAT(made.output, HasSubstr("ALTER USER admin ROTATE TOKEN"));
  Result<auth::Authenticated> who = Authenticate(fresh, tokens[0]);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->principal.name, "admin");
  EXPECT_TRUE(who->principal.IsAdmin());

  RunResult again = Vigil("init " + fresh);
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_EQ(Count(again.output, "vgl_"), 0u) << again.output;
  EXPECT_THAT(again.output, HasSubstr("already a vigil root"));
  EXPECT_THAT(again.output, HasSubstr("--bootstrap-token"));
  RunResult refused = Vigil("init --bootstrap-token " + fresh);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_EQ(Count(refused.output, "vgl_"), 0u) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("already has an enabled administrator"));
  EXPECT_TRUE(Authenticate(fresh, tokens[0]).ok());

  // Its only administrator disabled, the realm gets "admin" back with a new token.
  RunResult disabled = Vigil("--root " + fresh + " sql -c \"ALTER USER admin DISABLE\"");
  ASSERT_EQ(disabled.exit_code, 0) << disabled.output;
  EXPECT_FALSE(Authenticate(fresh, tokens[0]).ok());
  RunResult reissued = Vigil("init --bootstrap-token " + fresh);
  ASSERT_EQ(reissued.exit_code, 0) << reissued.output;
  std::vector<std::string> fresh_tokens = Tokens(reissued.output);
  ASSERT_EQ(fresh_tokens.size(), 1u) << reissued.output;
  EXPECT_TRUE(Authenticate(fresh, fresh_tokens[0]).ok());
  EXPECT_FALSE(Authenticate(fresh, tokens[0]).ok());
}

// `vigil sql` shows the token of CREATE USER and ROTATE TOKEN whole in every format (a cut
// token would be lost), and no listing shows one.
TEST_F(CliTest, SqlShowsIssuedTokensWhole) {
  RunResult created = Vigil("--root " + root_ + " sql -c \"CREATE USER bob\"");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  std::vector<std::string> tokens = Tokens(created.output);
  ASSERT_EQ(tokens.size(), 1u) << created.output;
  EXPECT_EQ(Count(created.output, "vgl_"), 1u) << created.output;
  Result<auth::Authenticated> who = Authenticate(root_, tokens[0]);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->principal.name, "bob");
  EXPECT_FALSE(who->principal.IsAdmin());

  for (const char* format : {"--json", "--csv"}) {
    RunResult rotated = Vigil("--root " + root_ + " sql " + format + " -c \"ALTER USER bob ROTATE TOKEN\"");
    ASSERT_EQ(rotated.exit_code, 0) << rotated.output;
    std::vector<std::string> now = Tokens(rotated.output);
    ASSERT_EQ(now.size(), 1u) << rotated.output;
    EXPECT_TRUE(Authenticate(root_, now[0]).ok()) << format;
    EXPECT_FALSE(Authenticate(root_, tokens[0]).ok()) << format;
    tokens = now;
  }
  RunResult listed = Vigil("--root " + root_ + " sql -c \"SHOW USERS; SHOW GRANTS\"");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_THAT(listed.output, HasSubstr("bob"));
  EXPECT_EQ(Count(listed.output, "vgl_"), 0u) << listed.output;
}

TEST_F(CliTest, ImportCreatesAppendsAndRejectsMalformedCsvWithoutCommitting) {
  Write("good.csv", "id,name,score\n1,a,0.5\n2,b,1.5\n");
  RunResult missing = Vigil("--root " + root_ + " import db.t " + dir_.Join("good.csv"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("--create"));

  RunResult ok = Vigil("--root " + root_ + " import db.t " + dir_.Join("good.csv") + " --create");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("2 rows into local.db.t"));
  std::string table = TableDir("db", "t");
  ASSERT_FALSE(table.empty());
  uint64_t version = *Dataset::LatestVersion(table);

  Write("bad.csv", "id,name,score\n3,c,2.5\n4,d,oops\n");
  RunResult bad = Vigil("--root " + root_ + " import local.db.t " + dir_.Join("bad.csv"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr(dir_.Join("bad.csv") + ":3:5: column 'score'"));
  EXPECT_THAT(bad.output, HasSubstr("nothing was committed"));
  EXPECT_EQ(*Dataset::LatestVersion(table), version);
  EXPECT_EQ((*Dataset::Open(table))->CountRows(), 2u);
  // Piped stderr: no progress bar escape sequences.
  EXPECT_THAT(ok.output, ::testing::Not(HasSubstr("\r")));
}

TEST_F(CliTest, BadNamesAndMissingRootAreClearErrors) {
  Write("good.csv", "id\n1\n");
  RunResult bad_name = Vigil("--root " + root_ + " import db.9t " + dir_.Join("good.csv") + " --create");
  EXPECT_EQ(bad_name.exit_code, 1);
  EXPECT_THAT(bad_name.output, HasSubstr("table name '9t'"));
  RunResult no_root = Vigil("import db.t " + dir_.Join("good.csv"));
  EXPECT_EQ(no_root.exit_code, 1);
  EXPECT_THAT(no_root.output, HasSubstr("--root"));
  RunResult not_root = Vigil("--root " + dir_.path() + " import db.t " + dir_.Join("good.csv"));
  EXPECT_THAT(not_root.output, HasSubstr("is not a vigil root"));
  RunResult env_root = Vigil("import db.t " + dir_.Join("good.csv") + " --create");
  EXPECT_EQ(env_root.exit_code, 1);
  std::string with_env = "VIGIL_ROOT=" + root_ + " " + std::string(VIGIL_CLI_BINARY) + " import db.e " +
                         dir_.Join("good.csv") + " --create >/dev/null 2>&1";
  EXPECT_EQ(std::system(with_env.c_str()), 0);
  EXPECT_FALSE(TableDir("db", "e").empty());
}

TEST_F(CliTest, ReservedDatabasesAreRefusedByImport) {
  Write("good.csv", "id\n1\n");
  for (const char* db : {"_dropped", "_meta"}) {
    RunResult r = Vigil("--root " + root_ + " import " + db + ".orders " + dir_.Join("good.csv") + " --create");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr("is reserved"));
  }
  EXPECT_FALSE(std::filesystem::exists(root_ + "/_dropped"));
}

// A second vector file continues the ids after the table's largest, so ids never repeat.
TEST_F(CliTest, SecondVectorFileContinuesIds) {
  auto fvecs = [&](const std::string& name, int rows) {
    std::ofstream out(dir_.Join(name), std::ios::binary);
    for (int r = 0; r < rows; ++r) {
      int32_t dim = 4;
      out.write(reinterpret_cast<const char*>(&dim), 4);
      for (int i = 0; i < dim; ++i) {
        float v = static_cast<float>(r * 10 + i);
        out.write(reinterpret_cast<const char*>(&v), 4);
      }
    }
  };
  fvecs("a.fvecs", 3);
  fvecs("b.fvecs", 2);
  ASSERT_EQ(Vigil("--root " + root_ + " import db.v " + dir_.Join("a.fvecs") + " --create").exit_code, 0);
  ASSERT_EQ(Vigil("--root " + root_ + " import db.v " + dir_.Join("b.fvecs")).exit_code, 0);
  RunResult r = Vigil("--root " + root_ +
                      " sql --csv -c \"SELECT count(*) AS n, count(DISTINCT id) AS d, "
                      "min(id) AS lo, max(id) AS hi FROM db.v\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("n,d,lo,hi\n5,5,0,4\n"));
}

TEST_F(CliTest, DemoRunsThroughSqlWithIndexJobs) {
  // The background supervisor the demo starts exits one second after the last job.
  std::ofstream(root_ + "/vigil.toml") << "[jobs]\nsupervise_idle_exit_seconds = 1\n";
  RunResult r = Vigil("--root " + root_ + " demo --rows 600 --dim 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("vigil> CREATE TABLE demo.sample"));
  EXPECT_THAT(r.output, HasSubstr("| 600 "));  // SELECT count(*)
  for (const char* job : {"job 1: FINISHED", "job 2: FINISHED", "job 3: FINISHED", "job 4: FINISHED"}) {
    EXPECT_THAT(r.output, HasSubstr(job));
  }
  for (const char* index : {"emb_idx", "cat_idx", "ts_idx", "body_idx", "IVF_PQ", "BITMAP", "BTREE", "FTS"}) {
    EXPECT_THAT(r.output, HasSubstr(index));
  }
  EXPECT_THAT(r.output, HasSubstr("_distance"));
  EXPECT_THAT(r.output, HasSubstr("_score"));
  EXPECT_THAT(r.output, HasSubstr("_indices/"));  // EXPLAIN ANALYZE names the segment it used
  // A second run shows the existing table instead of failing.
  RunResult again = Vigil("--root " + root_ + " demo");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("exists"));
  RunResult list = Vigil("bench");
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_THAT(list.output, HasSubstr("storage"));
}

// `vigil bench scale` on a small size: one row of figures per size, searches that find
// the exact neighbours most of the time; a size it cannot use is named before any work.
TEST_F(CliTest, BenchScaleReportsEachSize) {
  RunResult bad = Vigil("bench scale --sizes 5000,12x");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("sizes: '12x' is not a row count"));
  RunResult run = Vigil("bench scale --sizes 3000 --queries 40 --recall-queries 20");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const size_t json_at = run.output.find("{\n  \"benchmark\"");  // after the progress lines and table
  ASSERT_NE(json_at, std::string::npos) << run.output;
  EXPECT_THAT(run.output.substr(0, json_at), HasSubstr("build 1% s"));
  auto j = nlohmann::json::parse(run.output.substr(json_at), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run.output;
  ASSERT_EQ(j["sizes"].size(), 1u);
  const auto& s = j["sizes"][0];
  EXPECT_EQ(s["rows"], 3000);
  EXPECT_EQ(s["partitions"], 64);  // sqrt(3000) = 55, to the nearest power of two
  EXPECT_GT(s["import"]["rows_per_s"].get<double>(), 0);
  EXPECT_GT(s["create_index"]["peak_rss_mib"].get<double>(), 0);
  EXPECT_EQ(s["build_index"]["appended_rows"], 30);
  EXPECT_GT(s["vacuum"]["versions_removed"].get<int>(), 0);
  EXPECT_GT(s["search"]["recall_at_10"].get<double>(), 0.5);
}

TEST_F(CliTest, BenchOptionsMayFollowTheName) {
  // `--key value` after NAME reaches the benchmark as --opt key=value; checked before any work.
  RunResult wrk = Vigil("bench server --rows 1000 --wrk /nonexistent/wrk");
  EXPECT_NE(wrk.exit_code, 0);
  EXPECT_THAT(wrk.output, HasSubstr("wrk=/nonexistent/wrk is not an executable"));
  // Without wrk on PATH the benchmark names the package to install.
  const testing::CommandResult path = testing::RunCommand("env -u VIGIL_ROOT PATH=/nonexistent " +
                                                          std::string(VIGIL_CLI_BINARY) + " bench server 2>&1");
  EXPECT_NE(path.exit_code, 0);
  EXPECT_THAT(path.output, HasSubstr("install the Debian package `wrk`"));
  RunResult stray = Vigil("bench server oops");
  EXPECT_NE(stray.exit_code, 0);
  EXPECT_THAT(stray.output, HasSubstr("unexpected argument 'oops'"));
  RunResult missing = Vigil("bench server --rows");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.output, HasSubstr("--rows needs a value"));
}

// An option no benchmark run takes (a typo, or one a benchmark no longer reads) and an
// integer option that is not a whole integer are refused before any work, naming the option
// and what the benchmark takes; the listing shows each benchmark's options.
TEST_F(CliTest, BenchRefusesAnOptionItDoesNotTake) {
  RunResult unknown = Vigil("bench server --narrow 0");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.output, HasSubstr("benchmark option --narrow is not an option of server (server takes "
                                        "admissions, connections, dim,"));
  EXPECT_THAT(unknown.output, HasSubstr(", vectors, warmup, write_connections, wrk, wrk_threads)"));
  EXPECT_THAT(unknown.output, ::testing::Not(HasSubstr("server bench:")));  // nothing was loaded
  RunResult not_integer = Vigil("bench index-scalar --rows 2k");
  EXPECT_NE(not_integer.exit_code, 0);
  EXPECT_THAT(not_integer.output, HasSubstr("benchmark option --rows: '2k' is not an integer"));
  // A group (`index`: every index-* benchmark) refuses an option none of them takes, naming
  // what each takes.
  RunResult group = Vigil("bench index --nope 1");
  EXPECT_NE(group.exit_code, 0);
  EXPECT_THAT(group.output, HasSubstr("--nope is not an option of index-fts, index-ivfpq, index-ivfpq-curve, "
                                      "index-scalar (index-fts takes docs, k,"));
  RunResult list = Vigil("bench");
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_THAT(list.output, HasSubstr("integers: --admissions --dim --duration"));
  EXPECT_THAT(list.output, HasSubstr("texts: --connections --wrk\n"));
}

// `vigil bench server` on a small table: the paired runs are as many as `pairs` asks, wrk
// runs with `wrk_threads` threads, and a negative count is refused before any work.
TEST_F(CliTest, BenchServerRunsThePairsAndWrkThreadsAsked) {
  RunResult bad = Vigil("bench server --pairs -1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("pairs >= 0"));
  RunResult run = Vigil(
      "bench server --rows 2000 --partitions 16 --connections 2 --threads 2 --duration 1 --warmup 0 "
      "--write_connections 1 --admissions 2 --vectors 0 --pairs 3 --pair_seconds 1 --wrk_threads 1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const size_t json_at = run.output.find("{\n  \"");
  ASSERT_NE(json_at, std::string::npos) << run.output;
  auto j = nlohmann::json::parse(run.output.substr(json_at), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run.output;
  const auto& pairs = j["queries"]["pairs"];
  ASSERT_EQ(pairs["ratios"].size(), 3u) << pairs.dump();
  EXPECT_EQ(pairs["connections"], 2);
  for (const auto& r : pairs["ratios"]) EXPECT_GT(r.get<double>(), 0);
  EXPECT_EQ(j["queries"]["http"]["c2"]["wrk_threads"], 1);
  EXPECT_THAT(run.output, HasSubstr("3 pairs of 1 s"));
}

TEST_F(CliTest, InitWritesDefaultConfigAndDoctorValidatesIt) {
  std::ifstream in(root_ + "/vigil.toml");
  ASSERT_TRUE(in.good()) << "vigil init did not write vigil.toml";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("[worker]"));
  EXPECT_THAT(text, HasSubstr("# memory_bytes = \"8GiB\""));

  RunResult ok = Vigil("--root " + root_ + " doctor");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("mutation.enabled = true   (default)"));
  EXPECT_THAT(ok.output, HasSubstr("worker.memory_bytes = \"8GiB\"   (default)"));
  EXPECT_THAT(ok.output, HasSubstr("jobs.reconcile_max_backoff_seconds = \"30m\"   (default)"));
  EXPECT_THAT(ok.output, HasSubstr("[isolation]"));
  EXPECT_THAT(ok.output, HasSubstr("mutation: "));

  // A setting from the file is marked as such; require_cgroup without a parent refuses mutation.
  { std::ofstream(root_ + "/vigil.toml") << "[worker]\nomp_threads = 2\nrequire_cgroup = true\n"; }
  RunResult set = Vigil("--root " + root_ + " doctor");
  ASSERT_EQ(set.exit_code, 0) << set.output;
  EXPECT_THAT(set.output, HasSubstr("worker.omp_threads = 2   (vigil.toml)"));
  EXPECT_THAT(set.output, HasSubstr("worker.require_cgroup = true   (vigil.toml)"));
  EXPECT_THAT(set.output, HasSubstr("mutation: refused (worker.require_cgroup is true"));

  { std::ofstream(root_ + "/vigil.toml") << "[worker]\nmemory_bytes = 0\n"; }
  RunResult bad = Vigil("--root " + root_ + " doctor");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("vigil.toml:2:16: worker.memory_bytes: must be positive"));

  { std::ofstream(root_ + "/vigil.toml") << "[worker]\nmemroy_bytes = 1\n"; }
  RunResult unknown = Vigil("--root " + root_ + " doctor");
  EXPECT_EQ(unknown.exit_code, 1) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("unknown setting worker.memroy_bytes"));

  EXPECT_NE(Vigil("--root " + dir_.Join("nowhere") + " doctor").exit_code, 0);
}

// The metadata store is the root owner's alone: `_meta` 0700, `_meta/vigil.db` and
// its SQLite -wal/-shm 0600; a root made with looser modes is tightened when opened.
TEST_F(CliTest, MetadataStoreIsPrivateToTheRootOwner) {
  RunResult made = Vigil("--root " + root_ + " sql -c \"CREATE TABLE db.t (id BIGINT NOT NULL)\"");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto mode = [](const std::string& path) -> int {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  const std::string meta = root_ + "/_meta";
  EXPECT_EQ(mode(meta), 0700);
  EXPECT_EQ(mode(meta + "/vigil.db"), 0600);
  for (const char* journal : {"/vigil.db-wal", "/vigil.db-shm"}) {
    if (mode(meta + journal) != -1) {
      EXPECT_EQ(mode(meta + journal), 0600) << journal;
    }
  }

  ASSERT_EQ(::chmod(meta.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((meta + "/vigil.db").c_str(), 0644), 0);
  RunResult again = Vigil("--root " + root_ + " sql -c \"SHOW TABLES FROM db\"");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(mode(meta), 0700);
  EXPECT_EQ(mode(meta + "/vigil.db"), 0600);
}

TEST_F(CliTest, DoctorAndInitShowCopyAllowedDirectories) {
  std::ifstream in(root_ + "/vigil.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("# copy_allowed_directories = []\n"));
  RunResult defaults = Vigil("--root " + root_ + " doctor");
  ASSERT_EQ(defaults.exit_code, 0) << defaults.output;
  EXPECT_THAT(defaults.output, HasSubstr("sql.copy_allowed_directories = []   (default)"));
  { std::ofstream(root_ + "/vigil.toml") << "[sql]\ncopy_allowed_directories = [\"/srv/imports\"]\n"; }
  RunResult set = Vigil("--root " + root_ + " doctor");
  ASSERT_EQ(set.exit_code, 0) << set.output;
  EXPECT_THAT(set.output, HasSubstr("sql.copy_allowed_directories = [\"/srv/imports\"]   (vigil.toml)"));
  { std::ofstream(root_ + "/vigil.toml") << "[sql]\ncopy_allowed_directories = [\"srv\"]\n"; }
  RunResult bad = Vigil("--root " + root_ + " doctor");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("vigil.toml:2:29: sql.copy_allowed_directories: entry 1 must be an absolute path"));
}

}  // namespace
}  // namespace vigil

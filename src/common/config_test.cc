#include "vigil/common/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "testutil/temp_dir.h"

namespace vigil {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Parses `text` and returns the error message; fails the test if it parsed.
std::string ErrorOf(const std::string& text) {
  Result<Config> c = ParseConfig(text, "/r/vigil.toml");
  EXPECT_FALSE(c.ok()) << text;
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
  return c.status().message();
}

TEST(ConfigTest, DefaultsAreValidAndWorkingForAnEmbeddedRoot) {
  Config c;
  EXPECT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c).ToString();
  EXPECT_TRUE(c.mutation.enabled);
  EXPECT_EQ(c.worker.memory_bytes, uint64_t{8} << 30);
  EXPECT_EQ(c.worker.max_runtime_seconds, 3600u);
  EXPECT_EQ(c.worker.cgroup_parent, "");
  EXPECT_FALSE(c.worker.require_cgroup);
  EXPECT_EQ(c.jobs.concurrency_per_node, 1u);
  EXPECT_EQ(c.jobs.reconcile_initial_backoff_seconds, 30u);
  EXPECT_EQ(c.jobs.reconcile_max_backoff_seconds, 1800u);
  EXPECT_EQ(c.generations.builders_per_table, 1u);
  EXPECT_EQ(c.generations.physical_per_table, 3u);
}

TEST(ConfigTest, MissingFileYieldsDefaults) {
  testing::TempDir dir;
  ConfigSource src;
  Result<Config> c = LoadConfig(dir.path(), &src);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, Config{});
  EXPECT_FALSE(src.file_found);
  EXPECT_EQ(src.path, dir.Join("vigil.toml"));
  EXPECT_TRUE(src.keys_set.empty());
}

TEST(ConfigTest, EmptyFileYieldsDefaults) {
  Result<Config> c = ParseConfig("", "x.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, Config{});
}

TEST(ConfigTest, FullFileSetsEverySetting) {
  const std::string text = R"(
[mutation]
enabled = false

[worker]
memory_bytes = "2GiB"
max_runtime_seconds = "10m"
pids_max = 100
cgroup_parent = "/sys/fs/cgroup/vigil"
require_cgroup = true
nofile = 512
omp_threads = 8

[caps]
max_rows = 1000
max_fragments = 10
max_vector_dimension = 256
max_partitions = 16
max_sub_vectors = 8

[jobs]
concurrency_per_node = 2
concurrency_per_catalog = 3
concurrency_per_cluster = 5
max_pending_seconds = "2h"
archive_after_seconds = "1d"
supervise_idle_exit_seconds = 5
reconcile_initial_backoff_seconds = "1s"
reconcile_max_backoff_seconds = "1h"
leader_lease_seconds = "10s"

[generations]
builders_per_table = 2
physical_per_table = 4
memory_budget_bytes = 268435456
disk_budget_bytes = "1TiB"
catalog_staleness = "250ms"

[sql]
copy_allowed_directories = ["/srv/imports", "/data/a \"b\""]
external_table_allowed_directories = ["/srv/lance"]
statement_timeout = "1500ms"

[server]
listen = "0.0.0.0:8080"
max_connections = 32
max_body_bytes = "1GiB"
header_timeout = "2s"
body_grace = "500ms"
min_body_bytes_per_second = "1KiB"
write_timeout = "3s"
sessions = 2
idempotency_ttl_seconds = "2h"
require_idempotency_key = false
sse_max_subscribers = 4
requests_per_second_per_user = 50
tls_cert_file = "/etc/vigil/cert.pem"
tls_key_file = "/etc/vigil/key.pem"

[meta]
url = "postgresql://vigil@db/meta"
[lance]
node = "/opt/node/bin/node"
runner = "/opt/vigil/lance_runner.mjs"
read_timeout_seconds = "2m"
[storage]
block_cache_bytes = "64MiB"
)";
  std::vector<std::string> keys;
  Result<Config> r = ParseConfig(text, "f.toml", &keys);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Config& c = *r;
  EXPECT_FALSE(c.mutation.enabled);
  EXPECT_EQ(c.worker.memory_bytes, uint64_t{2} << 30);
  EXPECT_EQ(c.worker.max_runtime_seconds, 600u);
  EXPECT_EQ(c.worker.pids_max, 100u);
  EXPECT_EQ(c.worker.cgroup_parent, "/sys/fs/cgroup/vigil");
  EXPECT_TRUE(c.worker.require_cgroup);
  EXPECT_EQ(c.worker.nofile, 512u);
  EXPECT_EQ(c.worker.omp_threads, 8u);
  EXPECT_EQ(c.caps.max_rows, 1000u);
  EXPECT_EQ(c.caps.max_fragments, 10u);
  EXPECT_EQ(c.caps.max_vector_dimension, 256u);
  EXPECT_EQ(c.caps.max_partitions, 16u);
  EXPECT_EQ(c.caps.max_sub_vectors, 8u);
  EXPECT_EQ(c.jobs.concurrency_per_node, 2u);
  EXPECT_EQ(c.jobs.concurrency_per_catalog, 3u);
  EXPECT_EQ(c.jobs.concurrency_per_cluster, 5u);
  EXPECT_EQ(c.jobs.max_pending_seconds, 7200u);
  EXPECT_EQ(c.jobs.archive_after_seconds, 86400u);
  EXPECT_EQ(c.jobs.supervise_idle_exit_seconds, 5u);
  EXPECT_EQ(c.jobs.reconcile_initial_backoff_seconds, 1u);
  EXPECT_EQ(c.jobs.reconcile_max_backoff_seconds, 3600u);
  EXPECT_EQ(c.jobs.leader_lease_seconds, 10u);
  EXPECT_EQ(c.generations.builders_per_table, 2u);
  EXPECT_EQ(c.generations.physical_per_table, 4u);
  EXPECT_EQ(c.generations.memory_budget_bytes, 268435456u);
  EXPECT_EQ(c.generations.disk_budget_bytes, uint64_t{1} << 40);
  EXPECT_EQ(c.generations.catalog_staleness_ms, 250u);
  EXPECT_EQ(c.sql.statement_timeout_ms, 1500u);
  EXPECT_THAT(c.sql.copy_allowed_directories, ElementsAre("/srv/imports", "/data/a \"b\""));
  EXPECT_THAT(c.sql.external_table_allowed_directories, ElementsAre("/srv/lance"));
  EXPECT_EQ(c.server.listen, "0.0.0.0:8080");
  EXPECT_EQ(c.server.max_connections, 32u);
  EXPECT_EQ(c.server.max_body_bytes, uint64_t{1} << 30);
  EXPECT_EQ(c.server.header_timeout_ms, 2000u);
  EXPECT_EQ(c.server.body_grace_ms, 500u);
  EXPECT_EQ(c.server.min_body_bytes_per_second, 1024u);
  EXPECT_EQ(c.server.write_timeout_ms, 3000u);
  EXPECT_EQ(c.server.sessions, 2u);
  EXPECT_EQ(c.server.idempotency_ttl_seconds, 7200u);
  EXPECT_FALSE(c.server.require_idempotency_key);
  EXPECT_EQ(c.server.sse_max_subscribers, 4u);
  EXPECT_EQ(c.server.requests_per_second_per_user, 50u);
  EXPECT_EQ(c.server.tls_cert_file, "/etc/vigil/cert.pem");
  EXPECT_EQ(c.server.tls_key_file, "/etc/vigil/key.pem");
  EXPECT_EQ(c.meta.url, "postgresql://vigil@db/meta");
  EXPECT_EQ(c.lance.node, "/opt/node/bin/node");
  EXPECT_EQ(c.lance.runner, "/opt/vigil/lance_runner.mjs");
  EXPECT_EQ(c.lance.read_timeout_seconds, 120u);
  EXPECT_EQ(c.storage.block_cache_bytes, uint64_t{64} << 20);
  ASSERT_EQ(keys.size(), EffectiveSettings(c).size());
  EXPECT_EQ(keys.front(), "mutation.enabled");
  EXPECT_EQ(keys[1], "worker.memory_bytes");
  EXPECT_EQ(keys.back(), "storage.block_cache_bytes");
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, PartialFileKeepsOtherDefaultsAndListsKeysInFileOrder) {
  std::vector<std::string> keys;
  Result<Config> r = ParseConfig("[worker]\nomp_threads = 2\nmemory_bytes = 1073741824\n", "f", &keys);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Config expected;
  expected.worker.omp_threads = 2;
  expected.worker.memory_bytes = uint64_t{1} << 30;
  EXPECT_EQ(*r, expected);
  EXPECT_THAT(keys, ElementsAre("worker.omp_threads", "worker.memory_bytes"));
}

TEST(ConfigTest, CgroupParentAcceptsV1) {
  Result<Config> r = ParseConfig("[worker]\ncgroup_parent = \"v1\"\nrequire_cgroup = true\n", "f");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->worker.cgroup_parent, kCgroupParentV1);
  EXPECT_TRUE(ValidateConfig(*r).ok());
}

TEST(ConfigTest, DottedKeysAtTopLevelAreAccepted) {
  Result<Config> r = ParseConfig("worker.omp_threads = 3\n", "f");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->worker.omp_threads, 3u);
}

TEST(ConfigTest, SyntaxErrorNamesFileAndPosition) {
  std::string m = ErrorOf("[worker]\nmemory_bytes = = 3\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:2:"), HasSubstr("syntax error")));
  m = ErrorOf("[worker\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:1:"), HasSubstr("syntax error")));
}

TEST(ConfigTest, UnknownSectionAndKeyAreErrorsWithPositions) {
  std::string m = ErrorOf("[mutation]\nenabled = true\n[wrker]\nx = 1\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:3:2"), HasSubstr("unknown section [wrker]"), HasSubstr("[worker]")));
  m = ErrorOf("[worker]\n  memroy_bytes = 5\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:2:3"), HasSubstr("unknown setting worker.memroy_bytes"),
                       HasSubstr("memory_bytes")));
  m = ErrorOf("stray = 1\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:1:1"), HasSubstr("unknown section [stray]")));
}

TEST(ConfigTest, SectionThatIsNotATableIsAnError) {
  std::string m = ErrorOf("worker = 5\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:1:10"), HasSubstr("worker: expected a table")));
}

TEST(ConfigTest, WrongTypesNameKeyPositionAndTypes) {
  struct Case {
    std::string text;
    std::string key_and_pos;
    std::string problem;
  };
  const Case cases[] = {
      {"[mutation]\nenabled = \"yes\"\n", "/r/vigil.toml:2:11: mutation.enabled", "got a string"},
      {"[worker]\npids_max = \"100\"\n", "/r/vigil.toml:2:12: worker.pids_max", "expected a positive integer"},
      {"[worker]\nmemory_bytes = 1.5\n", "/r/vigil.toml:2:16: worker.memory_bytes", "got a floating-point number"},
      {"[worker]\ncgroup_parent = 3\n", "/r/vigil.toml:2:17: worker.cgroup_parent", "expected a string"},
      {"[worker]\nrequire_cgroup = 1\n", "/r/vigil.toml:2:18: worker.require_cgroup", "got an integer"},
      {"[jobs]\narchive_after_seconds = [1]\n", "/r/vigil.toml:2:25: jobs.archive_after_seconds", "got an array"},
      {"[caps]\nmax_rows = { a = 1 }\n", "/r/vigil.toml:2:12: caps.max_rows", "got a table"},
  };
  for (const Case& c : cases) {
    std::string m = ErrorOf(c.text);
    EXPECT_THAT(m, AllOf(HasSubstr(c.key_and_pos), HasSubstr(c.problem))) << c.text;
  }
}

TEST(ConfigTest, ZeroNegativeAndOutOfRangeAreErrors) {
  struct Case {
    std::string text;
    std::string key_and_pos;
    std::string problem;
  };
  const Case cases[] = {
      {"[worker]\nmemory_bytes = 0\n", "/r/vigil.toml:2:16: worker.memory_bytes", "must be positive (got 0)"},
      {"[worker]\nmax_runtime_seconds = -5\n", "/r/vigil.toml:2:23: worker.max_runtime_seconds",
       "must be positive (got -5)"},
      {"[worker]\nmemory_bytes = \"1MiB\"\n", "/r/vigil.toml:2:16: worker.memory_bytes",
       "must be in 64MiB..1PiB (got 1MiB)"},
      {"[worker]\nmax_runtime_seconds = \"31d\"\n", "worker.max_runtime_seconds", "must be in 1s..30d (got 31d)"},
      {"[worker]\nnofile = 8\n", "/r/vigil.toml:2:10: worker.nofile", "must be in 16..1048576 (got 8)"},
      {"[worker]\nomp_threads = 0\n", "worker.omp_threads", "must be positive"},
      {"[caps]\nmax_vector_dimension = 65537\n", "/r/vigil.toml:2:24: caps.max_vector_dimension",
       "must be in 1..65536"},
      {"[caps]\nmax_rows = 0\n", "caps.max_rows", "must be positive"},
      {"[caps]\nmax_fragments = 9223372036854775807\n", "caps.max_fragments", "must be in 1..4294967296"},
      {"[jobs]\nconcurrency_per_node = 1000\n", "jobs.concurrency_per_node", "must be in 1..256"},
      {"[jobs]\narchive_after_seconds = \"30s\"\n", "jobs.archive_after_seconds", "must be in 1m..3650d"},
      {"[generations]\nbuilders_per_table = 0\n", "generations.builders_per_table", "must be positive"},
      {"[generations]\ndisk_budget_bytes = \"1KiB\"\n", "generations.disk_budget_bytes", "must be in 1MiB.."},
      {"[worker]\ncgroup_parent = \"vigil\"\n", "/r/vigil.toml:2:17: worker.cgroup_parent",
       "must be empty, \"v1\" or an absolute path"},
      {"[worker]\ncgroup_parent = \"/sys/fs/cgroup/../x\"\n", "worker.cgroup_parent", "must not contain '..'"},
      // 0 is "no limit" where a setting allows it, but never negative.
      {"[server]\nrequests_per_second_per_user = -1\n", "server.requests_per_second_per_user",
       "must not be negative (got -1)"},
      {"[server]\nrequests_per_second_per_user = 1000001\n", "server.requests_per_second_per_user",
       "must be in 0..1000000"},
  };
  for (const Case& c : cases) {
    std::string m = ErrorOf(c.text);
    EXPECT_THAT(m, AllOf(HasSubstr(c.key_and_pos), HasSubstr(c.problem))) << c.text;
  }
  Result<Config> unlimited = ParseConfig("[server]\nrequests_per_second_per_user = 0\n", "f.toml");
  ASSERT_TRUE(unlimited.ok()) << unlimited.status().ToString();
  EXPECT_EQ(unlimited->server.requests_per_second_per_user, 0u);
}

TEST(ConfigTest, BadSizeAndDurationStringsNameTheKey) {
  std::string m = ErrorOf("[worker]\nmemory_bytes = \"8GB\"\n");
  EXPECT_THAT(
      m, AllOf(HasSubstr("/r/vigil.toml:2:16: worker.memory_bytes"), HasSubstr("unknown unit 'GB'"), HasSubstr("GiB")));
  m = ErrorOf("[jobs]\nreconcile_max_backoff_seconds = \"soon\"\n");
  EXPECT_THAT(m, AllOf(HasSubstr("jobs.reconcile_max_backoff_seconds"), HasSubstr("whole number")));
  m = ErrorOf("[worker]\nmemory_bytes = \"99999999999PiB\"\n");
  EXPECT_THAT(m, AllOf(HasSubstr("worker.memory_bytes"), HasSubstr("too large")));
}

TEST(ConfigTest, CrossFieldRulesNameTheKeyAndItsPosition) {
  std::string m = ErrorOf("[worker]\nomp_threads = 64\npids_max = 70\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:3:12: worker.pids_max"), HasSubstr("omp_threads + 16 = 80")));
  // The key at fault is not in the file: the message names the file without a position.
  m = ErrorOf("[worker]\nomp_threads = 300\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml: worker.pids_max"), HasSubstr("got 256")));
  m = ErrorOf("[caps]\nmax_vector_dimension = 16\nmax_sub_vectors = 32\n");
  EXPECT_THAT(m, AllOf(HasSubstr("/r/vigil.toml:3:19: caps.max_sub_vectors"), HasSubstr("max_vector_dimension")));
  m = ErrorOf("[jobs]\nreconcile_max_backoff_seconds = \"10s\"\n");
  EXPECT_THAT(
      m, AllOf(HasSubstr("jobs.reconcile_max_backoff_seconds"), HasSubstr("initial_backoff_seconds = 30s (got 10s)")));
  m = ErrorOf("[generations]\nbuilders_per_table = 2\n");
  EXPECT_THAT(m, AllOf(HasSubstr("generations.physical_per_table"), HasSubstr("builders_per_table + 2 = 4")));

  Config c;
  c.jobs.reconcile_initial_backoff_seconds = 3600;
  Status st = ValidateConfig(c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("jobs.reconcile_max_backoff_seconds"));
  c = Config{};
  c.worker.memory_bytes = 1;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("worker.memory_bytes"));
}

TEST(ConfigTest, SizeParsingAndBounds) {
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("512"), 512u);
  EXPECT_EQ(*ParseSize("512B"), 512u);
  EXPECT_EQ(*ParseSize("4KiB"), 4096u);
  EXPECT_EQ(*ParseSize("3MiB"), 3u << 20);
  EXPECT_EQ(*ParseSize("8GiB"), uint64_t{8} << 30);
  EXPECT_EQ(*ParseSize(" 8 GiB "), uint64_t{8} << 30);
  EXPECT_EQ(*ParseSize("2TiB"), uint64_t{2} << 40);
  EXPECT_EQ(*ParseSize("16383PiB"), uint64_t{16383} << 50);
  EXPECT_EQ(*ParseSize("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseSize("16384PiB").ok());              // 2^64: overflow in scaling
  EXPECT_FALSE(ParseSize("18446744073709551616").ok());  // overflow in digits
  EXPECT_FALSE(ParseSize("").ok());
  EXPECT_FALSE(ParseSize("GiB").ok());
  EXPECT_FALSE(ParseSize("-1GiB").ok());
  EXPECT_FALSE(ParseSize("1.5GiB").ok());
  EXPECT_FALSE(ParseSize("8gib").ok());
  EXPECT_FALSE(ParseSize("8G").ok());
  EXPECT_FALSE(ParseSize("8GiBx").ok());

  EXPECT_EQ(FormatSize(uint64_t{8} << 30), "8GiB");
  EXPECT_EQ(FormatSize(1536), "1536");
  EXPECT_EQ(FormatSize(2048), "2KiB");
  EXPECT_EQ(FormatSize(1000), "1000");
  EXPECT_EQ(FormatSize(uint64_t{1} << 60), "1024PiB");
  for (uint64_t v : {uint64_t{1}, uint64_t{1023}, uint64_t{1} << 20, (uint64_t{5} << 40) + 4096, UINT64_MAX}) {
    EXPECT_EQ(*ParseSize(FormatSize(v)), v) << v;
  }
}

TEST(ConfigTest, DurationParsingAndBounds) {
  EXPECT_EQ(*ParseDuration("45"), 45u);
  EXPECT_EQ(*ParseDuration("30s"), 30u);
  EXPECT_EQ(*ParseDuration("10m"), 600u);
  EXPECT_EQ(*ParseDuration("2h"), 7200u);
  EXPECT_EQ(*ParseDuration("7d"), 604800u);
  EXPECT_FALSE(ParseDuration("1w").ok());
  EXPECT_FALSE(ParseDuration("1ms").ok());
  EXPECT_FALSE(ParseDuration("m").ok());
  EXPECT_FALSE(ParseDuration("1.5h").ok());
  EXPECT_FALSE(ParseDuration("213503982334602d").ok());  // * 86400 overflows
  EXPECT_THAT(ParseDuration("5y").status().message(), HasSubstr("use s, m, h or d"));

  EXPECT_EQ(FormatDuration(3600), "1h");
  EXPECT_EQ(FormatDuration(90), "90s");
  EXPECT_EQ(FormatDuration(120), "2m");
  EXPECT_EQ(FormatDuration(604800), "7d");
  for (uint64_t v : {uint64_t{1}, uint64_t{59}, uint64_t{61}, uint64_t{86400} * 3650, uint64_t{1801}}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(v)), v) << v;
  }
}

TEST(ConfigTest, StatementTimeoutIsMillisecondsWithAUnit) {
  EXPECT_EQ(Config{}.sql.statement_timeout_ms, 60'000u);
  auto timeout = [](const std::string& value) {
    return ParseConfig("[sql]\nstatement_timeout = " + value + "\n", "/r/vigil.toml");
  };
  EXPECT_EQ(timeout("\"250ms\"")->sql.statement_timeout_ms, 250u);
  EXPECT_EQ(timeout("\"5s\"")->sql.statement_timeout_ms, 5000u);
  EXPECT_EQ(timeout("\"2m\"")->sql.statement_timeout_ms, 120'000u);
  EXPECT_EQ(timeout("\"30d\"")->sql.statement_timeout_ms, kMaxStatementTimeoutMs);
  EXPECT_EQ(timeout("0")->sql.statement_timeout_ms, 0u);
  EXPECT_EQ(timeout("\"0\"")->sql.statement_timeout_ms, 0u);
  EXPECT_THAT(ErrorOf("[sql]\nstatement_timeout = 60\n"),
              AllOf(HasSubstr("/r/vigil.toml:2:21: sql.statement_timeout"), HasSubstr("a number needs a unit")));
  EXPECT_THAT(ErrorOf("[sql]\nstatement_timeout = \"60\"\n"), HasSubstr("needs a unit: ms, s, m, h or d"));
  EXPECT_THAT(ErrorOf("[sql]\nstatement_timeout = \"31d\"\n"), HasSubstr("must be in 0..30d (got 31d)"));
  EXPECT_THAT(ErrorOf("[sql]\nstatement_timeout = \"5us\"\n"), HasSubstr("unknown unit 'us'"));
  EXPECT_THAT(ErrorOf("[sql]\nstatement_timeout = -1\n"), HasSubstr("a number needs a unit"));
  EXPECT_THAT(ErrorOf("[sql]\nstatement_timeout = true\n"), HasSubstr("got a boolean"));
  EXPECT_THAT(ErrorOf("[sql]\nstatment_timeout = \"1s\"\n"),
              HasSubstr("known in [sql]: copy_allowed_directories, external_table_allowed_directories, "
                        "statement_timeout"));

  EXPECT_EQ(FormatDurationMs(0), "0");
  EXPECT_EQ(FormatDurationMs(250), "250ms");
  EXPECT_EQ(FormatDurationMs(1500), "1500ms");
  EXPECT_EQ(FormatDurationMs(60'000), "1m");
  EXPECT_EQ(FormatDurationMs(86'400'000), "1d");
  for (uint64_t v : {uint64_t{1}, uint64_t{999}, uint64_t{1000}, uint64_t{61'000}, kMaxStatementTimeoutMs}) {
    EXPECT_EQ(*ParseDurationMs(FormatDurationMs(v)), v) << v;
  }
  Config c;
  const auto rendered_timeout = [](const Config& config) {
    for (const ConfigEntry& e : EffectiveSettings(config)) {
      if (e.key == "sql.statement_timeout") return e.value;
    }
    return std::string();
  };
  c.sql.statement_timeout_ms = 0;
  EXPECT_EQ(rendered_timeout(c), "0");
  c.sql.statement_timeout_ms = 200;
  EXPECT_EQ(rendered_timeout(c), "\"200ms\"");
}

// Server-side COPY reads only below these directories; the default (empty) reads none.
TEST(ConfigTest, CopyAllowedDirectoriesAreAbsolutePaths) {
  EXPECT_TRUE(Config{}.sql.copy_allowed_directories.empty());
  auto dirs = [](const std::string& value) {
    return ParseConfig("[sql]\ncopy_allowed_directories = " + value + "\n", "/r/vigil.toml");
  };
  ASSERT_TRUE(dirs("[]").ok());
  EXPECT_TRUE(dirs("[]")->sql.copy_allowed_directories.empty());
  ASSERT_TRUE(dirs("[\"/srv/imports\", \"/data/\"]").ok());
  EXPECT_THAT(dirs("[\"/srv/imports\", \"/data/\"]")->sql.copy_allowed_directories,
              ElementsAre("/srv/imports", "/data/"));
  EXPECT_THAT(ErrorOf("[sql]\ncopy_allowed_directories = \"/srv\"\n"),
              AllOf(HasSubstr("/r/vigil.toml:2:28: sql.copy_allowed_directories"),
                    HasSubstr("expected an array of absolute paths"), HasSubstr("got a string")));
  // An entry's problem is reported at the entry.
  EXPECT_THAT(ErrorOf("[sql]\ncopy_allowed_directories = [\"/ok\", \"relative/dir\"]\n"),
              AllOf(HasSubstr("/r/vigil.toml:2:36: sql.copy_allowed_directories"),
                    HasSubstr("entry 2 must be an absolute path (got \"relative/dir\")")));
  EXPECT_THAT(ErrorOf("[sql]\ncopy_allowed_directories = [\"\"]\n"), HasSubstr("entry 1 must be an absolute path"));
  EXPECT_THAT(ErrorOf("[sql]\ncopy_allowed_directories = [\"/srv/../etc\"]\n"), HasSubstr("must not contain '..'"));
  EXPECT_THAT(ErrorOf("[sql]\ncopy_allowed_directories = [\"/srv/x\\n\"]\n"), HasSubstr("control character"));
  EXPECT_THAT(ErrorOf("[sql]\ncopy_allowed_directories = [1]\n"),
              AllOf(HasSubstr("/r/vigil.toml:2:29"), HasSubstr("entry 1 is an integer; expected a string")));
  std::string many = "[";
  for (size_t i = 0; i <= kMaxCopyAllowedDirectories; ++i) many += (i ? ", \"/d" : "\"/d") + std::to_string(i) + "\"";
  EXPECT_THAT(ErrorOf("[sql]\ncopy_allowed_directories = " + many + "]\n"), HasSubstr("at most 64 are allowed"));

  Config c;
  c.sql.copy_allowed_directories = {"relative"};
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("sql.copy_allowed_directories: must be an absolute path"));
  c.sql.copy_allowed_directories = {"/srv/imports"};
  EXPECT_TRUE(ValidateConfig(c).ok());
  EXPECT_THAT(RenderDefaultConfig(), HasSubstr("# copy_allowed_directories = []\n"));
}

TEST(ConfigTest, MetaUrlIsAPostgresUrlWithoutAPassword) {
  EXPECT_TRUE(Config{}.meta.url.empty());
  auto meta = [](const std::string& value) { return ParseConfig("[meta]\nurl = " + value + "\n", "/r/vigil.toml"); };
  ASSERT_TRUE(meta("\"\"").ok());
  ASSERT_TRUE(meta("\"postgresql://vigil@db.internal:5432/meta?sslmode=require\"").ok());
  EXPECT_EQ(meta("\"postgres://vigil@/meta?host=%2Frun%2Fpostgresql\"")->meta.url,
            "postgres://vigil@/meta?host=%2Frun%2Fpostgresql");
  EXPECT_THAT(ErrorOf("[meta]\nurl = \"postgresql://vigil:s3cret@db/meta\"\n"),
              AllOf(HasSubstr("/r/vigil.toml:2:7: meta.url"), HasSubstr("holds a password"), Not(HasSubstr("s3cret"))));
  EXPECT_THAT(ErrorOf("[meta]\nurl = \"postgresql://db/meta?PassWord=x\"\n"), HasSubstr("holds a password"));
  EXPECT_THAT(ErrorOf("[meta]\nurl = \"sqlite:///tmp/x.db\"\n"),
              HasSubstr("must be empty or start with postgresql://"));
  EXPECT_THAT(ErrorOf("[meta]\nurl = \"postgresql://db/meta x\"\n"), HasSubstr("space or control character"));
  EXPECT_THAT(ErrorOf("[meta]\nurl = 5\n"), HasSubstr("expected a string \"postgresql://"));
  Config c;
  c.meta.url = "mysql://db";
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("meta.url: must be empty or start with postgresql://"));
  // A root made with a store renders it uncommented, and everything else as the defaults.
  c.meta.url = "postgresql://vigil@db/meta";
  c.jobs.leader_lease_seconds = 5;
  const std::string text = RenderConfig(c);
  EXPECT_THAT(text, AllOf(HasSubstr("\nurl = \"postgresql://vigil@db/meta\"\n"),
                          HasSubstr("\nleader_lease_seconds = \"5s\"\n"), HasSubstr("\n# listen = ")));
  auto parsed = ParseConfig(text, "/r/vigil.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, c);
}

TEST(ConfigTest, RenderedDefaultLoadsAsDefaultsCommentedAndUncommented) {
  const std::string text = RenderDefaultConfig();
  std::vector<std::string> keys;
  Result<Config> commented = ParseConfig(text, "default.toml", &keys);
  ASSERT_TRUE(commented.ok()) << commented.status().ToString();
  EXPECT_EQ(*commented, Config{});
  EXPECT_TRUE(keys.empty());

  // Uncomment every setting line: the values written down are exactly the defaults.
  std::istringstream in(text);
  std::string line;
  std::string uncommented;
  size_t settings = 0;
  const std::vector<ConfigEntry> defaults = EffectiveSettings(Config{});
  while (std::getline(in, line)) {
    for (const ConfigEntry& e : defaults) {
      std::string name = e.key.substr(e.key.find('.') + 1);
      if (line == "# " + name + " = " + e.value) {
        line = line.substr(2);
        ++settings;
      }
    }
    uncommented += line + "\n";
  }
  EXPECT_EQ(settings, defaults.size());
  Result<Config> active = ParseConfig(uncommented, "uncommented.toml", &keys);
  ASSERT_TRUE(active.ok()) << active.status().ToString() << "\n" << uncommented;
  EXPECT_EQ(*active, Config{});
  EXPECT_EQ(keys.size(), defaults.size());
  EXPECT_THAT(text, HasSubstr("# memory_bytes = \"8GiB\""));
  EXPECT_THAT(text, HasSubstr("[generations]"));
}

// [storage] block_cache_bytes: a size, 0 allowed (no cache), never negative.
TEST(ConfigTest, BlockCacheBytesIsASizeAndZeroTurnsTheCacheOff) {
  EXPECT_EQ(ParseConfig("[storage]\nblock_cache_bytes = 0\n", "f.toml")->storage.block_cache_bytes, 0u);
  EXPECT_EQ(ParseConfig("[storage]\nblock_cache_bytes = \"1GiB\"\n", "f.toml")->storage.block_cache_bytes,
            uint64_t{1} << 30);
  Result<Config> negative = ParseConfig("[storage]\nblock_cache_bytes = -1\n", "f.toml");
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("f.toml:2:21: storage.block_cache_bytes: must not be negative"));
  Result<Config> unknown = ParseConfig("[storage]\nblock_cache_mb = 10\n", "f.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("known in [storage]: block_cache_bytes"));
}

TEST(ConfigTest, EffectiveSettingsRenderTomlValues) {
  Config c;
  c.worker.cgroup_parent = "/sys/fs/cgroup/v";
  c.worker.max_runtime_seconds = 90;
  c.sql.copy_allowed_directories = {"/srv/imports", "/odd \"name\" \\"};
  std::vector<ConfigEntry> e = EffectiveSettings(c);
  ASSERT_EQ(e.size(), 49u);
  EXPECT_EQ(e[48].key, "storage.block_cache_bytes");
  EXPECT_EQ(e[48].value, "\"256MiB\"");
  EXPECT_EQ(e[45].key, "lance.node");
  EXPECT_EQ(e[45].value, "\"/usr/bin/node\"");
  EXPECT_EQ(e[46].key, "lance.runner");
  EXPECT_EQ(e[46].value, "\"\"");
  EXPECT_EQ(e[47].key, "lance.read_timeout_seconds");
  EXPECT_EQ(e[47].value, "\"1m\"");
  EXPECT_EQ(e[41].key, "server.requests_per_second_per_user");
  EXPECT_EQ(e[41].value, "0");
  EXPECT_EQ(e[33].key, "server.header_timeout");
  EXPECT_EQ(e[33].value, "\"10s\"");
  EXPECT_EQ(e[35].key, "server.min_body_bytes_per_second");
  EXPECT_EQ(e[35].value, "\"64KiB\"");
  EXPECT_EQ(e[0].key, "mutation.enabled");
  EXPECT_EQ(e[0].value, "true");
  EXPECT_EQ(e[1].key, "worker.memory_bytes");
  EXPECT_EQ(e[1].value, "\"8GiB\"");
  EXPECT_EQ(e[2].value, "\"90s\"");
  EXPECT_EQ(e[4].value, "\"/sys/fs/cgroup/v\"");
  EXPECT_EQ(e[27].key, "sql.copy_allowed_directories");
  EXPECT_EQ(e[27].value, "[\"/srv/imports\", \"/odd \\\"name\\\" \\\\\"]");
  EXPECT_EQ(e[28].key, "sql.external_table_allowed_directories");
  EXPECT_EQ(e[28].value, "[]");
  // Every rendered value parses back to the same setting.
  std::string text;
  std::string section;
  for (const ConfigEntry& x : e) {
    std::string s = x.key.substr(0, x.key.find('.'));
    if (s != section) text += "[" + (section = s) + "]\n";
    text += x.key.substr(x.key.find('.') + 1) + " = " + x.value + "\n";
  }
  Result<Config> back = ParseConfig(text, "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
}

TEST(ConfigTest, LoadConfigReadsTheRootFileAndReportsSources) {
  testing::TempDir dir;
  std::ofstream(dir.Join("vigil.toml")) << "[jobs]\nconcurrency_per_node = 3\n";
  ConfigSource src;
  Result<Config> c = LoadConfig(dir.path(), &src);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->jobs.concurrency_per_node, 3u);
  EXPECT_TRUE(src.file_found);
  EXPECT_THAT(src.keys_set, ElementsAre("jobs.concurrency_per_node"));

  std::ofstream(dir.Join("vigil.toml")) << "[jobs]\nconcurrency_per_node = 0\n";
  c = LoadConfig(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr(dir.Join("vigil.toml") + ":2:24: jobs.concurrency_per_node: must be positive"));
}

TEST(ConfigTest, OversizedFileIsRefused) {
  testing::TempDir dir;
  std::ofstream(dir.Join("vigil.toml")) << std::string(kMaxConfigBytes + 10, '#');
  Result<Config> c = LoadConfig(dir.path());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
}

TEST(ConfigTest, OmpThreadsDefaultsToTheUsableCoresAndSaysSo) {
  const uint32_t cores = UsableCores();
  EXPECT_GE(cores, 1u);
  EXPECT_EQ(Config{}.worker.omp_threads, std::min(cores, 240u));  // pids_max 256 keeps 16 for other threads
  EXPECT_EQ(ParseConfig("", "x")->worker.omp_threads, Config{}.worker.omp_threads);
  // A lower pids_max lowers the default with it; a set value stays as set.
  EXPECT_EQ(ParseConfig("[worker]\npids_max = 17\n", "x")->worker.omp_threads, 1u);
  EXPECT_EQ(DefaultOmpThreads(18), std::min(cores, 2u));
  EXPECT_EQ(DefaultOmpThreads(16), 1u);
  EXPECT_EQ(ParseConfig("[worker]\nomp_threads = 3\n", "x")->worker.omp_threads, 3u);

  ConfigSource src{"/r/vigil.toml", true, {"worker.nofile"}};
  for (const ConfigEntry& e : EffectiveSettings(Config{}, &src)) {
    if (e.key == "worker.omp_threads") {
      EXPECT_EQ(e.source, "default: usable cores");
      EXPECT_EQ(e.value, std::to_string(std::min(cores, 240u)));
    } else {
      EXPECT_EQ(e.source, e.key == "worker.nofile" ? "vigil.toml" : "default") << e.key;
    }
  }
  src.keys_set = {"worker.omp_threads"};
  EXPECT_EQ(EffectiveSettings(Config{}, &src)[7].source, "vigil.toml");
  EXPECT_EQ(EffectiveSettings(Config{})[7].key, "worker.omp_threads");
}

TEST(ConfigTest, CapsAreTheIndexCapsWithTheirDefaultsAndLimits) {
  EXPECT_EQ(Config{}.caps, IndexCaps{});
  auto c = ParseConfig("[caps]\nmax_vector_dimension = 8192\nmax_partitions = 1048576\n", "x");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->caps.max_vector_dimension, 8192u);
  EXPECT_EQ(c->caps.max_partitions, kIndexCapsLimits.max_partitions);
  EXPECT_THAT(ErrorOf("[caps]\nmax_partitions = 1048577\n"),
              HasSubstr("caps.max_partitions: must be in 1..1048576 (got 1048577)"));
  EXPECT_THAT(ErrorOf("[caps]\nmax_rows = 281474976710657\n"), HasSubstr("caps.max_rows: must be in"));
}

TEST(ConfigTest, ServerListenIsHostAndPort) {
  auto ok = ParseListenAddress("127.0.0.1:7431");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->host, "127.0.0.1");
  EXPECT_EQ(ok->port, 7431);
  auto v6 = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  for (const char* bad : {"7431", ":80", "host:", "host:99999", "host:8x", "a b:80", "h/../x:80"}) {
    EXPECT_EQ(ParseListenAddress(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto file = ParseConfig("[server]\nlisten = \"nowhere\"\n", "f.toml");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("server.listen"));
  EXPECT_FALSE(ParseConfig("[server]\nsessions = 0\n", "f.toml").ok());
}

}  // namespace
}  // namespace vigil

// The administrator settings of a root (`<root>/vigil.toml`, seed 000 section
// 10.2): the mutation gate, worker limits, index caps, job and generation
// bounds, the SQL statement timeout and server-side COPY directories, the
// server, the metadata store, the Lance runner and the block cache. Every
// setting has a working default for an embedded root; the file only overrides.
// Loading validates types and ranges and names the file, the key and the
// line:column of every problem.
//
// Thread safety: Config is a plain value; the functions are pure (LoadConfig
// reads one file) and safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/index_caps.h"
#include "vigil/common/status.h"

namespace vigil {

constexpr std::string_view kConfigFile = "vigil.toml";
// A larger vigil.toml is refused (ResourceExhausted) rather than parsed.
constexpr size_t kMaxConfigBytes = 1024 * 1024;
// worker.cgroup_parent value selecting cgroup v1 (same as worker::kCgroupV1Self).
constexpr std::string_view kCgroupParentV1 = "v1";

struct MutationConfig {
  // false rejects CREATE / REPLACE / DROP INDEX before a job is created.
  bool enabled = true;

  bool operator==(const MutationConfig&) const = default;
};

// Cores this process may run on (sched_getaffinity, else hardware_concurrency), at least 1.
uint32_t UsableCores();
// The default of worker.omp_threads: the usable cores, at most pids_max - 16 (the
// headroom worker.pids_max keeps for other threads) and 1024, at least 1.
uint32_t DefaultOmpThreads(uint32_t pids_max);

struct WorkerConfig {
  // Hard memory limit of one worker: cgroup memory.max, else RLIMIT_AS.
  uint64_t memory_bytes = uint64_t{8} << 30;
  // Wall-clock deadline after which the worker is killed and reaped.
  uint64_t max_runtime_seconds = 3600;
  // cgroup pids.max of the worker (threads count); must exceed omp_threads.
  uint32_t pids_max = 256;
  // Absolute path of a delegated cgroup v2 directory; kCgroupParentV1: below
  // this process's own cgroup v1 memory and pids cgroups; empty: no cgroup.
  std::string cgroup_parent;
  // true: refuse mutation when no usable cgroup boundary exists.
  bool require_cgroup = false;
  // RLIMIT_NOFILE of the worker.
  uint32_t nofile = 1024;
  // OMP_NUM_THREADS of the worker (FAISS's OpenMP threads); default DefaultOmpThreads().
  uint32_t omp_threads = DefaultOmpThreads(pids_max);

  bool operator==(const WorkerConfig&) const = default;
};

struct JobsConfig {
  // Jobs running at once on one node (no queue beyond it), in one catalog, in the cluster.
  uint32_t concurrency_per_node = 1;
  uint32_t concurrency_per_catalog = 64;
  uint32_t concurrency_per_cluster = 64;
  // A job PENDING this long ends NOT_COMMITTED (SCHEDULING_EXHAUSTED).
  uint64_t max_pending_seconds = 24 * 3600;
  // Terminal jobs are archived this long after they ended.
  uint64_t archive_after_seconds = 7 * 24 * 3600;
  // An idle `vigil supervise` exits after this long.
  uint64_t supervise_idle_exit_seconds = 60;
  // Reconciler backoff per UNKNOWN job: starts here, doubles up to max.
  uint64_t reconcile_initial_backoff_seconds = 30;
  uint64_t reconcile_max_backoff_seconds = 1800;
  // The leader lease: renewed every third of it; a standby takes over once it lapses.
  uint64_t leader_lease_seconds = 30;

  bool operator==(const JobsConfig&) const = default;
};

struct GenerationsConfig {
  uint32_t builders_per_table = 1;
  // Physical generations open per table (current, retired, building).
  uint32_t physical_per_table = 3;
  // Budgets shared by all tables of a process; a build over budget is refused.
  uint64_t memory_budget_bytes = uint64_t{4} << 30;
  uint64_t disk_budget_bytes = uint64_t{1} << 40;
  // How long a statement may take a table's newest version from its linked manifests alone
  // before the metadata store's version catalog is asked again; 0: asked by every statement.
  uint64_t catalog_staleness_ms = 1000;

  bool operator==(const GenerationsConfig&) const = default;
};

// The longest statement_timeout (vigil.toml and SET): 30 days.
constexpr uint64_t kMaxStatementTimeoutMs = uint64_t{30} * 24 * 3600 * 1000;
// The most entries of sql.copy_allowed_directories and of sql.external_table_allowed_directories.
constexpr size_t kMaxCopyAllowedDirectories = 64;

struct SqlConfig {
  // Absolute directories below which a server-side COPY ... FROM 'path' (an ADMIN
  // principal's) may read; empty: no server-side file access.
  std::vector<std::string> copy_allowed_directories;
  // Absolute directories below which CREATE EXTERNAL TABLE (an ADMIN principal's) may
  // register a dataset's LOCATION, with its symbolic links resolved; empty: none.
  std::vector<std::string> external_table_allowed_directories;
  // A SELECT / EXPLAIN running longer ends with DeadlineExceeded; 0: no timeout.
  // A session overrides it with SET statement_timeout.
  uint64_t statement_timeout_ms = 60'000;

  bool operator==(const SqlConfig&) const = default;
};

// `vigil serve` (src/server): what the HTTP API accepts and keeps.
struct ServerConfig {
  std::string listen = "127.0.0.1:7431";  // host:port; --listen overrides it
  uint64_t max_connections = 256;         // past it a connection gets 503 and is closed
  uint64_t max_body_bytes = uint64_t{1} << 30;
  // Deadlines that keep slow clients from holding connections (server::HttpServerOptions).
  uint64_t header_timeout_ms = 10'000;
  uint64_t body_grace_ms = 10'000;
  uint64_t min_body_bytes_per_second = 64 * 1024;
  uint64_t write_timeout_ms = 30'000;
  uint64_t sessions = 4;  // SQL sessions serving requests at once
  uint64_t idempotency_ttl_seconds = 86'400;
  bool require_idempotency_key = true;        // on resource mutations (not POST /v1/sql)
  uint64_t sse_max_subscribers = 64;          // job event streams open at once
  uint64_t requests_per_second_per_user = 0;  // past it (after a second's burst) 429; 0: no limit
  std::string tls_cert_file;                  // both set: HTTPS only
  std::string tls_key_file;

  bool operator==(const ServerConfig&) const = default;
};

// Where the metadata a root's processes share lives (jobs, leases, nodes, users,
// idempotency records). Empty: the root's own SQLite file `_meta/vigil.db`.
struct MetaConfig {
  std::string url;  // "postgresql://user@host:port/db?..." (never with a password)

  bool operator==(const MetaConfig&) const = default;
};

// InvalidArgument unless `url` is empty or a postgresql:// / postgres:// URL without a
// password (libpq reads that from ~/.pgpass or PGPASSWORD), control characters or spaces.
Status CheckMetaUrl(std::string_view url);

// A parsed [server] listen / --listen value.
struct ListenAddress {
  std::string host;   // a name, an IPv4 address or an IPv6 address without brackets
  uint16_t port = 0;  // 0: any free port
};
// "host:port" or "[v6]:port"; InvalidArgument naming what is wrong otherwise.
Result<ListenAddress> ParseListenAddress(std::string_view text);

// How the Lance runner of external Lance tables is started (DESIGN.md section 13).
struct LanceConfig {
  std::string node = "/usr/bin/node";  // the Node executable
  std::string runner;                  // lance_runner.mjs; empty: this build's source tree
  // How long a read of a dataset (an inspection outside an attempt) may take.
  uint64_t read_timeout_seconds = 60;

  bool operator==(const LanceConfig&) const = default;
};

// How a process reads tables.
struct StorageConfig {
  // The process's cache of decoded column blocks of table fragments (BlockCache::Default()),
  // shared by every table it reads; 0: nothing is cached.
  uint64_t block_cache_bytes = uint64_t{256} << 20;

  bool operator==(const StorageConfig&) const = default;
};

struct Config {
  MutationConfig mutation;
  WorkerConfig worker;
  IndexCaps caps;  // the [caps] section: its defaults and limits live in common/index_caps.h
  JobsConfig jobs;
  GenerationsConfig generations;
  SqlConfig sql;
  ServerConfig server;
  MetaConfig meta;
  LanceConfig lance;
  StorageConfig storage;

  bool operator==(const Config&) const = default;
};

// Where the effective settings came from.
struct ConfigSource {
  std::string path;                   // `<root>/vigil.toml`
  bool file_found = false;            // false: every setting is its default
  std::vector<std::string> keys_set;  // "worker.memory_bytes", ... in file order
};

// Loads `<root_dir>/vigil.toml`; a missing file yields the defaults. Syntax,
// unknown keys, wrong types and out-of-range values are InvalidArgument
// "<path>:<line>:<col>: <key>: <problem>". `source` (optional) says what was set.
Result<Config> LoadConfig(const std::string& root_dir, ConfigSource* source = nullptr);

// Parses and validates TOML `text`; `path` only names it in messages.
Result<Config> ParseConfig(std::string_view text, const std::string& path,
                           std::vector<std::string>* keys_set = nullptr);

// Checks cross-field and range rules on a programmatically built Config.
Status ValidateConfig(const Config& config);

// The commented default vigil.toml: every setting, its default and why.
// ParseConfig(RenderDefaultConfig()) == Config{}.
std::string RenderDefaultConfig();
// The same file with each setting of `config` that differs from its default uncommented;
// ParseConfig(RenderConfig(c)) == c.
std::string RenderConfig(const Config& config);

struct ConfigEntry {
  std::string key;     // "worker.memory_bytes"
  std::string value;   // as TOML would accept it: 8GiB, 1h, true, "/sys/fs/cgroup/x"
  std::string source;  // "vigil.toml", "default", or how a computed default came about
};
// Every setting of `config` in file order; `source` (optional) says which were set
// in the file (without it every source is a default).
std::vector<ConfigEntry> EffectiveSettings(const Config& config, const ConfigSource* source = nullptr);

// Sizes: an integer (bytes) or "<n>B|KiB|MiB|GiB|TiB|PiB". InvalidArgument on
// a bad unit, a missing number or overflow.
Result<uint64_t> ParseSize(std::string_view text);
// Durations: an integer (seconds) or "<n>s|m|h|d".
Result<uint64_t> ParseDuration(std::string_view text);
// Millisecond durations: "<n>ms|s|m|h|d", or "0". A number without a unit is
// InvalidArgument (seconds elsewhere in vigil.toml, milliseconds in PostgreSQL).
Result<uint64_t> ParseDurationMs(std::string_view text);
// The largest exact unit: 60000 -> "1m", 1500 -> "1500ms", 0 -> "0".
std::string FormatDurationMs(uint64_t ms);
// The largest exact binary unit: 8589934592 -> "8GiB"; 1000 -> "1000" (bytes).
std::string FormatSize(uint64_t bytes);
// The largest exact unit: 3600 -> "1h", 90 -> "90s".
std::string FormatDuration(uint64_t seconds);

}  // namespace vigil

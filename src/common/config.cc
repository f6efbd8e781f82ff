// The only translation unit that includes toml++ (header-only, without
// exceptions: parse errors come back as values).
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTER 0
#include <toml++/toml.h>

#include "vigil/common/config.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "vigil/common/ascii.h"
#include "vigil/common/bounds.h"
#include "vigil/common/env.h"
#include "vigil/common/file_system.h"

namespace vigil {

namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;
constexpr uint64_t kPiB = uint64_t{1} << 50;
constexpr uint64_t kMinute = 60;
constexpr uint64_t kHour = 3600;
constexpr uint64_t kDay = 86400;

// Extra processes/threads a worker needs beyond its OpenMP pool: the main
// thread, OpenBLAS/FAISS helpers, the dynamic loader's and libc's own.
constexpr uint64_t kPidsHeadroom = 16;
constexpr uint64_t kMaxOmpThreads = 1024;

// kDurationMs: milliseconds, written only with a unit (or 0), since a bare number means
// seconds for kDuration but milliseconds in PostgreSQL's statement_timeout.
// kPathList: an array of absolute paths. kAddress: "host:port" (ParseListenAddress).
enum class Kind { kBool, kCount, kSize, kDuration, kDurationMs, kPath, kPathList, kAddress, kDatabaseUrl };

// One setting: where it lives, its type and range, how to read and write it on
// a Config, and the comment the default file carries above it.
struct Setting {
  std::string_view section;
  std::string_view name;
  Kind kind;
  uint64_t min = 0;
  uint64_t max = 0;
  std::string_view help;
  uint64_t (*get_num)(const Config&) = nullptr;
  void (*set_num)(Config&, uint64_t) = nullptr;
  bool (*get_bool)(const Config&) = nullptr;
  void (*set_bool)(Config&, bool) = nullptr;
  const std::string& (*get_str)(const Config&) = nullptr;
  void (*set_str)(Config&, std::string) = nullptr;
  const std::vector<std::string>& (*get_list)(const Config&) = nullptr;
  void (*set_list)(Config&, std::vector<std::string>) = nullptr;

  std::string Key() const { return std::string(section) + "." + std::string(name); }
};

#define VIGIL_NUM_(sec, field)                             \
  [](const Config& c) -> uint64_t { return c.sec.field; }, \
      [](Config& c, uint64_t v) { c.sec.field = static_cast<decltype(c.sec.field)>(v); }
#define VIGIL_BOOL_(sec, field) \
  nullptr, nullptr, [](const Config& c) -> bool { return c.sec.field; }, [](Config& c, bool v) { c.sec.field = v; }
#define VIGIL_STR_(sec, field)                                                                           \
  nullptr, nullptr, nullptr, nullptr, [](const Config& c) -> const std::string& { return c.sec.field; }, \
      [](Config& c, std::string v) { c.sec.field = std::move(v); }
#define VIGIL_LIST_(sec, field)                                                       \
  nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,                               \
      [](const Config& c) -> const std::vector<std::string>& { return c.sec.field; }, \
      [](Config& c, std::vector<std::string> v) { c.sec.field = std::move(v); }

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> kSettings = {
      {"mutation", "enabled", Kind::kBool, 0, 0,
       "CREATE / REPLACE / DROP INDEX are admitted. false rejects them before a job\n"
       "is created (seed 000 section 10.2). An embedded root is one administrator's\n"
       "own directory, so mutation is on by default.",
       VIGIL_BOOL_(mutation, enabled)},

      {"worker", "memory_bytes", Kind::kSize, 64 * kMiB, kPiB,
       "Hard memory limit of one index worker: cgroup memory.max when a cgroup is\n"
       "used, else RLIMIT_AS (address space, which counts thread stacks and malloc\n"
       "arenas too). 8GiB holds an IVF_PQ build over 10M x 128-d float32 vectors\n"
       "(4.8GiB raw) with room for codes and training buffers, and stays below the\n"
       "memory of a typical development machine. Bytes or \"<n>KiB|MiB|GiB|TiB\".",
       VIGIL_NUM_(worker, memory_bytes)},

      {"worker", "max_runtime_seconds", Kind::kDuration, 1, 30 * kDay,
       "Wall-clock deadline of one worker; it is killed and reaped after it and the\n"
       "job's outcome is UNKNOWN. One hour covers a whole-snapshot build at the\n"
       "default caps on one node. Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(worker, max_runtime_seconds)},

      {"worker", "pids_max", Kind::kCount, kPidsHeadroom, 4'194'304,
       "cgroup pids.max of one worker (every thread counts). Must be at least\n"
       "omp_threads + 16 (main thread, BLAS and runtime helpers); 256 stops a\n"
       "runaway thread or fork loop long before the host's limits.",
       VIGIL_NUM_(worker, pids_max)},

      {"worker", "cgroup_parent", Kind::kPath, 0, 0,
       "Absolute path of an operator-delegated cgroup v2 directory (for example\n"
       "\"/sys/fs/cgroup/vigil\" with memory and pids in its cgroup.subtree_control);\n"
       "each worker gets its own child cgroup there before it runs provider code.\n"
       "\"v1\": child cgroups below this process's own cgroup v1 memory and pids\n"
       "cgroups. Empty: no cgroup, rlimits only.",
       VIGIL_STR_(worker, cgroup_parent)},

      {"worker", "require_cgroup", Kind::kBool, 0, 0,
       "true refuses mutation when no usable cgroup boundary exists (production\n"
       "rule of seed 000 section 6); false accepts rlimits alone, which suits an\n"
       "embedded root. `vigil doctor` says which applies on this machine.",
       VIGIL_BOOL_(worker, require_cgroup)},

      {"worker", "nofile", Kind::kCount, 16, 1'048'576,
       "RLIMIT_NOFILE of one worker. 1024 is the usual soft limit, always settable\n"
       "without privilege; a build reads a table's fragments one at a time.",
       VIGIL_NUM_(worker, nofile)},

      {"worker", "omp_threads", Kind::kCount, 1, kMaxOmpThreads,
       "Threads of one worker's index build: OpenMP threads (OMP_NUM_THREADS) of an\n"
       "IVF_PQ build, BLAS staying single-threaded; an FTS build indexes its native\n"
       "postings on a second thread when this is 2 or more. Default: the cores this\n"
       "process may run on (its CPU affinity; the value below is this machine's), at\n"
       "most pids_max - 16. Lower it to leave cores to queries on the same machine.",
       VIGIL_NUM_(worker, omp_threads)},

      {"caps", "max_rows", Kind::kCount, 1, kIndexCapsLimits.max_rows,
       "Administrator safety caps, checked at admission and again on the worker's\n"
       "exact snapshot, before any provider call. Rows of the indexed snapshot.",
       VIGIL_NUM_(caps, max_rows)},

      {"caps", "max_fragments", Kind::kCount, 1, kIndexCapsLimits.max_fragments, "Fragments of the indexed snapshot.",
       VIGIL_NUM_(caps, max_fragments)},

      {"caps", "max_vector_dimension", Kind::kCount, 1, kIndexCapsLimits.max_vector_dimension,
       "Dimension of an indexed vector column.", VIGIL_NUM_(caps, max_vector_dimension)},

      {"caps", "max_partitions", Kind::kCount, 1, kIndexCapsLimits.max_partitions, "IVF num_partitions of one index.",
       VIGIL_NUM_(caps, max_partitions)},

      {"caps", "max_sub_vectors", Kind::kCount, 1, kIndexCapsLimits.max_sub_vectors,
       "PQ num_sub_vectors of one index; at most max_vector_dimension.", VIGIL_NUM_(caps, max_sub_vectors)},

      {"jobs", "concurrency_per_node", Kind::kCount, 1, 256,
       "Index jobs running at once on one node, each on a different table (a table\n"
       "has at most one running job); more wait PENDING. A `vigil serve` node registers\n"
       "it as its capacity: the leader gives attempts to the least loaded live node.",
       VIGIL_NUM_(jobs, concurrency_per_node)},

      {"jobs", "concurrency_per_catalog", Kind::kCount, 1, 4096,
       "Index jobs running at once in one catalog, over every node (seed 000's\n"
       "catalog concurrency); more wait PENDING.",
       VIGIL_NUM_(jobs, concurrency_per_catalog)},

      {"jobs", "concurrency_per_cluster", Kind::kCount, 1, 4096,
       "Index jobs running at once over every node sharing the metadata store\n"
       "(seed 000's cluster concurrency); more wait PENDING.",
       VIGIL_NUM_(jobs, concurrency_per_cluster)},

      {"jobs", "max_pending_seconds", Kind::kDuration, 1, 30 * kDay,
       "A job still PENDING this long after its admission (every node drained or\n"
       "of capacity 0, or a concurrency bound kept it waiting) ends NOT_COMMITTED\n"
       "with error SCHEDULING_EXHAUSTED, its fence released; nothing of it ran.\n"
       "Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(jobs, max_pending_seconds)},

      {"jobs", "archive_after_seconds", Kind::kDuration, 60, 3650 * kDay,
       "Terminal jobs are archived this long after they ended and leave the listings;\n"
       "an unresolved UNKNOWN job becomes a tombstone that keeps its fence and stays\n"
       "listed until an operator resolves it. Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(jobs, archive_after_seconds)},

      {"jobs", "supervise_idle_exit_seconds", Kind::kDuration, 1, kDay,
       "A background `vigil supervise` with no active job exits after this long.",
       VIGIL_NUM_(jobs, supervise_idle_exit_seconds)},

      {"jobs", "reconcile_initial_backoff_seconds", Kind::kDuration, 1, kDay,
       "Reconciler watcher of an UNKNOWN job: first retry after this long, then\n"
       "doubling up to reconcile_max_backoff_seconds.",
       VIGIL_NUM_(jobs, reconcile_initial_backoff_seconds)},

      {"jobs", "reconcile_max_backoff_seconds", Kind::kDuration, 1, 30 * kDay,
       "Upper bound of the reconciler backoff; at least the initial backoff.",
       VIGIL_NUM_(jobs, reconcile_max_backoff_seconds)},

      {"jobs", "leader_lease_seconds", Kind::kDuration, 1, kDay,
       "The leader lease of the process that dispatches jobs, renewed every third of\n"
       "it. With a shared [meta] url a standby node takes over this long after a\n"
       "leader died, and a leader that cannot renew it kills its workers and stops\n"
       "before it lapses. An embedded root's next leader takes over at once.",
       VIGIL_NUM_(jobs, leader_lease_seconds)},

      {"generations", "builders_per_table", Kind::kCount, 1, 16, "Index builds running at once per table.",
       VIGIL_NUM_(generations, builders_per_table)},

      {"generations", "physical_per_table", Kind::kCount, 3, 64,
       "Physical generations open per table: current, retired and one per\n"
       "builder, so at least builders_per_table + 2.",
       VIGIL_NUM_(generations, physical_per_table)},

      {"generations", "memory_budget_bytes", Kind::kSize, kMiB, kPiB,
       "Index segment bytes the open generations of a process's tables may hold;\n"
       "opening a generation past it is refused (RESOURCE_EXHAUSTED) and the\n"
       "current generation stays.",
       VIGIL_NUM_(generations, memory_budget_bytes)},

      {"generations", "disk_budget_bytes", Kind::kSize, kMiB, uint64_t{1} << 60,
       "Index segment bytes on disk that the open generations of a process's\n"
       "tables keep from VACUUM; opening a generation past it is refused.",
       VIGIL_NUM_(generations, disk_budget_bytes)},

      {"generations", "catalog_staleness", Kind::kDurationMs, 0, 3'600'000,
       "A table's newest version is committed in the metadata store and then linked\n"
       "as a manifest file. A statement sees every linked version at once (one file\n"
       "check); the store is asked again only this long after it last was, which\n"
       "bounds how late a version committed but not yet linked (its writer died\n"
       "between the two) is seen. \"<n>ms|s|m|h\"; 0 asks the store every statement.",
       VIGIL_NUM_(generations, catalog_staleness_ms)},

      {"sql", "copy_allowed_directories", Kind::kPathList, 0, kMaxCopyAllowedDirectories,
       "Server-side file access, as PostgreSQL's pg_read_server_files: a COPY ... FROM\n"
       "'path' run for a principal (not the local user's own `vigil sql` shell, which\n"
       "reads the user's own files) needs ADMIN, and the path with every symbolic\n"
       "link resolved must lie below one of these absolute directories. Empty: no\n"
       "server-side COPY from files at all. Example: [\"/srv/imports\"].",
       VIGIL_LIST_(sql, copy_allowed_directories)},

      {"sql", "external_table_allowed_directories", Kind::kPathList, 0, kMaxCopyAllowedDirectories,
       "Where external tables may live: CREATE EXTERNAL TABLE ... LOCATION 'path' needs\n"
       "ADMIN, and the path with every symbolic link resolved must lie below one of\n"
       "these absolute directories (the resolved path is what is registered). The\n"
       "Lance runner then reads and changes the dataset there with the server's\n"
       "rights, for whoever may ALTER the table. Empty: no external tables can be\n"
       "registered. Example: [\"/srv/lance\"].",
       VIGIL_LIST_(sql, external_table_allowed_directories)},

      {"sql", "statement_timeout", Kind::kDurationMs, 0, kMaxStatementTimeoutMs,
       "A SELECT or EXPLAIN running longer ends with DeadlineExceeded and the session\n"
       "stays usable; a session overrides it with SET statement_timeout = '5s' (an\n"
       "integer there is milliseconds, as in PostgreSQL). One minute stops a runaway\n"
       "query (an unbounded recursive WITH, a cross join) long before it matters and\n"
       "is far above an interactive query. \"<n>ms|s|m|h|d\"; 0 means no timeout.",
       VIGIL_NUM_(sql, statement_timeout_ms)},

      {"server", "listen", Kind::kAddress, 0, 0, "Where `vigil serve` listens, \"host:port\"; `--listen` overrides it.",
       VIGIL_STR_(server, listen)},

      {"server", "max_connections", Kind::kCount, 1, 65'536,
       "Connections served at once (one thread each); one more is answered 503\n"
       "and closed.",
       VIGIL_NUM_(server, max_connections)},

      {"server", "max_body_bytes", Kind::kSize, 1024, kTiB,
       "The longest request body, chunked or not (413 past it); uploads are streamed\n"
       "to a spool file, never held in memory.",
       VIGIL_NUM_(server, max_body_bytes)},

      {"server", "header_timeout", Kind::kDurationMs, 100, kHour * 1000,
       "A request's whole header must arrive in this (and, between requests on one\n"
       "connection, the next one's); past it the connection is closed, so clients\n"
       "sending a line now and then cannot hold connections. \"<n>ms|s|m|h\".",
       VIGIL_NUM_(server, header_timeout_ms)},

      {"server", "body_grace", Kind::kDurationMs, 0, kHour * 1000,
       "A request body may take this long plus one second per\n"
       "min_body_bytes_per_second received; a slower sender is cut off.",
       VIGIL_NUM_(server, body_grace_ms)},

      {"server", "min_body_bytes_per_second", Kind::kSize, 1, kGiB,
       "The slowest steady upload rate kept (after body_grace); e.g. \"64KiB\".",
       VIGIL_NUM_(server, min_body_bytes_per_second)},

      {"server", "write_timeout", Kind::kDurationMs, 100, kHour * 1000,
       "Each write of an answer (a whole body, or one chunk of a stream) must be\n"
       "taken by the client in this; a client that stops reading is cut off.",
       VIGIL_NUM_(server, write_timeout_ms)},

      {"server", "sessions", Kind::kCount, 1, 256,
       "SQL sessions serving requests at once; each holds its own select engine.\n"
       "A request waiting longer than 30 s for one is answered 503.",
       VIGIL_NUM_(server, sessions)},

      {"server", "idempotency_ttl_seconds", Kind::kDuration, 60, 365 * kDay,
       "How long a finished request's Idempotency-Key is remembered and replayed.",
       VIGIL_NUM_(server, idempotency_ttl_seconds)},

      {"server", "require_idempotency_key", Kind::kBool, 0, 1,
       "Resource mutations (POST, PUT, DELETE under /v1 except /v1/sql) without an\n"
       "Idempotency-Key header are refused with 400.",
       VIGIL_BOOL_(server, require_idempotency_key)},

      {"server", "sse_max_subscribers", Kind::kCount, 1, 100'000,
       "Job event streams (GET /v1/jobs/{id}/events) open at once; one more is 503.",
       VIGIL_NUM_(server, sse_max_subscribers)},

      {"server", "requests_per_second_per_user", Kind::kCount, 0, 1'000'000,
       "Requests each user may make per second, after a burst of as many at once;\n"
       "past it a request is answered 429 with Retry-After, before it does anything.\n"
       "Other users are not slowed. 0: no limit.",
       VIGIL_NUM_(server, requests_per_second_per_user)},

      {"server", "tls_cert_file", Kind::kPath, 0, 0,
       "PEM certificate chain; with tls_key_file the server speaks HTTPS only.", VIGIL_STR_(server, tls_cert_file)},

      {"server", "tls_key_file", Kind::kPath, 0, 0, "PEM private key of tls_cert_file.",
       VIGIL_STR_(server, tls_key_file)},

      {"meta", "url", Kind::kDatabaseUrl, 0, 0,
       "The metadata store every process of this root shares: jobs, leases, nodes,\n"
       "users and idempotency records. Empty: `_meta/vigil.db` (SQLite) in the root.\n"
       "\"postgresql://user@host:port/db\" lets several `vigil serve` nodes on one data\n"
       "directory share it; the password comes from ~/.pgpass or PGPASSWORD, never\n"
       "from this file.",
       VIGIL_STR_(meta, url)},

      {"lance", "node", Kind::kPath, 0, 0,
       "The Node executable that runs the Lance runner of external Lance tables\n"
       "(CREATE EXTERNAL TABLE ... ENGINE = lance) in the isolated worker.",
       VIGIL_STR_(lance, node)},

      {"lance", "runner", Kind::kPath, 0, 0,
       "The Lance runner program (lance_runner.mjs, with its node_modules beside it).\n"
       "Empty: the one in this build's source tree, src/lance/runner.",
       VIGIL_STR_(lance, runner)},

      {"lance", "read_timeout_seconds", Kind::kDuration, 1, 3600,
       "How long a read of an external Lance dataset may take (CREATE EXTERNAL TABLE's\n"
       "probe, SHOW INDEX, vigil_indexes / vigil_index_entries, an index request's\n"
       "admission); past it the runner is killed and the statement fails with\n"
       "DEADLINE_EXCEEDED. Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(lance, read_timeout_seconds)},
  };
  return kSettings;
}

#undef VIGIL_NUM_
#undef VIGIL_BOOL_
#undef VIGIL_STR_
#undef VIGIL_LIST_

constexpr std::string_view kSections[] = {"mutation", "worker", "caps", "jobs", "generations",
                                          "sql",      "server", "meta", "lance"};

const Setting* FindSetting(std::string_view section, std::string_view name) {
  for (const Setting& s : Settings()) {
    if (s.section == section && s.name == name) return &s;
  }
  return nullptr;
}

std::string FormatNumber(const Setting& s, uint64_t v) {
  switch (s.kind) {
    case Kind::kSize:
      return FormatSize(v);
    case Kind::kDuration:
      return FormatDuration(v);
    case Kind::kDurationMs:
      return FormatDurationMs(v);
    default:
      return std::to_string(v);
  }
}

std::string TomlString(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out + "\"";
}

// The value as a TOML literal.
std::string RenderValue(const Setting& s, const Config& c) {
  switch (s.kind) {
    case Kind::kBool:
      return s.get_bool(c) ? "true" : "false";
    case Kind::kCount:
      return std::to_string(s.get_num(c));
    case Kind::kSize:
    case Kind::kDuration: {
      std::string f = FormatNumber(s, s.get_num(c));
      // Plain byte or second counts render as integers.
      if (!f.empty() && f.back() >= '0' && f.back() <= '9') return f;
      return "\"" + f + "\"";
    }
    case Kind::kDurationMs: {
      std::string f = FormatNumber(s, s.get_num(c));
      return f == "0" ? f : "\"" + f + "\"";
    }
    case Kind::kPath:
    case Kind::kAddress:
    case Kind::kDatabaseUrl:
      return TomlString(s.get_str(c));
    case Kind::kPathList: {
      std::string out = "[";
      for (const std::string& p : s.get_list(c)) out += (out.size() > 1 ? ", " : "") + TomlString(p);
      return out + "]";
    }
  }
  return "";
}

std::string_view TypeName(toml::node_type t) {
  switch (t) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

std::string Pos(const std::string& path, const toml::source_region& r) {
  if (r.begin.line == 0) return path;
  return path + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

Status Bad(const std::string& where, std::string_view key, const std::string& problem) {
  return Status::InvalidArgument(where + ": " + std::string(key) + ": " + problem);
}

Status CheckRange(const Setting& s, uint64_t v) {
  if (v < s.min || v > s.max) {
    std::string range = FormatNumber(s, s.min) + ".." + FormatNumber(s, s.max);
    return Status::InvalidArgument("must be in " + range + " (got " + FormatNumber(s, v) + ")");
  }
  return Status::OK();
}

std::string ExpectedOf(const Setting& s) {
  switch (s.kind) {
    case Kind::kBool:
      return "true or false";
    case Kind::kCount:
      return s.min > 0 ? "a positive integer" : "a non-negative integer";
    case Kind::kSize:
      return "an integer (bytes) or a size string like \"8GiB\"";
    case Kind::kDuration:
      return "an integer (seconds) or a duration string like \"30s\", \"10m\", \"7d\"";
    case Kind::kDurationMs:
      return "a duration string like \"500ms\", \"60s\", \"5m\", or 0 (no timeout)";
    case Kind::kPath:
      return "a string";
    case Kind::kAddress:
      return "a string \"host:port\" like \"127.0.0.1:7431\"";
    case Kind::kPathList:
      return "an array of absolute paths like [\"/srv/imports\"]";
    case Kind::kDatabaseUrl:
      return "a string \"postgresql://user@host:port/db\" or \"\"";
  }
  return "";
}

// One entry of a kPathList: absolute, printable, without '..' components.
Status CheckListedPath(const std::string& p) {
  if (p.empty() || p.front() != '/') return Status::InvalidArgument("must be an absolute path (got \"" + p + "\")");
  if (p.size() > 4096) return Status::InvalidArgument("is not a usable path (longer than 4096 bytes)");
  for (char ch : p) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      return Status::InvalidArgument("is not a usable path (it holds a control character)");
    }
  }
  if ((p + "/").find("/../") != std::string::npos) {
    return Status::InvalidArgument("must not contain '..' (got \"" + p + "\")");
  }
  return Status::OK();
}

// Applies one value node to `c`; the message has no position (the caller adds it).
// `at` is set to the element of an array at fault.
Status Apply(const Setting& s, const toml::node& v, Config* c, const toml::node** at) {
  std::string wrong = "expected " + ExpectedOf(s) + ", got " + std::string(TypeName(v.type()));
  switch (s.kind) {
    case Kind::kPathList: {
      const toml::array* array = v.as_array();
      if (array == nullptr) return Status::InvalidArgument(wrong);
      if (array->size() > s.max) {
        return Status::InvalidArgument("has " + std::to_string(array->size()) + " entries; at most " +
                                       std::to_string(s.max) + " are allowed");
      }
      std::vector<std::string> paths;
      for (const toml::node& e : *array) {
        *at = &e;
        const std::string entry = "entry " + std::to_string(paths.size() + 1) + " ";
        if (!e.is_string()) {
          return Status::InvalidArgument(entry + "is " + std::string(TypeName(e.type())) + "; expected a string");
        }
        Status st = CheckListedPath(e.as_string()->get());
        if (!st.ok()) return Status::InvalidArgument(entry + st.message());
        paths.push_back(e.as_string()->get());
      }
      *at = nullptr;
      s.set_list(*c, std::move(paths));
      return Status::OK();
    }
    case Kind::kBool:
      if (!v.is_boolean()) return Status::InvalidArgument(wrong);
      s.set_bool(*c, v.as_boolean()->get());
      return Status::OK();
    case Kind::kDatabaseUrl: {
      if (!v.is_string()) return Status::InvalidArgument(wrong);
      VIGIL_RETURN_IF_ERROR(CheckMetaUrl(v.as_string()->get()));
      s.set_str(*c, v.as_string()->get());
      return Status::OK();
    }
    case Kind::kAddress: {
      if (!v.is_string()) return Status::InvalidArgument(wrong);
      VIGIL_RETURN_IF_ERROR(ParseListenAddress(v.as_string()->get()).status());
      s.set_str(*c, v.as_string()->get());
      return Status::OK();
    }
    case Kind::kPath: {
      if (!v.is_string()) return Status::InvalidArgument(wrong);
      const std::string& p = v.as_string()->get();
      if (!p.empty() && p != kCgroupParentV1) {
        if (p.front() != '/') {
          return Status::InvalidArgument("must be empty, \"v1\" or an absolute path (got \"" + p + "\")");
        }
        if (p.size() > 4096 || p.find('\0') != std::string::npos) {
          return Status::InvalidArgument("is not a usable path");
        }
        if (("/" + p + "/").find("/../") != std::string::npos) {
          return Status::InvalidArgument("must not contain '..' (got \"" + p + "\")");
        }
      }
      s.set_str(*c, p);
      return Status::OK();
    }
    case Kind::kDurationMs: {
      uint64_t n = 0;
      if (v.is_integer() && v.as_integer()->get() == 0) {
        n = 0;
      } else if (v.is_string()) {
        VIGIL_ASSIGN_OR_RETURN(n, ParseDurationMs(v.as_string()->get()));
      } else if (v.is_integer()) {
        return Status::InvalidArgument("a number needs a unit here (got " + std::to_string(v.as_integer()->get()) +
                                       "); expected " + ExpectedOf(s));
      } else {
        return Status::InvalidArgument(wrong);
      }
      VIGIL_RETURN_IF_ERROR(CheckRange(s, n));
      s.set_num(*c, n);
      return Status::OK();
    }
    case Kind::kCount:
    case Kind::kSize:
    case Kind::kDuration: {
      uint64_t n = 0;
      if (v.is_integer()) {
        int64_t i = v.as_integer()->get();
        if (i < 0 || (i == 0 && s.min > 0)) {
          return Status::InvalidArgument(std::string(s.min > 0 ? "must be positive" : "must not be negative") +
                                         " (got " + std::to_string(i) + "); allowed " + FormatNumber(s, s.min) + ".." +
                                         FormatNumber(s, s.max));
        }
        n = static_cast<uint64_t>(i);
      } else if (v.is_string() && s.kind != Kind::kCount) {
        Result<uint64_t> parsed =
            s.kind == Kind::kSize ? ParseSize(v.as_string()->get()) : ParseDuration(v.as_string()->get());
        if (!parsed.ok()) return parsed.status();
        n = *parsed;
      } else {
        return Status::InvalidArgument(wrong);
      }
      VIGIL_RETURN_IF_ERROR(CheckRange(s, n));
      s.set_num(*c, n);
      return Status::OK();
    }
  }
  return Status::Internal("unhandled setting kind");
}

// Rules between settings: (key the problem is reported at, problem).
std::optional<std::pair<std::string, std::string>> CrossCheck(const Config& c) {
  if (uint64_t{c.worker.pids_max} < uint64_t{c.worker.omp_threads} + kPidsHeadroom) {
    return std::make_pair(std::string("worker.pids_max"), "must be at least worker.omp_threads + " +
                                                              std::to_string(kPidsHeadroom) + " = " +
                                                              std::to_string(c.worker.omp_threads + kPidsHeadroom) +
                                                              " (got " + std::to_string(c.worker.pids_max) + ")");
  }
  if (c.caps.max_sub_vectors > c.caps.max_vector_dimension) {
    return std::make_pair(std::string("caps.max_sub_vectors"),
                          "must not exceed caps.max_vector_dimension = " + std::to_string(c.caps.max_vector_dimension) +
                              " (got " + std::to_string(c.caps.max_sub_vectors) + ")");
  }
  if (c.jobs.reconcile_max_backoff_seconds < c.jobs.reconcile_initial_backoff_seconds) {
    return std::make_pair(std::string("jobs.reconcile_max_backoff_seconds"),
                          "must be at least jobs.reconcile_initial_backoff_seconds = " +
                              FormatDuration(c.jobs.reconcile_initial_backoff_seconds) + " (got " +
                              FormatDuration(c.jobs.reconcile_max_backoff_seconds) + ")");
  }
  if (uint64_t{c.generations.physical_per_table} < uint64_t{c.generations.builders_per_table} + 2) {
    return std::make_pair(std::string("generations.physical_per_table"),
                          "must be at least generations.builders_per_table + 2 = " +
                              std::to_string(c.generations.builders_per_table + 2) + " (got " +
                              std::to_string(c.generations.physical_per_table) + ")");
  }
  return std::nullopt;
}

std::string KnownNames(std::string_view section) {
  std::string out;
  for (const Setting& s : Settings()) {
    if (s.section != section) continue;
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

std::string KnownSections() {
  std::string out;
  for (std::string_view s : kSections) {
    if (!out.empty()) out += ", ";
    out.append("[").append(s).append("]");
  }
  return out;
}

bool Less(const toml::source_position& a, const toml::source_position& b) {
  return a.line != b.line ? a.line < b.line : a.column < b.column;
}

// Splits "<digits><ws>*<unit>" and parses the number; InvalidArgument on overflow or no digits.
Status SplitNumber(std::string_view text, std::string_view what, uint64_t* number, std::string_view* unit) {
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  size_t start = i;
  uint64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) {
      return Status::InvalidArgument(std::string(what) + " \"" + std::string(text) + "\" is too large");
    }
    n = n * 10 + d;
    ++i;
  }
  if (i == start) {
    return Status::InvalidArgument(std::string(what) + " \"" + std::string(text.substr(0, 64)) +
                                   "\" must start with a non-negative whole number");
  }
  while (i < text.size() && text[i] == ' ') ++i;
  std::string_view u = text.substr(i);
  while (!u.empty() && u.back() == ' ') u.remove_suffix(1);
  *number = n;
  *unit = u;
  return Status::OK();
}

Result<uint64_t> Scale(std::string_view text, std::string_view what, uint64_t n, uint64_t mult) {
  if (mult != 0 && n > std::numeric_limits<uint64_t>::max() / mult) {
    return Status::InvalidArgument(std::string(what) + " \"" + std::string(text) + "\" is too large");
  }
  return n * mult;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  uint64_t n = 0;
  std::string_view unit;
  VIGIL_RETURN_IF_ERROR(SplitNumber(text, "size", &n, &unit));
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1}, {"B", 1}, {"KiB", kKiB}, {"MiB", kMiB}, {"GiB", kGiB}, {"TiB", kTiB}, {"PiB", kPiB}};
  for (const auto& u : kUnits) {
    if (u.first == unit) return Scale(text, "size", n, u.second);
  }
  return Status::InvalidArgument("size \"" + std::string(text.substr(0, 64)) + "\" has unknown unit '" +
                                 std::string(unit.substr(0, 16)) +
                                 "'; use B, KiB, MiB, GiB, TiB or PiB (binary units)");
}

Result<uint64_t> ParseDuration(std::string_view text) {
  uint64_t n = 0;
  std::string_view unit;
  VIGIL_RETURN_IF_ERROR(SplitNumber(text, "duration", &n, &unit));
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1}, {"s", 1}, {"m", kMinute}, {"h", kHour}, {"d", kDay}};
  for (const auto& u : kUnits) {
    if (u.first == unit) return Scale(text, "duration", n, u.second);
  }
  return Status::InvalidArgument("duration \"" + std::string(text.substr(0, 64)) + "\" has unknown unit '" +
                                 std::string(unit.substr(0, 16)) + "'; use s, m, h or d");
}

Result<uint64_t> ParseDurationMs(std::string_view text) {
  uint64_t n = 0;
  std::string_view unit;
  VIGIL_RETURN_IF_ERROR(SplitNumber(text, "duration", &n, &unit));
  if (unit.empty() && n == 0) return uint64_t{0};
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", kMinute * 1000}, {"h", kHour * 1000}, {"d", kDay * 1000}};
  for (const auto& u : kUnits) {
    if (u.first == unit) return Scale(text, "duration", n, u.second);
  }
  if (unit.empty()) {
    return Status::InvalidArgument("duration \"" + std::string(text.substr(0, 64)) +
                                   "\" needs a unit: ms, s, m, h or d");
  }
  return Status::InvalidArgument("duration \"" + std::string(text.substr(0, 64)) + "\" has unknown unit '" +
                                 std::string(unit.substr(0, 16)) + "'; use ms, s, m, h or d");
}

std::string FormatDurationMs(uint64_t ms) {
  if (ms == 0) return "0";
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  return FormatDuration(ms / 1000);
}

std::string FormatSize(uint64_t bytes) {
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"PiB", kPiB}, {"TiB", kTiB}, {"GiB", kGiB}, {"MiB", kMiB}, {"KiB", kKiB}};
  if (bytes == 0) return "0";
  for (const auto& u : kUnits) {
    if (bytes % u.second == 0) return std::to_string(bytes / u.second) + std::string(u.first);
  }
  return std::to_string(bytes);
}

std::string FormatDuration(uint64_t seconds) {
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {{"d", kDay}, {"h", kHour}, {"m", kMinute}};
  if (seconds == 0) return "0";
  for (const auto& u : kUnits) {
    if (seconds % u.second == 0) return std::to_string(seconds / u.second) + std::string(u.first);
  }
  return std::to_string(seconds) + "s";
}

Status ValidateConfig(const Config& config) {
  for (const Setting& s : Settings()) {
    if (s.kind == Kind::kBool) continue;
    if (s.kind == Kind::kAddress) {
      Status st = ParseListenAddress(s.get_str(config)).status();
      if (!st.ok()) return Bad("config", s.Key(), st.message());
      continue;
    }
    if (s.kind == Kind::kDatabaseUrl) {
      Status st = CheckMetaUrl(s.get_str(config));
      if (!st.ok()) return Bad("config", s.Key(), st.message());
      continue;
    }
    if (s.kind == Kind::kPath) {
      const std::string& p = s.get_str(config);
      if (!p.empty() && p != kCgroupParentV1 && p.front() != '/') {
        return Bad("config", s.Key(), "must be empty, \"v1\" or an absolute path");
      }
      continue;
    }
    if (s.kind == Kind::kPathList) {
      const std::vector<std::string>& paths = s.get_list(config);
      if (paths.size() > s.max) return Bad("config", s.Key(), "has more than " + std::to_string(s.max) + " entries");
      for (const std::string& p : paths) {
        Status st = CheckListedPath(p);
        if (!st.ok()) return Bad("config", s.Key(), st.message());
      }
      continue;
    }
    Status st = CheckRange(s, s.get_num(config));
    if (!st.ok()) return Bad("config", s.Key(), st.message());
  }
  if (auto problem = CrossCheck(config)) return Bad("config", problem->first, problem->second);
  return Status::OK();
}

Result<Config> ParseConfig(std::string_view text, const std::string& path, std::vector<std::string>* keys_set) {
  toml::parse_result parsed = toml::parse(text, std::string_view(path));
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return Status::InvalidArgument(Pos(path, e.source()) + ": syntax error: " + std::string(e.description()));
  }
  const toml::table& root = parsed.table();
  Config config;
  // Every set key with its position, to report cross-field errors and to list in file order.
  std::vector<std::pair<toml::source_position, std::string>> seen;
  std::map<std::string, toml::source_region> where;
  for (auto&& entry : root) {
    const toml::key& section = entry.first;
    const toml::node& node = entry.second;
    if (std::find(std::begin(kSections), std::end(kSections), section.str()) == std::end(kSections)) {
      return Status::InvalidArgument(Pos(path, section.source()) + ": unknown section [" + std::string(section.str()) +
                                     "]; known sections: " + KnownSections());
    }
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      return Bad(Pos(path, node.source()), section.str(),
                 "expected a table ([" + std::string(section.str()) + "]), got " + std::string(TypeName(node.type())));
    }
    for (auto&& kv : *table) {
      const toml::key& name = kv.first;
      const toml::node& value = kv.second;
      std::string key = std::string(section.str()) + "." + std::string(name.str());
      const Setting* s = FindSetting(section.str(), name.str());
      if (s == nullptr) {
        return Status::InvalidArgument(Pos(path, name.source()) + ": unknown setting " + key + "; known in [" +
                                       std::string(section.str()) + "]: " + KnownNames(section.str()));
      }
      const toml::node* at = nullptr;
      Status st = Apply(*s, value, &config, &at);
      if (!st.ok()) return Bad(Pos(path, at != nullptr ? at->source() : value.source()), key, st.message());
      seen.emplace_back(name.source().begin, key);
      where[key] = value.source();
    }
  }
  if (where.count("worker.omp_threads") == 0) config.worker.omp_threads = DefaultOmpThreads(config.worker.pids_max);
  if (auto problem = CrossCheck(config)) {
    auto it = where.find(problem->first);
    return Bad(it == where.end() ? path : Pos(path, it->second), problem->first, problem->second);
  }
  if (keys_set != nullptr) {
    std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return Less(a.first, b.first); });
    keys_set->clear();
    for (auto& k : seen) keys_set->push_back(std::move(k.second));
  }
  return config;
}

Result<Config> LoadConfig(const std::string& root_dir, ConfigSource* source) {
  std::string path = root_dir.empty() ? std::string(kConfigFile)
                                      : (root_dir.back() == '/' ? root_dir : root_dir + "/") + std::string(kConfigFile);
  if (source != nullptr) *source = ConfigSource{path, false, {}};
  Result<std::string> text = Env::Default()->fs()->ReadFile(path, kMaxConfigBytes);
  if (text.status().Is(StatusCode::kNotFound)) return Config{};
  if (text.status().Is(StatusCode::kResourceExhausted)) {
    return Status::ResourceExhausted(path + " is larger than " + FormatSize(kMaxConfigBytes));
  }
  VIGIL_RETURN_IF_ERROR(text.status());
  std::vector<std::string> keys;
  VIGIL_ASSIGN_OR_RETURN(Config config, ParseConfig(*text, path, &keys));
  if (source != nullptr) {
    source->file_found = true;
    source->keys_set = std::move(keys);
  }
  return config;
}

std::string RenderDefaultConfig() { return RenderConfig(Config()); }

std::string RenderConfig(const Config& config) {
  const Config defaults;
  std::string out =
      "# vigil.toml: administrator settings of this root (seed 000 section 10.2).\n"
      "#\n"
      "# Every setting is listed with its default, commented out; uncomment a line to\n"
      "# change it. Sizes are bytes or strings like \"8GiB\" (B, KiB, MiB, GiB, TiB,\n"
      "# PiB); durations are seconds or strings like \"30s\", \"10m\", \"1h\", \"7d\".\n"
      "# Unknown keys, wrong types and out-of-range values are errors; run\n"
      "# `vigil --root DIR doctor` to check this file and see the effective values.\n";
  std::string_view current;
  for (const Setting& s : Settings()) {
    if (s.section != current) {
      current = s.section;
      out += "\n[" + std::string(current) + "]\n";
    } else {
      out += "\n";
    }
    std::string_view help = s.help;
    while (!help.empty()) {
      size_t nl = help.find('\n');
      out += "# " + std::string(help.substr(0, nl)) + "\n";
      help = nl == std::string_view::npos ? std::string_view() : help.substr(nl + 1);
    }
    const std::string value = RenderValue(s, config);
    out += (value == RenderValue(s, defaults) ? "# " : "") + std::string(s.name) + " = " + value + "\n";
  }
  return out;
}

uint32_t UsableCores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<uint32_t>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

uint32_t DefaultOmpThreads(uint32_t pids_max) {
  const uint64_t room = pids_max > kPidsHeadroom ? pids_max - kPidsHeadroom : 1;
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min({uint64_t{UsableCores()}, room, kMaxOmpThreads})));
}

std::vector<ConfigEntry> EffectiveSettings(const Config& config, const ConfigSource* source) {
  std::vector<ConfigEntry> out;
  for (const Setting& s : Settings()) {
    const std::string key = s.Key();
    std::string from = key == "worker.omp_threads" ? "default: usable cores" : "default";
    if (source != nullptr &&
        std::find(source->keys_set.begin(), source->keys_set.end(), key) != source->keys_set.end()) {
      from = std::string(kConfigFile);
    }
    out.push_back({key, RenderValue(s, config), std::move(from)});
  }
  return out;
}

Status CheckMetaUrl(std::string_view url) {
  if (url.empty()) return Status::OK();
  if (url.size() > 1024) return Status::InvalidArgument("is longer than 1024 bytes");
  const bool postgres = url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
  if (!postgres) {
    return Status::InvalidArgument("must be empty or start with postgresql:// (got \"" +
                                   std::string(url.substr(0, std::min<size_t>(url.find(':'), 32))) + ":...\")");
  }
  for (char ch : url) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) {
      return Status::InvalidArgument("holds a space or control character");
    }
  }
  const std::string_view rest = url.substr(url.find("//") + 2);
  const std::string_view authority = rest.substr(0, std::min(rest.find('/'), rest.find('?')));
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos) {
    return Status::InvalidArgument("holds a password; put it in ~/.pgpass or PGPASSWORD instead");
  }
  const std::string lower = AsciiLowered(url);
  if (lower.find("password=") != std::string::npos) {
    return Status::InvalidArgument("holds a password; put it in ~/.pgpass or PGPASSWORD instead");
  }
  return Status::OK();
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("listen address \"" + std::string(text.substr(0, 64)) + "\" " + why +
                                   " (want \"host:port\", e.g. \"127.0.0.1:7431\")");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("has no host");
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.size() > 253) return bad("has a host name longer than 253 bytes");
  for (char ch : host) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != ':') {
      return bad("has a character that is not allowed in a host name or address");
    }
  }
  if (port.empty() || port.size() > 5) return bad("has no port number");
  uint32_t value = 0;
  for (char ch : port) {
    if (ch < '0' || ch > '9') return bad("has a port that is not a number");
    value = value * 10 + static_cast<uint32_t>(ch - '0');
  }
  if (value > 65535) return bad("has a port above 65535");
  return ListenAddress{std::string(host), static_cast<uint16_t>(value)};
}

}  // namespace vigil

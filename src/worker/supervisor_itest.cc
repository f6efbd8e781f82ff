// The supervisor and vigil-worker end to end on real datasets: every failure
// mode of DESIGN.md section 6 maps to its classification input, the child is
// always reaped, the parent survives, secrets never leak, the worker dies with
// its parent, and cgroup placement works where the machine offers one.
#include "vigil/worker/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "index/ivf_pq_internal.h"
#include "testutil/temp_dir.h"
#include "vigil/common/config.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/file_system.h"
#include "vigil/index/index_spec.h"
#include "vigil/index/ivf_pq.h"
#include "vigil/index/provider.h"
#include "vigil/ingest/datagen.h"
#include "vigil/storage/dataset.h"

namespace vigil::worker {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDataset("docs", 2000, 16);
    options_.stderr_path = dir_.Join("worker.log");
  }

  // A new dataset db/<name>.vgl of `rows` rows with `dim`-d vectors; later jobs target it.
  void MakeDataset(const std::string& name, uint64_t rows, uint32_t dim, std::vector<std::string> columns = {}) {
    DatagenOptions o;
    o.rows = rows;
    o.dim = dim;
    o.latent_dim = std::min(dim, 4u);
    o.words_per_body = 8;
    o.columns = std::move(columns);
    auto gen = *DataGenerator::Make(o);
    path_ = dir_.Join("db/" + name + ".vgl");
    auto ds = *Dataset::Create(path_, gen->schema(), {});
    auto reader = gen->NewReader();
    auto appended = ds->Append(reader.get(), {});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    version_ = (*appended)->version();
    fingerprint_ = (*appended)->schema()->fingerprint();
  }

  // An IVF_PQ job on `emb` with these properties over the defaults of Job().
  LaunchRequest IvfJob(const std::string& name, const std::map<std::string, std::string>& properties) {
    LaunchRequest r = Job(name, "emb", index::IndexType::kIvfPq);
    auto ds = *Dataset::Open(path_, version_);
    const Field& emb = ds->schema()->field(*ds->schema()->IndexOf("emb"));
    std::map<std::string, std::string> p = {
        {"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "8"}, {"num_sub_vectors", "4"}};
    for (const auto& [k, v] : properties) p[k] = v;
    IndexCaps unlimited = kIndexCapsLimits;
    auto spec = index::ValidateIndexSpec(index::IndexType::kIvfPq, p, emb, ds->CountRows(),
                                         ds->manifest().fragments.size(), unlimited);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (spec.ok()) r.request.job.properties_json = index::SpecToPropertiesJson(*spec);
    return r;
  }

  std::unique_ptr<Supervisor> Make(SupervisorOptions options) {
    auto s = Supervisor::Create(std::move(options));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  LaunchRequest Job(const std::string& name, const std::string& column, index::IndexType type) {
    LaunchRequest r;
    r.request.attempt = {"node-a", 1, "7-" + name, 1, 1, 1, 0};
    r.request.job.job_id = 7;
    r.request.job.operation = index::JobOperation::kCreate;
    r.request.job.locator = path_;
    r.request.job.index_name = name;
    r.request.job.columns = {column};
    r.request.job.physical_type = std::string(index::IndexTypeName(type));
    index::IndexSpec spec;
    spec.type = type;
    if (type == index::IndexType::kIvfPq) {
      spec.ivf_pq.num_partitions = 8;
      spec.ivf_pq.num_sub_vectors = 4;
    }
    r.request.job.properties_json = index::SpecToPropertiesJson(spec);
    r.request.job.start_version = static_cast<int64_t>(version_);
    r.request.job.schema_fingerprint = fingerprint_;
    r.timeout = std::chrono::minutes(5);
    return r;
  }

  std::vector<VersionInfo> Versions() { return *Dataset::ListVersions(path_); }

  // Segment uuids referenced by any manifest of the dataset.
  std::set<std::string> ReferencedSegments() {
    std::set<std::string> out;
    for (const auto& v : Versions()) {
      auto ds = Dataset::Open(path_, v.version);
      EXPECT_TRUE(ds.ok());
      if (!ds.ok()) continue;
      for (const auto& s : (*ds)->manifest().segments) out.insert(s.uuid.ToString());
    }
    return out;
  }

  std::set<std::string> SegmentDirs() {
    auto names = DefaultFileSystem()->ListDir(JoinPath(path_, "_indices"));
    if (!names.ok()) return {};
    return std::set<std::string>(names->begin(), names->end());
  }

  static void ExpectKilledAndReaped(const LaunchResult& r, int sig) {
    EXPECT_TRUE(r.reaped);
    ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << r.wait_status;
    EXPECT_EQ(WTERMSIG(r.wait_status), sig);
    EXPECT_EQ(::kill(r.pid, 0), -1);  // no such process: it was reaped
  }

  testing::TempDir dir_;
  std::string path_;
  uint64_t version_ = 0;
  std::string fingerprint_;
  SupervisorOptions options_;
};

TEST_F(SupervisorTest, CreatesAnIndexReportsProgressAndHandsOverTheAttemptLock) {
  auto sup = Make(options_);
  ASSERT_TRUE(sup);
  std::string lock_path = dir_.Join("attempt.lock");
  auto lock = FileLock::Acquire(lock_path);
  ASSERT_TRUE(lock.ok());
  LaunchRequest req = Job("emb_idx", "emb", index::IndexType::kIvfPq);
  req.attempt_lock_fd = lock->fd();
  std::vector<Progress> progress;
  bool held_by_worker = false;
  req.on_progress = [&](const Progress& p) { progress.push_back(p); };
  req.on_launched = [&](pid_t) {
    // The supervisor lets go of its own descriptor: the worker's copy keeps the lock.
    lock->Release();
    held_by_worker = *FileLock::IsHeld(lock_path);
  };
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_FALSE(r.failed_before_request);
  EXPECT_TRUE(r.response.invoked);
  EXPECT_EQ(r.response.code, StatusCode::kOk) << r.response.message;
  ASSERT_TRUE(r.response.committed_version.has_value());
  EXPECT_EQ(r.response.attempt.attempt_id, "7-emb_idx");
  EXPECT_TRUE(r.reaped);
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 0);
  EXPECT_FALSE(progress.empty());
  EXPECT_TRUE(held_by_worker);
  EXPECT_FALSE(*FileLock::IsHeld(lock_path));  // the reaped worker took the lock with it
  auto versions = Versions();
  EXPECT_EQ(versions.back().version, static_cast<uint64_t>(*r.response.committed_version));
  EXPECT_EQ(versions.back().txn.attempt_id, "7-emb_idx");
  EXPECT_EQ(versions.back().txn.job_id, 7);
}

TEST_F(SupervisorTest, WorkerRunsUnderItsLimitsWithOnlyTheProtocolDescriptors) {
  SupervisorOptions o = options_;
  o.address_space_bytes = 3ull << 30;
  o.open_files = 200;
  auto sup = Make(o);
  // A descriptor this process leaks to children (no close-on-exec) must not reach the worker.
  int leaked = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 0);
  auto lock = FileLock::Acquire(dir_.Join("attempt.lock"));
  ASSERT_TRUE(lock.ok());
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.attempt_lock_fd = lock->fd();
  std::string limits;
  std::set<std::string> fds;
  std::string lock_target;
  req.on_launched = [&](pid_t pid) {
    std::string proc = "/proc/" + std::to_string(pid);
    limits = ReadAll(proc + "/limits");
    if (DIR* d = ::opendir((proc + "/fd").c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] != '.') fds.insert(e->d_name);
      }
      ::closedir(d);
    }
    char buf[4096];
    ssize_t len = ::readlink((proc + "/fd/6").c_str(), buf, sizeof buf);
    if (len > 0) lock_target.assign(buf, static_cast<size_t>(len));
  };
  LaunchResult r = sup->Run(std::move(req));
  ::close(leaked);
  ASSERT_TRUE(r.complete) << r.error.ToString();
  // stdin/stdout/stderr, protocol in/out, secret pipe, attempt lock: nothing else.
  EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2", "3", "4", "5", "6"}));
  EXPECT_EQ(lock_target, dir_.Join("attempt.lock"));
  auto limit_line = [&](const std::string& name) {
    size_t at = limits.find(name);
    return at == std::string::npos ? std::string() : limits.substr(at, limits.find('\n', at) - at);
  };
  EXPECT_NE(limit_line("Max core file size").find(" 0 "), std::string::npos) << limits;
  EXPECT_NE(limit_line("Max open files").find(" 200 "), std::string::npos) << limits;
  EXPECT_NE(limit_line("Max address space").find(std::to_string(3ull << 30)), std::string::npos) << limits;
}

TEST_F(SupervisorTest, ErrorBeforeInvocationIsACompleteNotInvokedResponse) {
  auto sup = Make(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.failpoints = "worker.before_invoke=error(IO_ERROR)";
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_FALSE(r.response.invoked);
  EXPECT_EQ(r.response.code, StatusCode::kIOError);
  EXPECT_TRUE(r.reaped);
  EXPECT_EQ(Versions().back().version, version_);
}

TEST_F(SupervisorTest, StaleSchemaIsRefusedBeforeInvocation) {
  auto sup = Make(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.job.schema_fingerprint = "not-the-admitted-schema";
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete);
  EXPECT_FALSE(r.response.invoked);
  EXPECT_EQ(r.response.code, StatusCode::kFailedPrecondition);
  EXPECT_NE(r.response.message.find("STALE_ADMISSION"), std::string::npos);
}

TEST_F(SupervisorTest, SilentKillBeforeInvocationIsUnknown) {
  auto sup = Make(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.failpoints = "worker.before_invoke=kill";
  LaunchResult r = sup->Run(std::move(req));
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.failed_before_request);  // the request was delivered: no proof either way
  ExpectKilledAndReaped(r, SIGKILL);
  EXPECT_EQ(Versions().back().version, version_);
}

TEST_F(SupervisorTest, KillAfterTheProviderReturnedIsUnknownButTheManifestCarriesTheAttempt) {
  auto sup = Make(options_);
  LaunchRequest req = Job("ts_idx", "ts", index::IndexType::kBtree);
  req.request.failpoints = "worker.after_provider=kill";
  LaunchResult r = sup->Run(std::move(req));
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.failed_before_request);
  ExpectKilledAndReaped(r, SIGKILL);
  auto versions = Versions();
  EXPECT_EQ(versions.back().version, version_ + 1);
  EXPECT_EQ(versions.back().txn.attempt_id, "7-ts_idx");
}

TEST_F(SupervisorTest, KillWithHalfWrittenSegmentNeverReachesAManifest) {
  auto sup = Make(options_);
  auto dirs_before = SegmentDirs();
  LaunchRequest req = Job("emb_idx", "emb", index::IndexType::kIvfPq);
  req.request.failpoints = "provider.after_segment_write=kill";
  LaunchResult r = sup->Run(std::move(req));
  EXPECT_FALSE(r.complete);
  ExpectKilledAndReaped(r, SIGKILL);
  auto dirs_after = SegmentDirs();
  std::vector<std::string> orphans;
  std::set_difference(dirs_after.begin(), dirs_after.end(), dirs_before.begin(), dirs_before.end(),
                      std::back_inserter(orphans));
  ASSERT_EQ(orphans.size(), 1u);  // the killed attempt's files are on disk...
  auto referenced = ReferencedSegments();
  EXPECT_EQ(referenced.count(orphans[0]), 0u);  // ...and in no manifest
  EXPECT_EQ(Versions().back().version, version_);
}

TEST_F(SupervisorTest, HangPastTheDeadlineIsKilledAndReaped) {
  auto sup = Make(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.failpoints = "worker.before_invoke=hang";
  req.timeout = std::chrono::milliseconds(3000);
  LaunchResult r = sup->Run(std::move(req));
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.failed_before_request);
  EXPECT_TRUE(r.deadline_exceeded);
  EXPECT_EQ(r.error.code(), StatusCode::kDeadlineExceeded);
  ExpectKilledAndReaped(r, SIGKILL);
}

TEST_F(SupervisorTest, AllocationBeyondTheMemoryLimitFailsOnlyTheWorker) {
  SupervisorOptions o = options_;
  o.address_space_bytes = 2ull << 30;
  auto sup = Make(o);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.failpoints = "worker.allocate=error";
  LaunchResult r = sup->Run(std::move(req));
  EXPECT_TRUE(r.reaped);
  if (r.complete) {
    // Typed, after invocation: classified UNKNOWN by the job layer.
    EXPECT_TRUE(r.response.invoked);
    EXPECT_EQ(r.response.code, StatusCode::kResourceExhausted) << r.response.message;
    EXPECT_NE(r.response.message.find("memory limit worker.memory_bytes = 2GiB"), std::string::npos)
        << r.response.message;
  } else {
    EXPECT_FALSE(r.failed_before_request);
  }
  // The supervisor is unharmed and runs the next worker.
  LaunchResult next = sup->Run(Job("cat_idx", "category", index::IndexType::kBitmap));
  ASSERT_TRUE(next.complete) << next.error.ToString();
  EXPECT_EQ(next.response.code, StatusCode::kOk);
}

TEST_F(SupervisorTest, AdmittedCapsTravelWithTheRequestAndAreRevalidatedBeforeInvocation) {
  // A 4608-d column: beyond the default caps.max_vector_dimension (4096).
  MakeDataset("wide", 300, 4608, {"id", "emb"});
  auto sup = Make(options_);
  ASSERT_TRUE(sup);
  const std::map<std::string, std::string> props = {
      {"num_partitions", "2"}, {"num_sub_vectors", "8"}, {"max_iterations", "2"}};

  // Admitted under raised caps: the worker honours them and builds.
  LaunchRequest raised = IvfJob("wide_idx", props);
  raised.request.job.caps.max_vector_dimension = 8192;
  LaunchResult built = sup->Run(std::move(raised));
  ASSERT_TRUE(built.complete) << built.error.ToString();
  EXPECT_TRUE(built.response.invoked);
  EXPECT_EQ(built.response.code, StatusCode::kOk) << built.response.message;
  EXPECT_EQ(Versions().back().version, static_cast<uint64_t>(*built.response.committed_version));

  // Caps that do not admit the request: refused before invocation, a proof of no commit.
  LaunchRequest plain = IvfJob("wide_again", props);
  LaunchResult stale = sup->Run(std::move(plain));
  ASSERT_TRUE(stale.complete) << stale.error.ToString();
  EXPECT_FALSE(stale.response.invoked);
  EXPECT_EQ(stale.response.code, StatusCode::kFailedPrecondition);
  EXPECT_NE(stale.response.message.find("STALE_ADMISSION: the request is not valid at version"), std::string::npos)
      << stale.response.message;
  EXPECT_NE(stale.response.message.find("caps.max_vector_dimension = 4096"), std::string::npos)
      << stale.response.message;

  // Caps beyond what this build can honour: the same.
  LaunchRequest beyond = IvfJob("wide_beyond", props);
  beyond.request.job.caps.max_vector_dimension = kIndexCapsLimits.max_vector_dimension + 1;
  LaunchResult refused = sup->Run(std::move(beyond));
  ASSERT_TRUE(refused.complete) << refused.error.ToString();
  EXPECT_FALSE(refused.response.invoked);
  EXPECT_EQ(refused.response.code, StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.response.message.find("STALE_ADMISSION: the admitted caps cannot be honoured"), std::string::npos)
      << refused.response.message;
  EXPECT_EQ(Versions().back().version, static_cast<uint64_t>(*built.response.committed_version));
}

TEST_F(SupervisorTest, TrainingParametersReachTheWorkersBuild) {
  auto sup = Make(options_);
  ASSERT_TRUE(sup);
  LaunchRequest req = IvfJob("emb_idx", {{"max_iterations", "3"}, {"sample_rate", "100"}});
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  ASSERT_EQ(r.response.code, StatusCode::kOk) << r.response.message;
  auto ds = *Dataset::Open(path_);
  const IndexSegmentMeta& meta = ds->manifest().segments.at(0);
  EXPECT_EQ(meta.properties_json,
            R"({"max_iterations":3,"metric_type":"l2","num_bits":8,"num_partitions":8,"num_sub_vectors":4,)"
            R"("sample_rate":100})");
  auto seg = index::OpenSegment(DefaultFileSystem(), path_, ds->manifest(), meta);
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  const index::IvfPqModel& built = static_cast<const index::IvfPqSegment&>(**seg).model();
  // The same training in this process: 3 iterations over 100 rows per partition, not the defaults.
  auto base = *Dataset::Open(path_, version_);
  const Field& emb = base->schema()->field(*base->schema()->IndexOf("emb"));
  std::vector<uint32_t> frags;
  for (const auto& f : base->manifest().fragments) frags.push_back(f.id);
  index::IvfPqParams p;
  p.num_partitions = 8;
  p.num_sub_vectors = 4;
  p.max_iterations = 3;
  p.sample_rate = 100;
  EXPECT_EQ(built.centroids, index::TrainIvfPq(*base, emb, frags, p, nullptr)->centroids);
  EXPECT_NE(built.centroids,
            index::TrainIvfPq(*base, emb, frags, index::IvfPqParams{index::Metric::kL2, 8, 4}, nullptr)->centroids);
}

TEST_F(SupervisorTest, ProviderOutOfMemoryNamesTheMemorySetting) {
  // IVF_PQ over 5000 partitions x 64 sub-vectors precomputes a 5000 x 64 x 256 float table
  // (~330 MB): more than the worker's address space holds.
  MakeDataset("oom", 5000, 64, {"id", "emb"});
  SupervisorOptions o = options_;
  o.address_space_bytes = 256ull << 20;
  auto sup = Make(o);
  ASSERT_TRUE(sup);
  LaunchRequest req =
      IvfJob("emb_idx",
             {{"num_partitions", "5000"}, {"num_sub_vectors", "64"}, {"max_iterations", "1"}, {"sample_rate", "1"}});
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_TRUE(r.response.invoked);
  EXPECT_EQ(r.response.code, StatusCode::kResourceExhausted) << r.response.message;
  EXPECT_NE(r.response.message.find("the worker ran out of memory under its memory limit worker.memory_bytes = "
                                    "256MiB (RLIMIT_AS); raise worker.memory_bytes in vigil.toml"),
            std::string::npos)
      << r.response.message;
  EXPECT_EQ(r.response.message.find("INTERNAL"), std::string::npos) << r.response.message;
}

// Threads of the worker seen at each progress report of a run of `req`.
size_t MostThreadsDuring(Supervisor* sup, LaunchRequest req, LaunchResult* result) {
  pid_t worker = -1;
  size_t most = 0;
  req.on_launched = [&](pid_t pid) { worker = pid; };
  req.on_progress = [&](const Progress&) {
    DIR* d = ::opendir(("/proc/" + std::to_string(worker) + "/task").c_str());
    if (d == nullptr) return;
    size_t n = 0;
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
    most = std::max(most, n);
  };
  *result = sup->Run(std::move(req));
  return most;
}

TEST_F(SupervisorTest, OmpThreadsBoundTheBuildsThreads) {
  // The provider runs OpenMP threads from kIvfPqParallelMinRows rows on.
  MakeDataset("big", index::kIvfPqParallelMinRows + 1000, 16, {"id", "emb"});
  for (int threads : {1, 2}) {
    SupervisorOptions o = options_;
    o.omp_threads = threads;
    auto sup = Make(o);
    ASSERT_TRUE(sup);
    LaunchResult r;
    size_t most =
        MostThreadsDuring(sup.get(), IvfJob("emb_idx_" + std::to_string(threads), {{"max_iterations", "2"}}), &r);
    ASSERT_TRUE(r.complete) << r.error.ToString();
    ASSERT_EQ(r.response.code, StatusCode::kOk) << r.response.message;
    if (threads == 1) {
      EXPECT_EQ(most, 1u) << "worker.omp_threads = 1 ran more threads";
    }
    if (threads == 2 && UsableCores() > 1) {
      EXPECT_GE(most, 2u) << "the build never ran an OpenMP thread";
    }
  }
}

TEST_F(SupervisorTest, OmpThreadsBoundTheFtsBuildsThreads) {
  // An FTS build indexes its native postings on a second thread when it may use two.
  MakeDataset("texts", 20000, 4, {"id", "body"});
  for (int threads : {1, 2}) {
    SupervisorOptions o = options_;
    o.omp_threads = threads;
    auto sup = Make(o);
    ASSERT_TRUE(sup);
    LaunchResult r;
    size_t most =
        MostThreadsDuring(sup.get(), Job("body_idx_" + std::to_string(threads), "body", index::IndexType::kFts), &r);
    ASSERT_TRUE(r.complete) << r.error.ToString();
    ASSERT_EQ(r.response.code, StatusCode::kOk) << r.response.message;
    if (threads == 1) {
      EXPECT_EQ(most, 1u) << "worker.omp_threads = 1 ran more threads";
    }
    if (threads == 2 && UsableCores() > 1) {
      EXPECT_EQ(most, 2u) << "the postings were not indexed beside FTS5";
    }
  }
}

TEST_F(SupervisorTest, AbortIsUnknownWithoutACoreDump) {
  auto sup = Make(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.failpoints = "worker.abort=error";
  LaunchResult r = sup->Run(std::move(req));
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.failed_before_request);
  ExpectKilledAndReaped(r, SIGABRT);
  EXPECT_FALSE(WCOREDUMP(r.wait_status));  // RLIMIT_CORE=0
}

TEST_F(SupervisorTest, CorruptOrForeignResponsesAreUnknown) {
  auto sup = Make(options_);
  for (const char* fp : {"worker.response_corrupt=error", "worker.response_identity=error"}) {
    LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
    req.request.failpoints = std::string(fp) + ";worker.before_invoke=error(INTERNAL)";
    LaunchResult r = sup->Run(std::move(req));
    EXPECT_FALSE(r.complete) << fp;
    EXPECT_FALSE(r.failed_before_request) << fp;
    EXPECT_EQ(r.error.code(), StatusCode::kCorruption) << fp << ": " << r.error.ToString();
    EXPECT_TRUE(r.reaped);
  }
}

TEST_F(SupervisorTest, LaunchFailuresProveNonInvocation) {
  EXPECT_EQ(Supervisor::Create({.worker_path = dir_.Join("missing")}).status().code(), StatusCode::kNotFound);
  // An executable that is not a program: exec fails, reported through the exec-status pipe.
  std::string bogus = dir_.Join("bogus-worker");
  std::ofstream(bogus) << "\x7f"
                          "ELF not really";
  ::chmod(bogus.c_str(), 0755);
  SupervisorOptions o = options_;
  o.worker_path = bogus;
  auto sup = Make(o);
  LaunchResult r = sup->Run(Job("cat_idx", "category", index::IndexType::kBitmap));
  EXPECT_TRUE(r.failed_before_request);
  EXPECT_FALSE(r.complete);
  EXPECT_TRUE(r.reaped);
  // A program that exits without a handshake.
  o.worker_path = "/bin/true";
  auto sup2 = Make(o);
  LaunchResult r2 = sup2->Run(Job("cat_idx", "category", index::IndexType::kBitmap));
  EXPECT_TRUE(r2.failed_before_request) << r2.error.ToString();
  EXPECT_TRUE(r2.reaped);
}

TEST_F(SupervisorTest, ASecondConcurrentRunIsRefusedAsBusyBeforeLaunch) {
  auto sup = Make(options_);
  std::promise<void> launched;
  std::thread first([&] {
    LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
    req.request.failpoints = "worker.before_invoke=hang";
    req.timeout = std::chrono::milliseconds(3000);
    req.on_launched = [&](pid_t) { launched.set_value(); };
    LaunchResult r = sup->Run(std::move(req));
    EXPECT_TRUE(r.deadline_exceeded);
  });
  launched.get_future().wait();
  LaunchResult busy = sup->Run(Job("ts_idx", "ts", index::IndexType::kBtree));
  EXPECT_TRUE(busy.failed_before_request);
  EXPECT_EQ(busy.error.code(), StatusCode::kBusy);
  first.join();
}

TEST_F(SupervisorTest, SecretNeverReachesArgvEnvironmentLogsOrTheResponse) {
  const std::string secret = "AKIAvigilTopSecret0042";
  auto sup = Make(options_);
  // The drop of a missing index named like the secret puts it into the provider's
  // message; the worker must scrub it from the response.
  LaunchRequest req = Job(secret, "category", index::IndexType::kBitmap);
  req.request.job.operation = index::JobOperation::kDrop;
  req.request.job.physical_type.clear();
  req.secret = secret;
  std::string cmdline, environ;
  req.on_launched = [&](pid_t pid) {
    cmdline = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    environ = ReadAll("/proc/" + std::to_string(pid) + "/environ");
  };
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_TRUE(r.response.invoked);
  EXPECT_EQ(r.response.code, StatusCode::kNotFound);
  EXPECT_NE(r.response.message.find("***"), std::string::npos) << r.response.message;
  EXPECT_EQ(r.response.message.find(secret), std::string::npos);
  ASSERT_FALSE(cmdline.empty());  // root reads /proc of a non-dumpable process
  EXPECT_NE(cmdline.find("--parent="), std::string::npos);
  EXPECT_EQ(cmdline.find(secret), std::string::npos);
  EXPECT_NE(environ.find("MALLOC_ARENA_MAX=2"), std::string::npos);
  EXPECT_NE(environ.find("OPENBLAS_NUM_THREADS=1"), std::string::npos);
  EXPECT_EQ(environ.find("VIGIL_FAILPOINTS"), std::string::npos);
  EXPECT_EQ(environ.find(secret), std::string::npos);
  EXPECT_EQ(ReadAll(options_.stderr_path).find(secret), std::string::npos);
}

TEST_F(SupervisorTest, AnnouncedSecretIsReadBeforeTheProviderCall) {
  // A request announcing a secret gets past the secret pipe only when it arrived
  // (an empty pipe would be a complete invoked=false INVALID_ARGUMENT).
  auto sup = Make(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.secret = "x";
  req.request.failpoints = "worker.before_invoke=error(PERMISSION_DENIED)";
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete);
  EXPECT_FALSE(r.response.invoked);
  EXPECT_EQ(r.response.code, StatusCode::kPermissionDenied);  // the secret did arrive
}

TEST_F(SupervisorTest, WorkerDiesWithItsParent) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // orphans come back to this process
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  // The worker's first progress report proves it read the whole request, so the
  // parent's death can only reach it as the parent-death signal, never as a request
  // cut short; it then holds after its provider until that signal.
  req.request.failpoints = "worker.after_provider=hang";
  pid_t middle = ::fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {
    ::close(p[0]);
    auto sup = Supervisor::Create(options_);
    if (!sup.ok()) ::_exit(1);
    pid_t launched = -1;
    req.on_launched = [&](pid_t pid) { launched = pid; };
    req.on_progress = [&](const Progress&) {
      if (launched < 0) return;
      ssize_t n = ::write(p[1], &launched, sizeof launched);
      (void)n;
      launched = -1;
    };
    LaunchResult r = (*sup)->Run(std::move(req));
    // Only reached when the launch ended before the hang: say why on the test's stderr.
    std::fprintf(stderr, "the launch ended: %s\n", r.error.ToString().c_str());
    ::_exit(2);
  }
  ::close(p[1]);
  pid_t worker = 0;
  const ssize_t got_pid = ::read(p[0], &worker, sizeof worker);
  ::close(p[0]);
  if (got_pid != static_cast<ssize_t>(sizeof worker)) {
    int middle_status = 0;
    ::waitpid(middle, &middle_status, 0);
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    FAIL() << "no worker was launched; the launching process exited with "
           << (WIFEXITED(middle_status) ? WEXITSTATUS(middle_status) : -1) << " (1: Create failed; 2: see stderr)";
  }
  ASSERT_EQ(::kill(middle, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(middle, &status, 0), middle);
  // The orphaned worker is ours to reap now; it must end by its parent-death signal.
  pid_t got = 0;
  for (int i = 0; i < 6000 && got == 0; ++i) {
    got = ::waitpid(worker, &status, WNOHANG);
    if (got == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (got == 0) {
    ::kill(worker, SIGKILL);
    ::waitpid(worker, &status, 0);
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  ASSERT_EQ(got, worker) << "the worker outlived its parent";
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST_F(SupervisorTest, WorkerRefusesAForeignParentAndABadCommandLine) {
  // Started by a shell, not by the supervisor named on its command line.
  std::string worker = DefaultWorkerPath();
  int st = std::system((worker + " --in=0 --out=1 --secret=0 --parent=1 </dev/null >/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), kExitParentGone);
  st = std::system((worker + " --bogus </dev/null >/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), kExitUsage);
}

TEST_F(SupervisorTest, RequireCgroupRefusesWhereNoneIsUsable) {
  SupervisorOptions o = options_;
  o.require_cgroup = true;
  o.cgroup.parent = dir_.Join("not-a-cgroup");
  EXPECT_EQ(Supervisor::Create(o).status().code(), StatusCode::kFailedPrecondition);
  o.cgroup.parent.clear();
  EXPECT_EQ(Supervisor::Create(o).status().code(), StatusCode::kFailedPrecondition);
  o.require_cgroup = false;
  auto sup = Make(o);
  ASSERT_TRUE(sup);
  EXPECT_FALSE(sup->uses_cgroup());
  EXPECT_TRUE(sup->CheckCapability().ok());
}

// Cgroup placement: v1 below this process's own cgroups, or a delegated v2 parent
// named by VIGIL_TEST_CGROUP_V2_PARENT.
class SupervisorCgroupTest : public SupervisorTest, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string Parent() {
    if (GetParam() == "v1") return std::string(kCgroupV1Self);
    const char* v2 = std::getenv("VIGIL_TEST_CGROUP_V2_PARENT");
    return v2 != nullptr ? v2 : "";
  }
  // Skips (with the reason) unless a worker cgroup really works here.
  bool Usable() {
    CgroupOptions c;
    c.parent = Parent();
    if (c.parent.empty()) {
      skip_reason_ = "no delegated cgroup v2 parent (set VIGIL_TEST_CGROUP_V2_PARENT to one)";
      return false;
    }
    Status st = ProbeCgroup(c);
    skip_reason_ = "no writable " + GetParam() + " cgroup for workers: " + st.ToString();
    return st.ok();
  }
  std::string skip_reason_;
};

TEST_P(SupervisorCgroupTest, WorkerRunsInItsOwnCgroupWhichIsRemovedAfterTheReap) {
  if (!Usable()) GTEST_SKIP() << skip_reason_;
  SupervisorOptions o = options_;
  o.cgroup.parent = Parent();
  o.require_cgroup = true;
  auto sup = Make(o);
  ASSERT_TRUE(sup);
  EXPECT_TRUE(sup->uses_cgroup());
  std::string cgroups;
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.on_launched = [&](pid_t pid) { cgroups = ReadAll("/proc/" + std::to_string(pid) + "/cgroup"); };
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_EQ(r.response.code, StatusCode::kOk);
  EXPECT_TRUE(r.in_cgroup);
  std::string name = "vigil-worker-" + std::to_string(::getpid()) + "-";
  EXPECT_NE(cgroups.find(name), std::string::npos) << cgroups;
  auto placement = ResolveCgroup(Parent());
  ASSERT_TRUE(placement.ok());
  for (const auto& parent : placement->parent_dirs) {
    auto names = DefaultFileSystem()->ListDir(parent);
    ASSERT_TRUE(names.ok());
    for (const auto& n : *names) EXPECT_EQ(n.find(name), std::string::npos) << parent << "/" << n;
  }
}

TEST_P(SupervisorCgroupTest, MemoryLimitOfTheCgroupEndsTheWorkerNotTheParent) {
  if (!Usable()) GTEST_SKIP() << skip_reason_;
  SupervisorOptions o = options_;
  o.cgroup.parent = Parent();
  o.cgroup.memory_max_bytes = 256ull << 20;
  o.address_space_bytes = 0;  // only the cgroup limits memory here
  auto sup = Make(o);
  ASSERT_TRUE(sup);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.failpoints = "worker.allocate=error";
  LaunchResult r = sup->Run(std::move(req));
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.failed_before_request);
  ExpectKilledAndReaped(r, SIGKILL);
  EXPECT_TRUE(r.oom_killed) << r.error.ToString();
  EXPECT_NE(r.error.message().find("its memory.max is worker.memory_bytes = 256MiB"), std::string::npos)
      << r.error.ToString();
}

TEST_P(SupervisorCgroupTest, CleanupIsIdempotent) {
  if (!Usable()) GTEST_SKIP() << skip_reason_;
  auto placement = ResolveCgroup(Parent());
  ASSERT_TRUE(placement.ok());
  auto cg = WorkerCgroup::Create(*placement, "vigil-worker-" + std::to_string(::getpid()) + "-idem", 64 << 20, 16);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  std::vector<std::string> dirs = cg->dirs();
  ASSERT_FALSE(dirs.empty());
  for (const auto& d : dirs) EXPECT_EQ(::access(d.c_str(), F_OK), 0) << d;
  EXPECT_TRUE(cg->Remove().ok());
  EXPECT_TRUE(cg->Remove().ok());
  for (const auto& d : dirs) EXPECT_NE(::access(d.c_str(), F_OK), 0) << d;
}

INSTANTIATE_TEST_SUITE_P(Hierarchies, SupervisorCgroupTest, ::testing::Values("v1", "v2"));

}  // namespace
}  // namespace vigil::worker

// The worker's sandbox (worker/sandbox.h) in real vigil-worker processes: it
// is in place by the handshake (no_new_privs, seccomp, no capabilities), the
// operations it refuses fail with EPERM inside the worker while threads and
// AF_UNIX sockets work, a multi-threaded IVF_PQ build still commits, and a
// step that fails keeps the provider from running (a typed failure before
// the request).
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "index/ivf_pq_internal.h"
#include "testutil/temp_dir.h"
#include "vigil/common/failpoint.h"
#include "vigil/index/index_spec.h"
#include "vigil/ingest/datagen.h"
#include "vigil/storage/dataset.h"
#include "vigil/worker/supervisor.h"

namespace vigil::worker {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of "Key:\tvalue" in a /proc status file.
std::string Field(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

// "k=v k=v ..." (after an optional "CODE: " prefix) as a map.
std::map<std::string, std::string> ParseProbe(const std::string& message) {
  std::map<std::string, std::string> out;
  std::istringstream in(message.substr(message.find(": ") == std::string::npos ? 0 : message.find(": ") + 2));
  std::string word;
  while (in >> word) {
    size_t eq = word.find('=');
    if (eq != std::string::npos) out[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return out;
}

constexpr const char* kNoCaps = "0000000000000000";

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDataset("docs", 2000);
    options_.stderr_path = dir_.Join("worker.log");
  }

  // A new dataset db/<name>.vgl of `rows` rows; later jobs target it.
  void MakeDataset(const std::string& name, uint64_t rows) {
    DatagenOptions o;
    o.rows = rows;
    o.dim = 16;
    o.latent_dim = 4;
    o.words_per_body = 2;
    auto gen = *DataGenerator::Make(o);
    path_ = dir_.Join("db/" + name + ".vgl");
    auto ds = *Dataset::Create(path_, gen->schema(), {});
    auto reader = gen->NewReader();
    auto appended = ds->Append(reader.get(), {});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    version_ = (*appended)->version();
    fingerprint_ = (*appended)->schema()->fingerprint();
  }

  LaunchRequest Job(const std::string& name, const std::string& column, index::IndexType type) {
    LaunchRequest r;
    r.request.attempt = {"node-a", 1, "9-" + name, 1, 1, 1, 0};
    r.request.job.job_id = 9;
    r.request.job.operation = index::JobOperation::kCreate;
    r.request.job.locator = path_;
    r.request.job.index_name = name;
    r.request.job.columns = {column};
    r.request.job.physical_type = std::string(index::IndexTypeName(type));
    index::IndexSpec spec;
    spec.type = type;
    if (type == index::IndexType::kIvfPq) {
      spec.ivf_pq.num_partitions = 16;
      spec.ivf_pq.num_sub_vectors = 4;
    }
    r.request.job.properties_json = index::SpecToPropertiesJson(spec);
    r.request.job.start_version = static_cast<int64_t>(version_);
    r.request.job.schema_fingerprint = fingerprint_;
    r.timeout = std::chrono::minutes(5);
    return r;
  }

  uint64_t LatestVersion() { return Dataset::ListVersions(path_)->back().version; }

  testing::TempDir dir_;
  std::string path_;
  uint64_t version_ = 0;
  std::string fingerprint_;
  SupervisorOptions options_;
};

TEST_F(SandboxTest, WorkerIsSandboxedByItsHandshakeAndStillWritesRootOwnedFiles) {
  auto sup = *Supervisor::Create(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  std::string status;
  req.on_launched = [&](pid_t pid) { status = ReadAll("/proc/" + std::to_string(pid) + "/status"); };
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_EQ(r.response.code, StatusCode::kOk) << r.response.message;  // files of this uid: DAC suffices
  EXPECT_EQ(LatestVersion(), version_ + 1);
  EXPECT_EQ(Field(status, "NoNewPrivs"), "1") << status;
  EXPECT_EQ(Field(status, "Seccomp"), "2");
  EXPECT_EQ(Field(status, "Seccomp_filters"), "1");
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapAmb"}) EXPECT_EQ(Field(status, cap), kNoCaps) << cap;
  if (::geteuid() == 0) {
    EXPECT_EQ(Field(status, "CapBnd"), kNoCaps);
  }
}

TEST_F(SandboxTest, ForbiddenOperationsFailWithEpermInsideTheWorker) {
  auto sup = *Supervisor::Create(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.failpoints = "worker.sandbox_probe=error(INTERNAL)";
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_FALSE(r.response.invoked);
  EXPECT_EQ(r.response.code, StatusCode::kInternal);
  EXPECT_EQ(LatestVersion(), version_);
  std::map<std::string, std::string> probe = ParseProbe(r.response.message);
  SCOPED_TRACE(r.response.message);
  EXPECT_EQ(probe["no_new_privs"], "1");
  EXPECT_EQ(probe["seccomp"], "2");
  for (const char* cap : {"cap_inh", "cap_prm", "cap_eff", "cap_amb"}) EXPECT_EQ(probe[cap], kNoCaps) << cap;
  if (::geteuid() == 0) {
    EXPECT_EQ(probe["cap_bnd"], kNoCaps);
  }
  for (const char* op : {"fork", "vfork", "clone", "execve", "execveat", "ptrace", "process_vm_readv",
                         "process_vm_writev", "socket_inet", "socket_inet6", "socket_netlink", "socket_packet",
                         "socketpair_inet", "io_uring_setup", "thread_socket_inet", "thread_fork"}) {
    EXPECT_EQ(probe[op], "EPERM") << op;
  }
  EXPECT_EQ(probe["clone3"], "ENOSYS");  // glibc then falls back to clone(CLONE_THREAD)
  for (const char* op : {"socket_unix", "socketpair_unix", "thread"}) EXPECT_EQ(probe[op], "ok") << op;
}

TEST_F(SandboxTest, TheLanceRunnersSandboxAllowsStartingProcessesAndNothingMore) {
  auto sup = *Supervisor::Create(options_);
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  req.request.job.engine = index::TableEngine::kLance;  // launched with --sandbox=lance
  req.request.failpoints = "worker.sandbox_probe=error(INTERNAL)";
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_FALSE(r.response.invoked);
  std::map<std::string, std::string> probe = ParseProbe(r.response.message);
  SCOPED_TRACE(r.response.message);
  EXPECT_EQ(probe["no_new_privs"], "1");
  EXPECT_EQ(probe["seccomp"], "2");
  for (const char* cap : {"cap_inh", "cap_prm", "cap_eff", "cap_amb"}) EXPECT_EQ(probe[cap], kNoCaps) << cap;
  // The runner's node may be started: process creation works, and execve of a missing
  // program fails as it would without a filter.
  for (const char* op : {"fork", "vfork", "clone", "thread_fork"}) EXPECT_EQ(probe[op], "ok") << op;
  EXPECT_EQ(probe["execve"], "ENOENT");
  EXPECT_EQ(probe["execveat"], "ENOENT");
  // Everything else stays refused.
  for (const char* op :
       {"ptrace", "process_vm_readv", "process_vm_writev", "socket_inet", "socket_inet6", "socket_netlink",
        "socket_packet", "socketpair_inet", "io_uring_setup", "thread_socket_inet"}) {
    EXPECT_EQ(probe[op], "EPERM") << op;
  }
  EXPECT_EQ(probe["clone3"], "ENOSYS");
}

TEST_F(SandboxTest, MultiThreadedIvfPqBuildCommitsAndEveryThreadIsConfined) {
  // The provider runs OpenMP threads from kIvfPqParallelMinRows rows on.
  MakeDataset("big", index::kIvfPqParallelMinRows + 1000);
  SupervisorOptions o = options_;
  o.omp_threads = 2;
  auto sup = *Supervisor::Create(o);
  LaunchRequest req = Job("emb_idx", "emb", index::IndexType::kIvfPq);
  pid_t worker = -1;
  size_t max_threads = 0;
  std::vector<std::string> unconfined;
  req.on_launched = [&](pid_t pid) { worker = pid; };
  // Progress arrives while the worker is alive: its threads are listed then.
  req.on_progress = [&](const Progress&) {
    std::string task_dir = "/proc/" + std::to_string(worker) + "/task";
    DIR* d = ::opendir(task_dir.c_str());
    if (d == nullptr) return;
    size_t threads = 0;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      ++threads;
      std::string st = ReadAll(task_dir + "/" + e->d_name + "/status");
      if (st.empty()) continue;  // the thread just ended
      if (Field(st, "NoNewPrivs") != "1" || Field(st, "Seccomp") != "2" || Field(st, "CapEff") != kNoCaps) {
        unconfined.push_back(e->d_name);
      }
    }
    ::closedir(d);
    max_threads = std::max(max_threads, threads);
  };
  LaunchResult r = sup->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_EQ(r.response.code, StatusCode::kOk) << r.response.message;
  ASSERT_TRUE(r.response.committed_version.has_value());
  EXPECT_EQ(LatestVersion(), static_cast<uint64_t>(*r.response.committed_version));
  if (std::thread::hardware_concurrency() > 1) {
    EXPECT_GE(max_threads, 2u) << "the build never ran an OpenMP thread";
  }
  EXPECT_TRUE(unconfined.empty()) << unconfined.size() << " threads without the sandbox";
}

TEST_F(SandboxTest, BaselineWithoutTheSandboxIsOnlyForTestBuilds) {
  SupervisorOptions o = options_;
  o.sandbox = false;
  auto sup = Supervisor::Create(o);
  if (!failpoint::Enabled()) {
    EXPECT_EQ(sup.status().code(), StatusCode::kNotSupported);
    return;
  }
  ASSERT_TRUE(sup.ok()) << sup.status().ToString();
  LaunchRequest req = Job("cat_idx", "category", index::IndexType::kBitmap);
  std::string status;
  req.on_launched = [&](pid_t pid) { status = ReadAll("/proc/" + std::to_string(pid) + "/status"); };
  LaunchResult r = (*sup)->Run(std::move(req));
  ASSERT_TRUE(r.complete) << r.error.ToString();
  EXPECT_EQ(r.response.code, StatusCode::kOk);
  EXPECT_EQ(Field(status, "NoNewPrivs"), "0");
  EXPECT_EQ(Field(status, "Seccomp"), "0");
}

// A step of the sandbox made to fail: a filter installed in a middle process
// (inherited by the worker) refuses one call the sandbox makes.
struct BlockedStep {
  const char* name;
  long nr;
  int prctl_option;  // with nr == SYS_prctl: refuse only this option
  int err;
  const char* logged;  // what the worker's stderr names
};

class SandboxFailureTest : public SandboxTest, public ::testing::WithParamInterface<BlockedStep> {};

struct MiddleReport {
  bool failed_before_request = false;
  bool complete = false;
  bool reaped = false;
  int wait_status = 0;
  int code = 0;
  char message[512] = {};
};

// Installs a filter refusing `step` with its errno; everything else is allowed.
bool BlockInThisProcess(const BlockedStep& step) {
  const uint32_t nr = static_cast<uint32_t>(step.nr);
  const uint32_t refuse = SECCOMP_RET_ERRNO | static_cast<uint32_t>(step.err);
  std::vector<sock_filter> code;
  if (step.nr == SYS_prctl) {
    code = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 3),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(step.prctl_option), 0, 1),
            BPF_STMT(BPF_RET | BPF_K, refuse),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  } else {
    code = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1), BPF_STMT(BPF_RET | BPF_K, refuse),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  }
  struct sock_fprog prog = {static_cast<unsigned short>(code.size()), code.data()};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
}

TEST_P(SandboxFailureTest, AFailedStepIsATypedFailureBeforeTheRequest) {
  const BlockedStep& step = GetParam();
  if (step.prctl_option == PR_CAPBSET_DROP && ::geteuid() != 0) {
    GTEST_SKIP() << "only a worker holding CAP_SETPCAP empties its bounding set";
  }
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t middle = ::fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {
    ::close(p[0]);
    MiddleReport rep;
    if (!BlockInThisProcess(step)) ::_exit(3);
    auto sup = Supervisor::Create(options_);
    if (!sup.ok()) ::_exit(4);
    LaunchResult r = (*sup)->Run(Job("cat_idx", "category", index::IndexType::kBitmap));
    rep.failed_before_request = r.failed_before_request;
    rep.complete = r.complete;
    rep.reaped = r.reaped;
    rep.wait_status = r.wait_status;
    rep.code = static_cast<int>(r.error.code());
    std::strncpy(rep.message, r.error.ToString().c_str(), sizeof rep.message - 1);
    ssize_t n = ::write(p[1], &rep, sizeof rep);
    ::_exit(n == static_cast<ssize_t>(sizeof rep) ? 0 : 5);
  }
  ::close(p[1]);
  MiddleReport rep;
  ssize_t got = ::read(p[0], &rep, sizeof rep);
  ::close(p[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(middle, &status, 0), middle);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the middle process failed before reporting";
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof rep));
  EXPECT_TRUE(rep.failed_before_request) << rep.message;  // proves the provider never ran
  EXPECT_FALSE(rep.complete);
  EXPECT_TRUE(rep.reaped);
  EXPECT_TRUE(WIFEXITED(rep.wait_status) && WEXITSTATUS(rep.wait_status) == kExitSandbox) << rep.wait_status;
  EXPECT_EQ(static_cast<StatusCode>(rep.code), StatusCode::kFailedPrecondition) << rep.message;
  EXPECT_NE(ReadAll(options_.stderr_path).find(step.logged), std::string::npos) << ReadAll(options_.stderr_path);
  EXPECT_EQ(LatestVersion(), version_);
}

INSTANTIATE_TEST_SUITE_P(
    Steps, SandboxFailureTest,
    ::testing::Values(BlockedStep{"no_new_privs", SYS_prctl, PR_SET_NO_NEW_PRIVS, EPERM, "PR_SET_NO_NEW_PRIVS"},
                      BlockedStep{"bounding_set", SYS_prctl, PR_CAPBSET_DROP, EPERM, "PR_CAPBSET_DROP"},
                      BlockedStep{"capset", SYS_capset, 0, EPERM, "capset"},
                      BlockedStep{"seccomp", SYS_seccomp, 0, EINVAL, "seccomp(SECCOMP_SET_MODE_FILTER)"}),
    [](const ::testing::TestParamInfo<BlockedStep>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace vigil::worker

#include "vigil/worker/isolation.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "vigil/common/file_system.h"
#include "worker/proc_cgroup.h"

namespace vigil::worker {

namespace {

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }
bool Writable(const std::string& path) { return ::access(path.c_str(), W_OK) == 0; }

std::string ErrnoText(int err) { return std::string(strerrordesc_np(err) ? strerrordesc_np(err) : "error"); }

std::string ProbeChildName() {
  static std::atomic<unsigned> counter{0};
  return "vigil-probe-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

// Makes and removes an empty child cgroup in `dir`; reports which of `files`
// the child had. Returns "" on success, else why not.
std::string TryChild(const std::string& dir, const std::vector<std::string>& files, std::vector<bool>* present) {
  std::string child = dir + "/" + ProbeChildName();
  if (::mkdir(child.c_str(), 0755) != 0) return "cannot create a child cgroup in " + dir + ": " + ErrnoText(errno);
  present->clear();
  for (const std::string& f : files) present->push_back(Exists(child + "/" + f));
  if (::rmdir(child.c_str()) != 0) {
    return "created child cgroup " + child + " but could not remove it: " + ErrnoText(errno);
  }
  return "";
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : " ") + s;
  return out.empty() ? "(none)" : out;
}

void ProbeV2(const std::vector<CgroupMount>& mounts, const std::vector<CgroupLine>& own, const std::string& parent,
             CgroupV2Probe* p) {
  const CgroupMount* v2 = nullptr;
  bool any_v1_controller = false;
  for (const CgroupMount& m : mounts) {
    if (m.fstype == "cgroup2" && (v2 == nullptr || m.mount_point == "/sys/fs/cgroup")) v2 = &m;
    if (m.fstype == "cgroup") {
      for (const std::string& o : m.super_options) {
        if (o == "memory" || o == "pids" || o == "cpu") any_v1_controller = true;
      }
    }
  }
  if (v2 == nullptr) {
    p->detail = "no cgroup2 file system is mounted";
    return;
  }
  p->mounted = true;
  p->mount = v2->mount_point;
  p->unified = !any_v1_controller;
  for (const CgroupLine& c : own) {
    if (c.v2) p->own_cgroup_dir = DirUnder(*v2, c.path);
  }
  p->candidate_dir = parent.empty() ? p->own_cgroup_dir : parent;
  if (p->candidate_dir.empty()) {
    p->detail = "this process's cgroup v2 path is not visible under " + p->mount;
    return;
  }
  if (!parent.empty() && parent.rfind(p->mount + "/", 0) != 0 && parent != p->mount) {
    p->detail = "configured cgroup parent " + parent + " is not under the cgroup2 mount " + p->mount;
    return;
  }
  p->candidate_exists = IsDir(p->candidate_dir) && Exists(p->candidate_dir + "/cgroup.procs");
  if (!p->candidate_exists) {
    p->detail = p->candidate_dir + " is not a cgroup v2 directory";
    return;
  }
  p->controllers = SplitNonEmpty(ReadFirstLine(p->candidate_dir + "/cgroup.controllers"), ' ');
  p->subtree_controllers = SplitNonEmpty(ReadFirstLine(p->candidate_dir + "/cgroup.subtree_control"), ' ');
  p->candidate_writable = Writable(p->candidate_dir) && Writable(p->candidate_dir + "/cgroup.procs") &&
                          Writable(p->candidate_dir + "/cgroup.subtree_control");
  if (!p->candidate_writable) {
    p->detail = p->candidate_dir + " is not writable by this user (not delegated)";
    return;
  }
  std::vector<bool> present;
  std::string why = TryChild(p->candidate_dir, {"memory.max", "pids.max"}, &present);
  if (!why.empty()) {
    p->detail = why;
    return;
  }
  p->child_created = true;
  p->child_has_memory_max = present[0];
  p->child_has_pids_max = present[1];
  std::vector<std::string> missing;
  for (const char* c : {"memory", "pids"}) {
    if (!Has(p->subtree_controllers, c)) missing.push_back(c);
  }
  if (!missing.empty()) {
    std::string need = Join(missing);
    bool available =
        std::all_of(missing.begin(), missing.end(), [&](const std::string& c) { return Has(p->controllers, c); });
    p->detail = available
                    ? "controllers " + need + " are available but not enabled in " + p->candidate_dir +
                          "/cgroup.subtree_control" +
                          (parent.empty() ? " (configure worker.cgroup_parent to a delegated leaf-free parent)" : "")
                    : "controllers " + need + " are not available in " + p->candidate_dir;
  }
}

void ProbeV1(const std::vector<CgroupMount>& mounts, const std::vector<CgroupLine>& own, const std::string& controller,
             const std::string& limit_file, CgroupV1Probe* p) {
  p->controller = controller;
  const CgroupMount* mount = nullptr;
  for (const CgroupMount& m : mounts) {
    if (m.fstype == "cgroup" && Has(m.super_options, controller)) mount = &m;
  }
  if (mount == nullptr) {
    p->detail = "no cgroup v1 " + controller + " hierarchy is mounted";
    return;
  }
  p->mounted = true;
  for (const CgroupLine& c : own) {
    if (!c.v2 && Has(c.controllers, controller)) p->dir = DirUnder(*mount, c.path);
  }
  if (p->dir.empty() || !IsDir(p->dir)) {
    p->detail = "this process's " + controller + " cgroup is not visible under " + mount->mount_point;
    p->dir.clear();
    return;
  }
  if (!Writable(p->dir)) {
    p->detail = p->dir + " is not writable by this user";
    return;
  }
  std::vector<bool> present;
  std::string why = TryChild(p->dir, {limit_file}, &present);
  if (!why.empty()) {
    p->detail = why;
    return;
  }
  if (!present[0]) {
    p->detail = "a child cgroup of " + p->dir + " has no " + limit_file;
    return;
  }
  p->writable = true;
}

// What the forked child reports: 0 for success, an errno, or -1 for "the call
// returned success but had no effect".
struct ChildResult {
  int pdeathsig = -2;
  int rlimit_as = -2;
  int rlimit_nofile = -2;
  int rlimit_core = -2;
  int dumpable = -2;
  int close_range = -2;
};

// Runs in the forked child: async-signal-safe calls only.
ChildResult ChildProbe(int keep_fd) {
  ChildResult r;
  int sig = 0;
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    r.pdeathsig = errno;
  } else {
    r.pdeathsig = ::prctl(PR_GET_PDEATHSIG, &sig) == 0 && sig == SIGKILL ? 0 : -1;
  }
  auto lower = [](int resource, rlim_t value) -> int {
    struct rlimit cur;
    if (::getrlimit(resource, &cur) != 0) return errno;
    rlim_t v = cur.rlim_max == RLIM_INFINITY ? value : std::min(cur.rlim_max, value);
    struct rlimit want = {v, v};
    if (::setrlimit(resource, &want) != 0) return errno;
    struct rlimit back;
    if (::getrlimit(resource, &back) != 0) return errno;
    return back.rlim_cur == v && back.rlim_max == v ? 0 : -1;
  };
  r.rlimit_as = lower(RLIMIT_AS, rlim_t{1} << 30);
  r.rlimit_nofile = lower(RLIMIT_NOFILE, 64);
  r.rlimit_core = lower(RLIMIT_CORE, 0);
  if (::prctl(PR_SET_DUMPABLE, 0) != 0) {
    r.dumpable = errno;
  } else {
    r.dumpable = ::prctl(PR_GET_DUMPABLE) == 0 ? 0 : -1;
  }
#ifdef SYS_close_range
  r.close_range = ::syscall(SYS_close_range, static_cast<unsigned>(keep_fd + 1), ~0U, 0) == 0 ? 0 : errno;
#else
  r.close_range = ENOSYS;
#endif
  return r;
}

void ProbeChild(IsolationReport* report) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    report->child_detail = "pipe failed: " + ErrnoText(errno);
    return;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    report->child_detail = "fork failed: " + ErrnoText(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ChildResult r = ChildProbe(fds[1]);
    ssize_t n = ::write(fds[1], &r, sizeof(r));
    ::_exit(n == static_cast<ssize_t>(sizeof(r)) ? 0 : 1);
  }
  ::close(fds[1]);
  ChildResult r;
  size_t got = 0;
  char* out = reinterpret_cast<char*>(&r);
  while (got < sizeof(r)) {
    ssize_t n = ::read(fds[0], out + got, sizeof(r) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof(r)) {
    report->child_detail = "the probe child exited without a report";
    return;
  }
  report->child_probe_ran = true;
  std::string detail;
  auto take = [&detail](int code, const char* what) {
    if (code == 0) return true;
    detail += std::string(detail.empty() ? "" : "; ") + what + ": " +
              (code == -1 ? std::string("no effect") : ErrnoText(code));
    return false;
  };
  report->pdeathsig = take(r.pdeathsig, "PR_SET_PDEATHSIG");
  report->rlimit_as = take(r.rlimit_as, "RLIMIT_AS");
  report->rlimit_nofile = take(r.rlimit_nofile, "RLIMIT_NOFILE");
  report->rlimit_core = take(r.rlimit_core, "RLIMIT_CORE");
  report->not_dumpable = take(r.dumpable, "PR_SET_DUMPABLE");
  report->close_range = take(r.close_range, "close_range");
  report->child_detail = detail;
}

// Effective capability bits from /proc/self/status; false when unreadable.
bool EffectiveCaps(uint64_t* caps) {
  Result<std::string> status = ReadKernelFile("/proc/self/status", 1 << 20);
  if (!status.ok()) return false;
  const size_t at = status->find("\nCapEff:");
  if (at == std::string::npos) return false;
  *caps = std::strtoull(status->c_str() + at + 8, nullptr, 16);
  return true;
}

std::string YesNo(bool b) { return b ? "yes" : "no"; }

}  // namespace

bool IsolationReport::CgroupV2Usable() const {
  return cgroup_v2.child_created && cgroup_v2.child_has_memory_max && cgroup_v2.child_has_pids_max;
}

bool IsolationReport::CgroupAvailable() const {
  return CgroupV2Usable() || (cgroup_v1_memory.writable && cgroup_v1_pids.writable);
}

IsolationReport ProbeIsolation(const std::string& cgroup_parent) {
  IsolationReport report;
  std::vector<CgroupMount> mounts = CgroupMounts();
  std::vector<CgroupLine> own = ProcCgroupLines("self");
  ProbeV2(mounts, own, cgroup_parent == kCgroupParentV1 ? std::string() : cgroup_parent, &report.cgroup_v2);
  ProbeV1(mounts, own, "memory", "memory.limit_in_bytes", &report.cgroup_v1_memory);
  ProbeV1(mounts, own, "pids", "pids.max", &report.cgroup_v1_pids);
  ProbeChild(&report);
  report.is_root = ::geteuid() == 0;
  uint64_t caps = 0;
  constexpr uint64_t kCapSysAdmin = uint64_t{1} << 21;
  constexpr uint64_t kCapSysResource = uint64_t{1} << 24;
  if (EffectiveCaps(&caps)) {
    report.nproc_binds = (caps & (kCapSysAdmin | kCapSysResource)) == 0;
  } else {
    report.nproc_binds = !report.is_root;
  }
  return report;
}

std::string IsolationRefusal(const WorkerConfig& worker, const IsolationReport& r) {
  if (worker.cgroup_parent == kCgroupParentV1) {
    if (r.cgroup_v1_memory.writable && r.cgroup_v1_pids.writable) return "";
    return "worker.cgroup_parent is \"v1\" but cgroup v1 is not usable: memory: " +
           (r.cgroup_v1_memory.writable ? std::string("ok") : r.cgroup_v1_memory.detail) +
           "; pids: " + (r.cgroup_v1_pids.writable ? std::string("ok") : r.cgroup_v1_pids.detail);
  }
  if (!worker.cgroup_parent.empty() && !r.CgroupV2Usable()) {
    return "worker.cgroup_parent " + worker.cgroup_parent + " is not usable: " +
           (r.cgroup_v2.detail.empty() ? "no child cgroup with memory.max and pids.max" : r.cgroup_v2.detail);
  }
  if (worker.require_cgroup && worker.cgroup_parent.empty()) {
    return "worker.require_cgroup is true but worker.cgroup_parent is empty (no delegated cgroup v2 parent)";
  }
  if (worker.cgroup_parent.empty() && !r.rlimit_as) {
    return "no memory boundary: no cgroup is configured and RLIMIT_AS cannot be set (" + r.child_detail + ")";
  }
  return "";
}

std::vector<IsolationCapability> DescribeIsolation(const IsolationReport& r) {
  std::vector<IsolationCapability> out;
  const CgroupV2Probe& v2 = r.cgroup_v2;
  std::string v2_detail;
  if (v2.mounted) {
    v2_detail = std::string(v2.unified ? "unified" : "hybrid") + " hierarchy at " + v2.mount;
    if (!v2.candidate_dir.empty()) v2_detail += "; candidate " + v2.candidate_dir;
    if (v2.candidate_exists) {
      v2_detail += "; controllers: " + Join(v2.controllers) + "; subtree_control: " + Join(v2.subtree_controllers);
    }
    if (v2.child_created) {
      v2_detail +=
          "; child cgroup: memory.max " + YesNo(v2.child_has_memory_max) + ", pids.max " + YesNo(v2.child_has_pids_max);
    }
  }
  if (!v2.detail.empty()) v2_detail += (v2_detail.empty() ? "" : "; ") + v2.detail;
  out.push_back({"cgroup.v2.delegated", r.CgroupV2Usable(), v2_detail});
  for (const CgroupV1Probe* v1 : {&r.cgroup_v1_memory, &r.cgroup_v1_pids}) {
    std::string d = v1->dir.empty() ? "" : v1->dir;
    if (!v1->detail.empty()) d += (d.empty() ? "" : ": ") + v1->detail;
    if (v1->writable) d += " (a child cgroup can be created)";
    out.push_back({"cgroup.v1." + v1->controller, v1->writable, d});
  }
  std::string child = r.child_probe_ran ? "" : r.child_detail;
  auto line = [&](const std::string& name, bool ok, const std::string& yes, const std::string& call) {
    std::string d = ok ? yes : child;
    if (!ok && r.child_probe_ran) {
      size_t at = r.child_detail.find(call + ":");
      d = at == std::string::npos ? "failed" : r.child_detail.substr(at, r.child_detail.find(';', at) - at);
    }
    out.push_back({name, ok, d});
  };
  line("pdeathsig", r.pdeathsig, "PR_SET_PDEATHSIG(SIGKILL) takes effect", "PR_SET_PDEATHSIG");
  line("rlimit.as", r.rlimit_as, "RLIMIT_AS can be lowered (memory limit without a cgroup)", "RLIMIT_AS");
  line("rlimit.nofile", r.rlimit_nofile, "RLIMIT_NOFILE can be lowered", "RLIMIT_NOFILE");
  line("rlimit.core", r.rlimit_core, "RLIMIT_CORE can be set to 0 (no core dumps)", "RLIMIT_CORE");
  line("not_dumpable", r.not_dumpable, "PR_SET_DUMPABLE(0) takes effect", "PR_SET_DUMPABLE");
  line("close_range", r.close_range, "close_range(2) closes inherited descriptors", "close_range");
  out.push_back({"root", r.is_root, r.is_root ? "effective uid 0" : "effective uid " + std::to_string(::geteuid())});
  out.push_back({"rlimit.nproc", r.nproc_binds,
                 r.nproc_binds ? "RLIMIT_NPROC binds (no CAP_SYS_ADMIN / CAP_SYS_RESOURCE)"
                               : "RLIMIT_NPROC does not bind (CAP_SYS_ADMIN or CAP_SYS_RESOURCE); only a cgroup "
                                 "pids.max bounds worker threads"});
  return out;
}

}  // namespace vigil::worker

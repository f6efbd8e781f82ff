#include "vigil/worker/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "vigil/common/env.h"
#include "vigil/common/file_system.h"
#include "worker/proc_cgroup.h"

namespace vigil::worker {

namespace {

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  for (const auto& e : v) {
    if (e == x) return true;
  }
  return false;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() != '/') return dir + "/" + name;
  return dir + name;
}

Status WriteFile(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  if (!out) return Status::FromErrno(errno, "open " + path);
  out << value;
  out.flush();
  if (!out) return Status::IOError("cannot write '" + value + "' to " + path);
  return Status::OK();
}

// A cgroup file's text; empty when it cannot be read.
std::string ReadFileText(const std::string& path) {
  Result<std::string> text = ReadKernelFile(path, 1 << 20);
  return text.ok() ? *text : std::string();
}

// The dir of the v1 hierarchy holding `controller` for this process's own cgroup.
Status ResolveV1(const std::string& controller, CgroupPlacement* out) {
  for (const CgroupMount& m : CgroupMounts()) {
    if (m.fstype != "cgroup" || !Contains(m.super_options, controller)) continue;
    for (const CgroupLine& entry : ProcCgroupLines("self")) {
      if (entry.v2 || !Contains(entry.controllers, controller)) continue;
      const std::string& path = entry.path;
      const std::string dir = DirUnder(m, path);
      if (dir.empty()) continue;
      if (::access(dir.c_str(), W_OK) != 0) {
        return Status::NotSupported("the cgroup v1 " + controller + " directory " + dir + " is not writable");
      }
      out->parent_dirs.push_back(dir);
      out->parent_paths.push_back(path);
      return Status::OK();
    }
  }
  return Status::NotSupported("no cgroup v1 " + controller + " hierarchy is mounted for this process");
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

Result<CgroupPlacement> ResolveCgroup(const std::string& parent) {
  CgroupPlacement p;
  if (parent.empty()) return Status::NotSupported("no cgroup parent is configured");
  if (parent == kCgroupV1Self) {
    p.version = CgroupVersion::kV1;
    VIGIL_RETURN_IF_ERROR(ResolveV1("memory", &p));
    VIGIL_RETURN_IF_ERROR(ResolveV1("pids", &p));
    return p;
  }
  if (parent.front() != '/') return Status::InvalidArgument("cgroup parent '" + parent + "' is not an absolute path");
  const CgroupMount* best = nullptr;
  std::vector<CgroupMount> mounts = CgroupMounts();
  for (const CgroupMount& m : mounts) {
    bool under = parent == m.mount_point || parent.rfind(JoinPath(m.mount_point, ""), 0) == 0;
    if (under && (best == nullptr || m.mount_point.size() > best->mount_point.size())) best = &m;
  }
  if (best == nullptr || best->fstype != "cgroup2") {
    return Status::NotSupported("cgroup parent " + parent + " is not on a cgroup2 file system");
  }
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotSupported("cgroup parent " + parent + " does not exist");
  }
  const std::vector<std::string> enabled =
      SplitNonEmpty(ReadFirstLine(JoinPath(parent, "cgroup.subtree_control")), ' ');
  for (const char* c : {"memory", "pids"}) {
    if (!Contains(enabled, c)) {
      return Status::NotSupported(std::string("cgroup parent ") + parent + " does not delegate the " + c +
                                  " controller (cgroup.subtree_control)");
    }
  }
  if (::access(parent.c_str(), W_OK) != 0) return Status::NotSupported("cgroup parent " + parent + " is not writable");
  std::string suffix = parent.substr(best->mount_point.size());
  std::string path = best->root == "/" ? (suffix.empty() ? "/" : suffix) : best->root + suffix;
  p.version = CgroupVersion::kV2;
  p.parent_dirs = {parent};
  p.parent_paths = {path};
  return p;
}

Status ProbeCgroup(const CgroupOptions& options, Env* env) {
  VIGIL_ASSIGN_OR_RETURN(CgroupPlacement placement, ResolveCgroup(options.parent));
  std::string name = "vigil-probe-" + std::to_string(::getpid());
  VIGIL_ASSIGN_OR_RETURN(WorkerCgroup cg,
                         WorkerCgroup::Create(placement, name, options.memory_max_bytes, options.pids_max, env));
  return cg.Remove();
}

Result<WorkerCgroup> WorkerCgroup::Create(const CgroupPlacement& placement, const std::string& name,
                                          uint64_t memory_max_bytes, int64_t pids_max, Env* env) {
  WorkerCgroup cg;
  cg.version_ = placement.version;
  cg.env_ = env;
  for (size_t i = 0; i < placement.parent_dirs.size(); ++i) {
    std::string dir = JoinPath(placement.parent_dirs[i], name);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      Status st = Status::FromErrno(errno, "mkdir " + dir);
      (void)cg.Remove();
      return Status::NotSupported(st.message());
    }
    cg.dirs_.push_back(dir);
    std::string path = JoinPath(placement.parent_paths[i], name);
    cg.paths_.push_back(path);
    cg.markers_.push_back(":" + path + "\n");
  }
  Status st;
  if (cg.version_ == CgroupVersion::kV2) {
    st = WriteFile(cg.dirs_[0] + "/memory.max", memory_max_bytes == 0 ? "max" : std::to_string(memory_max_bytes));
    if (st.ok()) (void)WriteFile(cg.dirs_[0] + "/memory.swap.max", "0");
    if (st.ok()) st = WriteFile(cg.dirs_[0] + "/pids.max", std::to_string(pids_max));
  } else {
    std::string limit = memory_max_bytes == 0 ? "-1" : std::to_string(memory_max_bytes);
    st = WriteFile(cg.dirs_[0] + "/memory.limit_in_bytes", limit);
    if (st.ok() && ::access((cg.dirs_[0] + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0) {
      (void)WriteFile(cg.dirs_[0] + "/memory.memsw.limit_in_bytes", limit);
    }
    if (st.ok()) st = WriteFile(cg.dirs_[1] + "/pids.max", std::to_string(pids_max));
  }
  if (!st.ok()) {
    (void)cg.Remove();
    return Status::NotSupported("cannot set worker cgroup limits: " + st.message());
  }
  return cg;
}

WorkerCgroup::WorkerCgroup(WorkerCgroup&& other) noexcept
    : version_(other.version_),
      env_(other.env_),
      dirs_(std::move(other.dirs_)),
      paths_(std::move(other.paths_)),
      markers_(std::move(other.markers_)) {
  other.dirs_.clear();
}

WorkerCgroup& WorkerCgroup::operator=(WorkerCgroup&& other) noexcept {
  if (this != &other) {
    (void)Remove();
    version_ = other.version_;
    env_ = other.env_;
    dirs_ = std::move(other.dirs_);
    paths_ = std::move(other.paths_);
    markers_ = std::move(other.markers_);
    other.dirs_.clear();
  }
  return *this;
}

WorkerCgroup::~WorkerCgroup() { (void)Remove(); }

Status WorkerCgroup::AddProcess(pid_t pid) const {
  for (const auto& dir : dirs_) VIGIL_RETURN_IF_ERROR(WriteFile(dir + "/cgroup.procs", std::to_string(pid)));
  return Status::OK();
}

Status WorkerCgroup::Verify(pid_t pid) const {
  const std::vector<CgroupLine> entries = ProcCgroupLines(std::to_string(pid));
  for (size_t i = 0; i < paths_.size(); ++i) {
    std::string controller = version_ == CgroupVersion::kV2 ? "" : (i == 0 ? "memory" : "pids");
    bool found = false;
    for (const auto& e : entries) {
      const bool right_hierarchy = controller.empty() ? e.v2 : Contains(e.controllers, controller);
      if (right_hierarchy && e.path == paths_[i]) found = true;
    }
    if (!found) return Status::Internal("process " + std::to_string(pid) + " is not in cgroup " + paths_[i]);
  }
  return Status::OK();
}

bool WorkerCgroup::OomKilled() const {
  if (dirs_.empty()) return false;
  std::string text =
      ReadFileText(dirs_[0] + (version_ == CgroupVersion::kV2 ? "/memory.events" : "/memory.oom_control"));
  std::istringstream in(text);
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill" && value > 0) return true;
  }
  return false;
}

Status WorkerCgroup::Remove() {
  Status first;
  std::vector<std::string> left;
  for (const auto& dir : dirs_) {
    // A reaped process can stay charged to its cgroup for a moment.
    int err = 0;
    for (int i = 0; i < 200; ++i) {
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) {
        err = 0;
        break;
      }
      err = errno;
      if (err != EBUSY) break;
      env_->SleepForMs(5);
    }
    if (err != 0) {
      left.push_back(dir);
      if (first.ok()) first = Status::FromErrno(err, "rmdir " + dir);
    }
  }
  dirs_ = std::move(left);
  return first;
}

void RemoveStaleCgroups(const CgroupPlacement& placement) {
  const std::string prefix = "vigil-worker-";
  for (const auto& parent : placement.parent_dirs) {
    DIR* d = ::opendir(parent.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind(prefix, 0) != 0) continue;
      pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
      if (owner > 0 && !Alive(owner)) stale.push_back(JoinPath(parent, name));
    }
    ::closedir(d);
    for (const auto& dir : stale) (void)::rmdir(dir.c_str());
  }
}

}  // namespace vigil::worker

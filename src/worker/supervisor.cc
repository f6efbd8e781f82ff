// Supervisor: creation (worker path, cgroup probe and placement), capability
// checks and Run, which hands each call to one Launch (launch.h). The forking
// thread is fork_thread.h; the child's code between fork and exec is child_exec.h.
#include "vigil/worker/supervisor.h"

#include <unistd.h>

#include "vigil/common/failpoint.h"
#include "worker/fork_thread.h"
#include "worker/launch.h"

#ifndef VIGIL_WORKER_BUILD_PATH
#define VIGIL_WORKER_BUILD_PATH ""
#endif

namespace vigil::worker {

std::string DefaultWorkerPath() {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string sibling = "vigil-worker";
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    sibling = exe.substr(0, exe.rfind('/')) + "/vigil-worker";
    if (::access(sibling.c_str(), X_OK) == 0) return sibling;
  }
  std::string built = VIGIL_WORKER_BUILD_PATH;
  if (!built.empty() && ::access(built.c_str(), X_OK) == 0) return built;
  return sibling;
}

Supervisor::Supervisor(SupervisorOptions options) : options_(std::move(options)) {}

Supervisor::~Supervisor() { KillAll(); }

void Supervisor::KillAll() {
  if (fork_thread_) fork_thread_->KillAllAndWait();
}

Result<std::unique_ptr<Supervisor>> Supervisor::Create(SupervisorOptions options) {
  if (options.worker_path.empty()) options.worker_path = DefaultWorkerPath();
  if (::access(options.worker_path.c_str(), X_OK) != 0) {
    return Status::NotFound("worker executable " + options.worker_path + " is missing or not executable");
  }
  if (!options.sandbox && !failpoint::Enabled()) {
    return Status::NotSupported("workers run without their sandbox only in test builds");
  }
  std::unique_ptr<Supervisor> s(new Supervisor(std::move(options)));
  const CgroupOptions& cg = s->options_.cgroup;
  if (cg.parent.empty()) {
    s->cgroup_status_ = Status::NotSupported("no cgroup parent is configured");
  } else {
    s->cgroup_status_ = ProbeCgroup(cg, s->options_.env);
    if (s->cgroup_status_.ok()) {
      auto placement = ResolveCgroup(cg.parent);
      s->cgroup_status_ = placement.status();
      if (placement.ok()) {
        RemoveStaleCgroups(*placement);
        s->cgroup_ = std::move(*placement);
      }
    }
  }
  if (s->options_.require_cgroup && !s->cgroup_) {
    return Status::FailedPrecondition("require_cgroup is set but workers cannot get a cgroup: " +
                                      s->cgroup_status_.message());
  }
  s->fork_thread_ = std::make_unique<ForkThread>();
  return s;
}

Status Supervisor::CheckCapability() const {
  if (::access(options_.worker_path.c_str(), X_OK) != 0) {
    return Status::NotFound("worker executable " + options_.worker_path + " is missing or not executable");
  }
  if (options_.require_cgroup && !cgroup_) {
    return Status::FailedPrecondition("require_cgroup is set but workers cannot get a cgroup: " +
                                      cgroup_status_.message());
  }
  return Status::OK();
}

LaunchResult Supervisor::Run(LaunchRequest request) { return Launch(this, &request).Run(); }

}  // namespace vigil::worker

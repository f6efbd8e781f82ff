// vigil-worker: runs exactly one provider call per launch for the supervisor
// (worker/supervisor.h). Its command line carries descriptor numbers and the
// expected parent only; the job arrives over the protocol pipe, a secret over
// the secret pipe. Before its handshake it enters its sandbox
// (worker/sandbox.h) or exits with kExitSandbox. Usage (the supervisor builds it):
//   vigil-worker --in=FD --out=FD --secret=FD --parent=PID [--lock=FD] [--sandbox=lance]
//                [--no-sandbox]
// --sandbox=lance enters the Lance runner's sandbox (it may start the runner) and serves
// a Lance job only.
// --no-sandbox (the benchmark's baseline) is accepted by test builds
// (VIGIL_FAILPOINTS) only; other builds exit with kExitUsage.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "vigil/common/failpoint.h"
#include "vigil/worker/protocol.h"
#include "vigil/worker/sandbox.h"
#include "vigil/worker/worker_process.h"

namespace {

bool ParseInt(std::string_view arg, std::string_view key, long* out) {
  if (!arg.starts_with(key)) return false;
  std::string value(arg.substr(key.size()));
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // First: no core dump and no ptrace attach by peers (exec made us dumpable again).
  ::prctl(PR_SET_DUMPABLE, 0);
  // Die with the supervisor's launcher thread; kept across exec, set again to be sure.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  long in = -1, out = -1, secret = -1, parent = -1, lock = -1;
  bool sandbox = true;
  auto mode = vigil::worker::SandboxMode::kProvider;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--no-sandbox" && vigil::failpoint::Enabled()) {
      sandbox = false;
    } else if (a == "--sandbox=lance") {
      mode = vigil::worker::SandboxMode::kLanceRunner;
    } else if (!ParseInt(a, "--in=", &in) && !ParseInt(a, "--out=", &out) && !ParseInt(a, "--secret=", &secret) &&
               !ParseInt(a, "--parent=", &parent) && !ParseInt(a, "--lock=", &lock)) {
      return vigil::worker::kExitUsage;
    }
  }
  if (in < 0 || out < 0 || parent <= 0) return vigil::worker::kExitUsage;
  // The parent may have died before PDEATHSIG was armed.
  if (::getppid() != static_cast<pid_t>(parent)) return vigil::worker::kExitParentGone;
  ::signal(SIGPIPE, SIG_IGN);
  // The attempt lock (when given) stays open, unused, for the whole life of the process.
  if (lock >= 0 && ::fcntl(static_cast<int>(lock), F_GETFD) < 0) return vigil::worker::kExitSetup;
  if (sandbox) {
    if (vigil::Status st = vigil::worker::EnterSandbox(mode); !st.ok()) {
      std::string line = "vigil-worker: cannot enter the sandbox: " + st.ToString() + "\n";
      ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
      (void)ignored;
      return vigil::worker::kExitSandbox;
    }
  }
  return vigil::worker::ServeOneRequest({static_cast<int>(in), static_cast<int>(out), static_cast<int>(secret),
                                         static_cast<int>(lock), mode == vigil::worker::SandboxMode::kLanceRunner});
}

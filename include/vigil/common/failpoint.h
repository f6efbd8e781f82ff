// Named failpoints: places in the code where a test can inject an error, a
// SIGKILL of the current process, a hang, a delay, a pause until released, or a
// signal (a file) that it was reached.
//
// A failpoint is armed by name, in-process (Arm) or through the environment
// variable VIGIL_FAILPOINTS read on first use, so a child process (a crash-test
// writer, a worker) can be armed by its parent. Spec grammar:
//   spec    := entry (';' entry)*
//   entry   := name '=' action ['@' hit]
//   action  := 'error' ['(' CODE_NAME ')'] | 'kill' | 'hang' | 'delay(' MS ')' | 'pause(' PATH ')'
//            | 'signal(' PATH ')' | 'off'
// '@N' fires only on the N-th evaluation (1-based) of that failpoint; without it
// every evaluation fires. Compiled in only with VIGIL_FAILPOINTS; otherwise
// VIGIL_FAILPOINT is a no-op. All functions are thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "vigil/common/status.h"

namespace vigil::failpoint {

constexpr const char* kEnvVar = "VIGIL_FAILPOINTS";

enum class Action { kOff, kError, kKill, kHang, kDelay, kPause, kSignal };

// Evaluates the failpoint `name`: OK when not armed; an error Status for
// `error`; never returns for `kill`; blocks while armed for `hang`; sleeps MS
// milliseconds (1 to 3,600,000), then OK, for `delay`; creates PATH.reached and waits until
// PATH exists, then OK, for `pause`; creates PATH, then OK, for `signal`.
Status Hit(std::string_view name);

// Arms every entry of `spec` (grammar above); InvalidArgument names the bad entry.
Status ArmFromSpec(std::string_view spec);
// Arms one failpoint; `hit` 0 means every evaluation; `delay_ms` is kDelay's sleep, `path`
// kPause's release file or kSignal's signal file.
void Arm(std::string_view name, Action action, int hit = 0, StatusCode error_code = StatusCode::kIOError,
         int delay_ms = 0, std::string path = "");
void Disarm(std::string_view name);
void DisarmAll();
// The spec of everything armed now, in the grammar above (for forwarding to a child).
std::string ArmedSpec();
// True when `name` is armed with an action other than off (a hold point a child process
// must be told about before it is reached).
bool Armed(std::string_view name);
// How many times `name` was evaluated while armed (for tests).
int HitCount(std::string_view name);
// True when failpoints are compiled into this build.
bool Enabled();

}  // namespace vigil::failpoint

#ifdef VIGIL_FAILPOINTS
#define VIGIL_FAILPOINT(name) VIGIL_RETURN_IF_ERROR(::vigil::failpoint::Hit(name))
#else
#define VIGIL_FAILPOINT(name) \
  do {                        \
  } while (0)
#endif

// A process told apart from any later one that reuses its pid: pid, start time
// since boot and the boot id. Lets one process record another (in a lock file)
// and a later process signal exactly that one, never a stranger.
// Thread safety: free functions; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "vigil/common/status.h"

namespace vigil {

struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // field 22 of /proc/<pid>/stat
  std::string boot_id;       // /proc/sys/kernel/random/boot_id

  bool operator==(const ProcessIdentity&) const = default;
};

// The identity of a live process; NotFound when it is gone.
Result<ProcessIdentity> IdentifyProcess(pid_t pid);
// "pid P start S boot B"
std::string FormatProcessIdentity(const ProcessIdentity& who);
// Parses FormatProcessIdentity's text (leading words of `text`); Corruption otherwise.
Result<ProcessIdentity> ParseProcessIdentity(std::string_view text);
// Sends `sig` to `who` if it is exactly that process on this boot of this host. True when it
// was signalled; false when it is gone, or another boot's or host's process.
Result<bool> SignalExactProcess(const ProcessIdentity& who, int sig);

}  // namespace vigil

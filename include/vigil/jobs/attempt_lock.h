// The attempt lock of one attempt (DESIGN.md section 6):
// `<dataset>/_staging/<attempt id>/attempt.lock` (storage/filename.h). The
// dispatcher holds it from before T3 until the result is recorded; a launched
// worker inherits it. When it can be taken, no process of the attempt is alive
// (termination proof). The file also records which process runs the attempt
// (pid, start time since boot, boot id), so that a later leader on the same
// host can stop exactly that process once the attempt's durable deadline has
// passed, and never another one that reuses its pid.
// Thread safety: free functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vigil/common/file_system.h"
#include "vigil/common/process_identity.h"
#include "vigil/common/status.h"
#include "vigil/jobs/job_record.h"

namespace vigil::jobs {

// `<locator>/_staging/<attempt id>/attempt.lock` of a Vigil table's dataset.
std::string AttemptLockPath(const std::string& locator, const std::string& attempt_id);
// The lock of an attempt of `spec`: AttemptLockPath(locator, ...) for a Vigil table; for an
// external Lance table, beside the dataset and never in it:
// `<location>.vigil/_staging/<attempt id>/attempt.lock`.
std::string AttemptLockPath(const JobSpec& spec, const std::string& attempt_id);
// Removes the attempt's lock file and its `_staging/<attempt id>` folder once its outcome
// is known (nobody needs the proof any more), through `fs`. Best effort: VACUUM removes what
// is left.
void RemoveAttemptLock(const JobSpec& spec, const std::string& attempt_id, FileSystem* fs = DefaultFileSystem());

// Records `who` in the held lock file `lock_fd` (replacing what it held) durably, through the
// descriptor of the lock (common/file_lock.h), which a launched worker inherits.
Status RecordAttemptProcess(int lock_fd, const ProcessIdentity& who);
// The process recorded in the lock file at `lock_path` (read through `fs`); nullopt when none
// was recorded.
Result<std::optional<ProcessIdentity>> ReadAttemptProcess(const std::string& lock_path,
                                                          FileSystem* fs = DefaultFileSystem());

}  // namespace vigil::jobs

#include "vigil/jobs/attempt_lock.h"

#include <unistd.h>

#include <cerrno>

#include "vigil/common/file_system.h"
#include "vigil/storage/filename.h"

namespace vigil::jobs {

namespace {
constexpr size_t kMaxRecordBytes = 256;
}  // namespace

std::string AttemptLockPath(const std::string& locator, const std::string& attempt_id) {
  return JoinPath(locator, vigil::AttemptLockPath(attempt_id));
}

std::string AttemptLockPath(const JobSpec& spec, const std::string& attempt_id) {
  if (spec.engine == index::TableEngine::kVigil) return AttemptLockPath(spec.locator, attempt_id);
  return AttemptLockPath(spec.locator + ".vigil", attempt_id);
}

void RemoveAttemptLock(const JobSpec& spec, const std::string& attempt_id, FileSystem* fs) {
  const std::string path = AttemptLockPath(spec, attempt_id);
  (void)fs->RemoveFile(path);
  const std::string attempt_dir = DirName(path);
  (void)fs->RemoveDir(attempt_dir);  // each only when empty
  if (spec.engine != index::TableEngine::kVigil) {
    (void)fs->RemoveDir(DirName(attempt_dir));
    (void)fs->RemoveDir(DirName(DirName(attempt_dir)));
  }
}

Status RecordAttemptProcess(int lock_fd, const ProcessIdentity& who) {
  const std::string record = FormatProcessIdentity(who) + "\n";
  if (::ftruncate(lock_fd, 0) != 0) return Status::FromErrno(errno, "truncate attempt lock");
  if (::pwrite(lock_fd, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    return Status::FromErrno(errno, "write attempt lock");
  }
  if (::fdatasync(lock_fd) != 0) return Status::FromErrno(errno, "fdatasync attempt lock");
  return Status::OK();
}

Result<std::optional<ProcessIdentity>> ReadAttemptProcess(const std::string& lock_path, FileSystem* fs) {
  VIGIL_ASSIGN_OR_RETURN(std::string text, fs->ReadFile(lock_path, kMaxRecordBytes));
  if (text.empty()) return std::optional<ProcessIdentity>();
  Result<ProcessIdentity> who = ParseProcessIdentity(text);
  if (!who.ok()) return Status::Corruption(lock_path + " does not record an attempt process");
  return std::optional<ProcessIdentity>(*who);
}

}  // namespace vigil::jobs

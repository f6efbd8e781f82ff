#include "vigil/jobs/root_jobs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "vigil/common/config.h"

namespace vigil::jobs {

namespace {

// The metadata is the root owner's alone: `_meta` 0700, the database 0600 (SQLite
// gives its -wal and -shm files the database file's mode).
constexpr mode_t kMetaDirMode = 0700;
constexpr mode_t kMetaFileMode = 0600;

// Clears the permission bits of `path` outside `allowed` (a root made before they
// were this strict); a missing file is left alone when `optional`. Another user's
// file (EPERM) is left as it is: only its owner can tighten it.
Status RestrictMode(const std::string& path, mode_t allowed, bool optional) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (optional && errno == ENOENT) return Status::OK();
    return Status::FromErrno(errno, "stat " + path);
  }
  const mode_t mode = st.st_mode & 07777;
  if ((mode & ~allowed) == 0) return Status::OK();
  if (::chmod(path.c_str(), mode & allowed) != 0 && errno != EPERM) {
    return Status::FromErrno(errno, "chmod " + path);
  }
  return Status::OK();
}

// Creates the database file private to its owner, when it is missing, before SQLite opens it.
Status CreateDatabaseFile(FileSystem* fs, const std::string& path) {
  auto file = fs->NewPrivateWritableFile(path);
  if (!file.ok()) return file.status().code() == StatusCode::kAlreadyExists ? Status::OK() : file.status();
  return (*file)->Close();
}

}  // namespace

std::string RootJobStoreUri(const Root& root) {
  return "sqlite://" + root.path() + "/" + std::string(kRootMetaDirName) + "/vigil.db";
}

Result<RootMetaStore> RootMeta(const Root& root) {
  VIGIL_ASSIGN_OR_RETURN(Config config, LoadConfig(root.path()));
  RootMetaStore out;
  out.uri = config.meta.url.empty() ? RootJobStoreUri(root) : config.meta.url;
  out.database.idle_in_transaction_timeout_ms = static_cast<int>(config.jobs.leader_lease_seconds * 1000);
  return out;
}

Result<std::unique_ptr<JobStore>> OpenRootJobStore(const Root& root) {
  VIGIL_ASSIGN_OR_RETURN(RootMetaStore store, RootMeta(root));
  JobStoreOptions options;
  options.uri = std::move(store.uri);
  options.database = store.database;
  if (options.uri != RootJobStoreUri(root)) return JobStore::Open(options);
  const std::string meta = root.path() + "/" + std::string(kRootMetaDirName);
  VIGIL_RETURN_IF_ERROR(root.fs()->CreateDirs(meta));
  VIGIL_RETURN_IF_ERROR(RestrictMode(meta, kMetaDirMode, false));
  const std::string db = meta + "/vigil.db";
  VIGIL_RETURN_IF_ERROR(CreateDatabaseFile(root.fs(), db));
  for (const char* suffix : {"", "-wal", "-shm"}) {
    VIGIL_RETURN_IF_ERROR(RestrictMode(db + suffix, kMetaFileMode, *suffix != '\0'));
  }
  return JobStore::Open(options);
}

}  // namespace vigil::jobs

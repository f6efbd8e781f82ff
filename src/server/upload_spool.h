// Request bodies a serving process spools to disk before it runs them (uploads
// are streamed there, never held in memory; a keyed request's body is hashed
// for its fingerprint on the way). Each process spools under a directory of its
// own, <root>/_meta/uploads/<pid>-<nonce>/, whose lock it holds while it lives;
// opening a spool removes the directories of processes that are gone, so the
// bodies of a killed server do not stay on disk. Files go through the Env's
// file system.
// Thread safety: thread-safe after Open; a Spooled is owned by one request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vigil/common/env.h"
#include "vigil/common/file_lock.h"
#include "vigil/common/file_system.h"
#include "vigil/common/status.h"
#include "vigil/server/http_server.h"

namespace vigil::server {

// A request body saved to a private spool file; the file is removed with it.
struct Spooled {
  std::string path;
  std::string sha256;  // lower-case hex of the body
  uint64_t bytes = 0;
  FileSystem* fs = nullptr;
  ~Spooled();
  Spooled() = default;
  Spooled(const Spooled&) = delete;
  Spooled& operator=(const Spooled&) = delete;
};

class UploadSpool {
 public:
  // Takes this process's directory under the root at `root_dir` (locked while the spool lives)
  // after removing every directory there whose process is gone.
  static Result<std::unique_ptr<UploadSpool>> Open(const std::string& root_dir, Env* env);
  // Removes this process's directory (a file still open stays readable until closed).
  ~UploadSpool();
  UploadSpool(const UploadSpool&) = delete;
  UploadSpool& operator=(const UploadSpool&) = delete;

  // Reads `body` to its end into a new private file, hashing it. A failed read or write
  // leaves no file behind.
  Result<std::shared_ptr<Spooled>> Spool(BodySource& body);

  // This process's directory.
  const std::string& dir() const { return dir_; }
  // How many directories (and loose files of older versions) of gone processes Open removed.
  int64_t removed_at_open() const { return removed_at_open_; }

 private:
  UploadSpool(Env* env, std::string dir, FileLock lock, int64_t removed)
      : env_(env), dir_(std::move(dir)), lock_(std::move(lock)), removed_at_open_(removed) {}
  // Removes every file of `dir`, then `dir`.
  static Status RemoveAll(FileSystem* fs, const std::string& dir);

  Env* const env_;
  const std::string dir_;
  FileLock lock_;
  const int64_t removed_at_open_;
};

}  // namespace vigil::server

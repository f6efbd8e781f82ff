#include "server/upload_spool.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <vector>

#include "server/idempotency_gate.h"
#include "vigil/common/hex.h"
#include "vigil/common/logging.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/filename.h"

namespace vigil::server {

namespace {
constexpr size_t kChunkBytes = 1 << 16;
}  // namespace

Spooled::~Spooled() {
  if (fs != nullptr && !path.empty()) (void)fs->RemoveFile(path);
}

Status UploadSpool::RemoveAll(FileSystem* fs, const std::string& dir) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  for (const std::string& name : names) VIGIL_RETURN_IF_ERROR(fs->RemoveFile(dir + "/" + name));
  return fs->RemoveDir(dir);
}

Result<std::unique_ptr<UploadSpool>> UploadSpool::Open(const std::string& root_dir, Env* env) {
  FileSystem* fs = env->fs();
  const std::string spool = root_dir + "/" + UploadSpoolPath();
  VIGIL_RETURN_IF_ERROR(fs->CreateDirs(spool));
  // A directory whose lock can be taken belongs to a process that is gone. Taking it keeps a
  // second server, cleaning at the same time, off it until it is removed.
  int64_t removed = 0;
  VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> entries, fs->ListDir(spool));
  for (const std::string& name : entries) {
    const std::string dir = spool + "/" + name;
    Result<bool> is_dir = fs->Exists(dir + "/.");
    if (!is_dir.ok()) continue;
    if (!*is_dir) {
      // A body an older version spooled straight into the directory: nothing tells whether its
      // server lives, so it goes (a live one fails that request; nothing of it is committed).
      if (fs->RemoveFile(dir).ok()) ++removed;
      continue;
    }
    Result<FileLock> gone = FileLock::Acquire(dir + "/" + std::string(kUploadSpoolLockFile));
    if (!gone.ok()) continue;  // its process lives (Busy), or another server removes it now
    Status st = RemoveAll(fs, dir);
    if (st.ok()) {
      ++removed;
    } else {
      VIGIL_LOG_WARN("cannot remove the upload spool {} of a stopped server: {}", dir, st.ToString());
    }
  }
  // This process's own directory, locked before anything is written in it; if a cleaner
  // removed it between its creation and the lock, another name is taken.
  for (int attempt = 0;; ++attempt) {
    const std::string dir = spool + "/" + UploadSpoolDirName(::getpid(), Uuid::Generate());
    VIGIL_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(dir + "/" + std::string(kUploadSpoolLockFile)));
    VIGIL_ASSIGN_OR_RETURN(bool kept, fs->Exists(lock.path()));
    if (kept) return std::unique_ptr<UploadSpool>(new UploadSpool(env, dir, std::move(lock), removed));
    if (attempt == 3) return Status::IOError("the upload spool directory " + dir + " keeps disappearing");
  }
}

UploadSpool::~UploadSpool() {
  Status st = RemoveAll(env_->fs(), dir_);
  if (!st.ok()) VIGIL_LOG_WARN("cannot remove the upload spool {}: {}", dir_, st.ToString());
}

Result<std::shared_ptr<Spooled>> UploadSpool::Spool(BodySource& body) {
  auto spooled = std::make_shared<Spooled>();
  const std::string path = dir_ + "/" + SpooledBodyName(Uuid::Generate());
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env_->fs()->NewPrivateWritableFile(path));
  spooled->path = path;
  spooled->fs = env_->fs();  // from here on the file goes with `spooled`
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!md || EVP_DigestInit_ex(md.get(), Sha256Digest(), nullptr) != 1) {
    return Status::Internal("cannot start a SHA-256 digest");
  }
  std::vector<char> buf(kChunkBytes);
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(size_t n, body.Read(buf.data(), buf.size()));
    if (n == 0) break;
    EVP_DigestUpdate(md.get(), buf.data(), n);
    spooled->bytes += n;
    VIGIL_RETURN_IF_ERROR(file->Append(std::string_view(buf.data(), n)));
  }
  VIGIL_RETURN_IF_ERROR(file->Close());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(md.get(), digest, &len);
  spooled->sha256 = LowerHex(std::string_view(reinterpret_cast<const char*>(digest), len));
  return spooled;
}

}  // namespace vigil::server

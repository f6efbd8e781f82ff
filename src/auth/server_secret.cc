#include "vigil/auth/server_secret.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "vigil/common/env.h"
#include "vigil/common/file_system.h"
#include "vigil/common/hex.h"
#include "vigil/storage/filename.h"

namespace vigil::auth {

namespace {

constexpr mode_t kMetaDirMode = 0700;

std::string MetaDir(const std::string& root_dir) { return root_dir + "/" + std::string(kRootMetaDirName); }

Status EnsureMetaDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), kMetaDirMode) == 0 || errno == EEXIST) return Status::OK();
  return Status::FromErrno(errno, "create " + dir);
}

Result<ServerSecret> Load(FileSystem* fs, const std::string& path) {
  FileFacts facts;
  auto file = fs->NewInputFile(path, InputLinks::kRefuseLast, &facts);
  if (!file.ok()) {
    const StatusCode code = file.status().code();
    if (code == StatusCode::kPermissionDenied || code == StatusCode::kInvalidArgument) {
      return Status::FailedPrecondition(file.status().message() + "; the server secret must be a regular file");
    }
    return file.status();
  }
  if (facts.owner_uid != ::geteuid()) {
    return Status::FailedPrecondition(path + " is owned by uid " + std::to_string(facts.owner_uid) +
                                      ", not by this server's uid " + std::to_string(::geteuid()));
  }
  if ((facts.mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(facts.mode));
    return Status::FailedPrecondition(path + " has mode " + mode +
                                      ": others may have read it; run chmod 600 on it and issue every "
                                      "token again (or delete it, restart, and bootstrap)");
  }
  if (facts.size != ServerSecret::kSize) {
    return Status::Corruption(path + " is " + std::to_string(facts.size) + " bytes; a server secret is " +
                              std::to_string(ServerSecret::kSize));
  }
  std::string bytes;
  Status read = (*file)->Read(0, ServerSecret::kSize, &bytes);
  auto secret = read.ok() ? ServerSecret::FromBytes(bytes) : Result<ServerSecret>(read);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return secret;
}

// Writes a new secret under a unique temporary name and links it to `path`. OK when this call
// created `path` or another creator already had; the caller then loads `path`.
Status CreateSecretFile(FileSystem* fs, const std::string& dir, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(ServerSecret secret, ServerSecret::Generate());
  unsigned char nonce[8];
  if (RAND_bytes(nonce, sizeof(nonce)) != 1) return Status::Internal("RAND_bytes failed");
  const std::string suffix = LowerHex(std::string_view(reinterpret_cast<const char*>(nonce), sizeof(nonce)));
  const std::string tmp = dir + "/." + std::string(kServerSecretFileName) + ".tmp." + suffix;
  Status st = [&]() -> Status {
    VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewPrivateWritableFile(tmp));
    VIGIL_RETURN_IF_ERROR(file->Append(std::string_view(reinterpret_cast<const char*>(secret.data()), secret.size())));
    VIGIL_RETURN_IF_ERROR(file->Sync());
    VIGIL_RETURN_IF_ERROR(file->Close());
    Status linked = fs->LinkNoReplace(tmp, path);
    return linked.code() == StatusCode::kAlreadyExists ? Status::OK() : linked;
  }();
  (void)fs->RemoveFile(tmp);
  VIGIL_RETURN_IF_ERROR(st);
  return fs->SyncDir(dir);
}

}  // namespace

ServerSecret::~ServerSecret() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

Result<ServerSecret> ServerSecret::Generate() {
  ServerSecret s;
  if (RAND_bytes(s.bytes_.data(), static_cast<int>(s.bytes_.size())) != 1) {
    return Status::Internal("RAND_bytes failed: no random bytes for the server secret");
  }
  s.set_ = true;
  return s;
}

Result<ServerSecret> ServerSecret::FromBytes(std::string_view bytes) {
  if (bytes.size() != kSize) {
    return Status::InvalidArgument("a server secret is " + std::to_string(kSize) + " bytes, not " +
                                   std::to_string(bytes.size()));
  }
  ServerSecret s;
  std::memcpy(s.bytes_.data(), bytes.data(), kSize);
  s.set_ = true;
  return s;
}

std::string ServerSecretPath(const std::string& root_dir) {
  return MetaDir(root_dir) + "/" + std::string(kServerSecretFileName);
}

Result<ServerSecret> LoadOrCreateServerSecret(const std::string& root_dir) {
  if (root_dir.empty()) return Status::InvalidArgument("root directory is empty");
  const std::string dir = MetaDir(root_dir);
  const std::string path = ServerSecretPath(root_dir);
  FileSystem* fs = Env::Default()->fs();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::FromErrno(errno, "stat " + path);
    VIGIL_RETURN_IF_ERROR(EnsureMetaDir(dir));
    VIGIL_RETURN_IF_ERROR(CreateSecretFile(fs, dir, path));
  }
  return Load(fs, path);
}

}  // namespace vigil::auth

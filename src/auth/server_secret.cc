#include "vigil/auth/server_secret.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "vigil/common/env.h"
#include "vigil/common/file_system.h"
#include "vigil/storage/filename.h"

namespace vigil::auth {

namespace {

constexpr mode_t kMetaDirMode = 0700;
constexpr mode_t kSecretFileMode = 0600;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

std::string MetaDir(const std::string& root_dir) { return root_dir + "/" + std::string(kRootMetaDirName); }

Status EnsureMetaDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), kMetaDirMode) == 0 || errno == EEXIST) return Status::OK();
  return Status::FromErrno(errno, "create " + dir);
}

Status WriteAll(int fd, const unsigned char* data, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "write " + path);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Result<ServerSecret> Load(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ELOOP) {
      return Status::FailedPrecondition(path + " is a symbolic link; the server secret must be a regular file");
    }
    return Status::FromErrno(errno, "open " + path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) return Status::FailedPrecondition(path + " is not a regular file");
  if (st.st_uid != ::geteuid()) {
    return Status::FailedPrecondition(path + " is owned by uid " + std::to_string(st.st_uid) +
                                      ", not by this server's uid " + std::to_string(::geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::FailedPrecondition(path + " has mode " + mode +
                                      ": others may have read it; run chmod 600 on it and issue every "
                                      "token again (or delete it, restart, and bootstrap)");
  }
  if (st.st_size != static_cast<off_t>(ServerSecret::kSize)) {
    return Status::Corruption(path + " is " + std::to_string(st.st_size) + " bytes; a server secret is " +
                              std::to_string(ServerSecret::kSize));
  }
  unsigned char buf[ServerSecret::kSize];
  size_t got = 0;
  while (got < sizeof(buf)) {
    ssize_t r = ::read(fd.get(), buf + got, sizeof(buf) - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "read " + path);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  if (got != sizeof(buf)) {
    OPENSSL_cleanse(buf, sizeof(buf));
    return Status::Corruption(path + " ended after " + std::to_string(got) + " bytes");
  }
  auto secret = ServerSecret::FromBytes(std::string_view(reinterpret_cast<const char*>(buf), sizeof(buf)));
  OPENSSL_cleanse(buf, sizeof(buf));
  return secret;
}

// Writes a new secret under a unique temporary name and links it to `path`. OK when this call
// created `path` or another creator already had (EEXIST); the caller then loads `path`.
Status CreateSecretFile(const std::string& dir, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(ServerSecret secret, ServerSecret::Generate());
  unsigned char nonce[8];
  if (RAND_bytes(nonce, sizeof(nonce)) != 1) return Status::Internal("RAND_bytes failed");
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "%02x%02x%02x%02x%02x%02x%02x%02x", nonce[0], nonce[1], nonce[2],
                nonce[3], nonce[4], nonce[5], nonce[6], nonce[7]);
  const std::string tmp = dir + "/." + std::string(kServerSecretFileName) + ".tmp." + suffix;
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kSecretFileMode));
  if (fd.get() < 0) return Status::FromErrno(errno, "create " + tmp);
  Status st = [&]() -> Status {
    if (::fchmod(fd.get(), kSecretFileMode) != 0) return Status::FromErrno(errno, "chmod " + tmp);
    VIGIL_RETURN_IF_ERROR(WriteAll(fd.get(), secret.data(), secret.size(), tmp));
    if (::fsync(fd.get()) != 0) return Status::FromErrno(errno, "fsync " + tmp);
    if (::close(fd.Release()) != 0) return Status::FromErrno(errno, "close " + tmp);
    if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      return Status::FromErrno(errno, "link " + path);
    }
    return Status::OK();
  }();
  ::unlink(tmp.c_str());
  VIGIL_RETURN_IF_ERROR(st);
  return Env::Default()->fs()->SyncDir(dir);
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
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::FromErrno(errno, "stat " + path);
    VIGIL_RETURN_IF_ERROR(EnsureMetaDir(dir));
    VIGIL_RETURN_IF_ERROR(CreateSecretFile(dir, path));
  }
  return Load(path);
}

}  // namespace vigil::auth

#include "vigil/common/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace vigil {

namespace {

thread_local IoObserver* tls_observer = nullptr;

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Status::IOError("append to closed file " + path_);
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "write " + path_);
      }
      p += n;
      left -= static_cast<size_t>(n);
      size_ += static_cast<uint64_t>(n);
    }
    return Status::OK();
  }

  Status Sync() override {
    if (fd_ < 0) return Status::IOError("sync of closed file " + path_);
    if (::fdatasync(fd_) != 0) return Status::FromErrno(errno, "fdatasync " + path_);
    return Status::OK();
  }

  Status Close() override {
    if (fd_ < 0) return Status::OK();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return Status::FromErrno(errno, "close " + path_);
    return Status::OK();
  }

  uint64_t Size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_ = 0;
};

// `observed`: reads are reported to the thread's IoObserver (table files are; input files a
// user named are not).
class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size, bool observed = true)
      : path_(std::move(path)), fd_(fd), size_(size), observed_(observed) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, std::string* out) const override {
    if (offset > size_ || n > size_ - offset) {
      return Status::Corruption("read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                " is past the end of " + path_ + " (" + std::to_string(size_) + " bytes)");
    }
    out->resize(n);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, out->data() + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "pread " + path_);
      }
      if (r == 0) return Status::Corruption("unexpected end of file in " + path_);
      done += static_cast<size_t>(r);
    }
    if (observed_ && tls_observer != nullptr) tls_observer->OnRead(path_, offset, n);
    return Status::OK();
  }

  uint64_t Size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
  bool observed_;
};

std::string_view FileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "of an unknown type";
}

Status NotRegular(const std::string& path, mode_t mode) {
  return Status::InvalidArgument(path + " is not a regular file (" + std::string(FileKind(mode)) + ")");
}

Status InputOpenError(int err, const std::string& path) {
  const std::string context = "cannot open input file " + path;
  if (err == ENOENT) return Status::NotFound(context + ": " + path + " does not exist");
  if (err == EACCES || err == EPERM) return Status::PermissionDenied(context + ": " + std::strerror(err));
  return Status::FromErrno(err, context);
}

Status LinkInPath(const std::string& path) {
  return Status::PermissionDenied("cannot open input file " + path + ": it is reached through a symbolic link");
}

// Opens the absolute `path` from "/" one component at a time, following no link.
Result<int> OpenWithoutSymlinks(const std::string& path, int flags) {
  if (path.empty() || path[0] != '/') return Status::InvalidArgument(path + " is not an absolute path");
  int dir = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return InputOpenError(errno, path);
  size_t pos = 1;
  while (true) {
    const size_t slash = path.find('/', pos);
    const std::string part = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (part == "." || part == ".." || (part.empty() && slash == std::string::npos)) {
      ::close(dir);
      return Status::InvalidArgument(path + " is not a canonical path to a file");
    }
    if (slash == std::string::npos) {
      int fd = ::openat(dir, part.c_str(), flags | O_NOFOLLOW);
      const int err = errno;
      ::close(dir);
      if (fd < 0) return err == ELOOP ? LinkInPath(path) : InputOpenError(err, path);
      return fd;
    }
    pos = slash + 1;
    if (part.empty()) continue;
    int next = ::openat(dir, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    ::close(dir);
    if (next < 0) {
      struct stat st {};
      const std::string prefix = path.substr(0, slash);
      if (::lstat(prefix.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return LinkInPath(path);
      return InputOpenError(err, path);
    }
    dir = next;
  }
}

// The descriptor of an input file: opened without blocking (a FIFO or a device could block or
// act on open), checked to be a regular file, then made blocking again.
Result<int> OpenInput(const std::string& path, InputLinks links, struct stat* st) {
  const bool lstat_first = links != InputLinks::kFollow;
  // Refused before open(2) where possible: opening a device can have effects of its own.
  if ((lstat_first ? ::lstat(path.c_str(), st) : ::stat(path.c_str(), st)) == 0 && !S_ISREG(st->st_mode)) {
    return NotRegular(path, st->st_mode);
  }
  const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int fd = -1;
  if (links == InputLinks::kRefuseAny) {
    VIGIL_ASSIGN_OR_RETURN(fd, OpenWithoutSymlinks(path, flags));
  } else {
    fd = ::open(path.c_str(), flags | (links == InputLinks::kRefuseLast ? O_NOFOLLOW : 0));
    if (fd < 0 && errno == ELOOP && links == InputLinks::kRefuseLast) {
      return Status::PermissionDenied("cannot open input file " + path + ": it is a symbolic link");
    }
    if (fd < 0) return InputOpenError(errno, path);
  }
  Status refused;
  if (::fstat(fd, st) != 0) {
    refused = Status::FromErrno(errno, "stat " + path);
  } else if (!S_ISREG(st->st_mode)) {
    refused = NotRegular(path, st->st_mode);
  } else if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    refused = Status::FromErrno(errno, "fcntl " + path);
  }
  if (!refused.ok()) {
    ::close(fd);
    return refused;
  }
  return fd;
}

// Nothing Vigil writes is readable by other users: owner read/write, group read.
constexpr mode_t kFileMode = 0640;
constexpr mode_t kPrivateFileMode = 0600;
constexpr mode_t kDirMode = 0750;

class PosixFileSystem : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Create(path, kFileMode);
  }

  Result<std::unique_ptr<WritableFile>> NewPrivateWritableFile(const std::string& path) override {
    return Create(path, kPrivateFileMode);
  }

  Result<std::unique_ptr<RandomAccessFile>> NewInputFile(const std::string& path, InputLinks links,
                                                         FileFacts* facts) override {
    struct stat st {};
    VIGIL_ASSIGN_OR_RETURN(int fd, OpenInput(path, links, &st));
    if (facts != nullptr) {
      facts->size = static_cast<uint64_t>(st.st_size);
      facts->mode = static_cast<uint32_t>(st.st_mode & 07777);
      facts->owner_uid = static_cast<uint32_t>(st.st_uid);
    }
    return std::unique_ptr<RandomAccessFile>(
        new PosixRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size), /*observed=*/false));
  }

  Result<std::unique_ptr<WritableFile>> Create(const std::string& path, mode_t mode) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
      if (errno == EEXIST) return Status::AlreadyExists(path + " already exists");
      return Status::FromErrno(errno, "create " + path);
    }
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Status::FromErrno(errno, "open " + path);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "stat " + path);
    }
    return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    VIGIL_ASSIGN_OR_RETURN(auto file, NewRandomAccessFile(path));
    if (file->Size() > max_bytes) {
      return Status::ResourceExhausted(path + " has " + std::to_string(file->Size()) + " bytes; the limit is " +
                                       std::to_string(max_bytes));
    }
    std::string out;
    VIGIL_RETURN_IF_ERROR(file->Read(0, file->Size(), &out));
    return out;
  }

  Result<bool> Exists(const std::string& path) override {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return Status::FromErrno(errno, "stat " + path);
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Status::FromErrno(errno, "stat " + path);
    }
    return static_cast<uint64_t>(st.st_size);
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Status::FromErrno(errno, "opendir " + path);
    }
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return Status::FromErrno(err, "readdir " + path);
    std::sort(names.begin(), names.end());
    return names;
  }

  Status CreateDirs(const std::string& path) override {
    if (path.empty()) return Status::OK();
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) return Status::OK();
      return Status::AlreadyExists(path + " exists and is not a directory");
    }
    std::string parent = DirName(path);
    if (!parent.empty() && parent != path) VIGIL_RETURN_IF_ERROR(CreateDirs(parent));
    if (::mkdir(path.c_str(), kDirMode) != 0 && errno != EEXIST) return Status::FromErrno(errno, "mkdir " + path);
    return Status::OK();
  }

  Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), kDirMode) == 0) return Status::OK();
    const int err = errno;
    struct stat st {};
    if (err == EEXIST) {
      if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::OK();
      if (errno == ENOENT) return Status::NotFound(path + " was moved away while being created");
    }
    if (err == ENOENT) return Status::NotFound("cannot create " + path + ": its parent directory does not exist");
    return Status::FromErrno(err, "mkdir " + path);
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Status::FromErrno(errno, "unlink " + path);
    }
    return Status::OK();
  }

  Status RemoveDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return Status::FromErrno(errno, "rmdir " + path);
    return Status::OK();
  }

  Status LinkNoReplace(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) != 0) {
      if (errno == EEXIST) return Status::AlreadyExists(to + " already exists");
      return Status::FromErrno(errno, "link " + from + " -> " + to);
    }
    return Status::OK();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Status::FromErrno(errno, "rename " + from + " -> " + to);
    return Status::OK();
  }

  Status SyncDir(const std::string& path) override { return Fsync(path, O_DIRECTORY, "directory " + path); }

  Status SyncFile(const std::string& path) override { return Fsync(path, 0, path); }

  // fsync of the file or directory (`open_flags`) at `path`, named `what` in errors.
  static Status Fsync(const std::string& path, int open_flags, const std::string& what) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | open_flags);
    if (fd < 0 && errno == ENOENT) return Status::NotFound(what + " does not exist");
    if (fd < 0) return Status::FromErrno(errno, "open " + what);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return Status::FromErrno(err, "fsync " + what);
    return Status::OK();
  }

  Result<bool> IsSymlink(const std::string& path) override {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Status::FromErrno(errno, "lstat " + path);
    }
    return S_ISLNK(st.st_mode);
  }
};

}  // namespace

FileSystem* DefaultFileSystem() {
  static FileSystem* fs = new PosixFileSystem();
  return fs;
}

Status WriteFileDurably(FileSystem* fs, const std::string& path, std::string_view data) {
  VIGIL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  VIGIL_RETURN_IF_ERROR(file->Append(data));
  VIGIL_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

Result<std::string> ReadKernelFile(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  std::string out;
  char buf[4096];
  Status st;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = Status::FromErrno(errno, "read " + path);
      break;
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      st = Status::ResourceExhausted(path + " exceeds " + std::to_string(max_bytes) + " bytes");
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!st.ok()) return st;
  return out;
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  if (out.back() != '/') out.push_back('/');
  out.append(b.front() == '/' ? b.substr(1) : b);
  return out;
}

std::string DirName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

ScopedIoObserver::ScopedIoObserver(IoObserver* observer) : previous_(tls_observer) { tls_observer = observer; }
ScopedIoObserver::~ScopedIoObserver() { tls_observer = previous_; }
IoObserver* CurrentIoObserver() { return tls_observer; }

}  // namespace vigil

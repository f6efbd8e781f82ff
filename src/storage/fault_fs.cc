#include "vigil/storage/fault_fs.h"

#include <unistd.h>

#include <cerrno>

namespace vigil {

namespace {

Status FaultStatus(FaultInjectionFileSystem::Fault fault, const char* op, const std::string& path) {
  std::string what = std::string("injected fault in ") + op + " " + path;
  if (fault == FaultInjectionFileSystem::Fault::kNoSpace) return Status::FromErrno(ENOSPC, what);
  return Status::FromErrno(EIO, what);
}

class FaultWritableFile : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionFileSystem* fs, std::string path, std::unique_ptr<WritableFile> base)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}

  Status Append(std::string_view data) override {
    auto fault = fs_->NextOperation();
    if (fault == FaultInjectionFileSystem::Fault::kTornWrite) {
      std::string_view prefix = data.substr(0, data.size() / 2);
      if (!prefix.empty()) (void)base_->Append(prefix);
      return FaultStatus(fault, "append", path_);
    }
    if (fault != FaultInjectionFileSystem::Fault::kNone) return FaultStatus(fault, "append", path_);
    return base_->Append(data);
  }

  Status Sync() override {
    auto fault = fs_->NextOperation();
    if (fault != FaultInjectionFileSystem::Fault::kNone) return FaultStatus(fault, "sync", path_);
    VIGIL_RETURN_IF_ERROR(base_->Sync());
    fs_->RecordSync(path_, base_->Size());
    return Status::OK();
  }

  Status Close() override {
    auto fault = fs_->NextOperation();
    Status st = base_->Close();
    if (fault != FaultInjectionFileSystem::Fault::kNone) return FaultStatus(fault, "close", path_);
    return st;
  }

  uint64_t Size() const override { return base_->Size(); }

 private:
  FaultInjectionFileSystem* fs_;
  std::string path_;
  std::unique_ptr<WritableFile> base_;
};

class FaultRandomAccessFile : public RandomAccessFile {
 public:
  FaultRandomAccessFile(FaultInjectionFileSystem* fs, std::unique_ptr<RandomAccessFile> base)
      : fs_(fs), base_(std::move(base)) {}

  Status Read(uint64_t offset, size_t n, std::string* out) const override {
    auto fault = fs_->NextOperation();
    if (fault != FaultInjectionFileSystem::Fault::kNone) return FaultStatus(fault, "read", base_->path());
    return base_->Read(offset, n, out);
  }
  uint64_t Size() const override { return base_->Size(); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionFileSystem* fs_;
  std::unique_ptr<RandomAccessFile> base_;
};

}  // namespace

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* base) : base_(base) {}

void FaultInjectionFileSystem::FailOperation(int64_t n, Fault fault) {
  MutexLock lock(&mu_);
  one_shot_[count_ + n] = fault;
}

void FaultInjectionFileSystem::FailFrom(int64_t n, Fault fault) {
  MutexLock lock(&mu_);
  fail_from_ = count_ + n;
  fail_from_fault_ = fault;
}

void FaultInjectionFileSystem::ClearFaults() {
  MutexLock lock(&mu_);
  one_shot_.clear();
  fail_from_ = 0;
  fail_from_fault_ = Fault::kNone;
}

int64_t FaultInjectionFileSystem::OperationCount() const {
  MutexLock lock(&mu_);
  return count_;
}

void FaultInjectionFileSystem::ResetCount() {
  MutexLock lock(&mu_);
  count_ = 0;
  one_shot_.clear();
  fail_from_ = 0;
}

FaultInjectionFileSystem::Fault FaultInjectionFileSystem::NextOperation() {
  MutexLock lock(&mu_);
  ++count_;
  auto it = one_shot_.find(count_);
  if (it != one_shot_.end()) {
    Fault f = it->second;
    one_shot_.erase(it);
    return f;
  }
  if (fail_from_ != 0 && count_ >= fail_from_) return fail_from_fault_;
  return Fault::kNone;
}

void FaultInjectionFileSystem::RecordSync(const std::string& path, uint64_t size) {
  MutexLock lock(&mu_);
  synced_size_[path] = size;
}

Status FaultInjectionFileSystem::Check(const char* op, const std::string& path) {
  Fault f = NextOperation();
  if (f == Fault::kNone) return Status::OK();
  return FaultStatus(f, op, path);
}

Status FaultInjectionFileSystem::DropUnsyncedData() {
  MutexLock lock(&mu_);
  for (const auto& path : unsynced_entries_) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Status::FromErrno(errno, "drop " + path);
    synced_size_.erase(path);
  }
  unsynced_entries_.clear();
  for (const auto& [path, size] : synced_size_) {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0 && errno != ENOENT) {
      return Status::FromErrno(errno, "truncate " + path);
    }
  }
  return Status::OK();
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("create", path));
  VIGIL_ASSIGN_OR_RETURN(auto base, base_->NewWritableFile(path));
  return Track(path, std::move(base));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewPrivateWritableFile(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("create", path));
  VIGIL_ASSIGN_OR_RETURN(auto base, base_->NewPrivateWritableFile(path));
  return Track(path, std::move(base));
}

std::unique_ptr<WritableFile> FaultInjectionFileSystem::Track(const std::string& path,
                                                              std::unique_ptr<WritableFile> base) {
  {
    MutexLock lock(&mu_);
    synced_size_[path] = 0;
    unsynced_entries_.insert(path);
  }
  return std::unique_ptr<WritableFile>(new FaultWritableFile(this, path, std::move(base)));
}

Result<std::unique_ptr<RandomAccessFile>> FaultInjectionFileSystem::NewRandomAccessFile(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("open", path));
  VIGIL_ASSIGN_OR_RETURN(auto base, base_->NewRandomAccessFile(path));
  return std::unique_ptr<RandomAccessFile>(new FaultRandomAccessFile(this, std::move(base)));
}

Result<std::unique_ptr<RandomAccessFile>> FaultInjectionFileSystem::NewInputFile(const std::string& path,
                                                                                 InputLinks links, FileFacts* facts) {
  VIGIL_RETURN_IF_ERROR(Check("open", path));
  VIGIL_ASSIGN_OR_RETURN(auto base, base_->NewInputFile(path, links, facts));
  return std::unique_ptr<RandomAccessFile>(new FaultRandomAccessFile(this, std::move(base)));
}

Result<std::string> FaultInjectionFileSystem::ReadFile(const std::string& path, size_t max_bytes) {
  VIGIL_RETURN_IF_ERROR(Check("read", path));
  return base_->ReadFile(path, max_bytes);
}

Result<bool> FaultInjectionFileSystem::Exists(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("stat", path));
  return base_->Exists(path);
}

Result<uint64_t> FaultInjectionFileSystem::FileSize(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("stat", path));
  return base_->FileSize(path);
}

Result<std::vector<std::string>> FaultInjectionFileSystem::ListDir(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("list", path));
  return base_->ListDir(path);
}

Status FaultInjectionFileSystem::CreateDirs(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("mkdir", path));
  return base_->CreateDirs(path);
}

Status FaultInjectionFileSystem::CreateDir(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("mkdir", path));
  return base_->CreateDir(path);
}

Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("unlink", path));
  VIGIL_RETURN_IF_ERROR(base_->RemoveFile(path));
  MutexLock lock(&mu_);
  synced_size_.erase(path);
  unsynced_entries_.erase(path);
  return Status::OK();
}

Status FaultInjectionFileSystem::RemoveDir(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("rmdir", path));
  return base_->RemoveDir(path);
}

Status FaultInjectionFileSystem::LinkNoReplace(const std::string& from, const std::string& to) {
  VIGIL_RETURN_IF_ERROR(Check("link", to));
  VIGIL_RETURN_IF_ERROR(base_->LinkNoReplace(from, to));
  MutexLock lock(&mu_);
  unsynced_entries_.insert(to);
  auto it = synced_size_.find(from);
  if (it != synced_size_.end()) synced_size_[to] = it->second;
  return Status::OK();
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  VIGIL_RETURN_IF_ERROR(Check("rename", to));
  VIGIL_RETURN_IF_ERROR(base_->Rename(from, to));
  MutexLock lock(&mu_);
  unsynced_entries_.erase(from);
  unsynced_entries_.insert(to);
  auto it = synced_size_.find(from);
  if (it != synced_size_.end()) {
    synced_size_[to] = it->second;
    synced_size_.erase(from);
  }
  return Status::OK();
}

Status FaultInjectionFileSystem::SyncFile(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("fsync", path));
  VIGIL_RETURN_IF_ERROR(base_->SyncFile(path));
  VIGIL_ASSIGN_OR_RETURN(uint64_t size, base_->FileSize(path));
  RecordSync(path, size);
  return Status::OK();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("fsync-dir", path));
  VIGIL_RETURN_IF_ERROR(base_->SyncDir(path));
  MutexLock lock(&mu_);
  for (auto it = unsynced_entries_.begin(); it != unsynced_entries_.end();) {
    if (DirName(*it) == DirName(JoinPath(path, "x"))) {
      it = unsynced_entries_.erase(it);
    } else {
      ++it;
    }
  }
  return Status::OK();
}

Result<bool> FaultInjectionFileSystem::IsSymlink(const std::string& path) {
  VIGIL_RETURN_IF_ERROR(Check("lstat", path));
  return base_->IsSymlink(path);
}

}  // namespace vigil

#include "vigil/index/segment_files.h"

#include "vigil/common/checksum.h"
#include "vigil/storage/filename.h"

namespace vigil::index {

std::string SegmentDir(const Uuid& uuid) { return SegmentDirPath(uuid); }

namespace {
Status ValidateFileName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name.find('/') != std::string::npos || name[0] == '.') {
    return Status::InvalidArgument("invalid segment file name '" + name + "'");
  }
  return Status::OK();
}
}  // namespace

Result<std::unique_ptr<SegmentWriter>> SegmentWriter::Create(FileSystem* fs, const std::string& dataset_path,
                                                             const Uuid& uuid) {
  std::string dir = JoinPath(dataset_path, SegmentDir(uuid));
  VIGIL_ASSIGN_OR_RETURN(bool exists, fs->Exists(dir));
  if (exists) return Status::AlreadyExists("segment directory " + dir + " already exists");
  VIGIL_RETURN_IF_ERROR(fs->CreateDir(DirName(dir)));  // never re-creates a moved dataset
  VIGIL_RETURN_IF_ERROR(fs->CreateDir(dir));
  VIGIL_RETURN_IF_ERROR(fs->SyncDir(DirName(dir)));
  return std::unique_ptr<SegmentWriter>(new SegmentWriter(fs, dir));
}

std::string SegmentWriter::FilePath(const std::string& name) const { return JoinPath(dir_, name); }

Status SegmentWriter::WriteFile(const std::string& name, std::string_view bytes) {
  VIGIL_RETURN_IF_ERROR(BeginFile(name));
  VIGIL_RETURN_IF_ERROR(AppendToFile(bytes));
  return EndFile();
}

Status SegmentWriter::BeginFile(const std::string& name) {
  VIGIL_CHECK(open_ == nullptr);
  VIGIL_RETURN_IF_ERROR(ValidateFileName(name));
  for (const auto& f : files_) {
    if (f.name == name) return Status::AlreadyExists("segment file " + name + " was already written");
  }
  VIGIL_ASSIGN_OR_RETURN(open_, fs_->NewWritableFile(FilePath(name)));
  open_name_ = name;
  open_size_ = 0;
  open_checksum_ = new StreamingChecksum();
  return Status::OK();
}

Status SegmentWriter::AppendToFile(std::string_view bytes) {
  VIGIL_CHECK(open_ != nullptr);
  VIGIL_RETURN_IF_ERROR(open_->Append(bytes));
  static_cast<StreamingChecksum*>(open_checksum_)->Update(bytes.data(), bytes.size());
  open_size_ += bytes.size();
  return Status::OK();
}

Status SegmentWriter::EndFile() {
  VIGIL_CHECK(open_ != nullptr);
  auto* sum = static_cast<StreamingChecksum*>(open_checksum_);
  Status st = open_->Sync();
  if (st.ok()) st = open_->Close();
  SegmentFile f{open_name_, open_size_, sum->Digest()};
  delete sum;
  open_checksum_ = nullptr;
  open_.reset();
  VIGIL_RETURN_IF_ERROR(st);
  files_.push_back(std::move(f));
  return Status::OK();
}

Status SegmentWriter::AddExistingFile(const std::string& name) {
  VIGIL_RETURN_IF_ERROR(ValidateFileName(name));
  VIGIL_ASSIGN_OR_RETURN(auto file, fs_->NewRandomAccessFile(FilePath(name)));
  StreamingChecksum sum;
  std::string buf;
  constexpr uint64_t kChunk = 4 << 20;
  for (uint64_t off = 0; off < file->Size(); off += kChunk) {
    size_t n = static_cast<size_t>(std::min(kChunk, file->Size() - off));
    VIGIL_RETURN_IF_ERROR(file->Read(off, n, &buf));
    sum.Update(buf.data(), buf.size());
  }
  files_.push_back(SegmentFile{name, file->Size(), sum.Digest()});
  return Status::OK();
}

Result<std::vector<SegmentFile>> SegmentWriter::Finish() {
  VIGIL_CHECK(open_ == nullptr);
  VIGIL_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  return files_;
}

void SegmentWriter::Abandon() {
  if (open_) {
    (void)open_->Close();
    open_.reset();
    delete static_cast<StreamingChecksum*>(open_checksum_);
    open_checksum_ = nullptr;
  }
  auto names = fs_->ListDir(dir_);
  if (names.ok()) {
    for (const auto& n : *names) (void)fs_->RemoveFile(JoinPath(dir_, n));
  }
  (void)fs_->RemoveDir(dir_);
}

Result<std::shared_ptr<SegmentFiles>> SegmentFiles::Open(FileSystem* fs, const std::string& dataset_path,
                                                         const IndexSegmentMeta& meta) {
  std::string dir = JoinPath(dataset_path, SegmentDir(meta.uuid));
  for (const auto& f : meta.files) {
    auto size = fs->FileSize(JoinPath(dir, f.name));
    if (!size.ok()) {
      if (size.status().code() == StatusCode::kNotFound) {
        return Status::Corruption("index '" + meta.name + "' segment " + meta.uuid.ToString() + " is missing " +
                                  f.name);
      }
      return size.status();
    }
    if (*size != f.size) {
      return Status::Corruption("index '" + meta.name + "' file " + JoinPath(dir, f.name) + " has " +
                                std::to_string(*size) + " bytes; the inventory says " + std::to_string(f.size));
    }
  }
  return std::shared_ptr<SegmentFiles>(new SegmentFiles(fs, dir, meta));
}

const SegmentFile* SegmentFiles::Find(const std::string& name) const {
  for (const auto& f : meta_.files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string SegmentFiles::FilePath(const std::string& name) const { return JoinPath(dir_, name); }

Result<std::string> SegmentFiles::ReadVerified(const std::string& name, size_t max_bytes) const {
  const SegmentFile* f = Find(name);
  if (f == nullptr) return Status::Corruption("segment " + meta_.uuid.ToString() + " has no file " + name);
  VIGIL_ASSIGN_OR_RETURN(std::string bytes, fs_->ReadFile(FilePath(name), max_bytes));
  if (bytes.size() != f->size || Checksum64(bytes) != f->checksum) {
    return Status::Corruption(FilePath(name) + " does not match its inventory checksum");
  }
  return bytes;
}

Result<std::unique_ptr<RandomAccessFile>> SegmentFiles::OpenVerified(const std::string& name) const {
  const SegmentFile* f = Find(name);
  if (f == nullptr) return Status::Corruption("segment " + meta_.uuid.ToString() + " has no file " + name);
  VIGIL_ASSIGN_OR_RETURN(auto file, fs_->NewRandomAccessFile(FilePath(name)));
  if (file->Size() != f->size) {
    return Status::Corruption(FilePath(name) + " has " + std::to_string(file->Size()) + " bytes; the inventory says " +
                              std::to_string(f->size));
  }
  return file;
}

}  // namespace vigil::index

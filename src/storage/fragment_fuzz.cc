// Fuzz target for fragment files. Each input is tried three ways: as a whole
// fragment file (opened from an in-memory file system, every block read), as
// the same bytes with the magics and footer checksum resealed so mutations
// reach the footer parser, and as one decoded block handed to the codec.
// Nothing may crash; every failure must be Corruption.
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "storage/column_codec.h"
#include "vigil/common/checksum.h"
#include "vigil/storage/fragment.h"

namespace vigil {
namespace {

// Just enough of a FileSystem to write and read whole files in memory.
class MemoryFileSystem : public FileSystem {
 public:
  class File : public WritableFile, public RandomAccessFile {
   public:
    File(std::string path, std::string* data) : path_(std::move(path)), data_(data) {}
    Status Append(std::string_view d) override {
      data_->append(d);
      return Status::OK();
    }
    Status Sync() override { return Status::OK(); }
    Status Close() override { return Status::OK(); }
    Status Read(uint64_t offset, size_t n, std::string* out) const override {
      if (offset > data_->size() || n > data_->size() - offset) return Status::Corruption("short read");
      out->assign(*data_, offset, n);
      return Status::OK();
    }
    uint64_t Size() const override { return data_->size(); }
    const std::string& path() const override { return path_; }

   private:
    std::string path_;
    std::string* data_;
  };

  std::map<std::string, std::string> files;

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    if (files.count(path)) return Status::AlreadyExists(path);
    return std::unique_ptr<WritableFile>(new File(path, &files[path]));
  }
  Result<std::unique_ptr<WritableFile>> NewPrivateWritableFile(const std::string& path) override {
    return NewWritableFile(path);
  }
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return Status::NotFound(path);
    return std::unique_ptr<RandomAccessFile>(new File(path, &it->second));
  }
  Result<std::unique_ptr<RandomAccessFile>> NewInputFile(const std::string& path, InputLinks, FileFacts*) override {
    return NewRandomAccessFile(path);
  }
  Result<std::string> ReadFile(const std::string& path, size_t) override { return Unsupported(); }
  Result<bool> Exists(const std::string& path) override { return files.count(path) > 0; }
  Result<uint64_t> FileSize(const std::string& path) override { return Unsupported(); }
  Result<std::vector<std::string>> ListDir(const std::string&) override { return Unsupported(); }
  Status CreateDirs(const std::string&) override { return Unsupported(); }
  Status CreateDir(const std::string&) override { return Unsupported(); }
  Status RemoveFile(const std::string&) override { return Unsupported(); }
  Status RemoveDir(const std::string&) override { return Unsupported(); }
  Status LinkNoReplace(const std::string&, const std::string&) override { return Unsupported(); }
  Status Rename(const std::string&, const std::string&) override { return Unsupported(); }
  Status SyncDir(const std::string&) override { return Unsupported(); }
  Status SyncFile(const std::string&) override { return Unsupported(); }
  Result<bool> IsSymlink(const std::string&) override { return Unsupported(); }

 private:
  static Status Unsupported() { return Status::NotSupported("memory file system"); }
};

void ExpectCorruptionOrOk(const Status& st) { VIGIL_CHECK(st.ok() || st.code() == StatusCode::kCorruption); }

void OpenAndReadAll(const std::string& bytes) {
  MemoryFileSystem fs;
  fs.files["f.frag"] = bytes;
  auto reader = FragmentReader::Open(&fs, "f.frag", nullptr);
  ExpectCorruptionOrOk(reader.status());
  if (!reader.ok()) return;
  for (const Field& f : (*reader)->fields()) {
    for (size_t b = 0; b < (*reader)->num_blocks(); ++b) {
      auto block = (*reader)->ReadBlock(f.id, b);
      ExpectCorruptionOrOk(block.status());
      if (block.ok()) VIGIL_CHECK((*block)->size() <= (*reader)->rows_per_block());
    }
  }
}

// The input with valid magics and footer checksum, when its trailer names a footer inside it.
bool Reseal(std::string* bytes) {
  if (bytes->size() < 32) return false;
  uint64_t footer_size = 0;
  std::memcpy(&footer_size, bytes->data() + bytes->size() - 24, 8);
  if (footer_size > bytes->size() - 32) return false;
  std::memcpy(bytes->data(), "VGLFRAG1", 8);
  std::memcpy(bytes->data() + bytes->size() - 8, "VGLFRAG1", 8);
  uint64_t sum = Checksum64(bytes->data() + bytes->size() - 24 - footer_size, footer_size);
  std::memcpy(bytes->data() + bytes->size() - 16, &sum, 8);
  return true;
}

// Feeds the input to the block codec: byte 0 picks the type, 1 the rows, 2 the nulls.
void DecodeAsBlock(std::string_view input) {
  if (input.size() < 3) return;
  DataType type;
  type.id = static_cast<TypeId>(1 + static_cast<uint8_t>(input[0]) % 12);
  if (type.id == TypeId::kDecimal) type = DataType::Decimal(10, 2);
  if (type.id == TypeId::kVector)
    type = DataType::Vector(input[1] & 1 ? VectorElement::kFloat16 : VectorElement::kFloat32, 3);
  const uint32_t rows = static_cast<uint8_t>(input[1]);
  const uint32_t nulls = std::min<uint32_t>(rows, static_cast<uint8_t>(input[2]) % 4);
  std::string body(input.substr(3));
  auto column = codec::DecodeBlock(body, type, rows, nulls);
  ExpectCorruptionOrOk(column.status());
  if (column.ok()) VIGIL_CHECK(column->size() == rows);
  auto inflated = codec::DecompressBlock(body, codec::BlockEncoding::kZstd, body.size() * 4 + 64);
  ExpectCorruptionOrOk(inflated.status());
}

}  // namespace
}  // namespace vigil

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  vigil::OpenAndReadAll(bytes);
  if (vigil::Reseal(&bytes)) vigil::OpenAndReadAll(bytes);
  vigil::DecodeAsBlock(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  using namespace vigil;
  auto schema = Schema::Make({{-1, "i", DataType::Of(TypeId::kInt32), true},
                              {-1, "s", DataType::Of(TypeId::kString), true},
                              {-1, "v", DataType::Vector(VectorElement::kFloat16, 2), false},
                              {-1, "d", DataType::Decimal(9, 3), false}});
  VIGIL_CHECK(schema.ok());
  for (uint32_t rows_per_block : {4u, 16u}) {
    MemoryFileSystem fs;
    FragmentWriterOptions options;
    options.rows_per_block = rows_per_block;
    auto writer = FragmentWriter::Create(&fs, "seed.frag", *schema, options);
    VIGIL_CHECK(writer.ok());
    RecordBatch batch = RecordBatch::Empty(*schema);
    for (int64_t r = 0; r < 10; ++r) {
      Value s = r % 3 == 0 ? Value() : Value(std::string(static_cast<size_t>(r), 'x'));
      Value i = r % 4 == 1 ? Value() : Value(r * 1000);
      VIGIL_CHECK(batch.AppendRow({i, s, std::vector<float>{0.5f, -1.0f}, r * 7}).ok());
    }
    VIGIL_CHECK((*writer)->Write(batch).ok());
    VIGIL_CHECK((*writer)->Finish().ok());
    auto reader = FragmentReader::Open(&fs, "seed.frag", nullptr);  // seeds must be valid
    VIGIL_CHECK(reader.ok() && (*reader)->ReadColumn(1).ok());
    out->push_back(fs.files["seed.frag"]);
  }
}

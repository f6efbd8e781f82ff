// Fragment file format (all integers little-endian):
//
//   "VGLFRAG1"
//   blocks, block-major: block 0 of every field in field order, then block 1, ...
//   footer:
//     u32 format version (1), u64 num_rows, u32 rows_per_block, u32 num_fields
//     per field: i32 id, u8 nullable, u16 name length, name,
//                u8 type id, u8 precision, u8 scale, u8 vector element, u32 dim
//     u64 num_blocks
//     per field, per block: u64 offset, u64 stored_size, u64 decoded_size,
//                           u8 encoding, u64 XXH3 of the stored bytes, u32 null_count
//   u64 footer length, u64 XXH3 of the footer, "VGLFRAG1"
//
// The blocks tile the bytes between the leading magic and the footer exactly,
// so every byte of the file is covered by a checksum or checked structurally.
#include "vigil/storage/fragment.h"

#include <zstd.h>

#include <unordered_map>

#include "storage/column_codec.h"
#include "vigil/common/bounds.h"
#include "vigil/common/checksum.h"
#include "vigil/common/names.h"

namespace vigil {

namespace {

using codec::BlockEncoding;

constexpr std::string_view kFragmentMagic = "VGLFRAG1";
constexpr uint32_t kFormatVersion = 1;
constexpr uint64_t kTrailerSize = 24;  // footer length, footer checksum, magic
constexpr uint64_t kBlockEntrySize = 8 + 8 + 8 + 1 + 8 + 4;
constexpr uint32_t kMaxRowsPerBlock = 1u << 22;

struct BlockEntry {
  uint64_t offset = 0;
  uint64_t stored_size = 0;
  uint64_t decoded_size = 0;
  BlockEncoding encoding = BlockEncoding::kRaw;
  uint64_t checksum = 0;
  uint32_t null_count = 0;
};

uint64_t NumBlocks(uint64_t rows, uint32_t rows_per_block) { return (rows + rows_per_block - 1) / rows_per_block; }

uint32_t RowsInBlock(uint64_t num_rows, uint32_t rows_per_block, size_t block) {
  uint64_t begin = static_cast<uint64_t>(block) * rows_per_block;
  return static_cast<uint32_t>(std::min<uint64_t>(rows_per_block, num_rows - begin));
}

void PutField(std::string* out, const Field& f) {
  const DataType& t = f.type;
  const bool vec = t.id == TypeId::kVector;
  const bool dec = t.id == TypeId::kDecimal;
  codec::PutU32(out, static_cast<uint32_t>(f.id));
  codec::PutU8(out, f.nullable ? 1 : 0);
  codec::PutU16(out, static_cast<uint16_t>(f.name.size()));
  out->append(f.name);
  codec::PutU8(out, static_cast<uint8_t>(t.id));
  codec::PutU8(out, dec ? t.precision : 0);
  codec::PutU8(out, dec ? t.scale : 0);
  codec::PutU8(out, vec ? static_cast<uint8_t>(t.element) : 0);
  codec::PutU32(out, vec ? t.dim : 0);
}

void PutEntry(std::string* out, const BlockEntry& e) {
  codec::PutU64(out, e.offset);
  codec::PutU64(out, e.stored_size);
  codec::PutU64(out, e.decoded_size);
  codec::PutU8(out, static_cast<uint8_t>(e.encoding));
  codec::PutU64(out, e.checksum);
  codec::PutU32(out, e.null_count);
}

// False when truncated or when the encoding is unknown.
bool ReadEntry(codec::ByteReader* r, BlockEntry* e) {
  uint8_t encoding = 0;
  if (!r->U64(&e->offset) || !r->U64(&e->stored_size) || !r->U64(&e->decoded_size) || !r->U8(&encoding) ||
      !r->U64(&e->checksum) || !r->U32(&e->null_count)) {
    return false;
  }
  e->encoding = static_cast<BlockEncoding>(encoding);
  return encoding <= static_cast<uint8_t>(BlockEncoding::kZstd);
}

// ---------------------------------------------------------------- writer

class FragmentWriterImpl final : public FragmentWriter {
 public:
  FragmentWriterImpl(std::unique_ptr<WritableFile> file, std::string path, SchemaPtr schema,
                     FragmentWriterOptions options)
      : file_(std::move(file)), path_(std::move(path)), schema_(std::move(schema)), options_(options) {
    for (const Field& f : schema_->fields()) pending_.emplace_back(f.type);
    blocks_.resize(schema_->num_fields());
  }

  Status Write(const RecordBatch& batch) override;
  Result<FragmentFileInfo> Finish() override;
  uint64_t rows_written() const override { return rows_written_; }

 private:
  Status CheckUsable() const;
  Status CheckBatch(const RecordBatch& batch) const;
  Status FlushBlock();
  Status WriteColumnBlock(size_t field);
  std::string EncodeFooter() const;
  Status Fail(Status st);

  std::unique_ptr<WritableFile> file_;
  const std::string path_;
  const SchemaPtr schema_;
  const FragmentWriterOptions options_;
  std::vector<Column> pending_;  // the current partial block, one per field
  uint32_t pending_rows_ = 0;
  uint64_t rows_written_ = 0;                    // pending rows included
  uint64_t offset_ = kFragmentMagic.size();      // where the next block goes
  std::vector<std::vector<BlockEntry>> blocks_;  // [field][block]
  Status failed_;                                // first write error; the writer is unusable after it
  bool finished_ = false;
};

Status FragmentWriterImpl::Fail(Status st) {
  if (!st.ok() && failed_.ok()) failed_ = st;
  return st;
}

Status FragmentWriterImpl::CheckUsable() const {
  if (finished_) return Status::FailedPrecondition("fragment writer for " + path_ + " is already finished");
  if (!failed_.ok()) return failed_.WithContext("fragment writer failed earlier");
  return Status::OK();
}

Status FragmentWriterImpl::CheckBatch(const RecordBatch& batch) const {
  const std::string where = "batch for fragment " + path_;
  if (batch.columns.size() != schema_->num_fields()) {
    return Status::InvalidArgument(where + " has " + std::to_string(batch.columns.size()) +
                                   " columns; the schema has " + std::to_string(schema_->num_fields()));
  }
  for (size_t i = 0; i < batch.columns.size(); ++i) {
    const Field& f = schema_->field(i);
    const Column& c = batch.columns[i];
    if (!(c.type() == f.type)) {
      return Status::InvalidArgument(where + ": column '" + f.name + "' is " + c.type().ToString() +
                                     "; the schema says " + f.type.ToString());
    }
    if (c.size() != batch.num_rows) {
      return Status::InvalidArgument(where + ": column '" + f.name + "' has " + std::to_string(c.size()) +
                                     " rows; the batch has " + std::to_string(batch.num_rows));
    }
    if (!f.nullable && codec::CountNulls(c) > 0) {
      return Status::InvalidArgument(where + ": column '" + f.name + "' is NOT NULL but holds nulls");
    }
  }
  if (rows_written_ + batch.num_rows > UINT32_MAX) {
    return Status::InvalidArgument(where + ": a fragment holds at most " + std::to_string(UINT32_MAX) + " rows");
  }
  return Status::OK();
}

Status FragmentWriterImpl::Write(const RecordBatch& batch) {
  VIGIL_RETURN_IF_ERROR(CheckUsable());
  VIGIL_RETURN_IF_ERROR(CheckBatch(batch));
  size_t done = 0;
  while (done < batch.num_rows) {
    size_t n = std::min<size_t>(batch.num_rows - done, options_.rows_per_block - pending_rows_);
    for (size_t i = 0; i < pending_.size(); ++i) pending_[i].AppendRange(batch.columns[i], done, done + n);
    pending_rows_ += static_cast<uint32_t>(n);
    rows_written_ += n;
    done += n;
    if (pending_rows_ == options_.rows_per_block) VIGIL_RETURN_IF_ERROR(Fail(FlushBlock()));
  }
  return Status::OK();
}

Status FragmentWriterImpl::FlushBlock() {
  for (size_t i = 0; i < pending_.size(); ++i) {
    VIGIL_RETURN_IF_ERROR(WriteColumnBlock(i));
    pending_[i] = Column(schema_->field(i).type);
  }
  pending_rows_ = 0;
  return Status::OK();
}

Status FragmentWriterImpl::WriteColumnBlock(size_t field) {
  const Column& column = pending_[field];
  const uint32_t nulls = codec::CountNulls(column);
  std::string decoded = codec::EncodeBlock(column, nulls);
  if (decoded.size() > bounds::kMaxBlockBytes) {
    return Status::InvalidArgument("fragment " + path_ + ": block " + std::to_string(blocks_[field].size()) +
                                   " of column '" + schema_->field(field).name + "' would be " +
                                   std::to_string(decoded.size()) + " bytes; the limit is " +
                                   std::to_string(bounds::kMaxBlockBytes) + " (lower rows_per_block)");
  }
  std::string compressed;
  VIGIL_ASSIGN_OR_RETURN(BlockEncoding encoding,
                         codec::CompressBlock(decoded, column.type(), options_.zstd_level, &compressed));
  std::string_view stored = encoding == BlockEncoding::kRaw ? std::string_view(decoded) : compressed;
  VIGIL_RETURN_IF_ERROR(file_->Append(stored));
  blocks_[field].push_back(BlockEntry{offset_, stored.size(), decoded.size(), encoding, Checksum64(stored), nulls});
  offset_ += stored.size();
  return Status::OK();
}

std::string FragmentWriterImpl::EncodeFooter() const {
  std::string out;
  codec::PutU32(&out, kFormatVersion);
  codec::PutU64(&out, rows_written_);
  codec::PutU32(&out, options_.rows_per_block);
  codec::PutU32(&out, static_cast<uint32_t>(schema_->num_fields()));
  for (const Field& f : schema_->fields()) PutField(&out, f);
  codec::PutU64(&out, NumBlocks(rows_written_, options_.rows_per_block));
  for (const auto& column : blocks_) {
    for (const BlockEntry& e : column) PutEntry(&out, e);
  }
  return out;
}

Result<FragmentFileInfo> FragmentWriterImpl::Finish() {
  VIGIL_RETURN_IF_ERROR(CheckUsable());
  if (pending_rows_ > 0) VIGIL_RETURN_IF_ERROR(Fail(FlushBlock()));
  std::string tail = EncodeFooter();
  if (tail.size() > bounds::kMaxFragmentFooterBytes) {
    return Fail(Status::InvalidArgument("fragment " + path_ + ": footer of " + std::to_string(tail.size()) +
                                        " bytes exceeds the limit (raise rows_per_block)"));
  }
  const uint64_t footer_checksum = Checksum64(tail);
  const uint64_t footer_size = tail.size();
  codec::PutU64(&tail, footer_size);
  codec::PutU64(&tail, footer_checksum);
  tail.append(kFragmentMagic);
  VIGIL_RETURN_IF_ERROR(Fail(file_->Append(tail)));
  VIGIL_RETURN_IF_ERROR(Fail(file_->Sync()));
  VIGIL_RETURN_IF_ERROR(Fail(file_->Close()));
  finished_ = true;
  return FragmentFileInfo{rows_written_, offset_ + tail.size(), footer_checksum};
}

// ---------------------------------------------------------------- reader

class FragmentReaderImpl final : public FragmentReader {
 public:
  FragmentReaderImpl(std::unique_ptr<RandomAccessFile> file, std::string path, BlockCache* cache)
      : file_(std::move(file)), path_(std::move(path)), cache_(cache) {}

  // Reads and verifies the magic, trailer and footer.
  Status Load();

  uint64_t num_rows() const override { return num_rows_; }
  uint32_t rows_per_block() const override { return rows_per_block_; }
  size_t num_blocks() const override { return num_blocks_; }
  const std::string& path() const override { return path_; }
  const std::vector<Field>& fields() const override { return fields_; }

  Result<std::shared_ptr<const Column>> ReadBlock(int32_t field_id, size_t block) const override;
  Result<Column> ReadColumn(int32_t field_id) const override;
  Result<std::vector<Value>> ReadRow(uint32_t offset, const std::vector<int32_t>& field_ids) const override;

 private:
  Status Corrupt(const std::string& what) const { return Status::Corruption("fragment " + path_ + ": " + what); }
  Result<std::string> LoadFooter();
  Status ParseFooter(std::string_view footer, uint64_t footer_start);
  Status ParseField(codec::ByteReader* r, size_t index);
  Status ParseBlocks(codec::ByteReader* r, uint64_t footer_start);
  Status CheckEntry(const BlockEntry& e, size_t field, size_t block) const;
  Result<size_t> FieldIndex(int32_t field_id) const;
  Result<std::shared_ptr<const Column>> LoadBlock(size_t field, size_t block) const;
  const BlockEntry& Entry(size_t field, size_t block) const { return blocks_[field * num_blocks_ + block]; }

  const std::unique_ptr<RandomAccessFile> file_;
  const std::string path_;
  BlockCache* const cache_;
  std::string cache_prefix_;  // path and footer checksum: a rewritten path never hits stale blocks
  uint64_t num_rows_ = 0;
  uint32_t rows_per_block_ = 0;
  size_t num_blocks_ = 0;
  std::vector<Field> fields_;
  std::unordered_map<int32_t, size_t> field_index_;
  std::vector<BlockEntry> blocks_;  // [field * num_blocks_ + block]
};

Result<std::string> FragmentReaderImpl::LoadFooter() {
  const uint64_t size = file_->Size();
  if (size < kFragmentMagic.size() + kTrailerSize) {
    return Corrupt("file is " + std::to_string(size) + " bytes, smaller than an empty fragment");
  }
  std::string head;
  VIGIL_RETURN_IF_ERROR(file_->Read(0, kFragmentMagic.size(), &head));
  if (head != kFragmentMagic) return Corrupt("bad leading magic");
  std::string trailer;
  VIGIL_RETURN_IF_ERROR(file_->Read(size - kTrailerSize, kTrailerSize, &trailer));
  if (std::string_view(trailer).substr(16) != kFragmentMagic) return Corrupt("bad trailing magic");
  uint64_t footer_size = 0;
  uint64_t footer_checksum = 0;
  std::memcpy(&footer_size, trailer.data(), 8);
  std::memcpy(&footer_checksum, trailer.data() + 8, 8);
  if (footer_size > bounds::kMaxFragmentFooterBytes || footer_size > size - kFragmentMagic.size() - kTrailerSize) {
    return Corrupt("footer length " + std::to_string(footer_size) + " does not fit a " + std::to_string(size) +
                   "-byte file");
  }
  std::string footer;
  VIGIL_RETURN_IF_ERROR(file_->Read(size - kTrailerSize - footer_size, footer_size, &footer));
  if (Checksum64(footer) != footer_checksum) return Corrupt("footer checksum mismatch");
  cache_prefix_ = path_ + "#" + ChecksumToHex(footer_checksum) + "#";
  return footer;
}

Status FragmentReaderImpl::Load() {
  VIGIL_ASSIGN_OR_RETURN(std::string footer, LoadFooter());
  return ParseFooter(footer, file_->Size() - kTrailerSize - footer.size());
}

Status FragmentReaderImpl::ParseFooter(std::string_view footer, uint64_t footer_start) {
  codec::ByteReader r(footer);
  uint32_t version = 0;
  uint32_t num_fields = 0;
  if (!r.U32(&version) || !r.U64(&num_rows_) || !r.U32(&rows_per_block_) || !r.U32(&num_fields)) {
    return Corrupt("footer header is truncated");
  }
  if (version != kFormatVersion) return Corrupt("unsupported format version " + std::to_string(version));
  if (num_rows_ > UINT32_MAX) return Corrupt("row count " + std::to_string(num_rows_) + " exceeds the limit");
  if (rows_per_block_ == 0 || rows_per_block_ > kMaxRowsPerBlock) {
    return Corrupt("rows_per_block " + std::to_string(rows_per_block_) + " is out of range");
  }
  if (num_fields > bounds::kMaxFieldsPerSchema) return Corrupt(std::to_string(num_fields) + " fields exceed the limit");
  fields_.resize(num_fields);
  for (size_t i = 0; i < num_fields; ++i) VIGIL_RETURN_IF_ERROR(ParseField(&r, i));
  return ParseBlocks(&r, footer_start);
}

Status FragmentReaderImpl::ParseField(codec::ByteReader* r, size_t index) {
  const std::string what = "field " + std::to_string(index);
  Field& f = fields_[index];
  uint8_t nullable = 0, type_id = 0, element = 0;
  uint16_t name_size = 0;
  std::string_view name;
  if (!r->I32(&f.id) || !r->U8(&nullable) || !r->U16(&name_size) || !r->Bytes(name_size, &name) || !r->U8(&type_id) ||
      !r->U8(&f.type.precision) || !r->U8(&f.type.scale) || !r->U8(&element) || !r->U32(&f.type.dim)) {
    return Corrupt(what + " is truncated");
  }
  if (f.id < 0 || nullable > 1 || name_size > kMaxIdentifierLength) {
    return Corrupt(what + " has id " + std::to_string(f.id) + ", nullable " + std::to_string(nullable) +
                   ", name length " + std::to_string(name_size));
  }
  f.nullable = nullable == 1;
  f.name = std::string(name);
  f.type.id = static_cast<TypeId>(type_id);
  if (f.type.id == TypeId::kVector) f.type.element = static_cast<VectorElement>(element);
  Status st = codec::ValidateStoredType(f.type, what);
  if (!st.ok()) return Corrupt(st.message());
  if (!field_index_.emplace(f.id, index).second) return Corrupt("field id " + std::to_string(f.id) + " repeats");
  return Status::OK();
}

Status FragmentReaderImpl::ParseBlocks(codec::ByteReader* r, uint64_t footer_start) {
  uint64_t num_blocks = 0;
  if (!r->U64(&num_blocks)) return Corrupt("footer block count is truncated");
  if (num_blocks != NumBlocks(num_rows_, rows_per_block_)) {
    return Corrupt(std::to_string(num_blocks) + " blocks cannot hold " + std::to_string(num_rows_) + " rows of " +
                   std::to_string(rows_per_block_) + " per block");
  }
  num_blocks_ = static_cast<size_t>(num_blocks);
  const uint64_t entries = num_blocks * fields_.size();
  if (entries * kBlockEntrySize != r->remaining()) {
    return Corrupt("footer has " + std::to_string(r->remaining()) + " bytes of block entries; " +
                   std::to_string(entries) + " entries need " + std::to_string(entries * kBlockEntrySize));
  }
  blocks_.resize(entries);
  for (BlockEntry& e : blocks_) {
    if (!ReadEntry(r, &e)) return Corrupt("block entries are truncated or name an unknown encoding");
  }
  uint64_t expected = kFragmentMagic.size();  // blocks are laid out block-major, back to back
  for (size_t b = 0; b < num_blocks_; ++b) {
    for (size_t f = 0; f < fields_.size(); ++f) {
      const BlockEntry& e = Entry(f, b);
      VIGIL_RETURN_IF_ERROR(CheckEntry(e, f, b));
      if (e.offset != expected || e.stored_size > footer_start - expected) {
        return Corrupt("block " + std::to_string(b) + " of field " + std::to_string(fields_[f].id) + " at [" +
                       std::to_string(e.offset) + ", +" + std::to_string(e.stored_size) +
                       ") is out of place; expected offset " + std::to_string(expected));
      }
      expected += e.stored_size;
    }
  }
  if (expected != footer_start) {
    return Corrupt("blocks end at " + std::to_string(expected) + " but the footer starts at " +
                   std::to_string(footer_start));
  }
  return Status::OK();
}

Status FragmentReaderImpl::CheckEntry(const BlockEntry& e, size_t field, size_t block) const {
  const Field& f = fields_[field];
  const std::string what = "block " + std::to_string(block) + " of field " + std::to_string(f.id);
  const uint32_t rows = RowsInBlock(num_rows_, rows_per_block_, block);
  if (e.stored_size > bounds::kMaxBlockBytes || e.decoded_size > bounds::kMaxBlockBytes) {
    return Corrupt(what + " is larger than the block limit");
  }
  if (e.encoding == BlockEncoding::kRaw && e.stored_size != e.decoded_size) {
    return Corrupt(what + " is raw but its stored and decoded sizes differ");
  }
  if (e.null_count > rows || (e.null_count > 0 && !f.nullable)) {
    return Corrupt(what + " has " + std::to_string(e.null_count) + " nulls in " + std::to_string(rows) + " rows");
  }
  const uint64_t min = codec::MinDecodedSize(f.type, rows, e.null_count);
  if (e.decoded_size < min || (f.type.id != TypeId::kString && e.decoded_size != min)) {
    return Corrupt(what + " decodes to " + std::to_string(e.decoded_size) + " bytes; " + std::to_string(rows) +
                   " rows need " + std::to_string(min));
  }
  return Status::OK();
}

Result<size_t> FragmentReaderImpl::FieldIndex(int32_t field_id) const {
  auto it = field_index_.find(field_id);
  if (it == field_index_.end()) {
    return Status::NotFound("fragment " + path_ + " has no field with id " + std::to_string(field_id));
  }
  return it->second;
}

Result<std::shared_ptr<const Column>> FragmentReaderImpl::LoadBlock(size_t field, size_t block) const {
  const BlockEntry& e = Entry(field, block);
  const std::string what =
      "fragment " + path_ + ": block " + std::to_string(block) + " of field " + std::to_string(fields_[field].id);
  std::string stored;
  Status st = file_->Read(e.offset, e.stored_size, &stored);
  if (!st.ok()) return st.WithContext(what);
  if (Checksum64(stored) != e.checksum) return Status::Corruption(what + ": checksum mismatch");
  Result<std::string> decoded = codec::DecompressBlock(std::move(stored), e.encoding, e.decoded_size);
  if (!decoded.ok()) return decoded.status().WithContext(what);
  const uint32_t rows = RowsInBlock(num_rows_, rows_per_block_, block);
  Result<Column> column = codec::DecodeBlock(std::move(decoded).value(), fields_[field].type, rows, e.null_count);
  if (!column.ok()) return column.status().WithContext(what);
  return std::make_shared<const Column>(std::move(column).value());
}

Result<std::shared_ptr<const Column>> FragmentReaderImpl::ReadBlock(int32_t field_id, size_t block) const {
  VIGIL_ASSIGN_OR_RETURN(size_t field, FieldIndex(field_id));
  if (block >= num_blocks_) {
    return Status::InvalidArgument("fragment " + path_ + ": block " + std::to_string(block) +
                                   " is out of range; it has " + std::to_string(num_blocks_) + " blocks");
  }
  std::string key;
  if (cache_ != nullptr) {
    key = cache_prefix_ + std::to_string(field_id) + "/" + std::to_string(block);
    if (auto hit = cache_->Lookup(key)) return hit;
  }
  VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const Column> column, LoadBlock(field, block));
  if (cache_ != nullptr) cache_->Insert(key, column);
  return column;
}

Result<Column> FragmentReaderImpl::ReadColumn(int32_t field_id) const {
  VIGIL_ASSIGN_OR_RETURN(size_t field, FieldIndex(field_id));
  Column out(fields_[field].type);
  out.Reserve(static_cast<size_t>(num_rows_));
  for (size_t b = 0; b < num_blocks_; ++b) {
    VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const Column> block, ReadBlock(field_id, b));
    out.AppendRange(*block, 0, block->size());
  }
  return out;
}

Result<std::vector<Value>> FragmentReaderImpl::ReadRow(uint32_t offset, const std::vector<int32_t>& field_ids) const {
  if (offset >= num_rows_) {
    return Status::InvalidArgument("fragment " + path_ + ": row " + std::to_string(offset) +
                                   " is out of range; it has " + std::to_string(num_rows_) + " rows");
  }
  std::vector<Value> row;
  row.reserve(field_ids.size());
  for (int32_t id : field_ids) {
    VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const Column> block, ReadBlock(id, offset / rows_per_block_));
    row.push_back(block->ValueAt(offset % rows_per_block_));
  }
  return row;
}

}  // namespace

Result<std::unique_ptr<FragmentWriter>> FragmentWriter::Create(FileSystem* fs, const std::string& path,
                                                               SchemaPtr schema, FragmentWriterOptions options) {
  if (schema == nullptr) return Status::InvalidArgument("fragment " + path + ": no schema");
  if (options.rows_per_block == 0 || options.rows_per_block > kMaxRowsPerBlock) {
    return Status::InvalidArgument("fragment " + path + ": rows_per_block " + std::to_string(options.rows_per_block) +
                                   " is outside 1.." + std::to_string(kMaxRowsPerBlock));
  }
  if (options.zstd_level < ZSTD_minCLevel() || options.zstd_level > ZSTD_maxCLevel()) {
    return Status::InvalidArgument("fragment " + path + ": zstd level " + std::to_string(options.zstd_level) +
                                   " is outside " + std::to_string(ZSTD_minCLevel()) + ".." +
                                   std::to_string(ZSTD_maxCLevel()));
  }
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(path));
  VIGIL_RETURN_IF_ERROR(file->Append(kFragmentMagic));
  return std::unique_ptr<FragmentWriter>(new FragmentWriterImpl(std::move(file), path, std::move(schema), options));
}

Result<std::shared_ptr<FragmentReader>> FragmentReader::Open(FileSystem* fs, const std::string& path,
                                                             BlockCache* cache) {
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->NewRandomAccessFile(path));
  auto reader = std::make_shared<FragmentReaderImpl>(std::move(file), path, cache);
  VIGIL_RETURN_IF_ERROR(reader->Load());
  return std::shared_ptr<FragmentReader>(std::move(reader));
}

}  // namespace vigil

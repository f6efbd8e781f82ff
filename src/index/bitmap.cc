// BITMAP segments: one file, `bitmap.idx`.
//
//   "VGLBMAP1"
//   bitmaps     per distinct value, in key order: a Roaring64Map of its row
//               addresses in CRoaring's portable 64-bit serialization
//   dictionary  u8 key kind, u8 type id, u8 decimal scale, u64 value count, then
//               per value: key (scalar_format.h encoding), u64 offset, u64 size,
//               u64 cardinality, u64 XXH3-64 of the serialized bitmap
//   footer      (scalar_format.h)
//
// The reader keeps the dictionary in memory; a bitmap is read when a predicate
// needs it, its checksum verified before CRoaring parses it (older CRoaring
// deserializers are not hardened), and kept in an LRU. Thread-safe once opened.
#include <algorithm>

#include "index/scalar_format.h"
#include "vigil/common/checksum.h"
#include "vigil/common/lru_cache.h"

namespace vigil::index {

namespace {

using internal::ByteReader;
using internal::KeyKind;
using internal::SortedKeys;

constexpr std::string_view kMagic = "VGLBMAP1";
constexpr char kFileName[] = "bitmap.idx";
constexpr size_t kBitmapCacheBytes = 64 << 20;

bool BitmapTypeOk(const DataType& t) {
  return t.id == TypeId::kBool || t.IsInteger() || t.id == TypeId::kString || t.id == TypeId::kDate;
}

// ---- writing ----

Status WriteBitmaps(const SortedKeys& keys, const DataType& type, SegmentWriter* writer, const ProgressFn& progress) {
  VIGIL_RETURN_IF_ERROR(writer->BeginFile(kFileName));
  VIGIL_RETURN_IF_ERROR(writer->AppendToFile(kMagic));
  std::string dict;
  uint64_t num_values = 0, offset = kMagic.size();
  std::string buf;
  for (size_t begin = 0; begin < keys.size();) {
    size_t end = begin + 1;
    while (end < keys.size() && keys.SameKey(begin, end)) ++end;
    Roaring64Map bitmap;
    for (size_t i = begin; i < end; ++i) bitmap.add(keys.RowAt(i));
    bitmap.runOptimize();
    buf.resize(bitmap.getSizeInBytes(true));
    VIGIL_CHECK(bitmap.write(buf.data(), true) == buf.size());
    VIGIL_RETURN_IF_ERROR(writer->AppendToFile(buf));
    internal::PutKey(&dict, keys.ValueAt(begin), keys.kind);
    internal::PutU64(&dict, offset);
    internal::PutU64(&dict, buf.size());
    internal::PutU64(&dict, end - begin);
    internal::PutU64(&dict, Checksum64(buf));
    offset += buf.size();
    ++num_values;
    begin = end;
    if (progress) progress("writing", begin, keys.size());
  }
  std::string meta;
  internal::PutU8(&meta, static_cast<uint8_t>(keys.kind));
  internal::PutU8(&meta, static_cast<uint8_t>(type.id));
  internal::PutU8(&meta, type.scale);
  internal::PutU64(&meta, num_values);
  meta += dict;
  VIGIL_RETURN_IF_ERROR(writer->AppendToFile(meta));
  internal::Footer footer{offset, meta.size(), keys.size(), Checksum64(meta)};
  VIGIL_RETURN_IF_ERROR(writer->AppendToFile(internal::EncodeFooter(footer, kMagic)));
  return writer->EndFile();
}

// ---- reading ----

struct Entry {
  Value key;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t cardinality = 0;
  uint64_t checksum = 0;
};

class BitmapSegment : public ScalarSegment {
 public:
  BitmapSegment(std::shared_ptr<SegmentFiles> files, Field field, std::unique_ptr<RandomAccessFile> file)
      : ScalarSegment(std::move(files)),
        field_(std::move(field)),
        kind_(internal::KeyKindOf(field_.type)),
        file_(std::move(file)),
        cache_(kBitmapCacheBytes) {}

  // Reads and checks the dictionary; bitmaps are checked when first read.
  Status Load() {
    internal::Footer footer;
    VIGIL_ASSIGN_OR_RETURN(std::string meta, internal::ReadMetadata(*file_, kMagic, file_->path(), &footer));
    ByteReader r(meta);
    uint8_t kind = 0, type_id = 0, scale = 0;
    uint64_t count = 0;
    if (!r.U8(&kind) || !r.U8(&type_id) || !r.U8(&scale) || !r.U64(&count)) return Bad("dictionary is truncated");
    if (kind != static_cast<uint8_t>(kind_) || type_id != static_cast<uint8_t>(field_.type.id) ||
        scale != field_.type.scale) {
      return Bad("was built for another column type than " + field_.type.ToString());
    }
    const size_t min_entry = kind_ == KeyKind::kString ? 36 : 40;
    if (count > r.remaining() / min_entry) return Bad("dictionary value count is too large");
    entries_.resize(count);
    uint64_t expect_offset = kMagic.size(), rows = 0;
    for (uint64_t i = 0; i < count; ++i) {
      VIGIL_RETURN_IF_ERROR(LoadEntry(&r, i, expect_offset));
      expect_offset += entries_[i].size;
      rows += entries_[i].cardinality;
    }
    if (r.remaining() != 0 || expect_offset != footer.meta_offset || rows != footer.num_rows) {
      return Bad("dictionary does not account for the file");
    }
    return Status::OK();
  }

  bool Supports(ScalarPredicate::Op op) const override {
    using Op = ScalarPredicate::Op;
    return op == Op::kEq || op == Op::kIn || op == Op::kIsNull;
  }

  Result<Roaring64Map> Evaluate(const ScalarPredicate& p) const override {
    if (!Supports(p.op)) return Status::NotSupported("BITMAP segments answer =, IN and IS NULL only");
    VIGIL_RETURN_IF_ERROR(internal::ValidatePredicateShape(p, field_.type));
    try {
      Roaring64Map out;
      for (const Value& v : p.values) VIGIL_RETURN_IF_ERROR(AddEqual(v, &out));  // kIsNull has none
      return out;
    } catch (const std::exception& e) {
      return Status::Internal(std::string("BITMAP evaluation failed: ") + e.what());
    }
  }

  size_t MemoryBytes() const override {
    size_t n = sizeof(*this) + entries_.capacity() * sizeof(Entry) + cache_.usage_bytes();
    if (kind_ == KeyKind::kString) {
      for (const auto& e : entries_) n += std::get<std::string>(e.key).size();
    }
    return n;
  }

 private:
  Status Bad(const std::string& what) const { return Status::Corruption(file_->path() + ": " + what); }

  Status LoadEntry(ByteReader* r, uint64_t i, uint64_t expect_offset) {
    Entry& e = entries_[i];
    if (!internal::ReadKey(r, kind_, &e.key) || !r->U64(&e.offset) || !r->U64(&e.size) || !r->U64(&e.cardinality) ||
        !r->U64(&e.checksum)) {
      return Bad("dictionary entry " + std::to_string(i) + " is truncated or invalid");
    }
    if (e.offset != expect_offset || e.size < 8 || e.size > file_->Size() - e.offset || e.cardinality == 0) {
      return Bad("dictionary entry " + std::to_string(i) + " has a bad offset, size or cardinality");
    }
    if (i > 0 && CompareValues(entries_[i - 1].key, e.key, field_.type) >= 0) {
      return Bad("dictionary keys are out of order at " + std::to_string(i));
    }
    return Status::OK();
  }

  // Parses verified bytes; CRoaring throws std::runtime_error on malformed input.
  Result<Roaring64Map> Deserialize(const std::string& bytes, const Entry& e) const {
    try {
      Roaring64Map bitmap = Roaring64Map::readSafe(bytes.data(), bytes.size());
      if (bitmap.getSizeInBytes(true) != bytes.size() || bitmap.cardinality() != e.cardinality) {
        return Status::Corruption("size or cardinality differs from the dictionary");
      }
      if (!internal::CoveredRow(meta().covered_fragments, bitmap.minimum()) ||
          !internal::CoveredRow(meta().covered_fragments, bitmap.maximum())) {
        return Status::Corruption("holds a row outside the covered fragments");
      }
      return bitmap;
    } catch (const std::exception& ex) {
      return Status::Corruption(std::string("does not parse: ") + ex.what());
    }
  }

  Result<std::shared_ptr<const Roaring64Map>> LoadBitmap(size_t i) const {
    if (auto bitmap = cache_.Get(i)) return bitmap;
    const Entry& e = entries_[i];
    std::string bytes;
    VIGIL_RETURN_IF_ERROR(file_->Read(e.offset, e.size, &bytes));
    if (Checksum64(bytes) != e.checksum) return Bad("bitmap " + std::to_string(i) + " checksum mismatch");
    auto bitmap = Deserialize(bytes, e);
    if (!bitmap.ok()) return Bad("bitmap " + std::to_string(i) + " " + bitmap.status().message());
    auto shared = std::make_shared<const Roaring64Map>(std::move(*bitmap));
    cache_.Put(i, shared, e.size);
    return shared;
  }

  Status AddEqual(const Value& v, Roaring64Map* out) const {
    if (IsNull(v)) return Status::OK();
    auto lo = std::partition_point(entries_.begin(), entries_.end(),
                                   [&](const Entry& e) { return CompareValues(e.key, v, field_.type) < 0; });
    for (auto it = lo; it != entries_.end() && CompareValues(it->key, v, field_.type) == 0; ++it) {
      VIGIL_ASSIGN_OR_RETURN(auto bitmap, LoadBitmap(it - entries_.begin()));
      *out |= *bitmap;
    }
    return Status::OK();
  }

  Field field_;
  KeyKind kind_;
  std::unique_ptr<RandomAccessFile> file_;
  std::vector<Entry> entries_;
  mutable LruCache<size_t, Roaring64Map> cache_;  // thread-safe
};

}  // namespace

Status BuildBitmapSegment(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                          SegmentWriter* writer, const ProgressFn& progress) {
  try {
    VIGIL_ASSIGN_OR_RETURN(SortedKeys keys,
                           internal::CollectSortedKeys(dataset, field, fragments, BitmapTypeOk, "BITMAP", progress));
    return WriteBitmaps(keys, field.type, writer, progress);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("BITMAP build ran out of memory");
  } catch (const std::runtime_error& e) {
    return Status::Internal(std::string("BITMAP build failed in CRoaring: ") + e.what());
  }
}

Result<std::shared_ptr<ScalarSegment>> OpenBitmapSegment(std::shared_ptr<SegmentFiles> files, const Field& field) {
  if (!BitmapTypeOk(field.type)) {
    return Status::InvalidArgument("BITMAP cannot index type " + field.type.ToString());
  }
  VIGIL_ASSIGN_OR_RETURN(auto file, files->OpenVerified(kFileName));
  auto seg = std::make_shared<BitmapSegment>(std::move(files), field, std::move(file));
  VIGIL_RETURN_IF_ERROR(seg->Load());
  return std::shared_ptr<ScalarSegment>(std::move(seg));
}

}  // namespace vigil::index

// BTREE segments: one file, `btree.idx`.
//
//   "VGLBTRE1"
//   pages       each: body, u64 XXH3-64 of the body. Body: u32 count, then for
//               fixed kinds count i64 keys, for STRING (count + 1) u32 offsets
//               (first 0) and the bytes; then count u64 row addresses. Entries
//               are sorted by (key, row address); at most 4096 per page and
//               about 64 KiB of body.
//   directory   u8 key kind, u8 type id, u8 decimal scale, u32 page count, then
//               per page: u64 offset, u32 size (body + checksum), u32 count,
//               min key, max key (scalar_format.h key encoding)
//   footer      (scalar_format.h)
//
// The reader keeps the directory in memory, reads only the pages a predicate
// needs and keeps decoded pages in an LRU. Thread-safe once opened.
#include <algorithm>

#include "index/scalar_format.h"
#include "vigil/common/checksum.h"
#include "vigil/common/lru_cache.h"

namespace vigil::index {

namespace {

using internal::ByteReader;
using internal::KeyKind;
using internal::SortedKeys;

constexpr std::string_view kMagic = "VGLBTRE1";
constexpr char kFileName[] = "btree.idx";
constexpr size_t kMaxPageEntries = 4096;
constexpr size_t kMaxPageBytes = 64 * 1024;
constexpr size_t kPageCacheBytes = 64 << 20;

bool BtreeTypeOk(const DataType& t) {
  return t.IsNumeric() || t.id == TypeId::kString || t.id == TypeId::kDate || t.id == TypeId::kTimestamp;
}

// ---- writing ----

size_t EntryBytes(const SortedKeys& keys, size_t i) {
  return keys.kind == KeyKind::kString ? 12 + keys.StringAt(i).size() : 16;
}

// Body of the page holding sorted entries [begin, end).
std::string EncodePage(const SortedKeys& keys, size_t begin, size_t end) {
  std::string body;
  internal::PutU32(&body, static_cast<uint32_t>(end - begin));
  if (keys.kind == KeyKind::kString) {
    uint32_t off = 0;
    internal::PutU32(&body, 0);
    for (size_t i = begin; i < end; ++i) internal::PutU32(&body, off += keys.StringAt(i).size());
    for (size_t i = begin; i < end; ++i) body.append(keys.StringAt(i));
  } else {
    for (size_t i = begin; i < end; ++i) internal::PutU64(&body, static_cast<uint64_t>(keys.fixed[i].first));
  }
  for (size_t i = begin; i < end; ++i) internal::PutU64(&body, keys.RowAt(i));
  return body;
}

Status WriteBtree(const SortedKeys& keys, const DataType& type, SegmentWriter* writer, const ProgressFn& progress,
                  size_t max_entries, size_t max_bytes) {
  VIGIL_RETURN_IF_ERROR(writer->BeginFile(kFileName));
  VIGIL_RETURN_IF_ERROR(writer->AppendToFile(kMagic));
  std::string dir;
  uint32_t num_pages = 0;
  uint64_t offset = kMagic.size();
  for (size_t begin = 0; begin < keys.size();) {
    size_t end = begin, bytes = 4;
    while (end < keys.size() && end - begin < max_entries &&
           (end == begin || bytes + EntryBytes(keys, end) <= max_bytes)) {
      bytes += EntryBytes(keys, end++);
    }
    std::string page = EncodePage(keys, begin, end);
    internal::PutU64(&page, Checksum64(page));
    VIGIL_RETURN_IF_ERROR(writer->AppendToFile(page));
    internal::PutU64(&dir, offset);
    internal::PutU32(&dir, static_cast<uint32_t>(page.size()));
    internal::PutU32(&dir, static_cast<uint32_t>(end - begin));
    internal::PutKey(&dir, keys.ValueAt(begin), keys.kind);
    internal::PutKey(&dir, keys.ValueAt(end - 1), keys.kind);
    offset += page.size();
    ++num_pages;
    begin = end;
    if (progress) progress("writing", begin, keys.size());
  }
  std::string meta;
  internal::PutU8(&meta, static_cast<uint8_t>(keys.kind));
  internal::PutU8(&meta, static_cast<uint8_t>(type.id));
  internal::PutU8(&meta, type.scale);
  internal::PutU32(&meta, num_pages);
  meta += dir;
  VIGIL_RETURN_IF_ERROR(writer->AppendToFile(meta));
  internal::Footer footer{offset, meta.size(), keys.size(), Checksum64(meta)};
  VIGIL_RETURN_IF_ERROR(writer->AppendToFile(internal::EncodeFooter(footer, kMagic)));
  return writer->EndFile();
}

// ---- reading ----

struct PageInfo {
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t count = 0;
  uint64_t first = 0;  // global position of the page's first entry
  Value min, max;
};

// One decoded page: entries sorted by (key, row).
struct Page {
  KeyKind kind = KeyKind::kInt;
  std::vector<int64_t> keys;      // fixed kinds
  std::string bytes;              // kString
  std::vector<uint32_t> offsets;  // kString: count + 1
  std::vector<RowAddress> rows;

  size_t size() const { return rows.size(); }
  std::string_view StringAt(size_t i) const {
    return std::string_view(bytes).substr(offsets[i], offsets[i + 1] - offsets[i]);
  }
  Value KeyAt(size_t i) const {
    return kind == KeyKind::kString ? Value(std::string(StringAt(i))) : internal::FixedKeyValue(keys[i], kind);
  }
  // Whether entry i sorts strictly before entry i + 1.
  bool Ascending(size_t i) const {
    int c = 0;
    if (kind == KeyKind::kString) {
      c = StringAt(i).compare(StringAt(i + 1));
    } else {
      int64_t a = keys[i], b = keys[i + 1];
      if (kind == KeyKind::kFloat) a = internal::FloatSortKey(a), b = internal::FloatSortKey(b);
      c = a < b ? -1 : (a > b ? 1 : 0);
    }
    return c < 0 || (c == 0 && rows[i] < rows[i + 1]);
  }
  size_t MemoryBytes() const { return keys.size() * 8 + bytes.size() + offsets.size() * 4 + rows.size() * 8; }
};

Status ReadPageKeys(ByteReader* r, uint32_t count, Page* page) {
  if (page->kind != KeyKind::kString) {
    std::string_view raw;
    if (!r->Bytes(size_t{count} * 8, &raw)) return Status::Corruption("keys are truncated");
    page->keys.resize(count);
    std::memcpy(page->keys.data(), raw.data(), raw.size());
    for (int64_t k : page->keys) {
      if (!internal::ValidFixedKey(k, page->kind)) return Status::Corruption("holds an invalid key");
    }
    return Status::OK();
  }
  page->offsets.resize(size_t{count} + 1);
  for (auto& o : page->offsets) {
    if (!r->U32(&o)) return Status::Corruption("string offsets are truncated");
  }
  std::string_view bytes;
  if (page->offsets[0] != 0 || !std::is_sorted(page->offsets.begin(), page->offsets.end()) ||
      !r->Bytes(page->offsets.back(), &bytes)) {
    return Status::Corruption("string offsets are invalid");
  }
  page->bytes = std::string(bytes);
  return Status::OK();
}

Result<std::shared_ptr<const Page>> DecodePage(std::string_view stored, const PageInfo& info, KeyKind kind,
                                               const DataType& type, const std::vector<uint32_t>& covered) {
  std::string_view body = stored.substr(0, stored.size() - 8);
  uint64_t sum = 0;
  std::memcpy(&sum, stored.data() + body.size(), 8);
  if (Checksum64(body) != sum) return Status::Corruption("checksum mismatch");
  auto page = std::make_shared<Page>();
  page->kind = kind;
  ByteReader r(body);
  uint32_t count = 0;
  if (!r.U32(&count) || count != info.count) return Status::Corruption("entry count differs from the directory");
  VIGIL_RETURN_IF_ERROR(ReadPageKeys(&r, count, page.get()));
  std::string_view rows;
  if (!r.Bytes(size_t{count} * 8, &rows) || r.remaining() != 0) return Status::Corruption("has a bad length");
  page->rows.resize(count);
  std::memcpy(page->rows.data(), rows.data(), rows.size());
  for (size_t i = 0; i + 1 < count; ++i) {
    if (!page->Ascending(i)) return Status::Corruption("entries are out of order at " + std::to_string(i));
  }
  for (RowAddress row : page->rows) {
    if (!internal::CoveredRow(covered, row)) return Status::Corruption("holds a row outside the covered fragments");
  }
  if (CompareValues(page->KeyAt(0), info.min, type) != 0 ||
      CompareValues(page->KeyAt(count - 1), info.max, type) != 0) {
    return Status::Corruption("keys differ from the directory's min/max");
  }
  return std::shared_ptr<const Page>(std::move(page));
}

class BtreeSegment : public ScalarSegment {
 public:
  BtreeSegment(std::shared_ptr<SegmentFiles> files, Field field, std::unique_ptr<RandomAccessFile> file)
      : ScalarSegment(std::move(files)),
        field_(std::move(field)),
        kind_(internal::KeyKindOf(field_.type)),
        file_(std::move(file)),
        cache_(kPageCacheBytes) {}

  // Reads and checks the directory; pages are checked when first read.
  Status Load() {
    internal::Footer footer;
    VIGIL_ASSIGN_OR_RETURN(std::string meta, internal::ReadMetadata(*file_, kMagic, file_->path(), &footer));
    ByteReader r(meta);
    uint8_t kind = 0, type_id = 0, scale = 0;
    uint32_t num_pages = 0;
    if (!r.U8(&kind) || !r.U8(&type_id) || !r.U8(&scale) || !r.U32(&num_pages)) return Bad("directory is truncated");
    if (kind != static_cast<uint8_t>(kind_) || type_id != static_cast<uint8_t>(field_.type.id) ||
        scale != field_.type.scale) {
      return Bad("was built for another column type than " + field_.type.ToString());
    }
    const size_t min_dir_entry = kind_ == KeyKind::kString ? 24 : 32;
    if (num_pages > r.remaining() / min_dir_entry) return Bad("directory page count is too large");
    pages_.resize(num_pages);
    uint64_t expect_offset = kMagic.size(), first = 0;
    for (uint32_t p = 0; p < num_pages; ++p) {
      VIGIL_RETURN_IF_ERROR(LoadPageInfo(&r, p, expect_offset, first));
      expect_offset += pages_[p].size;
      first += pages_[p].count;
    }
    if (r.remaining() != 0 || expect_offset != footer.meta_offset || first != footer.num_rows) {
      return Bad("directory does not account for the file");
    }
    num_rows_ = first;
    return Status::OK();
  }

  bool Supports(ScalarPredicate::Op op) const override { return true; }

  Result<Roaring64Map> Evaluate(const ScalarPredicate& p) const override {
    VIGIL_RETURN_IF_ERROR(internal::ValidatePredicateShape(p, field_.type));
    try {
      Roaring64Map out;
      VIGIL_RETURN_IF_ERROR(EvaluateInto(p, &out));
      return out;
    } catch (const std::exception& e) {
      return Status::Internal(std::string("BTREE evaluation failed: ") + e.what());
    }
  }

  size_t MemoryBytes() const override {
    size_t n = sizeof(*this) + pages_.capacity() * sizeof(PageInfo) + cache_.usage_bytes();
    if (kind_ == KeyKind::kString) {
      for (const auto& p : pages_) n += std::get<std::string>(p.min).size() + std::get<std::string>(p.max).size();
    }
    return n;
  }

 private:
  Status Bad(const std::string& what) const { return Status::Corruption(file_->path() + ": " + what); }

  Status LoadPageInfo(ByteReader* r, uint32_t p, uint64_t expect_offset, uint64_t first) {
    PageInfo& info = pages_[p];
    if (!r->U64(&info.offset) || !r->U32(&info.size) || !r->U32(&info.count) ||
        !internal::ReadKey(r, kind_, &info.min) || !internal::ReadKey(r, kind_, &info.max)) {
      return Bad("directory entry " + std::to_string(p) + " is truncated or invalid");
    }
    const size_t min_entry = kind_ == KeyKind::kString ? 12 : 16;
    if (info.offset != expect_offset || info.count == 0 || info.size < 12 + min_entry ||
        info.count > (info.size - 12) / min_entry || info.offset + info.size > file_->Size()) {
      return Bad("directory entry " + std::to_string(p) + " has a bad offset, size or count");
    }
    if (CompareValues(info.min, info.max, field_.type) > 0 ||
        (p > 0 && CompareValues(pages_[p - 1].max, info.min, field_.type) > 0)) {
      return Bad("directory keys are out of order at page " + std::to_string(p));
    }
    info.first = first;
    return Status::OK();
  }

  Result<std::shared_ptr<const Page>> LoadPage(size_t p) const {
    if (auto page = cache_.Get(p)) return page;
    const PageInfo& info = pages_[p];
    std::string stored;
    VIGIL_RETURN_IF_ERROR(file_->Read(info.offset, info.size, &stored));
    auto page = DecodePage(stored, info, kind_, field_.type, meta().covered_fragments);
    if (!page.ok()) return Bad("page " + std::to_string(p) + " " + page.status().message());
    cache_.Put(p, *page, (*page)->MemoryBytes());
    return page;
  }

  // The global position of the first entry whose key is >= v (> v when `upper`).
  Result<uint64_t> Bound(const Value& v, bool upper) const {
    auto after = [&](const Value& key) {
      const int c = CompareValues(key, v, field_.type);
      return upper ? c > 0 : c >= 0;
    };
    auto it = std::partition_point(pages_.begin(), pages_.end(), [&](const PageInfo& p) { return !after(p.max); });
    if (it == pages_.end()) return num_rows_;
    if (after(it->min)) return it->first;
    VIGIL_ASSIGN_OR_RETURN(auto page, LoadPage(it - pages_.begin()));
    size_t lo = 0, hi = page->size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (after(page->KeyAt(mid)))
        hi = mid;
      else
        lo = mid + 1;
    }
    return it->first + lo;
  }

  // Adds the rows of global positions [begin, end).
  Status AddRange(uint64_t begin, uint64_t end, Roaring64Map* out) const {
    if (begin >= end) return Status::OK();
    auto it = std::upper_bound(pages_.begin(), pages_.end(), begin,
                               [](uint64_t pos, const PageInfo& p) { return pos < p.first; });
    for (size_t p = (it - pages_.begin()) - 1; p < pages_.size() && pages_[p].first < end; ++p) {
      VIGIL_ASSIGN_OR_RETURN(auto page, LoadPage(p));
      const uint64_t from = std::max(begin, pages_[p].first) - pages_[p].first;
      const uint64_t to = std::min<uint64_t>(end - pages_[p].first, page->size());
      out->addMany(to - from, page->rows.data() + from);
    }
    return Status::OK();
  }

  Status AddEqual(const Value& v, Roaring64Map* out) const {
    if (IsNull(v)) return Status::OK();
    VIGIL_ASSIGN_OR_RETURN(uint64_t lo, Bound(v, false));
    VIGIL_ASSIGN_OR_RETURN(uint64_t hi, Bound(v, true));
    return AddRange(lo, hi, out);
  }

  Status EvaluateInto(const ScalarPredicate& p, Roaring64Map* out) const {
    using Op = ScalarPredicate::Op;
    if (p.op == Op::kIsNull) return Status::OK();
    if (p.op == Op::kIn) {
      for (const Value& v : p.values) VIGIL_RETURN_IF_ERROR(AddEqual(v, out));
      return Status::OK();
    }
    for (const Value& v : p.values) {
      if (IsNull(v)) return Status::OK();  // comparisons with NULL match nothing
    }
    const Value& v = p.values[0];
    switch (p.op) {
      case Op::kEq:
        return AddEqual(v, out);
      case Op::kBetween: {
        VIGIL_ASSIGN_OR_RETURN(uint64_t lo, Bound(p.values[0], false));
        VIGIL_ASSIGN_OR_RETURN(uint64_t hi, Bound(p.values[1], true));
        return AddRange(lo, hi, out);
      }
      default:
        break;
    }
    const bool upper = p.op == Op::kLe || p.op == Op::kGt;
    VIGIL_ASSIGN_OR_RETURN(uint64_t pos, Bound(v, upper));
    return p.op == Op::kLt || p.op == Op::kLe ? AddRange(0, pos, out) : AddRange(pos, num_rows_, out);
  }

  Field field_;
  KeyKind kind_;
  std::unique_ptr<RandomAccessFile> file_;
  std::vector<PageInfo> pages_;
  uint64_t num_rows_ = 0;
  mutable LruCache<size_t, Page> cache_;  // thread-safe
};

}  // namespace

namespace internal {

Status BuildBtreeSegmentPaged(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                              SegmentWriter* writer, const ProgressFn& progress, size_t max_page_entries,
                              size_t max_page_bytes) {
  VIGIL_CHECK(max_page_entries >= 1);
  try {
    VIGIL_ASSIGN_OR_RETURN(SortedKeys keys,
                           CollectSortedKeys(dataset, field, fragments, BtreeTypeOk, "BTREE", progress));
    return WriteBtree(keys, field.type, writer, progress, max_page_entries, max_page_bytes);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("BTREE build ran out of memory");
  }
}

}  // namespace internal

Status BuildBtreeSegment(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                         SegmentWriter* writer, const ProgressFn& progress) {
  return internal::BuildBtreeSegmentPaged(dataset, field, fragments, writer, progress, kMaxPageEntries, kMaxPageBytes);
}

Result<std::shared_ptr<ScalarSegment>> OpenBtreeSegment(std::shared_ptr<SegmentFiles> files, const Field& field) {
  if (!BtreeTypeOk(field.type)) {
    return Status::InvalidArgument("BTREE cannot index type " + field.type.ToString());
  }
  VIGIL_ASSIGN_OR_RETURN(auto file, files->OpenVerified(kFileName));
  auto seg = std::make_shared<BtreeSegment>(std::move(files), field, std::move(file));
  VIGIL_RETURN_IF_ERROR(seg->Load());
  return std::shared_ptr<ScalarSegment>(std::move(seg));
}

}  // namespace vigil::index

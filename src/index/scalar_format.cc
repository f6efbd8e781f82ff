// Shared pieces of the BTREE and BITMAP formats and builders (scalar_format.h).
// Pure functions; thread-safe.
#include "index/scalar_format.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "vigil/common/bounds.h"
#include "vigil/common/checksum.h"

namespace vigil::index::internal {

namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr int64_t kCanonicalNaN = 0x7ff8000000000000;

int64_t CanonicalDoubleBits(double d) {
  if (std::isnan(d)) return kCanonicalNaN;
  if (d == 0) d = 0.0;
  return std::bit_cast<int64_t>(d);
}

Status CheckField(const Dataset& dataset, const Field& field, bool (*type_ok)(const DataType&),
                  std::string_view index_type) {
  const std::string what = std::string(index_type) + " index on column '" + field.name + "'";
  if (!type_ok(field.type)) {
    return Status::InvalidArgument(what + ": type " + field.type.ToString() + " is not supported");
  }
  if (field.nullable) return Status::InvalidArgument(what + ": the column must be NOT NULL");
  auto pos = dataset.schema()->IndexOfId(field.id);
  if (!pos || !(dataset.schema()->field(*pos).type == field.type)) {
    return Status::InvalidArgument(what + ": field id " + std::to_string(field.id) + " of type " +
                                   field.type.ToString() + " is not in the dataset's schema");
  }
  return Status::OK();
}

void AppendKey(const Column& col, size_t i, RowAddress row, SortedKeys* out) {
  if (out->kind == KeyKind::kString) {
    std::string_view s = col.StringAt(i);
    out->arena.append(s);
    out->offsets.push_back(out->arena.size());
    out->rows.push_back(row);
  } else {
    out->fixed.emplace_back(FixedKeyOf(col.ValueAt(i), out->kind), row);
  }
}

// Appends the live rows of one fragment (deletions at this version skipped).
Status ReadFragmentKeys(const Dataset& dataset, const Field& field, uint32_t id, SortedKeys* out) {
  VIGIL_ASSIGN_OR_RETURN(auto reader, dataset.OpenFragment(id));
  VIGIL_ASSIGN_OR_RETURN(DeletionVector deleted, dataset.LoadDeletions(id));
  const std::string where = "fragment " + std::to_string(id) + " column '" + field.name + "'";
  uint64_t offset = 0;
  for (size_t b = 0; b < reader->num_blocks(); ++b) {
    auto block = reader->ReadBlock(field.id, b);
    if (!block.ok() && block.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument(where + " has no stored values");
    }
    VIGIL_RETURN_IF_ERROR(block.status());
    const Column& col = **block;
    if (!(col.type() == field.type) || col.size() > reader->rows_per_block()) {
      return Status::Corruption(where + " block " + std::to_string(b) + " does not match the schema");
    }
    for (size_t i = 0; i < col.size(); ++i, ++offset) {
      if (deleted.Contains(static_cast<uint32_t>(offset))) continue;
      if (!col.IsValid(i)) return Status::InvalidArgument(where + " holds a NULL at row " + std::to_string(offset));
      AppendKey(col, i, MakeRowAddress(id, static_cast<uint32_t>(offset)), out);
    }
  }
  if (offset != reader->num_rows()) return Status::Corruption(where + " blocks do not add up to its row count");
  return Status::OK();
}

void SortKeys(SortedKeys* keys) {
  if (keys->kind != KeyKind::kString) {
    const bool is_float = keys->kind == KeyKind::kFloat;
    if (is_float) {
      for (auto& e : keys->fixed) e.first = FloatSortKey(e.first);
    }
    std::sort(keys->fixed.begin(), keys->fixed.end());
    if (is_float) {
      for (auto& e : keys->fixed) e.first = FloatFromSortKey(e.first);
    }
    return;
  }
  keys->order.resize(keys->rows.size());
  std::iota(keys->order.begin(), keys->order.end(), 0u);
  const std::string_view arena(keys->arena);
  const auto& off = keys->offsets;
  const auto& rows = keys->rows;
  std::sort(keys->order.begin(), keys->order.end(), [&](uint32_t a, uint32_t b) {
    const int c = arena.substr(off[a], off[a + 1] - off[a]).compare(arena.substr(off[b], off[b + 1] - off[b]));
    return c != 0 ? c < 0 : rows[a] < rows[b];
  });
}

}  // namespace

KeyKind KeyKindOf(const DataType& type) {
  switch (type.id) {
    case TypeId::kBool:
      return KeyKind::kBool;
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      return KeyKind::kFloat;
    case TypeId::kString:
      return KeyKind::kString;
    default:
      return KeyKind::kInt;
  }
}

int64_t FixedKeyOf(const Value& v, KeyKind kind) {
  switch (kind) {
    case KeyKind::kBool:
      return std::get<bool>(v) ? 1 : 0;
    case KeyKind::kFloat:
      return CanonicalDoubleBits(std::get<double>(v));
    default:
      return std::get<int64_t>(v);
  }
}

bool ValidFixedKey(int64_t key, KeyKind kind) {
  if (kind == KeyKind::kBool) return key == 0 || key == 1;
  if (kind == KeyKind::kFloat) return key == CanonicalDoubleBits(std::bit_cast<double>(key));
  return true;
}

Value FixedKeyValue(int64_t key, KeyKind kind) {
  switch (kind) {
    case KeyKind::kBool:
      return key != 0;
    case KeyKind::kFloat:
      return std::bit_cast<double>(key);
    default:
      return key;
  }
}

int64_t FloatSortKey(int64_t bits) {
  uint64_t u = static_cast<uint64_t>(bits);
  u = (u & kSignBit) ? ~u : (u | kSignBit);
  return static_cast<int64_t>(u ^ kSignBit);
}

int64_t FloatFromSortKey(int64_t sort_key) {
  uint64_t u = static_cast<uint64_t>(sort_key) ^ kSignBit;
  u = (u & kSignBit) ? (u & ~kSignBit) : ~u;
  return static_cast<int64_t>(u);
}

void PutKey(std::string* out, const Value& key, KeyKind kind) {
  if (kind == KeyKind::kString) {
    const auto& s = std::get<std::string>(key);
    PutU32(out, static_cast<uint32_t>(s.size()));
    out->append(s);
  } else {
    PutU64(out, static_cast<uint64_t>(FixedKeyOf(key, kind)));
  }
}

bool ReadKey(ByteReader* r, KeyKind kind, Value* key) {
  if (kind == KeyKind::kString) {
    uint32_t n = 0;
    std::string_view s;
    if (!r->U32(&n) || n > bounds::kMaxStringValueBytes || !r->Bytes(n, &s)) return false;
    *key = std::string(s);
    return true;
  }
  int64_t k = 0;
  if (!r->I64(&k)) return false;
  if (!ValidFixedKey(k, kind)) return false;
  *key = FixedKeyValue(k, kind);
  return true;
}

std::string EncodeFooter(const Footer& f, std::string_view magic) {
  std::string out;
  PutU64(&out, f.meta_offset);
  PutU64(&out, f.meta_size);
  PutU64(&out, f.num_rows);
  PutU64(&out, f.meta_checksum);
  out.append(magic);
  return out;
}

Result<std::string> ReadMetadata(const RandomAccessFile& file, std::string_view magic, std::string_view what,
                                 Footer* footer) {
  const std::string name(what);
  const uint64_t size = file.Size();
  if (size < magic.size() + kFooterSize) {
    return Status::Corruption(name + " is " + std::to_string(size) + " bytes, too short for its header and footer");
  }
  std::string head, tail;
  VIGIL_RETURN_IF_ERROR(file.Read(0, magic.size(), &head));
  VIGIL_RETURN_IF_ERROR(file.Read(size - kFooterSize, kFooterSize, &tail));
  if (head != magic || tail.substr(32) != magic) return Status::Corruption(name + " has a bad magic number");
  ByteReader r(tail);
  VIGIL_CHECK(r.U64(&footer->meta_offset) && r.U64(&footer->meta_size) && r.U64(&footer->num_rows) &&
              r.U64(&footer->meta_checksum));
  const uint64_t body_end = size - kFooterSize;
  if (footer->meta_size > body_end - magic.size() || footer->meta_offset != body_end - footer->meta_size) {
    return Status::Corruption(name + " footer places its metadata outside the file");
  }
  std::string meta;
  VIGIL_RETURN_IF_ERROR(file.Read(footer->meta_offset, footer->meta_size, &meta));
  if (Checksum64(meta) != footer->meta_checksum) return Status::Corruption(name + " metadata checksum mismatch");
  return meta;
}

Value SortedKeys::ValueAt(size_t i) const {
  if (kind == KeyKind::kString) return std::string(StringAt(i));
  return FixedKeyValue(fixed[i].first, kind);
}

bool SortedKeys::SameKey(size_t i, size_t j) const {
  return kind == KeyKind::kString ? StringAt(i) == StringAt(j) : fixed[i].first == fixed[j].first;
}

Result<SortedKeys> CollectSortedKeys(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                                     bool (*type_ok)(const DataType&), std::string_view index_type,
                                     const ProgressFn& progress) {
  VIGIL_RETURN_IF_ERROR(CheckField(dataset, field, type_ok, index_type));
  std::vector<uint32_t> ids = fragments;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  uint64_t total = 0;
  for (uint32_t id : ids) {
    const FragmentMeta* meta = dataset.manifest().FindFragment(id);
    if (meta == nullptr) {
      return Status::InvalidArgument("fragment " + std::to_string(id) + " is not in version " +
                                     std::to_string(dataset.version()));
    }
    total += meta->num_rows;
  }
  if (total > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument(std::string(index_type) + " index over " + std::to_string(total) +
                                   " rows exceeds the 2^32-row segment limit");
  }
  SortedKeys out;
  out.kind = KeyKindOf(field.type);
  if (out.kind == KeyKind::kString) {
    out.offsets.reserve(total + 1);
    out.offsets.push_back(0);
    out.rows.reserve(total);
  } else {
    out.fixed.reserve(total);
  }
  uint64_t done = 0;
  for (uint32_t id : ids) {
    VIGIL_RETURN_IF_ERROR(ReadFragmentKeys(dataset, field, id, &out));
    done += dataset.manifest().FindFragment(id)->num_rows;
    if (progress) progress("encoding", done, total);
  }
  SortKeys(&out);
  return out;
}

bool CoveredRow(const std::vector<uint32_t>& covered, RowAddress row) {
  return std::binary_search(covered.begin(), covered.end(), RowFragment(row));
}

}  // namespace vigil::index::internal

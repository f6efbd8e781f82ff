// Manifest file format: "VGLMANI1", u32 payload length, the JSON payload, u64
// XXH3 of the payload. The payload is one JSON object with sorted keys (so one
// manifest always encodes to the same bytes); optional members are omitted
// when empty. Every member is type-checked on decode.
#include "vigil/storage/manifest.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "storage/column_codec.h"
#include "vigil/common/bounds.h"
#include "vigil/common/checksum.h"

namespace vigil {

namespace {

using nlohmann::json;

constexpr std::string_view kManifestMagic = "VGLMANI1";
constexpr size_t kFrameOverhead = 8 + 4 + 8;
constexpr uint64_t kFormat = 1;

// ---------------------------------------------------------------- encoding

json EncodeDeletion(const DeletionFileRef& d) {
  return json{{"path", d.path}, {"num_deleted", d.num_deleted}, {"checksum", ChecksumToHex(d.checksum)}};
}

json EncodeFragment(const FragmentMeta& f) {
  json j{{"id", f.id},
         {"path", f.path},
         {"num_rows", f.num_rows},
         {"file_size", f.file_size},
         {"footer_checksum", ChecksumToHex(f.footer_checksum)}};
  if (f.deletion) j["deletion"] = EncodeDeletion(*f.deletion);
  return j;
}

json EncodeSegment(const IndexSegmentMeta& s) {
  json files = json::array();
  for (const SegmentFile& f : s.files) {
    files.push_back(json{{"name", f.name}, {"size", f.size}, {"checksum", ChecksumToHex(f.checksum)}});
  }
  return json{{"name", s.name},
              {"uuid", s.uuid.ToString()},
              {"field_ids", s.field_ids},
              {"index_type", s.index_type},
              {"properties_json", s.properties_json},
              {"built_at_version", s.built_at_version},
              {"covered_fragments", s.covered_fragments},
              {"files", files}};
}

json EncodeTxn(const TransactionProperties& t) {
  json j{{"operation", t.operation},
         {"attempt_id", t.attempt_id},
         {"idempotency_key", t.idempotency_key},
         {"timestamp_micros", t.timestamp_micros},
         {"extra", t.extra}};
  if (t.job_id) j["job_id"] = *t.job_id;
  return j;
}

template <typename T, typename Key>
bool StrictlyIncreasing(const std::vector<T>& v, Key key) {
  for (size_t i = 1; i < v.size(); ++i) {
    if (!(key(v[i - 1]) < key(v[i]))) return false;
  }
  return true;
}

// ---------------------------------------------------------------- decoding

Status Bad(const std::string& path, const std::string& problem) {
  return Status::Corruption("field '" + path + "' " + problem);
}

// Typed access to the members of one JSON object; errors name the member's path.
class Obj {
 public:
  static Result<Obj> Of(const json& j, std::string path) {
    if (!j.is_object()) return Bad(path, "must be an object");
    return Obj(j, std::move(path));
  }

  std::string Path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  bool Has(const char* key) const { return j_->contains(key); }

  Result<const json*> Get(const char* key) const {
    auto it = j_->find(key);
    if (it == j_->end()) return Bad(Path(key), "is missing");
    return &*it;
  }
  Result<uint64_t> U64(const char* key) const {
    VIGIL_ASSIGN_OR_RETURN(const json* v, Get(key));
    if (!v->is_number_unsigned()) return Bad(Path(key), "must be an unsigned integer");
    return v->get<uint64_t>();
  }
  Result<uint32_t> U32(const char* key) const {
    VIGIL_ASSIGN_OR_RETURN(uint64_t v, U64(key));
    if (v > UINT32_MAX) return Bad(Path(key), "exceeds 32 bits");
    return static_cast<uint32_t>(v);
  }
  Result<int64_t> I64(const char* key) const {
    VIGIL_ASSIGN_OR_RETURN(const json* v, Get(key));
    if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<int64_t>();
    if (v->is_number_unsigned() && v->get<uint64_t>() <= INT64_MAX) return v->get<int64_t>();
    return Bad(Path(key), "must be a 64-bit integer");
  }
  Result<std::string> Str(const char* key) const {
    VIGIL_ASSIGN_OR_RETURN(const json* v, Get(key));
    if (!v->is_string()) return Bad(Path(key), "must be a string");
    return v->get<std::string>();
  }
  Result<uint64_t> Checksum(const char* key) const;
  Result<Uuid> UuidField(const char* key) const;
  // A relative path inside the dataset: non-empty, not absolute, no ".." component.
  Result<std::string> RelPath(const char* key) const;
  Result<const json*> Array(const char* key) const {
    VIGIL_ASSIGN_OR_RETURN(const json* v, Get(key));
    if (!v->is_array()) return Bad(Path(key), "must be an array");
    return v;
  }

 private:
  Obj(const json& j, std::string path) : j_(&j), path_(std::move(path)) {}
  const json* j_;
  std::string path_;
};

Result<uint64_t> Obj::Checksum(const char* key) const {
  VIGIL_ASSIGN_OR_RETURN(std::string s, Str(key));
  bool hex = s.size() == 16 &&
             std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (!hex) return Bad(Path(key), "must be 16 lower-case hex digits");
  return std::stoull(s, nullptr, 16);
}

Result<Uuid> Obj::UuidField(const char* key) const {
  VIGIL_ASSIGN_OR_RETURN(std::string s, Str(key));
  Result<Uuid> u = Uuid::Parse(s);
  if (!u.ok()) return Bad(Path(key), "is not a UUID");
  return u;
}

Result<std::string> Obj::RelPath(const char* key) const {
  VIGIL_ASSIGN_OR_RETURN(std::string s, Str(key));
  bool dotdot = s == ".." || s.starts_with("../") || s.ends_with("/..") || s.find("/../") != std::string::npos;
  if (s.empty() || s[0] == '/' || dotdot || s.find('\0') != std::string::npos) {
    return Bad(Path(key), "must be a relative path inside the dataset");
  }
  return s;
}

std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Elements of a JSON array of unsigned integers no larger than `max`.
template <typename T>
Result<std::vector<T>> UIntArray(const json& a, const std::string& path, uint64_t max) {
  std::vector<T> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number_unsigned() || a[i].get<uint64_t>() > max) {
      return Bad(Index(path, i), "must be an unsigned integer up to " + std::to_string(max));
    }
    out.push_back(static_cast<T>(a[i].get<uint64_t>()));
  }
  return out;
}

Result<DeletionFileRef> DecodeDeletion(const json& j, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(Obj o, Obj::Of(j, path));
  DeletionFileRef d;
  VIGIL_ASSIGN_OR_RETURN(d.path, o.RelPath("path"));
  VIGIL_ASSIGN_OR_RETURN(d.num_deleted, o.U64("num_deleted"));
  VIGIL_ASSIGN_OR_RETURN(d.checksum, o.Checksum("checksum"));
  return d;
}

Result<FragmentMeta> DecodeFragment(const json& j, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(Obj o, Obj::Of(j, path));
  FragmentMeta f;
  VIGIL_ASSIGN_OR_RETURN(f.id, o.U32("id"));
  VIGIL_ASSIGN_OR_RETURN(f.path, o.RelPath("path"));
  VIGIL_ASSIGN_OR_RETURN(f.num_rows, o.U64("num_rows"));
  VIGIL_ASSIGN_OR_RETURN(f.file_size, o.U64("file_size"));
  VIGIL_ASSIGN_OR_RETURN(f.footer_checksum, o.Checksum("footer_checksum"));
  if (o.Has("deletion")) {
    VIGIL_ASSIGN_OR_RETURN(const json* d, o.Get("deletion"));
    VIGIL_ASSIGN_OR_RETURN(f.deletion, DecodeDeletion(*d, o.Path("deletion")));
    if (f.deletion->num_deleted > f.num_rows) {
      return Bad(o.Path("deletion.num_deleted"), "exceeds the fragment's " + std::to_string(f.num_rows) + " rows");
    }
  }
  return f;
}

Result<std::vector<SegmentFile>> DecodeSegmentFiles(const Obj& seg) {
  VIGIL_ASSIGN_OR_RETURN(const json* a, seg.Array("files"));
  std::vector<SegmentFile> files;
  for (size_t i = 0; i < a->size(); ++i) {
    VIGIL_ASSIGN_OR_RETURN(Obj o, Obj::Of((*a)[i], Index(seg.Path("files"), i)));
    SegmentFile f;
    VIGIL_ASSIGN_OR_RETURN(f.name, o.RelPath("name"));
    VIGIL_ASSIGN_OR_RETURN(f.size, o.U64("size"));
    VIGIL_ASSIGN_OR_RETURN(f.checksum, o.Checksum("checksum"));
    files.push_back(std::move(f));
  }
  return files;
}

Result<IndexSegmentMeta> DecodeSegment(const json& j, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(Obj o, Obj::Of(j, path));
  IndexSegmentMeta s;
  VIGIL_ASSIGN_OR_RETURN(s.name, o.Str("name"));
  VIGIL_ASSIGN_OR_RETURN(s.uuid, o.UuidField("uuid"));
  VIGIL_ASSIGN_OR_RETURN(const json* ids, o.Array("field_ids"));
  VIGIL_ASSIGN_OR_RETURN(s.field_ids, UIntArray<int32_t>(*ids, o.Path("field_ids"), INT32_MAX));
  VIGIL_ASSIGN_OR_RETURN(s.index_type, o.Str("index_type"));
  VIGIL_ASSIGN_OR_RETURN(s.properties_json, o.Str("properties_json"));
  if (s.properties_json.size() > bounds::kMaxPropertiesJsonBytes) {
    return Bad(o.Path("properties_json"),
               "is longer than " + std::to_string(bounds::kMaxPropertiesJsonBytes) + " bytes");
  }
  VIGIL_ASSIGN_OR_RETURN(s.built_at_version, o.U64("built_at_version"));
  VIGIL_ASSIGN_OR_RETURN(const json* cov, o.Array("covered_fragments"));
  VIGIL_ASSIGN_OR_RETURN(s.covered_fragments, UIntArray<uint32_t>(*cov, o.Path("covered_fragments"), UINT32_MAX));
  if (!StrictlyIncreasing(s.covered_fragments, [](uint32_t v) { return v; })) {
    return Bad(o.Path("covered_fragments"), "must be sorted and unique");
  }
  VIGIL_ASSIGN_OR_RETURN(s.files, DecodeSegmentFiles(o));
  return s;
}

Result<TransactionProperties> DecodeTxn(const json& j) {
  VIGIL_ASSIGN_OR_RETURN(Obj o, Obj::Of(j, "txn"));
  TransactionProperties t;
  VIGIL_ASSIGN_OR_RETURN(t.operation, o.Str("operation"));
  if (o.Has("job_id")) {
    VIGIL_ASSIGN_OR_RETURN(t.job_id, o.I64("job_id"));
  }
  VIGIL_ASSIGN_OR_RETURN(t.attempt_id, o.Str("attempt_id"));
  VIGIL_ASSIGN_OR_RETURN(t.idempotency_key, o.Str("idempotency_key"));
  VIGIL_ASSIGN_OR_RETURN(t.timestamp_micros, o.I64("timestamp_micros"));
  VIGIL_ASSIGN_OR_RETURN(const json* extra, o.Get("extra"));
  VIGIL_ASSIGN_OR_RETURN(Obj e, Obj::Of(*extra, "txn.extra"));
  for (const auto& [key, value] : extra->items()) {
    VIGIL_ASSIGN_OR_RETURN(t.extra[key], e.Str(key.c_str()));
  }
  return t;
}

template <typename T, typename Fn>
Result<std::vector<T>> DecodeArray(const Obj& o, const char* key, Fn decode) {
  VIGIL_ASSIGN_OR_RETURN(const json* a, o.Array(key));
  std::vector<T> out;
  for (size_t i = 0; i < a->size(); ++i) {
    VIGIL_ASSIGN_OR_RETURN(T v, decode((*a)[i], Index(key, i)));
    out.push_back(std::move(v));
  }
  return out;
}

Status CheckManifest(const Manifest& m) {
  if (m.version == 0) return Bad("version", "must be at least 1");
  if (m.parent_version >= m.version) return Bad("parent_version", "must be below version");
  if (!StrictlyIncreasing(m.fragments, [](const FragmentMeta& f) { return f.id; })) {
    return Bad("fragments", "must be sorted by id with unique ids");
  }
  if (!m.fragments.empty() && m.next_fragment_id <= m.fragments.back().id) {
    return Bad("next_fragment_id", "must exceed every fragment id");
  }
  return Status::OK();
}

Result<Manifest> DecodePayload(const json& j) {
  VIGIL_ASSIGN_OR_RETURN(Obj o, Obj::Of(j, ""));
  VIGIL_ASSIGN_OR_RETURN(uint64_t format, o.U64("format"));
  if (format != kFormat) return Bad("format", "is " + std::to_string(format) + "; only 1 is supported");
  Manifest m;
  VIGIL_ASSIGN_OR_RETURN(m.version, o.U64("version"));
  VIGIL_ASSIGN_OR_RETURN(m.parent_version, o.U64("parent_version"));
  VIGIL_ASSIGN_OR_RETURN(m.dataset_id, o.UuidField("dataset_id"));
  VIGIL_ASSIGN_OR_RETURN(const json* schema, o.Get("schema"));
  Result<SchemaPtr> s = Schema::FromJson(*schema);
  if (!s.ok()) return Bad("schema", "is invalid: " + s.status().message());
  m.schema = std::move(s).value();
  VIGIL_ASSIGN_OR_RETURN(m.fragments, DecodeArray<FragmentMeta>(o, "fragments", DecodeFragment));
  VIGIL_ASSIGN_OR_RETURN(m.next_fragment_id, o.U32("next_fragment_id"));
  VIGIL_ASSIGN_OR_RETURN(m.segments, DecodeArray<IndexSegmentMeta>(o, "segments", DecodeSegment));
  VIGIL_ASSIGN_OR_RETURN(const json* txn, o.Get("txn"));
  VIGIL_ASSIGN_OR_RETURN(m.txn, DecodeTxn(*txn));
  VIGIL_RETURN_IF_ERROR(CheckManifest(m));
  return m;
}

// The payload of a framed manifest after checking magic, length and checksum.
Result<std::string_view> Unframe(std::string_view bytes) {
  if (bytes.size() < kFrameOverhead) {
    return Status::Corruption("file is " + std::to_string(bytes.size()) + " bytes; a manifest has at least " +
                              std::to_string(kFrameOverhead));
  }
  if (bytes.substr(0, kManifestMagic.size()) != kManifestMagic) return Status::Corruption("bad magic");
  uint32_t length = 0;
  std::memcpy(&length, bytes.data() + kManifestMagic.size(), 4);
  if (length > bounds::kMaxManifestBytes || length != bytes.size() - kFrameOverhead) {
    return Status::Corruption("payload length " + std::to_string(length) + " does not match the " +
                              std::to_string(bytes.size()) + "-byte file");
  }
  std::string_view payload = bytes.substr(kManifestMagic.size() + 4, length);
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + kManifestMagic.size() + 4 + length, 8);
  if (Checksum64(payload) != stored) return Status::Corruption("checksum mismatch");
  return payload;
}

}  // namespace

const FragmentMeta* Manifest::FindFragment(uint32_t id) const {
  auto it = std::lower_bound(fragments.begin(), fragments.end(), id,
                             [](const FragmentMeta& f, uint32_t v) { return f.id < v; });
  return it != fragments.end() && it->id == id ? &*it : nullptr;
}

uint64_t Manifest::CountLiveRows() const {
  uint64_t rows = 0;
  for (const FragmentMeta& f : fragments) rows += f.live_rows();
  return rows;
}

uint64_t Manifest::ReferencedBytes() const {
  uint64_t bytes = 0;
  for (const FragmentMeta& f : fragments) bytes += f.file_size;
  for (const IndexSegmentMeta& seg : segments) {
    for (const SegmentFile& file : seg.files) bytes += file.size;
  }
  return bytes;
}

uint64_t Manifest::BytesNotIn(const Manifest& other) const {
  std::set<std::string_view> other_fragments;
  for (const FragmentMeta& f : other.fragments) other_fragments.insert(f.path);
  std::set<Uuid> other_segments;
  for (const IndexSegmentMeta& seg : other.segments) other_segments.insert(seg.uuid);
  uint64_t bytes = 0;
  for (const FragmentMeta& f : fragments) {
    if (!other_fragments.contains(f.path)) bytes += f.file_size;
  }
  for (const IndexSegmentMeta& seg : segments) {
    if (other_segments.contains(seg.uuid)) continue;
    for (const SegmentFile& file : seg.files) bytes += file.size;
  }
  return bytes;
}

std::string EncodeManifest(const Manifest& m) {
  VIGIL_CHECK(m.schema != nullptr);
  VIGIL_CHECK(StrictlyIncreasing(m.fragments, [](const FragmentMeta& f) { return f.id; }));
  json segments = json::array();
  for (const IndexSegmentMeta& s : m.segments) {
    VIGIL_CHECK(StrictlyIncreasing(s.covered_fragments, [](uint32_t v) { return v; }));
    segments.push_back(EncodeSegment(s));
  }
  json fragments = json::array();
  for (const FragmentMeta& f : m.fragments) fragments.push_back(EncodeFragment(f));
  json j{{"format", kFormat},
         {"version", m.version},
         {"parent_version", m.parent_version},
         {"dataset_id", m.dataset_id.ToString()},
         {"schema", m.schema->ToJson()},
         {"fragments", fragments},
         {"next_fragment_id", m.next_fragment_id},
         {"segments", segments},
         {"txn", EncodeTxn(m.txn)}};
  // Invalid UTF-8 in a string is replaced (U+FFFD) rather than thrown.
  const std::string payload = j.dump(-1, ' ', false, json::error_handler_t::replace);
  VIGIL_CHECK(payload.size() <= bounds::kMaxManifestBytes);
  std::string out(kManifestMagic);
  codec::PutU32(&out, static_cast<uint32_t>(payload.size()));
  out += payload;
  codec::PutU64(&out, Checksum64(payload));
  return out;
}

Result<Manifest> DecodeManifest(std::string_view bytes, std::string_view what) {
  const std::string prefix = std::string(what) + ": ";
  Result<std::string_view> payload = Unframe(bytes);
  if (!payload.ok()) return Status::Corruption(prefix + payload.status().message());
  try {
    json j = json::parse(payload.value());
    Result<Manifest> m = DecodePayload(j);
    if (!m.ok()) return Status::Corruption(prefix + m.status().message());
    return m;
  } catch (const json::exception& e) {
    return Status::Corruption(prefix + "payload is not valid JSON: " + e.what());
  }
}

}  // namespace vigil

// Manifests: one immutable, checksummed file per dataset version,
// `_versions/<v>.manifest` (storage/filename.h), describing the whole table at that version.
// Encoding: magic "VGLMANI1", u32 payload length, JSON payload, XXH3-64 of the
// payload. Decoding rejects any defect with Corruption. Values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/schema.h"

namespace vigil {

struct DeletionFileRef {
  std::string path;  // relative to the dataset root (storage/filename.h)
  uint64_t num_deleted = 0;
  uint64_t checksum = 0;  // XXH3-64 of the whole file
};

struct FragmentMeta {
  uint32_t id = 0;        // assigned at commit; unique within a dataset
  std::string path;       // relative to the dataset root (storage/filename.h)
  uint64_t num_rows = 0;  // physical rows, deleted ones included
  uint64_t file_size = 0;
  uint64_t footer_checksum = 0;
  std::optional<DeletionFileRef> deletion;

  uint64_t live_rows() const { return num_rows - (deletion ? deletion->num_deleted : 0); }
};

// One file of an index segment, relative to `_indices/<uuid>/`.
struct SegmentFile {
  std::string name;
  uint64_t size = 0;
  uint64_t checksum = 0;  // XXH3-64 of the whole file
};

// One physical index entry. Several segments with one name form a logical index.
struct IndexSegmentMeta {
  std::string name;  // exact display name of the logical index
  Uuid uuid;
  std::vector<int32_t> field_ids;
  std::string index_type;       // IVF_PQ | BTREE | BITMAP | FTS
  std::string properties_json;  // allowlisted, deterministic, <= 400 bytes
  uint64_t built_at_version = 0;
  std::vector<uint32_t> covered_fragments;  // sorted, unique
  std::vector<SegmentFile> files;           // inventory
};

// Recorded with every commit, so history says who made each version.
struct TransactionProperties {
  std::string operation;  // CREATE_TABLE, APPEND, DELETE, UPDATE, CREATE_INDEX, ...
  std::optional<int64_t> job_id;
  std::string attempt_id;        // empty when not a job attempt
  std::string idempotency_key;   // empty when none
  int64_t timestamp_micros = 0;  // set at commit
  std::map<std::string, std::string> extra;
};

struct Manifest {
  uint64_t version = 0;
  uint64_t parent_version = 0;  // 0 for the first version
  Uuid dataset_id;              // the table incarnation's dataset identity
  SchemaPtr schema;
  std::vector<FragmentMeta> fragments;  // sorted by id
  uint32_t next_fragment_id = 0;
  std::vector<IndexSegmentMeta> segments;
  TransactionProperties txn;

  const FragmentMeta* FindFragment(uint32_t id) const;
  uint64_t CountLiveRows() const;
  // Bytes of the data and index files this version references (deletion files, a few
  // bytes per deleted row, are not counted).
  uint64_t ReferencedBytes() const;
  // Of ReferencedBytes(), the files that `other` does not reference (what VACUUM could
  // free once nothing needs this version and `other` is kept).
  uint64_t BytesNotIn(const Manifest& other) const;
};

std::string EncodeManifest(const Manifest& m);
// Corruption names what was wrong; `what` (e.g. the file path) prefixes the message.
Result<Manifest> DecodeManifest(std::string_view bytes, std::string_view what = "manifest");

}  // namespace vigil

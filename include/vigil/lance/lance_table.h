// External Lance tables (DESIGN.md section 13): what Vigil reads of a Lance
// dataset that LanceDB wrote (schema, version, indexes, history) through the
// Lance runner, the allowlist of its location, the checks an index request on
// it is admitted under, and the reading of an unknown outcome from its history.
// Vigil stores only the dataset's location, a fingerprint of its schema and its
// own jobs. Pure functions except Inspect / History (which run the runner);
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/config.h"
#include "vigil/common/status.h"
#include "vigil/index/index_spec.h"
#include "vigil/index/provider_job.h"
#include "vigil/lance/lance_runner.h"

namespace vigil::lance {

struct LanceField {
  std::string name;
  std::string type;  // Arrow's text: Float64, Utf8, FixedSizeList[16]<Float32>, ...
  bool nullable = true;
  // A list's: whether its element is nullable as the schema says (nullopt for other types).
  // Lance stores a fixed-size list without its element's nullability and reads every one back
  // as nullable, so for a Lance vector column this is always true.
  std::optional<bool> element_nullable;
  // The null elements the column holds at the snapshot's version, counted by the runner for
  // the column of an IVF_PQ request whose elements the schema lets be null (nullopt otherwise).
  std::optional<int64_t> null_elements;
};

// Appendix A's bounds on what is read of a Lance dataset (seed 000): an external string
// (a field, index or column name, a UUID, a type) is valid UTF-8 of at most 1,024 bytes; an
// index has at most 64 columns and 16 KiB of column-name bytes; at most 10,000 fields and
// 10,000 indexes. Past them the read fails closed (ResourceExhausted; invalid UTF-8 is
// Corruption); nothing is truncated.
constexpr size_t kMaxLanceStringBytes = 1024;
constexpr size_t kMaxLanceIndexColumns = 64;
constexpr size_t kMaxLanceIndexColumnBytes = 16 * 1024;
constexpr size_t kMaxLanceEntries = 10'000;

struct LanceIndex {
  std::string name;
  std::string uuid;
  std::string index_type;  // IVF_PQ | BTREE | BITMAP | FTS, or LanceDB's own name for others
  std::vector<std::string> columns;
  std::optional<int64_t> indexed_rows;
  std::optional<int64_t> unindexed_rows;
  std::optional<std::string> type_url;  // the protobuf type of its details, as LanceDB lists it
  std::optional<int64_t> segments;      // the physical entries LanceDB says it has
};

// One physical index entry of a version, as its manifest holds it (Lance's `IndexMetadata` in
// the manifest's index section): what LanceDB's listing folds into one logical index per name,
// and silently leaves out when its type is unknown to LanceDB or a field does not resolve.
struct LanceEntry {
  std::string name;
  std::string uuid;
  std::vector<int32_t> field_ids;
  // The path of each field id in the version's schema; nullopt for an id no field has.
  std::vector<std::optional<std::string>> columns;
  // `IndexMetadata.dataset_version`: the dataset version the entry was built from (its commit
  // is a later version).
  int64_t dataset_version = 0;
  std::optional<std::string> type_url;
};

// What a version holds besides its indexes; an index commit leaves it unchanged.
struct LanceData {
  int64_t rows = 0;
  int64_t data_bytes = 0;
  int64_t fragments = 0;
  bool operator==(const LanceData&) const = default;
};

struct LanceVersion {
  int64_t version = 0;
  bool missing = false;  // listed by no manifest: the history has a gap
  std::vector<LanceField> fields;
  std::vector<LanceIndex> indexes;
  LanceData data;
};

struct LanceSnapshot {
  int64_t version = 0;
  std::vector<LanceField> fields;
  std::vector<LanceIndex> indexes;  // logical: LanceDB's listIndices, one per name
  std::vector<LanceEntry> entries;  // physical: the manifest's index entries, system indexes left out
  LanceData data;
};

// The runner's folder in this build's source tree (lance_runner.mjs, node_modules, testdata).
std::string DefaultRunnerDir();

// The runner settings of `config` ([lance] node and runner; an empty runner is the one
// in this build's source tree), with `timeout`.
LanceRunnerOptions RunnerOptions(const LanceConfig& config, std::chrono::milliseconds timeout);
// The options of a read of a dataset outside an attempt: [lance] read_timeout_seconds.
LanceRunnerOptions ReadOptions(const LanceConfig& config);

// InvalidArgument unless `location` is an absolute path of allowlisted segments
// ([A-Za-z0-9._-], no `..`) whose last one is `<name>.lance` (the runner's own rule).
Status ValidateLocation(std::string_view location);

// The newest version of the dataset at `location`: NotFound when there is none, Corruption
// when it does not decode. A `check_index` ({"index_type", "properties"}) is checked against
// the runner's allowlist of index types and properties too (InvalidArgument naming it).
Result<LanceSnapshot> Inspect(const std::string& location, const LanceRunnerOptions& options,
                              const nlohmann::json& check_index = nullptr);
// Every version from `from_version` to the newest, as it was.
Result<std::vector<LanceVersion>> History(const std::string& location, int64_t from_version,
                                          const LanceRunnerOptions& options);

// A fingerprint of the fields' names, types and nullability, in order.
std::string SchemaFingerprint(const std::vector<LanceField>& fields);

// OK when `column` exists, is NOT NULL and suits `type` (seed 000 section 2.3): IVF_PQ a
// FixedSizeList of non-null Float16 / Float32 elements, BTREE an integral, floating, decimal,
// string, date or timestamp column, BITMAP a boolean, integral, string or date column, FTS a
// string. InvalidArgument naming the column and its type otherwise. An IVF_PQ column's
// elements are non-null when the schema says so, or when the runner counted no null element
// (`null_elements` 0); uncounted elements the schema lets be null are refused.
Status CheckIndexable(const std::vector<LanceField>& fields, const std::string& column, index::IndexType type);

// The vector dimension of a FixedSizeList of Float16 / Float32; nullopt for other types.
std::optional<int64_t> VectorDimension(std::string_view arrow_type);

// How a physical entry joins the logical view of its snapshot (seed 000 section 4.2).
enum class LanceConsistency { kConsistent, kOrphan, kMismatch };
std::string_view LanceConsistencyName(LanceConsistency c);  // CONSISTENT | ORPHAN | MISMATCH

// Each entry of `snap` (in order) joined with the logical view: MISMATCH when a field id does
// not resolve, its UUID also belongs to another entry, or entries of its name disagree on
// field ids or type; ORPHAN when no logical index has its exact name; CONSISTENT otherwise.
std::vector<LanceConsistency> EntryConsistency(const LanceSnapshot& snap);

// Logical inspection of `snap` (seed 000 section 4.1): OK, or FailedPrecondition
// "LANCE_INDEX_METADATA_INCONSISTENT: ..." naming the first of: an entry that is not
// CONSISTENT (orphaned, a UUID of two names, fields or types of one name that disagree, a
// field that does not resolve), or a logical index that lacks its entries (its UUID, type or
// entry count is not its entries'). Nothing is merged or dropped.
Status CheckLogicalMetadata(const LanceSnapshot& snap);

// What a dataset's history proves about an attempt of `job` that may have committed (the
// attempt can no longer commit: its processes are gone). `history` runs from the job's
// start version to the newest. Lance's commits carry no attempt id, so only one thing binds
// the history to the attempt: no version after the start version exists, so the attempt
// committed nothing (NotCommitted). A later version is never taken as the attempt's commit,
// however exactly it holds the requested change: an outside writer's identical change looks
// the same (seed 000 non-goal "attribution from a matching metadata postcondition"), so it
// is Unproven and the job stays UNKNOWN for RESOLVE.
enum class Evidence { kNotCommitted, kUnproven };
struct Attribution {
  Evidence evidence = Evidence::kUnproven;
  std::string reason;
};
Attribution Attribute(const index::JobRequest& job, const std::vector<LanceVersion>& history);

}  // namespace vigil::lance

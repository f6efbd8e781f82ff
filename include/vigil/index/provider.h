// The one-shot provider API that the index worker calls (DESIGN.md section 2):
// create a vector index, create a scalar index (BTREE, BITMAP, FTS), drop an
// index, list indexes, count rows, and the one mapping of an index job
// (provider_job.h) to its call. Each call is synchronous, runs once (never
// retried here) and returns a typed error:
//   InvalidArgument / NotSupported  - the request is invalid for this table;
//   AlreadyExists                   - the name is taken and replace=false;
//   NotFound                        - drop of a missing name;
//   CommitConflict                  - a concurrent commit made this one impossible;
//   IOError / Corruption / Internal - the storage or a library failed.
// A create writes its segment under `_indices/<segment_uuid>/` and commits a
// manifest carrying the request's transaction properties (job id, attempt id),
// so the outcome of a lost response can be read back from the version history.
// Thread safety: calls are independent; concurrent calls on one dataset race
// through optimistic commit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/index/index_spec.h"
#include "vigil/index/provider_job.h"
#include "vigil/index/segment.h"
#include "vigil/storage/dataset.h"

namespace vigil::index {

struct CreateIndexRequest {
  std::string dataset_path;
  std::optional<uint64_t> version;          // the admitted version; none = latest
  std::string expected_schema_fingerprint;  // empty = not checked
  std::string column;
  std::string name;  // exact display name
  IndexType type = IndexType::kBtree;
  std::map<std::string, std::string> properties;
  bool replace = false;
  Uuid segment_uuid;          // preassigned; nil = generate
  TransactionProperties txn;  // operation is set by the call
  IndexCaps caps;             // the caps the request was admitted under
  ProgressFn progress;
  DatasetOptions dataset;  // how the dataset is opened and committed (its version catalog)
};

struct DropIndexRequest {
  std::string dataset_path;
  std::optional<uint64_t> version;
  std::string name;
  TransactionProperties txn;
  DatasetOptions dataset;
};

struct ProviderResult {
  uint64_t committed_version = 0;
  Uuid segment_uuid;
};

// One logical index: every segment with one name.
struct LogicalIndexInfo {
  std::string name;
  std::string index_type;
  std::vector<std::string> columns;
  std::string properties_json;
  uint64_t rows_indexed = 0;  // physical rows of covered fragments
  std::vector<Uuid> segments;
};

// Revalidation before invocation (seed 000 section 5): the request's caps are within
// what this build honours (CheckIndexCaps) and the request validates under them on
// the admitted version and schema. FailedPrecondition "STALE_ADMISSION: ..." when
// not; other errors when the version cannot be read. Nothing is written.
Status RevalidateCreate(const CreateIndexRequest& request);

Result<ProviderResult> CreateVectorIndex(const CreateIndexRequest& request);
Result<ProviderResult> CreateScalarIndex(const CreateIndexRequest& request);  // BTREE, BITMAP, FTS
Result<ProviderResult> DropIndex(const DropIndexRequest& request);
// Logical indexes of a version, sorted by name (case-sensitive).
Result<std::vector<LogicalIndexInfo>> ListIndexes(const std::string& dataset_path,
                                                  std::optional<uint64_t> version = std::nullopt);
Result<uint64_t> CountRows(const std::string& dataset_path, std::optional<uint64_t> version = std::nullopt);

// Allocation failures the provider turned into a ResourceExhausted status in this
// process (FAISS also throws std::bad_alloc itself, past any new_handler). A worker
// names its memory limit when the count moved during its call. Thread-safe.
uint64_t AllocationFailures();

// Opens a segment of `manifest` by its type (used by queries and tests).
Result<std::shared_ptr<Segment>> OpenSegment(FileSystem* fs, const std::string& dataset_path, const Manifest& manifest,
                                             const IndexSegmentMeta& meta);

}  // namespace vigil::index

namespace vigil::index {

// BUILD INDEX name ON t (online maintenance, DESIGN.md section 3): adds one
// delta segment to the logical index `name` for the fragments of the base
// version that no segment of it covers, reusing the trained parts of its
// newest segment (IVF centroids and PQ codebooks; the FTS tokenizer, with
// table-wide statistics combined at query time; BTREE/BITMAP just cover the
// new fragments). Before committing it validates against a fresh read of the
// dataset (the index and its segments unchanged, the schema unchanged, every
// covered fragment present) and commits with the request's transaction
// properties (operation BUILD_INDEX), rebasing over concurrent appends and
// deletes. Nothing to cover: a NOOP (no segment, no commit).
struct BuildIndexRequest {
  std::string dataset_path;
  std::optional<uint64_t> version;          // the base cut; none = latest
  std::string expected_schema_fingerprint;  // empty = not checked
  std::string name;                         // exact name of an existing logical index
  Uuid segment_uuid;                        // preassigned; nil = generate
  TransactionProperties txn;
  ProgressFn progress;
  DatasetOptions dataset;
};

struct BuildIndexResult {
  bool noop = false;  // nothing to cover
  uint64_t base_version = 0;
  uint64_t committed_version = 0;           // the base version for a NOOP
  Uuid segment_uuid;                        // nil for a NOOP
  std::vector<uint32_t> covered_fragments;  // of the new segment
};

// NotFound: no index `name`; CommitConflict: the index was replaced, dropped or
// built concurrently, or a fragment to cover was removed; other errors as above.
// Failpoints: build.after_segment_write (before commit), build.after_commit.
Result<BuildIndexResult> BuildIndex(const BuildIndexRequest& request);

}  // namespace vigil::index

namespace vigil::index {

// An index job revalidated on its admitted version, ready for its one provider call.
struct PreparedJob {
  JobRequest job;
  std::optional<CreateIndexRequest> create;  // CREATE / REPLACE only
  DatasetOptions dataset;
};

// Revalidation before invocation, the same for every executor: reopens exactly the
// admitted version, checks the schema fingerprint (FailedPrecondition "STALE_ADMISSION:
// ..." on a change) and, for CREATE / REPLACE, builds the provider request and
// revalidates it under the admitted caps (RevalidateCreate). An error proves that
// nothing was invoked.
// `dataset` opens and commits the dataset (its version catalog).
Result<PreparedJob> PrepareJob(const JobRequest& job, const DatasetOptions& dataset = {});

// The provider call of a prepared job: DropIndex, BuildIndex (a delta segment over the
// base cut), CreateVectorIndex or CreateScalarIndex, with the job id and `attempt_id` as
// transaction properties. Runs once; its errors are the provider's.
Result<ProviderResult> InvokeJob(const PreparedJob& prepared, const std::string& attempt_id,
                                 const ProgressFn& progress);

}  // namespace vigil::index

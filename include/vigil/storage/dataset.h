// Datasets: the versioned storage of one table incarnation (DESIGN.md section 4;
// every name in storage/filename.h):
//
//   <dataset>/_identity              the dataset id, written once before version 1
//            _versions/<v>.manifest
//            data/<uuid>.frag
//            _deletions/<fragment>-<v>-<tag>.del
//            _indices/<uuid>/...
//            _staging/<id>/...
//
// A Dataset object is one opened version: immutable and thread-safe. Writers
// commit version+1 optimistically: publishing `<v+1>.manifest` never replaces
// an existing file; on a race the writer re-reads the latest version and
// rebases compatible changes (appends, index changes on untouched names) or
// reports CommitConflict. With a version catalog (DatasetOptions::versions;
// storage/version_catalog.h) the catalog is the commit point instead and
// decides the newest version. Before it publishes, a writer proves that the
// directory still holds the dataset it opened (its `_identity`); otherwise the
// commit fails with StaleIncarnation and nothing is published. A commit is
// durable (files and directories fsynced) before it returns. A crash at any
// point leaves the previous version readable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vigil/common/env.h"
#include "vigil/common/file_system.h"
#include "vigil/common/status.h"
#include "vigil/storage/column.h"
#include "vigil/storage/deletion.h"
#include "vigil/storage/fragment.h"
#include "vigil/storage/manifest.h"
#include "vigil/storage/version_catalog.h"

namespace vigil {

struct DatasetOptions {
  Env* env = Env::Default();    // the clock of commit timestamps
  FileSystem* fs = nullptr;     // null: env->fs()
  BlockCache* cache = nullptr;  // null: BlockCache::Default()
  uint64_t max_rows_per_fragment = 1 << 20;
  FragmentWriterOptions writer;
  int max_commit_retries = 16;  // rebase attempts before CommitConflict
  // The same for a transaction that only adds fragments: it rebases on any concurrent commit,
  // so it gives up only when other writers win this many races in a row.
  int max_append_commit_retries = 1000;
  // The dataset's version catalog: null, versions are published by link(2) alone.
  std::shared_ptr<VersionCatalog> versions;
};

// A change to apply on top of the version it was prepared against.
struct Transaction {
  TransactionProperties props;
  std::vector<FragmentMeta> added_fragments;                            // ids are assigned at commit
  std::vector<std::pair<uint32_t, DeletionFileRef>> updated_deletions;  // fragment -> new file
  std::vector<uint32_t> removed_fragments;
  std::vector<IndexSegmentMeta> added_segments;
  std::vector<Uuid> removed_segments;
  SchemaPtr new_schema;  // null: unchanged

  // Adds fragments and changes nothing else (an append): it rebases on any concurrent commit.
  bool OnlyAddsFragments() const {
    return updated_deletions.empty() && removed_fragments.empty() && added_segments.empty() &&
           removed_segments.empty() && new_schema == nullptr;
  }
};

struct VersionInfo {
  uint64_t version = 0;
  uint64_t parent_version = 0;
  TransactionProperties txn;
  uint64_t live_rows = 0;
  size_t num_fragments = 0;
  uint64_t bytes = 0;  // Manifest::ReferencedBytes()
};

struct ScanOptions {
  std::vector<std::string> columns;                   // empty: every field
  std::optional<std::vector<uint32_t>> fragment_ids;  // subset; default all
  bool include_deleted = false;
};

class Dataset : public std::enable_shared_from_this<Dataset> {
 public:
  // Creates an empty dataset (version 1) at `path` with `dataset_id` (a fresh one when
  // unset); AlreadyExists if one is there.
  static Result<std::shared_ptr<Dataset>> Create(const std::string& path, SchemaPtr schema, TransactionProperties props,
                                                 DatasetOptions options = {},
                                                 std::optional<Uuid> dataset_id = std::nullopt);
  // Opens `version`, or the newest one. If the newest manifest is corrupt,
  // Corruption names it and the newest good version.
  static Result<std::shared_ptr<Dataset>> Open(const std::string& path, std::optional<uint64_t> version = std::nullopt,
                                               DatasetOptions options = {});
  // Opens the newest version whose manifest verifies (recovery).
  static Result<std::shared_ptr<Dataset>> OpenNewestValid(const std::string& path, DatasetOptions options = {});
  // The highest published version number (no decoding).
  static Result<uint64_t> LatestVersion(const std::string& path, DatasetOptions options = {});
  // LatestVersion for a caller that knows version `known` was published: `known` when its
  // manifest is still there and known + 1's is not (two existence checks instead of a
  // listing: versions are published in sequence and a table directory is never reused).
  // With a version catalog it is asked as well, unless `ask_catalog` is false and no newer
  // manifest is linked: a version committed but not yet linked is then not seen.
  static Result<uint64_t> LatestVersionAfter(const std::string& path, uint64_t known, DatasetOptions options = {},
                                             bool ask_catalog = true);
  // Every version with its transaction properties, oldest first; corrupt ones are skipped
  // and reported in `corrupt` when given.
  static Result<std::vector<VersionInfo>> ListVersions(const std::string& path, DatasetOptions options = {},
                                                       std::vector<uint64_t>* corrupt = nullptr);

  const std::string& path() const { return path_; }
  const Manifest& manifest() const { return manifest_; }
  uint64_t version() const { return manifest_.version; }
  const SchemaPtr& schema() const { return manifest_.schema; }
  const DatasetOptions& options() const { return options_; }
  FileSystem* fs() const { return options_.fs; }
  uint64_t CountRows() const { return manifest_.CountLiveRows(); }

  // Writes the reader's rows as new fragments and commits. Validates every row
  // before anything is published; on error nothing is committed. `before_commit` (may be
  // empty) runs between the writes and the commit; its error commits nothing.
  Result<std::shared_ptr<Dataset>> Append(RecordBatchReader* reader, TransactionProperties props,
                                          const std::function<Status()>& before_commit = nullptr) const;
  // Marks rows deleted (new deletion files) and commits. Unknown addresses are InvalidArgument.
  Result<std::shared_ptr<Dataset>> Delete(const std::vector<RowAddress>& rows, TransactionProperties props) const;
  // Applies `txn` (prepared against this version) and publishes the next version,
  // rebasing over concurrent commits when compatible. StaleIncarnation when the
  // directory no longer holds this dataset.
  Result<std::shared_ptr<Dataset>> Commit(Transaction txn) const;

  // Writes rows to new fragment files without committing (for Commit callers).
  Result<std::vector<FragmentMeta>> WriteFragments(RecordBatchReader* reader) const;
  // Writes a deletion file for fragment `fragment_id` holding its current deletions plus `add`.
  Result<DeletionFileRef> WriteDeletionFile(uint32_t fragment_id, const DeletionVector& add) const;

  // Streams rows (with row addresses) of this version, deleted rows skipped.
  Result<std::unique_ptr<RecordBatchReader>> Scan(ScanOptions options = {}) const;
  // Opens a fragment's reader (shared per path through a process-wide cache of readers).
  Result<std::shared_ptr<FragmentReader>> OpenFragment(uint32_t fragment_id) const;
  // The deletions of a fragment at this version (empty when none).
  Result<DeletionVector> LoadDeletions(uint32_t fragment_id) const;
  // Absolute path of a dataset-relative path.
  std::string AbsPath(const std::string& rel) const;

 private:
  Dataset(std::string path, Manifest manifest, DatasetOptions options);
  // OK when `path_` still holds this dataset (its identity file, or for a dataset made
  // before identity files, its newest manifest); StaleIncarnation otherwise.
  Status CheckIdentity() const;
  // `st`, or StaleIncarnation when `st` is NotFound because this dataset is no longer at path_.
  Status ExplainMissing(Status st) const;

  std::string path_;
  Manifest manifest_;
  DatasetOptions options_;
};

}  // namespace vigil

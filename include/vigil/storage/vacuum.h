// VACUUM of one dataset: removes old manifests that no retained version, no
// protected version (leases, version pins, active jobs) and no unattributed
// attempt needs, then files that no remaining manifest references, and lists
// (and, when the caller proves nobody can still write them, removes) orphans:
// segment directories no manifest references, `_staging/<attempt>` work, and
// unreferenced fragments, deletion files and manifest temp files.
//
// Safety rules: the newest version is never removed; manifests go first and
// files are chosen from a fresh listing of the manifests that remain, so a
// failed or killed vacuum never leaves a version whose files are gone; only
// entries enumerated in the dataset's own folders with names of the expected
// shape are deleted (never a guessed path); a symbolic link is never followed
// nor removed (lstat). Storage knows nothing of leases, pins or jobs: the
// caller passes them in (VacuumOptions). Thread safety: stateless functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/dataset.h"

namespace vigil {

// A file or folder of the dataset that no manifest references.
struct Orphan {
  enum class Kind { kSegment, kStaging, kFragment, kDeletion, kManifestTemp };
  Kind kind = Kind::kSegment;
  std::string rel_path;      // relative to the dataset root, e.g. "_indices/<uuid>"
  std::string id;            // segment uuid, staging attempt id, or the file name
  int64_t mtime_micros = 0;  // of the entry itself (lstat)
  uint64_t bytes = 0;        // total size of regular files below it
  bool is_link = false;      // a symbolic link: listed, never followed nor removed
};

std::string_view OrphanKindName(Orphan::Kind kind);  // SEGMENT, STAGING, FRAGMENT, DELETION, MANIFEST_TEMP

// Every version from `from_version` on stays, for `reason` (shown to the user).
struct VersionGuard {
  uint64_t from_version = 0;
  std::string reason;
};

// A version older than the retained ones that had to stay, and why.
struct KeptVersion {
  uint64_t version = 0;
  std::string reason;
};

struct VacuumOptions {
  // RETAIN n VERSIONS: the newest n are kept (at least 1).
  std::optional<uint64_t> retain_versions;
  // OLDER THAN interval: only versions committed before now - interval may go.
  std::optional<int64_t> older_than_micros;
  // Versions that must stay: leased here, pinned by other processes.
  std::set<uint64_t> protected_versions;
  // Histories that must stay whole, e.g. from the base of a job that is not terminal or whose
  // outcome is unknown (its reconciler reads every later version to prove a commit absent).
  std::vector<VersionGuard> keep_from;
  // Versions written by these attempts / jobs stay (their outcome may still be UNKNOWN).
  std::set<std::string> unknown_attempts;
  std::set<int64_t> unknown_jobs;
  // An orphan is removed only when this is set and returns false for it (no job that
  // could write it is non-terminal, no executor can still write it). Null: only listed.
  std::function<bool(const Orphan&)> may_still_write;
  // Unreferenced entries younger than this are kept (writes in flight before commit).
  int64_t orphan_grace_micros = int64_t{3600} * 1000000;
  bool dry_run = false;  // report only
};

struct VacuumReport {
  std::vector<uint64_t> removed_versions;
  std::vector<KeptVersion> kept_versions;  // beyond the retained ones, oldest first
  std::vector<std::string> removed_paths;  // relative paths of removed files and folders
  std::vector<Orphan> kept_orphans;        // listed but not removed (in use, young, link)
  std::vector<std::string> failures;       // "path: status" of removals that failed (retry later)
  std::vector<std::string> skipped;        // entries left alone (unexpected names, links)
  uint64_t bytes_freed = 0;
};

// Unreferenced entries of the dataset at `path` (the `vigil_orphans(table)` rows),
// judged against every manifest present now. Corruption when a manifest cannot be read.
Result<std::vector<Orphan>> ListOrphans(const std::string& path, DatasetOptions options = {});

// Runs VACUUM as described above. A removal that fails is reported in
// `failures` (the entry is still owned by the dataset and the next VACUUM retries it);
// the call still returns OK. Failpoints: vacuum.after_manifest_remove, vacuum.after_file_remove.
Result<VacuumReport> Vacuum(const std::string& path, const VacuumOptions& options, DatasetOptions dataset_options = {});

// Reclaims the files of a dropped table's dataset at `path`: manifests first
// (newest last, so the dataset stays openable at some version until it is gone),
// then every entry of the expected shape, then the emptied folders. The caller
// proves that no lease, pin, job or executor can still use the dataset
// (`no_user_remains`; false: FailedPrecondition, nothing removed). Same rules as
// Vacuum: no links followed or removed, no unexpected names removed; failures are
// reported and a later call retries.
Result<VacuumReport> ReclaimDroppedDataset(const std::string& path, bool no_user_remains,
                                           DatasetOptions dataset_options = {});

}  // namespace vigil

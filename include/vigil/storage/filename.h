// Every on-disk name of a root and of a dataset, built and parsed here and
// nowhere else (DESIGN.md section 4):
//
//   <root>/vigil_root.json                    the root marker
//   <root>/_meta/                             the metadata store, leader lock, logs
//   <root>/_meta/uploads/<pid>-<uuid>/        request bodies one `vigil serve` spools
//   <root>/_dropped/<incarnation>[-<suffix>]  dropped tables, until VACUUM
//   <root>/<db>/<table>.<incarnation>.vgl/    one directory per table incarnation
//   <root>/<db>/<table>.vgl/                  a table of a root made before incarnations
//   <dataset>/_identity                       the dataset's id, written once at create
//   <dataset>/_versions/<v>.manifest
//   <dataset>/data/<uuid>.frag
//   <dataset>/_deletions/<fragment>-<v>-<tag>.del   (older roots: <fragment>-<v>.del)
//   <dataset>/_indices/<segment-uuid>/...
//   <dataset>/_staging/<id>/...               work in progress; attempt locks
//
// Builders return paths relative to the root or dataset they name; parsers
// return nullopt for anything that is not exactly such a name.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/common/uuid.h"

namespace vigil {

// ---- Root ----
constexpr std::string_view kRootMarkerFile = "vigil_root.json";
constexpr std::string_view kRootMetaDirName = "_meta";
constexpr std::string_view kDroppedDir = "_dropped";
constexpr std::string_view kTableDirSuffix = ".vgl";

// "<table>.<incarnation>.vgl": the directory of one incarnation of a table. A
// dropped incarnation's directory is never reused by another incarnation.
std::string TableDirName(std::string_view table, const Uuid& incarnation);
// "<table>.vgl": the one directory of a table in a root made before incarnations.
std::string LegacyTableDirName(std::string_view table);

struct TableDirParts {
  std::string table;
  std::optional<Uuid> incarnation;  // nullopt for a legacy directory
};
// Parses either form; the table part must be a valid identifier.
std::optional<TableDirParts> ParseTableDirName(std::string_view name);

// "_dropped/<incarnation>" relative to the root; `suffix` (may be empty) keeps
// a second move of the same incarnation apart.
std::string DroppedTablePath(std::string_view incarnation, std::string_view suffix = "");
// The incarnation of a `_dropped` entry (the UUID it starts with), or nullopt.
std::optional<std::string> ParseDroppedTableName(std::string_view name);

// "_meta/uploads": where `vigil serve` spools request bodies, one directory per serving process.
std::string UploadSpoolPath();
// "<pid>-<nonce>": a serving process's directory under UploadSpoolPath().
std::string UploadSpoolDirName(int64_t pid, const Uuid& nonce);
// In a spool directory: the lock its process holds while it lives, and one spooled body.
constexpr std::string_view kUploadSpoolLockFile = "lock";
// "upload-<id>"
std::string SpooledBodyName(const Uuid& id);

// ---- Dataset ----
constexpr std::string_view kIdentityFile = "_identity";
// Present once a dataset's versions are committed through a version catalog: a writer
// without the catalog refuses the dataset (a version it published would never be read).
constexpr std::string_view kCatalogMarkerFile = "_catalog";
constexpr std::string_view kVersionsDir = "_versions";
constexpr std::string_view kDataDir = "data";
constexpr std::string_view kDeletionsDir = "_deletions";
constexpr std::string_view kIndicesDir = "_indices";
constexpr std::string_view kStagingDir = "_staging";

// "_versions/<v>.manifest"
std::string ManifestPath(uint64_t version);
// The version of a "<v>.manifest" entry of `_versions` (decimal, no leading zeros).
std::optional<uint64_t> ParseManifestName(std::string_view name);
// "_versions/<v>.claim-<uuid>": a manifest of version v a writer claims in its version catalog
// (version_catalog.h), linked to ManifestPath(v) once the catalog accepted it.
std::string ClaimManifestPath(uint64_t version);
// The version of a "<v>.claim-<uuid>" entry of `_versions`, or nullopt.
std::optional<uint64_t> ParseClaimManifestName(std::string_view name);
// Whether `rel` is a claim of `version` as ClaimManifestPath builds it (the allowlist for a
// claim name that crosses a process or store boundary).
bool IsClaimManifestPath(std::string_view rel, uint64_t version);
// "_versions/.tmp-<uuid>": where a manifest is written before it is linked.
std::string TempManifestPath();
// Whether an entry of `_versions/` is ".tmp-<uuid>".
bool IsTempManifestName(std::string_view name);
// "<dataset>/.identity-<uuid>": where `_identity` is written before it is linked.
std::string TempIdentityName();
// Whether an entry of a dataset directory is ".identity-<uuid>".
bool IsTempIdentityName(std::string_view name);

// "data/<uuid>.frag" with a fresh UUID.
std::string NewFragmentPath();
// Whether an entry of `data/` is "<uuid>.frag".
bool IsFragmentFileName(std::string_view name);

// "_deletions/<fragment>-<version>-<tag>.del" with a fresh random tag: the
// deletion file a commit of `version` writes for `fragment`.
std::string NewDeletionFilePath(uint32_t fragment, uint64_t version);
struct DeletionFileParts {
  uint32_t fragment = 0;
  uint64_t version = 0;
};
// Parses an entry of `_deletions/`, with or without the tag.
std::optional<DeletionFileParts> ParseDeletionFileName(std::string_view name);

// "_indices/<uuid>"
std::string SegmentDirPath(const Uuid& uuid);
// "_staging/<id>"
std::string StagingPath(std::string_view id);
// Whether an entry of `_staging/` is a name this code creates ([A-Za-z0-9_-], not hidden).
bool IsStagingName(std::string_view name);
// "_staging/<attempt_id>/attempt.lock": held by an attempt's executor for its whole life.
std::string AttemptLockPath(std::string_view attempt_id);

}  // namespace vigil

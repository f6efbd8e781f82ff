#include "vigil/storage/vacuum.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "vigil/common/bounds.h"
#include "vigil/common/env.h"
#include "vigil/common/failpoint.h"
#include "vigil/storage/filename.h"

namespace vigil {

namespace {

constexpr int kMaxDepth = 16;

// What the remaining manifests reference.
struct References {
  std::set<std::string> files;  // fragment and deletion paths, relative
  std::set<Uuid> segments;
};

struct ManifestSet {
  std::map<uint64_t, Manifest> by_version;
  std::vector<uint64_t> corrupt;
};

Result<ManifestSet> ReadManifests(FileSystem* fs, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(auto names, fs->ListDir(JoinPath(path, kVersionsDir)));
  ManifestSet out;
  for (const auto& n : names) {
    auto v = ParseManifestName(n);
    if (!v) continue;
    std::string file = JoinPath(JoinPath(path, kVersionsDir), n);
    auto bytes = fs->ReadFile(file, bounds::kMaxManifestBytes);
    if (!bytes.ok()) {
      if (bytes.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
      return bytes.status();
    }
    auto m = DecodeManifest(*bytes, file);
    if (!m.ok() || m->version != *v) {
      out.corrupt.push_back(*v);
      continue;
    }
    out.by_version.emplace(*v, std::move(*m));
  }
  return out;
}

References Collect(const ManifestSet& set) {
  References r;
  for (const auto& [v, m] : set.by_version) {
    for (const auto& f : m.fragments) {
      r.files.insert(f.path);
      if (f.deletion) r.files.insert(f.deletion->path);
    }
    for (const auto& s : m.segments) r.segments.insert(s.uuid);
  }
  return r;
}

struct StatInfo {
  bool exists = false;
  bool is_link = false;
  bool is_dir = false;
  int64_t mtime_micros = 0;
  uint64_t size = 0;
};

StatInfo LStat(const std::string& abs) {
  StatInfo s;
  struct stat st {};
  if (::lstat(abs.c_str(), &st) != 0) return s;
  s.exists = true;
  s.is_link = S_ISLNK(st.st_mode);
  s.is_dir = S_ISDIR(st.st_mode);
  s.mtime_micros = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000 + st.st_mtim.tv_nsec / 1000;
  s.size = static_cast<uint64_t>(st.st_size);
  return s;
}

// Sum of regular file sizes below `abs` (links not followed); newest mtime in `mtime`.
uint64_t TreeBytes(FileSystem* fs, const std::string& abs, int depth, int64_t* mtime) {
  StatInfo s = LStat(abs);
  if (!s.exists || s.is_link) return 0;
  *mtime = std::max(*mtime, s.mtime_micros);
  if (!s.is_dir) return s.size;
  if (depth >= kMaxDepth) return 0;
  auto names = fs->ListDir(abs);
  if (!names.ok()) return 0;
  uint64_t total = 0;
  for (const auto& n : *names) total += TreeBytes(fs, JoinPath(abs, n), depth + 1, mtime);
  return total;
}

Orphan MakeOrphan(FileSystem* fs, const std::string& root, Orphan::Kind kind, const std::string& rel,
                  const std::string& id) {
  Orphan o;
  o.kind = kind;
  o.rel_path = rel;
  o.id = id;
  std::string abs = JoinPath(root, rel);
  StatInfo s = LStat(abs);
  o.is_link = s.is_link;
  o.mtime_micros = s.mtime_micros;
  if (!s.is_link) o.bytes = TreeBytes(fs, abs, 0, &o.mtime_micros);
  return o;
}

// Entries of `root/dir` ("" when the folder does not exist).
Result<std::vector<std::string>> ListIfPresent(FileSystem* fs, const std::string& abs_dir) {
  auto names = fs->ListDir(abs_dir);
  if (!names.ok() && names.status().code() == StatusCode::kNotFound) return std::vector<std::string>{};
  return names;
}

// Every unreferenced entry, judged against `refs`. Unexpected names go to `skipped`.
Result<std::vector<Orphan>> FindOrphans(FileSystem* fs, const std::string& root, const References& refs,
                                        std::vector<std::string>* skipped) {
  std::vector<Orphan> out;
  VIGIL_ASSIGN_OR_RETURN(auto versions, ListIfPresent(fs, JoinPath(root, kVersionsDir)));
  for (const auto& n : versions) {
    if (ParseManifestName(n)) continue;
    if (std::optional<uint64_t> claimed = ParseClaimManifestName(n)) {
      // A claim is spent once its version is published (linked from it, or from the claim
      // that won); until then the catalog may hold it, and only a reader may link it.
      VIGIL_ASSIGN_OR_RETURN(bool published, fs->Exists(JoinPath(root, ManifestPath(*claimed))));
      if (published) out.push_back(MakeOrphan(fs, root, Orphan::Kind::kManifestTemp, JoinPath(kVersionsDir, n), n));
      continue;
    }
    if (IsTempManifestName(n)) {
      out.push_back(MakeOrphan(fs, root, Orphan::Kind::kManifestTemp, JoinPath(kVersionsDir, n), n));
    } else if (skipped) {
      skipped->push_back(JoinPath(kVersionsDir, n));
    }
  }
  VIGIL_ASSIGN_OR_RETURN(auto data, ListIfPresent(fs, JoinPath(root, kDataDir)));
  for (const auto& n : data) {
    std::string rel = JoinPath(kDataDir, n);
    if (refs.files.count(rel)) continue;
    if (IsFragmentFileName(n)) {
      out.push_back(MakeOrphan(fs, root, Orphan::Kind::kFragment, rel, n));
    } else if (skipped) {
      skipped->push_back(rel);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(auto dels, ListIfPresent(fs, JoinPath(root, kDeletionsDir)));
  for (const auto& n : dels) {
    std::string rel = JoinPath(kDeletionsDir, n);
    if (refs.files.count(rel)) continue;
    if (ParseDeletionFileName(n)) {
      out.push_back(MakeOrphan(fs, root, Orphan::Kind::kDeletion, rel, n));
    } else if (skipped) {
      skipped->push_back(rel);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(auto segs, ListIfPresent(fs, JoinPath(root, kIndicesDir)));
  for (const auto& n : segs) {
    std::string rel = JoinPath(kIndicesDir, n);
    auto uuid = Uuid::Parse(n);
    if (uuid.ok() && uuid->ToString() == n) {
      if (!refs.segments.count(*uuid)) out.push_back(MakeOrphan(fs, root, Orphan::Kind::kSegment, rel, n));
    } else if (skipped) {
      skipped->push_back(rel);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(auto staging, ListIfPresent(fs, JoinPath(root, kStagingDir)));
  for (const auto& n : staging) {
    std::string rel = JoinPath(kStagingDir, n);
    if (IsStagingName(n)) {
      out.push_back(MakeOrphan(fs, root, Orphan::Kind::kStaging, rel, n));
    } else if (skipped) {
      skipped->push_back(rel);
    }
  }
  return out;
}

// Removes `abs` and everything below it without following links. Records each
// failure; returns false when anything could not be removed.
bool RemoveTree(FileSystem* fs, const std::string& abs, int depth, std::vector<std::string>* failures,
                std::vector<std::string>* skipped) {
  auto link = fs->IsSymlink(abs);
  if (!link.ok()) {
    if (link.status().code() == StatusCode::kNotFound) return true;
    failures->push_back(abs + ": " + link.status().ToString());
    return false;
  }
  if (*link) {
    skipped->push_back(abs + ": a symbolic link (never followed nor removed)");
    return false;
  }
  StatInfo s = LStat(abs);
  if (s.is_dir) {
    if (depth >= kMaxDepth) {
      skipped->push_back(abs + ": nested too deep");
      return false;
    }
    auto names = fs->ListDir(abs);
    if (!names.ok()) {
      failures->push_back(abs + ": " + names.status().ToString());
      return false;
    }
    bool all = true;
    for (const auto& n : *names) all = RemoveTree(fs, JoinPath(abs, n), depth + 1, failures, skipped) && all;
    if (!all) return false;
    Status st = fs->RemoveDir(abs);
    if (!st.ok()) failures->push_back(abs + ": " + st.ToString());
    return st.ok();
  }
  Status st = fs->RemoveFile(abs);
  if (!st.ok() && st.code() != StatusCode::kNotFound) {
    failures->push_back(abs + ": " + st.ToString());
    return false;
  }
  return true;
}

// Why version `v` (older than the retained ones) must stay; "" when it may go.
std::string KeepReason(uint64_t v, const Manifest& m, const VacuumOptions& o, int64_t now) {
  if (o.protected_versions.count(v)) return "read by a lease or a version pin";
  for (const VersionGuard& g : o.keep_from) {
    if (v >= g.from_version) return g.reason;
  }
  if (!m.txn.attempt_id.empty() && o.unknown_attempts.count(m.txn.attempt_id)) {
    return "written by an attempt whose outcome is unknown";
  }
  if (m.txn.job_id && o.unknown_jobs.count(*m.txn.job_id)) return "written by a job whose outcome is unknown";
  if (o.older_than_micros && m.txn.timestamp_micros > now - *o.older_than_micros) return "newer than OLDER THAN";
  return "";
}

// The versions VACUUM may remove, oldest first; the ones it must keep go to `kept`.
std::vector<uint64_t> RemovableVersions(const ManifestSet& set, const VacuumOptions& o, int64_t now,
                                        std::vector<KeptVersion>* kept) {
  std::vector<uint64_t> out;
  if (set.by_version.empty()) return out;
  uint64_t newest = set.by_version.rbegin()->first;
  for (uint64_t c : set.corrupt) newest = std::max(newest, c);
  uint64_t retain = std::max<uint64_t>(1, o.retain_versions.value_or(1));
  std::vector<uint64_t> all;
  for (const auto& [v, m] : set.by_version) all.push_back(v);
  size_t keep_from = all.size() > retain ? all.size() - retain : 0;
  for (size_t i = 0; i < keep_from; ++i) {
    if (all[i] == newest) continue;
    std::string reason = KeepReason(all[i], set.by_version.at(all[i]), o, now);
    if (reason.empty()) {
      out.push_back(all[i]);
    } else {
      kept->push_back(KeptVersion{all[i], std::move(reason)});
    }
  }
  return out;
}

Status RemoveVersions(FileSystem* fs, const std::string& path, const std::vector<uint64_t>& versions,
                      VacuumReport* report) {
  for (uint64_t v : versions) {
    std::string rel = ManifestPath(v);
    Status st = fs->RemoveFile(JoinPath(path, rel));
    if (!st.ok() && st.code() != StatusCode::kNotFound) {
      report->failures.push_back(rel + ": " + st.ToString());
      continue;  // still referenced: its files stay with it
    }
    report->removed_versions.push_back(v);
    report->removed_paths.push_back(rel);
    VIGIL_FAILPOINT("vacuum.after_manifest_remove");
  }
  if (!versions.empty()) {
    Status st = fs->SyncDir(JoinPath(path, kVersionsDir));
    if (!st.ok()) report->failures.push_back(std::string(kVersionsDir) + ": " + st.ToString());
  }
  return Status::OK();
}

// Whether a version removed by this VACUUM referenced `o` (then no writer can be
// producing it: it was committed and is now released).
bool Released(const Orphan& o, const References& before) {
  switch (o.kind) {
    case Orphan::Kind::kFragment:
    case Orphan::Kind::kDeletion:
      return before.files.count(o.rel_path) > 0;
    case Orphan::Kind::kSegment: {
      auto uuid = Uuid::Parse(o.id);
      return uuid.ok() && before.segments.count(*uuid) > 0;
    }
    default:
      return false;
  }
}

bool Removable(const Orphan& o, const VacuumOptions& opts, int64_t now, const References& before) {
  if (o.is_link) return false;
  if (Released(o, before)) return true;
  if (!opts.may_still_write) return false;
  if (o.mtime_micros > now - opts.orphan_grace_micros) return false;
  return !opts.may_still_write(o);
}

}  // namespace

std::string_view OrphanKindName(Orphan::Kind kind) {
  switch (kind) {
    case Orphan::Kind::kSegment:
      return "SEGMENT";
    case Orphan::Kind::kStaging:
      return "STAGING";
    case Orphan::Kind::kFragment:
      return "FRAGMENT";
    case Orphan::Kind::kDeletion:
      return "DELETION";
    case Orphan::Kind::kManifestTemp:
      return "MANIFEST_TEMP";
  }
  return "UNKNOWN";
}

Result<std::vector<Orphan>> ListOrphans(const std::string& path, DatasetOptions options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  VIGIL_ASSIGN_OR_RETURN(ManifestSet set, ReadManifests(fs, path));
  if (!set.corrupt.empty()) {
    return Status::Corruption("version " + std::to_string(set.corrupt.front()) + " of " + path +
                              " cannot be read, so nothing can be called unreferenced");
  }
  return FindOrphans(fs, path, Collect(set), nullptr);
}

Result<VacuumReport> Vacuum(const std::string& path, const VacuumOptions& options, DatasetOptions dataset_options) {
  Env* env = dataset_options.env ? dataset_options.env : Env::Default();
  FileSystem* fs = dataset_options.fs ? dataset_options.fs : env->fs();
  const int64_t now = env->NowMicros();
  VacuumReport report;
  VIGIL_ASSIGN_OR_RETURN(ManifestSet before, ReadManifests(fs, path));
  std::vector<uint64_t> removable = RemovableVersions(before, options, now, &report.kept_versions);
  const References released_from = Collect(before);
  if (options.dry_run) {
    report.removed_versions = removable;
  } else {
    VIGIL_RETURN_IF_ERROR(RemoveVersions(fs, path, removable, &report));
  }
  // Files are judged only against the manifests that remain now.
  VIGIL_ASSIGN_OR_RETURN(ManifestSet after, ReadManifests(fs, path));
  if (!after.corrupt.empty()) {
    report.skipped.push_back("unreferenced files: version " + std::to_string(after.corrupt.front()) +
                             " cannot be read, so no file is removed");
    return report;
  }
  VIGIL_ASSIGN_OR_RETURN(auto orphans, FindOrphans(fs, path, Collect(after), &report.skipped));
  for (auto& o : orphans) {
    if (!Removable(o, options, now, released_from) || options.dry_run) {
      report.kept_orphans.push_back(std::move(o));
      continue;
    }
    if (RemoveTree(fs, JoinPath(path, o.rel_path), 0, &report.failures, &report.skipped)) {
      report.removed_paths.push_back(o.rel_path);
      report.bytes_freed += o.bytes;
      VIGIL_FAILPOINT("vacuum.after_file_remove");
    }
  }
  return report;
}

// Removes the identity file (and leftover temporary ones) and the catalog marker once
// nothing else is left.
static void RemoveIdentity(FileSystem* fs, const std::string& path, VacuumReport* report) {
  auto left = fs->ListDir(path);
  if (!left.ok()) return;
  for (const auto& n : *left) {
    if (n != kIdentityFile && n != kCatalogMarkerFile && !IsTempIdentityName(n)) return;
  }
  for (const auto& n : *left) {
    Status st = fs->RemoveFile(JoinPath(path, n));
    if (!st.ok()) report->failures.push_back(n + ": " + st.ToString());
  }
}

Result<VacuumReport> ReclaimDroppedDataset(const std::string& path, bool no_user_remains,
                                           DatasetOptions dataset_options) {
  if (!no_user_remains) {
    return Status::FailedPrecondition("the dataset at " + path + " may still be used; nothing is reclaimed");
  }
  FileSystem* fs = dataset_options.fs ? dataset_options.fs : DefaultFileSystem();
  VacuumReport report;
  VIGIL_ASSIGN_OR_RETURN(auto names, ListIfPresent(fs, JoinPath(path, kVersionsDir)));
  std::vector<uint64_t> versions;
  for (const auto& n : names) {
    if (auto v = ParseManifestName(n)) versions.push_back(*v);
  }
  std::sort(versions.begin(), versions.end());
  VIGIL_RETURN_IF_ERROR(RemoveVersions(fs, path, versions, &report));
  if (report.removed_versions.size() != versions.size()) return report;  // retried later
  // Nothing references anything now: every entry of the expected shape goes.
  VIGIL_ASSIGN_OR_RETURN(auto orphans, FindOrphans(fs, path, References{}, &report.skipped));
  for (const auto& o : orphans) {
    if (o.is_link) {
      report.skipped.push_back(o.rel_path + ": a symbolic link (never followed nor removed)");
      continue;
    }
    if (RemoveTree(fs, JoinPath(path, o.rel_path), 0, &report.failures, &report.skipped)) {
      report.removed_paths.push_back(o.rel_path);
      report.bytes_freed += o.bytes;
    }
  }
  for (std::string_view dir : {kVersionsDir, kDataDir, kDeletionsDir, kIndicesDir, kStagingDir}) {
    std::string abs = JoinPath(path, dir);
    auto left = fs->ListDir(abs);
    if (!left.ok() || !left->empty()) continue;  // absent, or something unexpected remains
    Status st = fs->RemoveDir(abs);
    if (!st.ok()) report.failures.push_back(std::string(dir) + ": " + st.ToString());
  }
  RemoveIdentity(fs, path, &report);
  auto left = fs->ListDir(path);
  if (left.ok() && left->empty()) {
    Status st = fs->RemoveDir(path);
    if (!st.ok()) report.failures.push_back(path + ": " + st.ToString());
  }
  return report;
}

}  // namespace vigil

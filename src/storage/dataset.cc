#include "vigil/storage/dataset.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "dataset_internal.h"
#include "vigil/common/bounds.h"
#include "vigil/common/checksum.h"
#include "vigil/common/env.h"
#include "vigil/common/failpoint.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/filename.h"

namespace vigil {

namespace {

constexpr std::string_view kIdentityMagic = "vigil-dataset ";
constexpr const char* kSafeToRetry = "; nothing was committed: it is safe to retry the statement";
constexpr size_t kMaxIdentityBytes = 256;

DatasetOptions Resolve(DatasetOptions o) {
  if (o.env == nullptr) o.env = Env::Default();
  if (o.fs == nullptr) o.fs = o.env->fs();
  if (o.cache == nullptr) o.cache = BlockCache::Default();
  return o;
}

Result<std::vector<uint64_t>> ListManifestVersions(FileSystem* fs, const std::string& path) {
  auto names = fs->ListDir(JoinPath(path, kVersionsDir));
  if (!names.ok()) {
    if (names.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("no dataset at " + path);
    }
    return names.status();
  }
  std::vector<uint64_t> versions;
  for (const auto& n : *names) {
    if (auto v = ParseManifestName(n)) versions.push_back(*v);
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

Result<Manifest> ReadManifest(FileSystem* fs, const std::string& path, uint64_t version) {
  std::string file = JoinPath(path, ManifestPath(version));
  auto bytes = fs->ReadFile(file, bounds::kMaxManifestBytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("version " + std::to_string(version) + " of " + path + " does not exist");
    }
    return bytes.status();
  }
  VIGIL_ASSIGN_OR_RETURN(Manifest m, DecodeManifest(*bytes, file));
  if (m.version != version) {
    return Status::Corruption(file + " holds version " + std::to_string(m.version));
  }
  return m;
}

std::string EncodeIdentity(const Uuid& id) { return std::string(kIdentityMagic) + id.ToString() + "\n"; }

// The id in `<path>/_identity`; NotFound when the file is missing.
Result<Uuid> ReadIdentity(FileSystem* fs, const std::string& path) {
  const std::string file = JoinPath(path, kIdentityFile);
  VIGIL_ASSIGN_OR_RETURN(std::string bytes, fs->ReadFile(file, kMaxIdentityBytes));
  if (!bytes.starts_with(kIdentityMagic) || !bytes.ends_with("\n")) {
    return Status::Corruption(file + " is not a dataset identity file");
  }
  std::string_view text(bytes);
  text = text.substr(kIdentityMagic.size(), text.size() - kIdentityMagic.size() - 1);
  Result<Uuid> id = Uuid::Parse(text);
  if (!id.ok()) return Status::Corruption(file + ": " + id.status().message());
  return *id;
}

// Links the committed claim `c` to its manifest name when no file is there yet (its writer
// stopped between the claim and the link).
Status RollForward(FileSystem* fs, const std::string& path, const CatalogVersion& c) {
  const std::string final_rel = ManifestPath(c.version);
  if (c.manifest == final_rel) return Status::OK();
  if (!IsClaimManifestPath(c.manifest, c.version)) {
    return Status::Corruption("the version catalog of " + path + " names '" + c.manifest.substr(0, 200) +
                              "' for version " + std::to_string(c.version) + ", which is no claim of it");
  }
  const std::string final_abs = JoinPath(path, final_rel);
  VIGIL_ASSIGN_OR_RETURN(bool there, fs->Exists(final_abs));
  if (there) return Status::OK();
  Status linked = fs->LinkNoReplace(JoinPath(path, c.manifest), final_abs);
  if (linked.Is(StatusCode::kAlreadyExists)) return Status::OK();
  if (linked.Is(StatusCode::kNotFound)) {
    VIGIL_ASSIGN_OR_RETURN(there, fs->Exists(final_abs));  // linked, and the claim removed, meanwhile
    if (there) return Status::OK();
    VIGIL_ASSIGN_OR_RETURN(bool dir_there, fs->Exists(JoinPath(path, kVersionsDir)));
    if (!dir_there) {
      return Status::StaleIncarnation("the dataset at " + path + " was moved away (its table dropped) as version " +
                                      std::to_string(c.version) + " was read");
    }
    return Status::Corruption("version " + std::to_string(c.version) + " of " + path + " is committed as " +
                              c.manifest + ", which is missing");
  }
  VIGIL_RETURN_IF_ERROR(linked);
  return fs->SyncDir(JoinPath(path, kVersionsDir));
}

// The newest version the catalog committed, linked first; nullopt without a catalog or
// before its first claim.
Result<std::optional<uint64_t>> CatalogNewest(const DatasetOptions& o, const std::string& path) {
  if (!o.versions) return std::optional<uint64_t>();
  VIGIL_ASSIGN_OR_RETURN(std::optional<CatalogVersion> newest, o.versions->Latest());
  if (!newest) return std::optional<uint64_t>();
  VIGIL_RETURN_IF_ERROR(RollForward(o.fs, path, *newest));
  return std::optional<uint64_t>(newest->version);
}

// The manifest versions on disk, none past the catalog's newest when there is one.
Result<std::vector<uint64_t>> CommittedVersions(const DatasetOptions& o, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<uint64_t> newest, CatalogNewest(o, path));
  VIGIL_ASSIGN_OR_RETURN(std::vector<uint64_t> versions, ListManifestVersions(o.fs, path));
  if (newest) std::erase_if(versions, [&](uint64_t v) { return v > *newest; });
  return versions;
}

// Marks `path` as committed through its catalog (kCatalogMarkerFile), once. Its presence is
// the mark: a marker torn by a crash marks as well.
Status MarkCatalogued(FileSystem* fs, const std::string& path) {
  const std::string marker = JoinPath(path, kCatalogMarkerFile);
  VIGIL_ASSIGN_OR_RETURN(bool there, fs->Exists(marker));
  if (there) return Status::OK();
  VIGIL_RETURN_IF_ERROR(WriteFileDurably(fs, marker, "vigil version catalog\n"));
  return fs->SyncDir(path);
}

// FailedPrecondition when `path` commits through a catalog that this writer does not have.
Status CheckNotCatalogued(FileSystem* fs, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(bool marked, fs->Exists(JoinPath(path, kCatalogMarkerFile)));
  if (!marked) return Status::OK();
  return Status::FailedPrecondition("the dataset at " + path +
                                    " commits its versions through the metadata store of its root; a writer must open "
                                    "it through that root (its table), and nothing was committed");
}

// Claims `m` in the catalog under a unique name and links it once accepted; AlreadyExists
// when another writer committed that version first. A claim whose answer is unknown
// (IOError) is kept: the catalog may have committed it, and a reader then links it.
Status ClaimManifest(FileSystem* fs, const std::string& path, const Manifest& m, VersionCatalog* versions) {
  const std::string claim_rel = ClaimManifestPath(m.version);
  const std::string claim = JoinPath(path, claim_rel);
  const std::string bytes = EncodeManifest(m);
  VIGIL_RETURN_IF_ERROR(MarkCatalogued(fs, path));
  VIGIL_RETURN_IF_ERROR(WriteFileDurably(fs, claim, bytes));
  VIGIL_FAILPOINT("commit.after_manifest_temp");
  Status claimed = versions->Claim(VersionClaim{m.version, claim_rel, m.txn});
  if (claimed.Is(StatusCode::kIOError)) {
    return claimed.WithContext("version " + std::to_string(m.version) + " may or may not be committed; " + claim_rel +
                               " is kept");
  }
  if (!claimed.ok()) {
    (void)fs->RemoveFile(claim);  // never committed: never read
    return claimed;
  }
  VIGIL_FAILPOINT("commit.after_catalog_claim");
  const std::string final_abs = JoinPath(path, ManifestPath(m.version));
  Status linked = fs->LinkNoReplace(claim, final_abs);
  if (linked.Is(StatusCode::kAlreadyExists)) {
    // A reader rolled this claim forward first, or a writer outside the catalog took the name.
    VIGIL_ASSIGN_OR_RETURN(std::string there, fs->ReadFile(final_abs, bounds::kMaxManifestBytes));
    if (there != bytes) {
      return Status::Corruption("version " + std::to_string(m.version) + " of " + path +
                                " is committed in its catalog, but another manifest was published under its name "
                                "by a writer outside the catalog");
    }
  } else {
    VIGIL_RETURN_IF_ERROR(linked);
  }
  (void)fs->RemoveFile(claim);  // the manifest name holds it now
  return Status::OK();
}

// Publishes `m` as `_versions/<m.version>.manifest` without ever replacing a file, through
// `versions` when there is a catalog. AlreadyExists means another writer published that
// version first.
Status PublishManifest(FileSystem* fs, const std::string& path, const Manifest& m, VersionCatalog* versions) {
  std::string dir = JoinPath(path, kVersionsDir);
  if (versions != nullptr) {
    VIGIL_RETURN_IF_ERROR(ClaimManifest(fs, path, m, versions));
  } else {
    VIGIL_RETURN_IF_ERROR(CheckNotCatalogued(fs, path));
    std::string tmp = JoinPath(path, TempManifestPath());
    VIGIL_RETURN_IF_ERROR(WriteFileDurably(fs, tmp, EncodeManifest(m)));
    VIGIL_FAILPOINT("commit.after_manifest_temp");
    Status linked = fs->LinkNoReplace(tmp, JoinPath(path, ManifestPath(m.version)));
    Status removed = fs->RemoveFile(tmp);  // a leftover temp file is harmless: never read
    (void)removed;
    VIGIL_RETURN_IF_ERROR(linked);
  }
  VIGIL_FAILPOINT("commit.after_manifest_link");
  Status synced = fs->SyncDir(dir);
  if (synced.Is(StatusCode::kNotFound)) {
    return Status::StaleIncarnation("version " + std::to_string(m.version) + " was published in " + path +
                                    " as the dataset was moved away (its table dropped); it went with it");
  }
  if (!synced.ok()) {
    return synced.WithContext("version " + std::to_string(m.version) + " is published but its directory fsync failed");
  }
  VIGIL_FAILPOINT("commit.after_dir_sync");
  return Status::OK();
}

std::string Conflict(uint64_t base, uint64_t latest, const std::string& what) {
  return "commit based on version " + std::to_string(base) + " conflicts with version " + std::to_string(latest) +
         ": " + what;
}

bool SameDeletion(const FragmentMeta* a, const FragmentMeta* b) {
  if (a->deletion.has_value() != b->deletion.has_value()) return false;
  return !a->deletion || a->deletion->path == b->deletion->path;
}

const IndexSegmentMeta* FindSegment(const Manifest& m, const Uuid& uuid) {
  for (const auto& s : m.segments) {
    if (s.uuid == uuid) return &s;
  }
  return nullptr;
}

// Checks that `txn`, prepared against `base`, can be applied on `latest`.
Status CheckRebase(const Manifest& base, const Manifest& latest, const Transaction& txn) {
  if (base.dataset_id != latest.dataset_id) {
    return Status::CommitConflict("the dataset was re-created since version " + std::to_string(base.version));
  }
  bool schema_changed = base.schema->fingerprint() != latest.schema->fingerprint();
  if (schema_changed && (txn.new_schema || !txn.added_fragments.empty() || !txn.added_segments.empty())) {
    return Status::CommitConflict(Conflict(base.version, latest.version, "the schema changed"));
  }
  std::vector<uint32_t> touched = txn.removed_fragments;
  for (const auto& [id, ref] : txn.updated_deletions) touched.push_back(id);
  for (uint32_t id : touched) {
    const FragmentMeta* b = base.FindFragment(id);
    const FragmentMeta* l = latest.FindFragment(id);
    if (b == nullptr) return Status::InvalidArgument("fragment " + std::to_string(id) + " does not exist");
    if (l == nullptr || !SameDeletion(b, l)) {
      return Status::CommitConflict(
          Conflict(base.version, latest.version, "fragment " + std::to_string(id) + " was changed"));
    }
  }
  for (const auto& uuid : txn.removed_segments) {
    if (FindSegment(latest, uuid) == nullptr) {
      return Status::CommitConflict(
          Conflict(base.version, latest.version, "index segment " + uuid.ToString() + " was removed"));
    }
  }
  for (const auto& seg : txn.added_segments) {
    for (uint32_t f : seg.covered_fragments) {
      if (latest.FindFragment(f) == nullptr) {
        return Status::CommitConflict(
            Conflict(base.version, latest.version,
                     "fragment " + std::to_string(f) + " covered by index '" + seg.name + "' was removed"));
      }
    }
    for (const auto& existing : latest.segments) {
      bool new_since_base = FindSegment(base, existing.uuid) == nullptr;
      if (new_since_base && existing.name == seg.name) {
        return Status::CommitConflict(
            Conflict(base.version, latest.version, "index '" + seg.name + "' was changed concurrently"));
      }
    }
  }
  return Status::OK();
}

// The manifest that results from applying `txn` on top of `from`.
Result<Manifest> ApplyTransaction(const Manifest& from, const Transaction& txn, int64_t now_micros) {
  Manifest m = from;
  m.version = from.version + 1;
  m.parent_version = from.version;
  m.txn = txn.props;
  m.txn.timestamp_micros = now_micros;
  if (txn.new_schema) m.schema = txn.new_schema;
  std::set<uint32_t> removed(txn.removed_fragments.begin(), txn.removed_fragments.end());
  std::erase_if(m.fragments, [&](const FragmentMeta& f) { return removed.count(f.id) > 0; });
  for (const auto& [fragment_id, ref] : txn.updated_deletions) {
    const uint32_t id = fragment_id;  // a structured binding cannot be captured before C++20 in clang 14
    auto it = std::find_if(m.fragments.begin(), m.fragments.end(), [&](const auto& f) { return f.id == id; });
    if (it == m.fragments.end()) return Status::InvalidArgument("fragment " + std::to_string(id) + " does not exist");
    if (ref.num_deleted > it->num_rows) return Status::InvalidArgument("deletion file deletes more rows than exist");
    it->deletion = ref;
  }
  for (FragmentMeta f : txn.added_fragments) {
    f.id = m.next_fragment_id++;
    m.fragments.push_back(std::move(f));
  }
  std::set<Uuid> gone(txn.removed_segments.begin(), txn.removed_segments.end());
  std::erase_if(m.segments, [&](const IndexSegmentMeta& s) { return gone.count(s.uuid) > 0; });
  for (const auto& s : txn.added_segments) {
    if (FindSegment(m, s.uuid) != nullptr) {
      return Status::AlreadyExists("index segment " + s.uuid.ToString() + " is already committed");
    }
    m.segments.push_back(s);
  }
  return m;
}

}  // namespace

Dataset::Dataset(std::string path, Manifest manifest, DatasetOptions options)
    : path_(std::move(path)), manifest_(std::move(manifest)), options_(options) {}

std::string Dataset::AbsPath(const std::string& rel) const { return JoinPath(path_, rel); }

Result<std::shared_ptr<Dataset>> Dataset::Create(const std::string& path, SchemaPtr schema, TransactionProperties props,
                                                 DatasetOptions options, std::optional<Uuid> dataset_id) {
  options = Resolve(options);
  FileSystem* fs = options.fs;
  if (!schema) return Status::InvalidArgument("a dataset needs a schema");
  auto existing = ListManifestVersions(fs, path);
  if (existing.ok() && !existing->empty()) return Status::AlreadyExists("a dataset already exists at " + path);
  for (std::string_view dir : {kVersionsDir, kDataDir, kDeletionsDir}) {
    VIGIL_RETURN_IF_ERROR(fs->CreateDirs(JoinPath(path, dir)));
  }
  Manifest m;
  m.version = 1;
  m.dataset_id = dataset_id ? *dataset_id : Uuid::Generate();
  // The identity is durable before version 1 exists, and is never replaced: a directory
  // that holds another dataset's identity makes this create fail.
  const std::string identity_tmp = JoinPath(path, TempIdentityName());
  VIGIL_RETURN_IF_ERROR(WriteFileDurably(fs, identity_tmp, EncodeIdentity(m.dataset_id)));
  Status identity = fs->LinkNoReplace(identity_tmp, JoinPath(path, kIdentityFile));
  (void)fs->RemoveFile(identity_tmp);
  if (identity.Is(StatusCode::kAlreadyExists)) return Status::AlreadyExists("a dataset already exists at " + path);
  VIGIL_RETURN_IF_ERROR(identity);
  VIGIL_RETURN_IF_ERROR(fs->SyncDir(path));
  std::string parent = DirName(path);
  if (!parent.empty()) VIGIL_RETURN_IF_ERROR(fs->SyncDir(parent));
  m.schema = std::move(schema);
  m.txn = std::move(props);
  if (m.txn.operation.empty()) m.txn.operation = "CREATE_TABLE";
  m.txn.timestamp_micros = options.env->NowMicros();
  Status st = PublishManifest(fs, path, m, options.versions.get());
  if (st.code() == StatusCode::kAlreadyExists) return Status::AlreadyExists("a dataset already exists at " + path);
  VIGIL_RETURN_IF_ERROR(st);
  return std::shared_ptr<Dataset>(new Dataset(path, std::move(m), options));
}

Result<uint64_t> Dataset::LatestVersion(const std::string& path, DatasetOptions options) {
  options = Resolve(options);
  VIGIL_ASSIGN_OR_RETURN(std::optional<uint64_t> newest, CatalogNewest(options, path));
  if (newest) return *newest;
  VIGIL_ASSIGN_OR_RETURN(auto versions, ListManifestVersions(options.fs, path));
  if (versions.empty()) return Status::NotFound("no dataset at " + path);
  return versions.back();
}

Result<uint64_t> Dataset::LatestVersionAfter(const std::string& path, uint64_t known, DatasetOptions options,
                                             bool ask_catalog) {
  options = Resolve(options);
  if (options.versions && ask_catalog) return LatestVersion(path, options);  // the catalog decides
  VIGIL_ASSIGN_OR_RETURN(bool next, options.fs->Exists(JoinPath(path, ManifestPath(known + 1))));
  if (!next) {
    VIGIL_ASSIGN_OR_RETURN(bool still, options.fs->Exists(JoinPath(path, ManifestPath(known))));
    if (still) return known;
  }
  return LatestVersion(path, options);
}

Result<std::shared_ptr<Dataset>> Dataset::Open(const std::string& path, std::optional<uint64_t> version,
                                               DatasetOptions options) {
  options = Resolve(options);
  if (version) {
    Result<Manifest> m = ReadManifest(options.fs, path, *version);
    if (m.status().Is(StatusCode::kNotFound) && options.versions) {
      // The newest committed version may not be linked yet.
      VIGIL_RETURN_IF_ERROR(CatalogNewest(options, path).status());
      m = ReadManifest(options.fs, path, *version);
    }
    VIGIL_RETURN_IF_ERROR(m.status());
    return std::shared_ptr<Dataset>(new Dataset(path, std::move(*m), options));
  }
  VIGIL_ASSIGN_OR_RETURN(auto versions, CommittedVersions(options, path));
  if (versions.empty()) return Status::NotFound("no dataset at " + path);
  auto m = ReadManifest(options.fs, path, versions.back());
  if (m.ok()) return std::shared_ptr<Dataset>(new Dataset(path, std::move(*m), options));
  if (m.status().code() != StatusCode::kCorruption) return m.status();
  std::string good = "no older version verifies";
  for (auto it = versions.rbegin() + 1; it != versions.rend(); ++it) {
    if (ReadManifest(options.fs, path, *it).ok()) {
      good = "the newest good version is " + std::to_string(*it);
      break;
    }
  }
  return Status::Corruption("newest version " + std::to_string(versions.back()) + " is corrupt (" +
                            m.status().message() + "); " + good);
}

Result<std::shared_ptr<Dataset>> Dataset::OpenNewestValid(const std::string& path, DatasetOptions options) {
  options = Resolve(options);
  VIGIL_ASSIGN_OR_RETURN(auto versions, CommittedVersions(options, path));
  Status last = Status::NotFound("no dataset at " + path);
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    auto m = ReadManifest(options.fs, path, *it);
    if (m.ok()) return std::shared_ptr<Dataset>(new Dataset(path, std::move(*m), options));
    if (m.status().code() != StatusCode::kCorruption) return m.status();
    last = m.status();
  }
  return last;
}

Result<std::vector<VersionInfo>> Dataset::ListVersions(const std::string& path, DatasetOptions options,
                                                       std::vector<uint64_t>* corrupt) {
  options = Resolve(options);
  VIGIL_ASSIGN_OR_RETURN(auto versions, CommittedVersions(options, path));
  std::vector<VersionInfo> out;
  for (uint64_t v : versions) {
    auto m = ReadManifest(options.fs, path, v);
    if (!m.ok()) {
      if (m.status().code() != StatusCode::kCorruption) return m.status();
      if (corrupt) corrupt->push_back(v);
      continue;
    }
    out.push_back(VersionInfo{m->version, m->parent_version, m->txn, m->CountLiveRows(), m->fragments.size(),
                              m->ReferencedBytes()});
  }
  return out;
}

Status Dataset::CheckIdentity() const {
  const std::string stale =
      "nothing was committed: the dataset this writer opened (" + manifest_.dataset_id.ToString() + ") ";
  Result<Uuid> id = ReadIdentity(options_.fs, path_);
  if (id.ok()) {
    if (*id == manifest_.dataset_id) return Status::OK();
    return Status::StaleIncarnation(stale + "is not the one at " + path_ + " (" + id->ToString() + ")");
  }
  if (!id.status().Is(StatusCode::kNotFound)) return id.status();
  VIGIL_ASSIGN_OR_RETURN(bool present, options_.fs->Exists(JoinPath(path_, kVersionsDir)));
  if (!present) return Status::StaleIncarnation(stale + "is no longer at " + path_ + " (dropped or moved)");
  // A dataset made before identity files: its newest manifest says which dataset is there.
  VIGIL_ASSIGN_OR_RETURN(uint64_t newest, LatestVersion(path_, options_));
  VIGIL_ASSIGN_OR_RETURN(Manifest m, ReadManifest(options_.fs, path_, newest));
  if (m.dataset_id == manifest_.dataset_id) return Status::OK();
  return Status::StaleIncarnation(stale + "is not the one at " + path_ + " (" + m.dataset_id.ToString() + ")");
}

Status Dataset::ExplainMissing(Status st) const {
  if (!st.Is(StatusCode::kNotFound)) return st;
  Status identity = CheckIdentity();
  return identity.ok() ? st : identity;
}

Result<std::shared_ptr<Dataset>> Dataset::Commit(Transaction txn) const {
  FileSystem* fs = options_.fs;
  Manifest latest = manifest_;
  const int max_retries = txn.OnlyAddsFragments() ? options_.max_append_commit_retries : options_.max_commit_retries;
  for (int attempt = 0; attempt <= max_retries; ++attempt) {
    if (attempt > 0) {
      Status rebase = CheckRebase(manifest_, latest, txn);
      if (rebase.Is(StatusCode::kCommitConflict)) return Status::CommitConflict(rebase.message() + kSafeToRetry);
      VIGIL_RETURN_IF_ERROR(rebase);
    }
    VIGIL_ASSIGN_OR_RETURN(Manifest next, ApplyTransaction(latest, txn, options_.env->NowMicros()));
    VIGIL_RETURN_IF_ERROR(CheckIdentity());
    Status st = PublishManifest(fs, path_, next, options_.versions.get());
    if (st.ok()) return std::shared_ptr<Dataset>(new Dataset(path_, std::move(next), options_));
    if (st.code() != StatusCode::kAlreadyExists) return ExplainMissing(st);  // moved away meanwhile?
    // Another writer published next.version first: rebase on the newest version.
    VIGIL_ASSIGN_OR_RETURN(uint64_t newest, LatestVersion(path_, options_));
    VIGIL_ASSIGN_OR_RETURN(latest, ReadManifest(fs, path_, newest));
  }
  return Status::CommitConflict("gave up after " + std::to_string(max_retries) + " rebases on concurrent commits" +
                                kSafeToRetry);
}

Result<std::vector<FragmentMeta>> Dataset::WriteFragments(RecordBatchReader* reader) const {
  FileSystem* fs = options_.fs;
  const SchemaPtr& schema = manifest_.schema;
  if (reader->schema()->fingerprint() != schema->fingerprint()) {
    return Status::InvalidArgument("rows have schema (" + reader->schema()->ToString() + ") but the table has (" +
                                   schema->ToString() + ")");
  }
  internal::FragmentSink sink(fs, path_, schema, options_);
  Status st = sink.WriteAll(reader);
  if (st.ok()) st = sink.Finish();
  if (st.ok() && !sink.fragments().empty()) st = fs->SyncDir(JoinPath(path_, kDataDir));
  if (!st.ok()) {
    sink.RemoveWrittenFiles();
    return ExplainMissing(st);
  }
  VIGIL_FAILPOINT("commit.after_fragments");
  return sink.fragments();
}

Result<std::shared_ptr<Dataset>> Dataset::Append(RecordBatchReader* reader, TransactionProperties props,
                                                 const std::function<Status()>& before_commit) const {
  VIGIL_ASSIGN_OR_RETURN(auto fragments, WriteFragments(reader));
  if (fragments.empty()) return std::const_pointer_cast<Dataset>(shared_from_this());
  if (before_commit) VIGIL_RETURN_IF_ERROR(before_commit());
  Transaction txn;
  txn.props = std::move(props);
  if (txn.props.operation.empty()) txn.props.operation = "APPEND";
  txn.added_fragments = std::move(fragments);
  return Commit(std::move(txn));
}

Result<DeletionVector> Dataset::LoadDeletions(uint32_t fragment_id) const {
  const FragmentMeta* f = manifest_.FindFragment(fragment_id);
  if (f == nullptr) return Status::NotFound("fragment " + std::to_string(fragment_id) + " does not exist");
  if (!f->deletion) return DeletionVector();
  std::string file = AbsPath(f->deletion->path);
  VIGIL_ASSIGN_OR_RETURN(std::string bytes, options_.fs->ReadFile(file, bounds::kMaxManifestBytes));
  if (Checksum64(bytes) != f->deletion->checksum) {
    return Status::Corruption(file + " does not match the checksum in the manifest");
  }
  auto dv = DeletionVector::Decode(bytes);
  if (!dv.ok()) return dv.status().WithContext(file);
  if (dv->Cardinality() != f->deletion->num_deleted) {
    return Status::Corruption(file + " holds " + std::to_string(dv->Cardinality()) + " deletions; the manifest says " +
                              std::to_string(f->deletion->num_deleted));
  }
  return dv;
}

Result<DeletionFileRef> Dataset::WriteDeletionFile(uint32_t fragment_id, const DeletionVector& add) const {
  VIGIL_ASSIGN_OR_RETURN(DeletionVector dv, LoadDeletions(fragment_id));
  dv.Union(add);
  const FragmentMeta* f = manifest_.FindFragment(fragment_id);
  if (dv.Cardinality() > 0 && dv.bits().maximum() >= f->num_rows) {
    return Status::InvalidArgument("row offset " + std::to_string(dv.bits().maximum()) +
                                   " is past the end of fragment " + std::to_string(fragment_id) + " (" +
                                   std::to_string(f->num_rows) + " rows)");
  }
  std::string bytes = dv.Encode();
  DeletionFileRef ref;
  ref.path = NewDeletionFilePath(fragment_id, version() + 1);
  ref.num_deleted = dv.Cardinality();
  ref.checksum = Checksum64(bytes);
  Status st = options_.fs->CreateDir(AbsPath(std::string(kDeletionsDir)));
  if (st.ok()) st = WriteFileDurably(options_.fs, AbsPath(ref.path), bytes);
  VIGIL_RETURN_IF_ERROR(ExplainMissing(st));
  return ref;
}

Result<std::shared_ptr<Dataset>> Dataset::Delete(const std::vector<RowAddress>& rows,
                                                 TransactionProperties props) const {
  std::map<uint32_t, DeletionVector> by_fragment;
  for (RowAddress a : rows) {
    const FragmentMeta* f = manifest_.FindFragment(RowFragment(a));
    if (f == nullptr || RowOffset(a) >= f->num_rows) {
      return Status::InvalidArgument("row address " + std::to_string(RowFragment(a)) + ":" +
                                     std::to_string(RowOffset(a)) + " does not exist in version " +
                                     std::to_string(version()));
    }
    by_fragment[RowFragment(a)].Add(RowOffset(a));
  }
  if (by_fragment.empty()) return std::const_pointer_cast<Dataset>(shared_from_this());
  Transaction txn;
  txn.props = std::move(props);
  if (txn.props.operation.empty()) txn.props.operation = "DELETE";
  for (const auto& [id, dv] : by_fragment) {
    VIGIL_ASSIGN_OR_RETURN(DeletionFileRef ref, WriteDeletionFile(id, dv));
    txn.updated_deletions.emplace_back(id, std::move(ref));
  }
  VIGIL_RETURN_IF_ERROR(ExplainMissing(options_.fs->SyncDir(AbsPath(std::string(kDeletionsDir)))));
  return Commit(std::move(txn));
}

Result<std::shared_ptr<FragmentReader>> Dataset::OpenFragment(uint32_t fragment_id) const {
  const FragmentMeta* f = manifest_.FindFragment(fragment_id);
  if (f == nullptr) return Status::NotFound("fragment " + std::to_string(fragment_id) + " does not exist");
  return internal::SharedFragmentReader(options_.fs, AbsPath(f->path), options_.cache, *f);
}

Result<std::unique_ptr<RecordBatchReader>> Dataset::Scan(ScanOptions options) const {
  return internal::NewScanner(std::const_pointer_cast<Dataset>(shared_from_this()), std::move(options));
}

}  // namespace vigil

#include "vigil/storage/root.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "vigil/common/config.h"
#include "vigil/common/names.h"

namespace vigil {

namespace {

constexpr size_t kMaxMarkerBytes = 64 * 1024;

std::string EncodeMarker(const RootMarker& m) {
  nlohmann::json j = {{"format_version", m.format_version},
                      {"catalog", m.catalog},
                      {"catalog_incarnation", m.incarnation.ToString()},
                      {"created_micros", m.created_micros}};
  return j.dump(2) + "\n";
}

Result<RootMarker> DecodeMarker(const std::string& bytes, const std::string& where) {
  RootMarker m;
  std::string incarnation;
  try {
    nlohmann::json j = nlohmann::json::parse(bytes);
    m.format_version = j.at("format_version").get<int>();
    m.catalog = j.at("catalog").get<std::string>();
    incarnation = j.at("catalog_incarnation").get<std::string>();
    m.created_micros = j.at("created_micros").get<int64_t>();
  } catch (const std::exception& e) {
    return Status::Corruption(where + " is not a valid vigil root marker: " + e.what());
  }
  if (m.format_version > kRootFormatVersion) {
    return Status::NotSupported(where + " has format version " + std::to_string(m.format_version) +
                                "; this build reads up to " + std::to_string(kRootFormatVersion));
  }
  Result<Uuid> uuid = Uuid::Parse(incarnation);
  if (!uuid.ok()) return Status::Corruption(where + ": bad catalog_incarnation: " + uuid.status().message());
  m.incarnation = *uuid;
  Status st = ValidateIdentifier(m.catalog, "catalog name");
  if (!st.ok()) return Status::Corruption(where + ": " + st.message());
  return m;
}

// Publishes the commented vigil.toml of `config` in `dir` atomically: a durable
// temp file linked (never replacing) into place, then the directory synced. An
// existing vigil.toml is kept.
Status WriteConfig(FileSystem* fs, const std::string& dir, const Config& config) {
  std::string final_path = JoinPath(dir, kConfigFile);
  std::string temp_path = final_path + ".tmp." + Uuid::Generate().ToString();
  VIGIL_RETURN_IF_ERROR(WriteFileDurably(fs, temp_path, RenderConfig(config)));
  Status linked = fs->LinkNoReplace(temp_path, final_path);
  Status removed = fs->RemoveFile(temp_path);
  if (!linked.ok() && !linked.Is(StatusCode::kAlreadyExists)) return linked;
  VIGIL_RETURN_IF_ERROR(removed);
  return fs->SyncDir(dir);
}

}  // namespace

Result<TableName> ParseTableName(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    parts.push_back(text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) {
    return Status::InvalidArgument("table name '" + std::string(text.substr(0, 200)) +
                                   "' must be db.table or catalog.db.table");
  }
  TableName name;
  size_t i = 0;
  if (parts.size() == 3) {
    VIGIL_RETURN_IF_ERROR(ValidateIdentifier(parts[i], "catalog name"));
    name.catalog = std::string(parts[i++]);
  }
  VIGIL_RETURN_IF_ERROR(ValidateDatabaseName(parts[i]));
  name.db = std::string(parts[i++]);
  VIGIL_RETURN_IF_ERROR(ValidateTableName(parts[i]));
  name.table = std::string(parts[i]);
  return name;
}

Result<Root> Root::Init(const std::string& dir, Env* env, const Config& config) {
  FileSystem* fs = env->fs();
  if (dir.empty()) return Status::InvalidArgument("root directory is empty");
  std::string marker_path = JoinPath(dir, kRootMarkerFile);
  VIGIL_ASSIGN_OR_RETURN(bool exists, fs->Exists(dir));
  if (exists) {
    VIGIL_ASSIGN_OR_RETURN(bool marked, fs->Exists(marker_path));
    if (marked) return Status::AlreadyExists(dir + " is already a vigil root");
    Result<std::vector<std::string>> entries = fs->ListDir(dir);
    if (!entries.ok()) return entries.status().WithContext("cannot use " + dir + " as a root");
    if (!entries->empty()) {
      return Status::FailedPrecondition(dir +
                                        " is not empty and is not a vigil root; choose an empty or new directory");
    }
  }
  VIGIL_RETURN_IF_ERROR(fs->CreateDirs(dir));
  RootMarker m;
  m.incarnation = Uuid::Generate();
  m.created_micros = env->NowMicros();
  Status st = WriteFileDurably(fs, marker_path, EncodeMarker(m));
  if (st.Is(StatusCode::kAlreadyExists)) return Status::AlreadyExists(dir + " is already a vigil root");
  VIGIL_RETURN_IF_ERROR(st);
  VIGIL_RETURN_IF_ERROR(fs->SyncDir(dir));
  VIGIL_RETURN_IF_ERROR(fs->SyncDir(DirName(dir).empty() ? "." : DirName(dir)));
  // After the marker is durable: a crash before this leaves a root without
  // vigil.toml, which loads as the defaults.
  Status written = WriteConfig(fs, dir, config);
  if (!written.ok()) {
    return written.WithContext("root " + dir + " was created, but writing its " + std::string(kConfigFile) +
                               " failed (the defaults apply without it)");
  }
  return Root(dir, m, env);
}

Result<Root> Root::Open(const std::string& dir, Env* env) {
  FileSystem* fs = env->fs();
  std::string marker_path = JoinPath(dir, kRootMarkerFile);
  VIGIL_ASSIGN_OR_RETURN(bool marked, fs->Exists(marker_path));
  if (!marked) {
    return Status::FailedPrecondition(dir + " is not a vigil root (no " + std::string(kRootMarkerFile) +
                                      "); create one with `vigil init " + dir + "`");
  }
  VIGIL_ASSIGN_OR_RETURN(std::string bytes, fs->ReadFile(marker_path, kMaxMarkerBytes));
  VIGIL_ASSIGN_OR_RETURN(RootMarker m, DecodeMarker(bytes, marker_path));
  return Root(dir, m, env);
}

Status Root::CheckTableName(const TableName& name) const {
  if (name.catalog != marker_.catalog) {
    return Status::InvalidArgument("catalog '" + name.catalog + "' is not this root's catalog '" + marker_.catalog +
                                   "'");
  }
  VIGIL_RETURN_IF_ERROR(ValidateDatabaseName(name.db));
  return ValidateTableName(name.table);
}

Result<std::string> Root::TableIncarnationPath(const TableName& name, const Uuid& incarnation) const {
  VIGIL_RETURN_IF_ERROR(CheckTableName(name));
  return JoinPath(JoinPath(path_, name.db), TableDirName(name.table, incarnation));
}

Result<std::string> Root::LegacyTablePath(const TableName& name) const {
  VIGIL_RETURN_IF_ERROR(CheckTableName(name));
  return JoinPath(JoinPath(path_, name.db), LegacyTableDirName(name.table));
}

Result<std::vector<std::string>> Root::ListDatabases() const {
  VIGIL_ASSIGN_OR_RETURN(auto entries, fs()->ListDir(path_));
  std::vector<std::string> dbs;
  for (const auto& e : entries) {
    if (!ValidateDatabaseName(e).ok()) continue;
    VIGIL_ASSIGN_OR_RETURN(bool link, fs()->IsSymlink(JoinPath(path_, e)));
    if (link || !fs()->ListDir(JoinPath(path_, e)).ok()) continue;  // files are not databases
    dbs.push_back(e);
  }
  std::sort(dbs.begin(), dbs.end());
  return dbs;
}

Result<bool> Root::DatabaseExists(std::string_view db) const {
  VIGIL_RETURN_IF_ERROR(ValidateDatabaseName(db));
  return fs()->Exists(JoinPath(path_, db));
}

Result<std::vector<Root::TableDir>> Root::ListTableDirs(std::string_view db) const {
  VIGIL_ASSIGN_OR_RETURN(bool exists, DatabaseExists(db));
  if (!exists) return Status::NotFound("database '" + std::string(db) + "' does not exist");
  VIGIL_ASSIGN_OR_RETURN(auto entries, fs()->ListDir(JoinPath(path_, db)));
  std::sort(entries.begin(), entries.end());
  std::vector<TableDir> dirs;
  for (const auto& e : entries) {
    if (std::optional<TableDirParts> parts = ParseTableDirName(e)) dirs.push_back(TableDir{e, std::move(*parts)});
  }
  return dirs;
}

Status Root::CreateDatabase(std::string_view db) const {
  VIGIL_ASSIGN_OR_RETURN(bool exists, DatabaseExists(db));
  if (exists) return Status::AlreadyExists("database '" + std::string(db) + "' already exists");
  VIGIL_RETURN_IF_ERROR(fs()->CreateDirs(JoinPath(path_, db)));
  return fs()->SyncDir(path_);
}

Status Root::EnsureDatabase(std::string_view db) const {
  Status st = CreateDatabase(db);
  return st.Is(StatusCode::kAlreadyExists) ? Status::OK() : st;
}

Status Root::DropDatabase(std::string_view db) const {
  VIGIL_ASSIGN_OR_RETURN(bool exists, DatabaseExists(db));
  if (!exists) return Status::NotFound("database '" + std::string(db) + "' does not exist");
  const std::string dir = JoinPath(path_, db);
  VIGIL_ASSIGN_OR_RETURN(auto entries, fs()->ListDir(dir));
  if (!entries.empty()) {
    VIGIL_ASSIGN_OR_RETURN(auto tables, ListTableDirs(db));
    std::string what = tables.empty() ? std::to_string(entries.size()) + " entries" : "tables ";
    for (size_t i = 0; i < tables.size() && i < 10; ++i) what += (i ? ", " : "") + tables[i].parts.table;
    if (tables.size() > 10) what += ", ... (" + std::to_string(tables.size()) + " in all)";
    return Status::FailedPrecondition("database '" + std::string(db) + "' is not empty (" + what +
                                      "); drop its tables first");
  }
  VIGIL_RETURN_IF_ERROR(fs()->RemoveDir(dir));
  return fs()->SyncDir(path_);
}

}  // namespace vigil

// An embedded root: a directory holding one local catalog's tables as
// `<root>/<db>/<table>.vgl`, marked by `vigil_root.json` (format version,
// catalog name "local", catalog incarnation UUID, creation time).
// Also the parsing of `db.table` and `catalog.db.table` names.
//
// Thread safety: a Root is immutable after Init/Open; methods are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/fs.h"

namespace vigil {

constexpr std::string_view kRootMarkerFile = "vigil_root.json";
constexpr std::string_view kLocalCatalog = "local";
constexpr std::string_view kTableDirSuffix = ".vgl";
constexpr int kRootFormatVersion = 1;
// Directories of a root that are not databases: the metadata store and dropped tables.
constexpr std::string_view kRootMetaDirName = "_meta";
constexpr std::string_view kDroppedDir = "_dropped";

struct TableName {
  std::string catalog = std::string(kLocalCatalog);
  std::string db;
  std::string table;

  // "catalog.db.table"
  std::string ToString() const { return catalog + "." + db + "." + table; }
};

// Parses "db.table" or "catalog.db.table"; each part must be a valid identifier.
// InvalidArgument says which part is wrong and what the accepted forms are.
Result<TableName> ParseTableName(std::string_view text);

struct RootMarker {
  int format_version = kRootFormatVersion;
  std::string catalog = std::string(kLocalCatalog);
  Uuid incarnation;
  int64_t created_micros = 0;
};

class Root {
 public:
  // Creates a root at `dir` (created when missing). A non-empty directory that
  // is not a root is FailedPrecondition; an existing root is AlreadyExists.
  static Result<Root> Init(const std::string& dir, FileSystem* fs = nullptr);
  // Opens an existing root; FailedPrecondition "... is not a vigil root" when the
  // marker is missing, Corruption when it is unreadable, NotSupported for a newer format.
  static Result<Root> Open(const std::string& dir, FileSystem* fs = nullptr);

  const std::string& path() const { return path_; }
  const RootMarker& marker() const { return marker_; }
  FileSystem* fs() const { return fs_; }

  // `<root>/<db>/<table>.vgl`; InvalidArgument for another catalog or bad names.
  Result<std::string> TablePath(const TableName& name) const;
  // Whether the table's directory exists.
  Result<bool> TableExists(const TableName& name) const;
  // Database names (directories with identifier names, except _meta and _dropped), sorted.
  Result<std::vector<std::string>> ListDatabases() const;
  // Creates `<root>/<db>` durably. AlreadyExists when it exists; InvalidArgument for a bad or
  // reserved name.
  Status CreateDatabase(std::string_view db) const;
  // Removes an empty database directory. NotFound when missing; FailedPrecondition naming
  // its tables (or other entries) when it is not empty.
  Status DropDatabase(std::string_view db) const;
  // Table names of `db` (entries `<name>.vgl`), sorted; NotFound for an unknown db.
  Result<std::vector<std::string>> ListTables(std::string_view db) const;

 private:
  Root(std::string path, RootMarker marker, FileSystem* fs)
      : path_(std::move(path)), marker_(std::move(marker)), fs_(fs) {}

  std::string path_;
  RootMarker marker_;
  FileSystem* fs_;
};

}  // namespace vigil

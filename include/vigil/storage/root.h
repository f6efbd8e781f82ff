// An embedded root: a directory holding one local catalog's tables, marked by
// `vigil_root.json` (format version, catalog name "local", catalog incarnation
// UUID, creation time). Each incarnation of a table has its own directory,
// `<root>/<db>/<table>.<incarnation>.vgl` (storage/filename.h); which one a name
// means is the catalog's answer (catalog/table_catalog.h), not the file system's.
// Also the parsing of `db.table` and `catalog.db.table` names.
//
// Thread safety: a Root is immutable after Init/Open; methods are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/config.h"
#include "vigil/common/env.h"
#include "vigil/common/file_system.h"
#include "vigil/common/status.h"
#include "vigil/common/uuid.h"
#include "vigil/storage/filename.h"

namespace vigil {

constexpr std::string_view kLocalCatalog = "local";
constexpr int kRootFormatVersion = 1;

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
  // Creates a root at `dir` (created when missing) with a vigil.toml holding `config`'s
  // settings. A non-empty directory that is not a root is FailedPrecondition; an existing
  // root is AlreadyExists.
  static Result<Root> Init(const std::string& dir, Env* env = Env::Default(), const Config& config = Config());
  // Opens an existing root; FailedPrecondition "... is not a vigil root" when the
  // marker is missing, Corruption when it is unreadable, NotSupported for a newer format.
  static Result<Root> Open(const std::string& dir, Env* env = Env::Default());

  const std::string& path() const { return path_; }
  const RootMarker& marker() const { return marker_; }
  Env* env() const { return env_; }
  FileSystem* fs() const { return env_->fs(); }

  // Checks that `name` is of this root's catalog and that its database and table names are
  // valid and not reserved (ValidateDatabaseName, ValidateTableName).
  Status CheckTableName(const TableName& name) const;
  // `<root>/<db>/<table>.<incarnation>.vgl`: the directory of one incarnation. CheckTableName first.
  Result<std::string> TableIncarnationPath(const TableName& name, const Uuid& incarnation) const;
  // `<root>/<db>/<table>.vgl`: where a root made before incarnations kept the table.
  Result<std::string> LegacyTablePath(const TableName& name) const;
  // `<root>/<rel>` for a root-relative name of storage/filename.h.
  std::string Path(std::string_view rel) const { return JoinPath(path_, rel); }

  // Database names (directories with valid database names), sorted.
  Result<std::vector<std::string>> ListDatabases() const;
  // Whether `<root>/<db>` exists; InvalidArgument for a bad or reserved name.
  Result<bool> DatabaseExists(std::string_view db) const;
  // Creates `<root>/<db>` durably. AlreadyExists when it exists; InvalidArgument for a bad or
  // reserved name.
  Status CreateDatabase(std::string_view db) const;
  // CreateDatabase, where an existing database is fine.
  Status EnsureDatabase(std::string_view db) const;
  // Removes an empty database directory. NotFound when missing; FailedPrecondition naming
  // what it holds when it is not empty.
  Status DropDatabase(std::string_view db) const;

  struct TableDir {
    std::string dir_name;  // the entry of `<root>/<db>/`
    TableDirParts parts;
  };
  // The table directories of `db` (both forms of filename.h), sorted by name; NotFound for an
  // unknown db. Whether a directory is a live table is the catalog's answer.
  Result<std::vector<TableDir>> ListTableDirs(std::string_view db) const;

 private:
  Root(std::string path, RootMarker marker, Env* env) : path_(std::move(path)), marker_(std::move(marker)), env_(env) {}

  std::string path_;
  RootMarker marker_;
  Env* env_;
};

}  // namespace vigil

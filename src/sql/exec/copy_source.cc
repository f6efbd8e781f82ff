#include "sql/exec/copy_source.h"

#include <string>

#include "sql/exec/server_path.h"
#include "vigil/ingest/ingest.h"

namespace vigil::sql {

namespace {

constexpr char kSetting[] = "[sql] copy_allowed_directories in vigil.toml";

Status Refused(const std::string& path, const std::string& why) {
  return Status::PermissionDenied("COPY FROM '" + path + "' is refused: " + why);
}

Result<std::shared_ptr<const RandomAccessFile>> OpenServerFile(const ExecContext& ctx, const std::string& path) {
  if (!ctx.options.principal.admin) {
    return Refused(path, std::string("reading a file on the server requires ADMIN (server-side file access; ") +
                             "the readable directories are " + kSetting + ")");
  }
  if (ctx.config.sql.copy_allowed_directories.empty()) {
    return Refused(path, std::string("server-side file access is off (") + kSetting + " is empty)");
  }
  const std::string outside =
      std::string("a server-side COPY reads only files below ") + kSetting + ", with symbolic links resolved";
  const Status refused =
      Refused(path, path.empty() || path.front() != '/' ? outside + ", named by an absolute path" : outside);
  VIGIL_ASSIGN_OR_RETURN(const std::string real, ResolveAllowedPath(path, ctx.config.sql.copy_allowed_directories,
                                                                    refused, "cannot open input file " + path));
  // Opened along the resolved path without following links: a link swapped in after
  // the check is refused rather than followed out of the directory.
  return OpenIngestFile(real, /*no_symlinks=*/true);
}

}  // namespace

Result<std::shared_ptr<const RandomAccessFile>> OpenCopySource(const ExecContext& ctx, const std::string& path) {
  switch (ctx.options.file_access) {
    case FileAccess::kClient:
      return OpenIngestFile(path);
    case FileAccess::kServer:
      return OpenServerFile(ctx, path);
  }
  return Status::Internal("unknown file access mode");
}

}  // namespace vigil::sql

#include "sql/exec/copy_source.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "vigil/ingest/ingest.h"

namespace vigil::sql {

namespace {

constexpr char kSetting[] = "[sql] copy_allowed_directories in vigil.toml";

// realpath(3); empty optional with errno set when it fails.
std::optional<std::string> RealPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return std::nullopt;
  std::string out(resolved);
  std::free(resolved);
  return out;
}

// True when `path` is `dir` or lies below it (both absolute and normal).
bool IsBelow(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// The allowed directories as written (normalized) and with their links resolved.
std::vector<std::string> AllowedDirectories(const Config& config) {
  std::vector<std::string> out;
  for (const std::string& d : config.sql.copy_allowed_directories) {
    std::string lexical = std::filesystem::path(d).lexically_normal().string();
    while (lexical.size() > 1 && lexical.back() == '/') lexical.pop_back();
    out.push_back(lexical);
    if (std::optional<std::string> real = RealPath(d)) out.push_back(*real);
  }
  return out;
}

bool IsAllowed(const std::string& path, const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) {
    if (IsBelow(path, d)) return true;
  }
  return false;
}

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
  if (path.empty() || path.front() != '/') return Refused(path, outside + ", named by an absolute path");
  const std::vector<std::string> dirs = AllowedDirectories(ctx.config);
  std::optional<std::string> real = RealPath(path);
  if (!real) {
    const int err = errno;
    // What is wrong is said only about a path inside an allowed directory.
    if (!IsAllowed(std::filesystem::path(path).lexically_normal().string(), dirs)) return Refused(path, outside);
    if (err == ENOENT) return Status::NotFound("cannot open input file " + path + ": " + path + " does not exist");
    return Status::FromErrno(err, "cannot open input file " + path);
  }
  if (!IsAllowed(*real, dirs)) return Refused(path, outside);
  // Opened along the resolved path without following links: a link swapped in after
  // the check is refused rather than followed out of the directory.
  return OpenIngestFile(*real, /*no_symlinks=*/true);
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

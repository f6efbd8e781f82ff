#include "sql/exec/server_path.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>

namespace vigil::sql {

namespace {

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
std::vector<std::string> AllowedDirectories(const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const std::string& d : allowed) {
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

// `path` (which does not resolve) as its nearest resolving ancestor with the rest appended.
std::string ResolvedPrefix(const std::string& path) {
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  std::filesystem::path rest;
  for (std::filesystem::path at = normal; at.has_relative_path(); at = at.parent_path()) {
    rest = rest.empty() ? at.filename() : at.filename() / rest;
    if (std::optional<std::string> real = RealPath(at.parent_path().string())) {
      return (std::filesystem::path(*real) / rest).lexically_normal().string();
    }
  }
  return normal.string();
}

}  // namespace

Result<std::string> ResolveAllowedPath(const std::string& path, const std::vector<std::string>& allowed,
                                       const Status& refused, const std::string& what) {
  if (path.empty() || path.front() != '/') return refused;
  const std::vector<std::string> dirs = AllowedDirectories(allowed);
  std::optional<std::string> real = RealPath(path);
  if (!real) {
    const int err = errno;
    // What is wrong is said only about a path inside an allowed directory, judged by its
    // nearest ancestor that resolves: a link out of the directory leads outside it even when
    // what it leads to does not exist.
    if (!IsAllowed(ResolvedPrefix(path), dirs)) return refused;
    if (err == ENOENT) return Status::NotFound(what + ": " + path + " does not exist");
    return Status::FromErrno(err, what);
  }
  if (!IsAllowed(*real, dirs)) return refused;
  return *real;
}

}  // namespace vigil::sql

// A path on the server that a statement names (COPY ... FROM 'path', CREATE EXTERNAL
// TABLE ... LOCATION 'path'), confined to the directories a setting allows: the path
// with every symbolic link resolved must lie below one of them, and a path outside is
// refused alike whether it exists or not. Pure functions over the file system's
// namespace (realpath); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "vigil/common/status.h"

namespace vigil::sql {

// `path` (absolute) with every symbolic link resolved, when it lies below one of
// `allowed` (each taken as written, normalized, and with its own links resolved).
// `refused` when it does not, or is not absolute, or cannot be resolved and does not
// lie below one of them as written: the answer never says whether such a path
// exists. A path below one as written that cannot be resolved is NotFound
// ("<what>: <path> does not exist") or the errno's status (prefixed by `what`).
Result<std::string> ResolveAllowedPath(const std::string& path, const std::vector<std::string>& allowed,
                                       const Status& refused, const std::string& what);

}  // namespace vigil::sql

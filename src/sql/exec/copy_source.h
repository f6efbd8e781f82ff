// The file a COPY ... FROM 'path' reads: who may read which file (the session's
// FileAccess, PostgreSQL's rule for server-side files) and opening it so that
// only a regular file is ever read. Used by one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "sql/exec/exec_internal.h"
#include "vigil/common/file_system.h"

namespace vigil::sql {

// Opens `path` under ctx.options.file_access. kClient: any regular file this
// process can read. kServer: the principal needs ADMIN and `path`, absolute,
// with every symbolic link resolved, must lie below a directory of
// [sql] copy_allowed_directories; otherwise PermissionDenied before anything is
// opened. Anything but a regular file is InvalidArgument and is never read.
Result<std::shared_ptr<const RandomAccessFile>> OpenCopySource(const ExecContext& ctx, const std::string& path);

}  // namespace vigil::sql

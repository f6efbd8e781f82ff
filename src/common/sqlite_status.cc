#include "vigil/common/sqlite_status.h"

#include <sqlite3.h>

namespace vigil {

StatusCode SqliteStatusCode(int rc, int extended_rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StatusCode::kBusy;
    case SQLITE_CONSTRAINT:
      if (extended_rc == SQLITE_CONSTRAINT_PRIMARYKEY || extended_rc == SQLITE_CONSTRAINT_UNIQUE) {
        return StatusCode::kAlreadyExists;
      }
      return StatusCode::kInvalidArgument;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return StatusCode::kResourceExhausted;
    case SQLITE_INTERRUPT:
      return StatusCode::kCancelled;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
      return StatusCode::kIOError;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StatusCode::kCorruption;
    case SQLITE_AUTH:
      return StatusCode::kPermissionDenied;
    case SQLITE_ERROR:  // SQL error: syntax, missing table or column
    case SQLITE_RANGE:
    case SQLITE_MISMATCH:
      return StatusCode::kInvalidArgument;
    default:
      return StatusCode::kInternal;
  }
}

Status SqliteStatus(int rc, int extended_rc, std::string message) {
  return Status(SqliteStatusCode(rc, extended_rc), std::move(message));
}

}  // namespace vigil

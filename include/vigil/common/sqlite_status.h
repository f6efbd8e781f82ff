// The one mapping of SQLite result codes to Vigil's Status codes, shared by
// every layer that talks to SQLite (the metadata store, the full-text index,
// the SELECT engine). Pure functions; thread-safe.
#pragma once

#include <string>

#include "vigil/common/status.h"

namespace vigil {

// The StatusCode of a failed SQLite call: BUSY / LOCKED -> Busy; a PRIMARY KEY or UNIQUE
// constraint -> AlreadyExists, another constraint -> InvalidArgument; FULL, NOMEM, TOOBIG ->
// ResourceExhausted; INTERRUPT -> Cancelled; IOERR, CANTOPEN, READONLY -> IOError; CORRUPT,
// NOTADB -> Corruption; AUTH -> PermissionDenied; ERROR, RANGE, MISMATCH -> InvalidArgument;
// anything else Internal. `extended_rc` is sqlite3_extended_errcode (or `rc` when unknown).
StatusCode SqliteStatusCode(int rc, int extended_rc);
// A Status of that code with `message`.
Status SqliteStatus(int rc, int extended_rc, std::string message);

}  // namespace vigil

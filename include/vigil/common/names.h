// Validation of user-visible identifiers (databases, tables, columns, indexes).
// Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "vigil/common/status.h"

namespace vigil {

constexpr size_t kMaxIdentifierLength = 64;

// OK when `name` matches [A-Za-z_][A-Za-z0-9_]{0,63}; otherwise InvalidArgument
// naming `what` (e.g. "column name") and the offending text.
Status ValidateIdentifier(std::string_view name, std::string_view what);

// The one rule for database names, called by every path that can create or name a
// database: an identifier that does not start with '_' (such names belong to Vigil:
// `_meta`, `_dropped`, ...). InvalidArgument says which rule failed.
Status ValidateDatabaseName(std::string_view name);
// The one rule for table names: an identifier.
Status ValidateTableName(std::string_view name);

}  // namespace vigil

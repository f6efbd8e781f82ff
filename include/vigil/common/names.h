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

}  // namespace vigil

// DATE and TIMESTAMP values from text: the one reading of the text of the two
// temporal column types (schema.h), shared by ingest (CSV cells, JSON strings,
// type inference) and the SQL parser and executor (DATE '...' and TIMESTAMP
// '...' literals). Values are the stored ones: days since 1970-01-01 for DATE,
// microseconds since 1970-01-01T00:00:00Z for TIMESTAMP; ValueToString
// (column.h) writes them back. Dates are proleptic Gregorian, years 1 to 9999.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "vigil/common/status.h"

namespace vigil {

// Exactly YYYY-MM-DD, nothing around it.
bool ParseDateText(std::string_view s, int64_t* days);
// Exactly YYYY-MM-DD[T ]HH:MM[:SS[.fraction]][Z|+HH:MM|+HHMM] (the T and Z in either
// case, fraction digits past microseconds dropped), nothing around it. Without
// `require_time` a bare YYYY-MM-DD is accepted as midnight UTC.
bool ParseTimestampText(std::string_view s, int64_t* micros, bool require_time);

// A DATE cell or literal: ParseDateText with spaces and tabs around it ignored.
// InvalidArgument "'2023-02-30' is not a DATE (expected YYYY-MM-DD)" otherwise (the
// text quoted as an Excerpt, common/excerpt.h), without a location (callers add it).
Result<int64_t> ParseDateValue(std::string_view text);
// A TIMESTAMP cell or literal: ParseTimestampText (a bare date allowed) or an integer
// number of microseconds, with spaces and tabs around it ignored. InvalidArgument
// "'x' is not a TIMESTAMP (expected YYYY-MM-DD[THH:MM[:SS[.ffffff]]][Z|+HH:MM])" otherwise.
Result<int64_t> ParseTimestampValue(std::string_view text);

}  // namespace vigil

// The JSON of the query route's answer, written directly from the result set:
// the same bytes as the nlohmann document {"columns": [...], "rows": [{column:
// value}]} dumped compactly with invalid UTF-8 replaced, without building the
// document first (an answer can be tens of kilobytes of hex BLOBs). Thread
// safety: pure functions.
#pragma once

#include <string>

#include "vigil/sql/result.h"

namespace vigil::server {

// {"columns":[...],"rows":[{...}]}: keys of each row object in byte order, a repeated column
// name keeping its last value; NULL null, BIGINT a number, DOUBLE as nlohmann prints it (NaN
// and infinities null), text escaped, a BLOB as its hex text.
std::string RowsDocument(const sql::ResultSet& r);

}  // namespace vigil::server

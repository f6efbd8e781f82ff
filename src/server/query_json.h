// The text the query route writes on every request: the statement's query
// vector elements, and the JSON of its answer, written directly from the result
// set: the same bytes as the nlohmann document {"columns": [...], "rows":
// [{column: value}]} dumped compactly with invalid UTF-8 replaced, without
// building the document first (an answer can be tens of kilobytes of hex
// BLOBs). Thread safety: pure functions.
#pragma once

#include <string>

#include "vigil/sql/result.h"

namespace vigil::server {

// {"columns":[...],"rows":[{...}]}: keys of each row object in byte order, a repeated column
// name keeping its last value; NULL null, BIGINT a number, DOUBLE as nlohmann prints it (NaN
// and infinities null), text escaped, a BLOB as its hex text.
std::string RowsDocument(const sql::ResultSet& r);

// Appends one query vector element to a statement: the shortest text that reads back as the same
// FLOAT32 when the value is within FLOAT32's range, else the double's own digits (which the
// engine refuses with its own message).
void AppendVectorElement(std::string& out, double x);

}  // namespace vigil::server

// Output formats of the shell's scripting contract: RFC 4180 CSV (a header row,
// LF line ends, quotes only where needed), one JSON array of row objects per
// statement, and the cell text of the aligned table. NULL is an empty CSV
// field, JSON null and "NULL" in a table; a BLOB is lower-case hex ("x'..'" in
// a table). Pure functions; thread-safe.
#pragma once

#include <string>

#include "vigil/sql/result.h"

namespace vigil::sql {

// A value as table text: integers and reals as SQLite prints them (reals in the
// shortest form that reads back exactly), text as is.
std::string CellText(const Value& v);
// Appends a BLOB's table text, x'<lower-case hex>' (what CellText gives for it), to `out`.
void AppendBlobText(std::string& out, const std::string& bytes);
// The whole result as CSV, header first; a result without columns gives "".
std::string FormatCsv(const ResultSet& r);
// The whole result as one JSON array of objects keyed by column name, with "\n".
std::string FormatJson(const ResultSet& r);

}  // namespace vigil::sql

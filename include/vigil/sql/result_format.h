// Output formats of the shell's scripting contract: RFC 4180 CSV (a header row,
// LF line ends, quotes only where needed), one JSON array of row objects per
// statement, and the cell text of the aligned table. NULL is an empty CSV
// field, JSON null and "NULL" in a table; a BLOB is lower-case hex ("x'..'" in
// a table); a vector is "[0.5,0.25,1]" in a table and CSV (the text a vector
// literal is written in) and a JSON array of numbers. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "vigil/sql/result.h"

namespace vigil::sql {

// A value as table text: integers and reals as SQLite prints them (reals in the
// shortest form that reads back exactly), text as is.
std::string CellText(const Value& v);
// Appends a BLOB's table text, x'<lower-case hex>' (what CellText gives for it), to `out`.
void AppendBlobText(std::string& out, const std::string& bytes);
// Appends `s` as a JSON string (invalid UTF-8 replaced by U+FFFD), as nlohmann's dump writes it.
void AppendJsonString(std::string& out, std::string_view s);
// Appends a value as JSON: NULL null, an integer, a real as nlohmann's dump writes it
// (null when not finite), text a string, a BLOB its table text x'<hex>' as a string, a
// vector as AppendVectorJson writes it.
void AppendJsonValue(std::string& out, const Value& v);
// Appends a vector as a JSON array: each element in its shortest form that reads back
// as the same FLOAT32 ("0.5", "3", "1e-07"; what CellText shows); null for an element
// that is not finite.
void AppendVectorJson(std::string& out, const FloatVector& v);
// The whole result as CSV, header first; a result without columns gives "".
std::string FormatCsv(const ResultSet& r);
// The whole result as one JSON array of objects keyed by column name, with "\n".
std::string FormatJson(const ResultSet& r);

}  // namespace vigil::sql

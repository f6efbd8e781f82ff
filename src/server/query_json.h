// The JSON of a statement's result, written directly from the result set: the
// query route's answer and a result of POST /v1/sql. The bytes are those of the
// nlohmann document of the same values dumped compactly with invalid UTF-8
// replaced, except vector elements, written in their shortest form (nlohmann's
// double printing is not always shortest); no document is built first (an answer
// can be tens of kilobytes of vectors). Thread safety: pure functions.
#pragma once

#include <string>

#include "vigil/sql/result.h"

namespace vigil::server {

// {"columns":[...],"rows":[{...}]}: keys of each row object in byte order, a repeated column
// name keeping its last value; cells as sql::AppendJsonValue writes them.
std::string RowsDocument(const sql::ResultSet& r);
// {"admitted_jobs":[...],"columns":[...],"message":"...","notices":[...],"rows":[[...]],
// "warnings":[...]}: a statement's whole result, rows as arrays in column order.
std::string ResultDocument(const sql::ResultSet& r);

}  // namespace vigil::server

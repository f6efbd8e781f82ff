// The result of one executed SQL statement: column names, rows of SQLite-typed
// values, notices (for stderr), warnings (FORCE and the like) and the ids of the
// index jobs the statement admitted. The shell prints it as an aligned table,
// RFC 4180 CSV or JSON. Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vigil::sql {

// The typed sub-code leading a ResourceExhausted whose result would pass a statement bound
// (max_rows): the request is the caller's to narrow; retrying it cannot help.
inline constexpr std::string_view kResultTooLarge = "RESULT_TOO_LARGE";

struct Blob {
  std::string bytes;
  bool operator==(const Blob&) const = default;
};

// A cell of a VECTOR column read as itself (a column reference, not an expression):
// its elements as FLOAT32 (a FLOAT16 vector is widened exactly). Bound as a parameter
// or read by SQLite, it is the BLOB of its little-endian FLOAT32 elements.
struct FloatVector {
  std::vector<float> values;
  bool operator==(const FloatVector&) const = default;
};

// NULL, INTEGER, REAL, TEXT or BLOB, as SQLite types them, or a VECTOR column's cell.
using Value = std::variant<std::monostate, int64_t, double, std::string, Blob, FloatVector>;

struct ResultSet {
  std::vector<std::string> columns;      // empty for a statement without rows
  std::vector<std::vector<Value>> rows;  // each row has columns.size() values
  std::string message;                   // e.g. "CREATE INDEX: job 7 admitted", "3 rows deleted"
  std::vector<std::string> notices;      // progress and informational lines (stderr)
  std::vector<std::string> warnings;     // e.g. FORCE warnings (stderr, and SHOW INDEX JOB)
  std::vector<int64_t> admitted_jobs;    // jobs this statement admitted, for -c waits
  // A cell holds a bearer token, shown once (CREATE USER, ALTER USER ... ROTATE TOKEN): the
  // shell prints cells whole (a cut token is lost), and the server keeps the answer for an
  // idempotent replay only sealed, never in clear.
  bool holds_secret = false;
};

}  // namespace vigil::sql

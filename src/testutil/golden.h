// Golden test files in a sqllogictest-like text format, shared by the parse,
// select and exec goldens (golden_runner.h runs them). A file is a sequence of
// records separated by blank lines:
//
//   # comment lines (kept with the record that follows)
//   parse                      <- header: a directive, then optional arguments
//   CREATE TABLE t (a INT)     <- input: any number of non-blank lines
//   ----                       <- separator (absent when nothing is expected)
//   CREATE TABLE t (a INT)     <- expected output: lines up to a blank line
//
// An expected error is written `error: <CODE> at <line>:<col>: <message>`.
// Input and expected output cannot hold blank lines; '#' lines count as
// comments only before a header. New directives (e.g. `statement ok`,
// `query`) reuse the same record shape.
// Thread-safe: ReadGoldenFile reads a file, the rest are pure functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "vigil/common/status.h"

namespace vigil::testing {

struct GoldenRecord {
  std::string comment;            // '#' lines before the header, newline-terminated
  std::string directive;          // first word of the header ("parse")
  std::vector<std::string> args;  // further words of the header
  std::string input;              // lines joined with '\n', no final newline
  bool has_expected = false;      // a "----" line was present
  std::string expected;           // lines joined with '\n', no final newline
  int line = 0;                   // 1-based line of the header
};

// Parses golden text; InvalidArgument names the line of a malformed record.
Result<std::vector<GoldenRecord>> ParseGolden(const std::string& text);
// ParseGolden of a file's content; NotFound when `path` is not a regular file.
Result<std::vector<GoldenRecord>> ReadGoldenFile(const std::filesystem::path& path);
// Text that ParseGolden reads back as `records` (used to rewrite goldens).
std::string FormatGolden(const std::vector<GoldenRecord>& records);
// "error: CODE at L:C: message" for a parse error.
std::string FormatGoldenError(const std::string& code, uint32_t line, uint32_t column, const std::string& message);

}  // namespace vigil::testing

// The SQL front end: a tokenizer and a recursive-descent parser for Vigil's
// statements (ast.h). Keywords are case-insensitive; statements in a script
// are separated by ';'; comments are `-- ...` and `/* ... */`.
//
// Every error is InvalidArgument with the message
// "line L, column C: <detail>", where <detail> is usually
// "expected X, found Y"; ParseError carries the same position as values.
// Bounds (an error naming the bound, never truncation): a statement is at
// most kMaxStatementBytes, an identifier kMaxIdentifierBytes, a string
// literal kMaxStringLiteralBytes, parentheses and expressions nest at most
// kMaxNestingDepth deep, PROPERTIES hold at most kMaxProperties entries.
//
// Thread safety: free functions are thread-safe; a ScriptParser is used by
// one thread at a time and must not outlive its input.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/sql/ast.h"

namespace vigil::sql {

constexpr size_t kMaxStatementBytes = 1 << 20;
constexpr size_t kMaxScriptBytes = 64 << 20;
constexpr size_t kMaxIdentifierBytes = 256;
constexpr size_t kMaxStringLiteralBytes = 1 << 20;
constexpr int kMaxNestingDepth = 64;
constexpr size_t kMaxProperties = 64;
constexpr size_t kMaxColumnsPerTable = 1024;  // vigil::bounds::kMaxFieldsPerSchema
constexpr size_t kMaxIndexColumns = 64;       // vigil::bounds::kMaxColumnsPerEntry

// Where and why parsing failed. `message` is the detail without the
// "line L, column C: " prefix that the Status message carries.
struct ParseError {
  StatusCode code = StatusCode::kInvalidArgument;
  SourcePos pos;
  std::string message;

  Status ToStatus() const;
};

// Exactly one statement (a trailing ';' and comments are allowed).
Result<Statement> ParseStatement(std::string_view sql, ParseError* error = nullptr);
// Zero or more statements separated by ';'; empty statements are skipped.
Result<std::vector<Statement>> ParseScript(std::string_view sql, ParseError* error = nullptr);
// All tokens of `sql`, comments and whitespace dropped, without the final kEnd.
Result<std::vector<Token>> Tokenize(std::string_view sql, ParseError* error = nullptr);

// Whether `sql` holds at least one token and its last token is a ';' outside
// strings and comments, or it cannot be tokenized for a reason more input
// would not fix. An interactive shell reads lines until this holds.
bool IsCompleteInput(std::string_view sql);

// Statements of a script one at a time, so that a caller can run each before
// a later one fails to parse.
class ScriptParser {
 public:
  explicit ScriptParser(std::string_view sql);
  // The next statement; nullopt after the last. After an error, every later
  // call returns the same error.
  Result<std::optional<Statement>> Next();
  // Set once Next() has failed.
  const std::optional<ParseError>& error() const { return error_; }

 private:
  std::string_view sql_;
  size_t offset_ = 0;
  uint32_t line_ = 1;
  uint32_t column_ = 1;
  std::optional<ParseError> error_;
};

}  // namespace vigil::sql

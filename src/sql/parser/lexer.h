// The SQL tokenizer behind parser.h: turns text into Tokens with exact
// positions, skipping whitespace and comments, and enforcing the identifier
// and string-literal bounds. Not thread-safe; one Lexer per scan.
#pragma once

#include <string>
#include <string_view>

#include "vigil/sql/ast.h"
#include "vigil/sql/parser.h"

namespace vigil::sql::internal {

class Lexer {
 public:
  // Scans `input` from `start` (whose offset indexes `input`).
  explicit Lexer(std::string_view input, SourcePos start = {}) : in_(input), pos_(start) {}

  // The next token; kEnd (empty text) at the end of the input. On a lexical
  // error returns false and fills *error.
  bool Next(Token* token, ParseError* error);
  // Where scanning stands: just after the last token returned.
  SourcePos pos() const { return pos_; }
  // After an error: whether more input could fix it (an unterminated string,
  // quoted identifier or comment).
  bool incomplete() const { return incomplete_; }

 private:
  void Advance(size_t n);
  bool SkipSpaceAndComments(ParseError* error);
  bool Fail(SourcePos at, std::string message, ParseError* error);
  bool LexQuoted(char quote, TokenKind kind, size_t max_bytes, std::string_view what, Token* token, ParseError* error);
  bool LexNumber(Token* token, ParseError* error);
  bool LexOperator(Token* token, ParseError* error);
  // Bytes of the valid UTF-8 sequence at `i`, 0 when invalid.
  size_t Utf8Length(size_t i) const;

  std::string_view in_;
  SourcePos pos_;
  bool incomplete_ = false;
};

// "end of input", "';'", "PROPERTIES", "string 'ab'", "number 12", ... for "found Y".
std::string DescribeToken(const Token& token);
// ASCII case-insensitive equality.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
std::string ToUpperAscii(std::string_view s);
bool IsIdentStart(char c);
bool IsIdentChar(char c);

}  // namespace vigil::sql::internal

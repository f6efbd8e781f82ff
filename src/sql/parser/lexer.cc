#include "sql/parser/lexer.h"

#include <cstdio>

namespace vigil::sql::internal {

bool IsIdentStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// At most `max` bytes of `s`, cut at a UTF-8 boundary, with "..." when cut.
std::string Clip(std::string_view s, size_t max = 32) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "...";
}

std::string CharName(unsigned char c) {
  if (c >= 0x21 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02X", c);
  return std::string("byte ") + buf;
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'a' && x <= 'z') x = static_cast<char>(x - 32);
    if (y >= 'a' && y <= 'z') y = static_cast<char>(y - 32);
    if (x != y) return false;
  }
  return true;
}

std::string ToUpperAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

std::string DescribeToken(const Token& t) {
  switch (t.kind) {
    case TokenKind::kEnd:
      return t.text == ";" ? "';'" : "end of input";
    case TokenKind::kWord:
      return Clip(t.text);
    case TokenKind::kQuotedIdentifier:
      return "identifier " + Clip(t.text);
    case TokenKind::kString:
      return "string " + Clip(t.text);
    case TokenKind::kBlob:
      return "blob " + Clip(t.text);
    case TokenKind::kInteger:
    case TokenKind::kDecimal:
    case TokenKind::kFloat:
      return "number " + Clip(t.text);
    case TokenKind::kParameter:
      return "parameter " + Clip(t.text);
    case TokenKind::kOperator:
      return "'" + t.text + "'";
  }
  return Clip(t.text);
}

void Lexer::Advance(size_t n) {
  for (size_t i = 0; i < n && pos_.offset < in_.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(in_[pos_.offset++]);
    if (c == '\n') {
      ++pos_.line;
      pos_.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++pos_.column;
    }
  }
}

bool Lexer::Fail(SourcePos at, std::string message, ParseError* error) {
  error->code = StatusCode::kInvalidArgument;
  error->pos = at;
  error->message = std::move(message);
  return false;
}

size_t Lexer::Utf8Length(size_t i) const {
  auto byte = [&](size_t k) -> unsigned { return k < in_.size() ? static_cast<unsigned char>(in_[k]) : 0u; };
  unsigned c = byte(i);
  auto cont = [&](size_t k) {
    unsigned b = byte(k);
    return b >= 0x80 && b <= 0xBF;
  };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned b = byte(i + 1);
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return (b >= lo && b <= hi && cont(i + 2)) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned b = byte(i + 1);
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return (b >= lo && b <= hi && cont(i + 2) && cont(i + 3)) ? 4 : 0;
  }
  return 0;
}

bool Lexer::SkipSpaceAndComments(ParseError* error) {
  while (pos_.offset < in_.size()) {
    char c = in_[pos_.offset];
    if (IsSpace(c)) {
      Advance(1);
    } else if (c == '-' && pos_.offset + 1 < in_.size() && in_[pos_.offset + 1] == '-') {
      while (pos_.offset < in_.size() && in_[pos_.offset] != '\n') {
        size_t n = Utf8Length(pos_.offset);
        if (n == 0) return Fail(pos_, "invalid UTF-8 in comment", error);
        Advance(n);
      }
    } else if (c == '/' && pos_.offset + 1 < in_.size() && in_[pos_.offset + 1] == '*') {
      SourcePos start = pos_;
      Advance(2);
      for (;;) {
        if (pos_.offset >= in_.size()) {
          incomplete_ = true;
          return Fail(start, "unterminated comment", error);
        }
        if (in_[pos_.offset] == '*' && pos_.offset + 1 < in_.size() && in_[pos_.offset + 1] == '/') {
          Advance(2);
          break;
        }
        size_t n = Utf8Length(pos_.offset);
        if (n == 0) return Fail(pos_, "invalid UTF-8 in comment", error);
        Advance(n);
      }
    } else {
      break;
    }
  }
  return true;
}

bool Lexer::LexQuoted(char quote, TokenKind kind, size_t max_bytes, std::string_view what, Token* token,
                      ParseError* error) {
  SourcePos start = pos_;
  Advance(1);
  std::string value;
  for (;;) {
    if (pos_.offset >= in_.size()) {
      incomplete_ = true;
      return Fail(start, "unterminated " + std::string(what), error);
    }
    char c = in_[pos_.offset];
    if (c == quote) {
      if (pos_.offset + 1 < in_.size() && in_[pos_.offset + 1] == quote) {
        value += quote;
        Advance(2);
      } else {
        Advance(1);
        break;
      }
    } else if (static_cast<unsigned char>(c) < 0x80 && c != '\n') {
      // A run of ASCII without newlines (one column a byte): copied at once.
      size_t end = pos_.offset + 1;
      while (end < in_.size() && static_cast<unsigned char>(in_[end]) < 0x80 && in_[end] != '\n' && in_[end] != quote) {
        ++end;
      }
      value.append(in_.substr(pos_.offset, end - pos_.offset));
      pos_.column += static_cast<uint32_t>(end - pos_.offset);
      pos_.offset = end;
    } else {
      size_t n = Utf8Length(pos_.offset);
      if (n == 0) return Fail(pos_, "invalid UTF-8 in " + std::string(what), error);
      value.append(in_.substr(pos_.offset, n));
      Advance(n);
    }
    if (value.size() > max_bytes) {
      return Fail(start, std::string(what) + " exceeds " + std::to_string(max_bytes) + " bytes", error);
    }
  }
  token->kind = kind;
  token->text = std::string(in_.substr(start.offset, pos_.offset - start.offset));
  token->value = std::move(value);
  token->pos = start;
  return true;
}

bool Lexer::LexNumber(Token* token, ParseError* error) {
  SourcePos start = pos_;
  size_t i = pos_.offset;
  TokenKind kind = TokenKind::kInteger;
  auto at = [&](size_t k) { return k < in_.size() ? in_[k] : '\0'; };
  if (at(i) == '0' && (at(i + 1) == 'x' || at(i + 1) == 'X') && IsHexDigit(at(i + 2))) {
    i += 2;
    while (IsHexDigit(at(i))) ++i;
  } else {
    while (IsDigit(at(i))) ++i;
    if (at(i) == '.') {
      kind = TokenKind::kDecimal;
      ++i;
      while (IsDigit(at(i))) ++i;
    }
    if (at(i) == 'e' || at(i) == 'E') {
      kind = TokenKind::kFloat;
      ++i;
      if (at(i) == '+' || at(i) == '-') ++i;
      if (!IsDigit(at(i))) {
        return Fail(start, "invalid number '" + Clip(in_.substr(start.offset, i - start.offset)) + "'", error);
      }
      while (IsDigit(at(i))) ++i;
    }
  }
  if (IsIdentChar(at(i))) {
    size_t j = i;
    while (IsIdentChar(at(j))) ++j;
    return Fail(start, "invalid number '" + Clip(in_.substr(start.offset, j - start.offset)) + "'", error);
  }
  token->kind = kind;
  token->text = std::string(in_.substr(start.offset, i - start.offset));
  token->value = token->text;
  token->pos = start;
  Advance(i - start.offset);
  return true;
}

bool Lexer::LexOperator(Token* token, ParseError* error) {
  static constexpr std::string_view kOps[] = {"->>", "->", "||", "==", "!=", "<>", "<=", ">=", "<<",
                                              ">>",  "<",  ">",  "=",  "+",  "-",  "*",  "/",  "%",
                                              "&",   "|",  "~",  "(",  ")",  ",",  ".",  ";"};
  std::string_view rest = in_.substr(pos_.offset);
  for (std::string_view op : kOps) {
    if (rest.substr(0, op.size()) == op) {
      token->kind = TokenKind::kOperator;
      token->text = std::string(op);
      token->value = token->text;
      token->pos = pos_;
      Advance(op.size());
      return true;
    }
  }
  unsigned char c = static_cast<unsigned char>(in_[pos_.offset]);
  if (c >= 0x80) {
    size_t n = Utf8Length(pos_.offset);
    if (n == 0) return Fail(pos_, "invalid UTF-8", error);
    return Fail(pos_, "unexpected character '" + std::string(in_.substr(pos_.offset, n)) + "'", error);
  }
  if (c == '[') {
    return Fail(pos_, "unexpected character '[': a vector literal is written as a string, e.g. '[0.5, 0.25]'", error);
  }
  return Fail(pos_, "unexpected character " + CharName(c), error);
}

bool Lexer::Next(Token* token, ParseError* error) {
  if (!SkipSpaceAndComments(error)) return false;
  *token = Token{};
  token->pos = pos_;
  if (pos_.offset >= in_.size()) return true;
  const size_t i = pos_.offset;
  const char c = in_[i];
  const char next = i + 1 < in_.size() ? in_[i + 1] : '\0';
  if ((c == 'x' || c == 'X') && next == '\'') {
    SourcePos start = pos_;
    Advance(1);
    if (!LexQuoted('\'', TokenKind::kBlob, kMaxStringLiteralBytes * 2, "blob literal", token, error)) return false;
    for (char h : token->value) {
      if (!IsHexDigit(h)) return Fail(start, "blob literal holds a non-hexadecimal character", error);
    }
    if (token->value.size() % 2 != 0) return Fail(start, "blob literal has an odd number of digits", error);
    token->text = std::string(in_.substr(start.offset, pos_.offset - start.offset));
    token->pos = start;
    return true;
  }
  if (IsIdentStart(c)) {
    size_t j = i;
    while (j < in_.size() && IsIdentChar(in_[j])) ++j;
    if (j - i > kMaxIdentifierBytes) {
      return Fail(pos_, "identifier exceeds " + std::to_string(kMaxIdentifierBytes) + " bytes", error);
    }
    token->kind = TokenKind::kWord;
    token->text = std::string(in_.substr(i, j - i));
    token->value = token->text;
    Advance(j - i);
    return true;
  }
  if (IsDigit(c) || (c == '.' && IsDigit(next))) return LexNumber(token, error);
  if (c == '\'') return LexQuoted('\'', TokenKind::kString, kMaxStringLiteralBytes, "string literal", token, error);
  if (c == '"') {
    // Also a string in PROPERTIES and MySQL-style WHERE; the parser applies the identifier bound.
    return LexQuoted('"', TokenKind::kQuotedIdentifier, kMaxStringLiteralBytes, "quoted identifier", token, error);
  }
  if (c == '`') {
    return LexQuoted('`', TokenKind::kQuotedIdentifier, kMaxIdentifierBytes, "quoted identifier", token, error);
  }
  if (c == '?' || ((c == ':' || c == '@' || c == '$') && IsIdentChar(next))) {
    size_t j = i + 1;
    if (c == '?') {
      while (j < in_.size() && IsDigit(in_[j])) ++j;
    } else {
      while (j < in_.size() && IsIdentChar(in_[j])) ++j;
    }
    if (j - i > kMaxIdentifierBytes) {
      return Fail(pos_, "parameter name exceeds " + std::to_string(kMaxIdentifierBytes) + " bytes", error);
    }
    token->kind = TokenKind::kParameter;
    token->text = std::string(in_.substr(i, j - i));
    token->value = token->text;
    Advance(j - i);
    return true;
  }
  return LexOperator(token, error);
}

}  // namespace vigil::sql::internal

// Parser methods: names, literals and the small clauses every statement shares.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "sql/parser/parser_internal.h"
#include "vigil/storage/temporal.h"

namespace vigil::sql::internal {

Status Parser::ParseIdentifier(std::string_view what, std::string* out) {
  const Token& t = Peek();
  if (t.kind == TokenKind::kWord && !IsReservedWord(t.text)) {
    *out = t.text;
    Take();
    return Status::OK();
  }
  if (t.kind == TokenKind::kQuotedIdentifier) {
    if (t.value.empty()) return Fail(t.pos, "empty quoted identifier");
    if (t.value.size() > kMaxIdentifierBytes) {
      return Fail(t.pos, "identifier exceeds " + std::to_string(kMaxIdentifierBytes) + " bytes");
    }
    *out = t.value;
    Take();
    return Status::OK();
  }
  return Expected(what);
}

Status Parser::ParseTableName(TableRef* out) {
  std::vector<std::string> parts(1);
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("table name", &parts[0]));
  while (parts.size() < 3 && PeekOp(".")) {
    Take();
    parts.emplace_back();
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("name after '.'", &parts.back()));
  }
  if (PeekOp(".")) return Fail(Peek().pos, "a table name has at most three parts: catalog.database.table");
  *out = TableRef{};
  out->table = parts.back();
  if (parts.size() >= 2) out->database = parts[parts.size() - 2];
  if (parts.size() == 3) out->catalog = parts[0];
  return Status::OK();
}

Status Parser::ParseDatabaseName(DatabaseName* out) {
  std::vector<std::string> parts(1);
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("database name", &parts[0]));
  if (PeekOp(".")) {
    Take();
    parts.emplace_back();
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("name after '.'", &parts.back()));
  }
  if (PeekOp(".")) return Fail(Peek().pos, "a database name has at most two parts: catalog.database");
  *out = DatabaseName{};
  out->database = parts.back();
  if (parts.size() == 2) out->catalog = parts[0];
  return Status::OK();
}

Status Parser::ParseColumnList(size_t max, std::string_view what, std::vector<std::string>* out) {
  VIGIL_RETURN_IF_ERROR(ExpectOp("("));
  do {
    if (out->size() == max) {
      return Fail(Peek().pos, std::string(what) + " exceed " + std::to_string(max) + " columns");
    }
    out->emplace_back();
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("column name", &out->back()));
  } while (AcceptOp(","));
  return ExpectOp(")");
}

Status Parser::ParseIfNotExists(bool* out, SourcePos* at) {
  if (!PeekWord("IF")) return Status::OK();
  if (at) *at = Peek().pos;
  Take();
  VIGIL_RETURN_IF_ERROR(ExpectWord("NOT"));
  VIGIL_RETURN_IF_ERROR(ExpectWord("EXISTS"));
  *out = true;
  return Status::OK();
}

Status Parser::ParseIfExists(bool* out) {
  if (!AcceptWord("IF")) return Status::OK();
  VIGIL_RETURN_IF_ERROR(ExpectWord("EXISTS"));
  *out = true;
  return Status::OK();
}

Status Parser::ParsePositiveInt(std::string_view what, int64_t* out) {
  const Token& t = Peek();
  if (t.kind != TokenKind::kInteger || (t.text.size() > 1 && (t.text[1] == 'x' || t.text[1] == 'X'))) {
    return Expected(what);
  }
  int64_t v = 0;
  for (char c : t.text) {
    if (v > (INT64_MAX - (c - '0')) / 10) return Fail(t.pos, std::string(what) + " " + t.text + " is out of range");
    v = v * 10 + (c - '0');
  }
  if (v <= 0) return Fail(t.pos, std::string(what) + " must be positive");
  *out = v;
  Take();
  return Status::OK();
}

Status Parser::ParseStringToken(std::string_view what, std::string* out) {
  if (Peek().kind != TokenKind::kString) return Expected(what);
  *out = Take().value;
  return Status::OK();
}

Status Parser::TryParseLiteral(Literal* out, bool* matched) {
  *matched = false;
  const Token& t = Peek();
  if (t.kind == TokenKind::kWord) {
    if (EqualsIgnoreCase(t.text, "NULL")) {
      *out = Literal::Null();
    } else if (EqualsIgnoreCase(t.text, "TRUE") || EqualsIgnoreCase(t.text, "FALSE")) {
      *out = Literal::Bool(EqualsIgnoreCase(t.text, "TRUE"));
    } else if ((EqualsIgnoreCase(t.text, "DATE") || EqualsIgnoreCase(t.text, "TIMESTAMP")) &&
               Peek(1).kind == TokenKind::kString) {
      bool is_date = EqualsIgnoreCase(t.text, "DATE");
      const Token& s = Peek(1);
      Result<int64_t> v = is_date ? ParseDateValue(s.value) : ParseTimestampValue(s.value);
      if (!v.ok()) {
        return Fail(s.pos,
                    std::string("invalid ") + (is_date ? "DATE" : "TIMESTAMP") + " literal: " + v.status().message());
      }
      *out = Literal{is_date ? Literal::Kind::kDate : Literal::Kind::kTimestamp, s.value, false};
      Take();
    } else {
      return Status::OK();
    }
    Take();
    *matched = true;
    return Status::OK();
  }
  if (t.kind == TokenKind::kString) {
    *out = Literal::String(t.value);
    Take();
    *matched = true;
    return Status::OK();
  }
  bool negative = PeekOp("-") && IsNumber(Peek(1));
  if (!negative && !IsNumber(t)) return Status::OK();
  if (negative) Take();
  const Token& n = Peek();
  if (n.text.size() > 1 && (n.text[1] == 'x' || n.text[1] == 'X')) {
    return Fail(n.pos, "hexadecimal numbers are not supported here");
  }
  Literal::Kind kind = n.kind == TokenKind::kInteger   ? Literal::Kind::kInteger
                       : n.kind == TokenKind::kDecimal ? Literal::Kind::kDecimal
                                                       : Literal::Kind::kFloat;
  *out = Literal::Number(kind, (negative ? "-" : "") + n.text);
  Take();
  *matched = true;
  return Status::OK();
}

bool Parser::IsNumber(const Token& t) {
  return t.kind == TokenKind::kInteger || t.kind == TokenKind::kDecimal || t.kind == TokenKind::kFloat;
}

Status Parser::ParseLiteral(Literal* out) {
  bool matched = false;
  VIGIL_RETURN_IF_ERROR(TryParseLiteral(out, &matched));
  return matched ? Status::OK() : Expected("a literal");
}

}  // namespace vigil::sql::internal

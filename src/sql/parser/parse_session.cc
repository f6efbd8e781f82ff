// Parser methods: sET, PREPARE, EXECUTE and DEALLOCATE: statements about the session.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "sql/parser/parser_internal.h"

namespace vigil::sql::internal {

Status Parser::ParseSet(StatementNode* out) {
  SetStatement s;
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("setting name", &s.name));
  if (!AcceptOp("=") && !AcceptWord("TO")) return Expected("'=' or TO");
  if (!AcceptWord("DEFAULT")) {
    bool matched = false;
    s.value.emplace();
    VIGIL_RETURN_IF_ERROR(TryParseLiteral(&*s.value, &matched));
    if (!matched) return Expected("a literal or DEFAULT");
  }
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParsePrepare(StatementNode* out) {
  PrepareStatement s;
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("prepared statement name", &s.name));
  if (PeekOp("(")) return Fail(Peek().pos, "parameter types are not declared here: a parameter takes the value bound");
  VIGIL_RETURN_IF_ERROR(ExpectWord("AS"));
  if (!PeekWord("SELECT") && !PeekWord("WITH")) return Expected("SELECT");
  s.select = TakeSelect();
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseExecute(StatementNode* out) {
  ExecuteStatement s;
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("prepared statement name", &s.name));
  if (AcceptOp("(")) {
    do {
      VIGIL_RETURN_IF_ERROR(ParseBoundValue(&s.values));
    } while (AcceptOp(","));
    VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
  }
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseBoundValue(std::vector<BoundValue>* out) {
  const Token& t = Peek();
  if (t.kind == TokenKind::kBlob) {
    BlobLiteral blob;
    blob.bytes.reserve(t.value.size() / 2);
    for (size_t i = 0; i + 1 < t.value.size(); i += 2) {
      blob.bytes += static_cast<char>(HexDigitValue(t.value[i]) * 16 + HexDigitValue(t.value[i + 1]));
    }
    Take();
    out->push_back(std::move(blob));
    return Status::OK();
  }
  Literal lit;
  VIGIL_RETURN_IF_ERROR(ParseLiteral(&lit));
  out->push_back(std::move(lit));
  return Status::OK();
}

int Parser::HexDigitValue(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

Status Parser::ParseDeallocate(StatementNode* out) {
  DeallocateStatement s;
  if (PeekWord("PREPARE") && Peek(1).kind != TokenKind::kEnd) Take();  // `DEALLOCATE prepare` names one
  if (!AcceptWord("ALL")) {
    s.name.emplace();
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("prepared statement name or ALL", &*s.name));
  }
  *out = std::move(s);
  return Status::OK();
}

}  // namespace vigil::sql::internal

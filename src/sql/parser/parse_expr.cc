// Parser methods: expressions: precedence climbing, with a bound on nesting depth.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "sql/parser/parser_internal.h"

namespace vigil::sql::internal {

Status Parser::CheckDepth(SourcePos pos, int depth) {
  if (depth > kMaxNestingDepth) {
    return Fail(pos, "expression nesting depth exceeds " + std::to_string(kMaxNestingDepth));
  }
  return Status::OK();
}

Status Parser::ParseExpr(Expr* out) {
  int height = 0;
  return ParseOr(out, &height);
}

Status Parser::ParseChain(std::string_view kw, BinaryOp op, Expr* out, int* height) {
  auto operand = [&](Expr* e, int* h) { return op == BinaryOp::kOr ? ParseAnd(e, h) : ParseNot(e, h); };
  Expr first;
  int h = 0;
  VIGIL_RETURN_IF_ERROR(operand(&first, &h));
  if (!PeekWord(kw)) {
    *out = std::move(first);
    *height = h;
    return Status::OK();
  }
  SourcePos pos = first.pos;
  std::vector<Expr> args;
  args.push_back(std::move(first));
  while (AcceptWord(kw)) {
    Expr next;
    int hn = 0;
    VIGIL_RETURN_IF_ERROR(operand(&next, &hn));
    h = std::max(h, hn);
    args.push_back(std::move(next));
  }
  *height = h + 1;
  VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
  *out = Expr::Binary(op, std::move(args), pos);
  return Status::OK();
}

Status Parser::ParseNot(Expr* out, int* height) {
  if (!PeekWord("NOT")) return ParseComparison(out, height);
  SourcePos pos = Take().pos;
  DepthGuard g(&depth_);
  VIGIL_RETURN_IF_ERROR(CheckDepth(pos, depth_));
  Expr operand;
  VIGIL_RETURN_IF_ERROR(ParseNot(&operand, height));
  ++*height;
  VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
  *out = Expr{};
  out->kind = ExprKind::kNot;
  out->pos = pos;
  out->args.push_back(std::move(operand));
  return Status::OK();
}

std::optional<BinaryOp> Parser::ComparisonOp(const Token& t) {
  if (t.kind != TokenKind::kOperator) return std::nullopt;
  if (t.text == "=" || t.text == "==") return BinaryOp::kEq;
  if (t.text == "!=" || t.text == "<>") return BinaryOp::kNe;
  if (t.text == "<") return BinaryOp::kLt;
  if (t.text == "<=") return BinaryOp::kLe;
  if (t.text == ">") return BinaryOp::kGt;
  if (t.text == ">=") return BinaryOp::kGe;
  return std::nullopt;
}

Status Parser::ParseComparison(Expr* out, int* height) {
  Expr lhs;
  int h = 0;
  VIGIL_RETURN_IF_ERROR(ParseAdditive(&lhs, &h));
  SourcePos pos = lhs.pos;
  if (auto op = ComparisonOp(Peek())) {
    Take();
    Expr rhs;
    int hr = 0;
    VIGIL_RETURN_IF_ERROR(ParseAdditive(&rhs, &hr));
    *height = std::max(h, hr) + 1;
    VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
    std::vector<Expr> args;
    args.push_back(std::move(lhs));
    args.push_back(std::move(rhs));
    *out = Expr::Binary(*op, std::move(args), pos);
    return Status::OK();
  }
  Expr node;
  node.pos = pos;
  if (AcceptWord("IS")) {
    node.kind = ExprKind::kIsNull;
    node.negated = AcceptWord("NOT");
    VIGIL_RETURN_IF_ERROR(ExpectWord("NULL"));
    node.args.push_back(std::move(lhs));
    *height = h + 1;
    VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
    *out = std::move(node);
    return Status::OK();
  }
  if (PeekWord("NOT")) {
    if (!PeekWord("IN", 1) && !PeekWord("BETWEEN", 1)) {
      Take();
      return Expected("IN or BETWEEN after NOT");
    }
    Take();
    node.negated = true;
  }
  if (PeekWord("IN")) {
    Take();
    node.kind = ExprKind::kIn;
    node.args.push_back(std::move(lhs));
    SourcePos open = Peek().pos;
    VIGIL_RETURN_IF_ERROR(ExpectOp("("));
    DepthGuard g(&depth_);
    VIGIL_RETURN_IF_ERROR(CheckDepth(open, depth_));
    do {
      Expr item;
      int hi = 0;
      VIGIL_RETURN_IF_ERROR(ParseOr(&item, &hi));
      h = std::max(h, hi);
      node.args.push_back(std::move(item));
    } while (AcceptOp(","));
    VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
  } else if (PeekWord("BETWEEN")) {
    Take();
    node.kind = ExprKind::kBetween;
    node.args.push_back(std::move(lhs));
    for (int k = 0; k < 2; ++k) {
      if (k == 1) VIGIL_RETURN_IF_ERROR(ExpectWord("AND"));
      Expr bound;
      int hb = 0;
      VIGIL_RETURN_IF_ERROR(ParseAdditive(&bound, &hb));
      h = std::max(h, hb);
      node.args.push_back(std::move(bound));
    }
  } else {
    *out = std::move(lhs);
    *height = h;
    return Status::OK();
  }
  *height = h + 1;
  VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
  *out = std::move(node);
  return Status::OK();
}

Status Parser::ParseAdditive(Expr* out, int* height) {
  VIGIL_RETURN_IF_ERROR(ParseMultiplicative(out, height));
  for (;;) {
    BinaryOp op;
    if (PeekOp("+"))
      op = BinaryOp::kAdd;
    else if (PeekOp("-"))
      op = BinaryOp::kSub;
    else
      return Status::OK();
    Take();
    Expr rhs;
    int hr = 0;
    VIGIL_RETURN_IF_ERROR(ParseMultiplicative(&rhs, &hr));
    VIGIL_RETURN_IF_ERROR(Combine(op, out, std::move(rhs), hr, height));
  }
}

Status Parser::ParseMultiplicative(Expr* out, int* height) {
  VIGIL_RETURN_IF_ERROR(ParseUnary(out, height));
  for (;;) {
    BinaryOp op;
    if (PeekOp("*"))
      op = BinaryOp::kMul;
    else if (PeekOp("/"))
      op = BinaryOp::kDiv;
    else if (PeekOp("%"))
      op = BinaryOp::kMod;
    else
      return Status::OK();
    Take();
    Expr rhs;
    int hr = 0;
    VIGIL_RETURN_IF_ERROR(ParseUnary(&rhs, &hr));
    VIGIL_RETURN_IF_ERROR(Combine(op, out, std::move(rhs), hr, height));
  }
}

Status Parser::Combine(BinaryOp op, Expr* lhs, Expr rhs, int rhs_height, int* height) {
  SourcePos pos = lhs->pos;
  *height = std::max(*height, rhs_height) + 1;
  VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
  std::vector<Expr> args;
  args.push_back(std::move(*lhs));
  args.push_back(std::move(rhs));
  *lhs = Expr::Binary(op, std::move(args), pos);
  return Status::OK();
}

Status Parser::ParseUnary(Expr* out, int* height) {
  if (PeekOp("-") && !IsNumber(Peek(1))) {
    SourcePos pos = Take().pos;
    DepthGuard g(&depth_);
    VIGIL_RETURN_IF_ERROR(CheckDepth(pos, depth_));
    Expr operand;
    VIGIL_RETURN_IF_ERROR(ParseUnary(&operand, height));
    ++*height;
    VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
    *out = Expr{};
    out->kind = ExprKind::kNegate;
    out->pos = pos;
    out->args.push_back(std::move(operand));
    return Status::OK();
  }
  return ParsePrimary(out, height);
}

Status Parser::ParsePrimary(Expr* out, int* height) {
  const Token& t = Peek();
  SourcePos pos = t.pos;
  if (PeekOp("(")) {
    Take();
    DepthGuard g(&depth_);
    VIGIL_RETURN_IF_ERROR(CheckDepth(pos, depth_));
    VIGIL_RETURN_IF_ERROR(ParseOr(out, height));
    return ExpectOp(")");
  }
  Literal lit;
  bool matched = false;
  VIGIL_RETURN_IF_ERROR(TryParseLiteral(&lit, &matched));
  if (matched) {
    *out = Expr::Lit(std::move(lit), pos);
    *height = 1;
    return Status::OK();
  }
  if ((t.kind == TokenKind::kWord && !IsReservedWord(t.text)) || t.kind == TokenKind::kQuotedIdentifier) {
    bool dq = t.kind == TokenKind::kQuotedIdentifier && t.text[0] == '"';
    std::string name;
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("column name", &name));
    *out = Expr::Column(std::move(name), dq, pos);
    *height = 1;
    return Status::OK();
  }
  return Expected("an expression");
}

Status Parser::ParseWhere(std::optional<Expr>* out) {
  if (!AcceptWord("WHERE")) return Status::OK();
  out->emplace();
  return ParseExpr(&**out);
}

}  // namespace vigil::sql::internal

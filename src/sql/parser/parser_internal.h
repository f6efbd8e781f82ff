// The recursive-descent parser of one statement, declared once; its methods
// are split by statement family (parse_terms.cc, parse_expr.cc, parse_ddl.cc,
// parse_dml.cc, parse_session.cc, parse_admin.cc; dispatch in parser.cc).
//
// Thread safety: a Parser is used by one thread and parses one statement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sql/parser/lexer.h"
#include "vigil/common/status.h"
#include "vigil/sql/ast.h"
#include "vigil/sql/parser.h"

namespace vigil::sql::internal {

// Parses the tokens of one statement (without its ';').
class Parser {
 public:
  Parser(std::string_view input, std::vector<Token> tokens, Token end, ParseError* error)
      : in_(input), toks_(std::move(tokens)), end_(std::move(end)), err_(error) {}

  Status Parse(StatementNode* out) {
    VIGIL_RETURN_IF_ERROR(ParseNode(out));
    if (Peek().kind != TokenKind::kEnd) return Expected("end of statement");
    return Status::OK();
  }

 private:
  // ---- token access ----
  const Token& Peek(size_t ahead = 0) const { return i_ + ahead < toks_.size() ? toks_[i_ + ahead] : end_; }
  const Token& Take() {
    const Token& t = Peek();
    if (i_ < toks_.size()) ++i_;
    return t;
  }
  bool PeekWord(std::string_view kw, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == TokenKind::kWord && EqualsIgnoreCase(t.text, kw);
  }
  bool PeekOp(std::string_view op, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == TokenKind::kOperator && t.text == op;
  }
  bool AcceptWord(std::string_view kw) {
    if (!PeekWord(kw)) return false;
    Take();
    return true;
  }
  bool AcceptOp(std::string_view op) {
    if (!PeekOp(op)) return false;
    Take();
    return true;
  }
  Status ExpectWord(std::string_view kw) { return AcceptWord(kw) ? Status::OK() : Expected(kw); }
  Status ExpectOp(std::string_view op) { return AcceptOp(op) ? Status::OK() : Expected("'" + std::string(op) + "'"); }

  // ---- errors ----
  Status Fail(SourcePos pos, std::string message) {
    err_->code = StatusCode::kInvalidArgument;
    err_->pos = pos;
    err_->message = std::move(message);
    return err_->ToStatus();
  }
  Status Expected(std::string_view what) {
    return Fail(Peek().pos, "expected " + std::string(what) + ", found " + DescribeToken(Peek()));
  }

  // ---- names ----
  Status ParseIdentifier(std::string_view what, std::string* out);
  Status ParseTableName(TableRef* out);
  Status ParseDatabaseName(DatabaseName* out);
  Status ParseColumnList(size_t max, std::string_view what, std::vector<std::string>* out);
  // IF NOT EXISTS / IF EXISTS; `at` receives the position of IF when present.
  Status ParseIfNotExists(bool* out, SourcePos* at = nullptr);
  Status ParseIfExists(bool* out);
  Status ParsePositiveInt(std::string_view what, int64_t* out);
  Status ParseStringToken(std::string_view what, std::string* out);

  // ---- literals and expressions ----
  // A literal at Peek(), if there is one: NULL, TRUE, FALSE, [-]number,
  // 'string', DATE '...', TIMESTAMP '...'. Sets *matched.
  Status TryParseLiteral(Literal* out, bool* matched);
  static bool IsNumber(const Token& t);
  Status ParseLiteral(Literal* out);
  // Guards recursion: parentheses, NOT and unary minus each nest one level.
  struct DepthGuard {
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    int* d_;
  };
  Status CheckDepth(SourcePos pos, int depth);
  Status ParseExpr(Expr* out);
  // `height` receives the height of the tree built (a leaf is 1).
  Status ParseOr(Expr* out, int* height) { return ParseChain("OR", BinaryOp::kOr, out, height); }
  Status ParseAnd(Expr* out, int* height) { return ParseChain("AND", BinaryOp::kAnd, out, height); }

  Status ParseChain(std::string_view kw, BinaryOp op, Expr* out, int* height);
  Status ParseNot(Expr* out, int* height);
  static std::optional<BinaryOp> ComparisonOp(const Token& t);
  Status ParseComparison(Expr* out, int* height);
  Status ParseAdditive(Expr* out, int* height);
  Status ParseMultiplicative(Expr* out, int* height);
  // *lhs = lhs op rhs, tracking the height.
  Status Combine(BinaryOp op, Expr* lhs, Expr rhs, int rhs_height, int* height);
  Status ParseUnary(Expr* out, int* height);
  Status ParsePrimary(Expr* out, int* height);
  Status ParseWhere(std::optional<Expr>* out);

  // ---- statements ----
  Status ParseNode(StatementNode* out);
  // The rest of the statement as a SelectStatement.
  SelectStatement TakeSelect();
  Status ParseCreate(StatementNode* out);
  Status ParseCreateTable(StatementNode* out);
  Status ParseCreateExternalTable(StatementNode* out);
  // A column type: NAME or NAME(param, ...), validated by DataType::Parse.
  // VARCHAR(n), CHAR(n) and STRING(n) are VARCHAR(n): at most n characters.
  Status ParseType(DataType* out);
  static bool IsDecimalDigits(const std::string& s);
  Status ParseCreateIndex(bool or_replace, StatementNode* out);
  // "text" or 'text'.
  Status ParsePropertyString(std::string_view what, std::string* out);
  Status ParseDrop(StatementNode* out);
  Status ParseShow(StatementNode* out);
  Status ParseInsert(StatementNode* out);
  Status ParseCopy(StatementNode* out);
  Status ParseDelete(StatementNode* out);
  Status ParseUpdate(StatementNode* out);
  Status ParseVacuum(StatementNode* out);
  Status ParseSet(StatementNode* out);
  Status ParsePrepare(StatementNode* out);
  Status ParseExecute(StatementNode* out);
  // A literal, or X'hex' as its bytes (the lexer has checked the digits).
  Status ParseBoundValue(std::vector<BoundValue>* out);
  static int HexDigitValue(char c);
  Status ParseDeallocate(StatementNode* out);
  // INDEX JOB <id>
  Status ParseIndexJobId(int64_t* id);
  Status ParseResolve(StatementNode* out);
  // ALTER USER name {ROTATE TOKEN | DISABLE | ENABLE | SET ADMIN | UNSET ADMIN}
  Status ParseAlterUser(StatementNode* out);
  // GRANT privilege ON object TO user / REVOKE privilege ON object FROM user
  Status ParseGrant(bool revoke, StatementNode* out);
  // `*`, `[catalog.]db.*` or `[catalog.]db.table`.
  Status ParseGrantObject(GrantObject* out);
  Status ParseWait(StatementNode* out);
  std::string_view in_;
  std::vector<Token> toks_;
  Token end_;
  ParseError* err_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace vigil::sql::internal

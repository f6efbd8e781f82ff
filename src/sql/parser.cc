#include "vigil/sql/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "sql/lexer.h"
#include "vigil/storage/ingest.h"

namespace vigil::sql {

using internal::DescribeToken;
using internal::EqualsIgnoreCase;
using internal::Lexer;
using internal::ToUpperAscii;

Status ParseError::ToStatus() const {
  return Status(code, "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": " +
                          message);
}

namespace {

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
  Status ExpectOp(std::string_view op) {
    return AcceptOp(op) ? Status::OK() : Expected("'" + std::string(op) + "'");
  }

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
  Status ParseIdentifier(std::string_view what, std::string* out) {
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

  Status ParseTableName(TableName* out) {
    std::vector<std::string> parts(1);
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("table name", &parts[0]));
    while (parts.size() < 3 && PeekOp(".")) {
      Take();
      parts.emplace_back();
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("name after '.'", &parts.back()));
    }
    if (PeekOp(".")) return Fail(Peek().pos, "a table name has at most three parts: catalog.database.table");
    *out = TableName{};
    out->table = parts.back();
    if (parts.size() >= 2) out->database = parts[parts.size() - 2];
    if (parts.size() == 3) out->catalog = parts[0];
    return Status::OK();
  }

  Status ParseDatabaseName(DatabaseName* out) {
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

  Status ParseColumnList(size_t max, std::string_view what, std::vector<std::string>* out) {
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

  // IF NOT EXISTS / IF EXISTS; `at` receives the position of IF when present.
  Status ParseIfNotExists(bool* out, SourcePos* at = nullptr) {
    if (!PeekWord("IF")) return Status::OK();
    if (at) *at = Peek().pos;
    Take();
    VIGIL_RETURN_IF_ERROR(ExpectWord("NOT"));
    VIGIL_RETURN_IF_ERROR(ExpectWord("EXISTS"));
    *out = true;
    return Status::OK();
  }
  Status ParseIfExists(bool* out) {
    if (!AcceptWord("IF")) return Status::OK();
    VIGIL_RETURN_IF_ERROR(ExpectWord("EXISTS"));
    *out = true;
    return Status::OK();
  }

  Status ParsePositiveInt(std::string_view what, int64_t* out) {
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

  Status ParseStringToken(std::string_view what, std::string* out) {
    if (Peek().kind != TokenKind::kString) return Expected(what);
    *out = Take().value;
    return Status::OK();
  }

  // ---- literals and expressions ----
  // A literal at Peek(), if there is one: NULL, TRUE, FALSE, [-]number,
  // 'string', DATE '...', TIMESTAMP '...'. Sets *matched.
  Status TryParseLiteral(Literal* out, bool* matched) {
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
        auto v = ParseTextValue(s.value, DataType::Of(is_date ? TypeId::kDate : TypeId::kTimestamp));
        if (!v.ok()) {
          return Fail(s.pos, std::string("invalid ") + (is_date ? "DATE" : "TIMESTAMP") +
                                 " literal: " + v.status().message());
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
  static bool IsNumber(const Token& t) {
    return t.kind == TokenKind::kInteger || t.kind == TokenKind::kDecimal || t.kind == TokenKind::kFloat;
  }

  Status ParseLiteral(Literal* out) {
    bool matched = false;
    VIGIL_RETURN_IF_ERROR(TryParseLiteral(out, &matched));
    return matched ? Status::OK() : Expected("a literal");
  }

  // Guards recursion: parentheses, NOT and unary minus each nest one level.
  struct DepthGuard {
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    int* d_;
  };
  Status CheckDepth(SourcePos pos, int depth) {
    if (depth > kMaxNestingDepth) {
      return Fail(pos, "expression nesting depth exceeds " + std::to_string(kMaxNestingDepth));
    }
    return Status::OK();
  }

  Status ParseExpr(Expr* out) {
    int height = 0;
    return ParseOr(out, &height);
  }

  // `height` receives the height of the tree built (a leaf is 1).
  Status ParseOr(Expr* out, int* height) { return ParseChain("OR", BinaryOp::kOr, out, height); }
  Status ParseAnd(Expr* out, int* height) { return ParseChain("AND", BinaryOp::kAnd, out, height); }

  Status ParseChain(std::string_view kw, BinaryOp op, Expr* out, int* height) {
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

  Status ParseNot(Expr* out, int* height) {
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

  static std::optional<BinaryOp> ComparisonOp(const Token& t) {
    if (t.kind != TokenKind::kOperator) return std::nullopt;
    if (t.text == "=" || t.text == "==") return BinaryOp::kEq;
    if (t.text == "!=" || t.text == "<>") return BinaryOp::kNe;
    if (t.text == "<") return BinaryOp::kLt;
    if (t.text == "<=") return BinaryOp::kLe;
    if (t.text == ">") return BinaryOp::kGt;
    if (t.text == ">=") return BinaryOp::kGe;
    return std::nullopt;
  }

  Status ParseComparison(Expr* out, int* height) {
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

  Status ParseAdditive(Expr* out, int* height) {
    VIGIL_RETURN_IF_ERROR(ParseMultiplicative(out, height));
    for (;;) {
      BinaryOp op;
      if (PeekOp("+")) op = BinaryOp::kAdd;
      else if (PeekOp("-")) op = BinaryOp::kSub;
      else return Status::OK();
      Take();
      Expr rhs;
      int hr = 0;
      VIGIL_RETURN_IF_ERROR(ParseMultiplicative(&rhs, &hr));
      VIGIL_RETURN_IF_ERROR(Combine(op, out, std::move(rhs), hr, height));
    }
  }

  Status ParseMultiplicative(Expr* out, int* height) {
    VIGIL_RETURN_IF_ERROR(ParseUnary(out, height));
    for (;;) {
      BinaryOp op;
      if (PeekOp("*")) op = BinaryOp::kMul;
      else if (PeekOp("/")) op = BinaryOp::kDiv;
      else if (PeekOp("%")) op = BinaryOp::kMod;
      else return Status::OK();
      Take();
      Expr rhs;
      int hr = 0;
      VIGIL_RETURN_IF_ERROR(ParseUnary(&rhs, &hr));
      VIGIL_RETURN_IF_ERROR(Combine(op, out, std::move(rhs), hr, height));
    }
  }

  // *lhs = lhs op rhs, tracking the height.
  Status Combine(BinaryOp op, Expr* lhs, Expr rhs, int rhs_height, int* height) {
    SourcePos pos = lhs->pos;
    *height = std::max(*height, rhs_height) + 1;
    VIGIL_RETURN_IF_ERROR(CheckDepth(pos, *height));
    std::vector<Expr> args;
    args.push_back(std::move(*lhs));
    args.push_back(std::move(rhs));
    *lhs = Expr::Binary(op, std::move(args), pos);
    return Status::OK();
  }

  Status ParseUnary(Expr* out, int* height) {
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

  Status ParsePrimary(Expr* out, int* height) {
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

  Status ParseWhere(std::optional<Expr>* out) {
    if (!AcceptWord("WHERE")) return Status::OK();
    out->emplace();
    return ParseExpr(&**out);
  }

  // ---- statements ----
  Status ParseNode(StatementNode* out) {
    const Token& t = Peek();
    if (t.kind != TokenKind::kWord) return Expected("a statement");
    const std::string kw = ToUpperAscii(t.text);
    if (kw == "SELECT" || kw == "WITH") {
      *out = TakeSelect();
      return Status::OK();
    }
    Take();
    if (kw == "CREATE") return ParseCreate(out);
    if (kw == "DROP") return ParseDrop(out);
    if (kw == "SHOW") return ParseShow(out);
    if (kw == "INSERT") return ParseInsert(out);
    if (kw == "COPY") return ParseCopy(out);
    if (kw == "DELETE") return ParseDelete(out);
    if (kw == "UPDATE") return ParseUpdate(out);
    if (kw == "REFRESH") {
      RefreshTableStatement s;
      VIGIL_RETURN_IF_ERROR(ExpectWord("TABLE"));
      VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
      *out = std::move(s);
      return Status::OK();
    }
    if (kw == "BUILD") {
      BuildIndexStatement s;
      VIGIL_RETURN_IF_ERROR(ExpectWord("INDEX"));
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("index name", &s.name));
      VIGIL_RETURN_IF_ERROR(ExpectWord("ON"));
      VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
      *out = std::move(s);
      return Status::OK();
    }
    if (kw == "VACUUM") return ParseVacuum(out);
    if (kw == "CANCEL") {
      CancelIndexJobStatement s;
      VIGIL_RETURN_IF_ERROR(ParseIndexJobId(&s.job_id));
      *out = s;
      return Status::OK();
    }
    if (kw == "RESOLVE") return ParseResolve(out);
    if (kw == "ALTER") return ParseAlterUser(out);
    if (kw == "GRANT" || kw == "REVOKE") return ParseGrant(kw == "REVOKE", out);
    if (kw == "SET") return ParseSet(out);
    if (kw == "WAIT") return ParseWait(out);
    if (kw == "PREPARE") return ParsePrepare(out);
    if (kw == "EXECUTE") return ParseExecute(out);
    if (kw == "DEALLOCATE") return ParseDeallocate(out);
    if (kw == "EXPLAIN") {
      ExplainStatement s;
      s.analyze = AcceptWord("ANALYZE");
      if (!PeekWord("SELECT") && !PeekWord("WITH")) return Expected("SELECT");
      s.select = TakeSelect();
      *out = std::move(s);
      return Status::OK();
    }
    i_ = 0;
    return Expected("a statement");
  }

  // The rest of the statement as a SelectStatement.
  SelectStatement TakeSelect() {
    SelectStatement s;
    const Token& first = toks_[i_];
    const Token& last = toks_.back();
    s.text_offset = first.pos.offset;
    s.text = std::string(in_.substr(first.pos.offset, last.pos.offset + last.text.size() - first.pos.offset));
    s.tokens.assign(toks_.begin() + static_cast<std::ptrdiff_t>(i_), toks_.end());
    i_ = toks_.size();
    return s;
  }

  Status ParseCreate(StatementNode* out) {
    if (AcceptWord("OR")) {
      VIGIL_RETURN_IF_ERROR(ExpectWord("REPLACE"));
      VIGIL_RETURN_IF_ERROR(ExpectWord("INDEX"));
      return ParseCreateIndex(true, out);
    }
    if (AcceptWord("DATABASE")) {
      CreateDatabaseStatement s;
      VIGIL_RETURN_IF_ERROR(ParseIfNotExists(&s.if_not_exists));
      VIGIL_RETURN_IF_ERROR(ParseDatabaseName(&s.name));
      *out = std::move(s);
      return Status::OK();
    }
    if (AcceptWord("TABLE")) return ParseCreateTable(out);
    if (AcceptWord("INDEX")) return ParseCreateIndex(false, out);
    if (AcceptWord("USER")) {
      CreateUserStatement s;
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &s.name));
      s.admin = AcceptWord("ADMIN");
      *out = std::move(s);
      return Status::OK();
    }
    return Expected("DATABASE, TABLE, INDEX, USER or OR REPLACE");
  }

  Status ParseCreateTable(StatementNode* out) {
    CreateTableStatement s;
    VIGIL_RETURN_IF_ERROR(ParseIfNotExists(&s.if_not_exists));
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    VIGIL_RETURN_IF_ERROR(ExpectOp("("));
    do {
      if (s.columns.size() == kMaxColumnsPerTable) {
        return Fail(Peek().pos, "a table has at most " + std::to_string(kMaxColumnsPerTable) + " columns");
      }
      ColumnDef col;
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("column name", &col.name));
      VIGIL_RETURN_IF_ERROR(ParseType(&col.type));
      if (AcceptWord("NOT")) {
        VIGIL_RETURN_IF_ERROR(ExpectWord("NULL"));
        col.not_null = true;
      } else {
        AcceptWord("NULL");
      }
      s.columns.push_back(std::move(col));
    } while (AcceptOp(","));
    VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
    *out = std::move(s);
    return Status::OK();
  }

  // A column type: NAME or NAME(param, ...), validated by DataType::Parse.
  // VARCHAR(n), CHAR(n) and STRING(n) are VARCHAR(n): at most n characters.
  Status ParseType(DataType* out) {
    const Token& t = Peek();
    if (t.kind != TokenKind::kWord) return Expected("column type");
    SourcePos pos = t.pos;
    std::string text = ToUpperAscii(t.text);
    Take();
    bool string_with_length = text == "VARCHAR" || text == "CHAR" || text == "STRING";
    std::string length;
    if (AcceptOp("(")) {
      std::vector<std::string> params;
      do {
        const Token& p = Peek();
        if (p.kind != TokenKind::kWord && p.kind != TokenKind::kInteger) return Expected("type parameter");
        params.push_back(ToUpperAscii(p.text));
        Take();
      } while (AcceptOp(","));
      VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
      if (string_with_length) {
        if (params.size() != 1 || !IsDecimalDigits(params[0])) {
          return Fail(pos, text + " takes one length: " + text + "(n)");
        }
        length = params[0];
      } else {
        text += "(";
        for (size_t k = 0; k < params.size(); ++k) text += (k ? "," : "") + params[k];
        text += ")";
      }
    }
    if (string_with_length) text = length.empty() ? "STRING" : "VARCHAR(" + length + ")";
    auto type = DataType::Parse(text);
    if (!type.ok()) return Fail(pos, "invalid column type " + text + ": " + type.status().message());
    *out = *type;
    return Status::OK();
  }
  static bool IsDecimalDigits(const std::string& s) {
    if (s.empty()) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  }

  Status ParseCreateIndex(bool or_replace, StatementNode* out) {
    CreateIndexStatement s;
    s.or_replace = or_replace;
    SourcePos if_pos;
    VIGIL_RETURN_IF_ERROR(ParseIfNotExists(&s.if_not_exists, &if_pos));
    if (s.if_not_exists && s.or_replace) {
      return Fail(if_pos, "IF NOT EXISTS and OR REPLACE cannot be used together");
    }
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("index name", &s.name));
    VIGIL_RETURN_IF_ERROR(ExpectWord("ON"));
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    VIGIL_RETURN_IF_ERROR(ParseColumnList(kMaxIndexColumns, "index columns", &s.columns));
    VIGIL_RETURN_IF_ERROR(ExpectWord("USING"));
    const Token& m = Peek();
    if (PeekWord("ANN")) s.method = IndexMethod::kAnn;
    else if (PeekWord("BTREE")) s.method = IndexMethod::kBtree;
    else if (PeekWord("BITMAP")) s.method = IndexMethod::kBitmap;
    else if (PeekWord("FTS")) s.method = IndexMethod::kFts;
    else return Fail(m.pos, "expected ANN, BTREE, BITMAP or FTS, found " + DescribeToken(m));
    Take();
    if (AcceptWord("PROPERTIES")) {
      VIGIL_RETURN_IF_ERROR(ExpectOp("("));
      do {
        const Token& k = Peek();
        if (s.properties.size() == kMaxProperties) {
          return Fail(k.pos, "PROPERTIES exceed " + std::to_string(kMaxProperties) + " entries");
        }
        Property p;
        VIGIL_RETURN_IF_ERROR(ParsePropertyString("property name", &p.key));
        if (p.key.empty()) return Fail(k.pos, "empty property name");
        for (const Property& q : s.properties) {
          if (EqualsIgnoreCase(q.key, p.key)) return Fail(k.pos, "duplicate property \"" + p.key + "\"");
        }
        VIGIL_RETURN_IF_ERROR(ExpectOp("="));
        VIGIL_RETURN_IF_ERROR(ParsePropertyString("property value", &p.value));
        s.properties.push_back(std::move(p));
      } while (AcceptOp(","));
      VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
    }
    *out = std::move(s);
    return Status::OK();
  }

  // "text" or 'text'.
  Status ParsePropertyString(std::string_view what, std::string* out) {
    const Token& t = Peek();
    if (t.kind == TokenKind::kString || (t.kind == TokenKind::kQuotedIdentifier && t.text[0] == '"')) {
      *out = t.value;
      Take();
      return Status::OK();
    }
    return Expected(std::string(what) + " in quotes");
  }

  Status ParseDrop(StatementNode* out) {
    if (AcceptWord("DATABASE")) {
      DropDatabaseStatement s;
      VIGIL_RETURN_IF_ERROR(ParseIfExists(&s.if_exists));
      VIGIL_RETURN_IF_ERROR(ParseDatabaseName(&s.name));
      *out = std::move(s);
      return Status::OK();
    }
    if (AcceptWord("TABLE")) {
      DropTableStatement s;
      VIGIL_RETURN_IF_ERROR(ParseIfExists(&s.if_exists));
      VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
      *out = std::move(s);
      return Status::OK();
    }
    if (AcceptWord("INDEX")) {
      DropIndexStatement s;
      VIGIL_RETURN_IF_ERROR(ParseIfExists(&s.if_exists));
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("index name", &s.name));
      VIGIL_RETURN_IF_ERROR(ExpectWord("ON"));
      VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
      *out = std::move(s);
      return Status::OK();
    }
    if (AcceptWord("USER")) {
      DropUserStatement s;
      VIGIL_RETURN_IF_ERROR(ParseIfExists(&s.if_exists));
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &s.name));
      *out = std::move(s);
      return Status::OK();
    }
    return Expected("DATABASE, TABLE, INDEX or USER");
  }

  Status ParseShow(StatementNode* out) {
    if (AcceptWord("DATABASES")) {
      *out = ShowDatabasesStatement{};
      return Status::OK();
    }
    if (AcceptWord("TABLES")) {
      ShowTablesStatement s;
      if (AcceptWord("FROM") || AcceptWord("IN")) {
        s.database.emplace();
        VIGIL_RETURN_IF_ERROR(ParseDatabaseName(&*s.database));
      }
      *out = std::move(s);
      return Status::OK();
    }
    if (AcceptWord("USERS")) {
      *out = ShowUsersStatement{};
      return Status::OK();
    }
    if (AcceptWord("GRANTS")) {
      ShowGrantsStatement s;
      if (AcceptWord("FOR")) {
        s.user.emplace();
        VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &*s.user));
      }
      *out = std::move(s);
      return Status::OK();
    }
    if (AcceptWord("INDEX")) {
      if (AcceptWord("JOBS")) {
        ShowIndexJobsStatement s;
        if (AcceptWord("FROM") || AcceptWord("IN")) {
          s.database.emplace();
          VIGIL_RETURN_IF_ERROR(ParseDatabaseName(&*s.database));
        }
        VIGIL_RETURN_IF_ERROR(ParseWhere(&s.where));
        *out = std::move(s);
        return Status::OK();
      }
      if (AcceptWord("JOB")) {
        ShowIndexJobStatement s;
        VIGIL_RETURN_IF_ERROR(ParsePositiveInt("job id", &s.job_id));
        *out = s;
        return Status::OK();
      }
      if (!PeekWord("FROM") && !PeekWord("IN")) return Expected("FROM, JOBS or JOB");
    } else if (!AcceptWord("INDEXES") && !AcceptWord("KEYS")) {
      return Expected("DATABASES, TABLES, INDEX, INDEXES, KEYS, USERS or GRANTS");
    }
    if (!AcceptWord("FROM") && !AcceptWord("IN")) return Expected("FROM");
    ShowIndexStatement s;
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    *out = std::move(s);
    return Status::OK();
  }

  Status ParseInsert(StatementNode* out) {
    InsertStatement s;
    VIGIL_RETURN_IF_ERROR(ExpectWord("INTO"));
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    if (PeekOp("(")) VIGIL_RETURN_IF_ERROR(ParseColumnList(kMaxColumnsPerTable, "INSERT columns", &s.columns));
    VIGIL_RETURN_IF_ERROR(ExpectWord("VALUES"));
    do {
      SourcePos row_pos = Peek().pos;
      VIGIL_RETURN_IF_ERROR(ExpectOp("("));
      std::vector<Literal> row;
      do {
        row.emplace_back();
        VIGIL_RETURN_IF_ERROR(ParseLiteral(&row.back()));
      } while (AcceptOp(","));
      VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
      size_t want = !s.columns.empty() ? s.columns.size() : !s.rows.empty() ? s.rows[0].size() : row.size();
      if (row.size() != want) {
        return Fail(row_pos, "row " + std::to_string(s.rows.size() + 1) + " has " + std::to_string(row.size()) +
                                 " values, expected " + std::to_string(want));
      }
      s.rows.push_back(std::move(row));
    } while (AcceptOp(","));
    *out = std::move(s);
    return Status::OK();
  }

  Status ParseCopy(StatementNode* out) {
    CopyStatement s;
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    VIGIL_RETURN_IF_ERROR(ExpectWord("FROM"));
    VIGIL_RETURN_IF_ERROR(ParseStringToken("file path string", &s.path));
    if (AcceptWord("WITH")) {
      VIGIL_RETURN_IF_ERROR(ExpectOp("("));
      VIGIL_RETURN_IF_ERROR(ExpectWord("FORMAT"));
      const Token& f = Peek();
      if (f.kind != TokenKind::kWord && f.kind != TokenKind::kString) return Expected("format name");
      std::string name = ToUpperAscii(f.value);
      if (name == "CSV") s.format = CopyFormat::kCsv;
      else if (name == "JSONL" || name == "JSON" || name == "NDJSON") s.format = CopyFormat::kJsonl;
      else if (name == "FVECS") s.format = CopyFormat::kFvecs;
      else if (name == "NPY") s.format = CopyFormat::kNpy;
      else return Fail(f.pos, "unknown COPY format " + DescribeToken(f) + ": expected csv, jsonl, fvecs or npy");
      Take();
      VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
    }
    *out = std::move(s);
    return Status::OK();
  }

  Status ParseDelete(StatementNode* out) {
    DeleteStatement s;
    VIGIL_RETURN_IF_ERROR(ExpectWord("FROM"));
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    VIGIL_RETURN_IF_ERROR(ParseWhere(&s.where));
    *out = std::move(s);
    return Status::OK();
  }

  Status ParseUpdate(StatementNode* out) {
    UpdateStatement s;
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    VIGIL_RETURN_IF_ERROR(ExpectWord("SET"));
    do {
      SourcePos pos = Peek().pos;
      Assignment a;
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("column name", &a.column));
      for (const Assignment& b : s.assignments) {
        if (EqualsIgnoreCase(a.column, b.column)) return Fail(pos, "column " + a.column + " is assigned twice");
      }
      VIGIL_RETURN_IF_ERROR(ExpectOp("="));
      VIGIL_RETURN_IF_ERROR(ParseExpr(&a.value));
      s.assignments.push_back(std::move(a));
    } while (AcceptOp(","));
    VIGIL_RETURN_IF_ERROR(ParseWhere(&s.where));
    *out = std::move(s);
    return Status::OK();
  }

  Status ParseVacuum(StatementNode* out) {
    VacuumStatement s;
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    if (AcceptWord("RETAIN")) {
      int64_t n = 0;
      VIGIL_RETURN_IF_ERROR(ParsePositiveInt("number of versions", &n));
      s.retain_versions = n;
      VIGIL_RETURN_IF_ERROR(ExpectWord("VERSIONS"));
    } else if (AcceptWord("OLDER")) {
      VIGIL_RETURN_IF_ERROR(ExpectWord("THAN"));
      const Token& t = Peek();
      std::string interval;
      VIGIL_RETURN_IF_ERROR(ParseStringToken("interval string", &interval));
      if (interval.empty()) return Fail(t.pos, "empty interval");
      s.older_than = std::move(interval);
    }
    *out = std::move(s);
    return Status::OK();
  }

  Status ParseSet(StatementNode* out) {
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

  Status ParsePrepare(StatementNode* out) {
    PrepareStatement s;
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("prepared statement name", &s.name));
    if (PeekOp("(")) return Fail(Peek().pos, "parameter types are not declared here: a parameter takes the value bound");
    VIGIL_RETURN_IF_ERROR(ExpectWord("AS"));
    if (!PeekWord("SELECT") && !PeekWord("WITH")) return Expected("SELECT");
    s.select = TakeSelect();
    *out = std::move(s);
    return Status::OK();
  }

  Status ParseExecute(StatementNode* out) {
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

  // A literal, or X'hex' as its bytes (the lexer has checked the digits).
  Status ParseBoundValue(std::vector<BoundValue>* out) {
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
  static int HexDigitValue(char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
  }

  Status ParseDeallocate(StatementNode* out) {
    DeallocateStatement s;
    if (PeekWord("PREPARE") && Peek(1).kind != TokenKind::kEnd) Take();  // `DEALLOCATE prepare` names one
    if (!AcceptWord("ALL")) {
      s.name.emplace();
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("prepared statement name or ALL", &*s.name));
    }
    *out = std::move(s);
    return Status::OK();
  }

  // INDEX JOB <id>
  Status ParseIndexJobId(int64_t* id) {
    VIGIL_RETURN_IF_ERROR(ExpectWord("INDEX"));
    VIGIL_RETURN_IF_ERROR(ExpectWord("JOB"));
    return ParsePositiveInt("job id", id);
  }

  Status ParseResolve(StatementNode* out) {
    ResolveIndexJobStatement s;
    VIGIL_RETURN_IF_ERROR(ParseIndexJobId(&s.job_id));
    VIGIL_RETURN_IF_ERROR(ExpectWord("AS"));
    if (AcceptWord("ACKNOWLEDGED")) s.action = ResolveAction::kAcknowledged;
    else if (AcceptWord("FORCE_RELEASE")) s.action = ResolveAction::kForceRelease;
    else return Expected("ACKNOWLEDGED or FORCE_RELEASE");
    if (PeekWord("WITHOUT")) {
      SourcePos pos = Take().pos;
      if (s.action != ResolveAction::kForceRelease) {
        return Fail(pos, "WITHOUT REFRESH applies only to FORCE_RELEASE");
      }
      VIGIL_RETURN_IF_ERROR(ExpectWord("REFRESH"));
      s.without_refresh = true;
    }
    VIGIL_RETURN_IF_ERROR(ExpectWord("COMMENT"));
    VIGIL_RETURN_IF_ERROR(ParseStringToken("comment string", &s.comment));
    *out = std::move(s);
    return Status::OK();
  }

  // ALTER USER name {ROTATE TOKEN | DISABLE | ENABLE | SET ADMIN | UNSET ADMIN}
  Status ParseAlterUser(StatementNode* out) {
    AlterUserStatement s;
    VIGIL_RETURN_IF_ERROR(ExpectWord("USER"));
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &s.name));
    if (AcceptWord("ROTATE")) {
      VIGIL_RETURN_IF_ERROR(ExpectWord("TOKEN"));
      s.action = AlterUserAction::kRotateToken;
    } else if (AcceptWord("DISABLE")) {
      s.action = AlterUserAction::kDisable;
    } else if (AcceptWord("ENABLE")) {
      s.action = AlterUserAction::kEnable;
    } else if (PeekWord("SET") || PeekWord("UNSET")) {
      s.action = PeekWord("SET") ? AlterUserAction::kSetAdmin : AlterUserAction::kUnsetAdmin;
      Take();
      VIGIL_RETURN_IF_ERROR(ExpectWord("ADMIN"));
    } else {
      return Expected("ROTATE TOKEN, DISABLE, ENABLE, SET ADMIN or UNSET ADMIN");
    }
    *out = std::move(s);
    return Status::OK();
  }

  // GRANT privilege ON object TO user / REVOKE privilege ON object FROM user
  Status ParseGrant(bool revoke, StatementNode* out) {
    GrantStatement s;
    s.revoke = revoke;
    const Token& p = Peek();
    std::optional<jobs::Privilege> privilege =
        p.kind == TokenKind::kWord ? jobs::ParsePrivilege(ToUpperAscii(p.text)) : std::nullopt;
    if (!privilege) return Expected("SHOW, ALTER or ADMIN");
    Take();
    s.privilege = *privilege;
    VIGIL_RETURN_IF_ERROR(ExpectWord("ON"));
    VIGIL_RETURN_IF_ERROR(ParseGrantObject(&s.object));
    VIGIL_RETURN_IF_ERROR(ExpectWord(revoke ? "FROM" : "TO"));
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &s.user));
    *out = std::move(s);
    return Status::OK();
  }

  // `*`, `[catalog.]db.*` or `[catalog.]db.table`.
  Status ParseGrantObject(GrantObject* out) {
    *out = GrantObject{};
    if (AcceptOp("*")) {
      out->global = true;
      return Status::OK();
    }
    const SourcePos start = Peek().pos;
    std::vector<std::string> parts(1);
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("*, db.*, db.table or catalog.db.table", &parts[0]));
    bool all_tables = false;
    while (!all_tables && PeekOp(".")) {
      Take();
      if (AcceptOp("*")) {
        all_tables = true;
      } else if (parts.size() == 3) {
        return Fail(Peek().pos, "a grant object has at most three parts: catalog.db.table");
      } else {
        parts.emplace_back();
        VIGIL_RETURN_IF_ERROR(ParseIdentifier("name or '*' after '.'", &parts.back()));
      }
    }
    const size_t n = parts.size() + (all_tables ? 1 : 0);
    if (n == 1) return Fail(start, "a grant object is *, db.*, db.table or catalog.db.table");
    if (n > 3) return Fail(start, "a grant object has at most three parts: catalog.db.*");
    if (!all_tables) {
      out->table = std::move(parts.back());
      parts.pop_back();
    }
    out->database = std::move(parts.back());
    if (parts.size() == 2) out->catalog = std::move(parts[0]);
    return Status::OK();
  }

  Status ParseWait(StatementNode* out) {
    WaitIndexJobStatement s;
    VIGIL_RETURN_IF_ERROR(ParseIndexJobId(&s.job_id));
    if (AcceptWord("TIMEOUT")) {
      const Token& t = Peek();
      if (!IsNumber(t) || (t.text.size() > 1 && (t.text[1] == 'x' || t.text[1] == 'X'))) {
        return Expected("seconds");
      }
      errno = 0;
      double v = std::strtod(t.text.c_str(), nullptr);
      if (errno == ERANGE && std::isinf(v)) return Fail(t.pos, "TIMEOUT " + t.text + " is out of range");
      if (!std::isfinite(v) || v < 0) return Fail(t.pos, "TIMEOUT must be a finite number of seconds");
      s.timeout_seconds = v;
      Take();
    }
    *out = s;
    return Status::OK();
  }

  std::string_view in_;
  std::vector<Token> toks_;
  Token end_;
  ParseError* err_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

ScriptParser::ScriptParser(std::string_view sql) : sql_(sql) {}

Result<std::optional<Statement>> ScriptParser::Next() {
  if (error_) return error_->ToStatus();
  ParseError err;
  auto fail = [&](SourcePos pos, std::string message) {
    err.code = StatusCode::kInvalidArgument;
    err.pos = pos;
    err.message = std::move(message);
    error_ = err;
    return err.ToStatus();
  };
  if (sql_.size() > kMaxScriptBytes) {
    return fail(SourcePos{}, "script exceeds " + std::to_string(kMaxScriptBytes) + " bytes");
  }
  for (;;) {
    Lexer lexer(sql_, SourcePos{offset_, line_, column_});
    std::vector<Token> tokens;
    Token end;
    int depth = 0;
    for (;;) {
      Token t;
      if (!lexer.Next(&t, &err)) {
        error_ = err;
        return err.ToStatus();
      }
      if (t.kind == TokenKind::kEnd) {
        end = std::move(t);
        break;
      }
      if (t.kind == TokenKind::kOperator && t.text == ";") {
        end = std::move(t);
        end.kind = TokenKind::kEnd;
        break;
      }
      if (!tokens.empty() && t.pos.offset + t.text.size() - tokens[0].pos.offset > kMaxStatementBytes) {
        return fail(tokens[0].pos, "statement exceeds " + std::to_string(kMaxStatementBytes) + " bytes");
      }
      if (t.kind == TokenKind::kOperator && t.text == "(" && ++depth > kMaxNestingDepth) {
        return fail(t.pos, "parentheses nest deeper than " + std::to_string(kMaxNestingDepth));
      }
      if (t.kind == TokenKind::kOperator && t.text == ")") --depth;
      tokens.push_back(std::move(t));
    }
    SourcePos after = lexer.pos();
    offset_ = after.offset;
    line_ = after.line;
    column_ = after.column;
    if (tokens.empty()) {
      if (end.text == ";") continue;
      return std::optional<Statement>();
    }
    Statement stmt;
    stmt.pos = tokens.front().pos;
    stmt.length = tokens.back().pos.offset + tokens.back().text.size() - stmt.pos.offset;
    Parser parser(sql_, std::move(tokens), std::move(end), &err);
    Status st = parser.Parse(&stmt.node);
    if (!st.ok()) {
      error_ = err;
      return st;
    }
    return std::optional<Statement>(std::move(stmt));
  }
}

Result<std::vector<Statement>> ParseScript(std::string_view sql, ParseError* error) {
  ScriptParser parser(sql);
  std::vector<Statement> out;
  for (;;) {
    auto next = parser.Next();
    if (!next.ok()) {
      if (error) *error = *parser.error();
      return next.status();
    }
    if (!next->has_value()) return out;
    out.push_back(std::move(**next));
  }
}

Result<Statement> ParseStatement(std::string_view sql, ParseError* error) {
  ScriptParser parser(sql);
  auto first = parser.Next();
  if (first.ok() && first->has_value()) {
    auto second = parser.Next();
    if (second.ok() && !second->has_value()) return std::move(**first);
    if (second.ok()) {
      ParseError e{StatusCode::kInvalidArgument, (*second)->pos,
                   "expected one statement, found a second " + std::string(StatementName((*second)->node))};
      if (error) *error = e;
      return e.ToStatus();
    }
  } else if (first.ok()) {
    Lexer lexer(sql);
    Token t;
    ParseError ignored;
    while (lexer.Next(&t, &ignored) && t.kind != TokenKind::kEnd) {
    }
    ParseError e{StatusCode::kInvalidArgument, lexer.pos(), "expected a statement, found end of input"};
    if (error) *error = e;
    return e.ToStatus();
  }
  if (error) *error = *parser.error();
  return parser.error()->ToStatus();
}

Result<std::vector<Token>> Tokenize(std::string_view sql, ParseError* error) {
  ParseError err;
  if (sql.size() > kMaxScriptBytes) {
    err.message = "input exceeds " + std::to_string(kMaxScriptBytes) + " bytes";
    if (error) *error = err;
    return err.ToStatus();
  }
  Lexer lexer(sql);
  std::vector<Token> out;
  for (;;) {
    Token t;
    if (!lexer.Next(&t, &err)) {
      if (error) *error = err;
      return err.ToStatus();
    }
    if (t.kind == TokenKind::kEnd) return out;
    out.push_back(std::move(t));
  }
}

bool IsCompleteInput(std::string_view sql) {
  Lexer lexer(sql);
  Token t;
  ParseError err;
  bool last_is_semicolon = false;
  for (;;) {
    if (!lexer.Next(&t, &err)) return !lexer.incomplete();
    if (t.kind == TokenKind::kEnd) return last_is_semicolon;
    last_is_semicolon = t.kind == TokenKind::kOperator && t.text == ";";
  }
}

}  // namespace vigil::sql

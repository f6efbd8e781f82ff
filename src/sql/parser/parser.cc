#include "vigil/sql/parser.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "sql/parser/lexer.h"
#include "sql/parser/parser_internal.h"

namespace vigil::sql {

using internal::DescribeToken;
using internal::EqualsIgnoreCase;
using internal::Lexer;
using internal::ToUpperAscii;

Status ParseError::ToStatus() const {
  return Status(code, "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": " + message);
}

namespace internal {

Status Parser::ParseNode(StatementNode* out) {
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
  if (kw == "DRAIN" || kw == "RESUME") {
    DrainNodeStatement s;
    s.drain = kw == "DRAIN";
    VIGIL_RETURN_IF_ERROR(ExpectWord("NODE"));
    VIGIL_RETURN_IF_ERROR(ParseStringToken("node id string", &s.node_id));
    *out = std::move(s);
    return Status::OK();
  }
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

SelectStatement Parser::TakeSelect() {
  SelectStatement s;
  const Token& first = toks_[i_];
  const Token& last = toks_.back();
  s.text_offset = first.pos.offset;
  s.text = std::string(in_.substr(first.pos.offset, last.pos.offset + last.text.size() - first.pos.offset));
  s.tokens.assign(toks_.begin() + static_cast<std::ptrdiff_t>(i_), toks_.end());
  i_ = toks_.size();
  return s;
}

}  // namespace internal

using internal::Parser;

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

// Parser methods: iNSERT, COPY, DELETE, UPDATE and VACUUM.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "sql/parser/parser_internal.h"

namespace vigil::sql::internal {

Status Parser::ParseInsert(StatementNode* out) {
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

Status Parser::ParseCopy(StatementNode* out) {
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
    if (name == "CSV")
      s.format = CopyFormat::kCsv;
    else if (name == "JSONL" || name == "JSON" || name == "NDJSON")
      s.format = CopyFormat::kJsonl;
    else if (name == "FVECS")
      s.format = CopyFormat::kFvecs;
    else if (name == "NPY")
      s.format = CopyFormat::kNpy;
    else
      return Fail(f.pos, "unknown COPY format " + DescribeToken(f) + ": expected csv, jsonl, fvecs or npy");
    Take();
    VIGIL_RETURN_IF_ERROR(ExpectOp(")"));
  }
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseDelete(StatementNode* out) {
  DeleteStatement s;
  VIGIL_RETURN_IF_ERROR(ExpectWord("FROM"));
  VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
  VIGIL_RETURN_IF_ERROR(ParseWhere(&s.where));
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseUpdate(StatementNode* out) {
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

Status Parser::ParseVacuum(StatementNode* out) {
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

}  // namespace vigil::sql::internal

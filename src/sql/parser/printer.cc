// ToSql: canonical SQL for the syntax tree. Keywords upper-case, identifiers
// quoted only when needed, expressions parenthesized only where precedence
// requires it (and wherever omitting parentheses would change the tree).
#include <algorithm>
#include <charconv>
#include <string>

#include "sql/parser/lexer.h"
#include "vigil/sql/ast.h"

namespace vigil::sql {

namespace {

constexpr std::string_view kReserved[] = {
    "ALL",    "AND",   "AS",    "BETWEEN", "BY",     "CASE",   "CREATE", "DELETE", "DISTINCT", "DROP", "ELSE",
    "EXISTS", "FALSE", "FROM",  "GROUP",   "HAVING", "IF",     "IN",     "INDEX",  "INSERT",   "INTO", "IS",
    "JOIN",   "LIKE",  "LIMIT", "NOT",     "NULL",   "ON",     "OR",     "ORDER",  "SELECT",   "SET",  "TABLE",
    "THEN",   "TRUE",  "UNION", "UPDATE",  "USING",  "VALUES", "WHEN",   "WHERE",  "WITH"};

// Binding strength; a child weaker than its context is parenthesized.
enum Prec : int { kPrecOr = 1, kPrecAnd, kPrecNot, kPrecCompare, kPrecAdd, kPrecMul, kPrecUnary, kPrecPrimary };

bool IsNumeric(const Literal& l) {
  return l.kind == Literal::Kind::kInteger || l.kind == Literal::Kind::kDecimal || l.kind == Literal::Kind::kFloat;
}

int PrecOf(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return IsNumeric(e.literal) && !e.literal.text.empty() && e.literal.text[0] == '-' ? kPrecUnary : kPrecPrimary;
    case ExprKind::kColumn:
      return kPrecPrimary;
    case ExprKind::kNot:
      return kPrecNot;
    case ExprKind::kNegate:
      return kPrecUnary;
    case ExprKind::kIsNull:
    case ExprKind::kIn:
    case ExprKind::kBetween:
      return kPrecCompare;
    case ExprKind::kBinary:
      switch (e.op) {
        case BinaryOp::kOr:
          return kPrecOr;
        case BinaryOp::kAnd:
          return kPrecAnd;
        case BinaryOp::kAdd:
        case BinaryOp::kSub:
          return kPrecAdd;
        case BinaryOp::kMul:
        case BinaryOp::kDiv:
        case BinaryOp::kMod:
          return kPrecMul;
        default:
          return kPrecCompare;
      }
  }
  return kPrecPrimary;
}

void PrintExpr(const Expr& e, int min_prec, std::string* out);

void PrintInner(const Expr& e, std::string* out) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      *out += ToSql(e.literal);
      return;
    case ExprKind::kColumn:
      if (e.double_quoted) {
        *out += '"';
        for (char c : e.column) {
          if (c == '"') *out += '"';
          *out += c;
        }
        *out += '"';
      } else {
        *out += QuoteIdentifier(e.column);
      }
      return;
    case ExprKind::kNot:
      *out += "NOT ";
      PrintExpr(e.args.at(0), kPrecNot, out);
      return;
    case ExprKind::kNegate: {
      const Expr& a = e.args.at(0);
      *out += '-';
      // "-5" would parse as a negative literal and "--" starts a comment.
      if (a.kind == ExprKind::kNegate || (a.kind == ExprKind::kLiteral && IsNumeric(a.literal))) {
        *out += '(';
        PrintExpr(a, kPrecOr, out);
        *out += ')';
      } else {
        PrintExpr(a, kPrecUnary, out);
      }
      return;
    }
    case ExprKind::kIsNull:
      PrintExpr(e.args.at(0), kPrecAdd, out);
      *out += e.negated ? " IS NOT NULL" : " IS NULL";
      return;
    case ExprKind::kIn:
      PrintExpr(e.args.at(0), kPrecAdd, out);
      *out += e.negated ? " NOT IN (" : " IN (";
      for (size_t i = 1; i < e.args.size(); ++i) {
        if (i > 1) *out += ", ";
        PrintExpr(e.args[i], kPrecOr, out);
      }
      *out += ')';
      return;
    case ExprKind::kBetween:
      PrintExpr(e.args.at(0), kPrecAdd, out);
      *out += e.negated ? " NOT BETWEEN " : " BETWEEN ";
      PrintExpr(e.args.at(1), kPrecAdd, out);
      *out += " AND ";
      PrintExpr(e.args.at(2), kPrecAdd, out);
      return;
    case ExprKind::kBinary: {
      int p = PrecOf(e);
      std::string sep = " " + std::string(BinaryOpName(e.op)) + " ";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i > 0) *out += sep;
        int child;
        if (p == kPrecOr || p == kPrecAnd)
          child = p + 1;  // n-ary: a nested chain keeps its parentheses
        else if (p == kPrecCompare)
          child = kPrecAdd;  // comparisons do not chain
        else
          child = i == 0 ? p : p + 1;  // left-associative
        PrintExpr(e.args[i], child, out);
      }
      return;
    }
  }
}

void PrintExpr(const Expr& e, int min_prec, std::string* out) {
  if (PrecOf(e) < min_prec) {
    *out += '(';
    PrintInner(e, out);
    *out += ')';
  } else {
    PrintInner(e, out);
  }
}

std::string DoubleQuoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string IfNotExists(bool b) { return b ? "IF NOT EXISTS " : ""; }
std::string IfExists(bool b) { return b ? "IF EXISTS " : ""; }

std::string JoinIdentifiers(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + QuoteIdentifier(names[i]);
  return out;
}

std::string FormatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

struct NodePrinter {
  std::string operator()(const CreateDatabaseStatement& s) const {
    return "CREATE DATABASE " + IfNotExists(s.if_not_exists) + ToSql(s.name);
  }
  std::string operator()(const DropDatabaseStatement& s) const {
    return "DROP DATABASE " + IfExists(s.if_exists) + ToSql(s.name);
  }
  std::string operator()(const ShowDatabasesStatement&) const { return "SHOW DATABASES"; }
  std::string operator()(const ShowTablesStatement& s) const {
    return s.database ? "SHOW TABLES FROM " + ToSql(*s.database) : "SHOW TABLES";
  }
  std::string operator()(const CreateTableStatement& s) const {
    if (!s.engine.empty()) {
      return "CREATE EXTERNAL TABLE " + IfNotExists(s.if_not_exists) + ToSql(s.table) +
             " ENGINE = " + "LANCE LOCATION " + QuoteString(s.location);
    }
    std::string out = "CREATE TABLE " + IfNotExists(s.if_not_exists) + ToSql(s.table) + " (";
    for (size_t i = 0; i < s.columns.size(); ++i) {
      const ColumnDef& c = s.columns[i];
      out += (i ? ", " : "") + QuoteIdentifier(c.name) + " " + c.type.ToString() + (c.not_null ? " NOT NULL" : "");
    }
    return out + ")";
  }
  std::string operator()(const DropTableStatement& s) const {
    return "DROP TABLE " + IfExists(s.if_exists) + ToSql(s.table);
  }
  std::string operator()(const InsertStatement& s) const {
    std::string out = "INSERT INTO " + ToSql(s.table);
    if (!s.columns.empty()) out += " (" + JoinIdentifiers(s.columns) + ")";
    out += " VALUES ";
    for (size_t r = 0; r < s.rows.size(); ++r) {
      out += r ? ", (" : "(";
      for (size_t i = 0; i < s.rows[r].size(); ++i) out += (i ? ", " : "") + ToSql(s.rows[r][i]);
      out += ")";
    }
    return out;
  }
  std::string operator()(const CopyStatement& s) const {
    std::string out = "COPY " + ToSql(s.table) + " FROM " + QuoteString(s.path);
    if (s.format) out += " WITH (FORMAT " + std::string(CopyFormatName(*s.format)) + ")";
    return out;
  }
  std::string operator()(const DeleteStatement& s) const {
    return "DELETE FROM " + ToSql(s.table) + (s.where ? " WHERE " + ToSql(*s.where) : "");
  }
  std::string operator()(const UpdateStatement& s) const {
    std::string out = "UPDATE " + ToSql(s.table) + " SET ";
    for (size_t i = 0; i < s.assignments.size(); ++i) {
      out += (i ? ", " : "") + QuoteIdentifier(s.assignments[i].column) + " = " + ToSql(s.assignments[i].value);
    }
    return out + (s.where ? " WHERE " + ToSql(*s.where) : "");
  }
  std::string operator()(const RefreshTableStatement& s) const { return "REFRESH TABLE " + ToSql(s.table); }
  std::string operator()(const CreateIndexStatement& s) const {
    std::string out = s.or_replace ? "CREATE OR REPLACE INDEX " : "CREATE INDEX ";
    out += IfNotExists(s.if_not_exists) + QuoteIdentifier(s.name) + " ON " + ToSql(s.table) + " (" +
           JoinIdentifiers(s.columns) + ") USING " + std::string(IndexMethodName(s.method));
    if (!s.properties.empty()) {
      out += " PROPERTIES (";
      for (size_t i = 0; i < s.properties.size(); ++i) {
        out += (i ? ", " : "") + DoubleQuoted(s.properties[i].key) + " = " + DoubleQuoted(s.properties[i].value);
      }
      out += ")";
    }
    return out;
  }
  std::string operator()(const DropIndexStatement& s) const {
    return "DROP INDEX " + IfExists(s.if_exists) + QuoteIdentifier(s.name) + " ON " + ToSql(s.table);
  }
  std::string operator()(const BuildIndexStatement& s) const {
    return "BUILD INDEX " + QuoteIdentifier(s.name) + " ON " + ToSql(s.table);
  }
  std::string operator()(const VacuumStatement& s) const {
    std::string out = "VACUUM " + ToSql(s.table);
    if (s.retain_versions) out += " RETAIN " + std::to_string(*s.retain_versions) + " VERSIONS";
    if (s.older_than) out += " OLDER THAN " + QuoteString(*s.older_than);
    return out;
  }
  std::string operator()(const ShowIndexStatement& s) const { return "SHOW INDEX FROM " + ToSql(s.table); }
  std::string operator()(const ShowIndexJobsStatement& s) const {
    std::string out = "SHOW INDEX JOBS";
    if (s.database) out += " FROM " + ToSql(*s.database);
    if (s.where) out += " WHERE " + ToSql(*s.where);
    return out;
  }
  std::string operator()(const ShowIndexJobStatement& s) const { return "SHOW INDEX JOB " + std::to_string(s.job_id); }
  std::string operator()(const CancelIndexJobStatement& s) const {
    return "CANCEL INDEX JOB " + std::to_string(s.job_id);
  }
  std::string operator()(const ResolveIndexJobStatement& s) const {
    return "RESOLVE INDEX JOB " + std::to_string(s.job_id) + " AS " + std::string(ResolveActionName(s.action)) +
           (s.without_refresh ? " WITHOUT REFRESH" : "") + " COMMENT " + QuoteString(s.comment);
  }
  std::string operator()(const WaitIndexJobStatement& s) const {
    std::string out = "WAIT INDEX JOB " + std::to_string(s.job_id);
    if (s.timeout_seconds) out += " TIMEOUT " + FormatDouble(*s.timeout_seconds);
    return out;
  }
  std::string operator()(const SelectStatement& s) const { return s.text; }
  std::string operator()(const ExplainStatement& s) const {
    return std::string(s.analyze ? "EXPLAIN ANALYZE " : "EXPLAIN ") + s.select.text;
  }
  std::string operator()(const SetStatement& s) const {
    return "SET " + QuoteIdentifier(s.name) + " = " + (s.value ? ToSql(*s.value) : std::string("DEFAULT"));
  }
  std::string operator()(const PrepareStatement& s) const {
    return "PREPARE " + QuoteIdentifier(s.name) + " AS " + s.select.text;
  }
  std::string operator()(const ExecuteStatement& s) const {
    std::string out = "EXECUTE " + QuoteIdentifier(s.name);
    for (size_t i = 0; i < s.values.size(); ++i) {
      out += i == 0 ? " (" : ", ";
      out += std::visit([](const auto& v) { return BoundValueSql(v); }, s.values[i]);
    }
    return s.values.empty() ? out : out + ")";
  }
  std::string operator()(const DeallocateStatement& s) const {
    return "DEALLOCATE " + (s.name ? QuoteIdentifier(*s.name) : std::string("ALL"));
  }
  static std::string BoundValueSql(const Literal& l) { return ToSql(l); }
  static std::string BoundValueSql(const BlobLiteral& b) {
    static const char kHex[] = "0123456789ABCDEF";
    std::string out = "X'";
    for (unsigned char c : b.bytes) {
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    return out + "'";
  }
  std::string operator()(const CreateUserStatement& s) const {
    return "CREATE USER " + QuoteIdentifier(s.name) + (s.admin ? " ADMIN" : "");
  }
  std::string operator()(const DropUserStatement& s) const {
    return "DROP USER " + IfExists(s.if_exists) + QuoteIdentifier(s.name);
  }
  std::string operator()(const AlterUserStatement& s) const {
    return "ALTER USER " + QuoteIdentifier(s.name) + " " + std::string(AlterUserActionName(s.action));
  }
  std::string operator()(const GrantStatement& s) const {
    return std::string(s.revoke ? "REVOKE " : "GRANT ") + std::string(auth::PrivilegeName(s.privilege)) + " ON " +
           ToSql(s.object) + (s.revoke ? " FROM " : " TO ") + QuoteIdentifier(s.user);
  }
  std::string operator()(const ShowUsersStatement&) const { return "SHOW USERS"; }
  std::string operator()(const ShowNodesStatement&) const { return "SHOW NODES"; }
  std::string operator()(const ShowVersionsStatement& s) const {
    return "SHOW VERSIONS FROM " + ToSql(s.table) + (s.limit ? " LIMIT " + std::to_string(*s.limit) : "");
  }
  std::string operator()(const ShowGenerationsStatement& s) const { return "SHOW GENERATIONS FROM " + ToSql(s.table); }
  std::string operator()(const DrainNodeStatement& s) const {
    return std::string(s.drain ? "DRAIN" : "RESUME") + " NODE " + QuoteString(s.node_id);
  }
  std::string operator()(const ShowGrantsStatement& s) const {
    return s.user ? "SHOW GRANTS FOR " + QuoteIdentifier(*s.user) : "SHOW GRANTS";
  }
};

struct NodeNamer {
  std::string_view operator()(const CreateDatabaseStatement&) const { return "CREATE DATABASE"; }
  std::string_view operator()(const DropDatabaseStatement&) const { return "DROP DATABASE"; }
  std::string_view operator()(const ShowDatabasesStatement&) const { return "SHOW DATABASES"; }
  std::string_view operator()(const ShowTablesStatement&) const { return "SHOW TABLES"; }
  std::string_view operator()(const CreateTableStatement& s) const {
    return s.engine.empty() ? "CREATE TABLE" : "CREATE EXTERNAL TABLE";
  }
  std::string_view operator()(const DropTableStatement&) const { return "DROP TABLE"; }
  std::string_view operator()(const InsertStatement&) const { return "INSERT"; }
  std::string_view operator()(const CopyStatement&) const { return "COPY"; }
  std::string_view operator()(const DeleteStatement&) const { return "DELETE"; }
  std::string_view operator()(const UpdateStatement&) const { return "UPDATE"; }
  std::string_view operator()(const RefreshTableStatement&) const { return "REFRESH TABLE"; }
  std::string_view operator()(const CreateIndexStatement&) const { return "CREATE INDEX"; }
  std::string_view operator()(const DropIndexStatement&) const { return "DROP INDEX"; }
  std::string_view operator()(const BuildIndexStatement&) const { return "BUILD INDEX"; }
  std::string_view operator()(const VacuumStatement&) const { return "VACUUM"; }
  std::string_view operator()(const ShowIndexStatement&) const { return "SHOW INDEX"; }
  std::string_view operator()(const ShowIndexJobsStatement&) const { return "SHOW INDEX JOBS"; }
  std::string_view operator()(const ShowIndexJobStatement&) const { return "SHOW INDEX JOB"; }
  std::string_view operator()(const CancelIndexJobStatement&) const { return "CANCEL INDEX JOB"; }
  std::string_view operator()(const ResolveIndexJobStatement&) const { return "RESOLVE INDEX JOB"; }
  std::string_view operator()(const WaitIndexJobStatement&) const { return "WAIT INDEX JOB"; }
  std::string_view operator()(const SelectStatement&) const { return "SELECT"; }
  std::string_view operator()(const ExplainStatement&) const { return "EXPLAIN"; }
  std::string_view operator()(const SetStatement&) const { return "SET"; }
  std::string_view operator()(const PrepareStatement&) const { return "PREPARE"; }
  std::string_view operator()(const ExecuteStatement&) const { return "EXECUTE"; }
  std::string_view operator()(const DeallocateStatement&) const { return "DEALLOCATE"; }
  std::string_view operator()(const CreateUserStatement&) const { return "CREATE USER"; }
  std::string_view operator()(const DropUserStatement&) const { return "DROP USER"; }
  std::string_view operator()(const AlterUserStatement&) const { return "ALTER USER"; }
  std::string_view operator()(const GrantStatement& s) const { return s.revoke ? "REVOKE" : "GRANT"; }
  std::string_view operator()(const ShowUsersStatement&) const { return "SHOW USERS"; }
  std::string_view operator()(const ShowNodesStatement&) const { return "SHOW NODES"; }
  std::string_view operator()(const ShowVersionsStatement&) const { return "SHOW VERSIONS"; }
  std::string_view operator()(const ShowGenerationsStatement&) const { return "SHOW GENERATIONS"; }
  std::string_view operator()(const DrainNodeStatement& s) const { return s.drain ? "DRAIN NODE" : "RESUME NODE"; }
  std::string_view operator()(const ShowGrantsStatement&) const { return "SHOW GRANTS"; }
};

}  // namespace

Expr Expr::Lit(Literal l, SourcePos pos) {
  Expr e;
  e.kind = ExprKind::kLiteral;
  e.literal = std::move(l);
  e.pos = pos;
  return e;
}

Expr Expr::Column(std::string name, bool double_quoted, SourcePos pos) {
  Expr e;
  e.kind = ExprKind::kColumn;
  e.column = std::move(name);
  e.double_quoted = double_quoted;
  e.pos = pos;
  return e;
}

Expr Expr::Binary(BinaryOp op, std::vector<Expr> operands, SourcePos pos) {
  Expr e;
  e.kind = ExprKind::kBinary;
  e.op = op;
  e.args = std::move(operands);
  e.pos = pos;
  return e;
}

bool Expr::operator==(const Expr& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case ExprKind::kLiteral:
      return literal == o.literal;
    case ExprKind::kColumn:
      return column == o.column && double_quoted == o.double_quoted;
    case ExprKind::kBinary:
      if (op != o.op) return false;
      break;
    case ExprKind::kIsNull:
    case ExprKind::kIn:
    case ExprKind::kBetween:
      if (negated != o.negated) return false;
      break;
    default:
      break;
  }
  return args == o.args;
}

bool IsReservedWord(std::string_view word) {
  return std::any_of(std::begin(kReserved), std::end(kReserved),
                     [&](std::string_view r) { return internal::EqualsIgnoreCase(r, word); });
}

std::string QuoteIdentifier(std::string_view name) {
  bool bare = !name.empty() && internal::IsIdentStart(name[0]) &&
              std::all_of(name.begin(), name.end(), internal::IsIdentChar) && !IsReservedWord(name);
  if (bare) return std::string(name);
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out += '`';
    out += c;
  }
  return out + "`";
}

std::string QuoteString(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string ToSql(const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::kNull:
      return "NULL";
    case Literal::Kind::kBool:
      return l.bool_value ? "TRUE" : "FALSE";
    case Literal::Kind::kInteger:
    case Literal::Kind::kDecimal:
    case Literal::Kind::kFloat:
      return l.text;
    case Literal::Kind::kString:
      return QuoteString(l.text);
    case Literal::Kind::kDate:
      return "DATE " + QuoteString(l.text);
    case Literal::Kind::kTimestamp:
      return "TIMESTAMP " + QuoteString(l.text);
  }
  return "NULL";
}

std::string ToSql(const Expr& e) {
  std::string out;
  PrintExpr(e, kPrecOr, &out);
  return out;
}

std::string ToSql(const TableRef& n) {
  std::string out;
  if (!n.catalog.empty()) out += QuoteIdentifier(n.catalog) + ".";
  if (!n.database.empty()) out += QuoteIdentifier(n.database) + ".";
  return out + QuoteIdentifier(n.table);
}

std::string ToSql(const DatabaseName& n) {
  return (n.catalog.empty() ? "" : QuoteIdentifier(n.catalog) + ".") + QuoteIdentifier(n.database);
}

std::string ToSql(const GrantObject& o) {
  if (o.global) return "*";
  std::string out = o.catalog.empty() ? "" : QuoteIdentifier(o.catalog) + ".";
  return out + QuoteIdentifier(o.database) + "." + (o.table.empty() ? "*" : QuoteIdentifier(o.table));
}

std::string ToSql(const StatementNode& node) { return std::visit(NodePrinter{}, node); }
std::string ToSql(const Statement& stmt) { return ToSql(stmt.node); }

std::string_view StatementName(const StatementNode& node) { return std::visit(NodeNamer{}, node); }

bool MayCommit(const StatementNode& node) {
  return !(std::holds_alternative<ShowDatabasesStatement>(node) || std::holds_alternative<ShowTablesStatement>(node) ||
           std::holds_alternative<ShowIndexStatement>(node) || std::holds_alternative<ShowIndexJobsStatement>(node) ||
           std::holds_alternative<ShowIndexJobStatement>(node) || std::holds_alternative<WaitIndexJobStatement>(node) ||
           std::holds_alternative<SelectStatement>(node) || std::holds_alternative<ExplainStatement>(node) ||
           std::holds_alternative<SetStatement>(node) || std::holds_alternative<PrepareStatement>(node) ||
           std::holds_alternative<ExecuteStatement>(node) || std::holds_alternative<DeallocateStatement>(node) ||
           std::holds_alternative<ShowUsersStatement>(node) || std::holds_alternative<ShowGrantsStatement>(node) ||
           std::holds_alternative<ShowNodesStatement>(node) || std::holds_alternative<ShowVersionsStatement>(node) ||
           std::holds_alternative<ShowGenerationsStatement>(node));
}

std::string_view CopyFormatName(CopyFormat f) {
  switch (f) {
    case CopyFormat::kCsv:
      return "csv";
    case CopyFormat::kJsonl:
      return "jsonl";
    case CopyFormat::kFvecs:
      return "fvecs";
    case CopyFormat::kNpy:
      return "npy";
  }
  return "csv";
}

std::string_view IndexMethodName(IndexMethod m) {
  switch (m) {
    case IndexMethod::kAnn:
      return "ANN";
    case IndexMethod::kBtree:
      return "BTREE";
    case IndexMethod::kBitmap:
      return "BITMAP";
    case IndexMethod::kFts:
      return "FTS";
  }
  return "BTREE";
}

std::string_view ResolveActionName(ResolveAction a) {
  return a == ResolveAction::kForceRelease ? "FORCE_RELEASE" : "ACKNOWLEDGED";
}

std::string_view AlterUserActionName(AlterUserAction a) {
  switch (a) {
    case AlterUserAction::kRotateToken:
      return "ROTATE TOKEN";
    case AlterUserAction::kDisable:
      return "DISABLE";
    case AlterUserAction::kEnable:
      return "ENABLE";
    case AlterUserAction::kSetAdmin:
      return "SET ADMIN";
    case AlterUserAction::kUnsetAdmin:
      return "UNSET ADMIN";
  }
  return "ROTATE TOKEN";
}

std::string_view BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kOr:
      return "OR";
    case BinaryOp::kAnd:
      return "AND";
    case BinaryOp::kEq:
      return "=";
    case BinaryOp::kNe:
      return "!=";
    case BinaryOp::kLt:
      return "<";
    case BinaryOp::kLe:
      return "<=";
    case BinaryOp::kGt:
      return ">";
    case BinaryOp::kGe:
      return ">=";
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kMod:
      return "%";
  }
  return "=";
}

}  // namespace vigil::sql

// The SQL syntax tree: Vigil's own statements as plain values, and SELECT kept
// as its raw text plus tokens for the SQLite path. Produced by the parser
// (parser.h), printed back to canonical SQL by ToSql. Nodes are values:
// immutable once parsed, safe to read from many threads.
//
// Literals keep their text: numbers as written (with a leading '-' when
// negative), strings unescaped. A vector such as '[0.1, 2, -3e-2]' is a plain
// string literal; the executor coerces it by the target column's type
// (ParseTextValue in ingest/ingest.h), as it does for every literal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "vigil/auth/principal.h"
#include "vigil/storage/schema.h"

namespace vigil::sql {

// A place in the source text: byte offset, 1-based line and 1-based column
// (columns count UTF-8 code points; a tab is one column).
struct SourcePos {
  size_t offset = 0;
  uint32_t line = 1;
  uint32_t column = 1;
  bool operator==(const SourcePos&) const = default;
};

enum class TokenKind : uint8_t {
  kEnd,               // end of input (or of a statement)
  kWord,              // bare word: keyword or identifier, [A-Za-z_][A-Za-z0-9_]*
  kQuotedIdentifier,  // "..." or `...`
  kString,            // '...'
  kBlob,              // X'0A1B'
  kInteger,           // 123 or 0x1F
  kDecimal,           // 1.5, .5, 5.
  kFloat,             // 1e-3, 2.5E+10
  kParameter,         // ?, ?3, :name, @name, $name
  kOperator,          // punctuation and operators: ( ) , . ; = == != <> < <= > >= + - * / % || -> ->> & | ~ << >>
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;   // exactly as in the source (quotes included)
  std::string value;  // quoted kinds: content with doubled quotes undone; others: same as text
  SourcePos pos;      // of the first byte
  bool operator==(const Token&) const = default;
};

// A table as a statement writes it: `[catalog.]db.table`, or a bare table name; empty parts
// were not written. Execution resolves it against the session into a vigil::TableName.
struct TableRef {
  std::string catalog;
  std::string database;
  std::string table;
  bool operator==(const TableRef&) const = default;
};

// `[catalog.]db`; an empty catalog was not written.
struct DatabaseName {
  std::string catalog;
  std::string database;
  bool operator==(const DatabaseName&) const = default;
};

struct Literal {
  enum class Kind : uint8_t { kNull, kBool, kInteger, kDecimal, kFloat, kString, kDate, kTimestamp };
  Kind kind = Kind::kNull;
  // Numbers: digits as written, '-' first when negative ("-12", "0.50", "1e-3").
  // kString: the unescaped content. kDate/kTimestamp: the quoted content,
  // validated at parse time. Empty for kNull and kBool.
  std::string text;
  bool bool_value = false;  // kBool

  static Literal Null() { return Literal{}; }
  static Literal Bool(bool v) { return Literal{Kind::kBool, "", v}; }
  static Literal Number(Kind kind, std::string text) { return Literal{kind, std::move(text), false}; }
  static Literal String(std::string s) { return Literal{Kind::kString, std::move(s), false}; }
  bool operator==(const Literal&) const = default;
};

enum class ExprKind : uint8_t {
  kLiteral,
  kColumn,   // a column reference
  kNot,      // NOT a
  kNegate,   // -a
  kBinary,   // a op b; AND / OR are n-ary (two or more operands)
  kIsNull,   // a IS [NOT] NULL
  kIn,       // a [NOT] IN (b, c, ...)
  kBetween,  // a [NOT] BETWEEN lo AND hi
};

enum class BinaryOp : uint8_t { kOr, kAnd, kEq, kNe, kLt, kLe, kGt, kGe, kAdd, kSub, kMul, kDiv, kMod };

// A scalar expression, general enough for predicate pushdown: the executor
// walks `args`. Source positions are not part of equality.
struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  Literal literal;              // kLiteral
  std::string column;           // kColumn
  bool double_quoted = false;   // kColumn written "like this" (MySQL reads that as a string in SHOW ... WHERE)
  BinaryOp op = BinaryOp::kEq;  // kBinary
  bool negated = false;         // kIsNull (IS NOT NULL), kIn (NOT IN), kBetween (NOT BETWEEN)
  // kNot/kNegate/kIsNull: {operand}; kBinary: operands; kIn: {operand, item...};
  // kBetween: {operand, low, high}.
  std::vector<Expr> args;
  SourcePos pos;

  static Expr Lit(Literal l, SourcePos pos = {});
  static Expr Column(std::string name, bool double_quoted = false, SourcePos pos = {});
  static Expr Binary(BinaryOp op, std::vector<Expr> operands, SourcePos pos = {});
  bool operator==(const Expr& o) const;
};

struct ColumnDef {
  std::string name;
  DataType type;
  bool not_null = false;
  bool operator==(const ColumnDef&) const = default;
};

struct Assignment {
  std::string column;
  Expr value;
  bool operator==(const Assignment&) const = default;
};

struct Property {
  std::string key;
  std::string value;
  bool operator==(const Property&) const = default;
};

enum class CopyFormat : uint8_t { kCsv, kJsonl, kFvecs, kNpy };
enum class IndexMethod : uint8_t { kAnn, kBtree, kBitmap, kFts };
enum class ResolveAction : uint8_t { kAcknowledged, kForceRelease };

struct CreateDatabaseStatement {
  DatabaseName name;
  bool if_not_exists = false;
  bool operator==(const CreateDatabaseStatement&) const = default;
};
struct DropDatabaseStatement {
  DatabaseName name;
  bool if_exists = false;
  bool operator==(const DropDatabaseStatement&) const = default;
};
struct ShowDatabasesStatement {
  bool operator==(const ShowDatabasesStatement&) const = default;
};
struct ShowTablesStatement {
  std::optional<DatabaseName> database;
  bool operator==(const ShowTablesStatement&) const = default;
};
// CREATE TABLE t (columns), or CREATE EXTERNAL TABLE t ENGINE = lance LOCATION '...':
// a dataset another engine owns, registered by reference (no columns: they are read
// from the dataset).
struct CreateTableStatement {
  TableRef table;
  bool if_not_exists = false;
  std::vector<ColumnDef> columns;  // at least one; none for an external table
  std::string engine;              // "lance" for an external table; empty: Vigil's own
  std::string location;            // an external table's dataset
  bool operator==(const CreateTableStatement&) const = default;
};
struct DropTableStatement {
  TableRef table;
  bool if_exists = false;
  bool operator==(const DropTableStatement&) const = default;
};
// Every row has as many values as `columns` (or as the first row when no
// column list was written).
struct InsertStatement {
  TableRef table;
  std::vector<std::string> columns;  // empty: all columns in schema order
  std::vector<std::vector<Literal>> rows;
  bool operator==(const InsertStatement&) const = default;
};
struct CopyStatement {
  TableRef table;
  std::string path;
  std::optional<CopyFormat> format;  // empty: from the file extension
  bool operator==(const CopyStatement&) const = default;
};
struct DeleteStatement {
  TableRef table;
  std::optional<Expr> where;  // empty: every row
  bool operator==(const DeleteStatement&) const = default;
};
struct UpdateStatement {
  TableRef table;
  std::vector<Assignment> assignments;
  std::optional<Expr> where;
  bool operator==(const UpdateStatement&) const = default;
};
struct RefreshTableStatement {
  TableRef table;
  bool operator==(const RefreshTableStatement&) const = default;
};
// IF NOT EXISTS and OR REPLACE never both hold (a parse error).
struct CreateIndexStatement {
  std::string name;
  TableRef table;
  std::vector<std::string> columns;
  IndexMethod method = IndexMethod::kBtree;
  std::vector<Property> properties;  // as written; keys unique case-insensitively
  bool if_not_exists = false;
  bool or_replace = false;
  bool operator==(const CreateIndexStatement&) const = default;
};
struct DropIndexStatement {
  std::string name;
  TableRef table;
  bool if_exists = false;
  bool operator==(const DropIndexStatement&) const = default;
};
struct BuildIndexStatement {
  std::string name;
  TableRef table;
  bool operator==(const BuildIndexStatement&) const = default;
};
// At most one of retain_versions (>= 1) and older_than is set.
struct VacuumStatement {
  TableRef table;
  std::optional<int64_t> retain_versions;
  std::optional<std::string> older_than;  // the interval text, e.g. '7 days'
  bool operator==(const VacuumStatement&) const = default;
};
struct ShowIndexStatement {
  TableRef table;
  bool operator==(const ShowIndexStatement&) const = default;
};
// SHOW VERSIONS FROM table [LIMIT n]: the table's committed versions, oldest first (the
// newest n with LIMIT).
struct ShowVersionsStatement {
  TableRef table;
  std::optional<int64_t> limit;
  bool operator==(const ShowVersionsStatement&) const = default;
};
// SHOW GENERATIONS FROM table: the newest version and the older ones readers still hold.
struct ShowGenerationsStatement {
  TableRef table;
  bool operator==(const ShowGenerationsStatement&) const = default;
};
struct ShowIndexJobsStatement {
  std::optional<DatabaseName> database;
  std::optional<Expr> where;
  bool operator==(const ShowIndexJobsStatement&) const = default;
};
struct ShowIndexJobStatement {
  int64_t job_id = 0;  // > 0
  bool operator==(const ShowIndexJobStatement&) const = default;
};
struct CancelIndexJobStatement {
  int64_t job_id = 0;
  bool operator==(const CancelIndexJobStatement&) const = default;
};
// without_refresh only with kForceRelease.
struct ResolveIndexJobStatement {
  int64_t job_id = 0;
  ResolveAction action = ResolveAction::kAcknowledged;
  bool without_refresh = false;
  std::string comment;
  bool operator==(const ResolveIndexJobStatement&) const = default;
};
struct WaitIndexJobStatement {
  int64_t job_id = 0;
  std::optional<double> timeout_seconds;  // finite, >= 0
  bool operator==(const WaitIndexJobStatement&) const = default;
};
// SELECT (or WITH ...) is not parsed: `text` is the statement's source span,
// from its first token to its last, and `tokens` its tokens with positions in
// the original input (token.pos.offset - text_offset indexes `text`).
// Equality compares the text only.
struct SelectStatement {
  std::string text;
  size_t text_offset = 0;
  std::vector<Token> tokens;
  bool operator==(const SelectStatement& o) const { return text == o.text; }
};
struct ExplainStatement {
  bool analyze = false;
  SelectStatement select;
  bool operator==(const ExplainStatement&) const = default;
};
// SET name {= | TO} {literal | DEFAULT}: a session setting (the Session checks the
// name and the value).
struct SetStatement {
  std::string name;
  std::optional<Literal> value;  // empty: DEFAULT
  bool operator==(const SetStatement&) const = default;
};
// PREPARE name AS select: a SELECT / WITH kept by the session under `name`, with
// parameters written ?, ?N or $N (PostgreSQL's); EXECUTE runs it with values bound.
struct PrepareStatement {
  std::string name;
  SelectStatement select;
  bool operator==(const PrepareStatement&) const = default;
};
// A value of EXECUTE's list: a literal, or a blob written X'hex' (a FLOAT32 vector's
// little-endian bytes, for example).
struct BlobLiteral {
  std::string bytes;
  bool operator==(const BlobLiteral&) const = default;
};
using BoundValue = std::variant<Literal, BlobLiteral>;
// EXECUTE name [(value, ...)]: one value per parameter, in parameter order.
struct ExecuteStatement {
  std::string name;
  std::vector<BoundValue> values;
  bool operator==(const ExecuteStatement&) const = default;
};
// DEALLOCATE [PREPARE] {name | ALL}.
struct DeallocateStatement {
  std::optional<std::string> name;  // empty: ALL
  bool operator==(const DeallocateStatement&) const = default;
};

// ---- Users, tokens and grants (realm "default" of the root's principal store) ----

// CREATE USER name [ADMIN]: the result shows the user's first bearer token, once.
struct CreateUserStatement {
  std::string name;
  bool admin = false;
  bool operator==(const CreateUserStatement&) const = default;
};
struct DropUserStatement {
  std::string name;
  bool if_exists = false;
  bool operator==(const DropUserStatement&) const = default;
};
enum class AlterUserAction : uint8_t {
  kRotateToken,  // ROTATE TOKEN: a new token (shown once); older ones are revoked
  kDisable,      // DISABLE: no token of the user authenticates
  kEnable,       // ENABLE
  kSetAdmin,     // SET ADMIN: the administrator flag (global ADMIN)
  kUnsetAdmin,   // UNSET ADMIN
};
struct AlterUserStatement {
  std::string name;
  AlterUserAction action = AlterUserAction::kRotateToken;
  bool operator==(const AlterUserStatement&) const = default;
};
// The object of GRANT / REVOKE as written: `*` (every object), `[catalog.]db.*` (a
// database) or `[catalog.]db.table`. The executor fills in the session's catalog.
struct GrantObject {
  bool global = false;  // `*`; nothing else is set
  std::string catalog;  // empty: not written
  std::string database;
  std::string table;  // empty: `db.*`
  bool operator==(const GrantObject&) const = default;
};
// GRANT privilege ON object TO user, or REVOKE privilege ON object FROM user when `revoke`.
struct GrantStatement {
  bool revoke = false;
  auth::Privilege privilege = auth::Privilege::kShow;
  GrantObject object;
  std::string user;
  bool operator==(const GrantStatement&) const = default;
};
struct ShowUsersStatement {
  bool operator==(const ShowUsersStatement&) const = default;
};
// SHOW NODES: the node registry of the root's metadata store, with the leader.
struct ShowNodesStatement {
  bool operator==(const ShowNodesStatement&) const = default;
};
// DRAIN NODE 'id' (it finishes its attempts, hands over the leader lease and takes no new
// work), or RESUME NODE 'id' when `!drain`.
struct DrainNodeStatement {
  std::string node_id;
  bool drain = true;
  bool operator==(const DrainNodeStatement&) const = default;
};
struct ShowGrantsStatement {
  std::optional<std::string> user;  // FOR user; empty: every user's grants
  bool operator==(const ShowGrantsStatement&) const = default;
};

using StatementNode = std::variant<
    CreateDatabaseStatement, DropDatabaseStatement, ShowDatabasesStatement, ShowTablesStatement, CreateTableStatement,
    DropTableStatement, InsertStatement, CopyStatement, DeleteStatement, UpdateStatement, RefreshTableStatement,
    CreateIndexStatement, DropIndexStatement, BuildIndexStatement, VacuumStatement, ShowIndexStatement,
    ShowIndexJobsStatement, ShowIndexJobStatement, CancelIndexJobStatement, ResolveIndexJobStatement,
    WaitIndexJobStatement, SelectStatement, ExplainStatement, SetStatement, PrepareStatement, ExecuteStatement,
    DeallocateStatement, CreateUserStatement, DropUserStatement, AlterUserStatement, GrantStatement, ShowUsersStatement,
    ShowGrantsStatement, ShowNodesStatement, DrainNodeStatement, ShowVersionsStatement, ShowGenerationsStatement>;

// One parsed statement and where it came from. Equality ignores the span.
struct Statement {
  StatementNode node;
  SourcePos pos;      // of its first token
  size_t length = 0;  // bytes from its first token to the end of its last
  bool operator==(const Statement& o) const { return node == o.node; }
};

// Canonical SQL, one line (unless a string literal holds a newline), no ';'.
// Parsing the result gives an equal statement, and printing that gives the same text.
std::string ToSql(const Statement& stmt);
std::string ToSql(const StatementNode& node);
std::string ToSql(const Expr& expr);
std::string ToSql(const Literal& literal);
std::string ToSql(const TableRef& name);
std::string ToSql(const DatabaseName& name);
std::string ToSql(const GrantObject& object);

// `name` as written when it is a bare identifier that is not reserved,
// otherwise in backquotes with inner backquotes doubled.
std::string QuoteIdentifier(std::string_view name);
// 'text' with inner quotes doubled.
std::string QuoteString(std::string_view text);
// Whether a bare word is reserved (must be quoted to be an identifier); case-insensitive.
bool IsReservedWord(std::string_view word);

// Upper-case statement name for messages and the shell: "CREATE TABLE", "SHOW INDEX JOBS", "SELECT", ...
std::string_view StatementName(const StatementNode& node);
// Whether running the statement may commit something that outlives the session: data, a
// schema, a job, a user or a grant. SHOW, SELECT, EXPLAIN, WAIT, SET and the prepared-statement
// statements never do.
bool MayCommit(const StatementNode& node);
std::string_view CopyFormatName(CopyFormat f);            // "csv", "jsonl", "fvecs", "npy"
std::string_view IndexMethodName(IndexMethod m);          // "ANN", "BTREE", "BITMAP", "FTS"
std::string_view ResolveActionName(ResolveAction a);      // "ACKNOWLEDGED", "FORCE_RELEASE"
std::string_view AlterUserActionName(AlterUserAction a);  // "ROTATE TOKEN", "DISABLE", ..., "UNSET ADMIN"
std::string_view BinaryOpName(BinaryOp op);               // "OR", "AND", "=", "!=", "<", ..., "%"

}  // namespace vigil::sql

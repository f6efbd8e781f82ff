// Parser methods: cREATE, DROP and SHOW of databases, tables and indexes.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "sql/parser/parser_internal.h"

namespace vigil::sql::internal {

Status Parser::ParseCreate(StatementNode* out) {
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
  if (AcceptWord("EXTERNAL")) {
    VIGIL_RETURN_IF_ERROR(ExpectWord("TABLE"));
    return ParseCreateExternalTable(out);
  }
  if (AcceptWord("INDEX")) return ParseCreateIndex(false, out);
  if (AcceptWord("USER")) {
    CreateUserStatement s;
    VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &s.name));
    s.admin = AcceptWord("ADMIN");
    *out = std::move(s);
    return Status::OK();
  }
  return Expected("DATABASE, TABLE, EXTERNAL TABLE, INDEX, USER or OR REPLACE");
}

Status Parser::ParseCreateExternalTable(StatementNode* out) {
  CreateTableStatement s;
  VIGIL_RETURN_IF_ERROR(ParseIfNotExists(&s.if_not_exists));
  VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
  VIGIL_RETURN_IF_ERROR(ExpectWord("ENGINE"));
  VIGIL_RETURN_IF_ERROR(ExpectOp("="));
  const Token& engine = Peek();
  if (engine.kind != TokenKind::kWord || ToUpperAscii(engine.text) != "LANCE") return Expected("engine name LANCE");
  Take();
  s.engine = "lance";
  VIGIL_RETURN_IF_ERROR(ExpectWord("LOCATION"));
  VIGIL_RETURN_IF_ERROR(ParseStringToken("location string", &s.location));
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseCreateTable(StatementNode* out) {
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

Status Parser::ParseType(DataType* out) {
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

bool Parser::IsDecimalDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Status Parser::ParseCreateIndex(bool or_replace, StatementNode* out) {
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
  if (PeekWord("ANN"))
    s.method = IndexMethod::kAnn;
  else if (PeekWord("BTREE"))
    s.method = IndexMethod::kBtree;
  else if (PeekWord("BITMAP"))
    s.method = IndexMethod::kBitmap;
  else if (PeekWord("FTS"))
    s.method = IndexMethod::kFts;
  else
    return Fail(m.pos, "expected ANN, BTREE, BITMAP or FTS, found " + DescribeToken(m));
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

Status Parser::ParsePropertyString(std::string_view what, std::string* out) {
  const Token& t = Peek();
  if (t.kind == TokenKind::kString || (t.kind == TokenKind::kQuotedIdentifier && t.text[0] == '"')) {
    *out = t.value;
    Take();
    return Status::OK();
  }
  return Expected(std::string(what) + " in quotes");
}

Status Parser::ParseDrop(StatementNode* out) {
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

Status Parser::ParseShow(StatementNode* out) {
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
  if (AcceptWord("VERSIONS")) {
    ShowVersionsStatement s;
    if (!AcceptWord("FROM") && !AcceptWord("IN")) return Expected("FROM");
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    if (AcceptWord("LIMIT")) {
      s.limit.emplace();
      VIGIL_RETURN_IF_ERROR(ParsePositiveInt("LIMIT", &*s.limit));
    }
    *out = std::move(s);
    return Status::OK();
  }
  if (AcceptWord("GENERATIONS")) {
    ShowGenerationsStatement s;
    if (!AcceptWord("FROM") && !AcceptWord("IN")) return Expected("FROM");
    VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
    *out = std::move(s);
    return Status::OK();
  }
  if (AcceptWord("NODES")) {
    *out = ShowNodesStatement{};
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
    return Expected("DATABASES, TABLES, INDEX, INDEXES, KEYS, VERSIONS, GENERATIONS, USERS, GRANTS or NODES");
  }
  if (!AcceptWord("FROM") && !AcceptWord("IN")) return Expected("FROM");
  ShowIndexStatement s;
  VIGIL_RETURN_IF_ERROR(ParseTableName(&s.table));
  *out = std::move(s);
  return Status::OK();
}

}  // namespace vigil::sql::internal

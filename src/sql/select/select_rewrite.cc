#include "sql/select/select_rewrite.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "sql/parser/lexer.h"
#include "vigil/storage/temporal.h"

namespace vigil::sql::internal {

namespace {

constexpr size_t kMaxPrefilterValues = 32;

// Words that end a FROM item (so they are never an implicit alias).
const std::set<std::string>& ClauseWords() {
  static const std::set<std::string> kWords = {
      "WHERE", "JOIN",    "INNER", "LEFT",   "RIGHT",  "FULL",   "CROSS", "NATURAL", "ON",
      "USING", "GROUP",   "ORDER", "LIMIT",  "HAVING", "WINDOW", "UNION", "EXCEPT",  "INTERSECT",
      "OUTER", "INDEXED", "NOT",   "SELECT", "FROM",   "OFFSET", "AS",    "VALUES",  "RETURNING"};
  return kWords;
}

// Words that end a WHERE clause at its level.
bool EndsWhere(const Token& t) {
  static const std::set<std::string> kWords = {"GROUP",  "HAVING", "ORDER",  "LIMIT",
                                               "WINDOW", "UNION",  "EXCEPT", "INTERSECT"};
  return t.kind == TokenKind::kWord && kWords.count(ToUpperAscii(t.text)) > 0;
}

bool IsWord(const Token& t, std::string_view w) { return t.kind == TokenKind::kWord && EqualsIgnoreCase(t.text, w); }
bool IsOp(const Token& t, std::string_view op) { return t.kind == TokenKind::kOperator && t.text == op; }
bool IsName(const Token& t) { return t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdentifier; }

Status ErrorAt(const Token& t, const std::string& message) {
  return Status::InvalidArgument("line " + std::to_string(t.pos.line) + ", column " + std::to_string(t.pos.column) +
                                 ": " + message);
}

std::string QuoteSqlString(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string QuoteSqlIdent(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Where each token lies in the statement text: [begin, end) byte offsets.
using Extent = std::pair<size_t, size_t>;

// ?N or $N: a parameter with its number.
bool IsNumberedParameter(const Token& t) {
  return t.kind == TokenKind::kParameter && t.text.size() > 1 && (t.text[0] == '?' || t.text[0] == '$') &&
         t.text.find_first_not_of("0123456789", 1) == std::string::npos;
}

// Typed literals to integers, bare '?' to numbered parameters and $N to ?N; `extents` gets the
// source extent of each resulting token (relative to the text at `text_offset`).
Status NormalizeTokens(std::vector<Token>* tokens, size_t text_offset, std::vector<Extent>* extents) {
  std::vector<Token> out;
  auto extent_of = [&](const Token& t) {
    size_t b = t.pos.offset >= text_offset ? t.pos.offset - text_offset : 0;
    return Extent{b, b + t.text.size()};
  };
  int64_t max_param = 0;
  for (size_t i = 0; i < tokens->size(); ++i) {
    Token t = (*tokens)[i];
    Extent extent = extent_of(t);
    bool typed = t.kind == TokenKind::kWord && (IsWord(t, "TIMESTAMP") || IsWord(t, "DATE")) &&
                 i + 1 < tokens->size() && (*tokens)[i + 1].kind == TokenKind::kString;
    if (typed) {
      const std::string& text = (*tokens)[i + 1].value;
      Result<int64_t> v = IsWord(t, "DATE") ? ParseDateValue(text) : ParseTimestampValue(text);
      if (!v.ok()) return ErrorAt(t, "invalid " + ToUpperAscii(t.text) + " literal '" + text + "'");
      t.kind = TokenKind::kInteger;
      t.text = t.value = std::to_string(*v);
      extent.second = extent_of((*tokens)[i + 1]).second;
      ++i;
    } else if (IsNumberedParameter(t)) {
      t.text[0] = '?';  // PostgreSQL's $N is SQLite's ?N
      t.value = t.text;
      int64_t n = 0;
      for (char c : t.text.substr(1)) n = std::min<int64_t>(n * 10 + (c - '0'), 1'000'000);  // SQLite rejects big ones
      max_param = std::max(max_param, n);
    } else if (t.kind == TokenKind::kParameter && t.text == "?") {
      t.text = t.value = "?" + std::to_string(++max_param);
    }
    out.push_back(std::move(t));
    extents->push_back(extent);
  }
  *tokens = std::move(out);
  return Status::OK();
}

struct FunctionRef {
  VtabKind kind = VtabKind::kVectorSearch;
  vigil::TableName name;
  SchemaPtr schema;
  size_t begin = 0, end = 0;  // the call's tokens [name, ')']
  size_t depth = 0;
  std::vector<std::pair<size_t, size_t>> args;  // token ranges
  std::string alias;
  std::string func;  // "vector_search" / "fts_search"
};

class Rewriter {
 public:
  Rewriter(std::vector<Token> tokens, std::vector<Extent> extents, const std::string& text, const SchemaLookup& schema)
      : t_(std::move(tokens)), extents_(std::move(extents)), text_(text), schema_(schema) {
    depth_.resize(t_.size() + 1, 0);
    size_t d = 0;
    for (size_t i = 0; i < t_.size(); ++i) {
      if (IsOp(t_[i], ")") && d > 0) --d;
      depth_[i] = d;
      if (IsOp(t_[i], "(")) ++d;
    }
  }

  Result<RewriteResult> Run() {
    VIGIL_RETURN_IF_ERROR(FindTables());
    for (auto& f : functions_) VIGIL_RETURN_IF_ERROR(RewriteFunction(&f));
    RewriteResult r;
    size_t prev_end = t_.empty() ? 0 : extents_[0].first;
    for (size_t i = 0; i < t_.size(); ++i) {
      r.sql += Gap(prev_end, i);
      auto it = replace_.find(i);
      if (it != replace_.end()) {
        r.sql += it->second.second;
        i = it->second.first - 1;
      } else {
        r.sql += t_[i].text;
      }
      prev_end = extents_[i].second;
    }
    r.tables = tables_;
    r.notes = notes_;
    return r;
  }

 private:
  // The source between the previous token's end and token i (whitespace, comments), or
  // one space when the text does not hold the tokens.
  std::string Gap(size_t prev_end, size_t i) const {
    if (i == 0) return "";
    size_t b = extents_[i].first;
    if (b < prev_end || b > text_.size()) return " ";
    return text_.substr(prev_end, b - prev_end);
  }

  std::string Text(size_t begin, size_t end) const {
    std::string s;
    for (size_t i = begin; i < end; ++i) s += (i > begin ? Gap(extents_[i - 1].second, i) : "") + t_[i].text;
    return s;
  }

  void AddTable(VtabKind kind, const vigil::TableName& name) {
    RewriteTable rt{kind, name};
    if (std::find(tables_.begin(), tables_.end(), rt) == tables_.end()) tables_.push_back(rt);
  }

  // Whether token i starts a FROM item (after FROM / JOIN, or a ',' in a FROM clause).
  Status FindTables() {
    std::vector<std::string> clause(t_.size() + 2, "");
    for (size_t i = 0; i < t_.size(); ++i) {
      const Token& tok = t_[i];
      size_t d = depth_[i];
      bool table_pos = false;
      if (i > 0 && depth_[i - 1] == d) {
        const Token& prev = t_[i - 1];
        table_pos = IsWord(prev, "FROM") || IsWord(prev, "JOIN") ||
                    (IsOp(prev, ",") && (clause[d] == "FROM" || clause[d] == "ON" || clause[d] == "USING"));
      }
      if (tok.kind == TokenKind::kWord) {
        std::string up = ToUpperAscii(tok.text);
        if (up == "SELECT" || up == "FROM" || up == "WHERE" || up == "GROUP" || up == "HAVING" || up == "ORDER" ||
            up == "LIMIT" || up == "ON" || up == "USING" || up == "WINDOW") {
          clause[d] = up;
        }
      }
      if (IsOp(tok, "(")) clause[d + 1] = "";
      if (!table_pos || !IsName(tok)) continue;
      VIGIL_ASSIGN_OR_RETURN(size_t next, TableItem(i));
      i = next - 1;
    }
    return Status::OK();
  }

  // Alias written after the item ending before `at`: (alias, tokens it spans).
  std::pair<std::string, size_t> AliasAt(size_t at) const {
    if (at < t_.size() && IsWord(t_[at], "AS") && at + 1 < t_.size() && IsName(t_[at + 1])) {
      return {t_[at + 1].value, 2};
    }
    if (at < t_.size() && IsName(t_[at]) &&
        !(t_[at].kind == TokenKind::kWord && ClauseWords().count(ToUpperAscii(t_[at].text)))) {
      return {t_[at].value, 1};
    }
    return {"", 0};
  }

  // A FROM item starting at i; returns the index after what it consumed.
  Result<size_t> TableItem(size_t i) {
    if (i + 1 < t_.size() && IsOp(t_[i + 1], "(")) return FunctionItem(i);
    if (!(i + 2 < t_.size() && IsOp(t_[i + 1], ".") && IsName(t_[i + 2]))) return i + 1;  // CTE, metadata table
    std::vector<std::string> parts{t_[i].value, t_[i + 2].value};
    size_t end = i + 3;
    if (end + 1 < t_.size() && IsOp(t_[end], ".") && IsName(t_[end + 1])) {
      parts.push_back(t_[end + 1].value);
      end += 2;
    }
    vigil::TableName name;
    if (parts.size() == 3) name.catalog = parts[0];
    name.db = parts[parts.size() - 2];
    name.table = parts.back();
    VIGIL_RETURN_IF_ERROR(schema_(name).status());
    AddTable(VtabKind::kTable, name);
    std::string text = QuoteSqlIdent(VtabName(VtabKind::kTable, name));
    if (AliasAt(end).second == 0) text += " AS " + QuoteSqlIdent(name.table);
    replace_[i] = {end, text};
    return end;
  }

  Result<size_t> FunctionItem(size_t i) {
    std::string fn = ToUpperAscii(t_[i].text);
    if (fn != "VECTOR_SEARCH" && fn != "FTS_SEARCH") return i + 1;
    FunctionRef f;
    f.kind = fn == "VECTOR_SEARCH" ? VtabKind::kVectorSearch : VtabKind::kFtsSearch;
    f.func = fn == "VECTOR_SEARCH" ? "vector_search" : "fts_search";
    f.begin = i;
    f.depth = depth_[i];
    size_t j = i + 2;
    size_t arg_begin = j;
    for (; j < t_.size(); ++j) {
      if (depth_[j] == f.depth && IsOp(t_[j], ")")) break;
      if (depth_[j] == f.depth + 1 && IsOp(t_[j], ",")) {
        f.args.emplace_back(arg_begin, j);
        arg_begin = j + 1;
      }
    }
    if (j >= t_.size()) return ErrorAt(t_[i], "unterminated " + f.func + "(...)");
    if (arg_begin < j) f.args.emplace_back(arg_begin, j);
    f.end = j + 1;
    const size_t max_args = f.kind == VtabKind::kVectorSearch ? 5 : 4;
    if (f.args.size() < 4 || f.args.size() > max_args) {
      return ErrorAt(t_[i], f.func + (f.kind == VtabKind::kVectorSearch
                                          ? "(table, column, query, k [, options]) takes 4 or 5 arguments"
                                          : "(table, column, query, k) takes 4 arguments"));
    }
    const auto& table_arg = f.args[0];
    if (table_arg.second != table_arg.first + 1 || t_[table_arg.first].kind != TokenKind::kString) {
      return ErrorAt(t_[table_arg.first], f.func + "'s first argument must be a table name string such as 'db.table'");
    }
    auto name = vigil::ParseTableName(t_[table_arg.first].value);
    if (!name.ok()) return ErrorAt(t_[table_arg.first], name.status().message());
    f.name = *name;
    VIGIL_ASSIGN_OR_RETURN(f.schema, schema_(f.name));
    f.alias = AliasAt(f.end).first;
    AddTable(f.kind, f.name);
    functions_.push_back(f);
    return f.end;
  }

  // The WHERE range [begin, end) of the SELECT level holding `f`; empty when none.
  std::pair<size_t, size_t> WhereOf(const FunctionRef& f) const {
    size_t i = f.end;
    for (; i < t_.size(); ++i) {
      // A ')' at depth f.depth - 1 closes the enclosing subquery; ')' at f.depth closes a '(' of this level.
      if (depth_[i] < f.depth || (depth_[i] == f.depth && IsOp(t_[i], ";"))) return {0, 0};
      if (depth_[i] != f.depth) continue;
      if (EndsWhere(t_[i])) return {0, 0};
      if (IsWord(t_[i], "WHERE")) break;
    }
    if (i >= t_.size()) return {0, 0};
    size_t begin = i + 1, end = begin;
    for (; end < t_.size(); ++end) {
      if (depth_[end] < f.depth) break;
      if (depth_[end] == f.depth && (IsOp(t_[end], ";") || EndsWhere(t_[end]))) break;
    }
    return {begin, end};
  }

  std::vector<std::pair<size_t, size_t>> Conjuncts(size_t begin, size_t end, size_t depth) const {
    std::vector<std::pair<size_t, size_t>> out;
    int between = 0;
    size_t start = begin;
    for (size_t i = begin; i < end; ++i) {
      if (depth_[i] != depth) continue;
      if (IsWord(t_[i], "BETWEEN")) ++between;
      if (!IsWord(t_[i], "AND")) continue;
      if (between > 0) {
        --between;
        continue;
      }
      out.emplace_back(start, i);
      start = i + 1;
    }
    if (start < end) out.emplace_back(start, end);
    return out;
  }

  // A column reference at i: (column index or -1 for the score column, tokens spanned); nullopt otherwise.
  std::optional<std::pair<int, size_t>> ColumnAt(const FunctionRef& f, size_t i, size_t end) const {
    if (i >= end || !IsName(t_[i])) return std::nullopt;
    std::string qualifier, column = t_[i].value;
    size_t span = 1;
    if (i + 2 < end && IsOp(t_[i + 1], ".") && IsName(t_[i + 2])) {
      qualifier = t_[i].value;
      column = t_[i + 2].value;
      span = 3;
    } else if (i + 1 < end && IsOp(t_[i + 1], "(")) {
      return std::nullopt;  // a function name
    }
    if (i > 0 && IsOp(t_[i - 1], ".")) return std::nullopt;
    if (!qualifier.empty() && !EqualsIgnoreCase(qualifier, f.alias.empty() ? f.func : f.alias)) return std::nullopt;
    const char* score = f.kind == VtabKind::kVectorSearch ? "_distance" : "_score";
    if (EqualsIgnoreCase(column, score)) return std::make_pair(-1, span);
    auto idx = f.schema->IndexOf(column);
    if (!idx) {
      return std::nullopt;
    }
    return std::make_pair(static_cast<int>(*idx), span);
  }

  bool IsConstant(size_t i, size_t end, size_t* span) const {
    if (i >= end) return false;
    TokenKind k = t_[i].kind;
    if (k == TokenKind::kString || k == TokenKind::kInteger || k == TokenKind::kDecimal || k == TokenKind::kFloat ||
        k == TokenKind::kParameter || k == TokenKind::kBlob) {
      *span = 1;
      return true;
    }
    if ((IsOp(t_[i], "-") || IsOp(t_[i], "+")) && i + 1 < end &&
        (t_[i + 1].kind == TokenKind::kInteger || t_[i + 1].kind == TokenKind::kDecimal ||
         t_[i + 1].kind == TokenKind::kFloat)) {
      *span = 2;
      return true;
    }
    return false;
  }

  struct Pushed {
    int column = -1;
    std::string op;
    std::vector<std::pair<size_t, size_t>> values;
  };

  // Matches a pushable conjunct [b, e) on f's columns.
  std::optional<Pushed> MatchSimple(const FunctionRef& f, size_t b, size_t e) const {
    static const std::map<std::string, std::string> kFlip = {{"=", "="},   {"==", "="}, {"<", ">"},
                                                             {"<=", ">="}, {">", "<"},  {">=", "<="}};
    size_t cs = 0;
    auto col = ColumnAt(f, b, e);
    if (col) {
      size_t i = b + col->second;
      Pushed p{col->first, "", {}};
      if (i < e && t_[i].kind == TokenKind::kOperator && kFlip.count(t_[i].text) && IsConstant(i + 1, e, &cs) &&
          i + 1 + cs == e) {
        p.op = t_[i].text == "==" ? "=" : t_[i].text;
        p.values.emplace_back(i + 1, e);
        return p;
      }
      if (i + 1 < e && IsWord(t_[i], "IS") && IsWord(t_[i + 1], "NULL") && i + 2 == e) {
        p.op = "ISNULL";
        return p;
      }
      if (i < e && IsWord(t_[i], "BETWEEN") && IsConstant(i + 1, e, &cs)) {
        size_t lo_end = i + 1 + cs;
        size_t cs2 = 0;
        if (lo_end < e && IsWord(t_[lo_end], "AND") && IsConstant(lo_end + 1, e, &cs2) && lo_end + 1 + cs2 == e) {
          p.op = "BETWEEN";
          p.values = {{i + 1, lo_end}, {lo_end + 1, e}};
          return p;
        }
      }
      if (i + 1 < e && IsWord(t_[i], "IN") && IsOp(t_[i + 1], "(") && IsOp(t_[e - 1], ")")) {
        p.op = "IN";
        size_t j = i + 2;
        while (j < e - 1) {
          if (!IsConstant(j, e - 1, &cs)) return std::nullopt;
          p.values.emplace_back(j, j + cs);
          j += cs;
          if (j < e - 1 && !IsOp(t_[j], ",")) return std::nullopt;
          if (j < e - 1) ++j;
        }
        if (p.values.empty()) return std::nullopt;
        return p;
      }
      return std::nullopt;
    }
    if (!IsConstant(b, e, &cs) || b + cs >= e) return std::nullopt;
    size_t op = b + cs;
    if (t_[op].kind != TokenKind::kOperator || !kFlip.count(t_[op].text)) return std::nullopt;
    auto rhs = ColumnAt(f, op + 1, e);
    if (!rhs || op + 1 + rhs->second != e) return std::nullopt;
    return Pushed{rhs->first, kFlip.at(t_[op].text), {{b, op}}};
  }

  // Span of a column reference at i (name or qualifier.name), 0 when none.
  size_t NameSpan(size_t i, size_t e) const {
    if (i >= e || !IsName(t_[i])) return 0;
    if (i + 2 < e && IsOp(t_[i + 1], ".") && IsName(t_[i + 2])) return 3;
    return i + 1 < e && IsOp(t_[i + 1], "(") ? 0 : 1;
  }

  // `a OP b` comparing one of f's columns with a column of another FROM item: a join
  // condition, which SQLite applies to the top-k rows like an ON clause.
  bool IsJoinPredicate(const FunctionRef& f, size_t b, size_t e) const {
    size_t lhs = NameSpan(b, e);
    if (lhs == 0 || b + lhs >= e || t_[b + lhs].kind != TokenKind::kOperator) return false;
    static const std::set<std::string> kOps = {"=", "==", "<", "<=", ">", ">=", "!=", "<>"};
    if (!kOps.count(t_[b + lhs].text)) return false;
    size_t r = b + lhs + 1;
    size_t rhs = NameSpan(r, e);
    if (rhs == 0 || r + rhs != e) return false;
    auto a = ColumnAt(f, b, e);
    auto c = ColumnAt(f, r, e);
    return (a && a->first >= 0) != (c && c->first >= 0);
  }

  bool ReferencesTable(const FunctionRef& f, size_t b, size_t e) const {
    for (size_t i = b; i < e; ++i) {
      auto col = ColumnAt(f, i, e);
      if (col && col->first >= 0) return true;
      if (col) i += col->second - 1;
    }
    return false;
  }

  Status RewriteFunction(FunctionRef* f) {
    auto where = WhereOf(*f);
    nlohmann::json spec = nlohmann::json::array();
    std::vector<std::string> values;
    std::string described;
    for (const auto& [b, e] : Conjuncts(where.first, where.second, f->depth)) {
      if (!ReferencesTable(*f, b, e)) continue;
      if (IsJoinPredicate(*f, b, e)) {
        notes_.push_back(f->func + "(" + f->name.ToString() + "): join condition after top-k: " + Text(b, e));
        continue;
      }
      auto simple = MatchSimple(*f, b, e);
      if (f->kind == VtabKind::kFtsSearch) {
        return ErrorAt(t_[b],
                       "fts_search has no prefilter, and a WHERE predicate on its table's columns would "
                       "filter after top-k; filter its results in an outer query");
      }
      if (!simple || simple->column < 0) {
        return ErrorAt(t_[b],
                       "this WHERE predicate on vector_search's columns cannot be applied before top-k "
                       "(only column =, <, <=, >, >=, IN, BETWEEN with constants and IS NULL are); pass it "
                       "in the \"filter\" option, or filter the results in an outer query");
      }
      nlohmann::json item{{"c", f->schema->field(static_cast<size_t>(simple->column)).name}, {"o", simple->op}};
      nlohmann::json idx = nlohmann::json::array();
      for (const auto& v : simple->values) {
        if (values.size() >= kMaxPrefilterValues) {
          return ErrorAt(t_[b], "vector_search's prefilter holds at most 32 values; use the \"filter\" option");
        }
        idx.push_back(values.size());
        values.push_back(Text(v.first, v.second));
      }
      item["v"] = idx;
      spec.push_back(item);
      described += (described.empty() ? "" : " AND ") + Text(b, e);
    }
    std::string call = QuoteSqlIdent(VtabName(f->kind, f->name)) + "(";
    for (size_t a = 1; a < f->args.size(); ++a) call += (a > 1 ? ", " : "") + Text(f->args[a].first, f->args[a].second);
    if (f->kind == VtabKind::kVectorSearch) {
      if (f->args.size() == 4) call += ", NULL";
      call += ", " + (spec.empty() ? std::string("NULL") : QuoteSqlString(spec.dump()));
      for (const auto& v : values) call += ", " + v;
    }
    call += ")";
    if (f->alias.empty()) call += " AS " + f->func;
    replace_[f->begin] = {f->end, call};
    notes_.push_back(f->func + "(" + f->name.ToString() +
                     "): " + (described.empty() ? std::string("no prefilter") : "prefilter " + described));
    return Status::OK();
  }

  std::vector<Token> t_;
  std::vector<Extent> extents_;
  const std::string& text_;
  const SchemaLookup& schema_;
  std::vector<size_t> depth_;
  std::vector<FunctionRef> functions_;
  std::map<size_t, std::pair<size_t, std::string>> replace_;  // first token -> (end, text)
  std::vector<RewriteTable> tables_;
  std::vector<std::string> notes_;
};

}  // namespace

Result<RewriteResult> RewriteSelect(const SelectStatement& select, const SchemaLookup& schema) {
  std::vector<Token> t = select.tokens;
  std::vector<Extent> extents;
  VIGIL_RETURN_IF_ERROR(NormalizeTokens(&t, select.text_offset, &extents));
  return Rewriter(std::move(t), std::move(extents), select.text, schema).Run();
}

}  // namespace vigil::sql::internal

#include "sql/select/sql_lockdown.h"

#include <algorithm>
#include <string>
#include <utility>

namespace vigil::sql::internal {

namespace {

// The one allowlist of functions a user's SELECT may call. Each is a pure
// function of its arguments (or of the clock or a random source): none reads
// or writes files, loads code, reveals process addresses or connection state,
// or changes the connection. Their output sizes are bounded by
// kLimitLength. Anything SQLite offers beyond this list (load_extension,
// fts3_tokenizer, the FTS3/FTS5 and R*Tree helpers, sqlite_* introspection,
// changes()/last_insert_rowid(), subtype(), and whatever a newer SQLite adds) is
// refused.
// clang-format off
constexpr std::string_view kAllowedFunctions[] = {
    // JSON operators.
    "->", "->>",
    // Numbers.
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos",
    "cosh", "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power",
    "radians", "random", "round", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
    // Text and blobs.
    "char", "format", "glob", "hex", "instr", "length", "like", "lower", "ltrim", "printf",
    "quote", "randomblob", "replace", "rtrim", "soundex", "substr", "substring", "trim",
    "unicode", "upper", "zeroblob",
    // NULL handling, types and planner hints.
    "coalesce", "ifnull", "iif", "likelihood", "likely", "nullif", "typeof", "unlikely",
    // Dates and times.
    "current_date", "current_time", "current_timestamp", "date", "datetime", "julianday",
    "strftime", "time", "unixepoch",
    // JSON (text in, text out).
    "json", "json_array", "json_array_length", "json_extract", "json_group_array",
    "json_group_object", "json_insert", "json_object", "json_patch", "json_quote", "json_remove",
    "json_replace", "json_set", "json_type", "json_valid",
    // Aggregates (min and max are also scalar).
    "avg", "count", "group_concat", "max", "min", "sum", "total",
    // Window functions.
    "cume_dist", "dense_rank", "first_value", "lag", "last_value", "lead", "nth_value", "ntile",
    "percent_rank", "rank", "row_number",
};
// clang-format on

// Eponymous tables a user's SELECT may read: Vigil's table functions (SQLite
// authorizes a table-valued function as a read of its table) and json_each /
// json_tree, which only walk their JSON argument.
constexpr std::string_view kAllowedEponymousTables[] = {
    "json_each",        "json_tree",     "vigil_audit",   "vigil_index_entries",
    "vigil_index_jobs", "vigil_indexes", "vigil_orphans",
};

// Prefixes of the virtual tables the engine creates per Vigil table (VtabName):
// a Vigil table, its vector_search and its fts_search.
constexpr std::string_view kVigilTablePrefixes[] = {"vigil:", "vigil_vs:", "vigil_fts:"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::string ActionName(int action) {
  static constexpr std::pair<int, std::string_view> kNames[] = {
      {SQLITE_CREATE_INDEX, "CREATE INDEX"},
      {SQLITE_CREATE_TABLE, "CREATE TABLE"},
      {SQLITE_CREATE_TEMP_INDEX, "CREATE TEMP INDEX"},
      {SQLITE_CREATE_TEMP_TABLE, "CREATE TEMP TABLE"},
      {SQLITE_CREATE_TEMP_TRIGGER, "CREATE TEMP TRIGGER"},
      {SQLITE_CREATE_TEMP_VIEW, "CREATE TEMP VIEW"},
      {SQLITE_CREATE_TRIGGER, "CREATE TRIGGER"},
      {SQLITE_CREATE_VIEW, "CREATE VIEW"},
      {SQLITE_CREATE_VTABLE, "CREATE VIRTUAL TABLE"},
      {SQLITE_DELETE, "DELETE"},
      {SQLITE_DROP_INDEX, "DROP INDEX"},
      {SQLITE_DROP_TABLE, "DROP TABLE"},
      {SQLITE_DROP_TEMP_INDEX, "DROP TEMP INDEX"},
      {SQLITE_DROP_TEMP_TABLE, "DROP TEMP TABLE"},
      {SQLITE_DROP_TEMP_TRIGGER, "DROP TEMP TRIGGER"},
      {SQLITE_DROP_TEMP_VIEW, "DROP TEMP VIEW"},
      {SQLITE_DROP_TRIGGER, "DROP TRIGGER"},
      {SQLITE_DROP_VIEW, "DROP VIEW"},
      {SQLITE_DROP_VTABLE, "DROP VIRTUAL TABLE"},
      {SQLITE_INSERT, "INSERT"},
      {SQLITE_UPDATE, "UPDATE"},
      {SQLITE_PRAGMA, "PRAGMA"},
      {SQLITE_TRANSACTION, "a transaction"},
      {SQLITE_SAVEPOINT, "SAVEPOINT"},
      {SQLITE_ATTACH, "ATTACH"},
      {SQLITE_DETACH, "DETACH"},
      {SQLITE_ALTER_TABLE, "ALTER TABLE"},
      {SQLITE_REINDEX, "REINDEX"},
      {SQLITE_ANALYZE, "ANALYZE"},
  };
  for (const auto& [code, name] : kNames) {
    if (code == action) return std::string(name);
  }
  return "action " + std::to_string(action);
}

Status Internal(std::string what, int rc) {
  return Status::Internal("cannot lock down the SQL engine: " + what + ": " + sqlite3_errstr(rc));
}

}  // namespace

const std::vector<std::string_view>& AllowedFunctions() {
  static const std::vector<std::string_view> kSorted = [] {
    std::vector<std::string_view> v(std::begin(kAllowedFunctions), std::end(kAllowedFunctions));
    std::sort(v.begin(), v.end());
    return v;
  }();
  return kSorted;
}

bool IsAllowedFunction(std::string_view name) {
  const auto& all = AllowedFunctions();
  return std::binary_search(all.begin(), all.end(), std::string_view(Lower(name)));
}

bool IsAllowedTable(std::string_view name) {
  for (std::string_view prefix : kVigilTablePrefixes) {
    if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) return true;
  }
  const std::string lower = Lower(name);
  return std::find(std::begin(kAllowedEponymousTables), std::end(kAllowedEponymousTables), lower) !=
         std::end(kAllowedEponymousTables);
}

Status Lockdown::Install(sqlite3* db) {
  // {option, wanted}: each is read back, so a library that ignores one fails here.
  static constexpr std::pair<int, int> kFlags[] = {
      {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0},
      {SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0},
      {SQLITE_DBCONFIG_DEFENSIVE, 1},
      {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
      {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
      {SQLITE_DBCONFIG_ENABLE_VIEW, 0},
      {SQLITE_DBCONFIG_WRITABLE_SCHEMA, 0},
  };
  for (const auto& [option, wanted] : kFlags) {
    int now = -1;
    int rc = sqlite3_db_config(db, option, wanted, &now);
    if (rc != SQLITE_OK) return Internal("sqlite3_db_config(" + std::to_string(option) + ")", rc);
    if (now != wanted) {
      return Internal("sqlite3_db_config(" + std::to_string(option) + ") did not apply", SQLITE_MISUSE);
    }
  }
  int rc = sqlite3_enable_load_extension(db, 0);
  if (rc != SQLITE_OK) return Internal("sqlite3_enable_load_extension", rc);

  static constexpr std::pair<int, int> kLimits[] = {
      {SQLITE_LIMIT_LENGTH, kLimitLength},
      {SQLITE_LIMIT_SQL_LENGTH, kLimitSqlLength},
      {SQLITE_LIMIT_EXPR_DEPTH, kLimitExprDepth},
      {SQLITE_LIMIT_COMPOUND_SELECT, kLimitCompoundSelect},
      {SQLITE_LIMIT_LIKE_PATTERN_LENGTH, kLimitLikePatternLength},
      {SQLITE_LIMIT_VARIABLE_NUMBER, kLimitVariableNumber},
      {SQLITE_LIMIT_ATTACHED, 0},
  };
  for (const auto& [limit, value] : kLimits) {
    sqlite3_limit(db, limit, value);
    if (sqlite3_limit(db, limit, -1) != value) {
      return Internal("sqlite3_limit(" + std::to_string(limit) + ") did not apply", SQLITE_MISUSE);
    }
  }

  rc = sqlite3_set_authorizer(db, &Lockdown::Authorize, this);
  if (rc != SQLITE_OK) return Internal("sqlite3_set_authorizer", rc);

  ConnectEponymousTables(db);
  return Status::OK();
}

// SQLite writes the schema when a statement first names an eponymous virtual table
// (json_each, pragma_*, dbstat, Vigil's table functions). Connecting every one here
// keeps those writes out of user statements, whose refusal then names the table.
void Lockdown::ConnectEponymousTables(sqlite3* db) {
  InternalScope internal(this);
  std::vector<std::string> names;
  for (const char* list : {"SELECT name FROM pragma_module_list", "SELECT 'pragma_' || name FROM pragma_pragma_list"}) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, list, -1, &stmt, nullptr) == SQLITE_OK) {
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
      }
    }
    sqlite3_finalize(stmt);
  }
  for (const std::string& name : names) {
    sqlite_tables_.insert(Lower(name));
    std::string sql = "SELECT * FROM \"" + name + "\"";
    sqlite3_stmt* stmt = nullptr;
    // Preparing connects the table; many fail afterwards (a module that is not eponymous,
    // a table function without its argument), which changes nothing.
    sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
    sqlite3_finalize(stmt);
  }
}

bool Lockdown::IsSqliteTable(const std::string& name) const {
  const std::string lower = Lower(name);
  return lower.rfind("sqlite_", 0) == 0 || lower.rfind("pragma_", 0) == 0 || sqlite_tables_.count(lower) > 0;
}

int Lockdown::Deny(Status status) {
  if (on_deny_) on_deny_(status);
  return SQLITE_DENY;
}

int Lockdown::Authorize(void* self, int action, const char* a3, const char* a4, const char* db, const char*) {
  auto* l = static_cast<Lockdown*>(self);
  if (l->internal_) return SQLITE_OK;
  const std::string arg3 = a3 ? a3 : "";
  const std::string arg4 = a4 ? a4 : "";
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_READ:
      // Without a database the read is of a common table expression, or a count(*) of any
      // table; the connection's only other tables are SQLite's and its modules'.
      if (IsAllowedTable(arg3) || (db == nullptr && !l->IsSqliteTable(arg3))) return SQLITE_OK;
      return l->Deny(Status::PermissionDenied("table " + arg3 + " is not allowed in Vigil SQL"));
    case SQLITE_FUNCTION:
      if (IsAllowedFunction(arg4)) return SQLITE_OK;
      return l->Deny(Status::PermissionDenied("function " + arg4 + " is not allowed in Vigil SQL"));
    case SQLITE_PRAGMA:
      return l->Deny(Status::PermissionDenied("PRAGMA " + arg3 + " is not allowed in Vigil SQL"));
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
      if (arg3 == "sqlite_master" || arg3 == "sqlite_temp_master") {
        // Also how SQLite first connects an eponymous table that Install did not.
        return l->Deny(
            Status::PermissionDenied("SQLite's schema and tables are not allowed in Vigil SQL: "
                                     "only Vigil's tables and table functions are"));
      }
      return l->Deny(Status::PermissionDenied(ActionName(action) + " on " + arg3 +
                                              " is not allowed in Vigil SQL: only SELECT runs here"));
    default:
      return l->Deny(
          Status::PermissionDenied(ActionName(action) + " is not allowed in Vigil SQL: only SELECT runs here"));
  }
}

}  // namespace vigil::sql::internal

// The locked-down SQLite connection behind SELECT. Install() turns off what an
// untrusted statement could abuse (extension loading, the two-argument
// fts3_tokenizer, triggers, views, ATTACH, writable schema; the schema is
// untrusted and the connection defensive), bounds lengths, depths and counts,
// and installs an authorizer that admits only SELECT, reads of Vigil's virtual
// tables and table functions, and calls of an allowlist of functions. The
// engine's own statements (CREATE/DROP of its virtual tables) run inside an
// InternalScope. Refusals are PermissionDenied and name what was refused.
// Thread safety: one thread at a time (the engine's connection).
#pragma once

#include <sqlite3.h>

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"

namespace vigil::sql::internal {

// Connection limits (sqlite3_limit) of the SELECT engine.
constexpr int kLimitLength = 64 << 20;    // bytes of one string or blob value
constexpr int kLimitSqlLength = 4 << 20;  // bytes of rewritten SQL (statements are <= 1 MiB)
constexpr int kLimitExprDepth = 256;
constexpr int kLimitCompoundSelect = 64;
constexpr int kLimitLikePatternLength = 256;  // LIKE / GLOB cost grows with the pattern
constexpr int kLimitVariableNumber = 999;

// Functions a user's SELECT may call, lower case and sorted.
const std::vector<std::string_view>& AllowedFunctions();
// Whether `name` (case-insensitive) is on AllowedFunctions().
bool IsAllowedFunction(std::string_view name);
// Whether a user's SELECT may read the table (virtual table or table-valued function) `name`.
bool IsAllowedTable(std::string_view name);

class Lockdown {
 public:
  // `on_deny` receives the typed refusal of each denied action of a user statement.
  explicit Lockdown(std::function<void(const Status&)> on_deny) : on_deny_(std::move(on_deny)) {}

  // Applies the connection flags, limits and the authorizer to `db` (which must not
  // outlive this object), then connects every eponymous table once (a first connection
  // writes the schema, which user statements may not). Internal on failure.
  Status Install(sqlite3* db);

  // While alive, every action is authorized: the engine's own statements.
  class InternalScope {
   public:
    explicit InternalScope(Lockdown* l) : l_(l), saved_(l->internal_) { l_->internal_ = true; }
    ~InternalScope() { l_->internal_ = saved_; }
    InternalScope(const InternalScope&) = delete;
    InternalScope& operator=(const InternalScope&) = delete;

   private:
    Lockdown* l_;
    bool saved_;
  };

 private:
  static int Authorize(void* self, int action, const char* a3, const char* a4, const char* db, const char* inner);
  int Deny(Status status);
  void ConnectEponymousTables(sqlite3* db);
  // Whether `name` may be one of SQLite's own tables: sqlite_*, pragma_*, a module's.
  bool IsSqliteTable(const std::string& name) const;

  std::function<void(const Status&)> on_deny_;
  bool internal_ = false;
  std::set<std::string> sqlite_tables_;  // module names, lower case (ConnectEponymousTables)
};

}  // namespace vigil::sql::internal

// The SQL access layer under every metadata record: a Database (a pool of
// connections to one SQLite file or one PostgreSQL database), Connections that
// run parameterized statements and return typed rows, explicit Transactions,
// grouped durable writes, and a per-database DialectProfile for the few
// places where SQLite and PostgreSQL differ.
//
// SQL text uses `$1`, `$2`, ... placeholders on both backends. Statements are
// prepared once per connection and cached by their text.
//
// Thread safety: Database is thread-safe. A Connection, PooledConnection or
// Transaction is used by one thread at a time. Value and Row are plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "vigil/common/env.h"
#include "vigil/common/status.h"

namespace vigil::meta {

enum class Dialect { kSqlite, kPostgres };

// The dialect differences that portable code needs to know about. Everything
// else (ON CONFLICT, RETURNING, partial indexes, LIMIT) is written once.
struct DialectProfile {
  Dialect dialect;
  std::string_view name;         // "sqlite" or "postgresql"
  std::string_view begin_read;   // starts a read transaction
  std::string_view begin_write;  // starts a write transaction (SQLite takes the write lock at once)
  std::string_view lock_rows;    // suffix of a SELECT that locks the rows it reads ("" on SQLite)
  // Statement serializing concurrent migration runs inside a write transaction ("" on SQLite,
  // where BEGIN IMMEDIATE already does).
  std::string_view migration_lock;
  // Query with one parameter, a table name, returning one row with its count (0 or 1) in the
  // current schema.
  std::string_view table_exists;
};

const DialectProfile& ProfileFor(Dialect dialect);

// One SQL value: NULL, a 64-bit integer, a double or text.
class Value {
 public:
  Value() = default;                                 // NULL
  Value(std::nullptr_t) {}                           // NOLINT
  Value(int v) : v_(static_cast<int64_t>(v)) {}      // NOLINT
  Value(int64_t v) : v_(v) {}                        // NOLINT
  Value(double v) : v_(v) {}                         // NOLINT
  Value(std::string v) : v_(std::move(v)) {}         // NOLINT
  Value(std::string_view v) : v_(std::string(v)) {}  // NOLINT
  Value(const char* v) : v_(std::string(v)) {}       // NOLINT
  Value(const std::optional<int64_t>& v) {           // NOLINT
    if (v) v_ = *v;
  }
  Value(const std::optional<std::string>& v) {  // NOLINT
    if (v) v_ = *v;
  }

  bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_real() const { return std::holds_alternative<double>(v_); }
  bool is_text() const { return std::holds_alternative<std::string>(v_); }
  int64_t int_value() const { return std::get<int64_t>(v_); }
  double real_value() const { return std::get<double>(v_); }
  const std::string& text_value() const { return std::get<std::string>(v_); }
  // SQL-literal-like rendering for messages ("NULL", 42, 'abc').
  std::string DebugString() const;

  bool operator==(const Value& o) const { return v_ == o.v_; }

 private:
  std::variant<std::monostate, int64_t, double, std::string> v_;
};

using Params = std::vector<Value>;

// One result row. Accessors check the column index and type and fail with
// InvalidArgument (bad index) or Corruption (unexpected type or NULL).
class Row {
 public:
  Row() = default;
  explicit Row(std::vector<Value> values) : values_(std::move(values)) {}

  size_t size() const { return values_.size(); }
  const Value& at(size_t col) const { return values_.at(col); }
  bool IsNull(size_t col) const { return col < values_.size() && values_[col].is_null(); }

  Result<int64_t> Int(size_t col) const;
  Result<std::optional<int64_t>> OptInt(size_t col) const;
  Result<double> Real(size_t col) const;
  Result<std::string> Text(size_t col) const;
  Result<std::optional<std::string>> OptText(size_t col) const;

 private:
  Result<const Value*> Get(size_t col) const;
  std::vector<Value> values_;
};

// One session with the database. Error mapping on both backends: unique or
// primary-key violation -> AlreadyExists; lock not obtained within the busy
// timeout -> Busy; serialization failure or deadlock -> CommitConflict; lost
// connection or I/O failure -> IOError; disk full -> ResourceExhausted.
class Connection {
 public:
  virtual ~Connection() = default;

  virtual const DialectProfile& profile() const = 0;
  // Runs one statement with `params` bound to $1..$n (the count must match) and returns every
  // row it produced (a SELECT or a statement with RETURNING); empty for other statements.
  virtual Result<std::vector<Row>> Query(std::string_view sql, const Params& params = {}) = 0;
  // Runs one statement and returns the number of rows it inserted, updated or deleted.
  virtual Result<int64_t> Execute(std::string_view sql, const Params& params = {}) = 0;
  // Runs a script of ';'-separated statements without parameters (migrations, BEGIN/COMMIT).
  virtual Status ExecuteScript(std::string_view sql) = 0;
  // False once the session is known to be unusable (e.g. the server connection dropped);
  // the pool then discards it instead of reusing it.
  virtual bool healthy() const = 0;
  // Reads what the server sent an idle session without blocking; false when that shows the
  // session is gone (the server closed it). The pool asks before lending an idle session.
  virtual bool StillConnected() { return healthy(); }

  // Query expecting at most one row.
  Result<std::optional<Row>> QueryOptional(std::string_view sql, const Params& params = {});
};

class Database;

// A connection borrowed from a Database's pool; returned on destruction.
class PooledConnection {
 public:
  PooledConnection() = default;
  PooledConnection(Database* db, std::unique_ptr<Connection> conn) : db_(db), conn_(std::move(conn)) {}
  ~PooledConnection();
  PooledConnection(PooledConnection&& o) noexcept = default;
  PooledConnection& operator=(PooledConnection&& o) noexcept;

  Connection* get() const { return conn_.get(); }
  Connection* operator->() const { return conn_.get(); }
  Connection& operator*() const { return *conn_; }

 private:
  friend class Database;
  Database* db_ = nullptr;
  std::unique_ptr<Connection> conn_;
};

enum class TxnMode { kRead, kWrite };

// An open transaction on a pooled connection. Rolls back on destruction unless
// committed. After Commit or Rollback (successful or not) it is finished and
// its connection is back in the pool.
class Transaction {
 public:
  Transaction() = default;
  ~Transaction();
  Transaction(Transaction&& o) noexcept;
  Transaction& operator=(Transaction&& o) noexcept;

  // The connection to run statements on; valid until the transaction finishes.
  Connection& conn() const;
  // The database the transaction belongs to.
  Database* database() const { return db_; }
  bool active() const { return active_; }
  // Commits durably. On error the transaction is rolled back.
  Status Commit();
  Status Rollback();

 private:
  friend class Database;
  void Finish();
  Database* db_ = nullptr;
  PooledConnection conn_;
  bool active_ = false;
  bool holds_writer_ = false;  // holds the database's in-process writer slot
};

struct DatabaseOptions {
  int max_connections = 8;           // pool size (SQLite: readers and explicit transactions)
  int busy_timeout_ms = 5000;        // SQLite: wait for another process's write lock
  int acquire_timeout_ms = 30000;    // wait for a free pooled connection or writer slot; then Busy
  Env* env = Env::Default();         // the clock of that wait
  int max_group_commit_batch = 256;  // SQLite: most Write() calls folded into one commit
  // PostgreSQL: the server ends a session left idle inside a transaction this long, so a
  // process frozen mid-transaction (stopped, paused) cannot hold its row locks, such as the
  // leader lease's, forever; its own next statement then fails. 0: no bound.
  int idle_in_transaction_timeout_ms = 0;
};

// Atomicity a Write() callback needs.
enum class WriteScope {
  kWhole,         // every statement of the callback commits or none does
  kPerStatement,  // each statement is atomic on its own (the callback tolerates a partial run)
};

// A database opened from a URI:
//   sqlite:///abs/path/meta.db  or  sqlite://relative/path.db   (WAL, synchronous=FULL)
//   postgresql://... or postgres://...  or a libpq "key=value ..." conninfo string
class Database {
 public:
  virtual ~Database();

  static Result<std::unique_ptr<Database>> Open(const std::string& uri, const DatabaseOptions& options = {});

  const DialectProfile& profile() const { return *profile_; }
  const DatabaseOptions& options() const { return options_; }

  // Borrows a connection (autocommit mode); Busy when none frees up within acquire_timeout_ms.
  Result<PooledConnection> Acquire();
  // Opens a transaction. A kWrite transaction on SQLite also holds this database's writer slot,
  // so it serializes with Write() and other write transactions in this process without polling.
  // A pooled connection whose server went away while it sat idle (a restart) fails its BEGIN
  // with nothing run: the idle pool is dropped and a fresh connection tries once more.
  Result<Transaction> Begin(TxnMode mode);
  // Runs `fn` and makes its effects durable before returning OK. SQLite folds concurrent callers
  // into one transaction and one fsync (group commit), each callback inside its own savepoint so
  // a failing callback undoes only its own work. PostgreSQL runs `fn` on a pooled connection, in
  // a transaction for kWhole and in autocommit for kPerStatement (the server groups WAL flushes).
  // Returns fn's status, or the commit's error.
  Status Write(const std::function<Status(Connection&)>& fn, WriteScope scope = WriteScope::kWhole);

 protected:
  Database(const DialectProfile* profile, DatabaseOptions options);
  // Opens a new backend session.
  virtual Result<std::unique_ptr<Connection>> Connect() = 0;
  // Backend hook for Write(); the default runs on a pooled connection as described above.
  virtual Status DoWrite(const std::function<Status(Connection&)>& fn, WriteScope scope);
  // In-process writer slot (used by the SQLite backend); Busy on acquire timeout.
  Status AcquireWriterSlot();
  void ReleaseWriterSlot();
  virtual bool uses_writer_slot() const { return false; }

 private:
  friend class PooledConnection;
  friend class Transaction;
  void Return(std::unique_ptr<Connection> conn);
  // Closes every idle connection (they may all be as stale as one that failed).
  void DropIdle();
  // Acquire, then the BEGIN of `mode` on the connection.
  Result<PooledConnection> AcquireAndBegin(TxnMode mode);
  // Monotonic microseconds at which a pool wait started now gives up.
  int64_t AcquireDeadline() const;

  struct Pool;
  const DialectProfile* profile_;
  DatabaseOptions options_;
  std::unique_ptr<Pool> pool_;
};

// Parses a URI as Database::Open does; for the SQLite scheme returns the file path.
Result<std::pair<Dialect, std::string>> ParseDatabaseUri(const std::string& uri);

}  // namespace vigil::meta

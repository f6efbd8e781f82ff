#include "vigil/meta/database.h"

#include <chrono>
#include <condition_variable>

#include "meta/backends.h"
#include "vigil/common/mutex.h"

namespace vigil::meta {

const DialectProfile& ProfileFor(Dialect dialect) {
  return dialect == Dialect::kSqlite ? SqliteProfile() : PostgresProfile();
}

// ---- Value / Row ----

std::string Value::DebugString() const {
  if (is_null()) return "NULL";
  if (is_int()) return std::to_string(int_value());
  if (is_real()) return std::to_string(real_value());
  return "'" + text_value() + "'";
}

Result<const Value*> Row::Get(size_t col) const {
  if (col >= values_.size()) {
    return Status::InvalidArgument("column " + std::to_string(col) + " out of range (row has " +
                                   std::to_string(values_.size()) + ")");
  }
  return &values_[col];
}

Result<int64_t> Row::Int(size_t col) const {
  VIGIL_ASSIGN_OR_RETURN(const Value* v, Get(col));
  if (!v->is_int()) {
    return Status::Corruption("column " + std::to_string(col) + ": expected integer, got " + v->DebugString());
  }
  return v->int_value();
}

Result<std::optional<int64_t>> Row::OptInt(size_t col) const {
  VIGIL_ASSIGN_OR_RETURN(const Value* v, Get(col));
  if (v->is_null()) return std::optional<int64_t>();
  VIGIL_ASSIGN_OR_RETURN(int64_t i, Int(col));
  return std::optional<int64_t>(i);
}

Result<double> Row::Real(size_t col) const {
  VIGIL_ASSIGN_OR_RETURN(const Value* v, Get(col));
  if (v->is_real()) return v->real_value();
  if (v->is_int()) return static_cast<double>(v->int_value());
  return Status::Corruption("column " + std::to_string(col) + ": expected real, got " + v->DebugString());
}

Result<std::string> Row::Text(size_t col) const {
  VIGIL_ASSIGN_OR_RETURN(const Value* v, Get(col));
  if (!v->is_text()) {
    return Status::Corruption("column " + std::to_string(col) + ": expected text, got " + v->DebugString());
  }
  return v->text_value();
}

Result<std::optional<std::string>> Row::OptText(size_t col) const {
  VIGIL_ASSIGN_OR_RETURN(const Value* v, Get(col));
  if (v->is_null()) return std::optional<std::string>();
  VIGIL_ASSIGN_OR_RETURN(std::string s, Text(col));
  return std::optional<std::string>(std::move(s));
}

Result<std::optional<Row>> Connection::QueryOptional(std::string_view sql, const Params& params) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<Row> rows, Query(sql, params));
  if (rows.size() > 1) {
    return Status::Internal("expected at most one row, got " + std::to_string(rows.size()));
  }
  if (rows.empty()) return std::optional<Row>();
  return std::optional<Row>(std::move(rows[0]));
}

// ---- Pool ----

struct Database::Pool {
  // Waits on cv, `lock` holding mu, until notified (true) or until `deadline_micros` on `env`'s
  // monotonic clock (false).
  bool WaitUntil(MutexLock& lock, Env* env, int64_t deadline_micros) VIGIL_REQUIRES(mu);

  Mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<Connection>> idle VIGIL_GUARDED_BY(mu);
  int open VIGIL_GUARDED_BY(mu) = 0;  // idle + borrowed
  bool writer_taken VIGIL_GUARDED_BY(mu) = false;
};

Database::Database(const DialectProfile* profile, DatabaseOptions options)
    : profile_(profile), options_(options), pool_(std::make_unique<Pool>()) {
  if (options_.max_connections < 1) options_.max_connections = 1;
}

Database::~Database() {
  MutexLock lock(&pool_->mu);
  VIGIL_CHECK(pool_->idle.size() == static_cast<size_t>(pool_->open) &&
              "Database destroyed while connections are borrowed");
}

int64_t Database::AcquireDeadline() const {
  return options_.env->MonotonicMicros() + int64_t{options_.acquire_timeout_ms} * 1000;
}

bool Database::Pool::WaitUntil(MutexLock& lock, Env* env, int64_t deadline_micros) {
  const int64_t left = deadline_micros - env->MonotonicMicros();
  if (left <= 0) return false;
  return lock.WaitFor(cv, std::chrono::microseconds(left));
}

Result<PooledConnection> Database::Acquire() {
  const int64_t deadline = AcquireDeadline();
  {
    MutexLock lock(&pool_->mu);
    while (true) {
      if (!pool_->idle.empty()) {
        auto conn = std::move(pool_->idle.back());
        pool_->idle.pop_back();
        if (conn->StillConnected()) return PooledConnection(this, std::move(conn));
        --pool_->open;  // closed by the server while idle: dropped
        continue;
      }
      if (pool_->open < options_.max_connections) {
        ++pool_->open;
        break;  // connects below, without the lock
      }
      if (!pool_->WaitUntil(lock, options_.env, deadline) && pool_->idle.empty() &&
          pool_->open >= options_.max_connections) {
        return Status::Busy("no free " + std::string(profile_->name) + " connection within " +
                            std::to_string(options_.acquire_timeout_ms) + " ms");
      }
    }
  }
  auto conn = Connect();
  if (!conn.ok()) {
    MutexLock lock(&pool_->mu);
    --pool_->open;
    pool_->cv.notify_one();
    return conn.status();
  }
  return PooledConnection(this, std::move(conn).value());
}

void Database::Return(std::unique_ptr<Connection> conn) {
  MutexLock lock(&pool_->mu);
  if (conn->healthy()) {
    pool_->idle.push_back(std::move(conn));
  } else {
    --pool_->open;  // dropped; a later Acquire opens a fresh one
  }
  pool_->cv.notify_all();
}

Status Database::AcquireWriterSlot() {
  const int64_t deadline = AcquireDeadline();
  MutexLock lock(&pool_->mu);
  while (pool_->writer_taken) {
    if (!pool_->WaitUntil(lock, options_.env, deadline) && pool_->writer_taken) {
      return Status::Busy("writer slot not free within " + std::to_string(options_.acquire_timeout_ms) + " ms");
    }
  }
  pool_->writer_taken = true;
  return Status::OK();
}

void Database::ReleaseWriterSlot() {
  MutexLock lock(&pool_->mu);
  VIGIL_CHECK(pool_->writer_taken);
  pool_->writer_taken = false;
  pool_->cv.notify_all();
}

PooledConnection::~PooledConnection() {
  if (conn_) db_->Return(std::move(conn_));
}

PooledConnection& PooledConnection::operator=(PooledConnection&& o) noexcept {
  if (this != &o) {
    if (conn_) db_->Return(std::move(conn_));
    db_ = o.db_;
    conn_ = std::move(o.conn_);
  }
  return *this;
}

// ---- Transaction ----

void Database::DropIdle() {
  std::vector<std::unique_ptr<Connection>> stale;
  {
    MutexLock lock(&pool_->mu);
    stale.swap(pool_->idle);
    pool_->open -= static_cast<int>(stale.size());
    pool_->cv.notify_all();
  }
  // Closed outside the lock.
}

Result<PooledConnection> Database::AcquireAndBegin(TxnMode mode) {
  const std::string_view begin = mode == TxnMode::kWrite ? profile_->begin_write : profile_->begin_read;
  VIGIL_ASSIGN_OR_RETURN(PooledConnection conn, Acquire());
  Status st = conn->ExecuteScript(begin);
  if (!st.ok() && !conn->healthy()) {
    conn = PooledConnection();  // returned unhealthy: dropped
    DropIdle();
    VIGIL_ASSIGN_OR_RETURN(conn, Acquire());
    st = conn->ExecuteScript(begin);
  }
  if (!st.ok()) return st.WithContext("begin transaction");
  return conn;
}

Result<Transaction> Database::Begin(TxnMode mode) {
  bool writer = mode == TxnMode::kWrite && uses_writer_slot();
  if (writer) VIGIL_RETURN_IF_ERROR(AcquireWriterSlot());
  auto conn = AcquireAndBegin(mode);
  if (!conn.ok()) {
    if (writer) ReleaseWriterSlot();
    return conn.status();
  }
  Transaction txn;
  txn.db_ = this;
  txn.conn_ = std::move(conn).value();
  txn.active_ = true;
  txn.holds_writer_ = writer;
  return txn;
}

Transaction::~Transaction() {
  if (active_) (void)Rollback();
}

Transaction::Transaction(Transaction&& o) noexcept
    : db_(o.db_), conn_(std::move(o.conn_)), active_(o.active_), holds_writer_(o.holds_writer_) {
  o.active_ = false;
  o.holds_writer_ = false;
}

Transaction& Transaction::operator=(Transaction&& o) noexcept {
  if (this != &o) {
    if (active_) (void)Rollback();
    db_ = o.db_;
    conn_ = std::move(o.conn_);
    active_ = o.active_;
    holds_writer_ = o.holds_writer_;
    o.active_ = false;
    o.holds_writer_ = false;
  }
  return *this;
}

Connection& Transaction::conn() const {
  VIGIL_CHECK(active_);
  return *conn_;
}

void Transaction::Finish() {
  active_ = false;
  conn_ = PooledConnection();
  if (holds_writer_) {
    holds_writer_ = false;
    db_->ReleaseWriterSlot();
  }
}

Status Transaction::Commit() {
  if (!active_) return Status::FailedPrecondition("transaction is not active");
  Status st = conn_->ExecuteScript("COMMIT");
  if (!st.ok()) (void)conn_->ExecuteScript("ROLLBACK");
  Finish();
  return st.ok() ? st : st.WithContext("commit");
}

Status Transaction::Rollback() {
  if (!active_) return Status::FailedPrecondition("transaction is not active");
  Status st = conn_->ExecuteScript("ROLLBACK");
  Finish();
  return st.ok() ? st : st.WithContext("rollback");
}

// ---- Write ----

Status Database::Write(const std::function<Status(Connection&)>& fn, WriteScope scope) { return DoWrite(fn, scope); }

Status Database::DoWrite(const std::function<Status(Connection&)>& fn, WriteScope scope) {
  if (scope == WriteScope::kPerStatement) {
    VIGIL_ASSIGN_OR_RETURN(PooledConnection conn, Acquire());
    return fn(*conn);
  }
  VIGIL_ASSIGN_OR_RETURN(Transaction txn, Begin(TxnMode::kWrite));
  Status st = fn(txn.conn());
  if (!st.ok()) {
    (void)txn.Rollback();
    return st;
  }
  return txn.Commit();
}

// ---- URI ----

Result<std::pair<Dialect, std::string>> ParseDatabaseUri(const std::string& uri) {
  constexpr std::string_view kSqlite = "sqlite://";
  if (uri.rfind(kSqlite, 0) == 0) {
    std::string path = uri.substr(kSqlite.size());
    if (path.empty()) return Status::InvalidArgument("sqlite URI without a path: " + uri);
    return std::make_pair(Dialect::kSqlite, path);
  }
  if (uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0 || uri.find('=') != std::string::npos) {
    return std::make_pair(Dialect::kPostgres, uri);
  }
  return Status::InvalidArgument("unsupported database URI (want sqlite:// or postgresql://): " + uri);
}

Result<std::unique_ptr<Database>> Database::Open(const std::string& uri, const DatabaseOptions& options) {
  VIGIL_ASSIGN_OR_RETURN(auto parsed, ParseDatabaseUri(uri));
  std::unique_ptr<Database> db;
  if (parsed.first == Dialect::kSqlite) {
    db = NewSqliteDatabase(parsed.second, &SqliteProfile(), options);
  } else {
    db = NewPostgresDatabase(parsed.second, &PostgresProfile(), options);
  }
  // Open one session now so a bad path, conninfo or unreachable server fails here.
  VIGIL_ASSIGN_OR_RETURN(PooledConnection probe, db->Acquire());
  (void)probe;
  return db;
}

}  // namespace vigil::meta

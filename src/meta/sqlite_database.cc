// SQLite backend of meta::Database: one connection per pooled session plus a
// dedicated writer connection for group commit. WAL, synchronous=FULL.
#include <sqlite3.h>

#include <condition_variable>
#include <deque>
#include <unordered_map>

#include "meta/backends.h"
#include "vigil/common/mutex.h"
#include "vigil/common/sqlite_status.h"

namespace vigil::meta {

namespace {

Status SqliteError(sqlite3* db, int rc, std::string_view context) {
  int ext = db ? sqlite3_extended_errcode(db) : rc;
  std::string msg = std::string(context) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) + " (sqlite " +
                    std::to_string(ext) + ")";
  return SqliteStatus(rc, ext, std::move(msg));
}

std::string Snippet(std::string_view sql) { return std::string(sql.substr(0, 80)) + (sql.size() > 80 ? "..." : ""); }

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(sqlite3* db, const DialectProfile* profile) : db_(db), profile_(profile) {}
  ~SqliteConnection() override {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }

  const DialectProfile& profile() const override { return *profile_; }
  bool healthy() const override { return healthy_; }

  Result<std::vector<Row>> Query(std::string_view sql, const Params& params) override {
    int64_t changes = 0;
    return Run(sql, params, &changes);
  }

  Result<int64_t> Execute(std::string_view sql, const Params& params) override {
    int64_t changes = 0;
    VIGIL_ASSIGN_OR_RETURN(auto rows, Run(sql, params, &changes));
    (void)rows;
    return changes;
  }

  Status ExecuteScript(std::string_view sql) override {
    std::string text(sql);
    int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, Snippet(sql));
    return Status::OK();
  }

 private:
  Result<sqlite3_stmt*> Prepare(std::string_view sql) {
    auto it = cache_.find(std::string(sql));
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, "prepare " + Snippet(sql));
    if (stmt == nullptr) return Status::InvalidArgument("empty statement");
    if (tail != nullptr && std::string_view(tail).find_first_not_of(" \t\r\n;") != std::string_view::npos) {
      sqlite3_finalize(stmt);
      return Status::InvalidArgument("more than one statement: " + Snippet(sql));
    }
    cache_.emplace(std::string(sql), stmt);
    return stmt;
  }

  Status Bind(sqlite3_stmt* stmt, const Params& params, std::string_view sql) {
    int expected = sqlite3_bind_parameter_count(stmt);
    if (expected != static_cast<int>(params.size())) {
      return Status::InvalidArgument("statement takes " + std::to_string(expected) + " parameters, got " +
                                     std::to_string(params.size()) + ": " + Snippet(sql));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      std::string name(1, '$');
      name += std::to_string(i + 1);
      int idx = sqlite3_bind_parameter_index(stmt, name.c_str());
      if (idx == 0) return Status::InvalidArgument("statement has no " + name + ": " + Snippet(sql));
      const Value& v = params[i];
      int rc;
      if (v.is_null()) {
        rc = sqlite3_bind_null(stmt, idx);
      } else if (v.is_int()) {
        rc = sqlite3_bind_int64(stmt, idx, v.int_value());
      } else if (v.is_real()) {
        rc = sqlite3_bind_double(stmt, idx, v.real_value());
      } else {
        rc = sqlite3_bind_text64(stmt, idx, v.text_value().data(), v.text_value().size(), SQLITE_STATIC, SQLITE_UTF8);
      }
      if (rc != SQLITE_OK) return SqliteError(db_, rc, "bind " + name);
    }
    return Status::OK();
  }

  Result<std::vector<Row>> Run(std::string_view sql, const Params& params, int64_t* changes) {
    VIGIL_ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Prepare(sql));
    Status st = Bind(stmt, params, sql);
    std::vector<Row> rows;
    while (st.ok()) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        st = SqliteError(db_, rc, Snippet(sql));
        break;
      }
      int n = sqlite3_column_count(stmt);
      std::vector<Value> values;
      values.reserve(n);
      for (int c = 0; c < n; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER:
            values.emplace_back(static_cast<int64_t>(sqlite3_column_int64(stmt, c)));
            break;
          case SQLITE_FLOAT:
            values.emplace_back(sqlite3_column_double(stmt, c));
            break;
          case SQLITE_NULL:
            values.emplace_back();
            break;
          default: {
            const char* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            values.emplace_back(std::string(text, sqlite3_column_bytes(stmt, c)));
          }
        }
      }
      rows.emplace_back(std::move(values));
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (!st.ok()) return st;
    *changes = sqlite3_changes64(db_);
    return rows;
  }

  sqlite3* db_;
  const DialectProfile* profile_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
  bool healthy_ = true;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, const DialectProfile* profile, const DatabaseOptions& options)
      : Database(profile, options), path_(std::move(path)) {}

 protected:
  bool uses_writer_slot() const override { return true; }

  Result<std::unique_ptr<Connection>> Connect() override {
    sqlite3* db = nullptr;
    int rc =
        sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      Status st = SqliteError(db, rc, "open " + path_);
      sqlite3_close_v2(db);
      return st;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, options().busy_timeout_ms);
    auto conn = std::make_unique<SqliteConnection>(db, &profile());
    // journal_mode returns the mode now in effect; anything but WAL means it was refused.
    VIGIL_ASSIGN_OR_RETURN(auto rows, conn->Query("PRAGMA journal_mode=WAL", {}));
    if (rows.size() != 1 || !rows[0].at(0).is_text() || rows[0].at(0).text_value() != "wal") {
      return Status::IOError("open " + path_ + ": cannot enable WAL journal mode");
    }
    VIGIL_RETURN_IF_ERROR(conn->ExecuteScript("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;").WithContext(path_));
    return std::unique_ptr<Connection>(std::move(conn));
  }

  // Group commit: the first caller to find no leader becomes one, takes every queued callback,
  // runs them in one BEGIN IMMEDIATE transaction (one savepoint each) and commits once.
  Status DoWrite(const std::function<Status(Connection&)>& fn, WriteScope scope) override {
    PendingWrite me{&fn};
    std::vector<PendingWrite*> batch;
    {
      MutexLock lock(&gc_mu_);
      queue_.push_back(&me);
      lock.Wait(gc_cv_, [&]() VIGIL_REQUIRES(gc_mu_) { return me.done || !leader_active_; });
      if (me.done) return me.result;
      leader_active_ = true;
      size_t max_batch = static_cast<size_t>(std::max(1, options().max_group_commit_batch));
      bool have_me = false;
      while (!queue_.empty() && batch.size() < max_batch) {
        have_me |= queue_.front() == &me;
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
      if (!have_me) {
        queue_.erase(std::find(queue_.begin(), queue_.end(), &me));
        batch.push_back(&me);
      }
    }

    RunBatch(batch);

    MutexLock lock(&gc_mu_);
    for (PendingWrite* p : batch) p->done = true;
    leader_active_ = false;
    gc_cv_.notify_all();
    return me.result;
  }

 private:
  struct PendingWrite {
    const std::function<Status(Connection&)>* fn;
    Status result;
    bool done = false;  // guarded by the database's gc_mu_
  };

  static void FailAll(const std::vector<PendingWrite*>& batch, const Status& st) {
    for (PendingWrite* p : batch) p->result = st;
  }

  // Runs on the leader only; writer_ is touched by no one else.
  void RunBatch(const std::vector<PendingWrite*>& batch) {
    Status st = AcquireWriterSlot();
    if (!st.ok()) return FailAll(batch, st);
    if (!writer_ || !writer_->healthy()) {
      auto conn = Connect();
      if (!conn.ok()) {
        ReleaseWriterSlot();
        return FailAll(batch, conn.status());
      }
      writer_ = std::move(conn).value();
    }
    st = writer_->ExecuteScript(profile().begin_write);
    if (!st.ok()) {
      ReleaseWriterSlot();
      return FailAll(batch, st.WithContext("group commit begin"));
    }
    bool any_ok = false;
    bool aborted = false;
    for (PendingWrite* p : batch) {
      if (batch.size() == 1) {
        p->result = (*p->fn)(*writer_);
        any_ok = p->result.ok();
        break;
      }
      Status sp = writer_->ExecuteScript("SAVEPOINT vigil_write");
      if (!sp.ok()) {
        aborted = true;
        FailAll(batch, sp);
        break;
      }
      p->result = (*p->fn)(*writer_);
      sp = p->result.ok() ? writer_->ExecuteScript("RELEASE vigil_write")
                          : writer_->ExecuteScript("ROLLBACK TO vigil_write; RELEASE vigil_write");
      if (!sp.ok()) {
        // The transaction itself is gone (e.g. disk full); nothing of the batch survives.
        aborted = true;
        FailAll(batch, p->result.ok() ? sp : p->result);
        break;
      }
      any_ok |= p->result.ok();
    }
    if (!aborted && any_ok) {
      st = writer_->ExecuteScript("COMMIT");
      if (!st.ok()) {
        for (PendingWrite* p : batch) {
          if (p->result.ok()) p->result = st.WithContext("group commit");
        }
        aborted = true;
      }
    } else {
      aborted = true;
    }
    if (aborted) (void)writer_->ExecuteScript("ROLLBACK");  // fails harmlessly when none is open
    ReleaseWriterSlot();
  }

  const std::string path_;
  Mutex gc_mu_;
  std::condition_variable gc_cv_;
  std::deque<PendingWrite*> queue_ VIGIL_GUARDED_BY(gc_mu_);
  bool leader_active_ VIGIL_GUARDED_BY(gc_mu_) = false;
  std::unique_ptr<Connection> writer_;  // used only by the current group-commit leader
};

}  // namespace

const DialectProfile& SqliteProfile() {
  static constexpr DialectProfile kProfile{Dialect::kSqlite,
                                           "sqlite",
                                           "BEGIN",
                                           "BEGIN IMMEDIATE",
                                           "",
                                           "",
                                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1"};
  return kProfile;
}

std::unique_ptr<Database> NewSqliteDatabase(const std::string& path, const DialectProfile* profile,
                                            const DatabaseOptions& options) {
  return std::make_unique<SqliteDatabase>(path, profile, options);
}

}  // namespace vigil::meta

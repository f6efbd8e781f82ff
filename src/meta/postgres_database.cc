// PostgreSQL backend of meta::Database through libpq. Statements are prepared
// once per session (named by a per-session counter) and executed with the
// extended protocol; results are converted to typed Values by column type.
#include <libpq-fe.h>
#include <poll.h>

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "meta/backends.h"

namespace vigil::meta {

namespace {

// Column type OIDs from pg_type.h.
constexpr Oid kBoolOid = 16;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;
constexpr Oid kNumericOid = 1700;

std::string Snippet(std::string_view sql) { return std::string(sql.substr(0, 80)) + (sql.size() > 80 ? "..." : ""); }

// Maps a failed result (or a connection failure when res is null) onto a Status.
Status PgError(PGconn* conn, const PGresult* res, std::string_view context) {
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string msg = std::string(context) + ": ";
  const char* text = res ? PQresultErrorMessage(res) : PQerrorMessage(conn);
  msg += text && *text ? text : "unknown libpq error";
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  std::string_view s = state ? state : "";
  if (s.empty() || PQstatus(conn) != CONNECTION_OK) return Status::IOError(std::move(msg));
  if (s == "23505") return Status::AlreadyExists(std::move(msg));
  if (s == "40001" || s == "40P01") return Status::CommitConflict(std::move(msg));
  if (s == "55P03") return Status::Busy(std::move(msg));
  if (s == "57014") return Status::Cancelled(std::move(msg));
  if (s.substr(0, 2) == "08") return Status::IOError(std::move(msg));
  if (s.substr(0, 2) == "53") return Status::ResourceExhausted(std::move(msg));
  if (s.substr(0, 2) == "22" || s.substr(0, 2) == "23" || s.substr(0, 2) == "42") {
    return Status::InvalidArgument(std::move(msg));
  }
  if (s.substr(0, 2) == "XX") return Status::Corruption(std::move(msg));
  return Status::Internal(std::move(msg));
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

class PostgresConnection final : public Connection {
 public:
  PostgresConnection(PGconn* conn, const DialectProfile* profile) : conn_(conn), profile_(profile) {}
  ~PostgresConnection() override { PQfinish(conn_); }

  const DialectProfile& profile() const override { return *profile_; }
  bool healthy() const override { return PQstatus(conn_) == CONNECTION_OK; }
  bool StillConnected() override {
    // Anything an idle session received is a notice or the server's goodbye (a restart sends
    // "terminating connection" and closes): read until nothing is left, so a close shows as EOF.
    for (int i = 0; i < 4; ++i) {
      if (PQconsumeInput(conn_) != 1 || !healthy()) return false;
      pollfd p{PQsocket(conn_), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return true;
    }
    return healthy();
  }

  Result<std::vector<Row>> Query(std::string_view sql, const Params& params) override {
    VIGIL_ASSIGN_OR_RETURN(PgResult res, Run(sql, params));
    return Rows(res.get());
  }

  Result<int64_t> Execute(std::string_view sql, const Params& params) override {
    VIGIL_ASSIGN_OR_RETURN(PgResult res, Run(sql, params));
    const char* n = PQcmdTuples(res.get());
    return n && *n ? std::strtoll(n, nullptr, 10) : int64_t{0};
  }

  Status ExecuteScript(std::string_view sql) override {
    std::string text(sql);
    PgResult res(PQexec(conn_, text.c_str()));
    ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
      return PgError(conn_, res.get(), Snippet(sql));
    }
    return Status::OK();
  }

 private:
  Result<PgResult> Run(std::string_view sql, const Params& params) {
    std::string key(sql);
    auto it = prepared_.find(key);
    if (it == prepared_.end()) {
      std::string name = "vigil_s" + std::to_string(prepared_.size());
      PgResult prep(PQprepare(conn_, name.c_str(), key.c_str(), 0, nullptr));
      if (!prep || PQresultStatus(prep.get()) != PGRES_COMMAND_OK) {
        return PgError(conn_, prep.get(), "prepare " + Snippet(sql));
      }
      PgResult desc(PQdescribePrepared(conn_, name.c_str()));
      if (!desc || PQresultStatus(desc.get()) != PGRES_COMMAND_OK) {
        return PgError(conn_, desc.get(), "describe " + Snippet(sql));
      }
      it = prepared_.emplace(key, Prepared{name, PQnparams(desc.get())}).first;
    }
    const Prepared& p = it->second;
    if (p.nparams != static_cast<int>(params.size())) {
      return Status::InvalidArgument("statement takes " + std::to_string(p.nparams) + " parameters, got " +
                                     std::to_string(params.size()) + ": " + Snippet(sql));
    }
    std::vector<std::string> storage(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      const Value& v = params[i];
      if (v.is_null()) continue;
      if (v.is_int()) {
        storage[i] = std::to_string(v.int_value());
      } else if (v.is_real()) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.17g", v.real_value());
        storage[i] = buf;
      } else {
        if (v.text_value().find('\0') != std::string::npos) {
          return Status::InvalidArgument("text parameter $" + std::to_string(i + 1) + " contains a NUL byte");
        }
        values[i] = v.text_value().c_str();
        continue;
      }
      values[i] = storage[i].c_str();
    }
    PgResult res(
        PQexecPrepared(conn_, p.name.c_str(), static_cast<int>(params.size()), values.data(), nullptr, nullptr, 0));
    ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return PgError(conn_, res.get(), Snippet(sql));
    return res;
  }

  static Result<std::vector<Row>> Rows(const PGresult* res) {
    int nrows = PQntuples(res);
    int ncols = PQnfields(res);
    std::vector<Row> rows;
    rows.reserve(nrows);
    for (int r = 0; r < nrows; ++r) {
      std::vector<Value> values;
      values.reserve(ncols);
      for (int c = 0; c < ncols; ++c) {
        if (PQgetisnull(res, r, c)) {
          values.emplace_back();
          continue;
        }
        const char* text = PQgetvalue(res, r, c);
        switch (PQftype(res, c)) {
          case kInt2Oid:
          case kInt4Oid:
          case kInt8Oid:
            values.emplace_back(static_cast<int64_t>(std::strtoll(text, nullptr, 10)));
            break;
          case kFloat4Oid:
          case kFloat8Oid:
          case kNumericOid:
            values.emplace_back(std::strtod(text, nullptr));
            break;
          case kBoolOid:
            values.emplace_back(static_cast<int64_t>(text[0] == 't' ? 1 : 0));
            break;
          default:
            values.emplace_back(std::string(text, PQgetlength(res, r, c)));
        }
      }
      rows.emplace_back(std::move(values));
    }
    return rows;
  }

  struct Prepared {
    std::string name;
    int nparams;
  };
  PGconn* conn_;
  const DialectProfile* profile_;
  std::unordered_map<std::string, Prepared> prepared_;
};

void IgnoreNotice(void*, const char*) {}

class PostgresDatabase final : public Database {
 public:
  PostgresDatabase(std::string conninfo, const DialectProfile* profile, const DatabaseOptions& options)
      : Database(profile, options), conninfo_(std::move(conninfo)) {}

 protected:
  Result<std::unique_ptr<Connection>> Connect() override {
    PGconn* conn = PQconnectdb(conninfo_.c_str());
    if (conn == nullptr) return Status::ResourceExhausted("libpq: out of memory");
    if (PQstatus(conn) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(conn);
      PQfinish(conn);
      while (!msg.empty() && msg.back() == '\n') msg.pop_back();
      return Status::IOError("connect to postgresql: " + msg);
    }
    PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
    auto c = std::make_unique<PostgresConnection>(conn, &profile());
    VIGIL_RETURN_IF_ERROR(c->ExecuteScript("SET client_min_messages = warning"));
    if (options().idle_in_transaction_timeout_ms > 0) {
      VIGIL_RETURN_IF_ERROR(c->ExecuteScript("SET idle_in_transaction_session_timeout = " +
                                             std::to_string(options().idle_in_transaction_timeout_ms)));
    }
    return std::unique_ptr<Connection>(std::move(c));
  }

 private:
  const std::string conninfo_;
};

}  // namespace

const DialectProfile& PostgresProfile() {
  static constexpr DialectProfile kProfile{Dialect::kPostgres,
                                           "postgresql",
                                           "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY",
                                           "BEGIN ISOLATION LEVEL READ COMMITTED",
                                           " FOR UPDATE",
                                           "SELECT pg_advisory_xact_lock(7424011)",
                                           "SELECT count(*) FROM pg_catalog.pg_tables"
                                           " WHERE schemaname = current_schema() AND tablename = $1"};
  return kProfile;
}

std::unique_ptr<Database> NewPostgresDatabase(const std::string& conninfo, const DialectProfile* profile,
                                              const DatabaseOptions& options) {
  return std::make_unique<PostgresDatabase>(conninfo, profile, options);
}

}  // namespace vigil::meta

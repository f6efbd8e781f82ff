// The one IdempotencyStore implementation, on meta::Database. Writes run
// through Database::Write (group commit on SQLite, autocommit on PostgreSQL);
// each write is a single atomic statement, with a follow-up read only to
// classify a refused finalize or reserve.
#include "vigil/idempotency/store.h"

#include "idempotency/schema.h"

namespace vigil::idempotency {

namespace {

using meta::Connection;
using meta::Row;

// Attempts before giving up on a record that keeps appearing and vanishing under a reserve or
// finalize (concurrent cancel, purge or re-reserve between its two statements).
constexpr int kRaceRetries = 8;

Result<IdempotencyRecord> ParseRecord(const Row& row) {
  IdempotencyRecord r;
  VIGIL_ASSIGN_OR_RETURN(r.realm_id, row.Text(0));
  VIGIL_ASSIGN_OR_RETURN(r.idempotency_key, row.Text(1));
  VIGIL_ASSIGN_OR_RETURN(r.operation_type, row.Text(2));
  VIGIL_ASSIGN_OR_RETURN(r.resource_id, row.Text(3));
  VIGIL_ASSIGN_OR_RETURN(r.request_fingerprint, row.Text(4));
  VIGIL_ASSIGN_OR_RETURN(r.executor_id, row.Text(5));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> status, row.OptInt(6));
  if (status) r.http_status = static_cast<int>(*status);
  VIGIL_ASSIGN_OR_RETURN(r.error_subtype, row.OptText(7));
  VIGIL_ASSIGN_OR_RETURN(r.response_summary, row.OptText(8));
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::string> headers, row.OptText(9));
  if (headers) {
    VIGIL_ASSIGN_OR_RETURN(r.response_headers, DecodeHeaders(*headers));
  }
  VIGIL_ASSIGN_OR_RETURN(r.created_at_ms, row.Int(10));
  VIGIL_ASSIGN_OR_RETURN(r.updated_at_ms, row.Int(11));
  VIGIL_ASSIGN_OR_RETURN(r.heartbeat_at_ms, row.Int(12));
  VIGIL_ASSIGN_OR_RETURN(r.finalized_at_ms, row.OptInt(13));
  VIGIL_ASSIGN_OR_RETURN(r.expires_at_ms, row.Int(14));
  return r;
}

Result<std::optional<IdempotencyRecord>> LoadOn(Connection& conn, const std::string& realm_id, const std::string& key) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<Row> row, conn.QueryOptional(sql::kLoad, {realm_id, key}));
  if (!row) return std::optional<IdempotencyRecord>();
  VIGIL_ASSIGN_OR_RETURN(IdempotencyRecord rec, ParseRecord(*row));
  return std::optional<IdempotencyRecord>(std::move(rec));
}

Result<ReserveResult> ReserveOn(Connection& conn, const ReserveRequest& req, int64_t now) {
  for (int attempt = 0; attempt < kRaceRetries; ++attempt) {
    VIGIL_ASSIGN_OR_RETURN(
        std::optional<Row> row,
        conn.QueryOptional(sql::kReserve, {req.realm_id, req.idempotency_key, req.operation_type, req.resource_id,
                                           req.request_fingerprint, req.executor_id, now, now + req.ttl_ms}));
    if (row) {
      VIGIL_ASSIGN_OR_RETURN(IdempotencyRecord rec, ParseRecord(*row));
      return ReserveResult{ReserveStatus::kOwned, std::move(rec)};
    }
    VIGIL_ASSIGN_OR_RETURN(auto existing, LoadOn(conn, req.realm_id, req.idempotency_key));
    if (existing) return ReserveResult{ReserveStatus::kDuplicate, std::move(*existing)};
    // Deleted between the two statements (cancelled or purged): try to insert again.
  }
  return Status::Busy("reserve " + req.idempotency_key + ": record keeps changing under us");
}

Result<FinalizeResult> FinalizeOn(Connection& conn, const FinalizeRequest& req, int64_t now) {
  std::optional<std::string> headers;
  if (!req.response_headers.empty()) headers = EncodeHeaders(req.response_headers);
  std::optional<int64_t> status = req.http_status;
  for (int attempt = 0; attempt < kRaceRetries; ++attempt) {
    VIGIL_ASSIGN_OR_RETURN(
        std::optional<Row> row,
        conn.QueryOptional(sql::kFinalize, {req.realm_id, req.idempotency_key, req.executor_id, status,
                                            req.error_subtype, req.response_summary, headers, now}));
    if (row) {
      VIGIL_ASSIGN_OR_RETURN(IdempotencyRecord rec, ParseRecord(*row));
      return FinalizeResult{FinalizeStatus::kFinalized, std::move(rec)};
    }
    VIGIL_ASSIGN_OR_RETURN(auto existing, LoadOn(conn, req.realm_id, req.idempotency_key));
    if (!existing) return FinalizeResult{FinalizeStatus::kNotFound, std::nullopt};
    if (existing->executor_id != req.executor_id) {
      return FinalizeResult{FinalizeStatus::kLostOwnership, std::move(existing)};
    }
    if (!existing->in_progress()) {
      return FinalizeResult{FinalizeStatus::kAlreadyFinalized, std::move(existing)};
    }
    // Ours and in progress again (cancelled and re-reserved in between): update again.
  }
  return Status::Busy("finalize " + req.idempotency_key + ": record keeps changing under us");
}

class SqlIdempotencyStore final : public IdempotencyStore {
 public:
  SqlIdempotencyStore(std::unique_ptr<meta::Database> db, Env* env) : db_(std::move(db)), env_(env) {}

  Result<ReserveResult> Reserve(const ReserveRequest& req) override {
    VIGIL_RETURN_IF_ERROR(ValidateReserve(req));
    int64_t now = env_->NowMs();
    std::optional<ReserveResult> out;
    VIGIL_RETURN_IF_ERROR(db_->Write(
        [&](Connection& conn) -> Status {
          VIGIL_ASSIGN_OR_RETURN(out, ReserveOn(conn, req, now));
          return Status::OK();
        },
        meta::WriteScope::kPerStatement));
    return std::move(*out);
  }

  Result<ReserveResult> Reserve(meta::Transaction& txn, const ReserveRequest& req) override {
    VIGIL_RETURN_IF_ERROR(ValidateReserve(req));
    if (!txn.active()) return Status::FailedPrecondition("reserve: transaction is not active");
    return ReserveOn(txn.conn(), req, env_->NowMs());
  }

  Result<std::optional<IdempotencyRecord>> Load(const std::string& realm_id, const std::string& key) override {
    VIGIL_RETURN_IF_ERROR(ValidateKey(realm_id, key));
    VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
    return LoadOn(*conn, realm_id, key);
  }

  Result<HeartbeatResult> UpdateHeartbeat(const std::string& realm_id, const std::string& key,
                                          const std::string& executor_id) override {
    VIGIL_RETURN_IF_ERROR(ValidateKey(realm_id, key));
    int64_t now = env_->NowMs();
    std::optional<Row> row;
    VIGIL_RETURN_IF_ERROR(db_->Write(
        [&](Connection& conn) -> Status {
          VIGIL_ASSIGN_OR_RETURN(row, conn.QueryOptional(sql::kHeartbeat, {realm_id, key, executor_id, now}));
          return Status::OK();
        },
        meta::WriteScope::kPerStatement));
    if (!row) return HeartbeatResult{HeartbeatStatus::kNotFound, std::nullopt};
    VIGIL_ASSIGN_OR_RETURN(IdempotencyRecord rec, ParseRecord(*row));
    HeartbeatStatus status = !rec.in_progress()               ? HeartbeatStatus::kFinalized
                             : rec.executor_id != executor_id ? HeartbeatStatus::kLostOwnership
                                                              : HeartbeatStatus::kUpdated;
    return HeartbeatResult{status, std::move(rec)};
  }

  Result<bool> CancelInProgressReservation(const std::string& realm_id, const std::string& key,
                                           const std::string& executor_id) override {
    VIGIL_RETURN_IF_ERROR(ValidateKey(realm_id, key));
    int64_t deleted = 0;
    VIGIL_RETURN_IF_ERROR(db_->Write(
        [&](Connection& conn) -> Status {
          VIGIL_ASSIGN_OR_RETURN(deleted, conn.Execute(sql::kCancel, {realm_id, key, executor_id}));
          return Status::OK();
        },
        meta::WriteScope::kPerStatement));
    return deleted > 0;
  }

  Result<bool> ReleaseStale(const std::string& realm_id, const std::string& key, const std::string& executor_id,
                            int64_t heartbeat_before_ms) override {
    VIGIL_RETURN_IF_ERROR(ValidateKey(realm_id, key));
    int64_t deleted = 0;
    VIGIL_RETURN_IF_ERROR(db_->Write(
        [&](Connection& conn) -> Status {
          VIGIL_ASSIGN_OR_RETURN(deleted,
                                 conn.Execute(sql::kReleaseStale, {realm_id, key, executor_id, heartbeat_before_ms}));
          return Status::OK();
        },
        meta::WriteScope::kPerStatement));
    return deleted > 0;
  }

  Status ConfirmOwner(Connection& conn, const std::string& realm_id, const std::string& key,
                      const std::string& executor_id, int64_t created_at_ms) override {
    VIGIL_RETURN_IF_ERROR(ValidateKey(realm_id, key));
    const int64_t now = env_->NowMs();
    VIGIL_ASSIGN_OR_RETURN(int64_t renewed,
                           conn.Execute(sql::kConfirmOwner, {realm_id, key, executor_id, created_at_ms, now}));
    if (renewed == 1) return Status::OK();
    return Status::FailedPrecondition("the reservation of Idempotency-Key '" + key +
                                      "' was taken over after this server stopped renewing it; the request "
                                      "changed nothing here");
  }

  Result<FinalizeResult> Finalize(const FinalizeRequest& req) override {
    FinalizeRequest r = req;
    VIGIL_RETURN_IF_ERROR(ValidateFinalize(&r));
    int64_t now = env_->NowMs();
    std::optional<FinalizeResult> out;
    VIGIL_RETURN_IF_ERROR(db_->Write(
        [&](Connection& conn) -> Status {
          VIGIL_ASSIGN_OR_RETURN(out, FinalizeOn(conn, r, now));
          return Status::OK();
        },
        meta::WriteScope::kPerStatement));
    return std::move(*out);
  }

  Result<FinalizeResult> Finalize(meta::Transaction& txn, const FinalizeRequest& req) override {
    FinalizeRequest r = req;
    VIGIL_RETURN_IF_ERROR(ValidateFinalize(&r));
    if (!txn.active()) return Status::FailedPrecondition("finalize: transaction is not active");
    return FinalizeOn(txn.conn(), r, env_->NowMs());
  }

  Result<int64_t> PurgeExpired(const std::string& realm_id, int64_t before_ms) override {
    VIGIL_RETURN_IF_ERROR(CheckRealm(realm_id));
    int64_t deleted = 0;
    VIGIL_RETURN_IF_ERROR(db_->Write(
        [&](Connection& conn) -> Status {
          VIGIL_ASSIGN_OR_RETURN(deleted, conn.Execute(sql::kPurgeExpired, {realm_id, before_ms}));
          return Status::OK();
        },
        meta::WriteScope::kPerStatement));
    return deleted;
  }

  Result<std::vector<IdempotencyRecord>> ListStale(const std::string& realm_id, int64_t heartbeat_before_ms,
                                                   int limit) override {
    VIGIL_RETURN_IF_ERROR(CheckRealm(realm_id));
    if (limit <= 0) return Status::InvalidArgument("listStale limit must be positive");
    VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
    VIGIL_ASSIGN_OR_RETURN(auto rows, conn->Query(sql::kListStale, {realm_id, heartbeat_before_ms, limit}));
    std::vector<IdempotencyRecord> out;
    out.reserve(rows.size());
    for (const Row& row : rows) {
      VIGIL_ASSIGN_OR_RETURN(IdempotencyRecord rec, ParseRecord(row));
      out.push_back(std::move(rec));
    }
    return out;
  }

  Result<std::vector<std::string>> ListRealms(const std::string& after, int limit) override {
    if (limit <= 0) return Status::InvalidArgument("listRealms limit must be positive");
    VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, db_->Acquire());
    VIGIL_ASSIGN_OR_RETURN(auto rows, conn->Query(sql::kListRealms, {after, limit}));
    std::vector<std::string> out;
    out.reserve(rows.size());
    for (const Row& row : rows) {
      VIGIL_ASSIGN_OR_RETURN(std::string realm, row.Text(0));
      out.push_back(std::move(realm));
    }
    return out;
  }

  meta::Database& database() override { return *db_; }

 private:
  static Status CheckRealm(const std::string& realm_id) {
    // Any well-formed key will do: only the realm is checked.
    return ValidateKey(realm_id, "-");
  }

  const std::unique_ptr<meta::Database> db_;
  Env* const env_;
};

}  // namespace

Status IdempotencyStore::MigrateSchema(meta::Database& db, Env* env) {
  VIGIL_ASSIGN_OR_RETURN(
      int applied, meta::ApplyMigrations(db, kSchemaComponent, SchemaMigrations(db.profile().dialect), env->NowMs()));
  (void)applied;
  return Status::OK();
}

Result<std::unique_ptr<IdempotencyStore>> IdempotencyStore::Open(const StoreOptions& options) {
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<meta::Database> db, meta::Database::Open(options.uri, options.database));
  VIGIL_RETURN_IF_ERROR(MigrateSchema(*db, options.env).WithContext("idempotency schema"));
  return std::unique_ptr<IdempotencyStore>(std::make_unique<SqlIdempotencyStore>(std::move(db), options.env));
}

}  // namespace vigil::idempotency

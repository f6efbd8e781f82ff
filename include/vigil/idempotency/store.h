// The durable idempotency record store (seed 003 and its review, DESIGN.md
// section 8). One implementation written against meta::Database runs on
// SQLite and PostgreSQL; the few dialect differences live in per-database
// schema migrations and meta's DialectProfile.
//
// Consistency: every operation is linearizable per (realm_id, key). Among any
// number of concurrent Reserve calls for one key (threads or processes) exactly
// one returns kOwned. Success means the change is durable (SQLite commits with
// synchronous=FULL, grouped across concurrent callers; PostgreSQL commits with
// synchronous_commit on). Every operation is scoped to one realm and never
// reads or changes another realm's records.
//
// Thread safety: an IdempotencyStore is thread-safe. It owns its own
// connection pool, separate from the pool used for jobs; the overloads taking a
// meta::Transaction run on the caller's transaction instead, so that a job
// admission and its record commit or roll back together.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vigil/common/env.h"
#include "vigil/common/status.h"
#include "vigil/idempotency/record.h"
#include "vigil/meta/database.h"

namespace vigil::idempotency {

enum class ReserveStatus {
  kOwned,      // this call created the record; the caller runs the request and must finalize
  kDuplicate,  // a record exists; `record` is it (in progress or finished)
};

struct ReserveResult {
  ReserveStatus status;
  IdempotencyRecord record;  // the new record (kOwned) or the existing one (kDuplicate)
};

enum class HeartbeatStatus {
  kUpdated,        // the caller still owns the in-progress record; heartbeat_at is now
  kFinalized,      // the record is already finished (normal: the request completed)
  kNotFound,       // no record (cancelled, purged or never reserved)
  kLostOwnership,  // in progress but owned by another executor (a defensive state)
};

// The outcome of UpdateHeartbeat, read atomically with the update attempt.
struct HeartbeatResult {
  HeartbeatStatus status;
  std::optional<IdempotencyRecord> record;  // the record as it stands; absent for kNotFound
};

enum class FinalizeStatus {
  kFinalized,         // this call finished the record
  kAlreadyFinalized,  // the same executor finished it before (a repeated call); stored outcome wins
  kNotFound,          // no record
  kLostOwnership,     // owned (in progress or finished) by another executor; nothing changed
};

struct FinalizeResult {
  FinalizeStatus status;
  std::optional<IdempotencyRecord> record;  // the stored record; absent for kNotFound
};

struct StoreOptions {
  // Database URI (see meta::Database::Open): sqlite:///path or a PostgreSQL conninfo.
  std::string uri;
  meta::DatabaseOptions database;
  Env* env = Env::Default();  // the clock of expiry and staleness; must outlive the store
};

class IdempotencyStore {
 public:
  virtual ~IdempotencyStore() = default;

  // Opens its own connection pool on `options.uri` and applies the schema migrations.
  // Corruption when an applied migration was edited; FailedPrecondition on a newer schema.
  static Result<std::unique_ptr<IdempotencyStore>> Open(const StoreOptions& options);
  // Applies the store's migrations to `db` (a caller's metadata database whose transactions
  // are passed to the overloads below). Idempotent.
  static Status MigrateSchema(meta::Database& db, Env* env = Env::Default());

  // Creates the in-progress record for (realm, key) owned by req.executor_id (kOwned), or
  // returns the existing record (kDuplicate). An existing record that is finished and expired
  // is replaced (the key is free again); an expired one still in progress is a duplicate until
  // the reconciler resolves it. InvalidArgument for a malformed request.
  virtual Result<ReserveResult> Reserve(const ReserveRequest& req) = 0;
  // The same inside `txn` (a write transaction of a database holding this schema): the record
  // commits or rolls back with the caller's other work.
  virtual Result<ReserveResult> Reserve(meta::Transaction& txn, const ReserveRequest& req) = 0;

  // The record for (realm, key), or nullopt.
  virtual Result<std::optional<IdempotencyRecord>> Load(const std::string& realm_id, const std::string& key) = 0;

  // Sets heartbeat_at to now when `executor_id` owns the in-progress record; otherwise says
  // why not (see HeartbeatStatus). One atomic statement: the status and the record are read
  // together with the update attempt.
  virtual Result<HeartbeatResult> UpdateHeartbeat(const std::string& realm_id, const std::string& key,
                                                  const std::string& executor_id) = 0;

  // Deletes the record if it is in progress and owned by `executor_id` (the request was not
  // run or its outcome is not stored, e.g. 401/429/5xx). True when deleted; false when there is
  // no such record, it is finished, or another executor owns it.
  virtual Result<bool> CancelInProgressReservation(const std::string& realm_id, const std::string& key,
                                                   const std::string& executor_id) = 0;

  // Deletes the in-progress record owned by `executor_id` only while its heartbeat is older
  // than `heartbeat_before_ms`: how a dead owner's reservation is taken over, so that an owner
  // that renewed it meanwhile (with ConfirmOwner, in its effect's transaction) keeps it. True
  // when deleted.
  virtual Result<bool> ReleaseStale(const std::string& realm_id, const std::string& key, const std::string& executor_id,
                                    int64_t heartbeat_before_ms) = 0;

  // On `conn`, a connection in the caller's write transaction on this store's database:
  // renews the heartbeat of the in-progress record that `executor_id` reserved at
  // `created_at_ms`. FailedPrecondition when the record is no longer that reservation (taken
  // over, finished or gone): the caller's transaction, with its effect, must roll back.
  virtual Status ConfirmOwner(meta::Connection& conn, const std::string& realm_id, const std::string& key,
                              const std::string& executor_id, int64_t created_at_ms) = 0;

  // Stores the outcome, only by the owning executor and only while in progress. A repeated
  // call by the same executor returns kAlreadyFinalized with the first stored outcome. The
  // record's expiry is not changed. InvalidArgument for a malformed request.
  virtual Result<FinalizeResult> Finalize(const FinalizeRequest& req) = 0;
  // The same inside the caller's write transaction `txn`.
  virtual Result<FinalizeResult> Finalize(meta::Transaction& txn, const FinalizeRequest& req) = 0;

  // Deletes `realm_id`'s finished records with expires_at < before_ms; returns how many.
  // In-progress records are left for the reconciler even when expired.
  virtual Result<int64_t> PurgeExpired(const std::string& realm_id, int64_t before_ms) = 0;

  // Up to `limit` in-progress records of `realm_id` with heartbeat_at < heartbeat_before_ms,
  // oldest heartbeat first: candidates for the reconciler.
  virtual Result<std::vector<IdempotencyRecord>> ListStale(const std::string& realm_id, int64_t heartbeat_before_ms,
                                                           int limit) = 0;

  // Up to `limit` realm ids that hold records, in ascending order, after `after` (exclusive;
  // empty: from the first): a walk over every realm, including realms whose principal is gone.
  virtual Result<std::vector<std::string>> ListRealms(const std::string& after, int limit) = 0;

  // The database this store's own pool is connected to.
  virtual meta::Database& database() = 0;
};

}  // namespace vigil::idempotency

#include "vigil/catalog/version_store.h"

#include "catalog/catalog_sql.h"
#include "vigil/common/env.h"
#include "vigil/storage/filename.h"

namespace vigil::catalog {

StoreVersionCatalog::StoreVersionCatalog(const CatalogStore* store, std::string table_incarnation,
                                         std::function<int64_t()> now_ms)
    : store_(store), table_incarnation_(std::move(table_incarnation)), now_ms_(std::move(now_ms)) {}

Result<std::optional<CatalogVersion>> StoreVersionCatalog::Latest() {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, store_->database().Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::optional<meta::Row> row,
                         conn->QueryOptional(sql::kSelectNewestVersion, {table_incarnation_}));
  if (!row) return std::optional<CatalogVersion>();
  CatalogVersion v;
  VIGIL_ASSIGN_OR_RETURN(const int64_t version, row->Int(0));
  v.version = static_cast<uint64_t>(version);
  VIGIL_ASSIGN_OR_RETURN(v.manifest, row->Text(1));
  return std::optional<CatalogVersion>(std::move(v));
}

Status StoreVersionCatalog::Claim(const VersionClaim& claim) {
  const std::string version = "version " + std::to_string(claim.version);
  if (claim.version == 0 || claim.txn.job_id.has_value() == claim.txn.attempt_id.empty()) {
    return Status::InvalidArgument(version + ": a claim needs a version, and a job id with an attempt id or neither");
  }
  if (!IsClaimManifestPath(claim.manifest, claim.version)) {
    return Status::InvalidArgument(version + ": '" + claim.manifest.substr(0, 200) + "' is not a claim of version " +
                                   std::to_string(claim.version) + " (_versions/<v>.claim-<uuid>)");
  }
  Status st = [&]() -> Status {
    VIGIL_ASSIGN_OR_RETURN(meta::Transaction txn, store_->database().Begin(meta::TxnMode::kWrite));
    VIGIL_ASSIGN_OR_RETURN(std::optional<meta::Row> newest,
                           txn.conn().QueryOptional(sql::kSelectNewestVersion, {table_incarnation_}));
    if (newest) {
      VIGIL_ASSIGN_OR_RETURN(const int64_t v, newest->Int(0));
      if (static_cast<uint64_t>(v) + 1 != claim.version) {
        return Status::AlreadyExists(version + " of table " + table_incarnation_ + " is not one past its newest, " +
                                     std::to_string(v));
      }
    }
    if (claim.txn.job_id) VIGIL_RETURN_IF_ERROR(store_->CheckAttemptOn(txn.conn(), claim, now_ms_()));
    const meta::Value job = claim.txn.job_id ? meta::Value(*claim.txn.job_id) : meta::Value();
    const meta::Value attempt = claim.txn.job_id ? meta::Value(claim.txn.attempt_id) : meta::Value();
    Result<int64_t> inserted = txn.conn().Execute(
        sql::kInsertVersion,
        {table_incarnation_, static_cast<int64_t>(claim.version), claim.manifest, job, attempt, now_ms_()});
    if (!inserted.ok()) {
      if (inserted.status().Is(StatusCode::kAlreadyExists)) {
        return Status::AlreadyExists(version + " of table " + table_incarnation_ + " was committed by another writer");
      }
      return inserted.status();
    }
    return txn.Commit();
  }();
  // A serialization failure, at any statement or at the commit, committed nothing: the writer
  // rebases and claims again.
  if (st.Is(StatusCode::kCommitConflict)) return Status::AlreadyExists(st.message());
  return st;
}

Result<std::optional<StoredVersion>> StoreVersionCatalog::FindAttempt(const std::string& attempt_id) {
  VIGIL_ASSIGN_OR_RETURN(meta::PooledConnection conn, store_->database().Acquire());
  VIGIL_ASSIGN_OR_RETURN(std::vector<meta::Row> rows,
                         conn->Query(sql::kSelectAttemptVersion, {table_incarnation_, attempt_id}));
  if (rows.empty()) return std::optional<StoredVersion>();
  if (rows.size() > 1) {
    return Status::Corruption("attempt " + attempt_id + " committed more than one version of table " +
                              table_incarnation_);
  }
  const meta::Row& row = rows[0];
  StoredVersion v;
  VIGIL_ASSIGN_OR_RETURN(const int64_t version, row.Int(0));
  v.version = static_cast<uint64_t>(version);
  VIGIL_ASSIGN_OR_RETURN(v.manifest, row.Text(1));
  if (!row.IsNull(2)) {
    VIGIL_ASSIGN_OR_RETURN(const int64_t job, row.Int(2));
    v.job_id = job;
  }
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::string> attempt, row.OptText(3));
  v.attempt_id = attempt.value_or("");
  VIGIL_ASSIGN_OR_RETURN(v.committed_at_ms, row.Int(4));
  return std::optional<StoredVersion>(std::move(v));
}

DatasetOptions TableDatasetOptions(const CatalogStore* store, const std::string& table_incarnation,
                                   std::function<int64_t()> now_ms) {
  if (!now_ms) now_ms = [] { return Env::Default()->NowMs(); };
  DatasetOptions options;
  options.versions = std::make_shared<StoreVersionCatalog>(store, table_incarnation, std::move(now_ms));
  return options;
}

}  // namespace vigil::catalog

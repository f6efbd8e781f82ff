// The version catalog of one table incarnation kept in the metadata store
// (storage/version_catalog.h; DESIGN.md section 12): a version exists once its
// row (table incarnation, version, claimed manifest, job and attempt) is
// inserted, and a row goes in only as one past the newest. A claim made for an
// index job's attempt is checked in the same transaction by the store's attempt
// check (CatalogStore::CheckAttemptOn; the job store's: the job must still run
// that attempt, and the leader epoch it was dispatched under must still hold
// the lease), so a worker whose attempt was settled, released or replaced, or
// whose leader lost the lease, can never commit. The same rows on SQLite and
// PostgreSQL.
// Thread safety: thread-safe (the store is).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vigil/catalog/catalog_store.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/version_catalog.h"

namespace vigil::catalog {

// One committed version as the store records it.
struct StoredVersion {
  uint64_t version = 0;
  std::string manifest;
  std::optional<int64_t> job_id;
  std::string attempt_id;  // empty: not an index job's commit
  int64_t committed_at_ms = 0;
};

class StoreVersionCatalog : public VersionCatalog {
 public:
  // `store` outlives the catalog; `now_ms` is the caller's clock (the attempt check's lease
  // decisions may read the store's, jobs::LeaseClock).
  StoreVersionCatalog(const CatalogStore* store, std::string table_incarnation, std::function<int64_t()> now_ms);

  Result<std::optional<CatalogVersion>> Latest() override;
  // FailedPrecondition naming the job and attempt when an attempt may no longer commit;
  // AlreadyExists when another commit took the version; IOError when the answer was lost.
  Status Claim(const VersionClaim& claim) override;
  // The version committed by `attempt_id`, if any (the provenance of an index job's attempt).
  Result<std::optional<StoredVersion>> FindAttempt(const std::string& attempt_id);

 private:
  const CatalogStore* const store_;
  const std::string table_incarnation_;
  const std::function<int64_t()> now_ms_;
};

// Options that open and commit the dataset of `table_incarnation` through its catalog in
// `store`; `now_ms` empty: Env::Default()'s clock.
DatasetOptions TableDatasetOptions(const CatalogStore* store, const std::string& table_incarnation,
                                   std::function<int64_t()> now_ms = nullptr);

}  // namespace vigil::catalog

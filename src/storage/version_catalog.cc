#include "vigil/storage/version_catalog.h"

namespace vigil {

Result<std::optional<CatalogVersion>> MemoryVersionCatalog::Latest() {
  MutexLock lock(&mu_);
  if (claims_.empty()) return std::optional<CatalogVersion>();
  const auto& [version, claim] = *claims_.rbegin();
  return std::optional<CatalogVersion>(CatalogVersion{version, claim.manifest});
}

Status MemoryVersionCatalog::Claim(const VersionClaim& claim) {
  MutexLock lock(&mu_);
  if (!claim.txn.attempt_id.empty() && fenced_.count(claim.txn.attempt_id) != 0) {
    return Status::FailedPrecondition("attempt " + claim.txn.attempt_id + " may no longer commit");
  }
  if (!claims_.empty() && claims_.rbegin()->first + 1 != claim.version) {
    return Status::AlreadyExists("version " + std::to_string(claim.version) + " is not one past the newest, " +
                                 std::to_string(claims_.rbegin()->first));
  }
  claims_[claim.version] = claim;
  return Status::OK();
}

void MemoryVersionCatalog::FenceAttempt(const std::string& attempt_id) {
  MutexLock lock(&mu_);
  fenced_.insert(attempt_id);
}

std::map<uint64_t, VersionClaim> MemoryVersionCatalog::claims() {
  MutexLock lock(&mu_);
  return claims_;
}

}  // namespace vigil

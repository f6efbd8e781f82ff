// The commit point of a dataset's versions when a metadata store decides them
// (DESIGN.md section 12). With DatasetOptions::versions set, a writer writes
// its manifest under a unique claim name, `_versions/<v>.claim-<uuid>`, and the
// version exists once the catalog accepts the claim: compare-and-set on "one
// past the newest committed version", in the catalog's own transaction, which
// can also refuse an attempt that may no longer commit. Only then is the claim
// linked to `_versions/<v>.manifest` (without replacing a file), so that file
// readers see it; a reader that finds the newest committed version not yet
// linked links it (roll-forward). A dataset made before its catalog has no
// catalog versions: its newest manifest file counts until the first claim.
// Thread safety: implementations are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/storage/manifest.h"

namespace vigil {

struct CatalogVersion {
  uint64_t version = 0;
  std::string manifest;  // dataset-relative path of the claim that holds it

  bool operator==(const CatalogVersion&) const = default;
};

struct VersionClaim {
  uint64_t version = 0;       // one past the version the commit was prepared on
  std::string manifest;       // dataset-relative claim path (storage/filename.h)
  TransactionProperties txn;  // the commit's operation, job id, attempt id
};

class VersionCatalog {
 public:
  virtual ~VersionCatalog() = default;
  // The newest committed version; nullopt while the catalog holds none for this dataset.
  virtual Result<std::optional<CatalogVersion>> Latest() = 0;
  // Commits `claim` if and only if its version is one past the newest committed version, or
  // the catalog holds none yet. AlreadyExists: another commit took the version (rebase and
  // claim again); FailedPrecondition: the claim's attempt may no longer commit. Nothing is
  // committed on any error but one that leaves the outcome unknown (IOError).
  virtual Status Claim(const VersionClaim& claim) = 0;
};

// A catalog in this process's memory: the protocol without a store (tests, one process).
class MemoryVersionCatalog : public VersionCatalog {
 public:
  Result<std::optional<CatalogVersion>> Latest() override;
  Status Claim(const VersionClaim& claim) override;
  // Refuses every later claim of `attempt_id` (as a store refuses a fenced attempt).
  void FenceAttempt(const std::string& attempt_id);
  // The committed claims by version.
  std::map<uint64_t, VersionClaim> claims();

 private:
  Mutex mu_;
  std::map<uint64_t, VersionClaim> claims_ VIGIL_GUARDED_BY(mu_);
  std::set<std::string> fenced_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil

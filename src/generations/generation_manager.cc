#include "vigil/generations/generation_manager.h"

namespace vigil::generations {

Result<std::unique_ptr<GenerationManager>> GenerationManager::Open(const std::string& path,
                                                                   DatasetOptions options) {
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path, std::nullopt, options));
  VIGIL_ASSIGN_OR_RETURN(auto snap, query::TableSnapshot::Open(ds));
  std::unique_ptr<GenerationManager> m(new GenerationManager(path, options));
  m->Publish(std::move(snap));
  return m;
}

void GenerationManager::Publish(std::shared_ptr<const query::TableSnapshot> snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  auto g = std::make_shared<Generation>();
  g->id = next_id_++;
  g->snapshot = std::move(snapshot);
  current_ = g;
  std::erase_if(issued_, [](const auto& w) { return w.expired(); });
  issued_.push_back(g);
}

Lease GenerationManager::Acquire() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Lease(current_);
}

Result<uint64_t> GenerationManager::Refresh() {
  std::lock_guard<std::mutex> refresh_lock(refresh_mu_);
  VIGIL_ASSIGN_OR_RETURN(uint64_t latest, Dataset::LatestVersion(path_, options_));
  if (latest == current_version()) return latest;
  // Open and verify off the read path; readers keep acquiring the old generation meanwhile.
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path_, latest, options_));
  VIGIL_ASSIGN_OR_RETURN(auto snap, query::TableSnapshot::Open(ds));
  Publish(std::move(snap));
  return latest;
}

uint64_t GenerationManager::current_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_->snapshot->version();
}

size_t GenerationManager::live_generations() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& w : issued_) n += w.expired() ? 0 : 1;
  return n;
}

}  // namespace vigil::generations

#include "vigil/sql/generation_pool.h"

#include <chrono>

#include "vigil/catalog/table_catalog.h"
#include "vigil/generations/generation_manager.h"
#include "vigil/generations/version_pins.h"
#include "vigil/jobs/job_store.h"
#include "vigil/jobs/root_jobs.h"

namespace vigil::sql {

namespace {
// How often a manager heartbeats its version pins and removes retired ones.
constexpr std::chrono::seconds kMaintainInterval{20};
// How long a refresh waits for another session's statement to let go of an older generation
// when the table holds physical_per_table of them.
constexpr std::chrono::seconds kSlotWait{10};
}  // namespace

std::shared_ptr<GenerationPool> GenerationPool::Create(const Root& root, const GenerationsConfig& config) {
  return std::shared_ptr<GenerationPool>(new GenerationPool(root, config));
}

GenerationPool::GenerationPool(Root root, GenerationsConfig config)
    : root_(std::move(root)),
      config_(config),
      budget_(std::make_unique<generations::ResourceBudget>(config.memory_budget_bytes, config.disk_budget_bytes,
                                                            "generations.memory_budget_bytes",
                                                            "generations.disk_budget_bytes")) {}

GenerationPool::~GenerationPool() {
  MutexLock lock(&mu_);
  // Every engine given the pool holds it: none of its managers can still be alive.
  for (const auto& [locator, manager] : managers_) VIGIL_CHECK(manager.expired());
}

Status GenerationPool::OpenStore() {
  if (store_) return Status::OK();
  VIGIL_ASSIGN_OR_RETURN(auto store, jobs::OpenRootJobStore(root_));
  // The versions this process reads are pinned in the metadata store, so that a VACUUM in any
  // process keeps their files; the pins are heartbeated and expire if this process dies.
  VIGIL_ASSIGN_OR_RETURN(pins_, generations::VersionPinStore::Open(&store->database(), root_.env()->NowMs()));
  store_ = std::move(store);
  return Status::OK();
}

Result<std::shared_ptr<generations::GenerationManager>> GenerationPool::Manager(const catalog::TableEntry& entry) {
  generations::GenerationsOptions options;
  {
    MutexLock lock(&mu_);
    std::erase_if(managers_, [](const auto& kv) { return kv.second.expired(); });
    if (auto it = managers_.find(entry.locator); it != managers_.end()) {
      if (auto live = it->second.lock()) return live;
    }
    VIGIL_RETURN_IF_ERROR(OpenStore());
    options.dataset = catalog::TableCatalog(&root_, &store_->catalog()).Options(entry);
    options.pins = pins_.get();  // set once, kept until the pool goes
  }
  options.builders_per_table = config_.builders_per_table;
  options.physical_per_table = config_.physical_per_table;
  options.budget = budget_.get();
  options.maintain_interval = kMaintainInterval;
  options.slot_wait = kSlotWait;
  options.catalog_staleness = std::chrono::milliseconds(config_.catalog_staleness_ms);
  // Opened outside the lock: a large table's first open does not hold up other tables.
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<generations::GenerationManager> opened,
                         generations::GenerationManager::Open(entry.locator, options));
  std::shared_ptr<generations::GenerationManager> manager(std::move(opened));
  MutexLock lock(&mu_);
  std::weak_ptr<generations::GenerationManager>& slot = managers_[entry.locator];
  if (auto raced = slot.lock()) return raced;  // another engine opened it meanwhile; ours goes
  slot = manager;
  return manager;
}

void GenerationPool::Forget(const generations::GenerationManager* manager) {
  MutexLock lock(&mu_);
  auto it = managers_.find(manager->path());
  if (it != managers_.end() && it->second.lock().get() == manager) managers_.erase(it);
}

}  // namespace vigil::sql

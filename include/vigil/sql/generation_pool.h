// The generations of one process (DESIGN.md section 7; seeds 002 and 003: one
// budget per process): one GenerationManager per table, shared by every select
// engine given the pool, all charging one ResourceBudget. So the bounds of
// vigil.toml [generations] (memory_budget_bytes, disk_budget_bytes,
// physical_per_table, builders_per_table) hold for the process, not for each
// session, and sessions reading one table share its opened segments.
// The pool keeps its own handle on the root's metadata store: the managers'
// version catalogs and version pins never depend on the session that opened them.
//
// Thread safety: thread-safe. The managers it hands out are thread-safe too.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "vigil/common/config.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/storage/root.h"

namespace vigil::jobs {
class JobStore;
}  // namespace vigil::jobs

namespace vigil::catalog {
struct TableEntry;
}  // namespace vigil::catalog

namespace vigil::generations {
class GenerationManager;
class ResourceBudget;
class VersionPinStore;
}  // namespace vigil::generations

namespace vigil::sql {

class GenerationPool {
 public:
  // A pool for tables of `root`, with `config`'s bounds. Opens nothing yet: the metadata
  // store is opened on the first Manager().
  static std::shared_ptr<GenerationPool> Create(const Root& root, const GenerationsConfig& config);
  ~GenerationPool();

  // The live manager of `entry`'s incarnation (entry.locator), or one opened now at its
  // newest version. Callers Refresh() it before reading: another engine may have opened it.
  Result<std::shared_ptr<generations::GenerationManager>> Manager(const catalog::TableEntry& entry) VIGIL_EXCLUDES(mu_);
  // Forgets `manager` (after its Refresh failed): the next Manager() of its table opens anew.
  // Engines still holding it keep it until they drop it.
  void Forget(const generations::GenerationManager* manager) VIGIL_EXCLUDES(mu_);

  const Root& root() const { return root_; }
  const GenerationsConfig& config() const { return config_; }
  generations::ResourceBudget* budget() const { return budget_.get(); }

 private:
  GenerationPool(Root root, GenerationsConfig config);
  Status OpenStore() VIGIL_REQUIRES(mu_);

  const Root root_;
  const GenerationsConfig config_;
  const std::unique_ptr<generations::ResourceBudget> budget_;

  Mutex mu_;
  // Declared before the managers' map: they use the store and the pins until they go.
  std::unique_ptr<jobs::JobStore> store_ VIGIL_GUARDED_BY(mu_);
  std::unique_ptr<generations::VersionPinStore> pins_ VIGIL_GUARDED_BY(mu_);
  // By locator; an engine's shared_ptr keeps a manager alive, this map only finds it.
  std::map<std::string, std::weak_ptr<generations::GenerationManager>> managers_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace vigil::sql

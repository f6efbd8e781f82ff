// The [jobs] settings of vigil.toml: how index jobs are scheduled, archived,
// reconciled and led.
#include "common/config_settings.h"

namespace vigil {

namespace config_detail {

std::vector<Setting> JobsSettings() {
  return {
      {"jobs", "concurrency_per_node", Kind::kCount, 1, 256,
       "Index jobs running at once on one node, each on a different table (a table\n"
       "has at most one running job); more wait PENDING. A `vigil serve` node registers\n"
       "it as its capacity: the leader gives attempts to the least loaded live node.",
       VIGIL_NUM_(jobs, concurrency_per_node)},

      {"jobs", "concurrency_per_catalog", Kind::kCount, 1, 4096,
       "Index jobs running at once in one catalog, over every node (seed 000's\n"
       "catalog concurrency); more wait PENDING.",
       VIGIL_NUM_(jobs, concurrency_per_catalog)},

      {"jobs", "concurrency_per_cluster", Kind::kCount, 1, 4096,
       "Index jobs running at once over every node sharing the metadata store\n"
       "(seed 000's cluster concurrency); more wait PENDING.",
       VIGIL_NUM_(jobs, concurrency_per_cluster)},

      {"jobs", "max_pending_seconds", Kind::kDuration, 1, 30 * kDay,
       "A job still PENDING this long after its admission (every node drained or\n"
       "of capacity 0, or a concurrency bound kept it waiting) ends NOT_COMMITTED\n"
       "with error SCHEDULING_EXHAUSTED, its fence released; nothing of it ran.\n"
       "Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(jobs, max_pending_seconds)},

      {"jobs", "archive_after_seconds", Kind::kDuration, 60, 3650 * kDay,
       "Terminal jobs are archived this long after they ended and leave the listings;\n"
       "an unresolved UNKNOWN job becomes a tombstone that keeps its fence and stays\n"
       "listed until an operator resolves it. Seconds or \"<n>s|m|h|d\".",
       VIGIL_NUM_(jobs, archive_after_seconds)},

      {"jobs", "supervise_idle_exit_seconds", Kind::kDuration, 1, kDay,
       "A background `vigil supervise` with no active job exits after this long.",
       VIGIL_NUM_(jobs, supervise_idle_exit_seconds)},

      {"jobs", "reconcile_initial_backoff_seconds", Kind::kDuration, 1, kDay,
       "Reconciler watcher of an UNKNOWN job: first retry after this long, then\n"
       "doubling up to reconcile_max_backoff_seconds.",
       VIGIL_NUM_(jobs, reconcile_initial_backoff_seconds)},

      {"jobs", "reconcile_max_backoff_seconds", Kind::kDuration, 1, 30 * kDay,
       "Upper bound of the reconciler backoff; at least the initial backoff.",
       VIGIL_NUM_(jobs, reconcile_max_backoff_seconds)},

      {"jobs", "leader_lease_seconds", Kind::kDuration, 1, kDay,
       "The leader lease of the process that dispatches jobs, renewed every third of\n"
       "it. With a shared [meta] url a standby node takes over this long after a\n"
       "leader died, and a leader that cannot renew it kills its workers and stops\n"
       "before it lapses. An embedded root's next leader takes over at once.",
       VIGIL_NUM_(jobs, leader_lease_seconds)},
  };
}

}  // namespace config_detail

}  // namespace vigil

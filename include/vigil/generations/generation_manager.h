// Per-table generation manager: readers Acquire() a lease on the current
// generation (one table snapshot: a pinned version plus its opened segments)
// and release it when done; Refresh() opens and verifies the newest version
// off the read path and then swaps the current pointer, so publication never
// waits for, nor disturbs, a leased reader. A retired generation is destroyed
// (its segment handles closed unless shared) when its last lease is released.
//
// Thread safety: all methods are thread-safe. Acquire takes one short mutex
// (a pointer copy), never one that Refresh holds while opening files.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/query/snapshot.h"
#include "vigil/storage/dataset.h"

namespace vigil::generations {

struct Generation {
  uint64_t id = 0;  // increases with every publication in this manager
  std::shared_ptr<const query::TableSnapshot> snapshot;
};

// A reader's claim on one generation. Movable; releases on destruction.
class Lease {
 public:
  Lease() = default;
  explicit Lease(std::shared_ptr<const Generation> g) : generation_(std::move(g)) {}
  const query::TableSnapshot& snapshot() const { return *generation_->snapshot; }
  uint64_t version() const { return generation_->snapshot->version(); }
  uint64_t generation_id() const { return generation_->id; }
  bool valid() const { return generation_ != nullptr; }
  void Release() { generation_.reset(); }

 private:
  std::shared_ptr<const Generation> generation_;
};

class GenerationManager {
 public:
  // Opens the newest version of the dataset at `path` as the first generation.
  static Result<std::unique_ptr<GenerationManager>> Open(const std::string& path, DatasetOptions options = {});

  Lease Acquire() const;
  // Publishes the newest version if it differs from the current one; returns the current version.
  Result<uint64_t> Refresh();
  uint64_t current_version() const;
  // Generations still alive: the current one plus retired ones with leases.
  size_t live_generations() const;

 private:
  GenerationManager(std::string path, DatasetOptions options) : path_(std::move(path)), options_(options) {}
  void Publish(std::shared_ptr<const query::TableSnapshot> snapshot);

  const std::string path_;
  const DatasetOptions options_;
  std::mutex refresh_mu_;  // serializes Refresh; never taken by Acquire
  mutable std::mutex mu_;
  std::shared_ptr<const Generation> current_;            // GUARDED_BY(mu_)
  std::vector<std::weak_ptr<const Generation>> issued_;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                                 // GUARDED_BY(mu_)
};

}  // namespace vigil::generations

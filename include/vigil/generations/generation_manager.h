// Per-table generation manager (DESIGN.md section 7): readers Acquire() a
// lease on the current generation (one table snapshot: a pinned version plus
// its opened segments) and release it when done; Refresh() opens and verifies
// the newest version off the read path (manifest checksum, segment
// inventories; segments already open are shared through the snapshot segment
// cache, not reopened) and then swaps the current pointer, so publication
// never waits for, nor disturbs, a leased reader. A retired generation closes
// its handles (segments not shared with a live generation) when its last lease
// is released; its cross-process version pin is removed by the next
// Maintain()/Refresh()/Shutdown() (a failed removal stays owned and is retried).
//
// Bounds: builders per table (a Refresh or an in-process build holds the slot;
// more is Busy), physical generations per table (current + retired-with-leases
// + building; a Refresh that would exceed it waits up to slot_wait for a lease to end,
// then is ResourceExhausted), and a
// memory/disk ResourceBudget shared by all tables, admitted before any work.
// Every refusal leaves the current generation usable.
//
// Thread safety: all methods are thread-safe. Acquire takes one short mutex
// (a pointer copy), never one that Refresh, a build or a pin write holds.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/generations/version_pins.h"
#include "vigil/query/snapshot.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/vacuum.h"

namespace vigil::generations {

// Memory and disk budgets shared by every table of a process. Must outlive
// every manager, lease and reservation that uses it. Thread-safe.
class ResourceBudget {
 public:
  // A claim on part of the budget, returned on destruction. Move-only.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(ResourceBudget* b, uint64_t memory, uint64_t disk) : budget_(b), memory_(memory), disk_(disk) {}
    Reservation(Reservation&& o) noexcept { *this = std::move(o); }
    Reservation& operator=(Reservation&& o) noexcept;
    ~Reservation() { Release(); }
    void Release();
    uint64_t memory() const { return memory_; }
    uint64_t disk() const { return disk_; }

   private:
    ResourceBudget* budget_ = nullptr;
    uint64_t memory_ = 0;
    uint64_t disk_ = 0;
  };

  // `memory_name` and `disk_name` name the budgets in errors (e.g. the settings that set them).
  ResourceBudget(uint64_t memory_bytes, uint64_t disk_bytes, std::string memory_name = "memory budget",
                 std::string disk_name = "disk budget")
      : memory_limit_(memory_bytes),
        disk_limit_(disk_bytes),
        memory_name_(std::move(memory_name)),
        disk_name_(std::move(disk_name)) {}
  // Reserves both amounts or neither; ResourceExhausted names the budget that is short.
  Result<Reservation> Reserve(uint64_t memory, uint64_t disk);
  uint64_t memory_used() const;
  uint64_t disk_used() const;

 private:
  void Return(uint64_t memory, uint64_t disk);
  const uint64_t memory_limit_;
  const uint64_t disk_limit_;
  const std::string memory_name_;
  const std::string disk_name_;
  mutable Mutex mu_;
  uint64_t memory_used_ VIGIL_GUARDED_BY(mu_) = 0;
  uint64_t disk_used_ VIGIL_GUARDED_BY(mu_) = 0;
};

// Live-object accounting shared by a manager and its generations (which may outlive it).
struct GenerationTracker {
  Mutex mu;
  std::condition_variable cv;             // notified whenever a count drops
  int live VIGIL_GUARDED_BY(mu) = 0;      // generations not yet destroyed
  int builders VIGIL_GUARDED_BY(mu) = 0;  // Refreshes and builds in progress
};

struct Generation {
  Generation() = default;
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;
  ~Generation();  // closes the snapshot's handles, returns the reservation, tells the tracker

  uint64_t id = 0;  // increases with every publication in this manager
  std::shared_ptr<const query::TableSnapshot> snapshot;
  ResourceBudget::Reservation reservation;
  std::shared_ptr<GenerationTracker> tracker;
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
  // Idempotent: a second Release (or the destructor after it) does nothing.
  void Release() { generation_.reset(); }

 private:
  std::shared_ptr<const Generation> generation_;
};

// The builder slot (and budget) of an in-process build; returned on destruction.
class BuildTicket {
 public:
  BuildTicket() = default;
  BuildTicket(std::shared_ptr<GenerationTracker> t, ResourceBudget::Reservation r)
      : tracker_(std::move(t)), reservation_(std::move(r)) {}
  BuildTicket(BuildTicket&&) noexcept = default;
  BuildTicket& operator=(BuildTicket&& o) noexcept;
  ~BuildTicket() { Release(); }
  void Release();
  void set_reservation(ResourceBudget::Reservation r) { reservation_ = std::move(r); }
  // Hands the reservation to a generation built under this ticket.
  ResourceBudget::Reservation TakeReservation() { return std::move(reservation_); }

 private:
  std::shared_ptr<GenerationTracker> tracker_;
  ResourceBudget::Reservation reservation_;
};

struct GenerationsOptions {
  DatasetOptions dataset;  // dataset.env is also the clock of the pin leases
  uint32_t builders_per_table = 1;
  uint32_t physical_per_table = 3;  // current + retired + building
  // How long a Refresh or build waits for room under physical_per_table (a leased older
  // generation retiring) before it is ResourceExhausted; 0: refused at once. A process whose
  // sessions share one manager per table waits: its readers' leases end with their statements.
  std::chrono::milliseconds slot_wait{0};
  ResourceBudget* budget = nullptr;  // shared by all tables; null = unbounded
  VersionPinStore* pins = nullptr;   // null = no cross-process pins
  std::string table;                 // pin key; empty = the dataset path
  int64_t pin_ttl_ms = 60'000;
  // Maintain() every interval on a background thread (heartbeat + reap); 0 = never.
  std::chrono::milliseconds maintain_interval{0};
  // With a version catalog (dataset.versions): how long Refresh may take the newest version
  // from the linked manifest files alone before it asks the catalog again; 0 = every time.
  std::chrono::milliseconds catalog_staleness{0};
};

class GenerationManager {
 public:
  // Opens the newest version as the first generation and pins it. A corrupt newest
  // manifest is Corruption naming the newest good version (never an older answer);
  // segments that do not verify are left out (TableSnapshot::unusable_segments()).
  static Result<std::unique_ptr<GenerationManager>> Open(const std::string& path, GenerationsOptions options);
  static Result<std::unique_ptr<GenerationManager>> Open(const std::string& path, DatasetOptions options = {});
  ~GenerationManager();  // stops maintenance and drops the current generation without waiting

  // A lease on the current generation; invalid after Shutdown.
  Lease Acquire() const;
  // Publishes the newest version if it differs from the current one; returns the
  // current version. Busy: builder slot taken; ResourceExhausted: the physical
  // bound or a budget; other errors from opening/verifying/pinning. On any error
  // the current generation stays current and usable.
  Result<uint64_t> Refresh();
  // Claims the builder slot and budget for an in-process build (e.g. BUILD INDEX).
  Result<BuildTicket> BeginBuild(uint64_t memory_bytes, uint64_t disk_bytes);
  // Heartbeats this manager's pins and removes the pins of retired generations;
  // failures are returned and retried on the next call.
  Status Maintain();
  // Stops new leases, waits for every lease and build to end, closes every
  // handle and removes every pin. DeadlineExceeded when `timeout` passes first
  // (call again to keep waiting). Idempotent once it returned OK.
  Status Shutdown(std::chrono::milliseconds timeout = std::chrono::hours(24));

  uint64_t current_version() const;
  // Generations still alive: the current one plus retired ones with leases.
  size_t live_generations() const;
  // Versions held by live generations of this manager (for VACUUM).
  std::set<uint64_t> HeldVersions() const;
  // Pins whose removal failed and is still owed (retried by Maintain).
  size_t pending_unpins() const;
  const std::string& owner() const { return owner_; }
  const std::string& table() const { return table_; }
  // The dataset directory this manager serves.
  const std::string& path() const { return path_; }

 private:
  struct Issued {
    std::weak_ptr<const Generation> generation;
    uint64_t version = 0;
    bool pinned = false;
  };

  GenerationManager(std::string path, GenerationsOptions options);
  // The dataset options' Env (clocks and timed waits), Env::Default() when none is given.
  Env* env() const;
  int64_t NowMs() const;
  Status Recover();
  Result<std::shared_ptr<const Generation>> BuildGeneration(std::shared_ptr<Dataset> ds, BuildTicket* ticket);
  uint64_t EstimateNewBytes(const Manifest& next) const VIGIL_EXCLUDES(mu_);
  void Publish(std::shared_ptr<const Generation> g) VIGIL_REQUIRES(refresh_mu_) VIGIL_EXCLUDES(mu_);
  Status Reap() VIGIL_REQUIRES(refresh_mu_);
  void MaintainLoop() VIGIL_EXCLUDES(maintain_mu_);

  const std::string path_;
  const GenerationsOptions options_;
  const std::string table_;
  const std::string owner_;
  std::shared_ptr<GenerationTracker> tracker_;

  // Serializes Refresh/Reap/Shutdown bookkeeping; never taken by Acquire.
  mutable Mutex refresh_mu_;
  // Every generation published, until unpinned.
  std::vector<Issued> issued_ VIGIL_GUARDED_BY(refresh_mu_);
  bool shut_down_ VIGIL_GUARDED_BY(refresh_mu_) = false;
  // When the version catalog was last asked for the newest version (NowMs).
  int64_t catalog_asked_ms_ VIGIL_GUARDED_BY(refresh_mu_) = 0;

  // Guards only the current pointer (held for a copy or swap); taken after refresh_mu_.
  mutable Mutex mu_;
  std::shared_ptr<const Generation> current_ VIGIL_GUARDED_BY(mu_);
  std::atomic<uint64_t> next_id_{1};  // generation ids, in build order; a counter, no lock needed

  Mutex maintain_mu_;
  std::condition_variable maintain_cv_;  // wakes the maintenance thread to stop
  bool stop_maintain_ VIGIL_GUARDED_BY(maintain_mu_) = false;
  std::thread maintain_thread_;
};

// VACUUM of a table served by this process: protects every version held by
// `local` managers' generations and every version with a live pin in `pins`
// (may be null), then runs storage Vacuum with `options`.
Result<VacuumReport> VacuumTable(const std::string& path, VacuumOptions options,
                                 const std::vector<const GenerationManager*>& local, VersionPinStore* pins,
                                 const std::string& table, int64_t now_ms, DatasetOptions dataset_options = {});

}  // namespace vigil::generations

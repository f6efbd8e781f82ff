#include "vigil/generations/generation_manager.h"

#include <algorithm>
#include <map>

#include "vigil/common/env.h"
#include "vigil/common/failpoint.h"

namespace vigil::generations {

// ---- ResourceBudget ---------------------------------------------------------

ResourceBudget::Reservation& ResourceBudget::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    Release();
    budget_ = o.budget_;
    memory_ = o.memory_;
    disk_ = o.disk_;
    o.budget_ = nullptr;
    o.memory_ = o.disk_ = 0;
  }
  return *this;
}

void ResourceBudget::Reservation::Release() {
  if (budget_ != nullptr) budget_->Return(memory_, disk_);
  budget_ = nullptr;
  memory_ = disk_ = 0;
}

Result<ResourceBudget::Reservation> ResourceBudget::Reserve(uint64_t memory, uint64_t disk) {
  MutexLock lock(&mu_);
  if (memory > memory_limit_ - std::min(memory_limit_, memory_used_)) {
    return Status::ResourceExhausted(memory_name_ + ": " + std::to_string(memory) + " bytes wanted, " +
                                     std::to_string(memory_limit_ - memory_used_) + " of " +
                                     std::to_string(memory_limit_) + " free");
  }
  if (disk > disk_limit_ - std::min(disk_limit_, disk_used_)) {
    return Status::ResourceExhausted(disk_name_ + ": " + std::to_string(disk) + " bytes wanted, " +
                                     std::to_string(disk_limit_ - disk_used_) + " of " + std::to_string(disk_limit_) +
                                     " free");
  }
  memory_used_ += memory;
  disk_used_ += disk;
  return Reservation(this, memory, disk);
}

void ResourceBudget::Return(uint64_t memory, uint64_t disk) {
  MutexLock lock(&mu_);
  VIGIL_CHECK(memory <= memory_used_ && disk <= disk_used_);  // only what was reserved comes back
  memory_used_ -= memory;
  disk_used_ -= disk;
}

uint64_t ResourceBudget::memory_used() const {
  MutexLock lock(&mu_);
  return memory_used_;
}

uint64_t ResourceBudget::disk_used() const {
  MutexLock lock(&mu_);
  return disk_used_;
}

// ---- Generation, BuildTicket ------------------------------------------------

Generation::~Generation() {
  snapshot.reset();  // closes the segments no other generation shares
  reservation.Release();
  if (tracker) {
    MutexLock lock(&tracker->mu);
    VIGIL_CHECK(tracker->live > 0);
    --tracker->live;
    tracker->cv.notify_all();
  }
}

BuildTicket& BuildTicket::operator=(BuildTicket&& o) noexcept {
  if (this != &o) {
    Release();
    tracker_ = std::move(o.tracker_);
    reservation_ = std::move(o.reservation_);
  }
  return *this;
}

void BuildTicket::Release() {
  reservation_.Release();
  if (!tracker_) return;
  {
    MutexLock lock(&tracker_->mu);
    VIGIL_CHECK(tracker_->builders > 0);
    --tracker_->builders;
    tracker_->cv.notify_all();
  }
  tracker_.reset();
}

// ---- GenerationManager ------------------------------------------------------

namespace {

std::string OwnerFor() {
  static std::atomic<uint64_t> next{1};
  return ProcessOwnerId() + "/" + std::to_string(next.fetch_add(1));
}

}  // namespace

GenerationManager::GenerationManager(std::string path, GenerationsOptions options)
    : path_(std::move(path)),
      options_(std::move(options)),
      table_(options_.table.empty() ? path_ : options_.table),
      owner_(OwnerFor()),
      tracker_(std::make_shared<GenerationTracker>()) {}

GenerationManager::~GenerationManager() {
  {
    MutexLock lock(&maintain_mu_);
    stop_maintain_ = true;
  }
  maintain_cv_.notify_all();
  if (maintain_thread_.joinable()) maintain_thread_.join();
  std::shared_ptr<const Generation> last;
  {
    MutexLock lock(&mu_);
    last = std::move(current_);
  }
}

Result<std::unique_ptr<GenerationManager>> GenerationManager::Open(const std::string& path, DatasetOptions options) {
  GenerationsOptions o;
  o.dataset = options;
  return Open(path, std::move(o));
}

Result<std::unique_ptr<GenerationManager>> GenerationManager::Open(const std::string& path,
                                                                   GenerationsOptions options) {
  if (options.physical_per_table < 2) return Status::InvalidArgument("physical_per_table must be at least 2");
  if (options.builders_per_table < 1) return Status::InvalidArgument("builders_per_table must be at least 1");
  std::unique_ptr<GenerationManager> m(new GenerationManager(path, std::move(options)));
  VIGIL_RETURN_IF_ERROR(m->Recover());
  if (m->options_.maintain_interval.count() > 0) {
    m->maintain_thread_ = std::thread([p = m.get()] { p->MaintainLoop(); });
  }
  return m;
}

Env* GenerationManager::env() const { return options_.dataset.env ? options_.dataset.env : Env::Default(); }

int64_t GenerationManager::NowMs() const { return env()->NowMs(); }

Status GenerationManager::Recover() {
  // The newest version is the table: a corrupt newest manifest is an error naming the newest
  // good version (Dataset::Open), never a silent read of an older one. Segments that do not
  // verify are left out of the generation (TableSnapshot) and their fragments scanned.
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path_, std::nullopt, options_.dataset));
  BuildTicket ticket(nullptr, {});
  if (options_.budget) {  // the first generation's segments count like any later one's
    const uint64_t bytes = EstimateNewBytes(ds->manifest());
    VIGIL_ASSIGN_OR_RETURN(auto reservation, options_.budget->Reserve(bytes, bytes));
    ticket.set_reservation(std::move(reservation));
  }
  VIGIL_ASSIGN_OR_RETURN(auto g, BuildGeneration(std::move(ds), &ticket));
  MutexLock lock(&refresh_mu_);
  catalog_asked_ms_ = NowMs();
  Publish(std::move(g));
  return Status::OK();
}

uint64_t GenerationManager::EstimateNewBytes(const Manifest& next) const {
  std::shared_ptr<const Generation> cur;
  {
    MutexLock lock(&mu_);
    cur = current_;
  }
  uint64_t bytes = 0;
  for (const auto& s : next.segments) {
    if (cur && cur->snapshot->Segment(s.uuid)) continue;  // shared, not reopened
    for (const auto& f : s.files) bytes += f.size;
  }
  return bytes;
}

// Pins the version (before anyone can lease it), then opens and verifies it.
Result<std::shared_ptr<const Generation>> GenerationManager::BuildGeneration(std::shared_ptr<Dataset> ds,
                                                                             BuildTicket* ticket) {
  const uint64_t version = ds->version();
  if (options_.pins) VIGIL_RETURN_IF_ERROR(options_.pins->Pin(table_, version, owner_, NowMs(), options_.pin_ttl_ms));
  auto snap = query::TableSnapshot::Open(std::move(ds));
  if (!snap.ok()) {
    if (options_.pins) (void)options_.pins->Unpin(table_, version, owner_);  // expires otherwise
    return snap.status();
  }
  auto g = std::make_shared<Generation>();
  g->id = next_id_.fetch_add(1);
  g->snapshot = std::move(*snap);
  g->reservation = ticket->TakeReservation();
  g->tracker = tracker_;
  {
    MutexLock lock(&tracker_->mu);
    ++tracker_->live;
  }
  return std::shared_ptr<const Generation>(std::move(g));
}

void GenerationManager::Publish(std::shared_ptr<const Generation> g) {
  Issued issued{g, g->snapshot->version(), options_.pins != nullptr};
  VIGIL_CHECK(g->tracker == tracker_);  // built by this manager, counted in its bounds
  std::shared_ptr<const Generation> retired;
  {
    MutexLock lock(&mu_);
    // Readers only ever move forward: a published generation is newer than the one it replaces.
    VIGIL_CHECK(current_ == nullptr || g->snapshot->version() > current_->snapshot->version());
    retired = std::move(current_);
    current_ = std::move(g);
  }
  issued_.push_back(std::move(issued));
  // `retired` is destroyed here, outside mu_, when no lease holds it.
}

Lease GenerationManager::Acquire() const {
  MutexLock lock(&mu_);
  return Lease(current_);
}

Result<BuildTicket> GenerationManager::BeginBuild(uint64_t memory_bytes, uint64_t disk_bytes) {
  {
    MutexLock lock(&tracker_->mu);
    if (tracker_->builders >= static_cast<int>(options_.builders_per_table)) {
      return Status::Busy("table " + table_ + " already has " + std::to_string(tracker_->builders) +
                          " builder(s) running (bound " + std::to_string(options_.builders_per_table) + ")");
    }
    const auto has_room = [this]() VIGIL_REQUIRES(tracker_->mu) {
      return tracker_->live + tracker_->builders + 1 <= static_cast<int>(options_.physical_per_table);
    };
    if (!has_room() && options_.slot_wait.count() > 0) {
      (void)failpoint::Hit("generations.wait_for_slot");  // tests: the wait begins
      (void)env()->WaitForMs(lock, tracker_->cv, options_.slot_wait.count(), has_room);
    }
    if (!has_room()) {
      return Status::ResourceExhausted("table " + table_ + " holds " + std::to_string(tracker_->live) +
                                       " generation(s); building another would exceed the bound of " +
                                       std::to_string(options_.physical_per_table));
    }
    ++tracker_->builders;
  }
  BuildTicket ticket(tracker_, {});  // gives the slot back if the budget refuses
  if (options_.budget) {
    VIGIL_ASSIGN_OR_RETURN(auto reservation, options_.budget->Reserve(memory_bytes, disk_bytes));
    ticket.set_reservation(std::move(reservation));
  }
  return ticket;
}

Result<uint64_t> GenerationManager::Refresh() {
  MutexLock refresh_lock(&refresh_mu_);
  if (shut_down_) return Status::FailedPrecondition("the generation manager of " + table_ + " is shut down");
  (void)Reap();  // failures stay owed; retried by Maintain and Shutdown
  const uint64_t current = current_version();
  const int64_t now = NowMs();
  const bool ask_catalog = now - catalog_asked_ms_ >= options_.catalog_staleness.count();
  VIGIL_ASSIGN_OR_RETURN(uint64_t latest,
                         current > 0 ? Dataset::LatestVersionAfter(path_, current, options_.dataset, ask_catalog)
                                     : Dataset::LatestVersion(path_, options_.dataset));
  if (ask_catalog || current == 0) catalog_asked_ms_ = now;
  if (latest == current) return latest;
  // Open and verify off the read path; readers keep acquiring the old generation meanwhile.
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(path_, latest, options_.dataset));
  const uint64_t new_bytes = EstimateNewBytes(ds->manifest());
  VIGIL_ASSIGN_OR_RETURN(BuildTicket ticket, BeginBuild(new_bytes, new_bytes));
  VIGIL_ASSIGN_OR_RETURN(auto g, BuildGeneration(std::move(ds), &ticket));
  VIGIL_FAILPOINT("generations.before_swap");
  Publish(std::move(g));
  return latest;
}

Status GenerationManager::Reap() {
  if (!options_.pins) {
    std::erase_if(issued_, [](const Issued& i) { return i.generation.expired(); });
    return Status::OK();
  }
  std::set<uint64_t> held;
  for (const auto& i : issued_) {
    if (!i.generation.expired()) held.insert(i.version);
  }
  Status first;
  for (auto& i : issued_) {
    if (!i.generation.expired() || !i.pinned || held.count(i.version)) continue;
    Status st = options_.pins->Unpin(table_, i.version, owner_);
    if (st.ok()) {
      i.pinned = false;
    } else if (first.ok()) {
      first = st.WithContext("unpinning version " + std::to_string(i.version));
    }
  }
  std::erase_if(issued_, [](const Issued& i) { return i.generation.expired() && !i.pinned; });
  // No file is deleted while anyone can read it: a generation some lease holds keeps its pin.
  for (const auto& i : issued_) VIGIL_CHECK(i.pinned || i.generation.expired());
  return first;
}

Status GenerationManager::Maintain() {
  MutexLock refresh_lock(&refresh_mu_);
  Status st = Reap();
  if (options_.pins && !shut_down_) {
    auto hb = options_.pins->Heartbeat(owner_, NowMs(), options_.pin_ttl_ms);
    if (!hb.ok() && st.ok()) st = hb.status();
  }
  return st;
}

void GenerationManager::MaintainLoop() {
  while (true) {
    {
      MutexLock lock(&maintain_mu_);
      if (lock.WaitFor(maintain_cv_, options_.maintain_interval,
                       [this]() VIGIL_REQUIRES(maintain_mu_) { return stop_maintain_; })) {
        return;
      }
    }
    (void)Maintain();
  }
}

Status GenerationManager::Shutdown(std::chrono::milliseconds timeout) {
  std::shared_ptr<const Generation> last;
  {
    MutexLock refresh_lock(&refresh_mu_);
    shut_down_ = true;  // no Refresh from here on
    MutexLock lock(&mu_);
    last = std::move(current_);  // no new leases from here on
  }
  last.reset();
  {
    MutexLock lock(&maintain_mu_);
    stop_maintain_ = true;
  }
  maintain_cv_.notify_all();
  if (maintain_thread_.joinable() && maintain_thread_.get_id() != std::this_thread::get_id()) {
    maintain_thread_.join();
  }
  {
    MutexLock lock(&tracker_->mu);
    bool joined = env()->WaitForMs(lock, tracker_->cv, timeout.count(), [this]() VIGIL_REQUIRES(tracker_->mu) {
      return tracker_->live == 0 && tracker_->builders == 0;
    });
    if (!joined) {
      return Status::DeadlineExceeded("shutdown of " + table_ + ": " + std::to_string(tracker_->live) +
                                      " generation(s) still leased, " + std::to_string(tracker_->builders) +
                                      " build(s) running");
    }
  }
  MutexLock refresh_lock(&refresh_mu_);
  return Reap();
}

uint64_t GenerationManager::current_version() const {
  MutexLock lock(&mu_);
  return current_ ? current_->snapshot->version() : 0;
}

size_t GenerationManager::live_generations() const {
  MutexLock lock(&tracker_->mu);
  return static_cast<size_t>(tracker_->live);
}

std::set<uint64_t> GenerationManager::HeldVersions() const {
  MutexLock refresh_lock(&refresh_mu_);
  std::set<uint64_t> out;
  for (const auto& i : issued_) {
    if (!i.generation.expired()) out.insert(i.version);
  }
  return out;
}

size_t GenerationManager::pending_unpins() const {
  MutexLock refresh_lock(&refresh_mu_);
  size_t n = 0;
  for (const auto& i : issued_) n += (i.generation.expired() && i.pinned) ? 1 : 0;
  return n;
}

Result<VacuumReport> VacuumTable(const std::string& path, VacuumOptions options,
                                 const std::vector<const GenerationManager*>& local, VersionPinStore* pins,
                                 const std::string& table, int64_t now_ms, DatasetOptions dataset_options) {
  for (const auto* m : local) {
    for (uint64_t v : m->HeldVersions()) options.protected_versions.insert(v);
  }
  if (pins) {
    VIGIL_ASSIGN_OR_RETURN(auto pinned, pins->LiveVersions(table, now_ms));
    options.protected_versions.insert(pinned.begin(), pinned.end());
  }
  return Vacuum(path, options, dataset_options);
}

}  // namespace vigil::generations

// The durable index-job record (seed 000 appendix B), its events, the
// same-name fence key (seed 000 section 5) and the text rules of the job
// store: index-name normalization v1, resolution notes and bounded sanitized
// messages. Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/index/provider_job.h"
#include "vigil/jobs/job_state.h"
#include "vigil/worker/attempt_identity.h"

namespace vigil::jobs {

// CREATE | REPLACE | DROP | BUILD: the provider call a job makes (index/provider_job.h).
using Operation = index::JobOperation;
enum class IfMode { kNone, kIfNotExists, kIfExists };
enum class SqlCategory { kAnn, kBtree, kBitmap, kFts };

std::string_view Name(Operation v);    // CREATE | REPLACE | DROP | BUILD
std::string_view Name(IfMode v);       // NONE | IF_NOT_EXISTS | IF_EXISTS
std::string_view Name(SqlCategory v);  // ANN | BTREE | BITMAP | FTS
// Parse the names above; Corruption for unknown text (they come from storage).
Result<Operation> ParseOperation(std::string_view s);
Result<IfMode> ParseIfMode(std::string_view s);
Result<SqlCategory> ParseSqlCategory(std::string_view s);

constexpr std::string_view kProviderDirectory = "DIRECTORY";
// The error code of a job that no node took within [jobs] max_pending_seconds.
constexpr std::string_view kSchedulingExhausted = "SCHEDULING_EXHAUSTED";
// True when every commit of the provider's attempts is a version claim the metadata store
// fences (StoreVersionCatalog): once the job no longer runs the attempt, or the leader
// epoch that dispatched it no longer holds the lease, the attempt can never commit.
bool CommitsAreFenced(std::string_view provider);

// What proved that an attempt can no longer commit (the TERMINATION_PROVEN event's "proof"):
// its attempt lock was free, its lock file was missing and its node epoch replaced, or the
// store's fence refuses its commit (CommitsAreFenced).
enum class TerminationProof { kLockFree, kNodeReplaced, kCatalogFence };
std::string_view Name(TerminationProof v);  // LOCK_FREE | NODE_REPLACED | CATALOG_FENCE
constexpr int kNormalizationV1 = 1;
constexpr size_t kMaxIndexNameBytes = 256;
constexpr size_t kMaxMessageBytes = 1024;  // error messages, notes (bounds::kMaxExternalStringBytes)

// Normalization v1 of an exact index name (seed 000 section 5): the UTF-8 of Java's
// String.toLowerCase(Locale.ROOT). Each code point is lowered by Unicode's lowercase
// mapping (UnicodeData's simple mapping, and SpecialCasing's U+0130 to U+0069 U+0307: Java's
// per code point, "ÍNDICE" to "índice"), from a table fixed in the source
// (lowercase_v1.inc, Unicode 14.0; Java 17's Unicode 13.0 maps each code point it maps the
// same), so a persisted key never depends on the host's locale or libraries. One deviation:
// Java lowers a word-final capital sigma to final sigma (U+03C2) by context; v1 lowers every
// sigma, final sigma included, to U+03C3, so names Java lowers alike are always alike in v1
// (v1 also equates names that differ only in which sigma form they use). Bytes that are not
// UTF-8 are kept as they are. Not Unicode case folding (no "ß" to "ss").
std::string NormalizeIndexNameV1(std::string_view exact_name);

// A resolution note: trimmed, control characters removed. InvalidArgument when
// the input is not UTF-8, or the result is empty or longer than 1,024 bytes.
Result<std::string> NormalizeNote(std::string_view note);

// A provider or worker message made safe to persist: control characters
// removed, invalid UTF-8 replaced by '?', cut to at most 1,024 bytes on a
// character boundary. Never fails.
std::string SanitizeMessage(std::string_view message);

// Same-name fence key: one per (catalog incarnation, table incarnation,
// normalization version, normalized name).
struct FenceKey {
  std::string catalog_incarnation;
  std::string table_incarnation;
  int normalization_version = kNormalizationV1;
  std::string normalized_name;

  bool operator==(const FenceKey&) const = default;
};

// What an admission asks for; immutable once admitted.
struct JobSpec {
  std::string catalog_name = "local";
  std::string database_name;
  std::string table_name;
  std::string catalog_incarnation;
  std::string table_incarnation;
  std::string locator;     // dataset path (an external Lance table's LOCATION)
  std::string index_name;  // exact display name
  Operation operation = Operation::kCreate;
  index::TableEngine engine = index::TableEngine::kVigil;  // who owns the dataset
  IfMode if_mode = IfMode::kNone;
  std::vector<std::string> columns;
  std::optional<SqlCategory> category;       // absent for DROP
  std::optional<std::string> physical_type;  // IVF_PQ | BTREE | BITMAP | FTS; absent for DROP
  std::string properties_json = "{}";        // allowlisted, <= 400 bytes
  int64_t start_version = 0;
  std::string schema_fingerprint;

  bool operator==(const JobSpec&) const = default;
};

// InvalidArgument naming the first field that is missing or out of bounds.
Status ValidateSpec(const JobSpec& spec);

// One dispatch of a job (I1): persisted before anything is sent; the worker
// protocol carries the same value.
using AttemptIdentity = worker::AttemptIdentity;

struct JobRecord {
  // Set at admission; never changed by a transition.
  int64_t job_id = 0;
  std::string creator;
  int64_t created_at_ms = 0;
  JobSpec spec;
  FenceKey fence;
  std::string provider = std::string(kProviderDirectory);

  int64_t revision = 0;  // 1 after admission, +1 per transition
  JobState state;
  std::optional<int64_t> started_at_ms;
  std::optional<int64_t> finished_at_ms;
  std::optional<AttemptIdentity> attempt;
  bool invoked = false;
  bool termination_proven = false;
  std::optional<std::string> error_code;     // typed, e.g. COMMIT_CONFLICT
  std::optional<std::string> error_message;  // sanitized, <= 1,024 bytes
  std::optional<int64_t> committed_version;
  std::optional<int64_t> last_observed_version;
  std::optional<std::string> last_observed_fingerprint;
  int64_t refresh_generation = 0;
  int64_t refresh_retries = 0;
  std::optional<int64_t> refresh_next_at_ms;
  std::optional<std::string> refresh_last_error;
  std::optional<int64_t> reconcile_next_at_ms;
  std::optional<int64_t> reconcile_last_at_ms;
  int64_t reconcile_backoff_s = 0;
  std::optional<std::string> resolution_id;  // the pending ACK / FORCE request
  std::optional<std::string> progress_phase;
  int64_t progress_done = 0;
  int64_t progress_total = 0;
  // Retention (set by JobStore::Archive only).
  std::optional<int64_t> archived_at_ms;
  bool tombstone = false;

  bool operator==(const JobRecord&) const = default;
};

// Event kinds.
namespace event {
constexpr std::string_view kAdmitted = "ADMITTED";
constexpr std::string_view kCancelRequested = "CANCEL_REQUESTED";
constexpr std::string_view kCancelled = "CANCELLED";
constexpr std::string_view kDispatched = "DISPATCHED";
constexpr std::string_view kResult = "RESULT";
constexpr std::string_view kChangeObserved = "CHANGE_OBSERVED";
constexpr std::string_view kTerminationProven = "TERMINATION_PROVEN";
constexpr std::string_view kFinalRead = "FINAL_READ";
constexpr std::string_view kAttributed = "ATTRIBUTED";
constexpr std::string_view kRefreshStarted = "REFRESH_STARTED";
constexpr std::string_view kRefreshDone = "REFRESH_DONE";
constexpr std::string_view kRefreshFailed = "REFRESH_FAILED";
constexpr std::string_view kAckRequested = "ACK_REQUESTED";
constexpr std::string_view kAckCompleted = "ACK_COMPLETED";
constexpr std::string_view kForceRequested = "FORCE_REQUESTED";
constexpr std::string_view kForceCompleted = "FORCE_COMPLETED";
constexpr std::string_view kSupersededByEmergencyForce = "SUPERSEDED_BY_EMERGENCY_FORCE";
constexpr std::string_view kEmergencyForceRequested = "FORCE_WITHOUT_REFRESH_REQUESTED";
constexpr std::string_view kEmergencyForceCompleted = "FORCE_WITHOUT_REFRESH_COMPLETED";
}  // namespace event

// An event a transition appends (the store adds job id, seq, part, time, actor
// and the from/to states to its detail).
struct EventDraft {
  std::string kind;
  std::optional<std::string> resolution_id;
  std::optional<std::string> note;
  std::map<std::string, std::string> detail;
};

// The warnings of a FORCE_RELEASE of `job` (seed 000 section 8.2): an old executor may still
// commit after the release; WITHOUT REFRESH also leaves caches stale. Shown by RESOLVE and
// SHOW INDEX JOB and kept in the audit record.
std::vector<std::string> ForceWarnings(const JobRecord& job, bool without_refresh);

// One persisted, append-only event. seq is the revision its transition produced;
// part orders several events of one transition.
struct JobEvent {
  int64_t job_id = 0;
  int64_t seq = 0;
  int64_t part = 0;
  int64_t at_ms = 0;
  std::string kind;
  std::string actor;
  std::optional<std::string> resolution_id;
  std::optional<std::string> note;
  std::string detail_json;  // a JSON object

  bool operator==(const JobEvent&) const = default;
};

}  // namespace vigil::jobs

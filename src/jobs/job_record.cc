#include "vigil/jobs/job_record.h"

#include <array>
#include <utility>

#include "enum_names.h"

#include "vigil/common/bounds.h"

namespace vigil::jobs {

namespace {

using internal::NameOf;
using internal::ParseOf;

constexpr std::array<std::pair<Operation, std::string_view>, 4> kOperation{{
    {Operation::kCreate, "CREATE"},
    {Operation::kReplace, "REPLACE"},
    {Operation::kDrop, "DROP"},
    {Operation::kBuild, "BUILD"},
}};
constexpr std::array<std::pair<IfMode, std::string_view>, 3> kIfMode{{
    {IfMode::kNone, "NONE"},
    {IfMode::kIfNotExists, "IF_NOT_EXISTS"},
    {IfMode::kIfExists, "IF_EXISTS"},
}};
constexpr std::array<std::pair<SqlCategory, std::string_view>, 4> kCategory{{
    {SqlCategory::kAnn, "ANN"},
    {SqlCategory::kBtree, "BTREE"},
    {SqlCategory::kBitmap, "BITMAP"},
    {SqlCategory::kFts, "FTS"},
}};

// Length of the well-formed UTF-8 sequence starting at s[i]; 0 when malformed.
size_t Utf8Length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// C0 controls, DEL and the C1 controls U+0080..U+009F.
bool IsControl(std::string_view s, size_t i, size_t n) {
  auto c = static_cast<unsigned char>(s[i]);
  if (n == 1) return c < 0x20 || c == 0x7F;
  return n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
}

// `s` without control characters; invalid bytes become `invalid` (or fail when it is 0).
Result<std::string> StripControls(std::string_view s, char invalid) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8Length(s, i);
    if (n == 0) {
      if (invalid == 0) return Status::InvalidArgument("text is not valid UTF-8");
      out.push_back(invalid);
      ++i;
      continue;
    }
    if (!IsControl(s, i, n)) out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

Status CheckField(std::string_view field, std::string_view value, size_t max_bytes) {
  if (value.empty()) return Status::InvalidArgument("job spec: " + std::string(field) + " is empty");
  if (value.size() > max_bytes) {
    return Status::InvalidArgument("job spec: " + std::string(field) + " is longer than " + std::to_string(max_bytes) +
                                   " bytes");
  }
  auto clean = StripControls(value, 0);
  if (!clean.ok() || *clean != value) {
    return Status::InvalidArgument("job spec: " + std::string(field) + " is not printable UTF-8");
  }
  return Status::OK();
}

}  // namespace

bool CommitsAreFenced(std::string_view provider) { return provider == kProviderDirectory; }

std::string_view Name(TerminationProof v) {
  switch (v) {
    case TerminationProof::kLockFree:
      return "LOCK_FREE";
    case TerminationProof::kNodeReplaced:
      return "NODE_REPLACED";
    case TerminationProof::kCatalogFence:
      return "CATALOG_FENCE";
  }
  return "?";
}

std::string_view Name(Operation v) { return NameOf(v, kOperation); }
std::string_view Name(IfMode v) { return NameOf(v, kIfMode); }
std::string_view Name(SqlCategory v) { return NameOf(v, kCategory); }
Result<Operation> ParseOperation(std::string_view s) { return ParseOf(s, kOperation, "operation"); }
Result<IfMode> ParseIfMode(std::string_view s) { return ParseOf(s, kIfMode, "if mode"); }
Result<SqlCategory> ParseSqlCategory(std::string_view s) { return ParseOf(s, kCategory, "SQL category"); }

std::string NormalizeIndexNameV1(std::string_view exact_name) {
  std::string out(exact_name);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Result<std::string> NormalizeNote(std::string_view note) {
  VIGIL_ASSIGN_OR_RETURN(std::string clean, StripControls(note, 0));
  std::string_view trimmed = TrimSpaces(clean);
  if (trimmed.empty()) return Status::InvalidArgument("resolution note is empty");
  if (trimmed.size() > bounds::kMaxResolutionNoteBytes) {
    return Status::InvalidArgument("resolution note is " + std::to_string(trimmed.size()) + " bytes, more than " +
                                   std::to_string(bounds::kMaxResolutionNoteBytes));
  }
  return std::string(trimmed);
}

std::string SanitizeMessage(std::string_view message) {
  std::string clean = *StripControls(message, '?');
  if (clean.size() <= kMaxMessageBytes) return clean;
  size_t cut = kMaxMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(clean[cut]) & 0xC0) == 0x80) --cut;
  clean.resize(cut);
  return clean;
}

std::vector<std::string> ForceWarnings(const JobRecord& job, bool without_refresh) {
  std::vector<std::string> w;
  w.push_back("job " + std::to_string(job.job_id) + ": an old executor may still commit after the release and " +
              "overwrite, remove or reintroduce index '" + job.spec.index_name + "'");
  if (without_refresh) {
    w.push_back("job " + std::to_string(job.job_id) + ": refresh was skipped; cached state of table " +
                job.spec.table_name + " may be stale until REFRESH TABLE");
  }
  return w;
}

Status ValidateSpec(const JobSpec& spec) {
  VIGIL_RETURN_IF_ERROR(CheckField("catalog name", spec.catalog_name, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckField("database name", spec.database_name, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckField("table name", spec.table_name, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckField("catalog incarnation", spec.catalog_incarnation, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckField("table incarnation", spec.table_incarnation, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckField("locator", spec.locator, bounds::kMaxExternalStringBytes));
  VIGIL_RETURN_IF_ERROR(CheckField("index name", spec.index_name, kMaxIndexNameBytes));
  VIGIL_RETURN_IF_ERROR(CheckField("schema fingerprint", spec.schema_fingerprint, kMaxIndexNameBytes));
  if (spec.columns.size() > bounds::kMaxColumnsPerEntry) {
    return Status::InvalidArgument("job spec: more than " + std::to_string(bounds::kMaxColumnsPerEntry) + " columns");
  }
  for (const std::string& c : spec.columns) VIGIL_RETURN_IF_ERROR(CheckField("column", c, kMaxIndexNameBytes));
  if (spec.operation != Operation::kDrop && (spec.columns.empty() || !spec.category || !spec.physical_type)) {
    return Status::InvalidArgument("job spec: " + std::string(Name(spec.operation)) +
                                   " needs columns, a SQL category and a physical type");
  }
  if (spec.physical_type) VIGIL_RETURN_IF_ERROR(CheckField("physical type", *spec.physical_type, 32));
  if (spec.properties_json.size() > bounds::kMaxPropertiesJsonBytes) {
    return Status::InvalidArgument("job spec: properties JSON is longer than " +
                                   std::to_string(bounds::kMaxPropertiesJsonBytes) + " bytes");
  }
  if (spec.start_version < 0) return Status::InvalidArgument("job spec: start version is negative");
  return Status::OK();
}

}  // namespace vigil::jobs

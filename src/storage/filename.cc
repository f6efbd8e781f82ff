#include "vigil/storage/filename.h"

#include <algorithm>
#include <charconv>

#include "vigil/common/names.h"

namespace vigil {

namespace {

constexpr std::string_view kManifestSuffix = ".manifest";
constexpr std::string_view kFragmentSuffix = ".frag";
constexpr std::string_view kDeletionSuffix = ".del";
constexpr size_t kUuidLength = 36;
constexpr size_t kDeletionTagLength = 8;

std::string Join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  out += '/';
  out += name;
  return out;
}

// A decimal number without sign or leading zeros that fits T.
template <typename T>
std::optional<T> ParseDecimal(std::string_view digits) {
  if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  T value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::string TableDirName(std::string_view table, const Uuid& incarnation) {
  return std::string(table) + "." + incarnation.ToString() + std::string(kTableDirSuffix);
}

std::string LegacyTableDirName(std::string_view table) { return std::string(table) + std::string(kTableDirSuffix); }

std::optional<TableDirParts> ParseTableDirName(std::string_view name) {
  if (!name.ends_with(kTableDirSuffix)) return std::nullopt;
  std::string_view stem = name.substr(0, name.size() - kTableDirSuffix.size());
  TableDirParts parts;
  const size_t dot = stem.find('.');
  if (dot != std::string_view::npos) {
    Result<Uuid> uuid = Uuid::Parse(stem.substr(dot + 1));
    if (!uuid.ok() || uuid->ToString() != stem.substr(dot + 1)) return std::nullopt;
    parts.incarnation = *uuid;
    stem = stem.substr(0, dot);
  }
  if (!ValidateIdentifier(stem, "table name").ok()) return std::nullopt;
  parts.table = std::string(stem);
  return parts;
}

std::string UploadSpoolPath() { return Join(kRootMetaDirName, "uploads"); }

std::string UploadSpoolDirName(int64_t pid, const Uuid& nonce) { return std::to_string(pid) + "-" + nonce.ToString(); }

std::string SpooledBodyName(const Uuid& id) { return "upload-" + id.ToString(); }

std::string DroppedTablePath(std::string_view incarnation, std::string_view suffix) {
  std::string name(incarnation);
  if (!suffix.empty()) name += "-" + std::string(suffix);
  return Join(kDroppedDir, name);
}

std::optional<std::string> ParseDroppedTableName(std::string_view name) {
  if (name.size() < kUuidLength) return std::nullopt;
  std::string_view id = name.substr(0, kUuidLength);
  Result<Uuid> uuid = Uuid::Parse(id);
  if (!uuid.ok() || uuid->ToString() != id) return std::nullopt;
  if (name.size() > kUuidLength && name[kUuidLength] != '-') return std::nullopt;
  return std::string(id);
}

std::string ManifestPath(uint64_t version) {
  return Join(kVersionsDir, std::to_string(version) + std::string(kManifestSuffix));
}

std::optional<uint64_t> ParseManifestName(std::string_view name) {
  if (!name.ends_with(kManifestSuffix)) return std::nullopt;
  return ParseDecimal<uint64_t>(name.substr(0, name.size() - kManifestSuffix.size()));
}

constexpr std::string_view kTempManifestPrefix = ".tmp-";
constexpr std::string_view kTempIdentityPrefix = ".identity-";

bool IsPrefixedUuid(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return false;
  std::string_view id = name.substr(prefix.size());
  Result<Uuid> uuid = Uuid::Parse(id);
  return uuid.ok() && uuid->ToString() == id;
}

constexpr std::string_view kClaimInfix = ".claim-";

std::string ClaimManifestPath(uint64_t version) {
  return Join(kVersionsDir, std::to_string(version) + std::string(kClaimInfix) + Uuid::Generate().ToString());
}

std::optional<uint64_t> ParseClaimManifestName(std::string_view name) {
  const size_t at = name.find(kClaimInfix);
  if (at == std::string_view::npos || !IsPrefixedUuid(name.substr(at), kClaimInfix)) return std::nullopt;
  return ParseDecimal<uint64_t>(name.substr(0, at));
}

bool IsClaimManifestPath(std::string_view rel, uint64_t version) {
  const std::string dir = std::string(kVersionsDir) + "/";
  if (rel.substr(0, dir.size()) != dir) return false;
  std::optional<uint64_t> v = ParseClaimManifestName(rel.substr(dir.size()));
  return v && *v == version;
}

std::string TempManifestPath() {
  return Join(kVersionsDir, std::string(kTempManifestPrefix) + Uuid::Generate().ToString());
}

bool IsTempManifestName(std::string_view name) { return IsPrefixedUuid(name, kTempManifestPrefix); }

std::string TempIdentityName() { return std::string(kTempIdentityPrefix) + Uuid::Generate().ToString(); }

bool IsTempIdentityName(std::string_view name) { return IsPrefixedUuid(name, kTempIdentityPrefix); }

std::string NewFragmentPath() { return Join(kDataDir, Uuid::Generate().ToString() + std::string(kFragmentSuffix)); }

bool IsFragmentFileName(std::string_view name) {
  if (!name.ends_with(kFragmentSuffix)) return false;
  std::string_view id = name.substr(0, name.size() - kFragmentSuffix.size());
  Result<Uuid> uuid = Uuid::Parse(id);
  return uuid.ok() && uuid->ToString() == id;
}

std::string NewDeletionFilePath(uint32_t fragment, uint64_t version) {
  const std::string tag = Uuid::Generate().ToString().substr(0, kDeletionTagLength);
  return Join(kDeletionsDir,
              std::to_string(fragment) + "-" + std::to_string(version) + "-" + tag + std::string(kDeletionSuffix));
}

std::optional<DeletionFileParts> ParseDeletionFileName(std::string_view name) {
  if (!name.ends_with(kDeletionSuffix)) return std::nullopt;
  std::string_view stem = name.substr(0, name.size() - kDeletionSuffix.size());
  const size_t first = stem.find('-');
  if (first == std::string_view::npos) return std::nullopt;
  std::string_view rest = stem.substr(first + 1);
  const size_t second = rest.find('-');
  std::string_view version_text = rest.substr(0, second);
  if (second != std::string_view::npos) {
    std::string_view tag = rest.substr(second + 1);
    if (tag.size() != kDeletionTagLength || !IsLowerHex(tag)) return std::nullopt;
  }
  std::optional<uint32_t> fragment = ParseDecimal<uint32_t>(stem.substr(0, first));
  std::optional<uint64_t> version = ParseDecimal<uint64_t>(version_text);
  if (!fragment || !version) return std::nullopt;
  return DeletionFileParts{*fragment, *version};
}

std::string SegmentDirPath(const Uuid& uuid) { return Join(kIndicesDir, uuid.ToString()); }

std::string StagingPath(std::string_view id) { return Join(kStagingDir, id); }

bool IsStagingName(std::string_view n) {
  if (n.empty() || n.size() > 128 || n[0] == '.') return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
  });
}

std::string AttemptLockPath(std::string_view attempt_id) { return Join(StagingPath(attempt_id), "attempt.lock"); }

}  // namespace vigil

// Fixed bounds that every surface enforces (seed 000 appendix A and the
// storage formats). Exceeding one is an error, never a truncation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vigil::bounds {

constexpr size_t kMaxPropertiesJsonBytes = 400;   // allowlisted index properties JSON
constexpr size_t kMaxExternalStringBytes = 1024;  // any string from outside (notes, messages)
constexpr size_t kMaxColumnsPerEntry = 64;
constexpr size_t kMaxColumnNameBytesPerEntry = 16 * 1024;
constexpr size_t kMaxResolutionNoteBytes = 1024;
constexpr size_t kMaxFieldsPerSchema = 1024;
constexpr uint32_t kMaxVectorDimension = 65536;
constexpr size_t kMaxStringValueBytes = 16 * 1024 * 1024;  // one STRING cell
constexpr size_t kMaxManifestBytes = 256 * 1024 * 1024;
constexpr size_t kMaxFragmentFooterBytes = 64 * 1024 * 1024;
constexpr size_t kMaxBlockBytes = 512 * 1024 * 1024;
// Arrays and objects nested in one JSON document from outside (a request body, a row).
constexpr int kMaxJsonDepth = 64;

}  // namespace vigil::bounds

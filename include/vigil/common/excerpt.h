// Input bytes in messages: an error about input a user supplied (a file's bytes,
// a cell, a literal) quotes it only as a short excerpt, so input that is not
// what was expected is never echoed whole. At most kExcerptBytes bytes, quoted,
// printable ASCII as is and every other byte (and '\') as \xNN: 'root:...',
// 'a\x00b'. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vigil {

constexpr size_t kExcerptBytes = 32;

// The first min(max_bytes, kExcerptBytes) bytes of `bytes`, "..." when cut.
std::string Excerpt(std::string_view bytes, size_t max_bytes = kExcerptBytes);
// The last kExcerptBytes bytes of `bytes`, "..." first when cut.
std::string ExcerptEnd(std::string_view bytes);

}  // namespace vigil

// UTF-8 sequences and the control characters that never go into a stored name
// or message (the metadata store's text rules: jobs/job_record.h, the table
// registry's names in catalog/catalog_store.h). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace vigil {

// Length of the well-formed UTF-8 sequence starting at s[i] (1..4); 0 when malformed
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t Utf8Length(std::string_view s, size_t i);
// Whether the sequence of `n` bytes at s[i] is a C0 control, DEL or a C1 control
// (U+0080..U+009F).
bool IsControlCharacter(std::string_view s, size_t i, size_t n);
// Whether `s` is well-formed UTF-8 without control characters (the empty string is).
bool IsPrintableUtf8(std::string_view s);

}  // namespace vigil

// ASCII case folding without the locale: identifiers, keywords, setting names and
// HTTP field names are ASCII, and a byte past 0x7F is kept as it is. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace vigil {

constexpr char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// `s` with A-Z as a-z.
std::string AsciiLowered(std::string_view s);

// True when `a` and `b` differ at most in the case of ASCII letters.
bool AsciiEqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace vigil

// Name tables for the job layer's enums: one array of (value, name) pairs per
// enum, looked up both ways. Internal; pure functions.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "vigil/common/status.h"

namespace vigil::jobs::internal {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

template <typename E, size_t N>
std::string_view NameOf(E v, const NameTable<E, N>& names) {
  for (const auto& [e, n] : names) {
    if (e == v) return n;
  }
  return "?";
}

// Corruption for unknown text: these names come from storage.
template <typename E, size_t N>
Result<E> ParseOf(std::string_view s, const NameTable<E, N>& names, std::string_view what) {
  for (const auto& [e, n] : names) {
    if (n == s) return e;
  }
  return Status::Corruption("unknown " + std::string(what) + " '" + std::string(s) + "'");
}

}  // namespace vigil::jobs::internal

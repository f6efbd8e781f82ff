// Deletion files: `_deletions/<fragment>-<version>.del`, the set of deleted
// row offsets of one fragment as a CRoaring bitmap, checksummed. A new
// deletion file replaces the old one in the next manifest (it holds the union).
// DeletionVector is a value; not thread-safe for concurrent mutation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <roaring/roaring.hh>

#include "vigil/common/status.h"

namespace vigil {

class DeletionVector {
 public:
  void Add(uint32_t offset) { bits_.add(offset); }
  bool Contains(uint32_t offset) const { return bits_.contains(offset); }
  uint64_t Cardinality() const { return bits_.cardinality(); }
  void Union(const DeletionVector& other) { bits_ |= other.bits_; }
  const Roaring& bits() const { return bits_; }

  // Magic "VGLDEL01", portable roaring bytes, XXH3 checksum.
  std::string Encode() const;
  // Corruption on any defect (never a crash).
  static Result<DeletionVector> Decode(std::string_view bytes);

 private:
  Roaring bits_;
};

}  // namespace vigil

// Full-text queries answered from a segment's native postings: queries of
// plain words ORed (MaxScore: the terms whose bounds together cannot beat the
// k-th best score so far are only probed, never iterated) or ANDed
// (leapfrog intersection), both skipping whole blocks whose impact bounds
// cannot beat it. Scores are computed exactly as on the FTS5 path
// (Bm25TermScore summed in phrase order), so both paths return the same hits.
//
// Thread safety: pure functions over an immutable PostingsIndex.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "index/fts_postings.h"
#include "vigil/index/fts.h"
#include "vigil/index/segment.h"

namespace vigil::index::fts_internal {

// A query of plain words: `a b`, `a AND b` (every word) or `a OR b` (any word).
struct PlainQuery {
  bool any = false;
  std::vector<std::string> words;  // as written, before tokenization
};

// The plain reading of an FTS5 query, or nullopt when it uses anything else
// (strings, prefixes, NEAR, NOT, column filters, parentheses, AND mixed with OR).
std::optional<PlainQuery> ParsePlainQuery(std::string_view query);

// Statistics of a query whose phrase i is the single token `terms[i]`.
FtsStats PostingsStats(const PostingsIndex& index, const std::vector<std::string>& terms);

// The best `k` documents containing any (`any`) or every term, that pass
// `filter` (may be null), scored with `table_stats`; Corruption when a block is malformed.
Result<std::vector<FtsHit>> PostingsTopK(const PostingsIndex& index, const std::vector<std::string>& terms, bool any,
                                         const FtsStats& table_stats, const RowFilter* filter, uint32_t k);

}  // namespace vigil::index::fts_internal

// What vector_search applies before top-k: its options JSON ("nprobes",
// "refine_factor", "use_index", "metric", "filter"), the prefilter the rewrite
// moved out of the WHERE clause (a JSON list of {"c": column, "o": operator,
// "v": [value argument numbers]}), and the "filter" option, a Vigil predicate
// (AND / OR / NOT over comparisons, IN, BETWEEN, IS NULL on the table's
// columns) expanded into a disjunction of FilterRows conjunctions; the top-k
// of the union is merged exactly from the top-k of each term.
// Pure functions; thread-safe.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/query/query.h"
#include "vigil/storage/schema.h"

namespace vigil::sql::internal {

constexpr size_t kMaxFilterTerms = 64;

struct SearchOptions {
  query::VectorQueryOptions query;
  std::string filter;  // a Vigil predicate, empty for none
};

// Parses the options JSON object (empty text: defaults) of a search for the top `k`
// (set as query.k). InvalidArgument names an unknown key, a value of the wrong type,
// malformed JSON, or a refine_factor asking for more than kIvfPqMaxSearchK candidates.
Result<SearchOptions> ParseSearchOptions(const std::string& json, uint32_t k);
// The rewrite's prefilter spec with its values (`values[i]` is value argument i); *empty
// when a NULL value makes it unsatisfiable. Values must convert exactly to the column type.
Result<std::vector<query::ColumnPredicate>> ParsePrefilter(const Schema& schema, const std::string& spec,
                                                           sqlite3_value** values, int num_values, bool* empty);
// The "filter" predicate as a disjunction (at most kMaxFilterTerms) of conjunctions.
Result<std::vector<std::vector<query::ColumnPredicate>>> FilterToDnf(const Schema& schema, const std::string& filter);
// Sorts hits by (distance, row), drops repeated rows and keeps the best k.
void MergeHits(std::vector<query::VectorHit>* hits, uint32_t k);
// "column emb, k 10, nprobes 20, index, prefilter: category = ?, filter: 2 terms"
std::string DescribeSearch(const std::string& column, const SearchOptions& opts,
                           const std::vector<query::ColumnPredicate>& prefilter, size_t filter_terms);

}  // namespace vigil::sql::internal

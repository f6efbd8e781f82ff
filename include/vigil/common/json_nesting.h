// The nesting bound of JSON from outside (request bodies, JSON Lines rows,
// search options): checked by one linear scan before any parser builds a tree,
// so no recursive routine (a dump, a canonical form, a destructor) ever meets a
// document deeper than bounds::kMaxJsonDepth. Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "vigil/common/status.h"

namespace vigil {

// OK when no array or object in `text` nests deeper than `max_depth` levels (a top-level
// array is depth 1); brackets inside strings do not count. InvalidArgument naming `what`,
// the bound and the byte offset where it was passed otherwise. Whether `text` is valid JSON
// is the parser's question: this only bounds the depth, in O(size) time and O(1) space.
Status CheckJsonNesting(std::string_view text, int max_depth, std::string_view what);

}  // namespace vigil

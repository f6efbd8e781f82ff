// Renders rows of text as an aligned, boxed table for terminal output.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace vigil::cli {

// Columns padded to their widest cell; cells longer than `max_cell` are cut with "...".
std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        size_t max_cell = 40);

}  // namespace vigil::cli

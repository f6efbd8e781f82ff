// Renders rows of text as an aligned, boxed table for terminal output.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace vigil::cli {

// Columns padded to their widest cell, counted in characters; cells longer than
// `max_cell` characters are cut with "...". Each cell is one printable line: NUL,
// tab, CR, LF, other control characters and bytes that are not UTF-8 are shown as
// \0, \t, \r, \n, \xNN (C0, DEL, stray bytes) or \u00NN (C1); other text is kept.
std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        size_t max_cell = 40);

}  // namespace vigil::cli

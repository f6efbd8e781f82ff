#include "cli/table_printer.h"

#include <algorithm>

namespace vigil::cli {

namespace {

// Cuts at a UTF-8 character boundary so no multi-byte character is split.
std::string Clip(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

std::string Line(const std::vector<size_t>& widths) {
  std::string out = "+";
  for (size_t w : widths) out += std::string(w + 2, '-') + "+";
  return out + "\n";
}

std::string Row(const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
  std::string out = "|";
  for (size_t i = 0; i < widths.size(); ++i) {
    std::string c = i < cells.size() ? cells[i] : "";
    out += " " + c + std::string(widths[i] - c.size(), ' ') + " |";
  }
  return out + "\n";
}

}  // namespace

std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        size_t max_cell) {
  std::vector<std::string> h;
  for (const auto& c : header) h.push_back(Clip(c, max_cell));
  std::vector<std::vector<std::string>> body;
  std::vector<size_t> widths(h.size());
  for (size_t i = 0; i < h.size(); ++i) widths[i] = h[i].size();
  for (const auto& r : rows) {
    body.emplace_back();
    for (size_t i = 0; i < h.size(); ++i) {
      body.back().push_back(Clip(i < r.size() ? r[i] : "", max_cell));
      widths[i] = std::max(widths[i], body.back().back().size());
    }
  }
  std::string out = Line(widths) + Row(h, widths) + Line(widths);
  for (const auto& r : body) out += Row(r, widths);
  return out + Line(widths);
}

}  // namespace vigil::cli

#include "cli/table_printer.h"

#include <algorithm>

namespace vigil::cli {

namespace {

// Bytes of the valid UTF-8 sequence at s[i]; 0 when s[i] does not start one.
size_t SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) -> unsigned { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
  unsigned c = byte(i);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned b = byte(i + 1);
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return b >= lo && b <= hi && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned b = byte(i + 1);
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return b >= lo && b <= hi && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

void AppendHex(const char* prefix, unsigned v, std::string* out) {
  static const char kDigits[] = "0123456789abcdef";
  *out += prefix;
  *out += kDigits[(v >> 4) & 15];
  *out += kDigits[v & 15];
}

// One line of printable text: UTF-8 is kept; NUL, tab, line ends, other control
// characters (C0, DEL, C1) and bytes that are not UTF-8 become escapes.
std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned c = static_cast<unsigned char>(s[i]);
    size_t n = SequenceLength(s, i);
    if (n == 0) {
      AppendHex("\\x", c, &out);
      ++i;
      continue;
    }
    if (c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {  // U+0080..U+009F
      AppendHex("\\u00", static_cast<unsigned char>(s[i + 1]), &out);
    } else if (c == 0) {
      out += "\\0";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      AppendHex("\\x", c, &out);
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

// Characters (code points) of escaped, hence valid UTF-8, text.
size_t Width(std::string_view s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// At most `max` characters, the last three "..." when cut; never splits a character.
std::string Clip(const std::string& s, size_t max) {
  if (Width(s) <= max) return s;
  size_t keep = max > 3 ? max - 3 : 0;
  size_t end = 0;
  for (size_t chars = 0; end < s.size(); ++end) {
    if ((static_cast<unsigned char>(s[end]) & 0xC0) != 0x80 && chars++ == keep) break;
  }
  return s.substr(0, end) + "...";
}

struct Cell {
  std::string text;
  size_t width = 0;
};

Cell MakeCell(std::string_view raw, size_t max_cell) {
  Cell c{Clip(Escape(raw), max_cell)};
  c.width = Width(c.text);
  return c;
}

std::string Line(const std::vector<size_t>& widths) {
  std::string out = "+";
  for (size_t w : widths) out += std::string(w + 2, '-') + "+";
  return out + "\n";
}

std::string Row(const std::vector<Cell>& cells, const std::vector<size_t>& widths) {
  std::string out = "|";
  for (size_t i = 0; i < widths.size(); ++i) {
    const Cell& c = cells[i];
    out += " " + c.text + std::string(widths[i] - c.width, ' ') + " |";
  }
  return out + "\n";
}

}  // namespace

std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        size_t max_cell) {
  std::vector<Cell> h;
  for (const auto& c : header) h.push_back(MakeCell(c, max_cell));
  std::vector<size_t> widths(h.size());
  for (size_t i = 0; i < h.size(); ++i) widths[i] = h[i].width;
  std::vector<std::vector<Cell>> body;
  for (const auto& r : rows) {
    body.emplace_back();
    for (size_t i = 0; i < h.size(); ++i) {
      body.back().push_back(MakeCell(i < r.size() ? r[i] : "", max_cell));
      widths[i] = std::max(widths[i], body.back().back().width);
    }
  }
  std::string out = Line(widths) + Row(h, widths) + Line(widths);
  for (const auto& r : body) out += Row(r, widths);
  return out + Line(widths);
}

}  // namespace vigil::cli

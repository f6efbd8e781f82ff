#include "vigil/storage/temporal.h"

#include <cctype>
#include <charconv>

#include "vigil/common/excerpt.h"

namespace vigil {

namespace {

constexpr int64_t kMicrosPerDay = 86400LL * 1000000LL;

// `s` without the spaces and tabs around it.
std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Reads exactly `n` digits at `*p`.
bool Digits(std::string_view s, size_t* p, size_t n, int64_t* out) {
  if (*p + n > s.size()) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[*p + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *out = v;
  return true;
}

// YYYY-MM-DD at the start of `s`; advances `*p`.
bool ParseDatePart(std::string_view s, size_t* p, int64_t* days) {
  int64_t y, m, d;
  if (!Digits(s, p, 4, &y) || *p >= s.size() || s[(*p)++] != '-') return false;
  if (!Digits(s, p, 2, &m) || *p >= s.size() || s[(*p)++] != '-') return false;
  if (!Digits(s, p, 2, &d)) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1 || m < 1 || m > 12 || d < 1) return false;
  if (d > kDays[m - 1] + (m == 2 && IsLeap(y) ? 1 : 0)) return false;
  *days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return true;
}

// [+-]HH:MM, [+-]HHMM or Z at `*p`, as seconds east of UTC.
bool ParseZone(std::string_view s, size_t* p, int64_t* offset_s) {
  if (*p == s.size()) return true;
  char c = s[*p];
  if (c == 'Z' || c == 'z') {
    ++*p;
    return true;
  }
  if (c != '+' && c != '-') return false;
  ++*p;
  int64_t hh, mm;
  if (!Digits(s, p, 2, &hh)) return false;
  if (*p < s.size() && s[*p] == ':') ++*p;
  if (!Digits(s, p, 2, &mm) || hh > 23 || mm > 59) return false;
  *offset_s = (c == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
  return true;
}

// An integer with an optional sign ('+' too), nothing around it.
bool ParseInteger(std::string_view s, int64_t* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

}  // namespace

bool ParseDateText(std::string_view s, int64_t* days) {
  size_t p = 0;
  return ParseDatePart(s, &p, days) && p == s.size();
}

bool ParseTimestampText(std::string_view s, int64_t* micros, bool require_time) {
  size_t p = 0;
  int64_t days;
  if (!ParseDatePart(s, &p, &days)) return false;
  int64_t hh = 0, mi = 0, ss = 0, frac = 0, offset_s = 0;
  if (p == s.size()) {
    if (require_time) return false;
  } else {
    if (s[p] != 'T' && s[p] != 't' && s[p] != ' ') return false;
    ++p;
    if (!Digits(s, &p, 2, &hh) || p >= s.size() || s[p++] != ':' || !Digits(s, &p, 2, &mi)) return false;
    if (p < s.size() && s[p] == ':') {
      ++p;
      if (!Digits(s, &p, 2, &ss)) return false;
      if (p < s.size() && s[p] == '.') {
        ++p;
        size_t start = p;
        int64_t scale = 100000;
        while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
          frac += (s[p] - '0') * scale;  // digits beyond microseconds are dropped
          scale /= 10;
          ++p;
        }
        if (p == start) return false;
      }
    }
    if (hh > 23 || mi > 59 || ss > 60 || !ParseZone(s, &p, &offset_s) || p != s.size()) return false;
  }
  *micros = days * kMicrosPerDay + ((hh * 60 + mi) * 60 + ss - offset_s) * 1000000 + frac;
  return true;
}

Result<int64_t> ParseDateValue(std::string_view text) {
  int64_t days;
  if (!ParseDateText(TrimBlanks(text), &days)) {
    return Status::InvalidArgument(Excerpt(text) + " is not a DATE (expected YYYY-MM-DD)");
  }
  return days;
}

Result<int64_t> ParseTimestampValue(std::string_view text) {
  int64_t micros;
  std::string_view t = TrimBlanks(text);
  if (ParseTimestampText(t, &micros, false) || ParseInteger(t, &micros)) return micros;
  return Status::InvalidArgument(Excerpt(text) +
                                 " is not a TIMESTAMP (expected YYYY-MM-DD[THH:MM[:SS[.ffffff]]][Z|+HH:MM])");
}

}  // namespace vigil

#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace vigil::cli {

namespace {
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
}  // namespace

std::string GroupDigits(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

ProgressBar::ProgressBar(std::string label) : ProgressBar(std::move(label), ::isatty(STDERR_FILENO) == 1) {}

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t rows) {
  rows_ = rows;
  auto now = std::chrono::steady_clock::now();
  if (!enabled_ || now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  Draw();
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!enabled_) return;
  Draw();
  std::fputc('\n', stderr);
}

void ProgressBar::Draw() {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  uint64_t rate = secs > 0 ? static_cast<uint64_t>(rows_ / secs) : 0;
  // A moving marker: the bar has no known end for streamed input.
  static const char* kFrames[] = {"[=    ]", "[ =   ]", "[  =  ]", "[   = ]", "[    =]", "[   = ]", "[  =  ]",
                                  "[ =   ]"};
  const char* frame = finished_ ? "[=====]" : kFrames[static_cast<int>(secs * 10) % 8];
  std::fprintf(stderr, "\r\033[K%s %s %s rows  %s rows/s  %.1fs", label_.c_str(), frame, GroupDigits(rows_).c_str(),
               GroupDigits(rate).c_str(), secs);
  std::fflush(stderr);
}

}  // namespace vigil::cli

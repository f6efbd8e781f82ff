#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include "vigil/common/env.h"

namespace vigil::cli {

namespace {
constexpr int64_t kRedrawIntervalMicros = 100'000;
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
    : label_(std::move(label)), enabled_(enabled), start_(Env::Default()->MonotonicMicros()), last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t rows) {
  rows_ = rows;
  const int64_t now = Env::Default()->MonotonicMicros();
  if (!enabled_ || now - last_draw_ < kRedrawIntervalMicros) return;
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
  double secs = static_cast<double>(Env::Default()->MonotonicMicros() - start_) / 1e6;
  uint64_t rate = secs > 0 ? static_cast<uint64_t>(rows_ / secs) : 0;
  // A moving marker: the bar has no known end for streamed input.
  static const char* kFrames[] = {"[=    ]", "[ =   ]", "[  =  ]", "[   = ]",
                                  "[    =]", "[   = ]", "[  =  ]", "[ =   ]"};
  const char* frame = finished_ ? "[=====]" : kFrames[static_cast<int>(secs * 10) % 8];
  std::fprintf(stderr, "\r\033[K%s %s %s rows  %s rows/s  %.1fs", label_.c_str(), frame, GroupDigits(rows_).c_str(),
               GroupDigits(rate).c_str(), secs);
  std::fflush(stderr);
}

}  // namespace vigil::cli

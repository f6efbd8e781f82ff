// A one-line progress display (rows, rows/s, elapsed) on stderr, shown only
// when stderr is a terminal, so piped or redirected output stays clean.
// Single-threaded.
#pragma once

#include <cstdint>
#include <string>

namespace vigil::cli {

class ProgressBar {
 public:
  // `enabled` defaults to whether stderr is a terminal.
  explicit ProgressBar(std::string label);
  ProgressBar(std::string label, bool enabled);
  ~ProgressBar();

  // Records the rows done so far; redraws at most every 100 ms.
  void Update(uint64_t rows);
  // Draws the final figures and ends the line (idempotent).
  void Finish();

 private:
  void Draw();

  std::string label_;
  bool enabled_;
  bool finished_ = false;
  uint64_t rows_ = 0;
  int64_t start_;      // Env::Default()->MonotonicMicros()
  int64_t last_draw_;  // likewise
};

// 1234567 -> "1,234,567".
std::string GroupDigits(uint64_t n);

}  // namespace vigil::cli

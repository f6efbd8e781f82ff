// The client of the Lance runner (src/lance/runner/lance_runner.mjs): runs one
// request in a child process of its own process group (node and anything it
// starts) that dies with the calling thread, reads its JSON lines (progress to a callback, then the result or the
// runner's typed error), and reaps it. The deadline and the output bounds kill
// the whole group; nothing of it runs once RunLance returns. Thread safety: RunLance is reentrant (its state is its
// own).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "vigil/common/env.h"
#include "vigil/common/status.h"

namespace vigil::lance {

// Bounds of what the runner may write: one line, and everything.
constexpr size_t kMaxLineBytes = 1 << 20;
constexpr size_t kMaxOutputBytes = 16 << 20;

struct LanceRunnerOptions {
  std::string node_path = "/usr/bin/node";
  std::string script_path;  // lance_runner.mjs; required (its node_modules beside it)
  std::chrono::milliseconds timeout{3'600'000};
  // The setting `timeout` comes from, named when it passes (empty: none).
  std::string timeout_setting;
  // A descriptor the runner keeps open as its fd 3 for its whole life (the attempt lock, so the
  // lock stays held while node runs); -1: none.
  int keep_fd = -1;
  Env* env = Env::Default();  // the clock of `timeout`
};

// The runner's answer to `request` (the object of its "result" line). Its refusals come back
// typed: INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, CORRUPTION, COMMIT_CONFLICT as those
// codes, STALE_ADMISSION as FailedPrecondition "STALE_ADMISSION: ...". DeadlineExceeded when
// the deadline killed it; Internal when it died or wrote no final line (the request may
// have taken effect: the caller treats that as an unknown outcome).
Result<nlohmann::json> RunLance(const nlohmann::json& request, const LanceRunnerOptions& options,
                                const std::function<void(const nlohmann::json&)>& on_progress = {});

}  // namespace vigil::lance

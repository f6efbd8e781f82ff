// Test helper for tests of several processes: waiting for an event a process
// signals with a file (a failpoint's pause(PATH) creates PATH.reached), never for
// a fixed time. Thread-safe (no shared state).
#pragma once

#include <chrono>
#include <string>

namespace vigil::testing {

// Whether `path` exists within `timeout` (polled every 5 ms).
bool AwaitFile(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace vigil::testing

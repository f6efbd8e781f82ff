// Test helpers: run a shell command line (popen) and keep what it printed on
// stdout and how it ended. Thread-safe (no shared state).
#pragma once

#include <string>

namespace vigil::testing {

struct CommandResult {
  int exit_code = -1;  // the exit status; -1 when it did not exit normally or could not start
  std::string output;  // its standard output (redirect stderr in the command to keep it too)
};

// Runs `command` with /bin/sh and waits for it.
CommandResult RunCommand(const std::string& command);

}  // namespace vigil::testing

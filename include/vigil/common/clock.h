// The wall clock: Unix time as integers, in one place. Code that must be
// tested with another time takes a clock function instead of calling these.
// Thread-safe.
#pragma once

#include <cstdint>

namespace vigil {

// Milliseconds since the Unix epoch.
int64_t WallClockMs();
// Microseconds since the Unix epoch.
int64_t WallClockMicros();

}  // namespace vigil

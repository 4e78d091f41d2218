// The real clock, optionally shifted by a fixed offset (`tunectl-server --clock-offset`, so a
// test can put the server into tomorrow night's window without waiting). Thread-safe.
#pragma once

#include <cstdint>

#include "core/clock.h"

namespace tunectl {

class SystemClock : public Clock {
 public:
  explicit SystemClock(int64_t offset_ms = 0) : offset_ms_(offset_ms) {}
  int64_t NowMs() const override;
  int64_t SteadyMs() const override;

 private:
  int64_t offset_ms_;
};

// The process-wide real clock (no offset).
const Clock& RealClock();

}  // namespace tunectl

#include "sys/clock.h"

#include <chrono>

namespace tunectl {

int64_t SystemClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() +
         offset_ms_;
}

int64_t SystemClock::SteadyMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const Clock& RealClock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace tunectl

// The one clock: wall time (Unix milliseconds) for what is recorded and scheduled, and a steady
// time for intervals. Everything that decides anything takes a Clock; only sys/ reads the real
// one (SystemClock). ManualClock is for tests: it moves only when told. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>

namespace tunectl {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMs() const = 0;     // wall clock, Unix ms
  virtual int64_t SteadyMs() const = 0;  // monotonic, for intervals only
  int64_t NowS() const { return NowMs() / 1000; }
};

class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 0) : now_ms_(now_ms) {}
  int64_t NowMs() const override { return now_ms_.load(); }
  int64_t SteadyMs() const override { return now_ms_.load(); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms); }
  void Advance(int64_t ms) { now_ms_.fetch_add(ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace tunectl

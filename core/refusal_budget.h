// How many refused calls from one source the audit trail records one by one: a flood of calls
// with a bad or missing token must not become a flood of audit rows (each a database write the
// caller makes the server do). Per source (the actor, the peer's host without its port, and the
// method: the same refusal repeated), the first `per_window` refusals of each window are recorded;
// the rest are counted and the count is recorded once, with the source's next recorded refusal or
// by TakeOverdue after its window ended.
// Pure (time is passed in); not thread-safe: the owner locks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tunectl {

struct RefusalBudgetOptions {
  int per_window = 10;          // refusals recorded one by one per source and window
  int64_t window_ms = 60'000;   // the window's length
  size_t max_sources = 10'000;  // sources remembered; past it the oldest windows are reported
};

// "ipv4:10.0.0.7:51234" → "ipv4:10.0.0.7", "ipv6:[::1]:4000" → "ipv6:[::1]"; else as it is.
std::string PeerHost(const std::string& peer);

class RefusalBudget {
 public:
  explicit RefusalBudget(RefusalBudgetOptions o = {}) : o_(o) {}

  struct Admit {
    bool record = false;     // write this refusal to the audit trail
    int64_t suppressed = 0;  // refusals of this source not written since its last recorded one
  };
  Admit Refused(const std::string& source, int64_t now_ms);

  // Sources whose window ended with refusals not written: each once, with its count, forgotten
  // afterwards. Also what is given up to keep within max_sources.
  struct Overdue {
    std::string source;
    int64_t suppressed = 0;
  };
  std::vector<Overdue> TakeOverdue(int64_t now_ms);

 private:
  struct Window {
    int64_t start_ms = 0;
    int recorded = 0;
    int64_t suppressed = 0;
  };
  RefusalBudgetOptions o_;
  std::map<std::string, Window> windows_;
  std::vector<Overdue> evicted_;
};

}  // namespace tunectl

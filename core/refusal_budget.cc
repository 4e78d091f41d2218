#include "core/refusal_budget.h"

#include <algorithm>

namespace tunectl {

std::string PeerHost(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  const size_t scheme = peer.find(':');
  if (colon == std::string::npos || colon == scheme) return peer;  // "unix:/path", no port
  const std::string port = peer.substr(colon + 1);
  if (port.empty() ||
      !std::all_of(port.begin(), port.end(), [](unsigned char c) { return c >= '0' && c <= '9'; }))
    return peer;
  return peer.substr(0, colon);
}

RefusalBudget::Admit RefusalBudget::Refused(const std::string& source, int64_t now_ms) {
  Admit out;
  auto it = windows_.find(source);
  if (it == windows_.end()) {
    if (windows_.size() >= o_.max_sources) {
      // Give up the source whose window is oldest; its count is reported, not lost.
      auto oldest = std::min_element(windows_.begin(), windows_.end(), [](auto& a, auto& b) {
        return a.second.start_ms < b.second.start_ms;
      });
      if (oldest->second.suppressed > 0)
        evicted_.push_back({oldest->first, oldest->second.suppressed});
      windows_.erase(oldest);
    }
    it = windows_.emplace(source, Window{now_ms, 0, 0}).first;
  }
  Window& w = it->second;
  if (now_ms - w.start_ms >= o_.window_ms) {  // a new window: the old one's count goes with this
    out.suppressed = w.suppressed;
    w = Window{now_ms, 0, 0};
  }
  if (w.recorded < o_.per_window) {
    ++w.recorded;
    out.record = true;
    return out;
  }
  ++w.suppressed;
  return out;
}

std::vector<RefusalBudget::Overdue> RefusalBudget::TakeOverdue(int64_t now_ms) {
  std::vector<Overdue> out = std::move(evicted_);
  evicted_.clear();
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (now_ms - it->second.start_ms < o_.window_ms) {
      ++it;
      continue;
    }
    if (it->second.suppressed > 0) out.push_back({it->first, it->second.suppressed});
    it = windows_.erase(it);
  }
  return out;
}

}  // namespace tunectl

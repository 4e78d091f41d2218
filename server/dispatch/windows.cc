#include "server/dispatch/windows.h"

#include <nlohmann/json.hpp>

#include "core/spec.h"
#include "sys/zoneinfo.h"

namespace tunectl {

Result<Schedule> BuildSchedule(const ScheduleRow& row) {
  Schedule s;
  s.name = row.name;
  s.max_agents = row.max_agents;
  if (row.on_window_end != "finish" && row.on_window_end != "requeue")
    return Status::InvalidArgument("--on-window-end: \"" + row.on_window_end +
                                   "\" is not a policy; allowed: finish (running runs complete), "
                                   "requeue (they are stopped and run again in the next window)");
  if (row.window.empty() == row.cron.empty())
    return Status::InvalidArgument("schedule " + row.name +
                                   ": give exactly one of --window or --cron");
  if (!row.window.empty()) {
    auto w = ParseWeeklyWindow(row.window);
    if (!w.ok()) return w.status();
    s.window = *w;
  } else {
    auto c = ParseCron(row.cron);
    if (!c.ok()) return c.status();
    if (row.duration_s <= 0)
      return Status::InvalidArgument(
          "--duration: missing; a cron schedule needs the window length, e.g. --duration 20h");
    s.cron = *c;
    s.duration_s = row.duration_s;
  }
  auto tz = LoadTimeZone(row.tz);
  if (!tz.ok()) return tz.status();
  s.tz = *tz;
  return s;
}

Result<Schedule> ScheduleBook::Get(const ScheduleRow& row) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = cache_.find(row.id); it != cache_.end()) return it->second;
  auto s = BuildSchedule(row);
  if (s.ok()) cache_[row.id] = *s;
  return s;
}

std::map<int64_t, TimeWindow> ScheduleBook::OpenWindows(const std::vector<ScheduleRow>& rows,
                                                        int64_t now) {
  std::map<int64_t, TimeWindow> open;
  for (const auto& r : rows) {
    auto s = Get(r);
    if (!s.ok()) continue;
    if (auto w = ActiveWindow(*s, now)) open[r.id] = *w;
  }
  return open;
}

std::string ScheduleBook::OpenWindowsJson(const std::vector<ScheduleRow>& rows, int64_t now) {
  nlohmann::json open = nlohmann::json::object();
  for (const auto& [id, w] : OpenWindows(rows, now)) open[std::to_string(id)] = w.end - now;
  return open.dump();
}

std::string ScheduleBook::Describe(const ScheduleRow& row, int64_t now) {
  auto s = Get(row);
  if (!s.ok()) return "invalid schedule: " + s.status().message();
  if (auto w = ActiveWindow(*s, now)) return "window open until " + FormatLocal(w->end, s->tz);
  if (auto n = NextWindow(*s, now)) return "next window " + FormatLocal(n->start, s->tz);
  return "no window within a year";
}

}  // namespace tunectl

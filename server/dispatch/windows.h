// Turns stored schedules into core Schedules (loading time zones once) and answers which are
// open now. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/schedule.h"
#include "server/store/store.h"

namespace tunectl {

// Validates a schedule's window/cron/duration/tz and window-end policy as the user wrote them
// (errors name the flag).
Result<Schedule> BuildSchedule(const ScheduleRow& row);

class ScheduleBook {
 public:
  // The current window of each schedule open at `now`, by schedule id.
  std::map<int64_t, TimeWindow> OpenWindows(const std::vector<ScheduleRow>& rows, int64_t now);
  // {"<schedule id>": seconds left in its current window} for the schedules open at `now`.
  std::string OpenWindowsJson(const std::vector<ScheduleRow>& rows, int64_t now);
  // "open until 2026-12-03 06:00 Asia/Shanghai" / "next window 2026-12-03 01:00 Asia/Shanghai".
  std::string Describe(const ScheduleRow& row, int64_t now);

 private:
  Result<Schedule> Get(const ScheduleRow& row);
  std::mutex mu_;
  std::map<int64_t, Schedule> cache_;
};

}  // namespace tunectl

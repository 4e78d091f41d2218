// Off-peak schedules: when experiments may run. A schedule is either a weekly window
// ("Mon-Fri 01:00-06:00"; an end at or before the start runs past midnight) or a cron start with a
// duration ("0 22 * * Sat" for 20h), evaluated in the schedule's time zone, so windows follow
// DST changes in wall-clock time. Pure: "now" is always an argument.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/timezone.h"

namespace tunectl {

struct TimeWindow {
  int64_t start = 0, end = 0;  // UTC seconds, [start, end)
  bool Contains(int64_t t) const { return t >= start && t < end; }
  int64_t Length() const { return end - start; }
};

struct WeeklyWindow {
  std::bitset<7> days;  // 0 = Sunday
  int start_min = 0;    // minutes after local midnight
  int end_min = 0;      // <= start_min: ends the next day
};
// "Mon-Fri 01:00-06:00", "Sat,Sun 00:00-24:00", "daily 22:00-02:00", "Mon,Wed-Fri 1:00-6:00".
Result<WeeklyWindow> ParseWeeklyWindow(const std::string& text);

struct CronSpec {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days_of_month;                        // 1..31
  std::bitset<13> months;                               // 1..12
  std::bitset<7> days_of_week;                          // 0 = Sunday (7 is accepted for Sunday)
  bool dom_restricted = false, dow_restricted = false;  // both: either matches (as in cron)
};
// Five fields: minute hour day-of-month month day-of-week; *, */n, a-b, a-b/n, lists, and the
// names jan..dec and sun..sat.
Result<CronSpec> ParseCron(const std::string& text);

struct Schedule {
  std::string name;
  std::optional<WeeklyWindow> window;
  std::optional<CronSpec> cron;
  int64_t duration_s = 0;  // cron windows
  TimeZone tz;
  int max_agents = 0;  // 0 = no limit
};

// Windows overlapping [from, to), in start order.
std::vector<TimeWindow> WindowsBetween(const Schedule& s, int64_t from, int64_t to);
// The window containing `now`, if any.
std::optional<TimeWindow> ActiveWindow(const Schedule& s, int64_t now);
// The first window starting after `now` (searching up to about a year ahead).
std::optional<TimeWindow> NextWindow(const Schedule& s, int64_t now);
// Whether a run expected to take `expected_s` may start now: inside a window with that much left.
bool FitsInWindow(const Schedule& s, int64_t now, int64_t expected_s);

}  // namespace tunectl

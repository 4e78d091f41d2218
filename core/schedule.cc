#include "core/schedule.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace tunectl {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

bool ParseInt(const std::string& s, int* out) {
  if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
  *out = std::stoi(s);
  return true;
}

const char* const kDays[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
const char* const kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                               "jul", "aug", "sep", "oct", "nov", "dec"};

int DayIndex(const std::string& s) {
  const std::string l = Lower(s);
  for (int i = 0; i < 7; ++i)
    if (l.rfind(kDays[i], 0) == 0 && l.size() >= 3) return i;
  return -1;
}

bool ParseClock(const std::string& s, int* minutes) {
  auto parts = Split(s, ':');
  int h = 0, m = 0;
  if (parts.size() != 2 || !ParseInt(parts[0], &h) || !ParseInt(parts[1], &m)) return false;
  if (m > 59 || h > 24 || (h == 24 && m != 0)) return false;
  *minutes = h * 60 + m;
  return true;
}

// One cron field into a bitset of [lo, hi]; `names` maps words to numbers.
template <size_t N>
Status CronField(const std::string& field, const std::string& what, int lo, int hi,
                 const char* const* names, int name_base, int name_count, std::bitset<N>* out) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("--cron: " + what + " field \"" + field + "\": " + why +
                                   " (allowed: * */n a-b a-b/n and lists, " + std::to_string(lo) +
                                   ".." + std::to_string(hi) + ")");
  };
  auto value = [&](const std::string& s, int* v) {
    if (ParseInt(s, v)) return *v >= lo && *v <= hi;
    const std::string l = Lower(s);
    for (int i = 0; names && i < name_count; ++i)
      if (l == names[i]) {
        *v = name_base + i;
        return true;
      }
    return false;
  };
  if (field.empty()) return bad("empty");
  for (const std::string& item : Split(field, ',')) {
    std::string range = item;
    int step = 1;
    if (auto slash = item.find('/'); slash != std::string::npos) {
      range = item.substr(0, slash);
      if (!ParseInt(item.substr(slash + 1), &step) || step < 1) return bad("bad step");
    }
    int a = lo, b = hi;
    if (range != "*") {
      auto dash = range.find('-');
      if (dash == std::string::npos) {
        if (!value(range, &a)) return bad("\"" + range + "\" is out of range or not a value");
        b = item.find('/') != std::string::npos ? hi : a;
      } else if (!value(range.substr(0, dash), &a) || !value(range.substr(dash + 1), &b) || a > b) {
        return bad("bad range \"" + range + "\"");
      }
    }
    for (int v = a; v <= b; v += step) out->set(static_cast<size_t>(v));
  }
  return Status::Ok();
}

bool CronDayMatches(const CronSpec& c, int64_t day) {
  int y;
  unsigned m, d;
  CivilFromDays(day, &y, &m, &d);
  if (!c.months.test(m)) return false;
  const bool dom = c.days_of_month.test(d),
             dow = c.days_of_week.test(static_cast<size_t>(WeekdayFromDays(day)));
  if (c.dom_restricted && c.dow_restricted) return dom || dow;
  return dom && dow;
}

}  // namespace

Result<WeeklyWindow> ParseWeeklyWindow(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("--window: \"" + text + "\": " + why +
                                   "; write DAYS HH:MM-HH:MM, e.g. \"Mon-Fri 01:00-06:00\", "
                                   "\"Sat,Sun 00:00-24:00\" or \"daily 22:00-02:00\"");
  };
  std::istringstream in(text);
  std::string days, times, extra;
  if (!(in >> days >> times) || (in >> extra)) return bad("expected two parts");
  WeeklyWindow w;
  if (Lower(days) == "daily" || days == "*") {
    w.days.set();
  } else {
    for (const std::string& part : Split(days, ',')) {
      auto dash = part.find('-');
      if (dash == std::string::npos) {
        const int d = DayIndex(part);
        if (d < 0) return bad("\"" + part + "\" is not a day (Mon..Sun)");
        w.days.set(static_cast<size_t>(d));
        continue;
      }
      const int a = DayIndex(part.substr(0, dash)), b = DayIndex(part.substr(dash + 1));
      if (a < 0 || b < 0) return bad("\"" + part + "\" is not a day range (e.g. Mon-Fri)");
      for (int d = a;; d = (d + 1) % 7) {  // Fri-Mon wraps over the weekend
        w.days.set(static_cast<size_t>(d));
        if (d == b) break;
      }
    }
  }
  auto dash = times.find('-');
  if (dash == std::string::npos || !ParseClock(times.substr(0, dash), &w.start_min) ||
      !ParseClock(times.substr(dash + 1), &w.end_min))
    return bad("\"" + times + "\" is not HH:MM-HH:MM");
  if (w.start_min == 24 * 60) return bad("a window cannot start at 24:00");
  if (w.start_min == w.end_min) return bad("the window is empty (start equals end)");
  return w;
}

Result<CronSpec> ParseCron(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> f;
  for (std::string x; in >> x;) f.push_back(x);
  if (f.size() != 5)
    return Status::InvalidArgument("--cron: \"" + text + "\" has " + std::to_string(f.size()) +
                                   " fields; cron has 5: minute hour day-of-month month "
                                   "day-of-week, e.g. \"0 22 * * Sat\"");
  CronSpec c;
  if (auto s = CronField(f[0], "minute", 0, 59, nullptr, 0, 0, &c.minutes); !s.ok()) return s;
  if (auto s = CronField(f[1], "hour", 0, 23, nullptr, 0, 0, &c.hours); !s.ok()) return s;
  if (auto s = CronField(f[2], "day-of-month", 1, 31, nullptr, 0, 0, &c.days_of_month); !s.ok())
    return s;
  if (auto s = CronField(f[3], "month", 1, 12, kMonths, 1, 12, &c.months); !s.ok()) return s;
  std::bitset<8> dow;
  if (auto s = CronField(f[4], "day-of-week", 0, 7, kDays, 0, 7, &dow); !s.ok()) return s;
  for (size_t i = 0; i < 7; ++i) c.days_of_week[i] = dow[i];
  if (dow[7]) c.days_of_week.set(0);
  c.dom_restricted = f[2] != "*";
  c.dow_restricted = f[4] != "*";
  return c;
}

std::vector<TimeWindow> WindowsBetween(const Schedule& s, int64_t from, int64_t to) {
  std::vector<TimeWindow> out;
  const int64_t longest = s.window ? 86400 : std::max<int64_t>(s.duration_s, 0);
  // Local days whose windows could overlap [from, to): start a little before, for long windows.
  const int64_t first_day = (s.tz.ToLocal(from - longest) - 86400) / 86400 - 1;
  const int64_t last_day = s.tz.ToLocal(to) / 86400 + 1;
  for (int64_t day = first_day; day <= last_day; ++day) {
    if (s.window) {
      if (!s.window->days.test(static_cast<size_t>(WeekdayFromDays(day)))) continue;
      const int64_t start_local = day * 86400 + s.window->start_min * 60;
      const int64_t end_day = s.window->end_min <= s.window->start_min ? day + 1 : day;
      const int64_t end_local = end_day * 86400 + static_cast<int64_t>(s.window->end_min) * 60;
      TimeWindow w{s.tz.ToUtc(start_local), s.tz.ToUtc(end_local)};
      if (w.end > from && w.start < to && w.end > w.start) out.push_back(w);
    } else if (s.cron && s.duration_s > 0) {
      if (!CronDayMatches(*s.cron, day)) continue;
      for (int h = 0; h < 24; ++h) {
        if (!s.cron->hours.test(static_cast<size_t>(h))) continue;
        for (int m = 0; m < 60; ++m) {
          if (!s.cron->minutes.test(static_cast<size_t>(m))) continue;
          const int64_t start = s.tz.ToUtc(day * 86400 + h * 3600 + m * 60);
          TimeWindow w{start, start + s.duration_s};
          if (w.end > from && w.start < to) out.push_back(w);
        }
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TimeWindow& a, const TimeWindow& b) { return a.start < b.start; });
  out.erase(
      std::unique(out.begin(), out.end(),
                  [](const TimeWindow& a, const TimeWindow& b) { return a.start == b.start; }),
      out.end());
  return out;
}

std::optional<TimeWindow> ActiveWindow(const Schedule& s, int64_t now) {
  std::optional<TimeWindow> best;
  for (const auto& w : WindowsBetween(s, now, now + 1))
    if (w.Contains(now) && (!best || w.end > best->end)) best = w;  // overlapping cron windows
  return best;
}

std::optional<TimeWindow> NextWindow(const Schedule& s, int64_t now) {
  for (int64_t span = 8 * 86400; span <= 400 * 86400; span *= 4)
    for (const auto& w : WindowsBetween(s, now, now + span))
      if (w.start > now) return w;
  return std::nullopt;
}

bool FitsInWindow(const Schedule& s, int64_t now, int64_t expected_s) {
  auto w = ActiveWindow(s, now);
  return w && now + expected_s <= w->end;
}

}  // namespace tunectl

// Time zones from TZif data (RFC 8536, as in /usr/share/zoneinfo), and civil-time arithmetic.
// g++ 12's libstdc++ has no std::chrono time-zone database, so this small reader stands in.
// Pure: the caller reads the file (sys/), this parses bytes. After the last transition in the
// file (2037 in Debian's "fat" files, much earlier in "slim" ones) the POSIX-TZ footer rule
// (e.g. "EST5EDT,M3.2.0,M11.1.0") gives the offset. Value type; thread-safe for reading.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

class TimeZone {
 public:
  static TimeZone Utc();
  static Result<TimeZone> FromTzif(std::string_view bytes, std::string name);
  // A zone given only by a POSIX TZ rule: "CET-1CEST,M3.5.0,M10.5.0/3", "<+0330>-3:30",
  // "AEST-10AEDT,M10.1.0,M4.1.0/3", Jn / n day forms, times up to ±167h.
  static Result<TimeZone> FromPosix(std::string_view rule, std::string name);

  const std::string& name() const { return name_; }
  // Seconds east of UTC in effect at `utc` (Unix seconds).
  int OffsetAt(int64_t utc) const;
  // The instant a wall-clock time (`local` = local civil seconds since 1970-01-01 00:00, as if
  // UTC) happens. Ambiguous (clocks fall back): the earlier instant. Nonexistent (clocks spring
  // forward): moved forward by the gap, e.g. 02:30 on a spring-forward night is 03:30.
  int64_t ToUtc(int64_t local) const;
  int64_t ToLocal(int64_t utc) const { return utc + OffsetAt(utc); }

 private:
  struct RuleDate {
    char kind = 'M';  // 'J' (1..365, Feb 29 never counted), 'N' (0..365), 'M' (month.week.day)
    int day = 0, week = 0, month = 0;
    int time = 7200;  // seconds after local midnight (wall clock in force before the change)
  };
  struct Posix {
    bool valid = false;
    int std_offset = 0;  // seconds east of UTC
    bool has_dst = false;
    int dst_offset = 0;
    RuleDate start, end;  // DST starts (in standard time) / ends (in daylight time)
  };
  static Result<Posix> ParsePosix(std::string_view rule);
  int PosixOffsetAt(int64_t utc) const;

  std::string name_ = "UTC";
  std::vector<int64_t> transitions_;  // UTC seconds, ascending
  std::vector<int> offsets_;          // offset from each transition on
  int initial_ = 0;                   // offset before the first transition
  Posix posix_;                       // after the last transition
};

// Civil calendar (proleptic Gregorian), days since 1970-01-01.
int64_t DaysFromCivil(int y, unsigned m, unsigned d);
void CivilFromDays(int64_t z, int* y, unsigned* m, unsigned* d);
int WeekdayFromDays(int64_t z);  // 0 = Sunday … 6 = Saturday
// "2026-03-08 02:30" style, in the given zone (for messages).
std::string FormatLocal(int64_t utc, const TimeZone& tz);

}  // namespace tunectl

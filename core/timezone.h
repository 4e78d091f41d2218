// Time zones from TZif data (RFC 8536, as in /usr/share/zoneinfo), and civil-time arithmetic.
// g++ 12's libstdc++ has no std::chrono time-zone database, so this small reader stands in.
// Pure: the caller reads the file (sys/), this parses bytes. Limitation: after the last
// transition in the file (2037 for Debian's "fat" files) the last offset is kept; the POSIX-TZ
// footer rules are not evaluated. Value type; thread-safe for reading.
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

  const std::string& name() const { return name_; }
  // Seconds east of UTC in effect at `utc` (Unix seconds).
  int OffsetAt(int64_t utc) const;
  // The instant a wall-clock time (`local` = local civil seconds since 1970-01-01 00:00, as if
  // UTC) happens. Ambiguous (clocks fall back): the earlier instant. Nonexistent (clocks spring
  // forward): moved forward by the gap, e.g. 02:30 on a spring-forward night is 03:30.
  int64_t ToUtc(int64_t local) const;
  int64_t ToLocal(int64_t utc) const { return utc + OffsetAt(utc); }

 private:
  std::string name_ = "UTC";
  std::vector<int64_t> transitions_;  // UTC seconds, ascending
  std::vector<int> offsets_;          // offset from each transition on
  int initial_ = 0;                   // offset before the first transition
};

// Civil calendar (proleptic Gregorian), days since 1970-01-01.
int64_t DaysFromCivil(int y, unsigned m, unsigned d);
void CivilFromDays(int64_t z, int* y, unsigned* m, unsigned* d);
int WeekdayFromDays(int64_t z);  // 0 = Sunday … 6 = Saturday
// "2026-03-08 02:30" style, in the given zone (for messages).
std::string FormatLocal(int64_t utc, const TimeZone& tz);

}  // namespace tunectl

#include "core/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TimeZone Zone(const std::string& name) {
  std::ifstream in("/usr/share/zoneinfo/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "tzdata missing: " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  auto tz = TimeZone::FromTzif(ss.str(), name);
  EXPECT_TRUE(tz.ok()) << tz.status().message();
  return *tz;
}

// UTC seconds of a civil UTC time.
int64_t Utc(int y, unsigned mo, unsigned d, int h, int mi = 0) {
  return DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}
// Local civil seconds (wall clock), for ToUtc.
int64_t Local(int y, unsigned mo, unsigned d, int h, int mi = 0) {
  return Utc(y, mo, d, h, mi);
}

TEST(TimeZone, OffsetsFollowDst) {
  TimeZone ny = Zone("America/New_York");
  EXPECT_EQ(ny.OffsetAt(Utc(2026, 1, 15, 12)), -5 * 3600);
  EXPECT_EQ(ny.OffsetAt(Utc(2026, 7, 15, 12)), -4 * 3600);
  EXPECT_EQ(Zone("Asia/Shanghai").OffsetAt(Utc(2026, 7, 15, 12)), 8 * 3600);
  EXPECT_EQ(TimeZone::Utc().OffsetAt(Utc(2026, 7, 15, 12)), 0);
  EXPECT_FALSE(TimeZone::FromTzif("nonsense", "X").ok());
}

TEST(TimeZone, AfterTheLastTransitionTheFooterRuleGoesOn) {
  // Debian's files list transitions up to 2037; later years come from the POSIX-TZ footer.
  TimeZone ny = Zone("America/New_York");  // EST5EDT,M3.2.0,M11.1.0
  EXPECT_EQ(ny.OffsetAt(Utc(2040, 1, 15, 12)), -5 * 3600);
  EXPECT_EQ(ny.OffsetAt(Utc(2040, 7, 15, 12)), -4 * 3600);
  // 2040: DST from Sun Mar 11 02:00 EST (07:00 UTC) to Sun Nov 4 02:00 EDT (06:00 UTC)
  EXPECT_EQ(ny.OffsetAt(Utc(2040, 3, 11, 6, 59)), -5 * 3600);
  EXPECT_EQ(ny.OffsetAt(Utc(2040, 3, 11, 7, 0)), -4 * 3600);
  EXPECT_EQ(ny.OffsetAt(Utc(2040, 11, 4, 5, 59)), -4 * 3600);
  EXPECT_EQ(ny.OffsetAt(Utc(2040, 11, 4, 6, 0)), -5 * 3600);
  TimeZone berlin = Zone("Europe/Berlin");  // CET-1CEST,M3.5.0,M10.5.0/3: last Sundays
  EXPECT_EQ(berlin.OffsetAt(Utc(2045, 3, 26, 0, 59)), 3600);
  EXPECT_EQ(berlin.OffsetAt(Utc(2045, 3, 26, 1, 0)), 7200);
  EXPECT_EQ(berlin.OffsetAt(Utc(2045, 10, 29, 0, 59)), 7200);
  EXPECT_EQ(berlin.OffsetAt(Utc(2045, 10, 29, 1, 0)), 3600);
  TimeZone sydney = Zone("Australia/Sydney");  // southern: DST spans the new year
  EXPECT_EQ(sydney.OffsetAt(Utc(2050, 1, 15, 0)), 11 * 3600);
  EXPECT_EQ(sydney.OffsetAt(Utc(2050, 7, 15, 0)), 10 * 3600);
  EXPECT_EQ(Zone("Asia/Shanghai").OffsetAt(Utc(2050, 7, 15, 0)), 8 * 3600);
}

TEST(TimeZone, PosixRulesInEveryForm) {
  auto slim = TimeZone::FromPosix("EST5EDT,M3.2.0,M11.1.0", "slim");  // a zone with no list
  ASSERT_TRUE(slim.ok()) << slim.status().message();
  EXPECT_EQ(slim->OffsetAt(Utc(2026, 7, 1, 0)), -4 * 3600);
  EXPECT_EQ(slim->ToUtc(Local(2026, 3, 8, 2, 30)), Utc(2026, 3, 8, 7, 30));  // the gap
  auto tehran = TimeZone::FromPosix("<+0330>-3:30", "fixed");
  ASSERT_TRUE(tehran.ok());
  EXPECT_EQ(tehran->OffsetAt(Utc(2030, 7, 1, 0)), 3 * 3600 + 1800);
  // Jn counts Mar 1 as day 60 every year; n counts Feb 29 (zero-based); times past 24h.
  auto j = TimeZone::FromPosix("AAA0BBB,J60/0,J300/0", "j");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->OffsetAt(Utc(2028, 2, 29, 12)), 0);   // a leap year: Feb 29 is not day 60
  EXPECT_EQ(j->OffsetAt(Utc(2028, 3, 1, 0)), 3600);  // day 60 = Mar 1
  auto n = TimeZone::FromPosix("AAA0BBB,59/0,300/0", "n");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->OffsetAt(Utc(2028, 2, 29, 0)), 3600);  // zero-based 59 = Feb 29 in 2028
  auto late = TimeZone::FromPosix("IST-2IDT,M3.4.4/26,M10.5.0", "Asia/Jerusalem");
  ASSERT_TRUE(late.ok()) << late.status().message();
  // Thursday Mar 23 2028 at "26:00" = Friday 02:00 IST = Friday 00:00 UTC
  EXPECT_EQ(late->OffsetAt(Utc(2028, 3, 23, 23, 59)), 2 * 3600);
  EXPECT_EQ(late->OffsetAt(Utc(2028, 3, 24, 0, 0)), 3 * 3600);
  for (const char* bad : {"", "E5", "EST", "EST5EDT", "EST5EDT,M13.1.0,M11.1.0",
                          "EST5EDT,M3.6.0,M11.1.0", "EST5EDT,M3.2.0", "EST5x"}) {
    auto r = TimeZone::FromPosix(bad, "x");
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(TimeZone, GapMovesForwardAndOverlapTakesTheEarlierInstant) {
  TimeZone ny = Zone("America/New_York");
  // 2026-03-08 02:30 does not exist in New York: it becomes 03:30 EDT = 07:30 UTC
  EXPECT_EQ(ny.ToUtc(Local(2026, 3, 8, 2, 30)), Utc(2026, 3, 8, 7, 30));
  // 2026-11-01 01:30 happens twice: the first (EDT) is 05:30 UTC
  EXPECT_EQ(ny.ToUtc(Local(2026, 11, 1, 1, 30)), Utc(2026, 11, 1, 5, 30));
  EXPECT_EQ(ny.ToUtc(Local(2026, 7, 1, 12, 0)), Utc(2026, 7, 1, 16, 0));
}

TEST(Civil, RoundTripsAndWeekdays) {
  int y;
  unsigned m, d;
  CivilFromDays(DaysFromCivil(2026, 12, 2), &y, &m, &d);
  EXPECT_EQ(y, 2026);
  EXPECT_EQ(m, 12u);
  EXPECT_EQ(d, 2u);
  EXPECT_EQ(WeekdayFromDays(DaysFromCivil(2026, 12, 2)), 3);   // Wednesday
  EXPECT_EQ(WeekdayFromDays(DaysFromCivil(1970, 1, 1)), 4);    // Thursday
  EXPECT_EQ(WeekdayFromDays(DaysFromCivil(1969, 12, 28)), 0);  // Sunday
}

TEST(WeeklyWindow, ParsesDaysRangesListsAndMidnight) {
  auto w = ParseWeeklyWindow("Mon-Fri 01:00-06:00");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->days.to_string(), "0111110");  // Sat..Sun, bit 0 = Sunday
  EXPECT_EQ(w->start_min, 60);
  EXPECT_EQ(w->end_min, 360);
  EXPECT_EQ(ParseWeeklyWindow("Fri-Mon 22:00-02:00")->days.to_string(), "1100011");
  EXPECT_EQ(ParseWeeklyWindow("daily 00:00-24:00")->days.count(), 7u);
  EXPECT_EQ(ParseWeeklyWindow("sat,Sun 10:00-12:00")->days.to_string(), "1000001");
}

TEST(WeeklyWindow, RejectsBadInputNamingIt) {
  EXPECT_THAT(ParseWeeklyWindow("Mon-Fry 01:00-06:00").status().message(),
              HasSubstr("\"Mon-Fry\" is not a day range"));
  EXPECT_THAT(ParseWeeklyWindow("Mon-Fri 1am-6am").status().message(),
              HasSubstr("is not HH:MM-HH:MM"));
  EXPECT_THAT(ParseWeeklyWindow("Mon-Fri 25:00-06:00").status().message(),
              HasSubstr("is not HH:MM-HH:MM"));
  EXPECT_THAT(ParseWeeklyWindow("Mon 06:00-06:00").status().message(), HasSubstr("empty"));
  EXPECT_THAT(ParseWeeklyWindow("Mon").status().message(),
              HasSubstr("e.g. \"Mon-Fri 01:00-06:00\""));
}

Schedule Weekly(const std::string& spec, const std::string& zone) {
  Schedule s;
  s.window = *ParseWeeklyWindow(spec);
  s.tz = zone == "UTC" ? TimeZone::Utc() : Zone(zone);
  return s;
}

TEST(Schedule, WindowInTheSchedulesZone) {
  Schedule s = Weekly("Mon-Fri 01:00-06:00", "Asia/Shanghai");
  // Thu 2026-12-03 01:00-06:00 Shanghai = Wed 2026-12-02 17:00-22:00 UTC
  auto w = ActiveWindow(s, Utc(2026, 12, 2, 18));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->start, Utc(2026, 12, 2, 17));
  EXPECT_EQ(w->end, Utc(2026, 12, 2, 22));
  EXPECT_FALSE(ActiveWindow(s, Utc(2026, 12, 2, 22)));  // end is exclusive
  EXPECT_FALSE(ActiveWindow(s, Utc(2026, 12, 2, 12)));
}

TEST(Schedule, WindowAcrossMidnightBelongsToItsStartDay) {
  Schedule s = Weekly("Fri 22:00-02:00", "UTC");
  // Fri 2026-12-04 22:00 → Sat 02:00
  auto w = ActiveWindow(s, Utc(2026, 12, 5, 1));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->start, Utc(2026, 12, 4, 22));
  EXPECT_EQ(w->end, Utc(2026, 12, 5, 2));
  EXPECT_FALSE(ActiveWindow(s, Utc(2026, 12, 5, 23)));  // Saturday night is not Friday's
}

TEST(Schedule, WeekendIsSkippedToMonday) {
  Schedule s = Weekly("Mon-Fri 01:00-06:00", "UTC");
  auto next = NextWindow(s, Utc(2026, 12, 4, 7));  // Friday 07:00
  ASSERT_TRUE(next);
  EXPECT_EQ(next->start, Utc(2026, 12, 7, 1));         // Monday 01:00
  EXPECT_FALSE(ActiveWindow(s, Utc(2026, 12, 5, 3)));  // Saturday
}

TEST(Schedule, WindowsFollowWallClockAcrossDst) {
  Schedule ny = Weekly("daily 01:00-06:00", "America/New_York");
  // spring forward 2026-03-08: 01:00 EST (06:00 UTC) to 06:00 EDT (10:00 UTC): 4 hours
  auto spring = ActiveWindow(ny, Utc(2026, 3, 8, 7));
  ASSERT_TRUE(spring);
  EXPECT_EQ(spring->start, Utc(2026, 3, 8, 6));
  EXPECT_EQ(spring->end, Utc(2026, 3, 8, 10));
  // fall back 2026-11-01: 01:00 EDT (05:00 UTC) to 06:00 EST (11:00 UTC): 6 hours
  auto fall = ActiveWindow(ny, Utc(2026, 11, 1, 6));
  ASSERT_TRUE(fall);
  EXPECT_EQ(fall->start, Utc(2026, 11, 1, 5));
  EXPECT_EQ(fall->end, Utc(2026, 11, 1, 11));
  // Berlin springs forward at 02:00 → 03:00 on 2026-03-29: a 01:00-06:00 window is 4 hours
  auto berlin = ActiveWindow(Weekly("daily 01:00-06:00", "Europe/Berlin"), Utc(2026, 3, 29, 1));
  ASSERT_TRUE(berlin);
  EXPECT_EQ(berlin->Length(), 4 * 3600);
}

TEST(Cron, ParsesFieldsNamesStepsAndLists) {
  auto c = ParseCron("0 22 * * Sat");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->minutes.test(0));
  EXPECT_EQ(c->minutes.count(), 1u);
  EXPECT_TRUE(c->hours.test(22));
  EXPECT_EQ(c->days_of_week.to_string(), "1000000");
  auto d = ParseCron("*/15 1-5/2 1,15 jan-mar 7");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->minutes.count(), 4u);
  EXPECT_EQ(d->hours.count(), 3u);  // 1, 3, 5
  EXPECT_EQ(d->months.count(), 3u);
  EXPECT_TRUE(d->days_of_week.test(0));  // 7 = Sunday
}

TEST(Cron, RejectsBadInputNamingTheField) {
  EXPECT_THAT(ParseCron("0 22 * *").status().message(), HasSubstr("has 4 fields; cron has 5"));
  EXPECT_THAT(ParseCron("61 * * * *").status().message(), HasSubstr("minute field \"61\""));
  EXPECT_THAT(ParseCron("*/0 * * * *").status().message(), HasSubstr("bad step"));
  EXPECT_THAT(ParseCron("0 0 * * Funday").status().message(), HasSubstr("day-of-week field"));
  EXPECT_THAT(ParseCron("0 0 5-1 * *").status().message(), HasSubstr("bad range"));
}

TEST(Schedule, CronWindowsWithDuration) {
  Schedule s;
  s.cron = *ParseCron("0 22 * * Sat");
  s.duration_s = 20 * 3600;
  s.tz = TimeZone::Utc();
  // Sat 2026-12-05 22:00 → Sun 18:00
  auto w = ActiveWindow(s, Utc(2026, 12, 6, 12));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->start, Utc(2026, 12, 5, 22));
  EXPECT_EQ(w->end, Utc(2026, 12, 6, 18));
  auto next = NextWindow(s, Utc(2026, 12, 6, 19));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->start, Utc(2026, 12, 12, 22));
}

TEST(Cron, DayOfMonthOrDayOfWeekWhenBothAreSet) {
  Schedule s;
  s.cron = *ParseCron("0 0 1 * Mon");
  s.duration_s = 3600;
  s.tz = TimeZone::Utc();
  auto ws = WindowsBetween(s, Utc(2026, 12, 1, 0), Utc(2026, 12, 15, 0));
  ASSERT_EQ(ws.size(), 3u);  // Tue Dec 1 (the 1st), Mon Dec 7, Mon Dec 14
  EXPECT_EQ(ws[0].start, Utc(2026, 12, 1, 0));
  EXPECT_EQ(ws[1].start, Utc(2026, 12, 7, 0));
  EXPECT_EQ(ws[2].start, Utc(2026, 12, 14, 0));
}

TEST(Schedule, ARunThatDoesNotFitIsHeld) {
  Schedule s = Weekly("Mon-Fri 01:00-06:00", "UTC");
  EXPECT_TRUE(FitsInWindow(s, Utc(2026, 12, 2, 5), 30 * 60));   // 05:00 + 30 min
  EXPECT_FALSE(FitsInWindow(s, Utc(2026, 12, 2, 5), 90 * 60));  // would run past 06:00
  EXPECT_FALSE(FitsInWindow(s, Utc(2026, 12, 2, 7), 60));       // outside
}

}  // namespace
}  // namespace tunectl

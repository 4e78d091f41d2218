#include "core/timezone.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace tunectl {
namespace {

int64_t Be(std::string_view b, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | static_cast<unsigned char>(b[off + static_cast<size_t>(i)]);
  if (bytes == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

}  // namespace

TimeZone TimeZone::Utc() {
  return TimeZone();
}

Result<TimeZone> TimeZone::FromTzif(std::string_view b, std::string name) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("time zone " + name + ": not valid TZif data (" + why + ")");
  };
  if (b.size() < 44 || b.substr(0, 4) != "TZif") return bad("no TZif header");
  auto counts = [&](size_t off, int64_t c[6]) {
    for (int i = 0; i < 6; ++i) c[i] = Be(b, off + 20 + 4 * static_cast<size_t>(i), 4);
  };
  int64_t c[6];  // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
  counts(0, c);
  const char version = b[4];
  size_t off = 44;
  int tbytes = 4;
  if (version >= '2') {  // skip the 32-bit block, read the 64-bit one
    off += static_cast<size_t>(c[3] * 5 + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0]);
    if (b.size() < off + 44 || b.substr(off, 4) != "TZif") return bad("no second header");
    counts(off, c);
    off += 44;
    tbytes = 8;
  }
  const int64_t timecnt = c[3], typecnt = c[4];
  if (typecnt < 1) return bad("no local time types");
  const size_t need = off + static_cast<size_t>(timecnt * (tbytes + 1) + typecnt * 6);
  if (b.size() < need) return bad("truncated");
  TimeZone tz;
  tz.name_ = std::move(name);
  std::vector<int> type_offsets;
  const size_t types_at = off + static_cast<size_t>(timecnt * (tbytes + 1));
  for (int64_t i = 0; i < typecnt; ++i)
    type_offsets.push_back(static_cast<int>(Be(b, types_at + static_cast<size_t>(i) * 6, 4)));
  tz.initial_ = type_offsets[0];
  for (int64_t i = 0; i < timecnt; ++i) {
    const int64_t t = Be(b, off + static_cast<size_t>(i * tbytes), tbytes);
    const auto type =
        static_cast<unsigned char>(b[off + static_cast<size_t>(timecnt * tbytes + i)]);
    if (type >= type_offsets.size()) return bad("transition to an unknown type");
    tz.transitions_.push_back(t);
    tz.offsets_.push_back(type_offsets[type]);
  }
  if (version >= '2') {  // the footer: "\n<POSIX TZ rule>\n" after the 64-bit data block
    const size_t footer = need + static_cast<size_t>(c[5] + c[2] * 12 + c[1] + c[0]);
    if (footer < b.size() && b[footer] == '\n') {
      const size_t nl = b.find('\n', footer + 1);
      if (nl != std::string_view::npos && nl > footer + 1) {
        auto p = ParsePosix(b.substr(footer + 1, nl - footer - 1));
        if (!p.ok()) return bad("footer: " + p.status().message());
        tz.posix_ = *p;
      }
    }
  }
  return tz;
}

Result<TimeZone> TimeZone::FromPosix(std::string_view rule, std::string name) {
  auto p = ParsePosix(rule);
  if (!p.ok()) return Status::InvalidArgument("time zone " + name + ": " + p.status().message());
  TimeZone tz;
  tz.name_ = std::move(name);
  tz.posix_ = *p;
  tz.initial_ = p->std_offset;
  return tz;
}

Result<TimeZone::Posix> TimeZone::ParsePosix(std::string_view s) {
  const std::string text(s);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("POSIX TZ rule \"" + text + "\": " + why);
  };
  size_t i = 0;
  auto name = [&]() -> bool {  // "EST" or "<+0330>"
    if (i < s.size() && s[i] == '<') {
      const size_t close = s.find('>', i);
      if (close == std::string_view::npos) return false;
      i = close + 1;
      return true;
    }
    const size_t from = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    return i - from >= 3;
  };
  auto number = [&](int* v) -> bool {
    const size_t from = i;
    *v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      *v = *v * 10 + (s[i++] - '0');
    return i > from;
  };
  auto hms = [&](int* secs) -> bool {  // [+-]h[h][:mm[:ss]], h up to 167
    int sign = 1;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
    int h = 0, m = 0, sec = 0;
    if (!number(&h) || h > 167) return false;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!number(&m) || m > 59) return false;
      if (i < s.size() && s[i] == ':') {
        ++i;
        if (!number(&sec) || sec > 59) return false;
      }
    }
    *secs = sign * (h * 3600 + m * 60 + sec);
    return true;
  };
  auto date = [&](RuleDate* d) -> bool {
    if (i >= s.size()) return false;
    if (s[i] == 'M') {
      ++i;
      d->kind = 'M';
      if (!number(&d->month) || i >= s.size() || s[i++] != '.') return false;
      if (!number(&d->week) || i >= s.size() || s[i++] != '.') return false;
      if (!number(&d->day)) return false;
      if (d->month < 1 || d->month > 12 || d->week < 1 || d->week > 5 || d->day > 6) return false;
    } else if (s[i] == 'J') {
      ++i;
      d->kind = 'J';
      if (!number(&d->day) || d->day < 1 || d->day > 365) return false;
    } else {
      d->kind = 'N';
      if (!number(&d->day) || d->day > 365) return false;
    }
    d->time = 7200;
    if (i < s.size() && s[i] == '/') {
      ++i;
      return hms(&d->time);
    }
    return true;
  };
  Posix p;
  int off = 0;
  if (!name()) return bad("expected a zone abbreviation");
  if (!hms(&off)) return bad("expected the standard offset");
  p.std_offset = -off;  // POSIX offsets count west of UTC
  if (i < s.size()) {
    if (!name()) return bad("expected the daylight-saving abbreviation");
    p.has_dst = true;
    p.dst_offset = p.std_offset + 3600;
    if (i < s.size() && s[i] != ',') {
      if (!hms(&off)) return bad("expected the daylight-saving offset");
      p.dst_offset = -off;
    }
    if (i >= s.size() || s[i++] != ',' || !date(&p.start) || i >= s.size() || s[i++] != ',' ||
        !date(&p.end))
      return bad("expected ,start[/time],end[/time] rules");
  }
  if (i != s.size()) return bad("unexpected text at position " + std::to_string(i));
  p.valid = true;
  return p;
}

namespace {

bool IsLeap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

}  // namespace

int TimeZone::PosixOffsetAt(int64_t utc) const {
  if (!posix_.has_dst) return posix_.std_offset;
  // Local midnight (as civil seconds) of the rule's day in year `y`, plus its time.
  auto when = [](const RuleDate& d, int y) -> int64_t {
    int64_t day;
    if (d.kind == 'J') {
      day = DaysFromCivil(y, 1, 1) + d.day - 1 + (IsLeap(y) && d.day >= 60 ? 1 : 0);
    } else if (d.kind == 'N') {
      day = DaysFromCivil(y, 1, 1) + d.day;
    } else {
      const int64_t first = DaysFromCivil(y, static_cast<unsigned>(d.month), 1);
      const int64_t next = d.month == 12 ? DaysFromCivil(y + 1, 1, 1)
                                         : DaysFromCivil(y, static_cast<unsigned>(d.month + 1), 1);
      day = first + (d.day - WeekdayFromDays(first) + 7) % 7 + 7 * (d.week - 1);
      while (day >= next) day -= 7;  // week 5 = the last such weekday of the month
    }
    return day * 86400 + d.time;
  };
  int y;
  unsigned m, dd;
  int64_t days = (utc + posix_.std_offset) / 86400;
  if ((utc + posix_.std_offset) % 86400 < 0) --days;
  CivilFromDays(days, &y, &m, &dd);
  const int64_t start = when(posix_.start, y) - posix_.std_offset;  // given in standard time
  const int64_t end = when(posix_.end, y) - posix_.dst_offset;      // given in daylight time
  const bool dst = start < end ? utc >= start && utc < end : !(utc >= end && utc < start);
  return dst ? posix_.dst_offset : posix_.std_offset;
}

int TimeZone::OffsetAt(int64_t utc) const {
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc);
  if (it == transitions_.begin())
    return transitions_.empty() && posix_.valid ? PosixOffsetAt(utc) : initial_;
  if (it == transitions_.end() && posix_.valid) return PosixOffsetAt(utc);
  return offsets_[static_cast<size_t>(it - transitions_.begin() - 1)];
}

int64_t TimeZone::ToUtc(int64_t local) const {
  const int before = OffsetAt(local - 86400), after = OffsetAt(local + 86400);
  const int64_t a = local - before, b = local - after;
  const bool a_ok = OffsetAt(a) == before, b_ok = OffsetAt(b) == after;
  if (a_ok && b_ok) return std::min(a, b);  // ambiguous: the earlier instant
  if (a_ok) return a;
  if (b_ok) return b;
  return a;  // in a gap: the old offset carries the wall time forward past the jump
}

int64_t DaysFromCivil(int y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<int64_t>(era) * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int>(static_cast<int64_t>(yoe) + era * 400 + (*m <= 2));
}

int WeekdayFromDays(int64_t z) {
  return static_cast<int>(z >= -4 ? (z + 4) % 7 : (z + 5) % 7 + 6);
}

std::string FormatLocal(int64_t utc, const TimeZone& tz) {
  const int64_t local = tz.ToLocal(utc);
  int64_t days = local / 86400, secs = local % 86400;
  if (secs < 0) secs += 86400, --days;
  int y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02d:%02d %s", y, m, d,
                static_cast<int>(secs / 3600), static_cast<int>(secs % 3600 / 60),
                tz.name().c_str());
  return buf;
}

}  // namespace tunectl

#include "core/paging.h"

#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

#include "core/spec.h"
#include "core/timezone.h"

namespace tunectl {
namespace {

std::string Quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

// Reads exactly `digits` digits at `*i` into `*out`.
bool Digits(std::string_view s, size_t* i, size_t digits, int* out) {
  if (*i + digits > s.size()) return false;
  int v = 0;
  for (size_t k = 0; k < digits; ++k) {
    const char c = s[*i + k];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *i += digits;
  *out = v;
  return true;
}

bool At(std::string_view s, size_t i, char c) {
  return i < s.size() && s[i] == c;
}

// "YYYY-MM-DD[(T| )HH:MM[:SS[.fff]]][Z|±HH:MM]" as Unix ms; nullopt when it is not one.
std::optional<int64_t> ParseUtcTime(std::string_view s) {
  size_t i = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!Digits(s, &i, 4, &y) || !At(s, i++, '-') || !Digits(s, &i, 2, &mo) || !At(s, i++, '-') ||
      !Digits(s, &i, 2, &d))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  int64_t ms = 0;
  if (At(s, i, 'T') || At(s, i, ' ')) {
    ++i;
    if (!Digits(s, &i, 2, &h) || !At(s, i++, ':') || !Digits(s, &i, 2, &mi)) return std::nullopt;
    if (At(s, i, ':')) {
      ++i;
      if (!Digits(s, &i, 2, &sec)) return std::nullopt;
      if (At(s, i, '.')) {
        ++i;
        int scale = 100;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
          ms += (s[i++] - '0') * scale;
          scale /= 10;
        }
      }
    }
    if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (At(s, i, 'Z')) {
    ++i;
  } else if (At(s, i, '+') || At(s, i, '-')) {
    const int sign = s[i++] == '-' ? -1 : 1;
    int oh = 0, om = 0;
    if (!Digits(s, &i, 2, &oh) || !At(s, i++, ':') || !Digits(s, &i, 2, &om) || oh > 23 || om > 59)
      return std::nullopt;
    offset_s = sign * (oh * 3600 + om * 60);
  }
  if (i != s.size()) return std::nullopt;
  // A day past the month's end (Feb 30) is not a date.
  const int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int cy = 0;
  unsigned cm = 0, cd = 0;
  CivilFromDays(days, &cy, &cm, &cd);
  if (cy != y || static_cast<int>(cm) != mo || static_cast<int>(cd) != d) return std::nullopt;
  return ((days * 86400 + h * 3600 + mi * 60 + sec) - offset_s) * 1000 + ms;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseId(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

Result<int64_t> ParseSince(std::string_view text, int64_t now_ms, std::string_view flag) {
  if (auto t = ParseUtcTime(text)) return *t;
  if (auto d = ParseDurationMs(text); d.ok()) return now_ms - *d;
  return Status::InvalidArgument(std::string(flag) + ": " + Quoted(text) +
                                 " is neither a duration back from now (e.g. 30d, 12h, 90m) nor "
                                 "a UTC date or time (e.g. 2026-01-31, 2026-01-31T08:00:00Z)");
}

std::string PageToken(std::string_view list, std::string_view key) {
  return std::string(list) + ":" + std::string(key);
}

std::string PageToken(std::string_view list, int64_t id) {
  return PageToken(list, std::to_string(id));
}

Result<Page> ResolvePage(const PageRules& rules, const PageRequest& in, int64_t now_ms) {
  Page p;
  const std::string cap = std::to_string(rules.max_limit);
  if (in.limit < 0 || in.limit > rules.max_limit)
    return Status::InvalidArgument(
        "--limit: " + std::to_string(in.limit) + " is out of range; allowed 1.." + cap +
        " rows per page (default " + std::to_string(rules.default_limit) + "), or 0 for all of " +
        "them when they are at most " + cap + "; page through more with --page-token");
  if (in.all && in.limit != 0)
    return Status::InvalidArgument("--limit: all (0) and " + std::to_string(in.limit) +
                                   " rows at once; give one");
  p.all = in.all;
  p.limit = in.all ? rules.max_limit : in.limit > 0 ? in.limit : rules.default_limit;
  if (!in.token.empty()) {
    const std::string prefix = rules.list + ":";
    const std::string_view t = in.token;
    const bool ours = t.size() > prefix.size() && t.substr(0, prefix.size()) == prefix;
    const std::string_view key = ours ? t.substr(prefix.size()) : std::string_view();
    const std::optional<int64_t> id = ours && !rules.keyed_by_name ? ParseId(key) : std::nullopt;
    if (!ours || (!rules.keyed_by_name && !id))
      return Status::InvalidArgument("--page-token: " + Quoted(in.token) +
                                     " is not a page token of the " + rules.list +
                                     " list; pass the next_page_token that list printed (or none "
                                     "for its first page)");
    if (rules.keyed_by_name)
      p.after_key = std::string(key);
    else
      p.before_id = *id;
  }
  if (!in.since.empty()) {
    if (!rules.has_since)
      return Status::InvalidArgument("--since: the " + rules.list +
                                     " list has no time to filter on; page it with --limit and "
                                     "--page-token");
    auto since = ParseSince(in.since, now_ms);
    if (!since.ok()) return since.status();
    p.since_ms = *since;
  }
  return p;
}

// "audit:<since>:<until>:<upto>:<after seq>:<after source>:<after id>", every number decimal.
constexpr std::string_view kChainList = "audit";

std::string ChainPageToken(const ChainPage& p) {
  return PageToken(kChainList, std::to_string(p.since_ms) + ":" + std::to_string(p.until_ms) + ":" +
                                   std::to_string(p.upto_seq) + ":" + std::to_string(p.after_seq) +
                                   ":" + p.after_source + ":" + std::to_string(p.after_id));
}

Result<ChainPage> ResolveChainPage(const ChainPageRequest& in, int64_t now_ms) {
  ChainPage p;
  const std::string cap = std::to_string(kMaxPageSize);
  if (in.limit < 0 || in.limit > kMaxPageSize)
    return Status::InvalidArgument("limit: " + std::to_string(in.limit) +
                                   " is out of range; allowed 1.." + cap +
                                   " rows per page (0 = " + cap + ")");
  p.limit = in.limit > 0 ? in.limit : kMaxPageSize;
  if (!in.token.empty()) {
    // The window and the position are the token's: what the first page resolved.
    std::vector<std::string_view> parts;
    std::string_view rest = in.token;
    for (size_t at; (at = rest.find(':')) != std::string_view::npos; rest.remove_prefix(at + 1))
      parts.push_back(rest.substr(0, at));
    parts.push_back(rest);
    std::optional<int64_t> n[5];
    const bool shaped = parts.size() == 7 && parts[0] == kChainList &&
                        (parts[5].empty() || parts[5] == "audit" || parts[5] == "log");
    for (size_t i = 0; shaped && i < 5; ++i) n[i] = ParseInt(parts[i < 4 ? i + 1 : 6]);
    if (!shaped || !n[0] || !n[1] || !n[2] || !n[3] || !n[4] || *n[2] < 0 || *n[3] < 0)
      return Status::InvalidArgument("page_token: " + Quoted(in.token) +
                                     " is not a page token of the audit export; pass the "
                                     "next_page_token of the previous page (none for the first)");
    p.since_ms = *n[0];
    p.until_ms = *n[1];
    p.upto_seq = *n[2];
    p.after_seq = *n[3];
    p.after_source = std::string(parts[5]);
    p.after_id = *n[4];
    return p;
  }
  const std::string forms =
      "a UTC date or time (e.g. 2026-12-01, 2026-12-01T08:00:00Z) or a duration back from now "
      "(e.g. 7d, 24h)";
  if (in.since.empty())
    return Status::InvalidArgument("--since: required: where the export starts, " + forms);
  auto since = ParseSince(in.since, now_ms);
  if (!since.ok()) return since.status();
  p.since_ms = *since;
  if (!in.until.empty()) {
    auto until = ParseSince(in.until, now_ms, "--until");
    if (!until.ok()) return until.status();
    if (*until <= p.since_ms)
      return Status::InvalidArgument("--until: " + Quoted(in.until) + " is not after --since " +
                                     Quoted(in.since) +
                                     "; the export holds the rows at or after --since and "
                                     "before --until");
    p.until_ms = *until;
  }
  return p;
}

Status TooManyForOnePage(const PageRules& rules) {
  const std::string cap = std::to_string(rules.max_limit);
  return Status::FailedPrecondition(
      "--limit 0: more than " + cap + " " + rules.list + " match, more than one response " +
      "carries (at most " + cap + "); page through them with --limit " + cap +
      " and --page-token, or narrow the list" + (rules.has_since ? " with --since" : ""));
}

Result<int> ResolveSeriesPoints(int limit, bool all) {
  const std::string cap = std::to_string(kMaxSeriesPoints);
  if (limit < 0 || limit > kMaxSeriesPoints || (all && limit != 0))
    return Status::InvalidArgument(
        "--limit: " + std::to_string(limit) + " is out of range; allowed 1.." + cap +
        " of the newest points of the series (default " + std::to_string(kDefaultSeriesPoints) +
        "), or 0 for the whole series when it is at most " + cap + " points");
  return all ? kMaxSeriesPoints : limit > 0 ? limit : kDefaultSeriesPoints;
}

Status TooManyPoints() {
  const std::string cap = std::to_string(kMaxSeriesPoints);
  return Status::FailedPrecondition("--limit 0: the series has more than " + cap +
                                    " points, more than one response carries; show the newest " +
                                    "with --limit N (at most " + cap + ")");
}

}  // namespace tunectl

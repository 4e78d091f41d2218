// Paging of every list: how many rows a page holds, the keyset token that continues a list, and
// the --since cut-off. Pure; thread-safe.
//
// The convention, the same for every list keyed by id (log, experiments, batches, baselines,
// runs, hypotheses): a page is the newest `limit` matching rows, shown oldest first; its token
// continues with the rows older than the page (ids below its first). Workloads are listed by
// name, A to Z, and their token continues after the page's last name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tunectl {

constexpr int kDefaultPageSize = 50;       // rows when no limit is given
constexpr int kMaxPageSize = 1000;         // the most rows one response carries, "all" included
constexpr int kDefaultSeriesPoints = 200;  // regress show: the newest points of the series
constexpr int kMaxSeriesPoints = 20000;    // ... and the most one response carries
// The most bytes one gRPC message may carry, set on the server and the CLI alike (gRPC's default
// is 4 MiB): a safety margin only. Paging keeps every response far below it.
constexpr int kMaxMessageBytes = 16 << 20;

// What a list request asked for (the API's fields, as sent).
struct PageRequest {
  int limit = 0;      // rows; 0 = the default
  bool all = false;   // every matching row (--limit 0), refused past the cap
  std::string token;  // "" = the first page (the newest rows)
  std::string since;  // "" = any time; "30d", "12h", "2026-01-31", "2026-01-31T08:00:00Z"
};

// What the query needs: a keyset and a size, validated.
struct Page {
  int64_t before_id = 0;  // only rows with id < before_id (0 = from the newest)
  std::string after_key;  // lists keyed by name: only names > after_key ("" = from the first)
  int limit = kDefaultPageSize;  // rows to return; a query fetches limit + 1 to see if more follow
  bool all = false;
  int64_t since_ms = 0;  // only rows at or after this time (Unix ms; 0 = any time)
};

// Limits for one list: its name in tokens and messages ("experiments"), its default and cap.
struct PageRules {
  std::string list;
  int default_limit = kDefaultPageSize;
  int max_limit = kMaxPageSize;
  bool keyed_by_name = false;  // workloads: the token holds a name, not an id
  bool has_since = true;       // lists where time makes sense take --since
};

// Validates a request against the list's rules; `now_ms` resolves a relative --since. Errors name
// the flag, the value and what is allowed (InvalidArgument).
Result<Page> ResolvePage(const PageRules& rules, const PageRequest& in, int64_t now_ms);

// The token that continues `list` after a page: the id (or name) the next page starts beyond.
std::string PageToken(std::string_view list, std::string_view key);
std::string PageToken(std::string_view list, int64_t id);

// A request for every row (--limit 0) that found more than the cap: refused, with how to page.
Status TooManyForOnePage(const PageRules& rules);

// regress show --limit: the newest points of the series to show (0 = the default, or with `all`
// the whole series when it is at most kMaxSeriesPoints); InvalidArgument past the cap.
Result<int> ResolveSeriesPoints(int limit, bool all);
// The whole series (--limit 0) is longer than the cap: refused, with what to ask instead.
Status TooManyPoints();

// --since: a duration back from `now_ms` ("30d", "12h", "90m", "1h30m") or a UTC date or time
// ("2026-01-31", "2026-01-31T08:00:00Z", "2026-01-31 08:00"). Returns Unix ms.
Result<int64_t> ParseSince(std::string_view text, int64_t now_ms);

}  // namespace tunectl

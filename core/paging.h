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
// ("2026-01-31", "2026-01-31T08:00:00Z", "2026-01-31 08:00"). Returns Unix ms. `flag` names the
// option in the error (the same forms serve --until).
Result<int64_t> ParseSince(std::string_view text, int64_t now_ms,
                           std::string_view flag = "--since");

// `audit export` walks the hash chain oldest first (core/audit_chain.h): the links in seq order,
// then the rows no link covers, by (source, id). Its token fixes what the first page saw — the
// window (--since, --until) as resolved then, and the last link in it — so neither a relative
// --since nor the sealer running between pages moves the window, skips a row or repeats one.
struct ChainPageRequest {
  std::string since;  // required on the first page; the forms of ParseSince
  std::string until;  // "" = no end; the same forms; exclusive
  int limit = 0;      // rows per page; 0 = kMaxPageSize
  std::string token;  // "" = the first page; else the window and position come from it
};
struct ChainPage {
  int64_t since_ms = 0;
  int64_t until_ms = 0;      // rows before this time only; 0 = no end
  int64_t upto_seq = -1;     // links up to this one; -1 = not fixed yet (the first page)
  int64_t after_seq = 0;     // the links after this one come next
  std::string after_source;  // "": still in the links; else the uncovered rows after
  int64_t after_id = 0;      // (after_source, after_id) come next
  int limit = kMaxPageSize;
};
// Validates a request; `now_ms` resolves a relative --since/--until. Errors name the flag, the
// value and the forms allowed (InvalidArgument).
Result<ChainPage> ResolveChainPage(const ChainPageRequest& in, int64_t now_ms);
// The token that continues `page` (its window, its last link, its position).
std::string ChainPageToken(const ChainPage& page);
// A page of rows with free text (payloads) stops before it passes this many bytes, whatever its
// limit, so no response nears kMaxMessageBytes.
constexpr size_t kMaxPageBytes = kMaxMessageBytes / 4;

}  // namespace tunectl

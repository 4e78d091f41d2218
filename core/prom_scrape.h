// Scraping a Prometheus exporter during a run, the pure half: parsing the text exposition format,
// PromQL-style instant selectors, turning successive scrapes into one sample per scrape (counters
// as per-second rates, DCGM N/A sentinels dropped), and framing the HTTP exchange. No sockets and
// no clocks: the agent does the I/O and passes the time. Functions are thread-safe; a PromMatcher
// is immutable and may be shared; a PromSampler is thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace re2 {
class RE2;
}

namespace tunectl {

struct PromPoint {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
  std::optional<int64_t> timestamp_ms;  // as exposed; rates use the scrape's own time instead
};

struct PromScrape {
  std::vector<PromPoint> points;
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram|summary|untyped|…
  int skipped = 0;                           // malformed lines, each skipped on its own
  int first_skipped_line = 0;                // 1-based; 0 when none
  std::string first_skipped_reason;

  // Whether the series named `sample_name` is cumulative (its rate is what matters): a family
  // declared counter (`foo` or OpenMetrics `foo_total`), the _bucket/_count/_sum of a histogram or
  // summary, or, when no TYPE (or untyped/unknown) covers it, a name ending in `_total`.
  bool Cumulative(std::string_view sample_name) const;
};

// Bounds on one scrape, and so on the memory its points take.
struct PromTextLimits {
  size_t max_bytes = 64 << 20;
  size_t max_points = 1 << 20;
};

// The text exposition format 0.0.4, leniently: comments, HELP/TYPE, blank lines, CRLF, leading and
// trailing blanks, label escapes \\ \" \n (any other escape is kept as written), a trailing comma
// in labels, NaN/+Inf/-Inf values, an optional integer timestamp in ms, and an OpenMetrics
// exemplar or `# EOF` (ignored). A malformed line (a repeated label, a TYPE naming no known type
// or repeating one are malformed too) is skipped and counted, never fatal: one bad family must not
// lose the rest. InvalidArgument only beyond `limits`.
Result<PromScrape> ParsePromText(std::string_view text, const PromTextLimits& limits = {});

// A PromQL instant selector: NAME, NAME{m, …} or {m, …} where m is l="v", l!="v", l=~"re" or
// l!~"re" (strings in "…", '…' with Go escapes, or `raw`), __name__ matchable like any label.
// Regexes are fully anchored and `.` matches newlines, as in Prometheus 3; a missing label is "".
// Without a name, one matcher must not match "". Errors: InvalidArgument naming the 1-based column
// and what was expected there.
class PromMatcher {
 public:
  static Result<PromMatcher> Parse(std::string_view selector);
  bool Matches(const PromPoint& p) const;
  const std::string& text() const { return text_; }

 private:
  struct Term {
    std::string label;  // "__name__" for the metric name
    enum class Op { kEq, kNe, kRe, kNre } op = Op::kEq;
    std::string value;
    std::shared_ptr<const re2::RE2> re;  // for kRe and kNre
  };
  static bool TermMatches(const Term& t, std::string_view value);

  PromMatcher() = default;
  std::string text_;
  std::vector<Term> terms_;
};

enum class PromAgg { kMean, kMax, kMin, kSum };
inline constexpr PromAgg kDefaultPromAgg = PromAgg::kMean;
// "mean", "max", "min" or "sum"; anything else is InvalidArgument listing them.
Result<PromAgg> ParsePromAgg(std::string_view text);
const char* PromAggName(PromAgg agg);

// `every:` as ms: one or more <integer><unit> with units h, m, s, ms in that order ("5s",
// "500ms", "1m30s"), from 100ms to 1h. InvalidArgument naming the field, the value and what is
// allowed.
inline constexpr int64_t kMinPromIntervalMs = 100;
inline constexpr int64_t kMaxPromIntervalMs = 3600 * 1000;
Result<int64_t> ParsePromInterval(std::string_view text);

// Whether `v` carries no reading: NaN, ±Inf, a DCGM int64 sentinel (DCGM_FT_INT64_BLANK …
// NOT_PERMISSIONED, 0x7ffffffffffffff0…3, which all round to 2^63 as a double, so anything
// >= 2^63) or a DCGM double sentinel (DCGM_FT_FP64_BLANK … NOT_PERMISSIONED, 2^47 … 2^47+3).
// The int32 sentinels (2147483632…5) are kept: an energy counter in mJ passes through them.
bool PromValueIsNa(double v);

// One declared metric across a run's scrapes of its exporter. Each Add gives this scrape's
// sample: the matched series' values aggregated with `agg`, where a cumulative series (see
// PromScrape::Cumulative) contributes its per-second rate since the previous scrape holding it
// (same name and labels, timed by `at_ms`, not by exposed timestamps), none on its first scrape,
// after a reset (the value went down) or when `at_ms` is not later. N/A values (PromValueIsNa) are
// dropped, and a counter's N/A keeps its previous reading; a series absent from a scrape is
// forgotten; a series repeated within a scrape counts once (the first).
class PromSampler {
 public:
  PromSampler(PromMatcher matcher, PromAgg agg) : matcher_(std::move(matcher)), agg_(agg) {}

  struct Outcome {
    std::optional<double> value;  // finite when set
    int series = 0;               // series that contributed to `value`
    std::string why_none;         // when `value` is unset: no series matched, all N/A, ...
  };
  // `at_ms`: when the scrape was taken, on a monotonic clock.
  Outcome Add(const PromScrape& scrape, int64_t at_ms);

  const PromMatcher& matcher() const { return matcher_; }
  PromAgg agg() const { return agg_; }

 private:
  struct Last {
    double value;
    int64_t at_ms;
  };
  PromMatcher matcher_;
  PromAgg agg_;
  std::map<std::string, Last> last_;  // cumulative series of the latest scrape, by series key
};

// An exporter's address: http://host[:port][/path[?query]]. Only plain http (https and other
// schemes are refused, as are credentials); port defaults to 80, an empty path to /metrics;
// IPv6 hosts in brackets. No blanks or control characters anywhere.
struct PromUrl {
  std::string host;  // without brackets
  int port = 80;
  std::string path = "/metrics";  // with the query, if any
};
Result<PromUrl> ParsePromUrl(std::string_view url);

// The request to send for `url`: an HTTP/1.1 GET with Host, an Accept for text format 0.0.4, no
// compression and Connection: close, so the response ends when the server closes.
std::string PromHttpRequest(const PromUrl& url);

// The body of a complete raw HTTP/1.0 or 1.1 response (as read until the server closed):
// status 200 required (else Unavailable naming the status line), interim 1xx responses skipped,
// Transfer-Encoding: chunked decoded, Content-Length honoured (a shorter body is an error), a
// Content-Encoding other than identity refused. Malformed framing is InvalidArgument.
Result<std::string> HttpResponseBody(std::string_view raw_response);

}  // namespace tunectl

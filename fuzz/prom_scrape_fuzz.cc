// core/prom_scrape.h over arbitrary bytes. The first line is tried as a selector, a URL, an
// `every:` interval and an `agg:`; the rest, split at the first form feed, is two scrapes that
// samplers (the selector's, when it parses, and one matching every series) take in turn, with a
// counter reset and a repeated time among them; the whole input is also an HTTP response. Never a
// crash, a hang or undefined behaviour; every sample is finite; every error says what it expected.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/prom_scrape.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunectl;

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':';
}

void CheckScrape(const PromScrape& s) {
  FUZZ_CHECK(s.skipped >= 0, "skipped counts lines");
  FUZZ_CHECK((s.skipped == 0) == (s.first_skipped_line == 0), "a first skipped line iff skipped");
  FUZZ_CHECK((s.skipped == 0) == s.first_skipped_reason.empty(), "a reason iff skipped");
  for (const PromPoint& p : s.points) {
    FUZZ_CHECK(!p.name.empty() && !(p.name[0] >= '0' && p.name[0] <= '9'), "a metric name");
    for (char c : p.name) FUZZ_CHECK(NameChar(c), "metric name characters");
    for (const auto& [name, value] : p.labels) FUZZ_CHECK(!name.empty(), "a label name");
    (void)s.Cumulative(p.name);
  }
}

void Run(PromSampler& sampler, const PromScrape& s, int64_t at_ms) {
  const PromSampler::Outcome o = sampler.Add(s, at_ms);
  if (o.value) {
    FUZZ_CHECK(std::isfinite(*o.value), "a sample is finite");
    FUZZ_CHECK(o.series >= 1 && static_cast<size_t>(o.series) <= s.points.size(),
               "a sample comes from matched series");
    FUZZ_CHECK(o.why_none.empty(), "no reason with a value");
  } else {
    FUZZ_CHECK(o.series == 0, "no series without a value");
    FUZZ_CHECK(!o.why_none.empty(), "a reason without a value");
  }
}

void Sample(const PromMatcher& m, const PromScrape& a, const PromScrape& b) {
  for (PromAgg agg : {PromAgg::kMean, PromAgg::kMax, PromAgg::kMin, PromAgg::kSum}) {
    PromSampler sampler(m, agg);
    Run(sampler, a, 0);
    Run(sampler, b, 5000);
    Run(sampler, a, 10000);
    Run(sampler, a, 10000);
    Run(sampler, b, 10001);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view head = in.substr(0, nl);
  const std::string_view rest = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  const size_t ff = rest.find('\f');
  const std::string_view text_a = rest.substr(0, ff);
  const std::string_view text_b = ff == std::string_view::npos ? rest : rest.substr(ff + 1);

  auto a = ParsePromText(text_a);
  auto b = ParsePromText(text_b);
  FUZZ_CHECK(a.ok() && b.ok(), "text under the size limit parses");
  CheckScrape(*a);
  CheckScrape(*b);

  static const PromMatcher every = [] {
    auto m = PromMatcher::Parse(R"({__name__=~".+"})");
    FUZZ_CHECK(m.ok(), m.status().message().c_str());
    return *m;
  }();
  Sample(every, *a, *b);
  if (auto m = PromMatcher::Parse(head); m.ok()) {
    Sample(*m, *a, *b);
  } else {
    FUZZ_CHECK(m.status().message().find("at column ") != std::string::npos,
               "a selector error names its column");
  }

  if (auto u = ParsePromUrl(head); u.ok()) {
    FUZZ_CHECK(u->port >= 1 && u->port <= 65535, "a port in range");
    FUZZ_CHECK(!u->host.empty() && !u->path.empty() && u->path[0] == '/', "host and path");
    const std::string req = PromHttpRequest(*u);
    FUZZ_CHECK(req.find("\r\n\r\n") == req.size() - 4, "one request, one header block");
    for (char c : u->host + u->path) {
      FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && c != 0x7f, "no blanks or controls");
    }
  } else {
    FUZZ_CHECK(!u.status().message().empty(), "a URL error says why");
  }
  if (auto ms = ParsePromInterval(head); ms.ok()) {
    FUZZ_CHECK(*ms >= kMinPromIntervalMs && *ms <= kMaxPromIntervalMs, "an interval in bounds");
  }
  if (auto agg = ParsePromAgg(head); !agg.ok()) {
    FUZZ_CHECK(agg.status().message().find("mean, max, min, sum") != std::string::npos,
               "an agg error lists the allowed");
  }
  if (auto body = HttpResponseBody(in); body.ok()) {
    FUZZ_CHECK(body->size() <= in.size(), "a body is no longer than the response");
  }
  return 0;
}

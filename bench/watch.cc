// bench_watch: the regression watch as it runs in production — after every finished run, over the
// newest points of the series (the incremental rule, NewConfirmedRegressionsInTail) — on simulated
// series with known change points: false alarms, detection, delay, location of the first bad run,
// duplicates; on long series, the incremental rule against the full analysis of the whole series
// (where they differ); and the cost of one analysis by series length and of one finished run.
//
//   build/bench/bench_watch [--series N] [--seed S]
//
// Prints Markdown tables and the targets of docs/benchmarks.md with PASS/FAIL; exits non-zero when
// a target fails (enforced from 200 series on).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/regression.h"
#include "core/sequential.h"

namespace tunectl {
namespace {

constexpr double kMinEffect = 0.03;  // the primary metric's min_effect
constexpr int kLength = 80;          // runs per series
constexpr int kChangeAt = 40;        // first bad run (0-based) in the step scenarios

struct Scenario {
  std::string label;
  double noise;   // run-to-run CV of the run summaries
  double step;    // relative change at `change_at` (negative = slower); 0 = stable
  bool outliers;  // 3 % of runs on a slow node (-15 %), as real clusters have
  int length = kLength;
  int change_at = kChangeAt;
  double step2 = 0;  // a second change at `change2_at` (long series)
  int change2_at = 0;
};

std::vector<double> Simulate(SimRng& rng, const Scenario& s) {
  std::vector<double> x;
  for (int i = 0; i < s.length; ++i) {
    double v = 1000 * std::exp(s.noise * rng.Normal());
    if (s.step != 0 && i >= s.change_at) v *= 1 + s.step;
    if (s.step2 != 0 && i >= s.change2_at) v *= 1 + s.step2;
    if (s.outliers && rng.Uniform() < 0.03) v *= 0.85;
    x.push_back(v);
  }
  return x;
}

struct Record {
  int at = 0;     // the series length when it was recorded
  int index = 0;  // its first bad run
};

MetricSpec Metric() {
  MetricSpec m;
  m.name = "samples_per_s";
  m.better = Better::kHigher;
  m.min_effect = kMinEffect;
  return m;
}

// Replays the series run by run, as FinishRun does — the store hands the incremental rule the
// newest ConfirmOptions::tail points and the regressions recorded among them — or, with `full`,
// the full rule over the whole series so far. Returns what was recorded, in order.
std::vector<Record> Replay(const std::vector<double>& x, bool full = false) {
  const MetricSpec m = Metric();
  const ConfirmOptions o;
  std::vector<Record> out;
  std::vector<size_t> recorded;
  for (size_t n = 2; n <= x.size(); ++n) {
    const size_t from = !full && n > o.tail ? n - o.tail : 0;
    const std::vector<double> seen(x.begin() + static_cast<std::ptrdiff_t>(from),
                                   x.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<size_t> in_seen;
    for (size_t r : recorded)
      if (r >= from) in_seen.push_back(r - from);
    for (const ChangePoint& c : full ? NewConfirmedRegressions(seen, m, in_seen)
                                     : NewConfirmedRegressionsInTail(seen, from == 0, m, in_seen)) {
      recorded.push_back(c.index + from);
      out.push_back({static_cast<int>(n), static_cast<int>(c.index + from)});
    }
  }
  return out;
}

// Per scenario: series with a false alarm, the step(s) found (within 2 runs), exact, delay.
struct Tally {
  int series = 0, any_false = 0, found = 0, exact = 0, within1 = 0, dup = 0;
  std::vector<int> delays;
  void Add(const Scenario& s, const std::vector<Record>& records) {
    ++series;
    int other = 0;
    std::vector<int> changes;
    if (s.step < 0) changes.push_back(s.change_at);
    if (s.step2 < 0) changes.push_back(s.change2_at);
    std::vector<int> matching(changes.size(), 0);
    for (const Record& r : records) {
      bool matched = false;
      for (size_t k = 0; k < changes.size() && !matched; ++k) {
        const int err = std::abs(r.index - changes[k]);
        if (err > 2) continue;
        matched = true;
        if (matching[k]++ > 0) continue;
        exact += err == 0;
        within1 += err <= 1;
        delays.push_back(r.at - changes[k]);
      }
      other += matched ? 0 : 1;
    }
    any_false += other > 0;
    for (int m : matching) {
      found += m > 0;
      dup += m > 1;
    }
  }
};

}  // namespace
}  // namespace tunectl

int main(int argc, char** argv) {
  using namespace tunectl;  // NOLINT
  int n = 500;
  uint64_t seed = 42;
  bool differences = false;
  int long_n = -1;  // series per long scenario; -1 = a fifth of --series
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--series") && i + 1 < argc)
      n = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--differences"))
      differences = true;
    else if (!std::strcmp(argv[i], "--long") && i + 1 < argc)
      long_n = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: bench_watch [--series N (default 500)] [--seed S] [--long N] "
                   "[--differences]\n"
                   "  --long N: long series per scenario, the incremental rule against the full\n"
                   "            one (default: a fifth of --series; 0 = skip)\n"
                   "  --differences: on stderr, what each rule recorded where they differ\n");
      return 2;
    }
  }
  if (n < 1) {
    std::fprintf(stderr, "--series: %d is out of range; allowed >= 1\n", n);
    return 2;
  }
  const std::vector<Scenario> scenarios = {
      {"stable, 1 % noise", 0.01, 0, false},       {"stable, 3 % noise", 0.03, 0, false},
      {"stable, 2 % + slow nodes", 0.02, 0, true}, {"-5 %, 1 % noise", 0.01, -0.05, false},
      {"-10 %, 2 % noise", 0.02, -0.10, false},    {"-10 %, 2 % + slow nodes", 0.02, -0.10, true},
      {"-20 %, 3 % noise", 0.03, -0.20, false},    {"+10 % (faster), 2 % noise", 0.02, 0.10, false},
  };
  std::printf(
      "## Regression watch, replayed run by run (%d series of %d runs per scenario, seed "
      "%llu)\n\n",
      n, kLength, static_cast<unsigned long long>(seed));
  std::printf(
      "| scenario | series with a false alarm | found the step | first bad run exact | within 1 | "
      "runs after the change to confirm (median) | step recorded twice |\n|---|---|---|---|---|---|"
      "---|\n");
  double worst_false = 0, worst_detect = 1, worst_exact = 1;
  int duplicates = 0;
  auto median = [](std::vector<int> v) {
    if (v.empty()) return std::string("-");
    std::sort(v.begin(), v.end());
    return std::to_string(v[v.size() / 2]);
  };
  for (size_t si = 0; si < scenarios.size(); ++si) {
    const Scenario& s = scenarios[si];
    SimRng rng(seed + 1000 * si);
    // A record within 2 runs of a real (slower) step is that step; any other is a false alarm.
    Tally t;
    for (int k = 0; k < n; ++k) t.Add(s, Replay(Simulate(rng, s)));
    const double fa = static_cast<double>(t.any_false) / n;
    worst_false = std::max(worst_false, fa);
    if (s.step >= 0) {
      std::printf("| %s | %.3f | - | - | - | - | - |\n", s.label.c_str(), fa);
    } else {
      const double det = static_cast<double>(t.found) / n;
      const double ex = t.found ? static_cast<double>(t.exact) / t.found : 0;
      if (-s.step >= 2 * kMinEffect) {
        worst_detect = std::min(worst_detect, det);
        worst_exact = std::min(worst_exact, ex);
      }
      duplicates += t.dup;
      std::printf("| %s | %.3f | %.3f | %.3f | %.3f | %s | %d |\n", s.label.c_str(), fa, det, ex,
                  t.found ? static_cast<double>(t.within1) / t.found : 0, median(t.delays).c_str(),
                  t.dup);
    }
  }

  // Long series: the incremental rule (the newest 200 points) against the full analysis of the
  // whole series, replayed side by side on the same series.
  if (long_n < 0) long_n = std::max(1, n / 5);
  const std::vector<Scenario> long_scenarios = {
      {"stable, 3 % noise", 0.03, 0, false, 300},
      {"stable, 2 % + slow nodes", 0.02, 0, true, 300},
      {"-10 % at run 250, 2 % noise", 0.02, -0.10, false, 300, 250},
      {"-5 % at run 230, 1 % noise", 0.01, -0.05, false, 300, 230},
      {"-10 % at 120 and at 260, 2 % + slow nodes", 0.02, -0.10, true, 300, 120, -0.10, 260},
      {"+10 % at 150, -10 % at 240, 2 % noise", 0.02, 0.10, false, 300, 150, -0.10, 240},
  };
  if (long_n > 0)
    std::printf(
        "\n## The incremental rule against the full analysis (%d series of 300 runs per scenario, "
        "replayed side by side)\n\n",
        long_n);
  if (long_n > 0)
    std::printf(
        "| scenario | series where they differ | false alarm (incremental / full) | slower steps "
        "found | first bad run exact | runs to confirm (median) |\n|---|---|---|---|---|---|\n");
  int differ_total = 0, long_total = 0;
  for (size_t si = 0; long_n > 0 && si < long_scenarios.size(); ++si) {
    const Scenario& s = long_scenarios[si];
    SimRng rng(seed + 7000 + 1000 * si);
    Tally inc, full;
    int differ = 0;
    for (int k = 0; k < long_n; ++k) {
      const auto x = Simulate(rng, s);
      const auto a = Replay(x), b = Replay(x, /*full=*/true);
      bool same = a.size() == b.size();
      for (size_t i = 0; same && i < a.size(); ++i)
        same = a[i].at == b[i].at && a[i].index == b[i].index;
      differ += same ? 0 : 1;
      if (!same && differences) {
        auto text = [](const std::vector<Record>& r) {
          std::string t;
          for (const Record& rec : r)
            t += " run " + std::to_string(rec.index) + " after " + std::to_string(rec.at);
          return t.empty() ? std::string(" none") : t;
        };
        std::fprintf(stderr, "%s, series %d: incremental%s; full%s\n", s.label.c_str(), k,
                     text(a).c_str(), text(b).c_str());
      }
      inc.Add(s, a);
      full.Add(s, b);
    }
    differ_total += differ;
    long_total += long_n;
    const int steps = long_n * ((s.step < 0 ? 1 : 0) + (s.step2 < 0 ? 1 : 0));
    auto pair = [&](double x, double y) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.3f / %.3f", x, y);
      return std::string(buf);
    };
    std::printf("| %s | %d | %s | %s | %s | %s / %s |\n", s.label.c_str(), differ,
                pair(static_cast<double>(inc.any_false) / long_n,
                     static_cast<double>(full.any_false) / long_n)
                    .c_str(),
                steps ? pair(static_cast<double>(inc.found) / steps,
                             static_cast<double>(full.found) / steps)
                            .c_str()
                      : "-",
                steps ? pair(inc.found ? static_cast<double>(inc.exact) / inc.found : 0,
                             full.found ? static_cast<double>(full.exact) / full.found : 0)
                            .c_str()
                      : "-",
                median(inc.delays).c_str(), median(full.delays).c_str());
  }

  std::printf("\n## Cost of one analysis (AnalyzeRegression over the whole series)\n\n");
  std::printf("| runs in the series | ms per analysis |\n|---|---|\n");
  double ms_1000 = 0;
  for (int len : {50, 200, 1000, 5000}) {
    SimRng rng(seed);
    Scenario s{"", 0.02, -0.10, false};
    std::vector<double> x;
    while (static_cast<int>(x.size()) < len) {
      auto part = Simulate(rng, s);
      x.insert(x.end(), part.begin(), part.end());
    }
    x.resize(static_cast<size_t>(len));
    MetricSpec m;
    m.name = "samples_per_s";
    m.min_effect = kMinEffect;
    const int reps = len >= 5000 ? 3 : 20;
    std::vector<double> times;
    size_t sink = 0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      sink += AnalyzeRegression(x, {}, m).changes.size();
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double med = times[times.size() / 2];
    if (len == 1000) ms_1000 = med;
    std::printf("| %d | %.2f (%zu changes) |\n", len, med, sink / static_cast<size_t>(reps));
  }

  // One finished run at 24,000 runs of history: the four analyses of the full rule against the
  // incremental rule's four over the newest 200 points.
  std::vector<double> big;
  {
    SimRng rng(seed);
    Scenario s{"", 0.02, 0, false, 24000};
    big = Simulate(rng, s);
  }
  auto time_ms = [](auto f) {
    std::vector<double> times;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    return times[1];
  };
  const MetricSpec metric = Metric();
  const double full_ms = time_ms([&] { (void)NewConfirmedRegressions(big, metric, {}); });
  const std::vector<double> newest(big.end() - 200, big.end());
  const double tail_ms =
      time_ms([&] { (void)NewConfirmedRegressionsInTail(newest, false, metric, {}); });
  std::printf(
      "\nOne finished run at 24000 runs of history (median of 3): the full rule %.1f ms, the "
      "incremental rule %.2f ms\n",
      full_ms, tail_ms);

  const bool enforce = n >= 200;
  int failed = 0;
  auto target = [&](bool ok, const char* what) {
    std::printf("- %s: %s\n", ok ? "PASS" : "FAIL", what);
    failed += ok ? 0 : 1;
  };
  std::printf("\n### Targets\n\n");
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "series with a false alarm (80 runs, replayed) <= 2 %%: worst %.3f", worst_false);
  target(worst_false <= 0.02, buf);
  std::snprintf(buf, sizeof buf,
                "a step of >= 2x min_effect found (within 2 runs) >= 95 %%: worst %.3f",
                worst_detect);
  target(worst_detect >= 0.95, buf);
  std::snprintf(buf, sizeof buf, "... naming the first bad run exactly >= 90 %%: worst %.3f",
                worst_exact);
  target(worst_exact >= 0.90, buf);
  std::snprintf(buf, sizeof buf, "a step recorded once: %d recorded twice", duplicates);
  target(duplicates == 0, buf);
  std::snprintf(buf, sizeof buf, "one analysis of a 1000-run series < 50 ms: %.2f ms", ms_1000);
  target(ms_1000 < 50, buf);
  std::snprintf(buf, sizeof buf,
                "incremental and full rule record the same on >= 98 %% of long series: %d of %d "
                "differ",
                differ_total, long_total);
  if (long_total > 0) target(differ_total * 50 <= long_total, buf);
  std::snprintf(buf, sizeof buf, "one finished run at 24000 runs < 10 ms (the rule): %.2f ms",
                tail_ms);
  target(tail_ms < 10, buf);
  return enforce && failed ? 1 : 0;
}

// bench_watch: the regression watch as it runs in production — after every finished run, over the
// series so far — on simulated series with known change points: false alarms, detection, delay,
// location of the first bad run, duplicates; and the cost of one analysis by series length.
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
  double step;    // relative change at kChangeAt (negative = slower); 0 = stable
  bool outliers;  // 3 % of runs on a slow node (-15 %), as real clusters have
};

std::vector<double> Simulate(SimRng& rng, const Scenario& s) {
  std::vector<double> x;
  for (int i = 0; i < kLength; ++i) {
    double v = 1000 * std::exp(s.noise * rng.Normal());
    if (s.step != 0 && i >= kChangeAt) v *= 1 + s.step;
    if (s.outliers && rng.Uniform() < 0.03) v *= 0.85;
    x.push_back(v);
  }
  return x;
}

struct Record {
  int at = 0;     // the series length when it was recorded
  int index = 0;  // its first bad run
};

// Replays the series run by run, as FinishRun does; returns what was recorded, in order.
std::vector<Record> Replay(const std::vector<double>& x) {
  MetricSpec m;
  m.name = "samples_per_s";
  m.better = Better::kHigher;
  m.min_effect = kMinEffect;
  std::vector<Record> out;
  std::vector<size_t> recorded;
  for (size_t n = 2; n <= x.size(); ++n) {
    std::vector<double> prefix(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
    for (const ChangePoint& c : NewConfirmedRegressions(prefix, m, recorded)) {
      recorded.push_back(c.index);
      out.push_back({static_cast<int>(n), static_cast<int>(c.index)});
    }
  }
  return out;
}

}  // namespace
}  // namespace tunectl

int main(int argc, char** argv) {
  using namespace tunectl;  // NOLINT
  int n = 500;
  uint64_t seed = 42;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--series") && i + 1 < argc)
      n = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: bench_watch [--series N (default 500)] [--seed S]\n");
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
  for (size_t si = 0; si < scenarios.size(); ++si) {
    const Scenario& s = scenarios[si];
    SimRng rng(seed + 1000 * si);
    int any = 0, found = 0, exact = 0, within1 = 0, dup = 0;
    std::vector<int> delays;
    for (int k = 0; k < n; ++k) {
      // A record within 2 runs of a real (slower) step is that step; any other is a false alarm.
      int matching = 0, other = 0;
      for (const Record& r : Replay(Simulate(rng, s))) {
        const int err = std::abs(r.index - kChangeAt);
        if (s.step >= 0 || err > 2) {
          ++other;
          continue;
        }
        if (matching++ > 0) continue;
        exact += err == 0;
        within1 += err <= 1;
        delays.push_back(r.at - kChangeAt);
      }
      any += other > 0;
      found += matching > 0;
      dup += matching > 1;
    }
    const double fa = static_cast<double>(any) / n;
    std::string delay = "-";
    if (!delays.empty()) {
      std::sort(delays.begin(), delays.end());
      delay = std::to_string(delays[delays.size() / 2]);
    }
    worst_false = std::max(worst_false, fa);
    if (s.step >= 0) {
      std::printf("| %s | %.3f | - | - | - | - | - |\n", s.label.c_str(), fa);
    } else {
      const double det = static_cast<double>(found) / n;
      const double ex = found ? static_cast<double>(exact) / found : 0;
      if (-s.step >= 2 * kMinEffect) {
        worst_detect = std::min(worst_detect, det);
        worst_exact = std::min(worst_exact, ex);
      }
      duplicates += dup;
      std::printf("| %s | %.3f | %.3f | %.3f | %.3f | %s | %d |\n", s.label.c_str(), fa, det, ex,
                  found ? static_cast<double>(within1) / found : 0, delay.c_str(), dup);
    }
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
  return enforce && failed ? 1 : 0;
}

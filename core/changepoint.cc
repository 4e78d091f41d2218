#include "core/changepoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "core/metrics.h"

namespace tunectl {
namespace {

double MadOf(const std::vector<double>& v, double center) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - center));
  return Median(std::move(dev));
}

std::string Pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", f * 100);
  return buf;
}

}  // namespace

std::vector<size_t> Pelt(const std::vector<double>& x, const PeltOptions& o) {
  const size_t n = x.size();
  const size_t ms = static_cast<size_t>(std::max(1, o.min_segment));
  if (n < 2 * ms) return {};
  // Robust noise scale from first differences (immune to level shifts).
  std::vector<double> diffs;
  for (size_t i = 1; i < n; ++i) diffs.push_back(x[i] - x[i - 1]);
  double sigma = 1.4826 * MadOf(diffs, Median(diffs)) / std::sqrt(2.0);
  if (sigma <= 0) {
    double mean = 0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(n);
    double ss = 0;
    for (double v : x) ss += (v - mean) * (v - mean);
    sigma = std::sqrt(ss / static_cast<double>(n));
    if (sigma <= 0) return {};
  }
  const double var = sigma * sigma;
  std::vector<double> s1(n + 1, 0), s2(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    s1[i + 1] = s1[i] + x[i];
    s2[i + 1] = s2[i] + x[i] * x[i];
  }
  auto cost = [&](size_t a, size_t b) {  // segment [a, b)
    const double len = static_cast<double>(b - a), sum = s1[b] - s1[a];
    return (s2[b] - s2[a] - sum * sum / len) / var;
  };
  const double beta = o.penalty_per_log * std::log(static_cast<double>(n));
  std::vector<double> f(n + 1, std::numeric_limits<double>::infinity());
  std::vector<size_t> last(n + 1, 0);
  f[0] = -beta;
  std::vector<size_t> candidates = {0};
  for (size_t t = ms; t <= n; ++t) {
    double best = std::numeric_limits<double>::infinity();
    size_t arg = 0;
    for (size_t tau : candidates) {
      if (t - tau < ms) continue;
      const double v = f[tau] + cost(tau, t) + beta;
      if (v < best) best = v, arg = tau;
    }
    f[t] = best;
    last[t] = arg;
    std::vector<size_t> keep;
    for (size_t tau : candidates)
      if (t - tau < ms || f[tau] + cost(tau, t) <= f[t]) keep.push_back(tau);
    if (t + 1 >= ms) keep.push_back(t + 1 - ms);
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    candidates.swap(keep);
  }
  std::vector<size_t> cps;
  for (size_t t = n; t > 0 && last[t] > 0; t = last[t]) cps.push_back(last[t]);
  std::reverse(cps.begin(), cps.end());
  return cps;
}

SteadyState AnalyzeRun(const std::vector<StepValue>& samples, int declared_warmup_steps,
                       Better better) {
  SteadyState s;
  s.samples = static_cast<int>(samples.size());
  std::vector<double> v;
  for (const auto& sv : samples) {
    if (sv.step <= declared_warmup_steps) {
      ++s.declared_warmup;
      continue;
    }
    if (std::isfinite(sv.value)) v.push_back(sv.value);
  }
  if (v.empty()) {
    s.no_steady_state = true;
    s.warnings.push_back("no samples after the declared warm-up");
    return s;
  }
  // Windowed medians: about 25 windows per run, at least 3 samples each (a median of 2 is a
  // mean, and lets one stalled step move a window).
  const size_t w = std::max<size_t>(3, (v.size() + 12) / 25);
  std::vector<double> med;
  for (size_t i = 0; i < v.size(); i += w)
    med.push_back(Median(
        std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(i),
                            v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), i + w)))));
  // Too few points to tell a change from noise: keep everything after the declared warm-up.
  std::vector<size_t> cps = med.size() >= 8 ? Pelt(med) : std::vector<size_t>{};
  size_t start = cps.empty() ? 0 : cps.back() * w;
  if (!cps.empty()) {
    // Segment means in the metric's own direction: is the last one worse than a sustained
    // segment before it? A short earlier segment is a transient (warm-up, a prefetch buffer
    // draining) whichever way it went; a slowdown is a sustained level that then gets worse —
    // possibly through a short transition segment, so every earlier segment is compared.
    auto mean = [&](size_t a, size_t b) {
      double m = 0;
      for (size_t i = a; i < b; ++i) m += med[i];
      return m / static_cast<double>(b - a);
    };
    const double lastm = mean(cps.back(), med.size());
    double worst_drop = 0;
    for (size_t k = 0; k < cps.size(); ++k) {
      const size_t a = k == 0 ? 0 : cps[k - 1], b = cps[k];
      if (5 * (b - a) < med.size()) continue;  // not sustained
      const double prev = mean(a, b);
      const bool worse = better == Better::kHigher ? lastm < prev : lastm > prev;
      if (worse && prev != 0) worst_drop = std::max(worst_drop, std::fabs(lastm / prev - 1));
    }
    if (worst_drop > 0.02) {
      s.slowdown = true;
      s.warnings.push_back("slowdown: the last segment is " + Pct(worst_drop) +
                           " worse than an earlier sustained one (throttling, memory creep?)");
    }
  }
  if (2 * (v.size() - start) < v.size()) {
    s.no_steady_state = true;
    s.warnings.push_back("no steady state: the last stable segment covers " +
                         std::to_string(v.size() - start) + " of " + std::to_string(v.size()) +
                         " samples (under half)");
    start = 0;
  }
  s.detected_warmup = static_cast<int>(start);
  std::vector<double> window(v.begin() + static_cast<std::ptrdiff_t>(start), v.end());
  s.steady = static_cast<int>(window.size());
  s.stats = Describe(window);
  s.mad = MadOf(window, s.stats.median);
  if (window.size() >= 3) {
    double num = 0, den = 0;
    for (size_t i = 0; i < window.size(); ++i) {
      den += (window[i] - s.stats.mean) * (window[i] - s.stats.mean);
      if (i) num += (window[i] - s.stats.mean) * (window[i - 1] - s.stats.mean);
    }
    s.lag1 = den > 0 ? num / den : 0;
  }
  for (double x : window)
    if (s.mad > 0 && std::fabs(x - s.stats.median) > 5 * 1.4826 * s.mad) ++s.outliers;
  if (s.stats.cv >= 0.10) s.warnings.push_back("noisy: CV " + Pct(s.stats.cv) + " within the run");
  if (s.outliers > 0)
    s.warnings.push_back(std::to_string(s.outliers) + " outlier sample(s) beyond 5 MADs");
  return s;
}

std::map<std::string, int> DropSkippedSteps(std::map<std::string, std::vector<StepValue>>* series) {
  std::map<std::string, int> out;
  std::set<int64_t> skipped;
  for (auto it = series->begin(); it != series->end();) {
    if (!IsSkipRule(it->first)) {
      ++it;
      continue;
    }
    std::set<int64_t> steps;
    for (const auto& sv : it->second) steps.insert(sv.step);
    out[it->first] = static_cast<int>(steps.size());
    skipped.insert(steps.begin(), steps.end());
    it = series->erase(it);
  }
  if (skipped.empty()) return out;
  for (auto& [metric, values] : *series) {
    const size_t before = values.size();
    std::erase_if(values, [&](const StepValue& sv) { return skipped.count(sv.step) > 0; });
    if (values.size() != before) out[metric] = static_cast<int>(before - values.size());
  }
  return out;
}

}  // namespace tunectl

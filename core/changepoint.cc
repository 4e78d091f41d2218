#include "core/changepoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
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

// AnalyzeRun's calibration (bench/steady.cc, docs/benchmarks.md).
constexpr size_t kMinLastWindows = 3;  // windows the last segment needs to be a level
constexpr double kSlowdown = 0.02;     // last segment this much worse than a sustained one
constexpr double kMaxPhi = 0.9;        // the steps' AR(1) coefficient is clamped to [0, this]

// PELT's penalty for window medians, in units of their long-run variance: 6 · ln(windows)
// ≈ 19 for 25 windows. 5 still met the ≤ 2 % false-flag target (worst 1.1 %), 3 did not (5.6 %);
// 6 keeps a margin for noise unlike the simulated one (docs/benchmarks.md, bench_steady).
constexpr double kPenaltyPerLog = 6;

// Trimmed mean square of lag-k second differences x[t] − 2x[t−k] + x[t−2k]: zero for a level and
// for a linear ramp (a warm-up); the few that a level shift or a stall touches lie beyond 3
// MAD-scales and are left out (clipping them instead still read a 25 % throttle as φ = 0.9). The
// truncation factor is the same at both lags and cancels in their ratio.
double SecondDiffMeanSquare(const std::vector<double>& x, size_t k) {
  if (x.size() <= 2 * k + 2) return 0;
  std::vector<double> d(x.size() - 2 * k);
  for (size_t i = 2 * k; i < x.size(); ++i) d[i - 2 * k] = x[i] - 2 * x[i - k] + x[i - 2 * k];
  const double c = 3 * 1.4826 * MadOf(d, Median(d));
  double acc = 0;
  size_t kept = 0;
  for (double v : d)
    if (std::fabs(v) <= c) acc += v * v, ++kept;
  return kept ? acc / static_cast<double>(kept) : 0;
}

// For AR(1) steps, E(lag-4 second difference)² / E(lag-1 second difference)²
// = (6 − 8φ⁴ + 2φ⁸)/(6 − 8φ + 2φ²): 1 at φ = 0, 2.60 at 0.6, 3.84 at 0.9. Lag 4 rather than 2:
// the ratio is steeper between φ = 0.6 and 0.9, so a 125-step run reads a true 0.6 with sd 0.16
// instead of 0.25.
double SecondDiffRatio(double phi) {
  const double p4 = std::pow(phi, 4);
  return (6 - 8 * p4 + 2 * p4 * p4) / (6 - 8 * phi + 2 * phi * phi);
}

// Lag-1 autocorrelation of the steps, robust to warm-up ramps, level shifts and stalls: the ratio
// above inverted by bisection, clamped to [0, kMaxPhi]. (First differences are not enough: a
// warm-up ramp and a level shift inflate their lag-2/lag-1 ratio, read φ = 0.9 for a true 0.6,
// and a variance that large hid a 25 % throttle from PELT.)
double StepPhi(const std::vector<double>& x) {
  const double s1 = SecondDiffMeanSquare(x, 1), s4 = SecondDiffMeanSquare(x, 4);
  if (s1 <= 0) return 0;
  const double r = s4 / s1;
  if (r <= 1) return 0;
  if (r >= SecondDiffRatio(kMaxPhi)) return kMaxPhi;
  double lo = 0, hi = kMaxPhi;
  for (int i = 0; i < 50; ++i) {
    const double mid = (lo + hi) / 2;
    (SecondDiffRatio(mid) < r ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// For steps following AR(1) with coefficient φ, the long-run variance of the means of windows of
// w steps over half the mean square of their first differences: what PELT's first-difference
// noise estimate must be multiplied by (1 for φ = 0; 15.6 for φ = 0.9, w = 5; 1.5 for w = 40).
double LongRunFactor(double phi, double w) {
  if (phi <= 0) return 1;
  const double pw = std::pow(phi, w), q = (1 - phi) * (1 - phi);
  const double lr = w * (1 + phi) / (1 - phi);      // w² · LR variance of a window mean / γ0
  const double v0 = lr - 2 * phi * (1 - pw) / q;    // w² · variance of a window mean / γ0
  const double v1 = phi * (1 - pw) * (1 - pw) / q;  // w² · lag-1 covariance / γ0
  return v0 - v1 > 0 ? lr / (v0 - v1) : 1;
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
  // Floating-point noise is not noise: a series that varies by less than 1e-9 of its level has no
  // change point (deterministic inputs would otherwise split on rounding).
  double level = 0;
  for (double v : x) level = std::max(level, std::fabs(v));
  sigma = std::max(sigma, 1e-9 * level);
  const double var = sigma * sigma * std::max(o.variance_factor, 1e-9);
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

double Quantum(const std::vector<double>& values) {
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values)
    if (std::isfinite(x) && x != 0) v.push_back(std::fabs(x));
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  // Each value's own quantum 10^(exponent − decimals of its 12-significant-digit mantissa); the
  // set's is the finest, but never finer than 12 significant digits of the largest value.
  auto exponent = [](double x, int* decimals) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.11e", x);  // d.ddddddddddde±XX
    const char* e = std::strchr(buf, 'e');
    int d = 11;
    while (d > 0 && buf[1 + d] == '0') --d;
    if (decimals) *decimals = d;
    return e ? std::atoi(e + 1) : 0;
  };
  const int floor_exp = exponent(v.back(), nullptr) - 11;
  int q_exp = std::numeric_limits<int>::max();
  for (double x : v) {
    int d = 0;
    q_exp = std::min(q_exp, exponent(x, &d) - d);
    if (q_exp <= floor_exp) break;
  }
  q_exp = std::max(q_exp, floor_exp);
  double q = std::pow(10.0, q_exp);
  if (v.size() >= 3 && q_exp > floor_exp) {
    // A common factor of the integer multiples (0.02, 0.04, 0.06 → 0.02), seen in 3+ values.
    long long g = 0;
    for (double x : v) g = std::gcd(g, std::llround(x / q));
    if (g > 1) q *= static_cast<double>(g);
  }
  return q;
}

std::optional<double> DeliveredValue(const std::vector<double>& values, Better better,
                                     std::string* aggregate) {
  if (values.empty()) return std::nullopt;
  const bool rate = better == Better::kHigher &&
                    std::all_of(values.begin(), values.end(), [](double x) { return x > 0; });
  double acc = 0;
  for (double x : values) acc += rate ? 1 / x : x;
  if (aggregate) *aggregate = rate ? kHarmonicMean : kArithmeticMean;
  const double n = static_cast<double>(values.size());
  return rate ? n / acc : acc / n;
}

namespace {

// The q-quantile (0..1) of `v`, linear between order statistics (type 7).
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// The windows a leading ramp takes (a warm-up longer than declared): while a segment is more
// than 2 % worse than the next and all of them together cover at most a third of the windows.
size_t LeadingRamp(const std::vector<double>& med, const std::vector<size_t>& cps, Better better) {
  const size_t nw = med.size();
  auto mean = [&](size_t a, size_t b) {
    double m = 0;
    for (size_t i = a; i < b; ++i) m += med[i];
    return m / static_cast<double>(b - a);
  };
  size_t start = 0;
  for (size_t k = 0; k < cps.size(); ++k) {
    const size_t a = k == 0 ? 0 : cps[k - 1], b = cps[k], c = k + 1 < cps.size() ? cps[k + 1] : nw;
    if (3 * b > nw) break;
    const double here = mean(a, b), next = mean(b, c);
    if (next == 0) break;
    const double rel = here / next - 1;
    const bool worse = better == Better::kHigher ? rel < -kSlowdown : rel > kSlowdown;
    if (!worse) break;
    start = b;
  }
  return start;
}

}  // namespace

SteadyState AnalyzeRun(const std::vector<StepValue>& samples, int declared_warmup_steps,
                       Better better, std::vector<SampleRole>* roles) {
  SteadyState s;
  s.samples = static_cast<int>(samples.size());
  std::vector<double> v;
  std::vector<int64_t> steps;
  std::vector<size_t> at;  // v[j] is samples[at[j]]
  v.reserve(samples.size());
  steps.reserve(samples.size());
  at.reserve(samples.size());
  if (roles) roles->assign(samples.size(), SampleRole::kDeclaredWarmup);
  for (size_t i = 0; i < samples.size(); ++i) {
    const StepValue& sv = samples[i];
    if (sv.step <= declared_warmup_steps) {
      ++s.declared_warmup;
      continue;
    }
    if (!std::isfinite(sv.value)) {
      ++s.nonfinite;
      if (roles) (*roles)[i] = SampleRole::kNonFinite;
      continue;
    }
    v.push_back(sv.value);
    steps.push_back(sv.step);
    at.push_back(i);
  }
  auto nonfinite_warning = [&] {
    if (s.nonfinite > 0)
      s.warnings.push_back(std::to_string(s.nonfinite) + " NaN/Inf sample(s) left out");
  };
  if (v.empty()) {
    s.no_steady_state = true;
    s.warnings.push_back(s.nonfinite > 0 ? "no finite samples after the declared warm-up"
                                         : "no samples after the declared warm-up");
    nonfinite_warning();
    return s;
  }
  // Windowed medians: about 25 windows per run, at least 3 samples each (a median of 2 is a
  // mean, and lets one stalled step move a window), all of one size ±1 — a short last window
  // would let one slow final step (a checkpoint, an evaluation) pass for a level shift.
  const size_t n = v.size();
  const size_t target = std::max<size_t>(3, (n + 12) / 25);
  const size_t nw = std::max<size_t>(1, n / target);
  std::vector<size_t> edge(nw + 1);  // window j holds v[edge[j], edge[j + 1])
  for (size_t j = 0; j <= nw; ++j) edge[j] = j * n / nw;
  std::vector<double> med(nw), buf;
  for (size_t j = 0; j < nw; ++j) {
    buf.assign(v.begin() + static_cast<std::ptrdiff_t>(edge[j]),
               v.begin() + static_cast<std::ptrdiff_t>(edge[j + 1]));
    med[j] = Median(std::move(buf));
  }
  // A burst or a stall spanning one or two windows (the prefetch queue refilling during a
  // checkpoint pause, an evaluation) is an outlier, not a level shift: a window far from the
  // median of itself and its two neighbours on each side takes that median (a Hampel filter).
  // A sustained shift of three windows or more keeps every window, its edges included.
  if (nw >= 8) {
    std::vector<double> local(nw), dev(nw);
    for (size_t j = 0; j < nw; ++j) {
      const size_t a = j >= 2 ? j - 2 : 0, b = std::min(nw, j + 3);
      local[j] = Median(std::vector<double>(med.begin() + static_cast<std::ptrdiff_t>(a),
                                            med.begin() + static_cast<std::ptrdiff_t>(b)));
      dev[j] = std::fabs(med[j] - local[j]);
    }
    const double scale = 1.4826 * Median(dev);
    for (size_t j = 2; j + 2 < nw; ++j)  // edges: a short warm-up or end is handled below
      if (dev[j] > std::max(4 * scale, 0.02 * std::fabs(local[j]))) med[j] = local[j];
  }
  // Too few points to tell a change from noise: keep everything after the declared warm-up.
  std::vector<size_t> cps;
  // Values printed at a few levels (0.01, 0.02, 0.03 ms) have no noise to calibrate a change
  // against: no change point is looked for, and the verdict judges the resolution instead.
  const size_t levels_seen = std::set<double>(v.begin(), v.end()).size();
  if (levels_seen <= 3 && n >= 8)
    s.warnings.push_back("quantised: " + std::to_string(levels_seen) +
                         " distinct value(s); no change-point analysis");
  if (nw >= 8 && levels_seen > 3) {
    PeltOptions po;
    po.penalty_per_log = kPenaltyPerLog;
    po.variance_factor =
        LongRunFactor(StepPhi(v), static_cast<double>(n) / static_cast<double>(nw));
    cps = Pelt(med, po);
  }
  {
    // The measured window: the run's value is taken over it, stalls and slowdowns included.
    const size_t from = edge[LeadingRamp(med, cps, better)];
    std::vector<double> window(v.begin() + static_cast<std::ptrdiff_t>(from), v.end());
    s.measured_from_step = steps[from];
    s.measured = static_cast<int>(window.size());
    s.delivered = DeliveredValue(window, better, &s.aggregate);
    s.pace = Quantile(window, better == Better::kHigher ? 0.75 : 0.25);
  }
  // The last segment must be sustained: a shorter end is an end transient, not a level.
  while (!cps.empty() && nw - cps.back() < kMinLastWindows) cps.pop_back();
  size_t start = cps.empty() ? 0 : edge[cps.back()];
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
    const double lastm = mean(cps.back(), nw);
    double worst_drop = 0;
    for (size_t k = 0; k < cps.size(); ++k) {
      const size_t a = k == 0 ? 0 : cps[k - 1], b = cps[k];
      if (5 * (b - a) < nw) continue;  // not sustained
      const double prev = mean(a, b);
      const bool worse = better == Better::kHigher ? lastm < prev : lastm > prev;
      if (worse && prev != 0) worst_drop = std::max(worst_drop, std::fabs(lastm / prev - 1));
    }
    if (worst_drop > kSlowdown) {
      s.slowdown = true;
      s.warnings.push_back("slowdown: the last segment is " + Pct(worst_drop) +
                           " worse than an earlier sustained one (throttling, memory creep?)");
    }
  }
  if (2 * (n - start) < n) {
    s.no_steady_state = true;
    s.warnings.push_back("no steady state: the last stable segment covers " +
                         std::to_string(n - start) + " of " + std::to_string(n) +
                         " samples (under half)");
    start = 0;
  }
  s.detected_warmup = static_cast<int>(start);
  s.steady_from_step = steps[start];
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
  for (size_t j = 0; j < n; ++j) {
    SampleRole role = j < start ? SampleRole::kDetectedWarmup : SampleRole::kSteady;
    if (j >= start && s.mad > 0 && std::fabs(v[j] - s.stats.median) > 5 * 1.4826 * s.mad) {
      ++s.outliers;
      role = SampleRole::kOutlier;
    }
    if (roles) (*roles)[at[j]] = role;
  }
  {
    std::vector<double> distinct = window;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    s.levels = static_cast<int>(distinct.size());
    s.resolution = Quantum(distinct);
  }
  if (s.stats.cv >= 0.10) s.warnings.push_back("noisy: CV " + Pct(s.stats.cv) + " within the run");
  if (s.outliers > 0)
    s.warnings.push_back(std::to_string(s.outliers) + " outlier sample(s) beyond 5 MADs");
  nonfinite_warning();
  return s;
}

std::map<std::string, int> DropSkippedSteps(
    std::map<std::string, std::vector<StepValue>>* series,
    std::map<std::string, std::vector<StepValue>>* left_out) {
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
    if (left_out) (*left_out)[it->first] = std::move(it->second);
    it = series->erase(it);
  }
  if (skipped.empty()) return out;
  for (auto& [metric, values] : *series) {
    const auto marked = [&](const StepValue& sv) { return skipped.count(sv.step) > 0; };
    const auto kept = std::stable_partition(values.begin(), values.end(),
                                            [&](const StepValue& sv) { return !marked(sv); });
    if (kept == values.end()) continue;
    out[metric] = static_cast<int>(values.end() - kept);
    if (left_out) (*left_out)[metric].assign(kept, values.end());
    values.erase(kept, values.end());
  }
  return out;
}

}  // namespace tunectl

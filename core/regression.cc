#include "core/regression.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/statistics.h"
#include "core/stats.h"

namespace tunectl {
namespace {

// Two-sample Student t-test (pooled variance) of x[a, t) against x[t, b): two-sided p.
double PooledP(const std::vector<double>& x, size_t a, size_t t, size_t b) {
  const double m = static_cast<double>(t - a), n = static_cast<double>(b - t);
  double ml = 0, mr = 0;
  for (size_t i = a; i < t; ++i) ml += x[i];
  for (size_t i = t; i < b; ++i) mr += x[i];
  ml /= m;
  mr /= n;
  double ss = 0;
  for (size_t i = a; i < t; ++i) ss += (x[i] - ml) * (x[i] - ml);
  for (size_t i = t; i < b; ++i) ss += (x[i] - mr) * (x[i] - mr);
  const double df = m + n - 2;
  if (df < 1) return 1;
  const double se = std::sqrt(ss / df * (1 / m + 1 / n));
  if (se == 0) return ml == mr ? 1 : 0;
  const double tt = (mr - ml) / se;
  return RegularizedBeta(df / (df + tt * tt), df / 2, 0.5);
}

double Mean(const std::vector<double>& v, size_t a, size_t b) {
  double s = 0;
  for (size_t i = a; i < b; ++i) s += v[i];
  return s / static_cast<double>(b - a);
}

// E-divisive statistic for splitting [a, b) at t (alpha = 1 energy distance, scaled).
double Energy(const std::vector<double>& x, size_t a, size_t t, size_t b) {
  const double m = static_cast<double>(t - a), n = static_cast<double>(b - t);
  double between = 0, left = 0, right = 0;
  for (size_t i = a; i < t; ++i)
    for (size_t j = t; j < b; ++j) between += std::fabs(x[i] - x[j]);
  for (size_t i = a; i < t; ++i)
    for (size_t k = i + 1; k < t; ++k) left += std::fabs(x[i] - x[k]);
  for (size_t j = t; j < b; ++j)
    for (size_t k = j + 1; k < b; ++k) right += std::fabs(x[j] - x[k]);
  const double e = 2 * between / (m * n) - (m > 1 ? left / (m * (m - 1) / 2) : 0) -
                   (n > 1 ? right / (n * (n - 1) / 2) : 0);
  return m * n / (m + n) * e;
}

// Within two points of `t`, the split of [a, b) with the least squared error around the two
// means. E-divisive tells that the distribution changed; for a shift in level the least-squares
// split is the sharper estimate of where (on short segments they can differ by a point).
size_t RefineLevelShift(const std::vector<double>& x, size_t a, size_t t, size_t b,
                        size_t min_segment) {
  const size_t lo = std::max(a + min_segment, t >= 2 ? t - 2 : 0);
  const size_t hi = std::min(b - min_segment, t + 2);
  size_t best = t;
  double best_sse = -1;
  for (size_t c = lo; c <= hi; ++c) {
    const double ml = Mean(x, a, c), mr = Mean(x, c, b);
    double sse = 0;
    for (size_t i = a; i < c; ++i) sse += (x[i] - ml) * (x[i] - ml);
    for (size_t i = c; i < b; ++i) sse += (x[i] - mr) * (x[i] - mr);
    if (best_sse < 0 || sse < best_sse) best_sse = sse, best = c;
  }
  return best;
}

void Split(const std::vector<double>& x, size_t a, size_t b, const ChangePointOptions& o,
           std::vector<ChangePoint>* out) {
  if (b - a < 2 * o.min_segment) return;
  size_t best = 0;
  double best_q = -1;
  for (size_t t = a + o.min_segment; t + o.min_segment <= b; ++t) {
    const double q = Energy(x, a, t, b);
    if (q > best_q) best_q = q, best = t;
  }
  if (best == 0) return;
  best = RefineLevelShift(x, a, best, b, o.min_segment);
  const double p = PooledP(x, a, best, b);
  const double before = Mean(x, a, best), after = Mean(x, best, b);
  const double magnitude = before != 0 ? std::fabs(after / before - 1) : 0;
  if (p >= o.max_p || magnitude < o.min_magnitude) return;
  out->push_back({best, before, after, p});
  Split(x, a, best, o, out);
  Split(x, best, b, o, out);
}

}  // namespace

std::vector<ChangePoint> EDivisive(const std::vector<double>& x, const ChangePointOptions& o) {
  std::vector<ChangePoint> found;
  const size_t n = x.size(), w = std::max<size_t>(o.window, 2 * o.min_segment);
  // Overlapping windows (step w/2) keep the cost bounded on long series; a change found in two
  // windows is kept once.
  for (size_t start = 0;; start += w / 2) {
    const size_t end = std::min(n, start + w);
    std::vector<ChangePoint> local;
    Split(x, start, end, o, &local);
    for (const auto& c : local) {
      bool dup = false;
      for (const auto& f : found)
        dup |= (f.index > c.index ? f.index - c.index : c.index - f.index) < o.min_segment;
      if (!dup) found.push_back(c);
    }
    if (end == n) break;
  }
  std::sort(found.begin(), found.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  // Re-validate every change point against its neighbouring segments of the final segmentation;
  // drop the weakest failing one and repeat until all hold.
  for (;;) {
    int weakest = -1;
    double weakest_p = -1;
    for (size_t i = 0; i < found.size(); ++i) {
      const size_t a = i == 0 ? 0 : found[i - 1].index,
                   b = i + 1 < found.size() ? found[i + 1].index : n;
      found[i].before = Mean(x, a, found[i].index);
      found[i].after = Mean(x, found[i].index, b);
      found[i].p = PooledP(x, a, found[i].index, b);
      const double magnitude =
          found[i].before != 0 ? std::fabs(found[i].after / found[i].before - 1) : 0;
      const bool holds = found[i].p < o.max_p && magnitude >= o.min_magnitude;
      if (!holds && found[i].p > weakest_p) weakest = static_cast<int>(i), weakest_p = found[i].p;
    }
    if (weakest < 0) break;
    found.erase(found.begin() + weakest);
  }
  return found;
}

NewRunCheck CheckNewRun(const std::vector<double>& history, double value, Better better,
                        double min_effect, double alpha) {
  NewRunCheck c;
  const size_t n = history.size();
  c.history = static_cast<int>(n);
  if (n < 3) return c;
  // On the log scale when every value is positive (a rate or a time): the level is the geometric
  // mean and the bound a ratio of it, so it can never cross zero however noisy the history.
  const bool logs =
      value > 0 && std::all_of(history.begin(), history.end(), [](double v) { return v > 0; });
  std::vector<double> x = history;
  if (logs)
    for (double& v : x) v = std::log(v);
  const double mean = Mean(x, 0, n);
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  // One-sided prediction interval for one new observation.
  const double q =
      StudentTQuantile(1 - alpha, static_cast<double>(n - 1)) * sd * std::sqrt(1 + 1.0 / n);
  const double edge = better == Better::kHigher ? mean - q : mean + q;
  c.level = logs ? std::exp(mean) : mean;
  c.bound = logs ? std::exp(edge) : edge;
  const bool past = better == Better::kHigher ? value < c.bound : value > c.bound;
  const double worse = c.level != 0 ? std::fabs(value / c.level - 1) : 0;
  c.regression = past && worse >= min_effect;
  if (min_effect > 0 && c.level != 0) {  // report the bound that actually applies
    const double by_effect =
        better == Better::kHigher ? c.level * (1 - min_effect) : c.level * (1 + min_effect);
    c.bound =
        better == Better::kHigher ? std::min(c.bound, by_effect) : std::max(c.bound, by_effect);
  }
  return c;
}

std::string DescribeChange(const std::string& metric, const ChangePoint& c,
                           const std::string& first_label) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s went from %.4g to %.4g (%+.1f%%) starting with ",
                metric.c_str(), c.before, c.after, (c.after / c.before - 1) * 100);
  return buf + first_label;
}

RegressionReport AnalyzeRegression(const std::vector<double>& values,
                                   const std::vector<std::string>& labels,
                                   const MetricSpec& metric) {
  RegressionReport r;
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  auto label = [&](size_t i) {
    return i < labels.size() ? labels[i] : "point " + std::to_string(i);
  };
  ChangePointOptions o;
  o.min_magnitude = metric.min_effect;
  for (const auto& c : EDivisive(values, o)) {
    const bool worse = metric.better == Better::kHigher ? c.after < c.before : c.after > c.before;
    r.changes.push_back({c, worse});
    if (worse) r.alerts.push_back("regression: " + DescribeChange(metric.name, c, label(c.index)));
  }
  if (values.size() >= 2) {
    const size_t from = r.changes.empty() ? 0 : r.changes.back().point.index;
    std::vector<double> history(values.begin() + static_cast<std::ptrdiff_t>(from),
                                values.end() - 1);
    r.latest = CheckNewRun(history, values.back(), metric.better, metric.min_effect);
    if (r.latest.regression)
      r.alerts.push_back("the latest " + label(values.size() - 1) + " (" + num(values.back()) +
                         ") is past the regression bound " + num(r.latest.bound) +
                         " of the runs since the last change");
  }
  return r;
}

std::vector<ChangePoint> NewConfirmedRegressions(const std::vector<double>& values,
                                                 const MetricSpec& metric,
                                                 const std::vector<size_t>& recorded_first_bad,
                                                 const ConfirmOptions& o) {
  std::vector<ChangePoint> out;
  const size_t n = values.size();
  if (n < o.min_after + 2) return out;
  const RegressionReport full = AnalyzeRegression(values, {}, metric);
  std::vector<RegressionReport> earlier;
  for (size_t k = 1; k < o.stable_for && k < n; ++k)
    earlier.push_back(AnalyzeRegression(
        std::vector<double>(values.begin(), values.end() - static_cast<std::ptrdiff_t>(k)), {},
        metric));
  auto median = [&](size_t a, size_t b) {
    std::vector<double> v(values.begin() + static_cast<std::ptrdiff_t>(a),
                          values.begin() + static_cast<std::ptrdiff_t>(b));
    return Median(v);
  };
  for (size_t i = 0; i < full.changes.size(); ++i) {
    const auto& c = full.changes[i];
    if (!c.regression || c.point.index + o.min_after > n) continue;
    const size_t a = i == 0 ? 0 : full.changes[i - 1].point.index;
    const size_t b = i + 1 < full.changes.size() ? full.changes[i + 1].point.index : n;
    const double mb = median(a, c.point.index), ma = median(c.point.index, b);
    const bool worse_by_medians = mb != 0 &&
                                  (metric.better == Better::kHigher ? ma < mb : ma > mb) &&
                                  std::fabs(ma / mb - 1) >= metric.min_effect;
    if (!worse_by_medians) continue;
    // E-divisive chose this split among every position of its segment: count them in its p.
    const double positions = static_cast<double>(b - a);
    if (c.point.p * positions >= 0.001) continue;
    bool stable = true;
    for (const auto& e : earlier) {
      bool seen = false;
      for (const auto& ec : e.changes)
        seen = seen || (ec.regression && ec.point.index == c.point.index);
      stable = stable && seen;
    }
    if (!stable) continue;
    bool known = false;
    for (size_t r : recorded_first_bad) {
      const size_t d = r > c.point.index ? r - c.point.index : c.point.index - r;
      known = known || d <= o.tolerance;
    }
    if (!known) out.push_back(c.point);
  }
  return out;
}

std::vector<ChangePoint> NewConfirmedRegressionsInTail(
    const std::vector<double>& newest, bool whole, const MetricSpec& metric,
    const std::vector<size_t>& recorded_first_bad, const ConfirmOptions& o) {
  const size_t cut = newest.size() > o.tail ? newest.size() - o.tail : 0;
  if (cut == 0 && whole) return NewConfirmedRegressions(newest, metric, recorded_first_bad, o);
  const std::vector<double> tail(newest.begin() + static_cast<std::ptrdiff_t>(cut), newest.end());
  std::vector<size_t> recorded;
  for (size_t r : recorded_first_bad)
    if (r >= cut) recorded.push_back(r - cut);
  std::vector<ChangePoint> out;
  for (ChangePoint c : NewConfirmedRegressions(tail, metric, recorded, o)) {
    if (c.index < o.margin) continue;
    c.index += cut;
    bool known = false;  // a recorded one just before the tail (with a margin under tolerance)
    for (size_t r : recorded_first_bad) known = known || (r < cut && c.index - r <= o.tolerance);
    if (!known) out.push_back(c);
  }
  return out;
}

std::vector<StabilityFinding> CheckStabilityRun(const WorkloadSpec& spec,
                                                const std::vector<std::string>& metric_names,
                                                const std::vector<SteadyState>& analyses) {
  std::vector<StabilityFinding> out;
  const MetricSpec* primary = spec.PrimaryMetric();
  auto details = [](const SteadyState& s) {
    std::string d;
    for (const auto& w : s.warnings) d += (d.empty() ? "" : "; ") + w;
    return d.empty() ? std::string() : " (" + d + ")";
  };
  for (size_t i = 0; i < metric_names.size() && i < analyses.size(); ++i) {
    const auto& s = analyses[i];
    const bool is_primary = primary && primary->name == metric_names[i];
    if (is_primary && s.samples == 0) {
      out.push_back({metric_names[i], metric_names[i] + " was never reported during the run"});
    } else if (s.slowdown) {
      out.push_back(
          {metric_names[i], metric_names[i] + " degraded part-way through the run" + details(s)});
    } else if (is_primary && s.no_steady_state) {
      out.push_back(
          {metric_names[i], metric_names[i] + " never reached a steady state" + details(s)});
    }
  }
  return out;
}

}  // namespace tunectl

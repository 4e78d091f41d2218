#include "core/estimate.h"

#include <cmath>
#include <cstddef>
#include <vector>

#include "core/sequential.h"

namespace tunectl {
namespace {

// Pre-drawn standard normal paths, summarised per look: under θ the running mean at look n is
// θ + sd·zbar and its standard error sd·se_unit (the sample sd does not depend on θ).
struct Paths {
  int first = 0, looks = 0, sims = 0;
  std::vector<double> zbar, se_unit;  // [sim * looks + (n - first)]
};

Paths DrawPaths(int first_look, int max_look, int sims, uint64_t seed) {
  Paths p;
  p.first = first_look;
  p.looks = max_look - first_look + 1;
  p.sims = sims;
  const size_t cells = static_cast<size_t>(sims) * static_cast<size_t>(p.looks);
  p.zbar.resize(cells);
  p.se_unit.resize(cells);
  SimRng rng(seed);
  std::vector<double> z(static_cast<size_t>(max_look));
  for (int s = 0; s < sims; s += 2) {  // antithetic pairs: z and -z
    for (double& v : z) v = rng.Normal();
    for (int sign = 0; sign < 2 && s + sign < sims; ++sign) {
      const double f = sign == 0 ? 1.0 : -1.0;
      double mean = 0, m2 = 0;  // Welford
      for (int n = 1; n <= max_look; ++n) {
        const double x = f * z[static_cast<size_t>(n - 1)], delta = x - mean;
        mean += delta / n;
        m2 += delta * (x - mean);
        if (n < first_look) continue;
        const size_t at = static_cast<size_t>(s + sign) * static_cast<size_t>(p.looks) +
                          static_cast<size_t>(n - first_look);
        p.zbar[at] = mean;
        p.se_unit[at] = std::sqrt(m2 / (n - 1) / n);
      }
    }
  }
  return p;
}

// P_θ(M_θ >= m): the fraction of simulated experiments whose mean at the stopping look is >= m.
double TailProbability(const Paths& p, double theta, double sd, double m, const StopRule& stop) {
  int hits = 0;
  for (int s = 0; s < p.sims; ++s) {
    const size_t row = static_cast<size_t>(s) * static_cast<size_t>(p.looks);
    int k = 0;
    for (; k + 1 < p.looks; ++k) {
      const size_t at = row + static_cast<size_t>(k);
      if (stop(theta + sd * p.zbar[at], sd * p.se_unit[at], p.first + k)) break;
    }
    if (theta + sd * p.zbar[row + static_cast<size_t>(k)] >= m) ++hits;
  }
  return static_cast<double>(hits) / p.sims;
}

}  // namespace

SequentialEstimate MedianUnbiasedEstimate(double observed_mean, double sd, int stop_n,
                                          int first_look, int max_look, const StopRule& stop,
                                          const EstimateOptions& o) {
  SequentialEstimate out;
  if (!std::isfinite(observed_mean) || !std::isfinite(sd) || sd <= 0 || first_look < 2 ||
      max_look < first_look || stop_n < first_look || stop_n > max_look || !stop || o.sims < 100) {
    return out;
  }
  const int sims = o.sims + o.sims % 2;
  const Paths paths = DrawPaths(first_look, max_look, sims, o.seed);
  const double m = observed_mean;
  auto tail = [&](double theta) { return TailProbability(paths, theta, sd, m, stop); };

  // Bracket: P(lo) below every target, P(hi) at or above every target (widened if needed).
  constexpr double kLowTarget = 0.025, kMidTarget = 0.5, kHighTarget = 0.975;
  double lo = m - 10 * sd, hi = m + 10 * sd;
  for (double w = 10 * sd; tail(lo) >= kLowTarget; w *= 2) {
    if (w > 1e6 * sd) return out;
    lo -= w;
  }
  for (double w = 10 * sd; tail(hi) < kHighTarget; w *= 2) {
    if (w > 1e6 * sd) return out;
    hi += w;
  }
  // Bisection keeping P(a) < target <= P(b); far finer than the Monte-Carlo error.
  const double tol = 1e-5 * sd;
  auto root = [&](double a, double b, double target) {
    // At most 200 halvings: a tolerance below the doubles' spacing near a and b never closes.
    for (int i = 0; i < 200 && b - a > tol; ++i) {
      const double mid = 0.5 * (a + b);
      (tail(mid) >= target ? b : a) = mid;
    }
    return 0.5 * (a + b);
  };
  out.estimate = root(lo, hi, kMidTarget);
  // P(estimate) >= 0.5 up to tol, so the CI brackets split at the estimate.
  out.ci_low = root(lo, out.estimate + tol, kLowTarget);
  out.ci_high = root(out.estimate - tol, hi, kHighTarget);
  out.valid = true;
  return out;
}

}  // namespace tunectl

#include "core/sequential.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "core/statistics.h"

namespace tunectl {

uint64_t SimRng::Next() {  // xorshift64*
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ULL;
}

double SimRng::Uniform() {
  return (static_cast<double>(Next() >> 11) + 0.5) / 9007199254740992.0;
}

double SimRng::Normal() {
  const double u1 = Uniform(), u2 = Uniform();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

double SimRng::StudentT3() {
  const double z = Normal(), a = Normal(), b = Normal(), c = Normal();
  return z / std::sqrt((a * a + b * b + c * c) / 3);
}

namespace {

// The split statistic's null families: how one pair's pace and lost-time log ratios are drawn.
// Each is symmetric about 0 (no effect: control and variant are exchangeable).
enum class Family { kGauss, kGaussBoth, kHeavy, kSlowNodes, kLostOnly, kLostHeavy };

void DrawPair(Family f, SimRng& rng, double* p, double* l) {
  switch (f) {
    case Family::kGauss: *p = rng.Normal(), *l = 0; return;
    case Family::kGaussBoth: *p = rng.Normal(), *l = rng.Normal(); return;
    case Family::kHeavy: *p = rng.StudentT3(), *l = 0.5 * rng.StudentT3(); return;
    case Family::kSlowNodes: {
      *p = rng.Normal();
      if (rng.Uniform() < 0.2) *p += rng.Uniform() < 0.5 ? 6 : -6;
      *l = 0.5 * rng.Normal();
      return;
    }
    case Family::kLostOnly: *p = 0.2 * rng.Normal(), *l = rng.Normal(); return;
    case Family::kLostHeavy: *p = 0.3 * rng.Normal(), *l = rng.StudentT3(); return;
  }
}

// The (1 - alpha) quantile of max_k |T_k|·sqrt(k/K) for the split statistic under family f.
double SplitQuantile(Family f, const SequentialOptions& o, int sims, uint64_t seed) {
  const int K = std::max(o.max_pairs, 2), first = std::clamp(o.min_pairs, 2, K);
  SimRng rng(seed + static_cast<uint64_t>(f) * 7919);
  std::vector<double> stat(static_cast<size_t>(sims)), p(static_cast<size_t>(K)),
      l(static_cast<size_t>(K));
  for (int s = 0; s < sims; ++s) {
    for (int k = 0; k < K; ++k)
      DrawPair(f, rng, &p[static_cast<size_t>(k)], &l[static_cast<size_t>(k)]);
    double worst = 0;
    for (int k = first; k <= K; ++k) {
      const SplitEstimate e = SplitPaired(std::vector<double>(p.begin(), p.begin() + k),
                                          std::vector<double>(l.begin(), l.begin() + k));
      if (e.delivered.se <= 0) continue;
      const double t = e.delivered.est / e.delivered.se;
      worst = std::max(worst, std::fabs(t) * std::sqrt(static_cast<double>(k) / K));
    }
    stat[static_cast<size_t>(s)] = worst;
  }
  const size_t q = static_cast<size_t>(std::ceil((1 - o.alpha) * sims)) - 1;
  std::nth_element(stat.begin(), stat.begin() + static_cast<std::ptrdiff_t>(q), stat.end());
  return stat[q];
}

}  // namespace

double BoundaryConstant(const SequentialOptions& o, int sims, uint64_t seed) {
  static std::mutex mu;
  static std::map<std::tuple<double, int, int, int, uint64_t, bool, bool>, double> cache;
  const bool split = o.paired && o.split;
  const auto key = std::make_tuple(o.alpha, o.min_pairs, o.max_pairs, sims, seed, o.paired, split);
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  if (split) {
    // An eighth of the simulations per family (the split statistic costs more per look).
    double c = 0;
    for (Family f : {Family::kGauss, Family::kGaussBoth, Family::kHeavy, Family::kSlowNodes,
                     Family::kLostOnly, Family::kLostHeavy})
      c = std::max(c, SplitQuantile(f, o, std::max(sims / 8, 1000), seed));
    std::lock_guard<std::mutex> g(mu);
    cache[key] = c;
    return c;
  }
  const int K = std::max(o.max_pairs, 2), first = std::clamp(o.min_pairs, 2, K);
  SimRng rng(seed);
  std::vector<double> stat(static_cast<size_t>(sims));
  for (int s = 0; s < sims; ++s) {
    double sx = 0, sxx = 0, sy = 0, syy = 0, sxy = 0, worst = 0;
    for (int k = 1; k <= K; ++k) {
      const double x = rng.Normal(), y = rng.Normal();
      sx += x, sxx += x * x, sy += y, syy += y * y, sxy += x * y;
      if (k < first) continue;
      const double n = k, mx = sx / n, my = sy / n;
      double t = 0;
      if (o.paired) {
        // differences d = y - x: their mean over their standard error, df = k - 1
        const double sd_sum = sy - sx, sdd = syy + sxx - 2 * sxy;
        const double md = sd_sum / n, vd = (sdd - n * md * md) / (n - 1);
        if (vd <= 0) continue;
        t = md / std::sqrt(vd / n);
      } else {
        const double vx = (sxx - n * mx * mx) / (n - 1), vy = (syy - n * my * my) / (n - 1);
        const double se = std::sqrt((vx + vy) / n);
        if (se <= 0) continue;
        t = (my - mx) / se;
      }
      // |t_k| / sqrt(K/k): crossing b_k = c·sqrt(K/k) at any look <=> max > c
      worst = std::max(worst, std::fabs(t) * std::sqrt(n / K));
    }
    stat[static_cast<size_t>(s)] = worst;
  }
  const size_t q = static_cast<size_t>(std::ceil((1 - o.alpha) * sims)) - 1;
  std::nth_element(stat.begin(), stat.begin() + static_cast<std::ptrdiff_t>(q), stat.end());
  const double c = stat[q];
  std::lock_guard<std::mutex> g(mu);
  cache[key] = c;
  return c;
}

double Boundary(const SequentialOptions& o, int k) {
  const int K = std::max(o.max_pairs, 2);
  k = std::clamp(k, std::clamp(o.min_pairs, 2, K), K);
  return BoundaryConstant(o) * std::sqrt(static_cast<double>(K) / k);
}

double EquivalenceBoundary(const SequentialOptions& o, int k) {
  SequentialOptions two = o;
  two.alpha = 2 * o.alpha;
  return Boundary(two, k);
}

}  // namespace tunectl

#include "core/sequential.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

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

double BoundaryConstant(const SequentialOptions& o, int sims, uint64_t seed) {
  static std::mutex mu;
  static std::map<std::tuple<double, int, int, int, uint64_t, bool>, double> cache;
  const auto key = std::make_tuple(o.alpha, o.min_pairs, o.max_pairs, sims, seed, o.paired);
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
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

}  // namespace tunectl

#include "core/statistics.h"

#include <algorithm>
#include <cmath>  // ::lgamma_r (glibc, with g++'s _GNU_SOURCE)
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "core/sequential.h"
#include "core/stats.h"

namespace tunectl {
namespace {

// Continued fraction for the incomplete beta function (modified Lentz).
double BetaContinuedFraction(double x, double a, double b) {
  constexpr int kMaxIter = 500;
  constexpr double kEps = 1e-16, kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIter; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

// log Γ(x) for x > 0 without std::lgamma's write to the global `signgam`: a data race when
// analyses run on several threads at once (finishes of runs, the regression watch).
double LogGamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

double Variance(const std::vector<double>& v, double mean) {
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(v.size() - 1);
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

double RegularizedBeta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double lbt =
      LogGamma(a + b) - LogGamma(a) - LogGamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(lbt) * BetaContinuedFraction(x, a, b) / a;
  return 1 - std::exp(lbt) * BetaContinuedFraction(1 - x, b, a) / b;
}

double StudentTCdf(double t, double df) {
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double x = df / (df + t * t);
  const double tail = 0.5 * RegularizedBeta(x, df / 2, 0.5);  // P(T > |t|)
  return t > 0 ? 1 - tail : tail;
}

double StudentTQuantile(double p, double df) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  if (p == 0.5) return 0;
  // Bracket, then bisect; then polish with Newton steps on the CDF.
  double lo = -1, hi = 1;
  while (StudentTCdf(lo, df) > p) lo *= 2;
  while (StudentTCdf(hi, df) < p) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * std::max(1.0, std::fabs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (StudentTCdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double NormalCdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

double NormalQuantile(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (NormalCdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

WelchResult Welch(const std::vector<double>& x, const std::vector<double>& y) {
  WelchResult r;
  if (x.size() < 2 || y.size() < 2) return r;
  const double nx = static_cast<double>(x.size()), ny = static_cast<double>(y.size());
  const double mx = Mean(x), my = Mean(y);
  const double vx = Variance(x, mx), vy = Variance(y, my);
  r.diff = my - mx;
  r.valid = true;
  const double ax = vx / nx, ay = vy / ny;
  r.se = std::sqrt(ax + ay);
  if (r.se == 0) {  // both sides constant
    r.df = nx + ny - 2;
    r.t = r.diff == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), r.diff);
    r.p = r.diff == 0 ? 1 : 0;
    return r;
  }
  r.df = (ax + ay) * (ax + ay) / (ax * ax / (nx - 1) + ay * ay / (ny - 1));
  r.t = r.diff / r.se;
  r.p = RegularizedBeta(r.df / (r.df + r.t * r.t), r.df / 2, 0.5);  // both tails, no cancellation
  return r;
}

Interval WelchInterval(const WelchResult& w, double alpha) {
  if (w.se == 0) return {w.diff, w.diff};
  const double q = StudentTQuantile(1 - alpha / 2, w.df);
  return {w.diff - q * w.se, w.diff + q * w.se};
}

MannWhitneyResult MannWhitney(const std::vector<double>& x, const std::vector<double>& y) {
  MannWhitneyResult r;
  const size_t n1 = x.size(), n2 = y.size();
  if (n1 == 0 || n2 == 0) return r;
  // Ranks of the pooled sample (average ranks for ties) and the tie term.
  std::vector<std::pair<double, int>> all;
  for (double v : x) all.push_back({v, 0});
  for (double v : y) all.push_back({v, 1});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const double n = static_cast<double>(n1 + n2);
  double rank_x = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i), avg = (static_cast<double>(i + j) + 1) / 2;
    if (t > 1) ties = true;
    tie_term += t * t * t - t;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_x += avg;
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2);
  r.u = rank_x - d1 * (d1 + 1) / 2;
  const double u_max = std::max(r.u, d1 * d2 - r.u);
  if ((n1 <= 8 || n2 <= 8) && !ties) {
    // Exact null distribution of U: the coefficients of the Gaussian binomial
    // [n1+n2 choose n1]_q = prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i).
    const size_t a = n1, b = n2, size = a * b + 1;
    std::vector<long double> coef(size, 0);
    coef[0] = 1;
    for (size_t i = 1; i <= a; ++i) {
      for (size_t u = size; u-- > b + i;) coef[u] -= coef[u - (b + i)];
      for (size_t u = i; u < size; ++u) coef[u] += coef[u - i];
    }
    long double total = 0, tail = 0;
    for (size_t u = 0; u < size; ++u) {
      total += coef[u];
      if (static_cast<double>(u) >= u_max - 1e-9) tail += coef[u];
    }
    r.exact = true;
    r.p = std::min(1.0, static_cast<double>(2 * tail / total));
    return r;
  }
  const double mu = d1 * d2 / 2;
  const double sigma = std::sqrt(d1 * d2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  if (sigma == 0) return r;
  const double z = (u_max - mu - 0.5) / sigma;
  r.p = std::min(1.0, 2 * (1 - NormalCdf(z)));
  return r;
}

std::vector<double> HolmAdjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  for (size_t i = 0; i < m; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 0;
  for (size_t k = 0; k < m; ++k) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - k) * p[order[k]]));
    out[order[k]] = running;
  }
  return out;
}

std::vector<double> BenjaminiHochbergAdjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  for (size_t i = 0; i < m; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 1;
  for (size_t k = m; k-- > 0;) {
    running = std::min(
        running, std::min(1.0, static_cast<double>(m) / static_cast<double>(k + 1) * p[order[k]]));
    out[order[k]] = running;
  }
  return out;
}

namespace {

double MedianOf(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

}  // namespace

Interval BootstrapRatioOfMediansBca(const std::vector<double>& x, const std::vector<double>& y,
                                    double alpha, int resamples, uint64_t seed) {
  if (x.size() < 2 || y.size() < 2) return {};
  const double theta = std::log(MedianOf(y) / MedianOf(x));
  uint64_t s = seed ? seed : 1;
  auto next = [&]() {  // xorshift64*
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ULL;
  };
  std::vector<double> stats(static_cast<size_t>(resamples));
  std::vector<double> bx(x.size()), by(y.size());
  int below = 0;
  for (int b = 0; b < resamples; ++b) {
    for (auto& v : bx) v = x[next() % x.size()];
    for (auto& v : by) v = y[next() % y.size()];
    const double t = std::log(MedianOf(by) / MedianOf(bx));
    stats[static_cast<size_t>(b)] = t;
    below += t < theta;
  }
  // Acceleration from the jackknife over both samples.
  std::vector<double> jack;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> xi = x;
    xi.erase(xi.begin() + static_cast<std::ptrdiff_t>(i));
    jack.push_back(std::log(MedianOf(y) / MedianOf(xi)));
  }
  for (size_t i = 0; i < y.size(); ++i) {
    std::vector<double> yi = y;
    yi.erase(yi.begin() + static_cast<std::ptrdiff_t>(i));
    jack.push_back(std::log(MedianOf(yi) / MedianOf(x)));
  }
  double mean = 0;
  for (double j : jack) mean += j;
  mean /= static_cast<double>(jack.size());
  double num = 0, den = 0;
  for (double j : jack) {
    num += std::pow(mean - j, 3);
    den += std::pow(mean - j, 2);
  }
  const double a = den > 0 ? num / (6 * std::pow(den, 1.5)) : 0;
  const double z0 =
      NormalQuantile(std::clamp(static_cast<double>(below) / resamples, 1e-6, 1 - 1e-6));
  auto level = [&](double q) {
    const double z = NormalQuantile(q);
    return NormalCdf(z0 + (z0 + z) / (1 - a * (z0 + z)));
  };
  std::sort(stats.begin(), stats.end());
  auto pick = [&](double q) {
    const double pos = std::clamp(q, 0.0, 1.0) * (resamples - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, stats.size() - 1);
    return std::exp(stats[lo] + (pos - static_cast<double>(lo)) * (stats[hi] - stats[lo]));
  };
  return {pick(level(alpha / 2)), pick(level(1 - alpha / 2))};
}

namespace {

// Huber's weight min(1, k/|r|) and psi'(r).
double Weight(double r, double k) {
  return r <= k ? 1 : k / r;
}
double Slope(double r, double k) {
  return std::fabs(r) <= k ? 1 : 0;
}

// Per number of pairs n, the factor that makes the pace part's influence-function standard error
// honest at small n: with Gaussian pairs its t statistic then crosses t(n-1, 0.975) 5 % of the
// time, as a plain paired t does (a MAD from 4 pairs is often small by chance, and the pairs it
// then bounds shrink the spread). Seeded simulation, computed once per (n, k); 1 from 40 pairs on.
double SmallSampleFactor(int n, double k) {
  if (n < 3 || n >= 40) return 1;
  static std::mutex mu;
  static std::map<std::pair<int, double>, double> cache;
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto it = cache.find({n, k}); it != cache.end()) return it->second;
  }
  constexpr int kSims = 20000;
  SimRng rng(20261208 + static_cast<uint64_t>(n));
  std::vector<double> t(kSims), p(static_cast<size_t>(n)), l(static_cast<size_t>(n), 0.0);
  for (int s = 0; s < kSims; ++s) {
    for (auto& x : p) x = rng.Normal();
    const SplitEstimate e = SplitPaired(p, l, k, /*factor=*/1);
    t[static_cast<size_t>(s)] = e.pace.se > 0 ? std::fabs(e.pace.est / e.pace.se) : 0;
  }
  const size_t q = static_cast<size_t>(0.95 * kSims);
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(q), t.end());
  const double f = std::max(1.0, t[q] / StudentTQuantile(0.975, n - 1));
  std::lock_guard<std::mutex> g(mu);
  cache[{n, k}] = f;
  return f;
}

}  // namespace

SplitEstimate SplitPaired(const std::vector<double>& p, const std::vector<double>& l, double k,
                          double factor) {
  SplitEstimate out;
  const size_t n = std::min(p.size(), l.size());
  out.n = static_cast<int>(n);
  if (n == 0) return out;
  std::vector<double> pv(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n));
  double theta = Median(pv);
  std::vector<double> dev(n);
  for (size_t i = 0; i < n; ++i) dev[i] = std::fabs(pv[i] - theta);
  double s = 1.4826 * Median(dev);
  if (!(s > 1e-12 * (1 + std::fabs(theta)))) {
    // Half or more of the pairs share one pace: the mean absolute deviation instead.
    double mad = 0;
    for (double d : dev) mad += d;
    s = 1.2533 * mad / static_cast<double>(n);
  }
  std::vector<double> zp(n, theta);
  if (s > 1e-12 * (1 + std::fabs(theta))) {
    for (int it = 0; it < 50; ++it) {
      double sw = 0, swx = 0;
      for (double x : pv) {
        const double r = std::fabs(x - theta) / s;
        const double w = Weight(r, k);
        sw += w, swx += w * x;
      }
      if (sw <= 0) break;
      const double next = swx / sw;
      const bool done = std::fabs(next - theta) <= 1e-10 * s;
      theta = next;
      if (done) break;
    }
    double slope = 0;
    for (double x : pv) {
      const double r = (x - theta) / s;
      slope += Slope(r, k);
      out.downweighted += Weight(std::fabs(r), k) < 1;
    }
    slope = std::max(slope / static_cast<double>(n), 0.25);
    if (factor <= 0) factor = SmallSampleFactor(static_cast<int>(n), k);
    for (size_t i = 0; i < n; ++i) {
      const double r = (pv[i] - theta) / s;
      zp[i] = theta + factor * s * r * Weight(std::fabs(r), k) / slope;
    }
  }
  out.scale = s;
  double lmean = 0;
  for (size_t i = 0; i < n; ++i) lmean += l[i];
  lmean /= static_cast<double>(n);
  auto se_of = [n](const std::vector<double>& z) {
    if (n < 2) return 0.0;
    double m = 0;
    for (double x : z) m += x;
    m /= static_cast<double>(n);
    double ss = 0;
    for (double x : z) ss += (x - m) * (x - m);
    return std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  };
  std::vector<double> zl(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(n)), zd(n);
  for (size_t i = 0; i < n; ++i) zd[i] = zp[i] + zl[i];
  out.pace = {theta, se_of(zp)};
  out.lost = {lmean, se_of(zl)};
  out.delivered = {theta + lmean, se_of(zd)};
  return out;
}

}  // namespace tunectl

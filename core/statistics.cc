#include "core/statistics.h"

#include <cmath>
#include <limits>

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
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
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

}  // namespace tunectl

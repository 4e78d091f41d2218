// Distributions and two-sample comparisons used by validation. Pure, deterministic functions.
#pragma once

#include <vector>

namespace tunectl {

// Student t: cumulative distribution and quantile (df > 0, may be fractional).
double StudentTCdf(double t, double df);
double StudentTQuantile(double p, double df);  // 0 < p < 1
double NormalCdf(double z);
double NormalQuantile(double p);
// Regularized incomplete beta I_x(a, b).
double RegularizedBeta(double x, double a, double b);

struct WelchResult {
  double diff = 0;  // mean(y) - mean(x)
  double se = 0;    // standard error of diff
  double df = 0;    // Welch–Satterthwaite degrees of freedom
  double t = 0;
  double p = 1;        // two-sided
  bool valid = false;  // false when either side has < 2 values
};

// Welch's unequal-variance t test of y against x.
WelchResult Welch(const std::vector<double>& x, const std::vector<double>& y);

// Two-sided (1 - alpha) confidence interval of mean(y) - mean(x) from a Welch result.
struct Interval {
  double lo = 0, hi = 0;
};
Interval WelchInterval(const WelchResult& w, double alpha);

}  // namespace tunectl

// Distributions and two-sample comparisons used by validation. Pure, deterministic functions.
#pragma once

#include <cstdint>
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

struct MannWhitneyResult {
  double u = 0;  // U of the first sample (x)
  double p = 1;  // two-sided
  bool exact = false;
};
// Mann–Whitney U test (scipy's method="auto": exact when either n <= 8 and no ties, else the
// normal approximation with tie correction and continuity correction).
MannWhitneyResult MannWhitney(const std::vector<double>& x, const std::vector<double>& y);

// Adjusted p-values in the input order: Holm's step-down (FWER) and Benjamini–Hochberg (FDR).
std::vector<double> HolmAdjust(const std::vector<double>& p);
std::vector<double> BenjaminiHochbergAdjust(const std::vector<double>& p);

// Two-sided (1 - alpha) confidence interval of mean(y) - mean(x) from a Welch result.
struct Interval {
  double lo = 0, hi = 0;
};
Interval WelchInterval(const WelchResult& w, double alpha);

// A paired comparison of run values split into the runs' pace and the time they lost beyond it
// (docs/statistics.md). Per control/variant pair i: p[i] = log(variant pace / control pace) and
// l[i] = log(variant value / control value) - p[i], so that p[i] + l[i] is the log ratio of what
// the runs delivered. The pace part is a Huber M-estimate (bounded influence: one pair on a slow
// node moves it little); the lost part is a plain mean (every stall and throttled stretch counts
// in full). The delivered effect is their sum; each part's standard error comes from the pairs'
// influence values, z[i] = pace + s·ψ(r[i])/mean ψ' (+ l[i] for the delivered effect), so every
// pair counts, none is dropped.
struct PartEstimate {
  double est = 0;  // on the log scale, variant over control
  double se = 0;   // standard error (0 with fewer than 2 pairs)
};
struct SplitEstimate {
  int n = 0;
  PartEstimate delivered, pace, lost;
  double scale = 0;      // the Huber scale of the pace part (1.4826·MAD)
  int downweighted = 0;  // pairs whose pace is beyond the Huber corner (their influence bounded)
};
// `k` is the Huber corner in units of `scale`; `factor` multiplies the pace part's influence
// values (0 = the small-sample factor calibrated for Gaussian pairs, see statistics.cc).
inline constexpr double kHuberK = 1.5;
SplitEstimate SplitPaired(const std::vector<double>& p, const std::vector<double>& l,
                          double k = kHuberK, double factor = 0);

// BCa bootstrap (1 - alpha) interval of median(y) / median(x), resampling each side
// independently `resamples` times with a seeded generator: reproducible.
Interval BootstrapRatioOfMediansBca(const std::vector<double>& x, const std::vector<double>& y,
                                    double alpha, int resamples = 4000, uint64_t seed = 1);

}  // namespace tunectl

#include "core/estimate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/sequential.h"

namespace tunectl {
namespace {

constexpr int kFirst = 4, kMax = 10;
constexpr double kSigma = 0.02;

// O'Brien-Fleming-like: stop when |mean/se| > c·sqrt(max/n).
StopRule ObrienFleming(double c = 2.1) {
  return [c](double mean, double se, int n) {
    return std::fabs(mean / se) > c * std::sqrt(static_cast<double>(kMax) / n);
  };
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

TEST(MedianUnbiasedEstimate, WithoutEarlyStopsItIsTheFixedSampleEstimate) {
  const StopRule never = [](double, double, int) { return false; };
  const double m = 0.013, se = kSigma / std::sqrt(static_cast<double>(kMax));
  const SequentialEstimate e = MedianUnbiasedEstimate(m, kSigma, kMax, kFirst, kMax, never);
  ASSERT_TRUE(e.valid);
  // Monte-Carlo error of the median is ~0.02 se, of the 2.5/97.5 % quantiles ~0.04 se.
  EXPECT_NEAR(e.estimate, m, 0.05 * se);
  EXPECT_NEAR(e.ci_low, m - 1.96 * se, 0.15 * se);  // sigma is a plug-in: z, not t
  EXPECT_NEAR(e.ci_high, m + 1.96 * se, 0.15 * se);
  // A single look (first == max) is the same design.
  const SequentialEstimate one = MedianUnbiasedEstimate(m, kSigma, kMax, kMax, kMax, never);
  ASSERT_TRUE(one.valid);
  EXPECT_NEAR(one.estimate, m, 0.05 * se);
  EXPECT_NEAR(one.ci_high - one.ci_low, 2 * 1.96 * se, 0.3 * se);
}

TEST(MedianUnbiasedEstimate, IsSeededAndDeterministic) {
  const StopRule rule = ObrienFleming();
  const SequentialEstimate a = MedianUnbiasedEstimate(0.03, kSigma, 4, kFirst, kMax, rule);
  const SequentialEstimate b = MedianUnbiasedEstimate(0.03, kSigma, 4, kFirst, kMax, rule);
  ASSERT_TRUE(a.valid);
  EXPECT_EQ(a.estimate, b.estimate);
  EXPECT_EQ(a.ci_low, b.ci_low);
  EXPECT_EQ(a.ci_high, b.ci_high);
  EXPECT_LT(a.ci_low, a.estimate);
  EXPECT_LT(a.estimate, a.ci_high);
  EXPECT_LT(a.estimate, 0.03);  // an early stop on a large mean is shrunk
}

// The bias problem: experiments that stop early do so because their running mean ran high, so
// the naive mean overstates the effect. The sample-mean ordering makes the estimate median-unbiased
// over all experiments (P(estimate > θ) = 1/2); given an early stop it only shrinks the mean a
// little (an O'Brien-Fleming design has little unconditional bias to remove), so early stops stay
// biased upward, less than the naive mean.
TEST(MedianUnbiasedEstimate, CorrectsTheUpwardBiasOfEarlyStops) {
  const StopRule rule = ObrienFleming();
  const double theta = 0.015;  // 0.75 sigma: about 60 % stop early
  EstimateOptions eo;
  eo.sims = 1000;  // keeps the test fast; the per-experiment MC error is still well below se
  SimRng rng(77);
  std::vector<double> naive_early, adjusted_early;
  int naive_above = 0, adjusted_above = 0;
  constexpr int kExperiments = 400;
  for (int x = 0; x < kExperiments; ++x) {
    double mean = 0, m2 = 0;
    int n = 1;
    for (;; ++n) {
      const double d = theta + kSigma * rng.Normal(), delta = d - mean;
      mean += delta / n;
      m2 += delta * (d - mean);
      if (n == kMax) break;
      if (n >= kFirst && rule(mean, std::sqrt(m2 / (n - 1) / n), n)) break;
    }
    const double sd = std::sqrt(m2 / (n - 1));
    const SequentialEstimate e = MedianUnbiasedEstimate(mean, sd, n, kFirst, kMax, rule, eo);
    ASSERT_TRUE(e.valid);
    naive_above += mean > theta;
    adjusted_above += e.estimate > theta;
    if (n < kMax && mean > 0) {
      EXPECT_LT(e.estimate, mean);  // an early stop is always shrunk
      naive_early.push_back(mean);
      adjusted_early.push_back(e.estimate);
    }
  }
  ASSERT_GE(naive_early.size(), 150u);  // early stops are common at this effect
  // Given an early stop: the naive mean is clearly biased upward, the adjusted one less.
  const double naive_bias = Median(naive_early) - theta;
  const double adjusted_bias = Median(adjusted_early) - theta;
  EXPECT_GT(naive_bias, 0.15 * kSigma);
  EXPECT_LT(adjusted_bias, naive_bias - 0.025 * kSigma);
  // Over all experiments: the adjusted estimate is median-unbiased (binomial sd 10 of 400), the
  // naive mean exceeds θ more often.
  EXPECT_NEAR(adjusted_above, kExperiments / 2, 30);
  EXPECT_GT(naive_above, adjusted_above + 5);
}

TEST(MedianUnbiasedEstimate, IsMonotoneInTheObservedMean) {
  const StopRule rule = ObrienFleming();
  EstimateOptions eo;
  eo.sims = 1000;
  double prev = -std::numeric_limits<double>::infinity();
  for (double m = -0.04; m <= 0.06; m += 0.005) {
    const SequentialEstimate e = MedianUnbiasedEstimate(m, kSigma, kFirst, kFirst, kMax, rule, eo);
    ASSERT_TRUE(e.valid) << m;
    EXPECT_GE(e.estimate, prev) << m;
    EXPECT_LE(e.ci_low, e.estimate) << m;
    EXPECT_GE(e.ci_high, e.estimate) << m;
    prev = e.estimate;
  }
}

TEST(MedianUnbiasedEstimate, InvalidInputsAreNotValid) {
  const StopRule rule = ObrienFleming();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, 0, 5, kFirst, kMax, rule).valid);        // sd 0
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, -0.1, 5, kFirst, kMax, rule).valid);     // sd < 0
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, nan, 5, kFirst, kMax, rule).valid);      // sd NaN
  EXPECT_FALSE(MedianUnbiasedEstimate(nan, kSigma, 5, kFirst, kMax, rule).valid);    // mean NaN
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, kSigma, 3, kFirst, kMax, rule).valid);   // < first
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, kSigma, 11, kFirst, kMax, rule).valid);  // > max
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, kSigma, 5, 1, kMax, rule).valid);  // no sd at n = 1
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, kSigma, 5, 6, 5, rule).valid);     // max < first
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, kSigma, 5, kFirst, kMax, StopRule()).valid);
  EstimateOptions few;
  few.sims = 10;
  EXPECT_FALSE(MedianUnbiasedEstimate(0.01, kSigma, 5, kFirst, kMax, rule, few).valid);
  EXPECT_TRUE(MedianUnbiasedEstimate(0.01, kSigma, 5, kFirst, kMax, rule).valid);
}

}  // namespace
}  // namespace tunectl

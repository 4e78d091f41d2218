#include "core/sequential.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/experiment.h"
#include "core/statistics.h"

namespace tunectl {
namespace {

TEST(Sequential, BoundaryIsCalibratedDeterministicAndOBrienFlemingShaped) {
  SequentialOptions o;  // 4..10 pairs, alpha 0.05
  const double c = BoundaryConstant(o);
  EXPECT_EQ(c, BoundaryConstant(o));  // seeded: the same every time
  EXPECT_GT(c, 2.0);                  // above the fixed-sample z: several looks
  EXPECT_LT(c, 3.5);
  EXPECT_DOUBLE_EQ(Boundary(o, 10), c);
  EXPECT_NEAR(Boundary(o, 4), c * std::sqrt(10.0 / 4), 1e-12);
  EXPECT_GT(Boundary(o, 4), Boundary(o, 5));  // strict early, lenient late
}

// Simulates no-effect experiments (run values ~ N(0,1) plus drift in run order, ABBA) and
// returns the fraction in which the boundary is crossed at some look.
double CrossingRate(const SequentialOptions& o, int sims, double drift_per_run, uint64_t seed) {
  SimRng rng(seed);
  int crossed = 0;
  for (int s = 0; s < sims; ++s) {
    std::vector<double> x, y;
    for (int k = 1; k <= o.max_pairs; ++k) {
      const int t0 = 2 * (k - 1);
      const bool control_first = (k - 1) % 2 == 0;
      x.push_back(rng.Normal() + drift_per_run * (control_first ? t0 : t0 + 1));
      y.push_back(rng.Normal() + drift_per_run * (control_first ? t0 + 1 : t0));
      if (k < o.min_pairs) continue;
      double t = 0;
      if (o.paired && o.split) {
        std::vector<double> p, l(static_cast<size_t>(k), 0.0);
        for (int i = 0; i < k; ++i)
          p.push_back(y[static_cast<size_t>(i)] - x[static_cast<size_t>(i)]);
        const SplitEstimate e = SplitPaired(p, l);
        t = e.delivered.se > 0 ? e.delivered.est / e.delivered.se : 0;
      } else if (o.paired) {
        double m = 0, ss = 0;
        for (int i = 0; i < k; ++i) m += y[static_cast<size_t>(i)] - x[static_cast<size_t>(i)];
        m /= k;
        for (int i = 0; i < k; ++i) {
          const double d = y[static_cast<size_t>(i)] - x[static_cast<size_t>(i)] - m;
          ss += d * d;
        }
        t = m / std::sqrt(ss / (k - 1) / k);
      } else {
        t = Welch(x, y).t;
      }
      if (std::fabs(t) >= Boundary(o, k)) {
        ++crossed;
        break;
      }
    }
  }
  return static_cast<double>(crossed) / sims;
}

TEST(Sequential, FalsePositiveRateIsAlphaOverTenThousandNoEffectExperiments) {
  SequentialOptions o;  // paired, the split statistic (the default)
  const double fpr = CrossingRate(o, 10000, 0, 7);
  EXPECT_NEAR(fpr, 0.05, 0.0065) << "fpr " << fpr;
  o.split = false;  // a plain paired t
  const double t = CrossingRate(o, 10000, 0, 9);
  EXPECT_NEAR(t, 0.05, 0.0065) << "fpr " << t;
  o.paired = false;  // Welch
  const double welch = CrossingRate(o, 10000, 0, 8);
  EXPECT_NEAR(welch, 0.05, 0.0065) << "fpr " << welch;
}

TEST(Sequential, FalsePositiveRateHoldsWithDriftBetweenRuns) {
  SequentialOptions o;
  o.paired = false;
  // a strong linear drift: 0.3 SD per run (6 SD over the experiment), cancelled by ABBA order
  const double fpr = CrossingRate(o, 10000, 0.3, 11);
  EXPECT_LE(fpr, 0.05 + 0.0065) << "fpr " << fpr;
  o.paired = true;  // pairs cancel the drift entirely
  const double paired = CrossingRate(o, 10000, 0.3, 12);
  EXPECT_NEAR(paired, 0.05, 0.0065) << "fpr " << paired;
}

TEST(Sequential, FalsePositiveRateHoldsForOtherCaps) {
  SequentialOptions o;
  o.split = false;
  o.min_pairs = 3;
  o.max_pairs = 20;
  EXPECT_NEAR(CrossingRate(o, 10000, 0, 13), 0.05, 0.0065);
}

// The split statistic with heavy-tailed lost time and slow-node pace outliers, no effect: the
// boundary (the largest over its null families) keeps the rate at or below alpha.
TEST(Sequential, TheSplitStatisticsFalsePositiveRateHoldsUnderHeavyTails) {
  SequentialOptions o;
  SimRng rng(21);
  int crossed = 0;
  const int sims = 4000;
  for (int s = 0; s < sims; ++s) {
    std::vector<double> p, l;
    for (int k = 1; k <= o.max_pairs; ++k) {
      double pace = 0.01 * rng.Normal();
      if (rng.Uniform() < 0.19) pace += rng.Uniform() < 0.5 ? 0.15 : -0.15;  // a slow node
      p.push_back(pace);
      l.push_back(0.02 * rng.StudentT3());
      if (k < o.min_pairs) continue;
      const SplitEstimate e = SplitPaired(p, l);
      if (e.delivered.se > 0 && std::fabs(e.delivered.est / e.delivered.se) >= Boundary(o, k)) {
        ++crossed;
        break;
      }
    }
  }
  EXPECT_LE(static_cast<double>(crossed) / sims, 0.05 + 3 * std::sqrt(0.05 * 0.95 / sims));
}

WorkloadSpec OneMetric() {
  WorkloadSpec s;
  s.name = "w";
  MetricSpec m;
  m.name = "sps";
  m.pattern = "(x)";
  m.role = MetricRole::kPrimary;
  m.min_effect = 0.03;
  s.metrics = {m};
  return s;
}

TEST(Sequential, ClearEffectStopsAtTheFirstLook) {
  WorkloadSpec s = OneMetric();
  SequentialOptions o;
  ArmData c, v;
  SimRng rng(3);
  for (int i = 0; i < 4; ++i) {
    c.values["sps"].push_back(100 * std::exp(0.01 * rng.Normal()));
    v.values["sps"].push_back(200 * std::exp(0.01 * rng.Normal()));
  }
  c.runs = v.runs = 4;
  SequentialStep st = EvaluateSequential(s, c, v, std::nullopt, o);
  EXPECT_TRUE(st.stop);
  EXPECT_EQ(st.verdict.decision, "improved");
  EXPECT_EQ(st.verdict.pairs, 4);
}

TEST(Sequential, NoiseContinuesUntilTheCapThenIsInconclusive) {
  WorkloadSpec s = OneMetric();
  SequentialOptions o;
  ArmData c, v;
  SimRng rng(5);
  SequentialStep st;
  for (int k = 1; k <= o.max_pairs; ++k) {
    c.values["sps"].push_back(100 * std::exp(0.2 * rng.Normal()));
    v.values["sps"].push_back(100 * std::exp(0.2 * rng.Normal()));
    c.runs = v.runs = k;
    st = EvaluateSequential(s, c, v, std::nullopt, o);
    if (k < o.max_pairs) {
      EXPECT_FALSE(st.stop) << "look " << k;
    }
  }
  EXPECT_TRUE(st.stop);
  EXPECT_EQ(st.verdict.decision, "inconclusive");
}

TEST(Sequential, DecisionsAtZeroEffectAreRarerThanAlpha) {
  WorkloadSpec s = OneMetric();
  SequentialOptions o;
  SimRng rng(17);
  int calls = 0, sims = 4000;
  for (int i = 0; i < sims; ++i) {
    ArmData c, v;
    for (int k = 1; k <= o.max_pairs; ++k) {
      c.values["sps"].push_back(100 * std::exp(0.02 * rng.Normal()));
      v.values["sps"].push_back(100 * std::exp(0.02 * rng.Normal()));
      c.runs = v.runs = k;
      VerdictOptions vo;
      vo.cross_checks = false;
      SequentialStep st = EvaluateSequential(s, c, v, std::nullopt, o, vo);
      if (!st.stop) continue;
      calls += st.verdict.decision == "improved" || st.verdict.decision == "regressed";
      break;
    }
  }
  EXPECT_LE(static_cast<double>(calls) / sims, 0.05);
}

}  // namespace
}  // namespace tunectl

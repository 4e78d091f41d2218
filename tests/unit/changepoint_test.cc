#include "core/changepoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/sequential.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

std::vector<StepValue> Series(int n, const std::function<double(int)>& level, double noise,
                              uint64_t seed) {
  SimRng rng(seed);
  std::vector<StepValue> out;
  for (int i = 1; i <= n; ++i) out.push_back({i, level(i) * (1 + noise * rng.Normal())});
  return out;
}

TEST(Pelt, FindsAKnownStepAndNothingInNoise) {
  SimRng rng(1);
  std::vector<double> x;
  for (int i = 0; i < 60; ++i) x.push_back((i < 20 ? 5.0 : 10.0) + rng.Normal());
  auto cps = Pelt(x);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_NEAR(static_cast<double>(cps[0]), 20, 1);
  std::vector<double> flat;
  for (int i = 0; i < 200; ++i) flat.push_back(rng.Normal());
  EXPECT_TRUE(Pelt(flat).empty());
}

TEST(Pelt, FindsTwoChanges) {
  SimRng rng(2);
  std::vector<double> x;
  for (int i = 0; i < 90; ++i) x.push_back((i < 30 ? 0.0 : i < 60 ? 8.0 : 3.0) + rng.Normal());
  auto cps = Pelt(x);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_NEAR(static_cast<double>(cps[0]), 30, 1);
  EXPECT_NEAR(static_cast<double>(cps[1]), 60, 1);
}

TEST(AnalyzeRun, DropsAnUndeclaredWarmup) {
  // 30 slow steps ramping up, declared warm-up only 5
  auto s = AnalyzeRun(Series(
                          150, [](int i) { return i <= 30 ? 50.0 + i : 100.0; }, 0.01, 3),
                      5, Better::kHigher);
  EXPECT_TRUE(s.usable()) << (s.warnings.empty() ? "" : s.warnings[0]);
  EXPECT_EQ(s.declared_warmup, 5);
  EXPECT_GE(s.detected_warmup, 20);
  EXPECT_LE(s.detected_warmup, 30);
  EXPECT_NEAR(s.stats.median, 100, 1);
}

TEST(AnalyzeRun, StableRunKeepsEverythingAfterDeclaredWarmup) {
  auto s = AnalyzeRun(Series(
                          120, [](int) { return 100.0; }, 0.03, 4),
                      5, Better::kHigher);
  EXPECT_TRUE(s.usable());
  EXPECT_EQ(s.detected_warmup, 0);
  EXPECT_EQ(s.steady, 115);
}

TEST(AnalyzeRun, SpikesDoNotMoveTheSummaryOrMakeChangePoints) {
  auto samples = Series(
      150, [](int) { return 100.0; }, 0.01, 5);
  for (int i = 20; i < 150; i += 17) samples[static_cast<size_t>(i)].value = 30;  // stalls
  auto s = AnalyzeRun(samples, 5, Better::kHigher);
  EXPECT_TRUE(s.usable());
  EXPECT_NEAR(s.stats.median, 100, 1);
  EXPECT_GT(s.outliers, 0);
}

TEST(AnalyzeRun, SlowdownIsFlagged) {
  auto s = AnalyzeRun(Series(
                          150, [](int i) { return i < 100 ? 100.0 : 80.0; }, 0.01, 6),
                      5, Better::kHigher);
  EXPECT_TRUE(s.slowdown);
  EXPECT_FALSE(s.usable());
  EXPECT_THAT(s.warnings[0], HasSubstr("slowdown"));
}

TEST(AnalyzeRun, SlowdownThroughATransitionIsFlagged) {
  // 100 → a short step at 90 → 80: the last segment is compared with every sustained one before.
  auto s =
      AnalyzeRun(Series(
                     160, [](int i) { return i < 60   ? 100.0
                                             : i < 72 ? 90.0
                                                      : 80.0; }, 0.005, 8),
                 5, Better::kHigher);
  EXPECT_TRUE(s.slowdown);
  EXPECT_THAT(s.warnings[0], HasSubstr("worse than an earlier sustained one"));
}

TEST(AnalyzeRun, RunThatNeverSettlesHasNoSteadyState) {
  auto s = AnalyzeRun(Series(
                          150, [](int i) { return 100.0 - 0.3 * i; }, 0.005, 7),
                      5, Better::kHigher);
  EXPECT_FALSE(s.usable());
}

TEST(AnalyzeRun, LowerIsBetterWarmupIsNotASlowdown) {
  // step time: slow (high) at first, then fast
  auto s = AnalyzeRun(Series(
                          100, [](int i) { return i < 25 ? 30.0 : 10.0; }, 0.01, 8),
                      5, Better::kLower);
  EXPECT_TRUE(s.usable());
  EXPECT_NEAR(s.stats.median, 10, 0.2);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(AnalyzeRun, ShortRunsAreNotSegmented) {
  std::vector<StepValue> s = {{1, 10}, {2, 11}, {3, 12}, {4, 13}, {5, 14}};
  auto r = AnalyzeRun(s, 0, Better::kHigher);
  EXPECT_TRUE(r.usable());
  EXPECT_EQ(r.steady, 5);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(AnalyzeRun, FastStartFromAFullBufferIsATransientNotASlowdown) {
  // the first 6 steps drain a prefetched buffer (fast), then the loader-bound rate
  auto s = AnalyzeRun(Series(
                          60, [](int i) { return i <= 11 ? 5000.0 : 2400.0; }, 0.02, 9),
                      5, Better::kHigher);
  EXPECT_FALSE(s.slowdown);
  EXPECT_TRUE(s.usable());
  EXPECT_NEAR(s.stats.median, 2400, 50);
}

TEST(DropSkippedSteps, RemovesMarkedStepsFromEveryMetric) {
  std::map<std::string, std::vector<StepValue>> series = {
      {"sps", {{1, 10}, {2, 1}, {3, 11}, {4, 1}}},
      {"loss", {{2, 2.0}, {3, 1.9}}},
      {"skip:checkpoint", {{2, 1}, {4, 1}}},
      {"skip:eval", {{4, 1}}}};
  auto dropped = DropSkippedSteps(&series);
  EXPECT_EQ(series.size(), 2u);
  EXPECT_EQ(series["sps"], (std::vector<StepValue>{{1, 10}, {3, 11}}));
  EXPECT_EQ(series["loss"], (std::vector<StepValue>{{3, 1.9}}));
  EXPECT_EQ(dropped, (std::map<std::string, int>{
                         {"sps", 2}, {"loss", 1}, {"skip:checkpoint", 2}, {"skip:eval", 1}}));
  std::map<std::string, std::vector<StepValue>> again = {{"sps", {{1, 10}, {2, 1}, {3, 11}}},
                                                         {"skip:checkpoint", {{2, 1}}}};
  std::map<std::string, std::vector<StepValue>> left_out;
  DropSkippedSteps(&again, &left_out);
  EXPECT_EQ(again["sps"], (std::vector<StepValue>{{1, 10}, {3, 11}}));
  EXPECT_EQ(left_out, (std::map<std::string, std::vector<StepValue>>{
                          {"sps", {{2, 1}}}, {"skip:checkpoint", {{2, 1}}}}));
  std::map<std::string, std::vector<StepValue>> none = {{"sps", {{1, 10}}}};
  EXPECT_TRUE(DropSkippedSteps(&none).empty());
  EXPECT_EQ(none["sps"].size(), 1u);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(AnalyzeRun, ASlowLastStepIsNotASlowdownWhateverTheRunLength) {
  // One 50 %-speed final step (a checkpoint, an evaluation): before the windows were equal, a
  // 121-step run put it alone in the last window and every such run was flagged.
  for (int n = 115; n <= 135; ++n)
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      auto samples = Series(
          n, [](int) { return 100.0; }, 0.02, seed * 1000 + static_cast<uint64_t>(n));
      samples.back().value *= 0.5;
      auto s = AnalyzeRun(samples, 5, Better::kHigher);
      EXPECT_TRUE(s.usable()) << n << " steps, seed " << seed << ": "
                              << (s.warnings.empty() ? "" : s.warnings[0]);
      EXPECT_NEAR(s.stats.median, 100, 1) << n;
    }
}

TEST(AnalyzeRun, ASingleSlowStepMidRunIsAnOutlierNotALevelShift) {
  auto samples = Series(
      150, [](int) { return 100.0; }, 0.01, 21);
  samples[75].value = 50;
  auto s = AnalyzeRun(samples, 5, Better::kHigher);
  EXPECT_TRUE(s.usable());
  EXPECT_EQ(s.detected_warmup, 0);
  EXPECT_EQ(s.steady, 145);
  EXPECT_EQ(s.outliers, 1);
}

TEST(AnalyzeRun, AnEightPercentDropAtMidRunIsASlowdown) {
  auto s = AnalyzeRun(Series(
                          300, [](int i) { return i <= 150 ? 100.0 : 92.0; }, 0.03, 22),
                      5, Better::kHigher);
  EXPECT_TRUE(s.slowdown);
  EXPECT_FALSE(s.usable());
  EXPECT_NEAR(s.stats.median, 92, 1);
}

TEST(AnalyzeRun, StronglyAutocorrelatedSteadyRunsAreRarelyFlagged) {
  // AR(1) φ = 0.9 step noise (3 % marginal sd) after an undeclared warm-up ramp: the window
  // medians wander, and a noise scale from first differences alone would cut them into segments.
  SimRng rng(23);
  int flagged = 0;
  const int runs = 300;
  for (int r = 0; r < runs; ++r) {
    const int n = 300 + static_cast<int>(rng.Uniform() * 12);
    const int warm = 5 + static_cast<int>(rng.Uniform() * 36);
    const double phi = 0.9;
    double u = 0.03 * rng.Normal();
    std::vector<StepValue> samples;
    for (int t = 1; t <= n; ++t) {
      if (t > 1) u = phi * u + 0.03 * std::sqrt(1 - phi * phi) * rng.Normal();
      double v = 1000 * std::exp(u);
      if (t <= warm) v *= 0.5 + 0.5 * t / warm;
      samples.push_back({t, v});
    }
    auto s = AnalyzeRun(samples, 5, Better::kHigher);
    flagged += s.slowdown || s.no_steady_state;
  }
  EXPECT_LE(flagged, runs * 3 / 100);
}

TEST(AnalyzeRun, AFivePercentDropUnderAutocorrelatedNoiseIsCaughtMostOfTheTime) {
  // 300 steps, AR(1) φ = 0.6 noise (3 % marginal sd), an undeclared 5-40-step ramp, a 5 % drop
  // at mid-run. The ramp once inflated the estimated autocorrelation (read from first
  // differences) towards its 0.9 clamp, and the noise with it: 74 % were caught here (222); second
  // differences, which a ramp does not move, catch 79 % (236).
  SimRng rng(37);
  int caught = 0;
  const int runs = 300;
  for (int r = 0; r < runs; ++r) {
    const int warm = 5 + static_cast<int>(rng.Uniform() * 36);
    const double phi = 0.6;
    double u = 0.03 * rng.Normal();
    std::vector<StepValue> samples;
    for (int t = 1; t <= 300; ++t) {
      u = phi * u + 0.03 * std::sqrt(1 - phi * phi) * rng.Normal();
      double v = 1000 * std::exp(u);
      if (t <= warm) v *= 0.5 + 0.5 * t / warm;
      if (t > 150) v *= 0.95;
      samples.push_back({t, v});
    }
    caught += AnalyzeRun(samples, 5, Better::kHigher).slowdown;
  }
  EXPECT_GE(caught, runs * 76 / 100);
}

TEST(AnalyzeRun, NonFiniteSamplesAreCountedAndLeftOut) {
  auto samples = Series(
      60, [](int) { return 100.0; }, 0.01, 24);
  samples[2].value = std::nan("");  // inside the declared warm-up: just warm-up
  samples[20].value = std::nan("");
  samples[30].value = std::numeric_limits<double>::infinity();
  samples[40].value = -std::numeric_limits<double>::infinity();
  auto s = AnalyzeRun(samples, 5, Better::kHigher);
  EXPECT_EQ(s.samples, 60);
  EXPECT_EQ(s.declared_warmup, 5);
  EXPECT_EQ(s.nonfinite, 3);
  EXPECT_EQ(s.detected_warmup, 0);
  EXPECT_EQ(s.steady, 52);
  EXPECT_EQ(s.steady_from_step, 6);
  EXPECT_TRUE(s.usable());
  EXPECT_NEAR(s.stats.median, 100, 1);
  EXPECT_THAT(s.warnings, ::testing::Contains("3 NaN/Inf sample(s) left out"));

  std::vector<StepValue> all_nan = {{1, std::nan("")}, {2, std::nan("")}};
  auto n = AnalyzeRun(all_nan, 0, Better::kHigher);
  EXPECT_EQ(n.nonfinite, 2);
  EXPECT_FALSE(n.usable());
  EXPECT_EQ(n.steady_from_step, 0);
}

TEST(AnalyzeRun, EachSamplesRoleAgreesWithTheCounts) {
  auto samples = Series(
      150, [](int i) { return i <= 30 ? 50.0 + i : 100.0; }, 0.01, 3);
  samples[2].value = std::nan("");  // in the declared warm-up: warm-up, not left out
  samples[60].value = std::nan("");
  samples[100].value = 20;  // a stalled step: an outlier, still counted
  std::vector<SampleRole> roles;
  const SteadyState s = AnalyzeRun(samples, 5, Better::kHigher, &roles);
  ASSERT_EQ(roles.size(), samples.size());
  const auto count = [&](SampleRole r) {
    return static_cast<int>(std::count(roles.begin(), roles.end(), r));
  };
  EXPECT_EQ(count(SampleRole::kDeclaredWarmup), s.declared_warmup);
  EXPECT_EQ(count(SampleRole::kNonFinite), s.nonfinite);
  EXPECT_EQ(count(SampleRole::kDetectedWarmup), s.detected_warmup);
  EXPECT_EQ(count(SampleRole::kSteady) + count(SampleRole::kOutlier), s.steady);
  EXPECT_EQ(count(SampleRole::kOutlier), s.outliers);
  EXPECT_EQ(roles[2], SampleRole::kDeclaredWarmup);
  EXPECT_EQ(roles[60], SampleRole::kNonFinite);
  EXPECT_EQ(roles[100], SampleRole::kOutlier);
  EXPECT_GT(s.detected_warmup, 0);
  // the window is the tail of the finite samples, from steady_from_step on
  for (size_t i = 0; i < samples.size(); ++i) {
    const bool in_window = roles[i] == SampleRole::kSteady || roles[i] == SampleRole::kOutlier;
    if (roles[i] == SampleRole::kNonFinite) continue;
    EXPECT_EQ(in_window, samples[i].step >= s.steady_from_step) << i;
  }
  // the same result with or without the roles
  const SteadyState plain = AnalyzeRun(samples, 5, Better::kHigher);
  EXPECT_EQ(plain.steady, s.steady);
  EXPECT_EQ(plain.stats.median, s.stats.median);
}

TEST(AnalyzeRun, SteadyFromStepIsWhereTheWindowStarts) {
  auto samples = Series(
      150, [](int i) { return i <= 30 ? 50.0 + i : 100.0; }, 0.01, 3);
  auto s = AnalyzeRun(samples, 5, Better::kHigher);
  EXPECT_EQ(s.steady_from_step, samples[static_cast<size_t>(5 + s.detected_warmup)].step);
  EXPECT_GT(s.steady_from_step, 20);
  EXPECT_LE(s.steady_from_step, 31);
}

TEST(Quantum, FromTheDecimalDigitsPresent) {
  EXPECT_DOUBLE_EQ(Quantum({0.02, 0.01, 0.03}), 0.01);
  EXPECT_DOUBLE_EQ(Quantum({3751.0, 3702.0}), 1);
  EXPECT_DOUBLE_EQ(Quantum({3700.0, 3800.0}), 100);
  EXPECT_DOUBLE_EQ(Quantum({0.02, 0.04, 0.06}), 0.02);     // a common factor in 3+ values
  EXPECT_DOUBLE_EQ(Quantum({-0.25, 0.5, 1.25, 0}), 0.25);  // signs and zeros do not matter
  EXPECT_DOUBLE_EQ(Quantum({0.1 + 0.2, 0.5, 0.7}), 0.1);   // 12 significant digits
  EXPECT_DOUBLE_EQ(Quantum({0.5, 1.5}), 0.1);              // two values: no common factor
  EXPECT_EQ(Quantum({}), 0);
  EXPECT_EQ(Quantum({0, std::nan("")}), 0);
  const double tiny = Quantum({1234.5678901234567, 1.2345678901234567});
  EXPECT_GT(tiny, 0);
  EXPECT_LT(tiny, 1e-7);
}

TEST(AnalyzeRun, ResolutionAndLevelsOfTwoDecimalValues) {
  // a loss printed with 2 decimals: 1.47 … 1.53
  SimRng rng(25);
  std::vector<StepValue> samples;
  for (int i = 1; i <= 200; ++i)
    samples.push_back({i, std::round((1.5 + 0.01 * rng.Normal()) * 100) / 100});
  auto s = AnalyzeRun(samples, 0, Better::kLower);
  EXPECT_DOUBLE_EQ(s.resolution, 0.01);
  EXPECT_GE(s.levels, 3);
  EXPECT_LE(s.levels, 11);
  std::vector<StepValue> raw;
  for (int i = 1; i <= 100; ++i) raw.push_back({i, 1.5 + 0.01 * rng.Normal()});
  auto r = AnalyzeRun(raw, 0, Better::kLower);
  EXPECT_EQ(r.levels, 100);
  EXPECT_LT(r.resolution, 1e-9);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(DeliveredValue, ARateIsWorkOverTimeAndATimeIsItsMean) {
  std::string how;
  // Three steps at 100/s and one at 20/s: 4 steps of work in 0.03 + 0.05 s.
  EXPECT_DOUBLE_EQ(*DeliveredValue({100, 100, 100, 20}, Better::kHigher, &how), 4 / 0.08);
  EXPECT_EQ(how, kHarmonicMean);
  EXPECT_DOUBLE_EQ(*DeliveredValue({10, 10, 10, 50}, Better::kLower, &how), 20);
  EXPECT_EQ(how, kArithmeticMean);
  // A rate with a sample <= 0 has no work-over-time reading: the mean, said so.
  EXPECT_DOUBLE_EQ(*DeliveredValue({2, 0, 4}, Better::kHigher, &how), 2);
  EXPECT_EQ(how, kArithmeticMean);
  EXPECT_FALSE(DeliveredValue({}, Better::kHigher).has_value());
}

TEST(AnalyzeRun, StallsLowerTheDeliveredValueButNotThePaceOrTheMedian) {
  // Every 10th step stalls at a fifth of the pace: 10 % of the steps take 5 times as long.
  std::vector<StepValue> v;
  for (int i = 1; i <= 150; ++i) v.push_back({i, i % 10 == 0 ? 200.0 : 1000.0});
  const SteadyState s = AnalyzeRun(v, 5, Better::kHigher);
  ASSERT_TRUE(s.delivered && s.pace);
  EXPECT_DOUBLE_EQ(s.stats.median, 1000);
  EXPECT_DOUBLE_EQ(*s.pace, 1000);
  // 145 measured steps (6..150), 15 of them stalled: 145 / (130/1000 + 15/200).
  EXPECT_NEAR(*s.delivered, 145 / (130 / 1000.0 + 15 / 200.0), 1e-9);
  EXPECT_EQ(s.aggregate, kHarmonicMean);
  EXPECT_EQ(s.measured_from_step, 6);
  EXPECT_EQ(s.measured, 145);
}

TEST(AnalyzeRun, AThrottledSecondHalfIsInTheDeliveredValue) {
  // A slowdown to -25 % at mid-run: flagged, and the run delivered what it delivered.
  auto s = AnalyzeRun(Series(
                          160, [](int i) { return i <= 80 ? 100.0 : 75.0; }, 0.005, 11),
                      0, Better::kHigher);
  EXPECT_TRUE(s.slowdown);
  ASSERT_TRUE(s.delivered && s.pace);
  EXPECT_NEAR(*s.delivered, 2 / (1 / 100.0 + 1 / 75.0), 1.0);  // work over time, both halves
  EXPECT_GT(*s.pace, *s.delivered);
  EXPECT_EQ(s.measured_from_step, 1);  // a drop is not a warm-up
}

TEST(AnalyzeRun, AWarmupLongerThanDeclaredIsLeftOutOfTheMeasuredWindow) {
  // 30 steps ramping up, 5 declared: the measured window starts near the end of the ramp, so the
  // delivered value is the level, not the ramp.
  auto s = AnalyzeRun(Series(
                          150, [](int i) { return i <= 30 ? 50.0 + i : 100.0; }, 0.01, 3),
                      5, Better::kHigher);
  EXPECT_GE(s.measured_from_step, 20);
  EXPECT_LE(s.measured_from_step, 32);
  ASSERT_TRUE(s.delivered);
  EXPECT_NEAR(*s.delivered, 100, 2);
  // A time metric (lower is better) that starts slow: the same.
  auto t = AnalyzeRun(Series(
                          150, [](int i) { return i <= 30 ? 200.0 - 3 * i : 100.0; }, 0.01, 4),
                      5, Better::kLower);
  EXPECT_GE(t.measured_from_step, 20);
  ASSERT_TRUE(t.delivered);
  EXPECT_NEAR(*t.delivered, 100, 2);
  EXPECT_EQ(t.aggregate, kArithmeticMean);
}

}  // namespace
}  // namespace tunectl

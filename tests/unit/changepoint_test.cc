#include "core/changepoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

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
  std::map<std::string, std::vector<StepValue>> none = {{"sps", {{1, 10}}}};
  EXPECT_TRUE(DropSkippedSteps(&none).empty());
  EXPECT_EQ(none["sps"].size(), 1u);
}

}  // namespace
}  // namespace tunectl

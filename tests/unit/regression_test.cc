#include "core/regression.h"

#include <gtest/gtest.h>

#include "core/sequential.h"

namespace tunectl {
namespace {

std::vector<double> Series(const std::vector<std::pair<int, double>>& levels, double noise,
                           uint64_t seed) {
  SimRng rng(seed);
  std::vector<double> x;
  for (const auto& [count, level] : levels)
    for (int i = 0; i < count; ++i) x.push_back(level * (1 + noise * rng.Normal()));
  return x;
}

TEST(EDivisive, FindsAKnownStep) {
  auto x = Series({{30, 100}, {30, 90}}, 0.01, 1);
  auto cps = EDivisive(x);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_NEAR(static_cast<double>(cps[0].index), 30, 1);
  EXPECT_NEAR(cps[0].before, 100, 1);
  EXPECT_NEAR(cps[0].after, 90, 1);
  EXPECT_LT(cps[0].p, 0.001);
}

TEST(EDivisive, FindsTwoChanges) {
  auto cps = EDivisive(Series({{20, 100}, {20, 85}, {20, 100}}, 0.01, 2));
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_NEAR(static_cast<double>(cps[0].index), 20, 1);
  EXPECT_NEAR(static_cast<double>(cps[1].index), 40, 1);
}

TEST(EDivisive, NoFalseAlarmOnAStableNoisySeries) {
  for (uint64_t seed = 3; seed < 23; ++seed)
    EXPECT_TRUE(EDivisive(Series({{200, 100}}, 0.03, seed)).empty()) << "seed " << seed;
}

TEST(EDivisive, IgnoresChangesBelowTheMinimumMagnitude) {
  // a real but tiny 1 % step with very little noise: significant, yet below the 3 % minimum
  EXPECT_TRUE(EDivisive(Series({{30, 100}, {30, 99}}, 0.001, 4)).empty());
  ChangePointOptions o;
  o.min_magnitude = 0.005;
  EXPECT_EQ(EDivisive(Series({{30, 100}, {30, 99}}, 0.001, 4), o).size(), 1u);
}

TEST(EDivisive, LongSeriesUseOverlappingWindows) {
  auto cps = EDivisive(Series({{120, 100}, {80, 80}}, 0.01, 5));
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_NEAR(static_cast<double>(cps[0].index), 120, 1);
}

TEST(NewRunCheck, FlagsOnlyARunPastTheOneSidedBound) {
  std::vector<double> h = {100, 101, 99, 100.5, 99.5, 100, 100.2};
  EXPECT_FALSE(CheckNewRun(h, 99.0, Better::kHigher).regression);
  EXPECT_TRUE(CheckNewRun(h, 90.0, Better::kHigher).regression);
  EXPECT_FALSE(CheckNewRun(h, 110.0, Better::kHigher).regression);  // better is not a regression
  EXPECT_TRUE(CheckNewRun(h, 110.0, Better::kLower).regression);
  EXPECT_FALSE(CheckNewRun({100, 90}, 50, Better::kHigher).regression);  // too little history
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(AnalyzeRegression, ClassifiesChangesAndWritesOneAlertPerRegression) {
  MetricSpec throughput;
  throughput.name = "sps";
  throughput.better = Better::kHigher;
  throughput.min_effect = 0.03;
  auto x = Series({{20, 100}, {20, 80}}, 0.01, 6);
  std::vector<std::string> labels;
  for (size_t i = 0; i < x.size(); ++i) labels.push_back("run " + std::to_string(100 + i));
  RegressionReport r = AnalyzeRegression(x, labels, throughput);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_TRUE(r.changes[0].regression);
  ASSERT_EQ(r.alerts.size(), 1u);
  EXPECT_NE(r.alerts[0].find("starting with run 120"), std::string::npos) << r.alerts[0];
  EXPECT_FALSE(r.latest.regression);  // the newest run matches the level since the change

  MetricSpec step_time = throughput;  // the same series as a lower-is-better metric: faster
  step_time.better = Better::kLower;
  RegressionReport faster = AnalyzeRegression(x, labels, step_time);
  ASSERT_EQ(faster.changes.size(), 1u);
  EXPECT_FALSE(faster.changes[0].regression);
  EXPECT_TRUE(faster.alerts.empty());
}

TEST(AnalyzeRegression, AlertsOnANewRunPastTheBound) {
  MetricSpec m;
  m.name = "sps";
  auto x = Series({{12, 100}}, 0.005, 7);
  x.push_back(80);
  RegressionReport r = AnalyzeRegression(x, {}, m);
  EXPECT_TRUE(r.changes.empty());
  EXPECT_TRUE(r.latest.regression);
  ASSERT_EQ(r.alerts.size(), 1u);
  EXPECT_NE(r.alerts[0].find("the latest point 12"), std::string::npos) << r.alerts[0];
}

}  // namespace
}  // namespace tunectl

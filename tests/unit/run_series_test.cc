#include "core/run_series.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/sequential.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

std::vector<SamplePoint> Points(int n, const std::function<double(int)>& value) {
  std::vector<SamplePoint> out;
  for (int i = 1; i <= n; ++i) out.push_back({i, value(i), SamplePhase::kSteady});
  return out;
}

// A noisy run: a ramp to `level` over the first 30 steps, then noise of 1 %.
std::vector<StepValue> RampedRun(int n, uint64_t seed, double level = 100) {
  SimRng rng(seed);
  std::vector<StepValue> out;
  for (int i = 1; i <= n; ++i)
    out.push_back({i, (i <= 30 ? level / 2 + level / 60 * i : level) * (1 + 0.01 * rng.Normal())});
  return out;
}

LaunchRecord Launch(int warmup_steps, std::vector<std::string> metrics) {
  LaunchRecord l;
  l.warmup_steps = warmup_steps;
  for (auto& m : metrics) {
    LaunchMetric lm;
    lm.name = std::move(m);
    l.metrics.push_back(lm);
  }
  return l;
}

TEST(RunSeries, DecimationKeepsEachBucketsLowestAndHighestInStepOrder) {
  auto pts = Points(1000, [](int i) { return 100.0 + (i % 7); });
  pts[500].value = 5000;  // one spike
  pts[731].value = -3;    // one dip
  const auto d = DecimateMinMax(pts, 100);
  EXPECT_LE(d.size(), 100u);
  EXPECT_GE(d.size(), 90u);
  for (size_t i = 1; i < d.size(); ++i) EXPECT_LT(d[i - 1].step, d[i].step);
  const auto has = [&](int64_t step) {
    return std::any_of(d.begin(), d.end(), [&](const SamplePoint& p) { return p.step == step; });
  };
  EXPECT_TRUE(has(501));  // the spike and the dip stay visible
  EXPECT_TRUE(has(732));
  double lo = 1e9, hi = -1e9;
  for (const auto& p : d) lo = std::min(lo, p.value), hi = std::max(hi, p.value);
  EXPECT_EQ(lo, -3);
  EXPECT_EQ(hi, 5000);
}

TEST(RunSeries, DecimationNeverReturnsMoreThanTheBound) {
  for (int n : {1, 9, 10, 11, 99, 1000, 1001, 4097})
    for (size_t max : {10u, 11u, 100u, 2000u}) {
      const auto d = DecimateMinMax(Points(n, [](int i) { return std::sin(i); }), max);
      EXPECT_LE(d.size(), std::min<size_t>(max, static_cast<size_t>(n))) << n << " " << max;
      if (static_cast<size_t>(n) <= max) {
        EXPECT_EQ(d.size(), static_cast<size_t>(n));
      }
    }
}

TEST(RunSeries, AFlatBucketKeepsOnePoint) {
  const auto d = DecimateMinMax(Points(100, [](int) { return 7.0; }), 10);
  EXPECT_EQ(d.size(), 5u);  // 5 buckets, min == max in each
  EXPECT_EQ(d.front().step, 1);
}

TEST(RunSeries, TheWindowAndMedianAreTheSummarysOwn) {
  std::map<std::string, std::vector<StepValue>> series = {{"sps", RampedRun(200, 7)}};
  const SteadyState want = AnalyzeRun(series["sps"], 5, Better::kHigher);
  auto got = BuildRunSeries(series, Launch(5, {"sps"}), "", 2000);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 1u);
  const MetricSeries& m = (*got)[0];
  EXPECT_EQ(m.metric, "sps");
  EXPECT_EQ(m.samples, 200);
  EXPECT_EQ(m.points_total, 200);
  EXPECT_EQ(m.points.size(), 200u);
  EXPECT_EQ(m.analysis.stats.median, want.stats.median);
  EXPECT_EQ(m.analysis.steady, want.steady);
  EXPECT_GT(want.detected_warmup, 0);
  ASSERT_TRUE(m.steady_from && m.steady_to && m.warmup_end);
  EXPECT_EQ(*m.steady_from, want.steady_from_step);
  EXPECT_EQ(*m.steady_to, 200);
  EXPECT_EQ(*m.warmup_end, want.steady_from_step - 1);
  EXPECT_EQ(m.declared_warmup_steps, 5);
  for (const auto& p : m.points)
    EXPECT_EQ(p.phase == SamplePhase::kWarmup, p.step < want.steady_from_step) << p.step;
}

TEST(RunSeries, NonFiniteSamplesAndSkippedStepsAreMarkedAndLeftOut) {
  auto sps = RampedRun(120, 8);
  sps[59].value = std::nan("");                             // step 60
  sps[79].value = std::numeric_limits<double>::infinity();  // step 80
  sps[89].value = 10;                                       // step 90: a checkpoint, marked
  std::map<std::string, std::vector<StepValue>> series = {
      {"sps", sps}, {"loss", {{90, 2.0}, {91, 1.9}}}, {"skip:checkpoint", {{90, 1}}}};
  auto got = BuildRunSeries(series, Launch(5, {"sps", "loss"}), "sps", 2000);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 1u);  // only the metric asked for
  const MetricSeries& m = (*got)[0];
  EXPECT_EQ(m.samples, 120);
  EXPECT_EQ(m.points_total, 118);  // every finite sample, the checkpoint's too
  ASSERT_EQ(m.skipped.size(), 3u);
  EXPECT_EQ(m.skipped_total, 3);
  EXPECT_EQ(m.skipped[0].step, 60);
  EXPECT_TRUE(std::isnan(m.skipped[0].value));
  EXPECT_FALSE(m.skipped[0].skip_step);
  EXPECT_EQ(m.skipped[1].step, 80);
  EXPECT_EQ(m.skipped[2].step, 90);
  EXPECT_TRUE(m.skipped[2].skip_step);
  EXPECT_EQ(m.skipped[2].tag, "checkpoint");
  const auto at90 = std::find_if(m.points.begin(), m.points.end(),
                                 [](const SamplePoint& p) { return p.step == 90; });
  ASSERT_NE(at90, m.points.end());
  EXPECT_EQ(at90->phase, SamplePhase::kSkipped);
  // the median is the summary's: without the checkpoint's step and the NaN/Inf samples
  auto summary = series;
  DropSkippedSteps(&summary);
  const SteadyState want = AnalyzeRun(summary["sps"], 5, Better::kHigher);
  EXPECT_EQ(m.analysis.stats.median, want.stats.median);
  EXPECT_EQ(m.analysis.steady, want.steady);
  EXPECT_EQ(m.analysis.nonfinite, 2);
}

TEST(RunSeries, OutliersAreMarkedAndCounted) {
  auto sps = RampedRun(150, 9);
  sps[100].value = 20;  // a stall inside the window
  auto got = BuildRunSeries({{"sps", sps}}, Launch(5, {"sps"}), "", 2000);
  ASSERT_TRUE(got.ok());
  const MetricSeries& m = (*got)[0];
  ASSERT_EQ(m.outliers.size(), 1u);
  EXPECT_EQ(m.outliers_total, 1);
  EXPECT_EQ(m.outliers[0].step, 101);
  EXPECT_EQ(m.outliers[0].phase, SamplePhase::kOutlier);
  EXPECT_TRUE(m.skipped.empty());  // counted, not left out
  EXPECT_EQ(m.analysis.outliers, 1);
}

TEST(RunSeries, AMillionSamplesAreBoundedAndSayFromHowMany) {
  std::vector<StepValue> big;
  big.reserve(1000000);
  for (int i = 1; i <= 1000000; ++i) big.push_back({i, i % 1000 == 0 ? 1.0 : 100.0});
  auto got = BuildRunSeries({{"sps", std::move(big)}}, Launch(0, {"sps"}), "", 2000);
  ASSERT_TRUE(got.ok());
  const MetricSeries& m = (*got)[0];
  EXPECT_EQ(m.points_total, 1000000);
  EXPECT_LE(m.points.size(), 2000u);
  EXPECT_EQ(m.outliers_total, 0);  // MAD 0: no outlier rule
  bool dip = false;
  for (const auto& p : m.points) dip |= p.value == 1.0;
  EXPECT_TRUE(dip);  // the dips survive decimation
}

TEST(RunSeries, ManySkippedSamplesAreThinnedToTheBound) {
  std::vector<StepValue> nans;
  for (int i = 1; i <= 500; ++i) nans.push_back({i, std::nan("")});
  auto got = BuildRunSeries({{"sps", nans}}, Launch(0, {"sps"}), "", 10);
  ASSERT_TRUE(got.ok());
  const MetricSeries& m = (*got)[0];
  EXPECT_EQ(m.skipped_total, 500);
  EXPECT_EQ(m.skipped.size(), 10u);
  EXPECT_EQ(m.skipped.front().step, 1);
  EXPECT_EQ(m.points_total, 0);
  EXPECT_FALSE(m.steady_from.has_value());  // no window: no finite sample
  EXPECT_FALSE(m.warmup_end.has_value());
}

TEST(RunSeries, AMetricWithoutSamplesHasNoWindow) {
  auto got = BuildRunSeries({{"sps", {}}}, Launch(5, {"sps"}), "", 2000);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].samples, 0);
  EXPECT_FALSE((*got)[0].steady_from.has_value());
  EXPECT_EQ((*got)[0].analysis.steady, 0);
}

TEST(RunSeries, AnUnknownMetricIsRefusedNamingTheRunsMetrics) {
  auto got = BuildRunSeries({{"sps", {{1, 1}}}, {"loss", {}}, {"skip:eval", {{1, 1}}}},
                            Launch(0, {"sps", "loss"}), "spd", 2000);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("metric: \"spd\""));
  EXPECT_THAT(got.status().message(), HasSubstr("loss, sps"));
}

TEST(RunSeries, MaxPointsOutsideItsRangeIsRefusedNamingTheFieldValueAndRange) {
  EXPECT_EQ(*ResolveMaxPoints(0), kDefaultMaxPoints);
  EXPECT_EQ(*ResolveMaxPoints(10), 10);
  EXPECT_EQ(*ResolveMaxPoints(100000), 100000);
  for (int bad : {-1, 9, 100001}) {
    auto r = ResolveMaxPoints(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("max_points: " + std::to_string(bad)));
    EXPECT_THAT(r.status().message(), HasSubstr("10..100000"));
  }
}

}  // namespace
}  // namespace tunectl

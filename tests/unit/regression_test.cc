#include "core/regression.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/changepoint.h"
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
  // Past the statistical bound of a very steady history but less worse than the minimum effect.
  std::vector<double> steady = {100, 100.1, 99.9, 100, 100.05, 99.95};
  EXPECT_TRUE(CheckNewRun(steady, 98.5, Better::kHigher).regression);
  auto small = CheckNewRun(steady, 98.5, Better::kHigher, 0.03);
  EXPECT_FALSE(small.regression);
  EXPECT_NEAR(small.bound, 97, 1e-3);  // the bound shown is the one that applies
  EXPECT_TRUE(CheckNewRun(steady, 96.5, Better::kHigher, 0.03).regression);
}

// A rate whose history is very noisy: on the raw scale the prediction bound went below zero
// (a "regression past -430 tokens/s"); on the log scale it is a positive fraction of the level.
TEST(NewRunCheck, TheBoundOfAPositiveMetricIsNeverNegative) {
  const std::vector<double> noisy = {900, 3000, 1200, 200, 2500};
  const NewRunCheck c = CheckNewRun(noisy, 150, Better::kHigher);
  EXPECT_GT(c.bound, 0);
  EXPECT_LT(c.bound, c.level);
  EXPECT_NEAR(c.level,
              std::exp((std::log(900.0) + std::log(3000.0) + std::log(1200.0) + std::log(200.0) +
                        std::log(2500.0)) /
                       5),
              1e-9);
  // A time (lower is better): the bound lies above the level.
  const NewRunCheck t = CheckNewRun({10, 11, 9, 10.5}, 30, Better::kLower);
  EXPECT_GT(t.bound, t.level);
  EXPECT_TRUE(t.regression);
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

MetricSpec Throughput() {
  MetricSpec m;
  m.name = "sps";
  m.better = Better::kHigher;
  m.min_effect = 0.03;
  return m;
}

TEST(NewConfirmedRegressions, AStepIsConfirmedOnceItHoldsAndThenNotAgain) {
  const auto x = Series({{40, 100}, {40, 90}}, 0.01, 21);
  const MetricSpec m = Throughput();
  std::vector<size_t> recorded;
  size_t confirmed_at = 0;
  for (size_t n = 2; n <= x.size(); ++n) {
    for (const auto& c : NewConfirmedRegressions(
             std::vector<double>(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n)), m,
             recorded)) {
      EXPECT_EQ(c.index, 40u);
      EXPECT_LT(c.after, c.before);
      if (recorded.empty()) confirmed_at = n;
      recorded.push_back(c.index);
    }
  }
  ASSERT_EQ(recorded.size(), 1u);     // once, although every later run sees it again
  EXPECT_GE(confirmed_at, 40u + 6);   // at least min_after runs at the new level …
  EXPECT_LE(confirmed_at, 40u + 12);  // … and not much later
}

TEST(NewConfirmedRegressions, TwoOutliersAmongTheNewestRunsAreNotARegression) {
  auto x = Series({{40, 100}}, 0.01, 22);
  x.push_back(80);
  x.push_back(80);
  for (int i = 0; i < 6; ++i) x.push_back(100);
  EXPECT_TRUE(NewConfirmedRegressions(x, Throughput(), {}).empty());
}

TEST(NewConfirmedRegressions, AFasterLevelAndARecordedRegressionAreNotNew) {
  const auto faster = Series({{40, 100}, {20, 110}}, 0.01, 23);
  EXPECT_TRUE(NewConfirmedRegressions(faster, Throughput(), {}).empty());
  const auto slower = Series({{40, 100}, {20, 90}}, 0.01, 24);
  ASSERT_EQ(NewConfirmedRegressions(slower, Throughput(), {}).size(), 1u);
  EXPECT_TRUE(NewConfirmedRegressions(slower, Throughput(), {38}).empty());   // moved by 2
  EXPECT_EQ(NewConfirmedRegressions(slower, Throughput(), {20}).size(), 1u);  // another one
}

// What the watch records as the series grows run by run: (series length when recorded, first
// bad run). `tail` = 0 replays the full rule over the whole series; otherwise the incremental
// rule over the newest `tail` points, as the store hands it (the recorded ones within them).
struct Recorded {
  size_t at = 0, index = 0;
  bool operator==(const Recorded& o) const { return at == o.at && index == o.index; }
};
std::vector<Recorded> Replay(const std::vector<double>& x, const ConfirmOptions& o, bool tail) {
  std::vector<Recorded> out;
  std::vector<size_t> recorded;
  for (size_t n = 2; n <= x.size(); ++n) {
    const size_t from = tail && n > o.tail ? n - o.tail : 0;
    const std::vector<double> seen(x.begin() + static_cast<std::ptrdiff_t>(from),
                                   x.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<ChangePoint> found;
    if (tail) {
      std::vector<size_t> in_tail;
      for (size_t r : recorded)
        if (r >= from) in_tail.push_back(r - from);
      found = NewConfirmedRegressionsInTail(seen, from == 0, Throughput(), in_tail, o);
    } else {
      found = NewConfirmedRegressions(seen, Throughput(), recorded, o);
    }
    for (const auto& c : found) {
      recorded.push_back(c.index + from);
      out.push_back({n, c.index + from});
    }
  }
  return out;
}

std::string Describe(const std::vector<Recorded>& r) {
  std::string s;
  for (const auto& x : r) s += " run " + std::to_string(x.index) + " at " + std::to_string(x.at);
  return s.empty() ? " none" : s;
}

TEST(NewConfirmedRegressionsInTail, WithinTheTailItIsTheFullRule) {
  const auto x = Series({{40, 100}, {40, 90}}, 0.01, 21);
  const ConfirmOptions o;
  const auto full = Replay(x, o, false);
  ASSERT_EQ(full.size(), 1u);
  EXPECT_EQ(Replay(x, o, true), full);
}

// The equivalence the watch relies on: on long simulated series (no change, steps, two steps,
// noise, slow nodes) the incremental rule records the same regressions, at the same first bad
// runs and after the same runs, as the full analysis of the whole series. A tail of 100 (two
// windows) keeps the full replays quick here; bench/watch.cc replays the default tail of 200 on
// long series, many per scenario, and counts any difference.
TEST(NewConfirmedRegressionsInTail, RecordsWhatTheFullRuleRecordsOnLongSeries) {
  ConfirmOptions o;
  o.tail = 100;
  struct Case {
    std::vector<std::pair<int, double>> levels;
    double noise;
    bool slow_nodes;  // every 13th run 15 % low, as a slow node gives
  };
  const std::vector<Case> cases = {
      {{{170, 100}}, 0.02, false},                      // no change
      {{{170, 100}}, 0.02, true},                       // no change, slow nodes
      {{{120, 100}, {50, 90}}, 0.02, false},            // a step beyond the first tail
      {{{60, 100}, {70, 92}, {40, 84}}, 0.015, false},  // two steps
      {{{145, 100}, {25, 94}}, 0.01, false},            // a small step near the end
      {{{70, 100}, {60, 108}, {40, 96}}, 0.02, true},   // faster, then slower
  };
  int recorded = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    auto x = Series(cases[k].levels, cases[k].noise, 100 + k);
    if (cases[k].slow_nodes)
      for (size_t i = 7; i < x.size(); i += 13) x[i] *= 0.85;
    const auto full = Replay(x, o, false);
    const auto tail = Replay(x, o, true);
    EXPECT_EQ(tail, full) << "case " << k << ": full" << Describe(full) << "; tail"
                          << Describe(tail);
    for (const auto& r : full) recorded += r.at > o.tail;
  }
  EXPECT_GE(recorded, 4);  // the cases do confirm steps where only the tail is analysed
}

// The incremental answer is the full recomputation over the window it covers: on a series longer
// than the tail, what NewConfirmedRegressionsInTail confirms is exactly what
// NewConfirmedRegressions confirms on the newest `tail` points alone, past their first `margin`
// (the context), at the same first bad runs with the same levels and p; with regressions already
// recorded in the window, the same holds for what is new. Series without a change confirm nothing
// either way; series with one in the window confirm it (so the comparison is not between two empty
// answers).
TEST(NewConfirmedRegressionsInTail, EqualsTheFullRecomputationOnTheWindowItCovers) {
  const ConfirmOptions o;  // the watch's: a tail of 200, a margin of 25
  struct Case {
    std::vector<std::pair<int, double>> levels;
    double noise;
    size_t expect;  // regressions the full rule confirms in the window past the margin
  };
  const std::vector<Case> cases = {
      {{{900, 100}}, 0.02, 0},                        // no change in 900 runs
      {{{400, 100}, {500, 112}}, 0.02, 0},            // faster, long ago: nothing to confirm
      {{{820, 100}, {80, 90}}, 0.01, 1},              // slower 80 runs ago
      {{{760, 100}, {70, 92}, {70, 84}}, 0.01, 2},    // two steps in the window
      {{{300, 100}, {300, 90}, {300, 100}}, 0.02, 0}  // a step long before the window
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto x = Series(cases[k].levels, cases[k].noise, 500 + k);
    ASSERT_GT(x.size(), o.tail);
    const std::vector<double> window(x.end() - static_cast<std::ptrdiff_t>(o.tail), x.end());
    std::vector<ChangePoint> full;
    for (const ChangePoint& c : NewConfirmedRegressions(window, Throughput(), {}, o))
      if (c.index >= o.margin) full.push_back(c);
    const auto inc = NewConfirmedRegressionsInTail(window, /*whole=*/false, Throughput(), {}, o);
    ASSERT_EQ(inc.size(), full.size()) << "case " << k;
    EXPECT_EQ(full.size(), cases[k].expect) << "case " << k;
    for (size_t i = 0; i < inc.size(); ++i) {
      EXPECT_EQ(inc[i].index, full[i].index) << "case " << k;
      EXPECT_DOUBLE_EQ(inc[i].before, full[i].before) << "case " << k;
      EXPECT_DOUBLE_EQ(inc[i].after, full[i].after) << "case " << k;
      EXPECT_DOUBLE_EQ(inc[i].p, full[i].p) << "case " << k;
    }
    // Once recorded, a regression in the window is not new to either.
    std::vector<size_t> recorded;
    for (const ChangePoint& c : full) recorded.push_back(c.index);
    EXPECT_TRUE(NewConfirmedRegressionsInTail(window, false, Throughput(), recorded, o).empty());
    EXPECT_TRUE(NewConfirmedRegressions(window, Throughput(), recorded, o).empty());
  }
}

// The tail's oldest runs are context: when the tail starts just before a step, its first window
// sees a few runs of the old level and then the new one. The full rule on those same points alone
// would call that edge a regression; the incremental rule, told that older points exist, does not.
TEST(NewConfirmedRegressionsInTail, AStepJustBeforeTheTailIsAnEdgeNotANewRegression) {
  const auto x = Series({{7, 100}, {193, 85}}, 0.005, 31);
  EXPECT_TRUE(NewConfirmedRegressionsInTail(x, /*whole=*/false, Throughput(), {}).empty());
  ASSERT_EQ(NewConfirmedRegressionsInTail(x, /*whole=*/true, Throughput(), {}).size(), 1u);
}

WorkloadSpec StabilitySpec() {
  auto spec = ParseWorkloadSpec(R"(
name: w
command: [train]
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
  loss: {json: loss, better: lower, role: guardrail}
  mem_gb: {pattern: 'mem: ([0-9.]+)', better: lower}
)");
  EXPECT_TRUE(spec.ok());
  return *spec;
}

std::vector<StepValue> Steps(const std::vector<double>& v) {
  std::vector<StepValue> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back({static_cast<int64_t>(i) + 1, v[i]});
  return out;
}

TEST(CheckStabilityRun, ASlowdownOfThePrimaryMetricIsAFinding) {
  auto sps = Series({{40, 100}, {40, 80}}, 0.01, 11);
  auto loss = Series({{80, 1}}, 0.01, 12);
  auto f = CheckStabilityRun(
      StabilitySpec(), {"sps", "loss"},
      {AnalyzeRun(Steps(sps), 0, Better::kHigher), AnalyzeRun(Steps(loss), 0, Better::kLower)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].metric, "sps");
  EXPECT_NE(f[0].message.find("degraded part-way"), std::string::npos) << f[0].message;
}

TEST(CheckStabilityRun, AFallingLossIsNotAFindingButMemoryCreepIs) {
  std::vector<double> loss, mem;
  for (int i = 0; i < 80; ++i) loss.push_back(2.0 * std::exp(-i / 20.0) + 0.5);
  mem = Series({{40, 10}, {40, 12}}, 0.005, 13);
  auto sps = Series({{80, 100}}, 0.01, 14);
  auto f = CheckStabilityRun(
      StabilitySpec(), {"loss", "mem_gb", "sps"},
      {AnalyzeRun(Steps(loss), 0, Better::kLower), AnalyzeRun(Steps(mem), 0, Better::kLower),
       AnalyzeRun(Steps(sps), 0, Better::kHigher)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].metric, "mem_gb");
}

TEST(CheckStabilityRun, APrimaryMetricThatNeverSettlesOrNeverAppearsIsAFinding) {
  auto drifting = Series({{16, 100}, {16, 110}, {16, 120}, {16, 130}, {16, 140}}, 0.005, 15);
  auto ramp = CheckStabilityRun(StabilitySpec(), {"sps"},
                                {AnalyzeRun(Steps(drifting), 0, Better::kHigher)});
  ASSERT_EQ(ramp.size(), 1u);
  EXPECT_NE(ramp[0].message.find("never reached a steady state"), std::string::npos)
      << ramp[0].message;
  auto missing = CheckStabilityRun(StabilitySpec(), {"sps"}, {AnalyzeRun({}, 0, Better::kHigher)});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].message.find("never reported"), std::string::npos);
}

TEST(DescribeChange, NamesLevelsChangeAndFirstRun) {
  ChangePoint c;
  c.before = 2400;
  c.after = 1850;
  EXPECT_EQ(DescribeChange("samples_per_s", c, "run 42"),
            "samples_per_s went from 2400 to 1850 (-22.9%) starting with run 42");
}

}  // namespace
}  // namespace tunectl

#include "core/runs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

WorkloadSpec Spec() {
  auto s = ParseWorkloadSpec(R"(
name: demo
command: [train]
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
  loss: {json: loss, better: lower, role: guardrail}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

RunFacts Fact(int64_t id, double sps, bool usable = true, const std::string& arm = "",
              int idx = 1) {
  RunFacts r;
  r.id = id;
  r.state = RunState::kSucceeded;
  r.arm = arm;
  r.idx = idx;
  r.duration_s = 10.0 * static_cast<double>(id);
  r.metrics = {{"sps", sps, usable, 0, usable ? "" : "slowdown: the last segment is 9% worse"},
               {"loss", 2.0, true, 0, ""}};
  return r;
}

TEST(RunOutcome, CleanExitSucceeds) {
  RunReport r;
  r.batches_sent = r.batches_stored = 3;
  const RunOutcome o = DecideRunOutcome(r);
  EXPECT_FALSE(o.requeue);
  EXPECT_EQ(o.state, RunState::kSucceeded);
  EXPECT_EQ(o.reason, "");
}

TEST(RunOutcome, NonZeroExitOrSignalFailsWithWhy) {
  RunReport r;
  r.exit_code = 3;
  EXPECT_EQ(DecideRunOutcome(r).state, RunState::kFailed);
  EXPECT_EQ(DecideRunOutcome(r).reason, "exit code 3");
  r.exit_code = 0;
  r.signal = 9;
  EXPECT_EQ(DecideRunOutcome(r).reason, "killed by signal 9");
  r.reason = "timeout";
  EXPECT_EQ(DecideRunOutcome(r).reason, "timeout");
}

TEST(RunOutcome, StabilityRunStoppedAtItsDurationSucceeds) {
  RunReport r;
  r.signal = 15;
  r.duration_reached = true;
  EXPECT_EQ(DecideRunOutcome(r).state, RunState::kSucceeded);
}

TEST(RunOutcome, CancelledAtWindowEndIsRequeuedNotFinished) {
  RunReport r;
  r.reason = "cancelled";
  EXPECT_EQ(DecideRunOutcome(r).state, RunState::kCancelled);
  r.window_cancel = true;
  EXPECT_TRUE(DecideRunOutcome(r).requeue);
}

TEST(RunOutcome, MissingMetricBatchesAreNamed) {
  RunReport r;
  r.batches_sent = 4;
  r.batches_stored = 3;
  EXPECT_THAT(DecideRunOutcome(r).reason, HasSubstr("agent sent 4 metric batches, server has 3"));
}

TEST(RetryPolicy, RequeuesWhileAttemptsAreLeftThenLoses) {
  EXPECT_TRUE(DecideRetry(1, 3, "agent went silent").requeue);
  EXPECT_EQ(DecideRetry(2, 3, "x").reason, "attempt 2 x");
  const RetryDecision last = DecideRetry(3, 3, "agent went silent");
  EXPECT_FALSE(last.requeue);
  EXPECT_EQ(last.reason, "lost after 3 attempts: agent went silent");
}

TEST(WhichRunsCount, OnlySucceededRunsWithAUsablePrimaryValue) {
  const WorkloadSpec spec = Spec();
  EXPECT_TRUE(UseOf(spec, Fact(1, 100)).counts);
  RunUse unusable = UseOf(spec, Fact(2, 100, false));
  EXPECT_FALSE(unusable.counts);
  EXPECT_TRUE(unusable.excluded);
  EXPECT_THAT(unusable.why_not, HasSubstr("run 2: slowdown"));
  RunFacts no_value = Fact(3, 100);
  no_value.metrics[0].median.reset();
  EXPECT_THAT(UseOf(spec, no_value).why_not, HasSubstr("no sps value"));
  RunFacts failed = Fact(4, 100);
  failed.state = RunState::kFailed;
  failed.reason = "exit code 1";
  EXPECT_FALSE(UseOf(spec, failed).counts);
  EXPECT_FALSE(UseOf(spec, failed).excluded);
}

// The same unusable run is left out of a baseline's summary, of the experiment's arms (and so of
// a freeze's measured level) and of the series: one rule.
TEST(WhichRunsCount, OneUnusableRunIsLeftOutOfBaselineArmsAndSeriesAlike) {
  const WorkloadSpec spec = Spec();
  const RunFacts unusable = Fact(2, 50, false, "variant", 2);
  const std::vector<RunFacts> baseline = {Fact(1, 100), unusable, Fact(3, 102)};
  const auto summary = SummarizeRuns(spec, baseline);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0].metric, "sps");
  EXPECT_EQ(summary[0].stats.n, 2);
  EXPECT_DOUBLE_EQ(summary[0].stats.median, 101);
  EXPECT_EQ(summary[1].stats.n, 2);  // the loss of the unusable run is left out too

  const std::vector<RunFacts> experiment = {Fact(1, 100, true, "control", 1), unusable,
                                            Fact(3, 101, true, "control", 4),
                                            Fact(4, 110, true, "variant", 3)};
  const Arms arms = BuildArms(spec, experiment);
  EXPECT_THAT(arms.compared_variant, ElementsAre(4));
  EXPECT_THAT(arms.variant.values.at("sps"), ElementsAre(110));
  EXPECT_THAT(arms.variant.excluded, ElementsAre(HasSubstr("run 2: slowdown")));
  EXPECT_EQ(arms.variant.runs, 2);

  EXPECT_FALSE(UseOf(spec, unusable).counts);         // what the series keeps
  EXPECT_EQ(ExpectedRunSeconds(spec, baseline), 20);  // runs 1 and 3: 10 s and 30 s
}

TEST(Arms, PairsComeFromTheAbbaPositions) {
  const WorkloadSpec spec = Spec();
  const Arms arms =
      BuildArms(spec, {Fact(1, 100, true, "control", 1), Fact(2, 110, true, "variant", 2),
                       Fact(3, 111, true, "variant", 3), Fact(4, 101, true, "control", 4)});
  EXPECT_THAT(arms.control.pairs.at("sps"), ElementsAre(0, 1));
  EXPECT_THAT(arms.variant.pairs.at("sps"), ElementsAre(0, 1));
}

TEST(Arms, FailedRunsCountAgainstTheirArmAndNanGuardrailsFailTheVariant) {
  const WorkloadSpec spec = Spec();
  RunFacts crashed = Fact(1, 0, true, "variant", 1);
  crashed.state = RunState::kFailed;
  crashed.reason = "exit code 1 (CUDA out of memory)";
  RunFacts nan = Fact(2, 110, true, "variant", 2);
  nan.metrics[1].nonfinite = 3;
  const Arms arms = BuildArms(spec, {crashed, nan});
  EXPECT_EQ(arms.variant.failed_runs, 2);
  EXPECT_THAT(arms.variant.failures,
              ElementsAre(HasSubstr("CUDA out of memory"), HasSubstr("3 non-finite loss")));
}

TEST(BaselineOutcome, WaitsForActiveRunsThenCompletesOrFails) {
  RunFacts active = Fact(1, 100);
  active.state = RunState::kRunning;
  EXPECT_FALSE(BaselineOutcome({active, Fact(2, 100)}).has_value());
  RunFacts failed = Fact(3, 100);
  failed.state = RunState::kFailed;
  EXPECT_EQ(BaselineOutcome({failed, Fact(2, 100)}), BaselineState::kCompleted);
  EXPECT_EQ(BaselineOutcome({failed}), BaselineState::kFailed);
}

TEST(States, NamesRoundTripAndActiveStatesBuildTheSqlList) {
  for (RunState s : {RunState::kQueued, RunState::kLost, RunState::kSucceeded})
    EXPECT_EQ(ParseRunState(Name(s)), s);
  EXPECT_EQ(ParseExperimentState("measured"), ExperimentState::kMeasured);
  EXPECT_FALSE(ParseDecision("better").has_value());
  EXPECT_EQ(SqlList(kActiveRunStates), "('queued','assigned','running')");
  EXPECT_TRUE(IsActive(RunState::kAssigned));
  EXPECT_TRUE(IsTerminal(RunState::kCancelled));
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(WhichRunsCount, TheVerdictAndAFreezeDropTheSameFarRun) {
  MetricSpec m;
  m.name = "sps";
  m.min_effect = 0.03;
  const std::vector<double> six = {100, 101, 99, 100.5, 99.5, 70};  // one slow node
  EXPECT_EQ(ComparedRunValues(m, six), std::vector<double>({100, 101, 99, 100.5, 99.5}));
  const std::vector<double> five = {100, 101, 99, 100.5, 70};  // too few to call one far
  EXPECT_EQ(ComparedRunValues(m, five), five);
}

}  // namespace
}  // namespace tunectl

#include "core/runs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/changepoint.h"
#include "core/sequential.h"

namespace tunectl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

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
  RunMetricFacts m;
  m.metric = "sps";
  m.median = sps;
  m.usable = usable;
  m.samples = 100;
  m.last_step = 100;
  m.steady_from_step = 10;
  if (!usable) m.warnings = "no steady state: the last stable segment covers 20 of 95 samples";
  RunMetricFacts loss;
  loss.metric = "loss";
  loss.median = 2.0;
  loss.samples = 100;
  r.metrics = {m, loss};
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

TEST(WhichRunsCount, EverySucceededRunWithAPrimaryValueCounts) {
  const WorkloadSpec spec = Spec();
  EXPECT_TRUE(UseOf(spec, Fact(1, 100)).counts);
  RunUse unsteady = UseOf(spec, Fact(2, 100, false));
  EXPECT_TRUE(unsteady.counts);
  EXPECT_FALSE(unsteady.excluded);
  EXPECT_TRUE(unsteady.unsteady);
  EXPECT_THAT(unsteady.note, HasSubstr("run 2: no steady state"));
  RunFacts no_value = Fact(3, 100);
  no_value.metrics[0].median.reset();
  EXPECT_FALSE(UseOf(spec, no_value).counts);
  EXPECT_THAT(UseOf(spec, no_value).why_not, HasSubstr("no sps value"));
  RunFacts failed = Fact(4, 100);
  failed.state = RunState::kFailed;
  failed.reason = "exit code 1";
  EXPECT_FALSE(UseOf(spec, failed).counts);
  EXPECT_FALSE(UseOf(spec, failed).excluded);
}

// The same unsteady run counts in a baseline's summary, in the experiment's arms (and so in a
// freeze's measured level) and in the series: one rule.
TEST(WhichRunsCount, OneUnsteadyRunCountsInBaselineArmsAndSeriesAlike) {
  const WorkloadSpec spec = Spec();
  const RunFacts unsteady = Fact(2, 50, false, "variant", 2);
  const std::vector<RunFacts> baseline = {Fact(1, 100), unsteady, Fact(3, 102)};
  const auto summary = SummarizeRuns(spec, baseline);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0].metric, "sps");
  EXPECT_EQ(summary[0].stats.n, 3);
  EXPECT_DOUBLE_EQ(summary[0].stats.median, 100);
  EXPECT_EQ(summary[1].stats.n, 3);

  const std::vector<RunFacts> experiment = {Fact(1, 100, true, "control", 1), unsteady,
                                            Fact(3, 101, true, "control", 4),
                                            Fact(4, 110, true, "variant", 3)};
  const Arms arms = BuildArms(spec, experiment);
  EXPECT_THAT(arms.compared_variant, ElementsAre(2, 4));
  EXPECT_THAT(arms.variant.values.at("sps"), ElementsAre(50, 110));
  EXPECT_TRUE(arms.variant.excluded.empty());
  EXPECT_THAT(arms.variant.notes, ElementsAre(HasSubstr("run 2: no steady state")));
  EXPECT_EQ(arms.variant.runs, 2);

  EXPECT_TRUE(UseOf(spec, unsteady).counts);  // what the series keeps
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

TEST(Arms, ProgressCountsEachArmsRunsByStateAndTheComparedOnes) {
  const WorkloadSpec spec = Spec();
  RunFacts queued = Fact(5, 0, true, "variant", 5);
  queued.state = RunState::kQueued;
  RunFacts running = Fact(6, 0, true, "control", 6);
  running.state = RunState::kRunning;
  RunFacts lost = Fact(7, 0, true, "control", 7);
  lost.state = RunState::kLost;
  const ExperimentArms a =
      CountArms(spec, {Fact(1, 100, true, "control", 1), Fact(2, 110, false, "variant", 2),
                       Fact(3, 111, true, "variant", 3), queued, running, lost});
  EXPECT_EQ(a.control.succeeded, 1);
  EXPECT_EQ(a.control.compared, 1);
  EXPECT_EQ(a.control.active, 1);
  EXPECT_EQ(a.control.failed, 1);
  EXPECT_EQ(a.variant.succeeded, 2);
  EXPECT_EQ(a.variant.compared, 2);  // run 2 has no steady state: it counts all the same
  EXPECT_EQ(a.variant.queued, 1);
}

TEST(Arms, TheInterimEstimateComesFromFinishedPairsOnlyAndCountsUsablePairs) {
  const WorkloadSpec spec = Spec();
  RunFacts running = Fact(5, 0, true, "control", 5);
  running.state = RunState::kRunning;
  SequentialOptions design;
  design.min_pairs = 4;
  design.max_pairs = 10;
  std::vector<RunFacts> runs = {Fact(1, 100, true, "control", 1), Fact(2, 120, true, "variant", 2),
                                Fact(3, 121, true, "variant", 3), Fact(4, 101, true, "control", 4),
                                running};
  const InterimEstimate early = InterimVerdict(spec, runs, std::nullopt, design);
  const Verdict& v = early.verdict;
  EXPECT_EQ(v.pairs, 2);
  EXPECT_EQ(v.min_pairs, 4);
  ASSERT_FALSE(v.metrics.empty());
  EXPECT_EQ(v.metrics[0].metric, "sps");
  EXPECT_NEAR(v.metrics[0].ratio, 1.2, 0.005);
  EXPECT_EQ(v.metrics[0].n_control, 2);
  EXPECT_LT(v.metrics[0].ci_low, v.metrics[0].ratio);
  EXPECT_GT(v.metrics[0].ci_high, v.metrics[0].ratio);
  EXPECT_EQ(v.metrics[0].decision, "");  // an estimate, never a decision
  EXPECT_THAT(early.ci, HasSubstr("fixed-sample"));
  // From the first look on, the CI is the sequential boundary's, as wide as the decision's.
  for (int k = 6; k <= 9; ++k)
    runs.push_back(Fact(k, k % 4 == 2 || k % 4 == 3 ? 120 + k * 0.1 : 100 + k * 0.1, true,
                        k % 4 == 2 || k % 4 == 3 ? "variant" : "control", k));
  runs[4].state = RunState::kSucceeded;
  runs[4].metrics[0].median = 100.5;
  const InterimEstimate look = InterimVerdict(spec, runs, std::nullopt, design);
  EXPECT_EQ(look.verdict.pairs, 4);
  EXPECT_THAT(look.ci, HasSubstr("sequential boundary"));
  EXPECT_EQ(look.verdict.decision, "");
}

TEST(BaselineOutcome, WaitsForActiveRunsThenCompletesOrFails) {
  RunFacts active = Fact(1, 100);
  active.state = RunState::kRunning;
  const WorkloadSpec spec = Spec();
  EXPECT_FALSE(BaselineOutcome(spec, {active, Fact(2, 100)}).has_value());
  RunFacts failed = Fact(3, 100);
  failed.state = RunState::kFailed;
  failed.reason = "exit code 1";
  EXPECT_EQ(BaselineOutcome(spec, {failed, Fact(2, 100)})->state, BaselineState::kCompleted);
  const auto none = BaselineOutcome(spec, {failed});
  EXPECT_EQ(none->state, BaselineState::kFailed);
  EXPECT_THAT(none->reason, HasSubstr("no run succeeded: run 3 failed (exit code 1)"));
}

TEST(BaselineOutcome, AMetricWithNoValueInAnyRunFailsItNamingTheMetricAndWhy) {
  const WorkloadSpec spec = Spec();
  RunFacts a = Fact(1, 100), b = Fact(2, 101);
  for (RunFacts* r : {&a, &b}) {
    r->metrics[1].median.reset();
    r->metrics[1].samples = 0;
  }
  auto out = BaselineOutcome(spec, {a, b});
  EXPECT_EQ(out->state, BaselineState::kFailed);
  EXPECT_THAT(out->reason, HasSubstr("metric loss has no value in any run: no log line matched"));
  a.metrics[1].samples = b.metrics[1].samples = 5;
  a.metrics[1].nonfinite = b.metrics[1].nonfinite = 5;
  EXPECT_THAT(BaselineOutcome(spec, {a, b})->reason, HasSubstr("were NaN/Inf"));
  // One run with a value is enough.
  EXPECT_EQ(BaselineOutcome(spec, {a, Fact(3, 100)})->state, BaselineState::kCompleted);
}

TEST(BaselineOutcome, RunsWithoutASteadyStateStillCompleteIt) {
  auto out = BaselineOutcome(Spec(), {Fact(1, 100, false), Fact(2, 100, false)});
  EXPECT_EQ(out->state, BaselineState::kCompleted);
}

TEST(FailureCause, NamesOomNcclAndPythonExceptionsFromTheStderrTail) {
  const std::string oom =
      "Traceback (most recent call last):\n  File \"train.py\", line 9\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB "
      "total capacity)\n";
  EXPECT_EQ(FailureCause(oom, 1, 0).key, "OOM");
  EXPECT_THAT(FailureCause(oom, 1, 0).line, HasSubstr("torch.OutOfMemoryError: CUDA out of"));
  EXPECT_EQ(
      FailureCause("[rank3]: Watchdog caught collective operation timeout: WorkNCCL", 1, 0).key,
      "NCCL timeout");
  EXPECT_EQ(FailureCause("Traceback ...\nValueError: bad shape\n", 1, 0).key, "ValueError");
  EXPECT_EQ(FailureCause("", 0, 9).key, "killed (SIGKILL)");
  EXPECT_EQ(FailureCause("nothing useful", 3, 0).key, "exit code 3");
}

TEST(RunOutcome, AFailedRunCarriesItsCause) {
  RunReport r;
  r.exit_code = 1;
  r.stderr_tail = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n";
  const RunOutcome o = DecideRunOutcome(r);
  EXPECT_EQ(o.cause, "OOM");
  EXPECT_THAT(o.reason, HasSubstr("exit code 1 — OOM: RuntimeError: CUDA out of memory"));
}

TEST(WhichRunsCount, ASlowdownCountsWithWhatItDeliveredAndIsNoted) {
  RunFacts r = Fact(1, 80);
  r.metrics[0].usable = false;
  r.metrics[0].slowdown = true;
  r.metrics[0].warnings = "slowdown: the last segment is 20% worse";
  const RunUse u = UseOf(Spec(), r);
  EXPECT_TRUE(u.counts);
  EXPECT_TRUE(u.flagged);
  EXPECT_THAT(u.note, HasSubstr("slowdown"));
  const Arms arms = BuildArms(Spec(), {Fact(2, 100, true, "control", 1), [&] {
                                         RunFacts v = r;
                                         v.arm = "variant";
                                         v.idx = 2;
                                         return v;
                                       }()});
  EXPECT_THAT(arms.variant.values.at("sps"), ElementsAre(80));
  EXPECT_TRUE(arms.variant.excluded.empty());
  EXPECT_THAT(arms.variant.notes, ElementsAre(HasSubstr("slowdown")));
}

TEST(WhichRunsCount, ARunCountsWithItsDeliveredValueNotItsMedian) {
  RunFacts r = Fact(1, 100);
  r.metrics[0].delivered = 91;
  r.metrics[0].pace = 104;
  r.metrics[0].aggregate = kHarmonicMean;
  r.metrics[0].measured_from_step = 11;
  r.metrics[0].last_step = 150;
  const Arms arms = BuildArms(Spec(), {r});
  EXPECT_THAT(arms.control.values.at("sps"), ElementsAre(91));
  EXPECT_THAT(arms.control.pace.at("sps"), ElementsAre(104));
  EXPECT_THAT(arms.control.how.at("sps"),
              ElementsAre("harmonic mean (work over time) of the samples at steps 11..150"));
}

// A guardrail (a loss that keeps falling) is compared at the level the run settled at; a primary
// metric at what the run delivered.
TEST(WhichRunsCount, AGuardrailCountsWithItsLevelAndAPrimaryWithWhatItDelivered) {
  const WorkloadSpec spec = Spec();
  const MetricSpec& loss = *spec.FindMetric("loss");
  RunMetricFacts f;
  f.metric = "loss";
  f.median = 0.71;
  f.delivered = 0.93;  // the mean of a falling loss over the run
  f.aggregate = kArithmeticMean;
  const RunValue g = ValueOf(&loss, f);
  ASSERT_EQ(loss.role, MetricRole::kGuardrail);
  EXPECT_EQ(g.value, 0.71);
  EXPECT_EQ(g.pace, 0.71);
  EXPECT_THAT(g.how, HasSubstr("a guardrail's level"));
  EXPECT_EQ(ValueOf(spec.PrimaryMetric(), f).value, 0.93);
  RunFacts r = Fact(1, 100);
  r.metrics[1] = f;
  EXPECT_THAT(BuildArms(spec, {r}).control.values.at("loss"), ElementsAre(0.71));
}

TEST(AdviseExclusions, RunsTooShortGetTheWarmupAndStepsToSet) {
  const WorkloadSpec spec = Spec();
  std::vector<RunFacts> runs;
  for (int i = 1; i <= 8; ++i) {
    // Control runs 3, 5, 7 never settle; run 1 does, at step 61.
    RunFacts r = Fact(i, 100, i % 2 == 0 || i == 1, i % 2 ? "control" : "variant", i);
    r.metrics[0].steady_from_step = 61;
    runs.push_back(r);
  }
  const auto advice = AdviseExclusions(spec, runs);
  ASSERT_GE(advice.size(), 2u);
  EXPECT_THAT(advice[0], HasSubstr("control: 3 of 4 finished runs"));
  EXPECT_THAT(advice.back(), HasSubstr("set warmup_steps: 60"));
  EXPECT_THAT(advice.back(), HasSubstr("and raise the job's step count to 180"));
  // A warm-up already declared that long is never suggested again.
  WorkloadSpec declared = spec;
  declared.run.warmup_steps = 60;
  EXPECT_THAT(AdviseExclusions(declared, runs).back(), Not(HasSubstr("set warmup_steps")));
  // An arm with no settled run: twice the steps.
  runs[0].metrics[0].usable = false;
  EXPECT_THAT(AdviseExclusions(spec, runs).back(), HasSubstr("raise the job's step count to 200"));
  // A quarter or fewer left out: no advice.
  for (auto& r : runs) r.metrics[0].usable = true;
  runs[1].metrics[0].usable = false;
  EXPECT_TRUE(AdviseExclusions(spec, runs).empty());
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
namespace {}  // namespace
}  // namespace tunectl

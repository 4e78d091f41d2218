#include "core/decisions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/runs.h"
#include "core/sequential.h"
#include "core/tuning_log.h"

namespace tunectl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

WorkloadSpec Spec(int repeats = 5) {
  auto s = ParseWorkloadSpec(R"(
name: demo
command: [train]
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary, min_effect: 0.03}
run: {repeats: )" + std::to_string(repeats) +
                             "}\n");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(ExperimentSizing, DefaultCapIsTwiceTheRepeatsAtLeastTenFirstLookAtFourPairs) {
  EXPECT_EQ(SizeExperiment(0, Spec(5))->max_pairs, 10);
  EXPECT_EQ(SizeExperiment(0, Spec(8))->max_pairs, 16);
  EXPECT_EQ(SizeExperiment(0, Spec(5))->first_pairs, 4);
  EXPECT_EQ(SizeExperiment(4, Spec(5))->first_pairs, 4);
}

TEST(ExperimentSizing, RefusesACapOutOfRange) {
  auto r = SizeExperiment(1, Spec());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--repeats: 1"));
  // Below the first look nothing could be decided: refused, not run to an inconclusive cap.
  auto three = SizeExperiment(3, Spec());
  ASSERT_FALSE(three.ok());
  EXPECT_THAT(three.status().message(), HasSubstr("allowed 4..500"));
  EXPECT_FALSE(SizeExperiment(501, Spec()).ok());
}

TEST(BatchExpansion, OneSingleVariableChangePerValueWithoutDuplicates) {
  auto r = ExpandBatchVary({"num_workers=8,16", "prefetch_factor=4", "num_workers=8"});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(*r, ElementsAre("num_workers=8", "num_workers=16", "prefetch_factor=4"));
}

TEST(BatchExpansion, RefusesMissingNamesAndEmptyValues) {
  EXPECT_THAT(ExpandBatchVary({}).status().message(), HasSubstr("--vary: missing"));
  EXPECT_THAT(ExpandBatchVary({"=4"}).status().message(), HasSubstr("not NAME=VALUE"));
  EXPECT_THAT(ExpandBatchVary({"a=1,,2"}).status().message(), HasSubstr("empty value"));
}

TEST(BatchExpansion, RefusesACommaInTheNameInsteadOfMakingItOneMember) {
  // Found by fuzz/vary_fuzz: "a,b=8" became the batch member "a,b=8", which varies two names.
  auto r = ExpandBatchVary({"micro_batch_size,grad_accum_steps=8"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("names more than one parameter (\"micro_batch_size,grad_accum_steps\")"));
}

Verdict PrimaryVerdict(double control_median) {
  Verdict v;
  v.primary = "sps";
  MetricVerdict m;
  m.metric = "sps";
  m.n_control = 4;
  m.control_median = control_median;
  v.metrics.push_back(m);
  return v;
}

TEST(Drift, ControlsFartherThanMinEffectFromTheBaselineRaiseIt) {
  EXPECT_EQ(DriftNote(PrimaryVerdict(102), Spec(), 100.0, 7), "");
  EXPECT_THAT(DriftNote(PrimaryVerdict(110), Spec(), 100.0, 7),
              HasSubstr("differ from baseline 7 by +10.0%"));
  EXPECT_EQ(DriftNote(PrimaryVerdict(110), Spec(), std::nullopt, 7), "");
}

TEST(BatchCorrection, WaitsWhileAMemberRunsThenAdjustsEveryMember) {
  std::vector<BatchMember> m = {{ExperimentState::kMeasured, "improved", 0.03},
                                {ExperimentState::kRunning, "", 1}};
  EXPECT_FALSE(DecideBatch(m, "holm").has_value());
  m[1] = {ExperimentState::kMeasured, "improved", 0.001};
  auto d = DecideBatch(m, "holm");
  ASSERT_TRUE(d.has_value());
  // Holm: 0.001·2 = 0.002 stays under 0.05; 0.03 → max(0.03, 0.002) = 0.03 stays too.
  EXPECT_EQ((*d)[0].decision, "improved");
  m.push_back({ExperimentState::kMeasured, "unchanged", 0.6});
  m[0].p_value = 0.04;
  d = DecideBatch(m, "holm");
  EXPECT_EQ((*d)[0].decision, "inconclusive");  // 0.04·2 = 0.08 ≥ 0.05
  EXPECT_EQ((*d)[0].unadjusted, "improved");
  EXPECT_THAT((*d)[0].note, HasSubstr("inconclusive after Holm"));
  EXPECT_EQ((*d)[1].decision, "improved");
  EXPECT_EQ((*d)[2].decision, "unchanged");
}

TEST(BatchCorrection, TheAdjustedDecisionIsTheVerdictsDecision) {
  Verdict v = PrimaryVerdict(100);
  v.decision = "improved";
  v.hypothesis = "confirmed";
  BatchDecision d{"inconclusive", "improved", 0.08, "improved alone, inconclusive after Holm"};
  Verdict after = ApplyBatchDecision(v, d, "holm");
  EXPECT_EQ(after.decision, "inconclusive");
  EXPECT_EQ(after.unadjusted_decision, "improved");
  EXPECT_EQ(after.hypothesis, "inconclusive");
  EXPECT_EQ(after.adjusted_p, 0.08);
  auto back = VerdictFromJson(VerdictToJson(after));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->correction, "holm");
  EXPECT_EQ(back->unadjusted_decision, "improved");
  EXPECT_EQ(back->adjusted_p, 0.08);
}

FreezeFacts Decided(const std::string& decision) {
  FreezeFacts f;
  f.experiment = 3;
  f.state = ExperimentState::kDecided;
  f.decision = decision;
  f.workload = "demo";
  f.control_version = f.current_version = 1;
  return f;
}

TEST(FreezePolicy, OnlyImprovedFreezesUnlessForcedWithAReason) {
  EXPECT_TRUE(CheckFreeze(Decided("improved")).ok());
  FreezeFacts f = Decided("inconclusive");
  EXPECT_THAT(CheckFreeze(f).message(), HasSubstr("--force --reason"));
  f.force = true;
  EXPECT_THAT(CheckFreeze(f).message(), HasSubstr("--reason: missing"));
  f.reason = "needed for the release";
  EXPECT_TRUE(CheckFreeze(f).ok());
}

TEST(FreezePolicy, ABrokenGoalGuardrailNeedsForce) {
  FreezeFacts f = Decided("improved");
  f.goal_breaks = {"mfu >= 0.45: the variant's level is 0.41"};
  Status st = CheckFreeze(f);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("breaks a guardrail of"));
  EXPECT_THAT(st.message(), HasSubstr("mfu >= 0.45: the variant's level is 0.41"));
  EXPECT_THAT(st.message(), HasSubstr("--force --reason"));
  f.force = true;
  f.reason = "throughput matters more this quarter";
  EXPECT_TRUE(CheckFreeze(f).ok());
}

TEST(FreezePolicy, RefusesRunningMeasuredFrozenAndStaleExperiments) {
  FreezeFacts f = Decided("improved");
  f.state = ExperimentState::kMeasured;
  f.batch = 2;
  EXPECT_THAT(CheckFreeze(f).message(), HasSubstr("batch 2 is still running"));
  f.state = ExperimentState::kRunning;
  EXPECT_THAT(CheckFreeze(f).message(), HasSubstr("still running"));
  f.state = ExperimentState::kFrozen;
  f.frozen_version = 2;
  EXPECT_THAT(CheckFreeze(f).message(), HasSubstr("already frozen as config v2"));
  f = Decided("improved");
  f.current_version = 2;
  EXPECT_THAT(CheckFreeze(f).message(), HasSubstr("current config is v2"));
}

TEST(StabilityVerdict, FailedRunIsARegressionAndAStableOneIsNot) {
  const WorkloadSpec spec = Spec();
  auto failed = JudgeStabilityRun(spec, 9, 2, RunState::kFailed, "exit code 1", {}, {});
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->message, "stability run 9 of v2: failed (exit code 1)");
  SteadyState steady;
  steady.samples = 100;
  steady.stats.n = 80;
  EXPECT_FALSE(JudgeStabilityRun(spec, 9, 2, RunState::kSucceeded, "", {"sps"}, {steady}));
  SteadyState slowing = steady;
  slowing.slowdown = true;
  auto j = JudgeStabilityRun(spec, 9, 2, RunState::kSucceeded, "", {"sps"}, {slowing});
  ASSERT_TRUE(j);
  EXPECT_THAT(j->message, HasSubstr("sps degraded part-way"));
  EXPECT_EQ(StabilityVerdictName(RunState::kRunning, false), "pending");
  EXPECT_EQ(StabilityVerdictName(RunState::kSucceeded, true), "regression");
  EXPECT_EQ(StabilityVerdictName(RunState::kCancelled, false), "cancelled");
}

// A job that exits by itself before the stability run's duration never settled because it
// stopped, not because it regressed: no finding, and `regress` says it ended early.
TEST(StabilityVerdict, ARunThatEndedEarlyIsNoRegression) {
  const WorkloadSpec spec = Spec();
  RunReport report;
  report.duration_ms = 90'000;  // exit 0 after 30 s, duration not reached
  const RunOutcome o = DecideRunOutcome(report);
  EXPECT_EQ(o.state, RunState::kSucceeded);
  EXPECT_TRUE(EndedEarly(o.reason));
  EXPECT_THAT(o.reason, HasSubstr("before its stability duration of 90 s"));
  EXPECT_THAT(o.reason, HasSubstr("TUNECTL_DURATION_S"));
  SteadyState unsettled;
  unsettled.samples = 30;
  unsettled.stats.n = 25;
  unsettled.no_steady_state = true;
  EXPECT_TRUE(JudgeStabilityRun(spec, 9, 2, RunState::kSucceeded, "", {"sps"}, {unsettled}));
  EXPECT_FALSE(JudgeStabilityRun(spec, 9, 2, RunState::kSucceeded, o.reason, {"sps"}, {unsettled}));
  EXPECT_EQ(StabilityVerdictName(RunState::kSucceeded, false, o.reason), "ended early");
  // Reaching the duration, failing, or not being a stability run at all: no such note.
  report.duration_reached = true;
  EXPECT_EQ(DecideRunOutcome(report).reason, "");
  report.duration_reached = false;
  report.exit_code = 1;
  EXPECT_EQ(DecideRunOutcome(report).state, RunState::kFailed);
  EXPECT_EQ(DecideRunOutcome(RunReport{}).reason, "");
}

TEST(TuningLog, DecidedEntrySaysWhatChangedWhatHappenedAndTheCorrection) {
  DecidedEntryIn in;
  in.experiment = 4;
  in.workload = "demo";
  in.change.from = {{"num_workers", "1"}};
  in.change.to = {{"num_workers", "8"}};
  in.verdict = PrimaryVerdict(100);
  in.verdict.decision = "inconclusive";
  in.verdict.correction = "holm";
  in.verdict.unadjusted_decision = "improved";
  in.verdict.adjusted_p = 0.08;
  in.hypothesis = HypothesisRef{1, "the loader starves", "data_wait high", "sps +10%"};
  in.batch = 2;
  auto j = nlohmann::json::parse(DecidedEntry(in));
  EXPECT_EQ(j["change"], "num_workers 1→8");
  EXPECT_EQ(j["decision"], "inconclusive");
  EXPECT_EQ(j["correction"]["unadjusted_decision"], "improved");
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["primary"]["metric"], "sps");
  EXPECT_EQ(j["hypothesis"]["expected"], "sps +10%");
  // PrimaryVerdict has no estimate: the immutable log records null and "—", never +0.0 %.
  EXPECT_TRUE(j["primary"]["ratio"].is_null());
  EXPECT_TRUE(j["primary"]["ci_low"].is_null());
  EXPECT_TRUE(j["primary"]["p_value"].is_null());
  EXPECT_EQ(j["primary"]["effect"], "—");
  in.verdict.metrics[0].estimated = in.verdict.metrics[0].tested = true;
  in.verdict.metrics[0].ratio = 1.25;
  auto k = nlohmann::json::parse(DecidedEntry(in));
  EXPECT_DOUBLE_EQ(k["primary"]["ratio"].get<double>(), 1.25);
  EXPECT_EQ(k["primary"]["effect"], "+25.0%");
}

TEST(TuningLog, RegressionAndResolvedEntriesNameTheRunAndTheFix) {
  auto r = nlohmann::json::parse(RegressionEntry(
      {5, "change_point", "demo", "sps", "went from 100 to 70", 2, 31, 100.0, 70.0, 0.0001}));
  EXPECT_EQ(r["decision"], "regressed");
  EXPECT_EQ(r["first_bad_run"], 31);
  EXPECT_DOUBLE_EQ(r["primary"]["ratio"].get<double>(), 0.7);
  auto f = nlohmann::json::parse(ResolvedEntry({5, "sps", "node n3 replaced", 31, 2}));
  EXPECT_EQ(f["change"], "regression 5 resolved: node n3 replaced");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

ArmData Arm(const std::vector<double>& v, const std::vector<int>& pairs) {
  ArmData a;
  a.values["sps"] = v;
  a.pairs["sps"] = pairs;
  a.runs = 4;
  return a;
}

TEST(SequentialLook, LooksAreIndexedByUsablePairsAndNeedFourOfThem) {
  const WorkloadSpec spec = Spec();
  SequentialOptions design;
  design.max_pairs = 8;
  ArmData control = Arm({100, 101, 100.5, 99.5}, {0, 1, 2, 3});
  // Two of four variant runs left out: a doubled throughput on two pairs does not stop the look.
  ArmData two = Arm({200, 201}, {0, 1});
  EXPECT_EQ(UsablePairs(spec, control, two), 2);
  EXPECT_FALSE(EvaluateSequential(spec, control, two, std::nullopt, design).stop);
  ArmData three = Arm({200, 201, 199}, {0, 1, 3});
  EXPECT_EQ(UsablePairs(spec, control, three), 3);
  SequentialStep s3 = EvaluateSequential(spec, control, three, std::nullopt, design);
  EXPECT_FALSE(s3.stop);
  EXPECT_EQ(s3.verdict.pairs, 3);
  EXPECT_EQ(s3.verdict.finished_pairs, 4);
  EXPECT_THAT(s3.verdict.metrics[0].note, HasSubstr("3 pair(s); a decision needs 4"));
  ArmData four = Arm({200, 201, 199, 202}, {0, 1, 2, 3});
  SequentialStep s4 = EvaluateSequential(spec, control, four, std::nullopt, design);
  EXPECT_TRUE(s4.stop);
  EXPECT_EQ(s4.verdict.decision, "improved");
  // The boundary is the one calibrated for the pairs compared, with their df.
  EXPECT_DOUBLE_EQ(s4.verdict.metrics[0].critical, Boundary(design, 4));
  EXPECT_EQ(s4.verdict.metrics[0].df, 3);
  design.max_pairs = 4;  // at the cap the look decides whatever is left: too few to call
  SequentialStep cap = EvaluateSequential(spec, control, two, std::nullopt, design);
  EXPECT_TRUE(cap.stop);
  EXPECT_EQ(cap.verdict.decision, "inconclusive");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

EarlierTry Tried(int64_t id, ExperimentState s, const std::string& decision) {
  EarlierTry e;
  e.experiment = id;
  e.state = s;
  e.decision = decision;
  e.effect = decision.empty() ? "" : "+25.3% samples_per_s [+21.0%, +29.8%]";
  e.decided_at = "2026-12-05T10:00:00Z";
  return e;
}

TEST(RepeatedChange, ADecidedChangeIsRefusedWithTheEarlierVerdict) {
  Status st = CheckRepeatedChange({Tried(12, ExperimentState::kDecided, "improved")},
                                  "num_workers=1→2", 3, false, "");
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("num_workers=1→2 was already tested on config "
                                                 "v3: experiment 12 decided improved (+25.3%"));
  EXPECT_THAT(st.message(), ::testing::HasSubstr("--again --reason"));
  EXPECT_EQ(
      CheckRepeatedChange({Tried(12, ExperimentState::kFrozen, "regressed")}, "x", 3, false, "")
          .code(),
      Status::Code::kFailedPrecondition);
}

TEST(RepeatedChange, ARunningOneIsRefusedAndInconclusiveOrCancelledOnesAreNot) {
  EXPECT_THAT(CheckRepeatedChange({Tried(7, ExperimentState::kRunning, "")}, "nw=2", 1, false, "")
                  .message(),
              ::testing::HasSubstr("already being tested by experiment 7"));
  EXPECT_TRUE(CheckRepeatedChange({Tried(7, ExperimentState::kDecided, "inconclusive"),
                                   Tried(8, ExperimentState::kCancelled, "")},
                                  "nw=2", 1, false, "")
                  .ok());
  EXPECT_TRUE(CheckRepeatedChange({}, "nw=2", 1, false, "").ok());
}

TEST(RepeatedChange, AgainNeedsAReasonAndAReasonNeedsAgain) {
  const std::vector<EarlierTry> tried = {Tried(12, ExperimentState::kDecided, "unchanged")};
  EXPECT_TRUE(CheckRepeatedChange(tried, "nw=2", 1, true, "new driver 550").ok());
  EXPECT_THAT(CheckRepeatedChange(tried, "nw=2", 1, true, "").message(),
              ::testing::HasSubstr("--reason: missing"));
  EXPECT_THAT(CheckRepeatedChange({}, "nw=2", 1, false, "why").message(),
              ::testing::HasSubstr("only with --again"));
}

}  // namespace
}  // namespace tunectl

#include "core/experiment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/runs.h"
#include "core/sequential.h"
#include "tests/unit/oracle_vectors.h"

namespace tunectl {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

WorkloadSpec Spec() {
  auto s = ParseWorkloadSpec(R"(
name: w
command: [train, "{mbs}", "{gas}", "{nw}", "{li}", "{prec}"]
params:
  mbs:  {type: int, default: 4, min: 1}
  gas:  {type: int, default: 8, min: 1}
  nw:   {type: int, default: 1, min: 0, max: 64}
  li:   {type: int, default: 1, min: 1}
  prec: {type: enum, values: [fp32, bf16], default: bf16}
coupled: [[mbs, gas]]
metrics:
  sps:  {pattern: 'sps: ([0-9.]+)', better: higher, role: primary, min_effect: 0.03}
  step: {pattern: 'step: ([0-9.]+)', better: lower}
  loss: {json: loss, better: lower, role: guardrail, tolerance: 0.01}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(VaryParser, AcceptsOneParameter) {
  WorkloadSpec s = Spec();
  auto c = ParseVary(s, DefaultParamValues(s), {"nw=8"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->to.at("nw"), "8");
  EXPECT_EQ(c->from.at("nw"), "1");
  EXPECT_FALSE(c->coupled);
  EXPECT_EQ(c->Describe(), "nw 1→8");
}

TEST(VaryParser, RefusesASecondVariableExplainingTheRule) {
  WorkloadSpec s = Spec();
  auto c = ParseVary(s, DefaultParamValues(s), {"nw=8", "li=5"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("single-variable rule"));
  EXPECT_THAT(c.status().message(), HasSubstr("tunectl batch create"));
  EXPECT_THAT(c.status().message(), HasSubstr("coupled"));
}

TEST(VaryParser, CoupledGroupIsOneVariable) {
  WorkloadSpec s = Spec();
  auto c = ParseVary(s, DefaultParamValues(s), {"mbs=8", "gas=4"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->coupled);
  EXPECT_EQ(c->Describe(), "gas 8→4, mbs 4→8 (coupled)");
  EXPECT_EQ(c->Params(), "gas+mbs");
}

TEST(VaryParser, RejectsTwoEquals) {
  WorkloadSpec s = Spec();
  auto c = ParseVary(s, DefaultParamValues(s), {"nw=8=9"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("has two '='"));
}

TEST(VaryParser, RejectsMissingEquals) {
  WorkloadSpec s = Spec();
  EXPECT_THAT(ParseVary(s, DefaultParamValues(s), {"nw"}).status().message(),
              HasSubstr("is not NAME=VALUE"));
  EXPECT_THAT(ParseVary(s, DefaultParamValues(s), {}).status().message(), HasSubstr("missing"));
}

TEST(VaryParser, SuggestsNearestNameForUnknownParameter) {
  WorkloadSpec s = Spec();
  auto c = ParseVary(s, DefaultParamValues(s), {"nww=8"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("\"nww\" is not a parameter of workload w; did you mean \"nw\"?"));
}

TEST(VaryParser, RejectsWrongTypeOutOfRangeAndSameValue) {
  WorkloadSpec s = Spec();
  ParamValues base = DefaultParamValues(s);
  EXPECT_THAT(ParseVary(s, base, {"nw=eight"}).status().message(),
              HasSubstr("\"eight\" is not an integer"));
  EXPECT_THAT(ParseVary(s, base, {"nw=65"}).status().message(),
              HasSubstr("out of range; allowed 0..64"));
  EXPECT_THAT(ParseVary(s, base, {"prec=fp16"}).status().message(),
              HasSubstr("allowed: fp32, bf16"));
  EXPECT_THAT(ParseVary(s, base, {"nw=01"}).status().message(),
              HasSubstr("nw=1 is the baseline's value already"));
  EXPECT_THAT(ParseVary(s, base, {"nw=2", "nw=3"}).status().message(), HasSubstr("given twice"));
}

TEST(ExpectationParser, ParsesDirectionAndSize) {
  WorkloadSpec s = Spec();
  auto e = ParseExpectation(s, "sps +10%");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->metric, "sps");
  EXPECT_EQ(e->direction, 1);
  EXPECT_DOUBLE_EQ(*e->size, 0.10);
  EXPECT_EQ(ParseExpectation(s, "step -5").value().direction, -1);
  EXPECT_EQ(ParseExpectation(s, "loss unchanged").value().direction, 0);
  EXPECT_FALSE(ParseExpectation(s, "sps up").value().size.has_value());
  EXPECT_THAT(ParseExpectation(s, "spss +10%").status().message(),
              HasSubstr("did you mean \"sps\""));
  EXPECT_THAT(ParseExpectation(s, "sps faster").status().message(), HasSubstr("METRIC +N%"));
}

TEST(ExpectationParser, ParsesALevelWithOrWithoutBlanks) {
  WorkloadSpec s = Spec();
  auto e = ParseExpectation(s, "sps >= 300");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->op, ">=");
  EXPECT_DOUBLE_EQ(e->level, 300);
  EXPECT_EQ(e->direction, 1);
  auto tight = ParseExpectation(s, "step<12.5");
  ASSERT_TRUE(tight.ok()) << tight.status().message();
  EXPECT_EQ(tight->op, "<");
  EXPECT_EQ(tight->metric, "step");
  EXPECT_EQ(tight->direction, -1);
  EXPECT_THAT(ParseExpectation(s, "sps >= fast").status().message(),
              HasSubstr("after >= a number is expected"));
  EXPECT_THAT(ParseExpectation(s, "sps = 300").status().message(),
              HasSubstr("METRIC >= X, > X, <= X, < X"));
}

// Every case's numbers and decision were computed independently with scipy
// (tests/oracle/gen_vectors.py).
TEST(Verdict, MetricComparisonsMatchScipyOracle) {
  nlohmann::json cases;
  ASSERT_TRUE(LoadOracleVectors("verdict", &cases));
  ASSERT_GE(cases.size(), 9u);
  for (const auto& c : cases) {
    WorkloadSpec s;
    s.name = "o";
    MetricSpec m;
    m.name = "m";
    m.pattern = "(x)";
    m.better = c["better"] == "higher" ? Better::kHigher : Better::kLower;
    m.role = c["role"] == "guardrail" ? MetricRole::kGuardrail
             : c["role"] == "primary" ? MetricRole::kPrimary
                                      : MetricRole::kObserved;
    m.min_effect = c["min_effect"];
    m.tolerance = c["tolerance"];
    s.metrics = {m};
    ArmData ctl, var;
    ctl.values["m"] = c["control"].get<std::vector<double>>();
    var.values["m"] = c["variant"].get<std::vector<double>>();
    Verdict verdict = ComputeVerdict(s, ctl, var, std::nullopt);
    ASSERT_EQ(verdict.metrics.size(), 1u);
    const auto& mv = verdict.metrics[0];
    const std::string name = c["name"];
    EXPECT_NEAR(mv.ratio, c["ratio"].get<double>(), 1e-10) << name;
    EXPECT_NEAR(mv.ci_low, c["ci_low"].get<double>(), 1e-9) << name;
    EXPECT_NEAR(mv.ci_high, c["ci_high"].get<double>(), 1e-9) << name;
    EXPECT_NEAR(mv.ci90_high, c["ci90_high"].get<double>(), 1e-9) << name;
    EXPECT_NEAR(mv.p_value, c["p"].get<double>(), 1e-8 * std::max(1e-300, c["p"].get<double>()))
        << name;
    EXPECT_EQ(mv.decision, c["decision"]) << name;
    EXPECT_EQ(mv.guardrail, c["guardrail"]) << name;
  }
}

ArmData Arm(std::vector<double> sps, std::vector<double> loss) {
  ArmData a;
  a.values["sps"] = std::move(sps);
  a.values["loss"] = std::move(loss);
  a.runs = static_cast<int>(a.values["sps"].size());
  return a;
}

TEST(Verdict, ImprovedWithGuardrailPassConfirmsHypothesis) {
  WorkloadSpec s = Spec();
  ArmData c = Arm({2400, 2410, 2395, 2405}, {1.377, 1.378, 1.376, 1.377});
  ArmData v = Arm({5500, 5510, 5490, 5520}, {1.377, 1.376, 1.378, 1.377});
  auto e = ParseExpectation(s, "sps +10%");
  Verdict r = ComputeVerdict(s, c, v, *e);
  EXPECT_EQ(r.decision, "improved");
  EXPECT_EQ(r.metrics[2].guardrail, "pass");
  EXPECT_EQ(r.hypothesis, "confirmed");
  EXPECT_THAT(r.hypothesis_note, HasSubstr("larger than expected"));
  EXPECT_EQ(r.metrics[1].decision, "inconclusive");  // no step values at all
  EXPECT_THAT(r.metrics[1].note, HasSubstr("too few runs"));
}

TEST(Verdict, GuardrailFailureVetoesImproved) {
  WorkloadSpec s = Spec();
  ArmData c = Arm({2400, 2410, 2395, 2405}, {1.377, 1.378, 1.376, 1.377});
  ArmData v = Arm({5500, 5510, 5490, 5520}, {1.52, 1.53, 1.51, 1.52});
  Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(r.metrics[0].decision, "improved");
  EXPECT_EQ(r.metrics[2].guardrail, "fail");
  EXPECT_EQ(r.decision, "regressed");
  ASSERT_FALSE(r.reasons.empty());
  EXPECT_THAT(r.reasons[0], HasSubstr("guardrail loss failed"));
}

TEST(Verdict, CrashedVariantVetoesImproved) {
  WorkloadSpec s = Spec();
  ArmData c = Arm({2400, 2410, 2395, 2405}, {1.377, 1.378, 1.376, 1.377});
  ArmData v = Arm({5500, 5510, 5490}, {1.377, 1.376, 1.378});
  v.failed_runs = 1;
  v.failures = {"run 12: exit 1 (CUDA out of memory)"};
  Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(r.metrics[0].decision, "improved");
  EXPECT_NE(r.decision, "improved");
  EXPECT_THAT(r.reasons[0], HasSubstr("CUDA out of memory"));
}

TEST(Verdict, TooFewRunsIsInconclusive) {
  WorkloadSpec s = Spec();
  Verdict r = ComputeVerdict(s, Arm({2400}, {1.3}), Arm({5500, 5400}, {1.3, 1.3}), std::nullopt);
  EXPECT_EQ(r.decision, "inconclusive");
  EXPECT_THAT(r.metrics[0].note, HasSubstr("too few runs"));
}

TEST(Verdict, ALevelIsJudgedOnTheVariantsLevelCi) {
  WorkloadSpec s = Spec();
  ArmData c = Arm({2400, 2410, 2395, 2405}, {1.377, 1.378, 1.376, 1.377});
  ArmData v = Arm({5500, 5510, 5490, 5520}, {1.377, 1.376, 1.378, 1.377});
  Verdict met = ComputeVerdict(s, c, v, *ParseExpectation(s, "sps >= 5000"));
  EXPECT_EQ(met.hypothesis, "confirmed");
  EXPECT_THAT(met.hypothesis_note, HasSubstr("expected >= 5000, the variant's level 55"));
  EXPECT_EQ(ComputeVerdict(s, c, v, *ParseExpectation(s, "sps >= 6000")).hypothesis, "refuted");
  // A level inside the CI: neither.
  const double at = met.metrics[0].control_median * met.metrics[0].ratio;
  Verdict mid = ComputeVerdict(s, c, v, *ParseExpectation(s, "sps >= " + std::to_string(at)));
  EXPECT_EQ(mid.hypothesis, "inconclusive");
  EXPECT_THAT(mid.hypothesis_note, HasSubstr("the CI spans the level"));
}

TEST(Verdict, NoEffectIsNeverImprovedAndRefutesHypothesis) {
  WorkloadSpec s = Spec();
  ArmData c = Arm({2400, 2402, 2398, 2401, 2399}, {1.377, 1.377, 1.377, 1.377, 1.377});
  ArmData v = Arm({2401, 2399, 2400, 2402, 2398}, {1.377, 1.377, 1.377, 1.377, 1.377});
  Verdict r = ComputeVerdict(s, c, v, *ParseExpectation(s, "sps +10%"));
  EXPECT_EQ(r.decision, "unchanged");
  EXPECT_EQ(r.hypothesis, "refuted");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Verdict, PairedComparisonCancelsDriftBetweenPairs) {
  WorkloadSpec s = Spec();
  // a +4 % effect on top of a strong drift across pairs (-3 % per pair)
  ArmData c, v;
  for (int k = 0; k < 6; ++k) {
    const double level = 2400 * (1 - 0.03 * k);
    c.values["sps"].push_back(level * (1 + 0.001 * (k % 2)));
    v.values["sps"].push_back(level * 1.04 * (1 - 0.001 * (k % 3)));
    c.pairs["sps"].push_back(k);
    v.pairs["sps"].push_back(k);
  }
  c.runs = v.runs = 6;
  Verdict paired = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(paired.metrics[0].decision, "improved");
  EXPECT_THAT(paired.metrics[0].note, HasSubstr("paired: 6"));
  c.pairs.clear();
  v.pairs.clear();
  Verdict unpaired = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(unpaired.metrics[0].decision, "inconclusive");  // the drift drowns it
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(BatchAdjustment, HolmKeepsOnlyCallsThatSurviveTheCorrection) {
  auto a = AdjustBatch({"improved", "improved", "unchanged", ""}, {0.001, 0.03, 0.5, 0.01}, "holm");
  // Holm over {0.001, 0.03, 0.5, 1 (undecided)}: 0.004, 0.09, 1, 1
  EXPECT_NEAR(a.adjusted_p[0], 0.004, 1e-12);
  EXPECT_NEAR(a.adjusted_p[1], 0.09, 1e-12);
  EXPECT_EQ(a.decisions[0], "improved");
  EXPECT_EQ(a.decisions[1], "inconclusive (after Holm)");
  EXPECT_EQ(a.decisions[2], "unchanged");
  EXPECT_EQ(a.decisions[3], "");
  auto bh = AdjustBatch({"improved", "improved"}, {0.02, 0.04}, "bh");
  EXPECT_EQ(bh.decisions[1], "improved");  // BH: 0.04 * 2/2
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

ArmData Paired(std::vector<double> sps, int runs = 0) {
  ArmData a;
  for (size_t i = 0; i < sps.size(); ++i) {
    a.values["sps"].push_back(sps[i]);
    a.pairs["sps"].push_back(static_cast<int>(i));
    a.ids["sps"].push_back(static_cast<int64_t>(100 + i));
    a.values["loss"].push_back(2.0 + 0.001 * static_cast<double>(i % 3));
    a.pairs["loss"].push_back(static_cast<int>(i));
  }
  a.runs = runs ? runs : static_cast<int>(sps.size());
  return a;
}

TEST(Verdict, SameFailureCauseTwiceIsRegressedAndStopsAtOnce) {
  WorkloadSpec s = Spec();
  ArmData c = Paired({100, 101});
  ArmData v = Paired({110}, 3);
  v.failed_runs = 2;
  v.failures = {"run 2: exit code 1 — OOM: CUDA out of memory", "run 4: exit code 1 — OOM: …"};
  v.causes = {"OOM", "OOM"};
  SequentialOptions design;
  SequentialStep step = EvaluateSequential(s, c, v, std::nullopt, design);
  EXPECT_TRUE(step.stop);
  EXPECT_EQ(step.verdict.decision, "regressed");
  EXPECT_EQ(step.verdict.stopped, "failed: OOM");
  EXPECT_THAT(step.verdict.reasons[0], HasSubstr("failed: OOM in 2 variant runs"));
  // Two different causes, or one the control shares, are not "the same reason twice".
  v.causes = {"OOM", "NCCL"};
  EXPECT_FALSE(EvaluateSequential(s, c, v, std::nullopt, design).stop);
  v.causes = {"OOM", "OOM"};
  c.failed_runs = 1;
  c.causes = {"OOM"};
  EXPECT_TRUE(EvaluateSequential(s, c, v, std::nullopt, design).verdict.stopped.empty());
}

TEST(Verdict, RunsWithNotesCountAndNoExclusionRateRuleDecides) {
  WorkloadSpec s = Spec();
  // Every pair +5 %; six of the variant's runs had no steady state: they count with their values
  // and are reported, and nothing but the comparison decides.
  ArmData c = Paired({100, 101, 100.5, 99.5, 100.2, 100.1, 99.8, 100.4, 100.3, 99.9});
  ArmData v = Paired({105, 106, 105.5, 104.5, 105.2, 105.1, 104.8, 105.4, 105.3, 104.9});
  for (int i = 0; i < 6; ++i) v.notes.push_back("run " + std::to_string(i) + ": no steady state");
  const Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(r.decision, "improved") << r.metrics[0].note;
  EXPECT_EQ(r.metrics[0].n_variant, 10);
  EXPECT_EQ(r.variant_unusable, 6);
  EXPECT_THAT(r.reasons, Contains(HasSubstr("counted with a note: run 0: no steady state")));
}

TEST(Verdict, AVariantThatLosesTimeInSomeRunsIsNotImprovedOnItsPace) {
  WorkloadSpec s = Spec();
  // The variant's pace is 6 % better in every pair, but half the runs lost a fifth of their
  // time (throttled): what they delivered counts, so the lost part is significantly worse.
  // (five of ten)
  std::vector<double> cv, vv, cp, vp;
  for (int i = 0; i < 10; ++i) {
    const double wobble = 1 + 0.002 * ((i * 7) % 5 - 2);
    cp.push_back(110 * wobble);
    cv.push_back(100 * wobble);
    vp.push_back(110 * 1.06 * wobble);
    vv.push_back(100 * 1.06 * wobble * (i % 2 == 0 ? 0.8 : 1.0));
  }
  ArmData c = Paired(cv), v = Paired(vv);
  c.pace["sps"] = cp;
  v.pace["sps"] = vp;
  const Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  const MetricVerdict& m = r.metrics[0];
  ASSERT_TRUE(m.split);
  EXPECT_NEAR(m.pace.ratio, 1.06, 0.002);
  EXPECT_LT(m.lost.ci_high, 1.0);  // significantly more time lost
  EXPECT_NE(r.decision, "improved") << m.note;
  EXPECT_NE(r.decision, "unchanged");
  // Without the lost time the same pace gain is improved.
  v.values["sps"] = cv;
  for (auto& x : v.values["sps"]) x *= 1.06;
  EXPECT_EQ(ComputeVerdict(s, c, v, std::nullopt).decision, "improved");
}

// The demo's case on a busy node: two loader workers make every run faster, though each run of the
// variant also switches between two levels (more time below its own pace). What was delivered is
// +40 %: improved, whatever the split says about where the time went.
TEST(Verdict, AFasterPaceThatOutweighsMoreLostTimeIsImproved) {
  WorkloadSpec s = Spec();
  std::vector<double> cv, vv, cp, vp;
  for (int i = 0; i < 10; ++i) {
    const double wobble = 1 + 0.01 * ((i * 7) % 5 - 2);
    cp.push_back(2500 * wobble);
    cv.push_back(2400 * wobble);
    vp.push_back(5000 * wobble);
    vv.push_back(2400 * 1.4 * wobble * (1 + 0.01 * (i % 3)));
  }
  ArmData c = Paired(cv), v = Paired(vv);
  c.pace["sps"] = cp;
  v.pace["sps"] = vp;
  const Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  const MetricVerdict& m = r.metrics[0];
  EXPECT_LT(m.lost.ci_high, 1.0);  // significantly more time lost below the pace
  EXPECT_GT(m.ci_low, 1.3);
  EXPECT_EQ(r.decision, "improved") << m.note;
}

TEST(Verdict, FewerPairsThanTwoHaveNoEstimateAndNoFigure) {
  WorkloadSpec s = Spec();
  const Verdict r = ComputeVerdict(s, Paired({2407}), Paired({5086}), std::nullopt);
  const MetricVerdict& m = r.metrics[0];
  EXPECT_FALSE(m.estimated);
  EXPECT_FALSE(m.tested);
  EXPECT_EQ(r.decision, "inconclusive");
  EXPECT_EQ(PrimaryEffect(r), "");
  const std::string json = VerdictToJson(r);
  EXPECT_THAT(json, HasSubstr("\"ratio\":null"));
  EXPECT_THAT(json, HasSubstr("\"ci_low\":null"));
  EXPECT_THAT(json, HasSubstr("\"p_value\":null"));
  auto back = VerdictFromJson(json);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->metrics[0].estimated);
  // Two pairs: an estimate (a fixed-sample CI) but no decision before the first look.
  const Verdict two = ComputeVerdict(s, Paired({2407, 2390}), Paired({5086, 4950}), std::nullopt);
  EXPECT_TRUE(two.metrics[0].estimated);
  EXPECT_GT(two.metrics[0].ratio, 2.0);
}

TEST(Verdict, ATimeCannotFallByMoreThanAHundredPercent) {
  WorkloadSpec s = Spec();
  s.metrics[0].better = Better::kLower;
  const Verdict r = ComputeVerdict(s, Paired({100, 102, 98, 101, 99, 100}),
                                   Paired({2, 3, 2.5, 1.8, 2.2, 2.6}), std::nullopt);
  const MetricVerdict& m = r.metrics[0];
  ASSERT_TRUE(m.estimated);
  EXPECT_GT(m.ci_low, 0);
  EXPECT_LT(m.ratio, 0.05);
  EXPECT_EQ(r.decision, "improved");
}

TEST(Verdict, AnEarlyStopReportsAnEstimateAdjustedDownward) {
  WorkloadSpec s = Spec();
  ArmData c = Paired({100, 101, 100.5, 99.5});
  ArmData v = Paired({106.0, 108.5, 106.2, 107.0});
  SequentialOptions design;
  SequentialStep step = EvaluateSequential(s, c, v, std::nullopt, design);
  ASSERT_TRUE(step.stop);
  const MetricVerdict& m = step.verdict.metrics[0];
  ASSERT_TRUE(m.adjusted);
  EXPECT_LT(m.adj_ratio, m.ratio);  // stopping at the first look selects large estimates
  EXPECT_LE(m.adj_low, m.adj_ratio);
  EXPECT_GE(m.adj_high, m.adj_ratio);
  EXPECT_TRUE(VerdictFromJson(VerdictToJson(step.verdict))->metrics[0].adjusted);
}

TEST(Verdict, AMetricPrintedCoarserThanItsMinEffectIsNotCalled) {
  WorkloadSpec s = Spec();
  s.metrics[0].better = Better::kLower;
  ArmData c = Paired({0.02, 0.02, 0.02, 0.02, 0.02});
  ArmData v = Paired({0.01, 0.01, 0.01, 0.01, 0.01});
  c.resolution["sps"] = v.resolution["sps"] = 0.01;
  Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(r.metrics[0].decision, "inconclusive");
  EXPECT_THAT(r.metrics[0].note, HasSubstr("below the metric's resolution"));
  EXPECT_THAT(r.metrics[0].note, HasSubstr("steps of 0.01"));
  // Without a known resolution, zero spread is still not a call.
  c.resolution.clear();
  v.resolution.clear();
  EXPECT_EQ(ComputeVerdict(s, c, v, std::nullopt).metrics[0].decision, "inconclusive");
}

TEST(Verdict, MediansAndRunListsAreOfExactlyTheRunsCompared) {
  WorkloadSpec s = Spec();
  ArmData c = Paired({100, 101, 100.5, 99.5, 3000});  // run 104 has no variant partner
  ArmData v = Paired({110, 111, 110.5, 109.5});
  Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  const MetricVerdict& m = r.metrics[0];
  EXPECT_EQ(m.method, "split paired: Huber pace + mean lost time, on log ratios");
  EXPECT_EQ(m.n_control, 4);
  EXPECT_DOUBLE_EQ(m.control_median, 100.25);  // not 100.5: run 104 is not compared
  ASSERT_EQ(m.control_runs.size(), 5u);
  EXPECT_FALSE(m.control_runs[4].compared);
  EXPECT_EQ(m.control_runs[4].run, 104);
  EXPECT_THAT(m.control_runs[4].why, HasSubstr("pair's variant run has no value"));
  // The JSON carries them, so the verdict can be recomputed from it.
  auto back = VerdictFromJson(VerdictToJson(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->metrics[0].variant_runs.size(), 4u);
  EXPECT_DOUBLE_EQ(back->metrics[0].variant_runs[1].value, 111);
  EXPECT_EQ(back->metrics[0].method, m.method);
}

// Simulated experiments with no effect, through the real code path (BuildArms →
// EvaluateSequential), each run left out with the arm's probability. Returns the rate of
// improved/regressed calls on the primary metric itself and overall.
std::pair<double, double> FalseCalls(double p_control, double p_variant, int experiments,
                                     uint64_t seed) {
  WorkloadSpec s = Spec();
  SimRng rng(seed);
  int metric_calls = 0, overall_calls = 0;
  SequentialOptions design;
  VerdictOptions o;
  o.cross_checks = false;
  o.adjust_estimate = false;
  for (int e = 0; e < experiments; ++e) {
    std::vector<RunFacts> runs;
    for (int k = 0; k < design.max_pairs; ++k) {
      for (int arm = 0; arm < 2; ++arm) {
        RunFacts r;
        r.id = static_cast<int64_t>(runs.size() + 1);
        r.idx = 2 * k + arm + 1;
        r.arm = arm ? "variant" : "control";
        r.state = RunState::kSucceeded;
        RunMetricFacts m;
        m.metric = "sps";
        m.median = 1000 * std::exp(0.02 * rng.Normal());
        m.usable = rng.Uniform() >= (arm ? p_variant : p_control);
        RunMetricFacts loss;
        loss.metric = "loss";
        loss.median = 2 * std::exp(0.001 * rng.Normal());
        r.metrics = {m, loss};
        runs.push_back(r);
      }
      const Arms arms = BuildArms(s, runs);
      SequentialStep step =
          EvaluateSequential(s, arms.control, arms.variant, std::nullopt, design, o);
      if (!step.stop) continue;
      const std::string& d = step.verdict.metrics[0].decision;
      metric_calls += d == "improved" || d == "regressed";
      overall_calls += step.verdict.decision == "improved" || step.verdict.decision == "regressed";
      break;
    }
  }
  return {static_cast<double>(metric_calls) / experiments,
          static_cast<double>(overall_calls) / experiments};
}

TEST(Verdict, FalseCallsStayBelowAlphaWithHalfTheVariantRunsExcluded) {
  // The boundary indexed by usable pairs keeps the metric's false calls <= alpha (+3 MC sd).
  EXPECT_LE(FalseCalls(0, 0.5, 1500, 7).first, 0.05 + 0.017);
}

TEST(Verdict, EqualExclusionRatesAreNotEvidenceAgainstTheVariant) {
  // 30 % of every arm's runs left out: the exclusion test, repeated at each look, rarely fires.
  EXPECT_LE(FalseCalls(0.3, 0.3, 1500, 11).second, 0.05 + 0.017);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Verdict, ASlowNodeRunIsComparedWithBoundedWeight) {
  WorkloadSpec s = Spec();
  // 6 pairs; one control run on a 15 % slow node: it counts, its pair's weight is bounded.
  ArmData c = Paired({2400, 2410, 2395, 2405, 2398, 2040});
  ArmData v = Paired({2520, 2530, 2515, 2525, 2522, 2519});
  Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(r.metrics[0].n_control, 6);
  EXPECT_GE(r.metrics[0].downweighted, 1);
  EXPECT_THAT(r.metrics[0].note, HasSubstr("pair(s) with a pace far from the others"));
  EXPECT_EQ(r.metrics[0].decision, "improved");  // +5 %, the slow pair bounded
}

TEST(Verdict, SlowNodeRunsInHalfThePairsAreComparedAndWidenTheCi) {
  WorkloadSpec s = Spec();
  // 10 pairs, a +6 % effect, a drift of -1 % per pair, and a 15 % slow node under the control
  // runs of pairs 0, 5, 9 and the variant runs of pairs 2, 7: half the pairs are far off, too
  // many for any robust weight to tell which are the odd ones. Every run is compared, and the
  // spread they bring shows in the CI instead of being dropped.
  std::vector<double> c, v;
  for (int k = 0; k < 10; ++k) {
    const double level = 2400 * (1 - 0.01 * k) * (1 + 0.002 * (k % 3));
    c.push_back(level * (k == 0 || k == 5 || k == 9 ? 0.85 : 1));
    v.push_back(level * 1.06 * (1 - 0.002 * (k % 2)) * (k == 2 || k == 7 ? 0.85 : 1));
  }
  Verdict r = ComputeVerdict(s, Paired(c), Paired(v), std::nullopt);
  const MetricVerdict& m = r.metrics[0];
  EXPECT_EQ(m.n_control, 10);
  for (const auto* side : {&m.control_runs, &m.variant_runs})
    for (const auto& run : *side) EXPECT_TRUE(run.compared);
  EXPECT_TRUE(m.estimated);
  EXPECT_LT(m.ci_low, 1.0);  // the spread is in the CI
  EXPECT_GT(m.ci_high, 1.06);
  EXPECT_NE(m.decision, "unchanged");
  EXPECT_NE(m.decision, "regressed");
}

}  // namespace
}  // namespace tunectl

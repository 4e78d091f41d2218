#include "core/experiment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/oracle_vectors.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

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
namespace {

TEST(Verdict, ASlowNodeRunIsNotComparedAndSaysSo) {
  WorkloadSpec s = Spec();
  // 6 runs a side (fewer are never trimmed); one control run on a 15 % slow node
  ArmData c = Arm({2400, 2410, 2395, 2405, 2398, 2040}, {1.377, 1.378, 1.376, 1.377, 1.377, 1.377});
  ArmData v = Arm({2520, 2530, 2515, 2525, 2522, 2519}, {1.377, 1.376, 1.378, 1.377, 1.377, 1.377});
  Verdict r = ComputeVerdict(s, c, v, std::nullopt);
  EXPECT_EQ(r.metrics[0].n_control, 5);
  EXPECT_THAT(r.metrics[0].note, HasSubstr("1 outlier run(s) not compared"));
  EXPECT_EQ(r.metrics[0].decision, "improved");  // +5% with the slow run out of the way
}

}  // namespace
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

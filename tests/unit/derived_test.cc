#include "core/derived.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/launch.h"
#include "core/metrics.h"
#include "core/spec.h"
#include "core/template.h"
#include "tests/unit/test_support.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;
using tunectl::testing::SpecError;
using tunectl::testing::With;

double Eval(const std::string& text, const std::map<std::string, double>& values = {}) {
  auto e = DerivedExpr::Parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().message();
  if (!e.ok()) return NAN;
  auto v = e->Evaluate(values);
  return v ? *v : NAN;
}

std::string ParseError(const std::string& text) {
  auto e = DerivedExpr::Parse(text);
  EXPECT_FALSE(e.ok()) << text;
  return e.ok() ? "" : e.status().message();
}

TEST(DerivedExpr, EvaluatesArithmeticWithPrecedence) {
  EXPECT_DOUBLE_EQ(Eval("1 + 2 * 3"), 7);
  EXPECT_DOUBLE_EQ(Eval("(1 + 2) * 3"), 9);
  EXPECT_DOUBLE_EQ(Eval("10 - 4 - 3"), 3);
  EXPECT_DOUBLE_EQ(Eval("12 / 4 / 3"), 1);
  EXPECT_DOUBLE_EQ(Eval("-2 ^ 2"), -4);      // ^ binds tighter than unary minus
  EXPECT_DOUBLE_EQ(Eval("2 ^ 3 ^ 2"), 512);  // right associative
  EXPECT_DOUBLE_EQ(Eval("2 ^ -1"), 0.5);
  EXPECT_DOUBLE_EQ(Eval("--3"), 3);
  EXPECT_DOUBLE_EQ(Eval("7.0e9 * 1E-9 + .5"), 7.5);
  EXPECT_DOUBLE_EQ(Eval("min(3, 2) + max(3, 2 * 4)"), 10);
}

TEST(DerivedExpr, ReadsMetricsByNameEachOnceInOrder) {
  auto e = DerivedExpr::Parse("a / b + a * c_2");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->inputs(), (std::vector<std::string>{"a", "b", "c_2"}));
  EXPECT_DOUBLE_EQ(*e->Evaluate(std::map<std::string, double>{{"a", 6}, {"b", 3}, {"c_2", 2}}), 14);
  EXPECT_FALSE(e->Evaluate(std::map<std::string, double>{{"a", 6}, {"b", 3}}));  // c_2 missing
}

TEST(DerivedExpr, DivisionByZeroAndNonFiniteResultsGiveNoValue) {
  auto e = DerivedExpr::Parse("1000 / iter_ms");
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->Evaluate(std::map<std::string, double>{{"iter_ms", 0}}));
  EXPECT_FALSE(e->Evaluate(std::map<std::string, double>{{"iter_ms", NAN}}));
  EXPECT_FALSE(DerivedExpr::Parse("10 ^ 400")->Evaluate(std::vector<double>{}));
  EXPECT_FALSE(DerivedExpr::Parse("(-1) ^ 0.5")->Evaluate(std::vector<double>{}));
}

TEST(DerivedExpr, ParseErrorsNameTheExpressionPositionAndWhatWasExpected) {
  EXPECT_EQ(ParseError("1 + * 2"),
            "expr \"1 + * 2\": at position 5: expected a number, a metric name, '(' or '-', got "
            "'*'");
  EXPECT_THAT(ParseError("(a + b"), HasSubstr("at position 7: expected ')', got the end"));
  EXPECT_THAT(ParseError("a b"), HasSubstr("at position 3: expected an operator"));
  EXPECT_THAT(ParseError("2 ** 3"), HasSubstr("the power operator is ^"));
  EXPECT_THAT(ParseError("{global_batch} * 2"), HasSubstr("placeholder"));
  EXPECT_THAT(ParseError("sqrt(4)"), HasSubstr("unknown function 'sqrt'"));
  EXPECT_THAT(ParseError("min(1)"), HasSubstr("expected ',' and a second argument of min"));
  EXPECT_THAT(ParseError("1e+"), HasSubstr("exponent"));
  EXPECT_THAT(ParseError(""), HasSubstr("at position 1: expected a number"));
}

TEST(DerivedExpr, RefusesNestingDeeperThanTheLimit) {
  std::string ok = std::string(60, '(') + "1" + std::string(60, ')');
  EXPECT_DOUBLE_EQ(Eval(ok), 1);
  std::string deep = std::string(100, '(') + "1" + std::string(100, ')');
  EXPECT_THAT(ParseError(deep), HasSubstr("nested deeper than 64"));
  EXPECT_THAT(ParseError(std::string(100000, '-') + "1"), HasSubstr("longer than"));
  EXPECT_THAT(ParseError(std::string(1000, '-') + "1"), HasSubstr("nested deeper than 64"));
  std::string powers = "2";
  for (int i = 0; i < 200; ++i) powers += "^1";
  EXPECT_THAT(ParseError(powers), HasSubstr("nested deeper than 64"));
}

TEST(DerivedGpuPeak, LooksUpDensePeaksCaseInsensitively) {
  EXPECT_DOUBLE_EQ(*PeakTflops("H100-SXM", "BF16"), 989.4);
  EXPECT_DOUBLE_EQ(*PeakTflops("h100-sxm", "fp8"), 1978.9);
  EXPECT_DOUBLE_EQ(*PeakTflops("h100-sxm", "tf32"), 494.7);
  EXPECT_DOUBLE_EQ(*PeakTflops("h200", "bf16"), 989.4);
  EXPECT_DOUBLE_EQ(*PeakTflops("a100-sxm", "bf16"), 312);
  EXPECT_DOUBLE_EQ(*PeakTflops("a100-pcie", "fp16"), 312);
  EXPECT_DOUBLE_EQ(*PeakTflops("a100-sxm", "tf32"), 156);
  EXPECT_DOUBLE_EQ(*PeakTflops("a100-sxm", "fp32"), 19.5);
  EXPECT_DOUBLE_EQ(*PeakTflops("v100-sxm2", "fp16"), 125);
  EXPECT_DOUBLE_EQ(Eval("peak_tflops('L40S', \"bf16\")"), 362.05);
}

TEST(DerivedGpuPeak, UnknownGpuOrDtypeListsTheKnownOnes) {
  auto g = PeakTflops("h800", "bf16");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("unknown GPU 'h800'; known: a10, a100-pcie"));
  auto d = PeakTflops("v100-sxm2", "bf16");
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("its dtypes: fp16, fp32"));
  EXPECT_THAT(ParseError("peak_tflops('tpu', 'bf16')"), HasSubstr("position 13: peak_tflops"));
}

TEST(DerivedExpr, MfuMatchesHandComputedNumbers) {
  // Megatron, 7e9 parameters, global batch 128 of 4096 tokens, 5630.1 ms per iteration,
  // 8 H100 SXM in bf16:
  //   tokens/s       = 128 * 4096 * 1000 / 5630.1 = 524288 / 5.6301      = 93122.3246 tokens/s
  //   TFLOP/s / GPU  = 6 * 7e9 * 93122.3246 / 8 / 1e12 = 3911.1376 / 8  = 488.8922
  //   MFU            = 100 * 488.8922 / 989.4                            = 49.4130 %
  std::map<std::string, double> v{{"iter_ms", 5630.1}};
  v["tokens_per_s"] = Eval("128 * 4096 * 1000 / iter_ms", v);
  EXPECT_NEAR(v["tokens_per_s"], 93122.3246, 1e-4);
  v["tflops"] = Eval("6 * 7.0e9 * tokens_per_s / 8 / 1e12", v);
  EXPECT_NEAR(v["tflops"], 488.8922, 1e-4);
  EXPECT_NEAR(Eval("100 * tflops / peak_tflops('h100-sxm', 'bf16')", v), 49.4130, 1e-4);
}

TEST(DerivedOrder, PutsInputsFirstAndNamesACycle) {
  auto o = OrderDerived({{"mfu", {"tflops"}}, {"tflops", {"tps"}}, {"tps", {"iter_ms"}}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, (std::vector<std::string>{"tps", "tflops", "mfu"}));
  auto c = OrderDerived({{"a", {"b"}}, {"b", {"a"}}});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("a cycle: a -> b -> a"));
}

// The workload of the issue.
const char* kDerivedSpec = R"yaml(
name: derived
command: [python3, train.py, --gbs, "{global_batch}"]
params:
  global_batch: {type: int, default: 128}
  n_params: {type: float, default: 7.0e9}
  gpus: {type: int, default: 8}
metrics:
  iter_ms: {parser: megatron, role: guardrail}
  tokens_per_s: {expr: "{global_batch} * 4096 * 1000 / iter_ms", better: higher, role: primary}
  tflops: {expr: "6 * {n_params} * tokens_per_s / {gpus} / 1e12", unit: TFLOP/s, better: higher}
  mfu: {expr: "100 * tflops / peak_tflops('h100-sxm', 'bf16')", unit: "%", better: higher}
)yaml";

TEST(WorkloadSpecDerived, ParsesExprMetricsAndRoundTripsCanonicalJson) {
  auto s = ParseWorkloadSpec(kDerivedSpec);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->FindMetric("tflops")->expr, "6 * {n_params} * tokens_per_s / {gpus} / 1e12");
  EXPECT_EQ(s->FindMetric("tflops")->unit, "TFLOP/s");
  auto again = ParseWorkloadSpec(WorkloadSpecToJson(*s));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(WorkloadSpecToJson(*again), WorkloadSpecToJson(*s));
  EXPECT_EQ(again->FindMetric("mfu")->expr, s->FindMetric("mfu")->expr);
}

TEST(WorkloadSpecDerived, UnknownInputMetricIsNamedWithTheWorkloadsMetrics) {
  EXPECT_THAT(SpecError(With(kDerivedSpec, "/ iter_ms", "/ iter_msec")),
              HasSubstr("metrics.tokens_per_s.expr: \"iter_msec\" is not a metric of this "
                        "workload; its metrics: iter_ms, tokens_per_s, tflops, mfu"));
}

TEST(WorkloadSpecDerived, CycleIsRefused) {
  EXPECT_THAT(SpecError(With(kDerivedSpec, "/ iter_ms", "/ mfu")), HasSubstr("a cycle"));
  EXPECT_THAT(SpecError(With(kDerivedSpec, "/ iter_ms", "/ tokens_per_s")),
              HasSubstr("reads itself"));
}

TEST(WorkloadSpecDerived, UnknownGpuAndBadSyntaxAndMissingBetterAreRefused) {
  EXPECT_THAT(SpecError(With(kDerivedSpec, "h100-sxm", "h900")),
              HasSubstr("metrics.mfu.expr: expr \"100 * tflops / peak_tflops('h900', 'bf16')\": "
                        "at position 28: peak_tflops: unknown GPU 'h900'; known: a10"));
  EXPECT_THAT(SpecError(With(kDerivedSpec, "100 * tflops", "100 * * tflops")),
              HasSubstr("metrics.mfu.expr: expr"));
  EXPECT_THAT(SpecError(With(kDerivedSpec, "{gpus}", "{gpu}")),
              HasSubstr("metrics.tflops.expr: placeholder {gpu} names no parameter"));
  EXPECT_THAT(SpecError(With(kDerivedSpec, "unit: \"%\", better: higher", "unit: \"%\"")),
              HasSubstr("metrics.mfu.better: missing"));
  EXPECT_THAT(SpecError(With(kDerivedSpec, "{expr: \"100", "{json: x, expr: \"100")),
              HasSubstr("set one source: pattern, json, parser, expr, prometheus or tensorboard"));
}

TEST(LaunchDerived, BindsParamsIntoTheRecordedExpressionAndRoundTripsJson) {
  auto s = ParseWorkloadSpec(kDerivedSpec);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ParamValues values = DefaultParamValues(*s);
  values["gpus"] = "16";
  auto l = BindLaunch(*s, values);
  ASSERT_TRUE(l.ok()) << l.status().message();
  const LaunchRecord r = MakeLaunchRecord(*s, *l);
  EXPECT_EQ(r.metrics[1].expr, "128 * 4096 * 1000 / iter_ms");
  EXPECT_EQ(r.metrics[2].expr, "6 * 7e+09 * tokens_per_s / 16 / 1e12");
  EXPECT_EQ(r.Rules()[3].expr, "100 * tflops / peak_tflops('h100-sxm', 'bf16')");
  auto back = LaunchRecordFromJson(LaunchRecordToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, r);
  EXPECT_THAT(r.metrics[2].NoSampleReason(),
              HasSubstr("its inputs tokens_per_s never all had a value at one step"));
  // A record written before expr existed has none.
  auto old = LaunchRecordFromJson(
      R"j({"argv":["x"],"metrics":[{"name":"m","pattern":"m=(\\d+)","better":"higher"}]})j");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->metrics[0].expr, "");
}

std::vector<ExtractedSample> Extract(const std::vector<MetricRule>& rules,
                                     const std::vector<std::string>& lines) {
  auto x = MetricExtractor::Create(rules);
  EXPECT_TRUE(x.ok()) << x.status().message();
  std::vector<ExtractedSample> out;
  if (!x.ok()) return out;
  for (const auto& l : lines) (*x)->ProcessLine(l, &out);
  return out;
}

std::vector<ExtractedSample> Only(const std::vector<ExtractedSample>& v, const std::string& m) {
  std::vector<ExtractedSample> out;
  for (const auto& s : v)
    if (s.metric == m) out.push_back(s);
  return out;
}

TEST(MetricExtractorDerived, InputsOnDifferentLinesInAnyOrderEmitOncePerStep) {
  std::vector<MetricRule> rules = {{"a", "step (?P<step>\\d+) a=(?P<value>[0-9.]+)"},
                                   {"b", "step (?P<step>\\d+) b=(?P<value>[0-9.]+)"},
                                   {"ratio", "", "", "", "", "a / b"}};
  auto out = Extract(rules, {"step 1 a=6", "step 2 b=4", "step 1 b=3", "step 2 a=10", "step 1 a=99",
                             "step 1 b=1"});
  auto r = Only(out, "ratio");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].step, 1);
  EXPECT_DOUBLE_EQ(r[0].value, 2);  // 6 / 3: the first values at step 1, emitted once
  EXPECT_EQ(r[1].step, 2);
  EXPECT_DOUBLE_EQ(r[1].value, 2.5);
}

TEST(MetricExtractorDerived, CountedStepsPairInputsWithoutExplicitSteps) {
  std::vector<MetricRule> rules = {
      {"loss", "loss=([0-9.]+)"}, {"tok", "tok=([0-9.]+)"}, {"x", "", "", "", "", "tok * loss"}};
  auto out = Extract(rules, {"loss=2", "loss=3", "tok=10", "tok=100"});
  auto r = Only(out, "x");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].value, 20);
  EXPECT_DOUBLE_EQ(r[1].value, 300);
}

TEST(MetricExtractorDerived, DerivedOfDerivedAndMfuFromMegatronLines) {
  std::vector<MetricRule> rules = {
      {"iter_ms", "", "", "megatron", "iter_ms"},
      {"mfu", "", "", "", "", "100 * tflops / peak_tflops('h100-sxm', 'bf16')"},  // before its
      {"tflops", "", "", "", "", "6 * 7e9 * tokens_per_s / 8 / 1e12"},            // inputs
      {"tokens_per_s", "", "", "", "", "128 * 4096 * 1000 / iter_ms"}};
  auto out =
      Extract(rules, {" [2024-04-06 02:55:45] iteration        2/     100 | consumed samples: "
                      "256 | elapsed time per iteration (ms): 5630.1 | global batch size:   "
                      "128 |"});
  auto mfu = Only(out, "mfu");
  ASSERT_EQ(mfu.size(), 1u);
  EXPECT_EQ(mfu[0].step, 2);
  EXPECT_NEAR(mfu[0].value, 49.4130, 1e-4);  // hand-computed in MfuMatchesHandComputedNumbers
  EXPECT_NEAR(Only(out, "tflops")[0].value, 488.8922, 1e-4);
}

TEST(MetricExtractorDerived, DivisionByZeroGivesNoSample) {
  std::vector<MetricRule> rules = {{"ms", "ms=([0-9.]+)"}, {"rate", "", "", "", "", "1000 / ms"}};
  auto out = Extract(rules, {"ms=0", "ms=4"});
  auto r = Only(out, "rate");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step, 2);
  EXPECT_DOUBLE_EQ(r[0].value, 250);
}

TEST(MetricExtractorDerived, KeepsOnlyTheLastPendingSteps) {
  std::vector<MetricRule> rules = {
      {"a", "a (\\d+)=(?P<value>[0-9.]+)"}, {"b", "b=([0-9.]+)"}, {"s", "", "", "", "", "a + b"}};
  rules[0].pattern = "a (?P<step>\\d+)=(?P<value>[0-9.]+)";
  std::vector<std::string> lines;
  for (int i = 1; i <= 3000; ++i) lines.push_back("a " + std::to_string(i) + "=1");
  lines.push_back("b=5");  // counted step 1: dropped long ago, so no sample
  auto out = Extract(rules, lines);
  EXPECT_TRUE(Only(out, "s").empty());
}

TEST(MetricExtractorDerived, UnknownInputOrCycleIsRefused) {
  auto u = MetricExtractor::Create({{"a", "a=(\\d+)"}, {"d", "", "", "", "", "a + zz"}});
  ASSERT_FALSE(u.ok());
  EXPECT_THAT(u.status().message(), HasSubstr("metrics.d.expr: zz is not a metric"));
  auto c = MetricExtractor::Create(
      {{"a", "a=(\\d+)"}, {"d", "", "", "", "", "e + a"}, {"e", "", "", "", "", "d"}});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("a cycle"));
}

}  // namespace
}  // namespace tunectl

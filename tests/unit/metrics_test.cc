#include "core/metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <tuple>

namespace tunectl {
namespace {

std::vector<ExtractedSample> Extract(const std::vector<MetricRule>& rules,
                                     const std::vector<std::string>& lines) {
  auto x = MetricExtractor::Create(rules);
  EXPECT_TRUE(x.ok()) << x.status().message();
  std::vector<ExtractedSample> out;
  for (const auto& l : lines) (*x)->ProcessLine(l, &out);
  return out;
}

TEST(MetricExtractor, NamedValueGroupAndCountedSteps) {
  auto s = Extract({{"sps", "samples/s: (?P<value>[0-9.]+)", ""}},
                   {"step: 1 samples/s: 100.5 x", "noise", "samples/s: 200"});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].metric, "sps");
  EXPECT_DOUBLE_EQ(s[0].value, 100.5);
  EXPECT_EQ(s[0].step, 1);
  EXPECT_DOUBLE_EQ(s[1].value, 200);
  EXPECT_EQ(s[1].step, 2);
}

TEST(MetricExtractor, ACarriageReturnEndsALineSoEveryProgressBarUpdateCounts) {
  auto s = Extract({{"loss", "loss=(?P<value>[0-9.]+)", ""}},
                   {"it 1 loss=1.0\rit 2 loss=0.9\rit 3 loss=0.8\r"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[2].value, 0.8);
  EXPECT_EQ(s[2].step, 3);
}

TEST(MetricExtractor, AnsiColourCodesAreRemovedBeforeMatching) {
  auto s = Extract({{"loss", "loss: (?P<value>[0-9.]+)", ""}}, {"\x1b[32mloss: \x1b[0m2.5\x1b[K"});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].value, 2.5);
}

TEST(MetricExtractor, AParserRuleReadsItsFieldAtTheStepTheLineNames) {
  MetricRule iter{"iter", "", "", "megatron", "iter_ms"};
  MetricRule loss{"loss", "", "", "megatron", "lm_loss"};
  // Megatron-LM issue #756 (16xH100).
  auto s = Extract(
      {iter, loss},
      {" [2024-04-06 02:55:45] iteration        2/     100 | consumed samples:          256 | "
       "elapsed time per iteration (ms): 5630.1 | throughput per GPU (TFLOP/s/GPU): 231.9 | "
       "learning rate: 4.000000E-07 | global batch size:   128 | lm loss: 2.021530E+00 | "
       "loss scale: 1.0 | grad norm: 6.895 | number of skipped iterations:   0 | number of nan "
       "iterations:   0 |",
       "unrelated line"});
  ASSERT_EQ(s.size(), 2u);
  for (const auto& x : s) EXPECT_EQ(x.step, 2);
  EXPECT_EQ(s[0].metric, "iter");
  EXPECT_DOUBLE_EQ(s[0].value, 5630.1);
  EXPECT_EQ(s[1].metric, "loss");
  EXPECT_DOUBLE_EQ(s[1].value, 2.02153);
}

TEST(MetricExtractor, AnUnknownParserIsRefusedNamingTheMetric) {
  auto x = MetricExtractor::Create({{"m", "", "", "nope", "f"}});
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.status().message().find("metrics.m.parser"), std::string::npos);
}

TEST(MetricExtractor, FirstGroupWhenNoValueGroup) {
  auto s = Extract({{"t", "(step_time)_ms: ([0-9.]+)", ""}}, {"step_time_ms: 13.5"});
  // group 1 is "step_time", not a number: the line yields nothing rather than a wrong value
  EXPECT_TRUE(s.empty());
  s = Extract({{"t", "step_time_ms: ([0-9.]+)", ""}}, {"step_time_ms: 13.5"});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].value, 13.5);
}

TEST(MetricExtractor, StepGroupGivesStep) {
  auto s = Extract(
      {{"ms",
        R"(iteration\s+(?P<step>\d+)/\s*\d+ \|.*elapsed time per iteration \(ms\): (?P<value>[0-9.]+))",
        ""}},
      {" [2024-04-06 02:55:45] iteration        2/     100 | consumed samples:          256 | "
       "elapsed time per iteration (ms): 5630.1 | throughput per GPU (TFLOP/s/GPU): 231.9 |"});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].step, 2);
  EXPECT_DOUBLE_EQ(s[0].value, 5630.1);
}

TEST(MetricExtractor, JsonLinesWithStep) {
  auto s = Extract({{"loss", "", "loss"}, {"lr", "", "lr"}},
                   {R"({"loss": 2.3, "step": 7})", R"({"loss": "1.5e-1", "lr": 0.001})",
                    "{not json", R"([1,2])", R"({"loss": null})"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].step, 7);
  EXPECT_DOUBLE_EQ(s[0].value, 2.3);
  EXPECT_EQ(s[1].metric, "loss");
  EXPECT_EQ(s[1].step, 8);  // counts on from the last explicit step
  EXPECT_DOUBLE_EQ(s[1].value, 0.15);
  EXPECT_EQ(s[2].metric, "lr");
  EXPECT_EQ(s[2].step, 1);
}

TEST(MetricExtractor, ACountedStepAfterTheLargestStepStaysThereInsteadOfOverflowing) {
  // Found by fuzz/metrics_fuzz: the next step after 9223372036854775807 overflowed int64 (UB).
  auto s = Extract({{"loss", "", "loss"}},
                   {R"({"loss": 1, "step": 9223372036854775807})", R"({"loss": 2})"});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].step, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(s[1].step, std::numeric_limits<int64_t>::max());
}

TEST(MetricExtractor, ThousandsSeparatorsAndCarriageReturn) {
  auto s = Extract({{"tps", "tps: ([0-9,]+)", ""}},
                   {"step:  4  loss:  7.62585  tps: 10,050  tflops: 314.71\r"});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].value, 10050);
}

TEST(MetricExtractor, OneLineFeedsSeveralMetrics) {
  auto s = Extract({{"a", "a=([0-9]+)", ""}, {"b", "b=([0-9]+)", ""}}, {"a=1 b=2", "a=3"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[2].metric, "a");
  EXPECT_EQ(s[2].step, 2);
}

TEST(MetricExtractor, RejectsBadRules) {
  EXPECT_FALSE(MetricExtractor::Create({{"x", "(", ""}}).ok());
  EXPECT_FALSE(MetricExtractor::Create({{"x", "abc", ""}}).ok());
  EXPECT_FALSE(MetricExtractor::Create({{"x", "", ""}}).ok());
}

TEST(ParseMetricValue, AcceptsNumbersOnly) {
  double v = 0;
  EXPECT_TRUE(ParseMetricValue("2.021530E+00", &v));
  EXPECT_DOUBLE_EQ(v, 2.02153);
  EXPECT_TRUE(ParseMetricValue(" +5 ", &v));
  EXPECT_DOUBLE_EQ(v, 5);
  EXPECT_FALSE(ParseMetricValue("", &v));
  EXPECT_FALSE(ParseMetricValue("12ms", &v));
  EXPECT_FALSE(ParseMetricValue("N/A", &v));
}

TEST(MetricExtractor, SkipRulesMarkTheirStepOrTheNextReportedOne) {
  const std::vector<MetricRule> rules = {
      {"sps", "step: (?P<step>[0-9]+) sps: (?P<value>[0-9.]+)", ""},
      {"loss", "", "loss"},
      {"skip:eval", "validation at step (?P<step>[0-9]+)", ""},
      {"skip:checkpoint", "saving checkpoint", ""}};
  auto s = Extract(rules, {"step: 1 sps: 10", "validation at step 1", "saving checkpoint",
                           "step: 2 sps: 11", R"({"loss": 2.0, "step": 2})", "step: 3 sps: 12"});
  std::vector<std::tuple<std::string, int64_t, double>> got;
  for (const auto& x : s) got.emplace_back(x.metric, x.step, x.value);
  const std::vector<std::tuple<std::string, int64_t, double>> want = {
      {"sps", 1, 10},   {"skip:eval", 1, 1}, {"sps", 2, 11}, {"skip:checkpoint", 2, 1},
      {"loss", 2, 2.0}, {"sps", 3, 12}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace tunectl

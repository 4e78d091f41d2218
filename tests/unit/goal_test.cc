#include "core/goal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/statistics.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

WorkloadSpec Spec() {
  auto s = ParseWorkloadSpec(R"(
name: w
command: [train, "{nw}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
metrics:
  sps:  {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
  step: {pattern: 'step: ([0-9.]+)', unit: ms, better: lower}
  mfu:  {pattern: 'mfu: ([0-9.]+)', better: higher}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(GoalParser, TakesAMetricATargetAndLevelGuardrails) {
  auto g = ParseGoal(Spec(), "sps", 1500, {"mfu >= 0.45", "step<20"});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->better, Better::kHigher);
  ASSERT_EQ(g->guardrails.size(), 2u);
  EXPECT_EQ(g->guardrails[0].op, ">=");
  EXPECT_DOUBLE_EQ(g->guardrails[0].level, 0.45);
  EXPECT_EQ(g->guardrails[1].metric, "step");
}

TEST(GoalParser, RefusesUnknownMetricsBadTargetsAndNonLevelGuardrails) {
  EXPECT_THAT(ParseGoal(Spec(), "spss", 1500, {}).status().message(),
              HasSubstr("did you mean \"sps\""));
  EXPECT_THAT(ParseGoal(Spec(), "sps", 0, {}).status().message(),
              HasSubstr("--target: 0 is not allowed"));
  EXPECT_THAT(ParseGoal(Spec(), "sps", NAN, {}).status().message(), HasSubstr("--target"));
  EXPECT_THAT(ParseGoal(Spec(), "sps", 1500, {"mfu +5%"}).status().message(),
              HasSubstr("--guardrail: \"mfu +5%\" is not a level"));
  EXPECT_THAT(ParseGoal(Spec(), "sps", 1500, {"mfuu >= 1"}).status().message(),
              HasSubstr("--guardrail: \"mfuu\" is not a metric"));
}

TEST(GoalProgress, LevelIsTheMeanWithATCiAndWhatIsLeft) {
  auto g = ParseGoal(Spec(), "sps", 1500, {});
  ASSERT_TRUE(g.ok());
  const std::vector<double> runs = {1200, 1240, 1260, 1230, 1270};
  GoalStep s1{2, "nw=1→2", 4, 1.10, 1.05, 1.15};
  GoalStep s2{3, "prec=fp32→bf16", 9, 1.20, 1.12, 1.28};
  GoalProgress p = GoalProgressOf(*g, 3, 17, Describe(runs), {s1, s2});
  ASSERT_TRUE(p.measured);
  EXPECT_DOUBLE_EQ(p.level, 1240);
  // mean ± t(0.975, 4) · sd / sqrt(5), computed independently.
  const double sd = std::sqrt((40.0 * 40 + 0 + 20 * 20 + 10 * 10 + 30 * 30) / 4);
  const double half = StudentTQuantile(0.975, 4) * sd / std::sqrt(5.0);
  EXPECT_NEAR(p.ci_low, 1240 - half, 1e-9);
  EXPECT_NEAR(p.ci_high, 1240 + half, 1e-9);
  EXPECT_NEAR(p.attained, 1240.0 / 1500, 1e-12);
  EXPECT_FALSE(p.reached);
  EXPECT_NEAR(p.moved, 1.32, 1e-12);
  EXPECT_THAT(p.summary, HasSubstr("82.7 % there, +21.0% to go"));
}

TEST(GoalProgress, ALowerIsBetterTargetIsReachedFromAbove) {
  auto g = ParseGoal(Spec(), "step", 15, {});
  ASSERT_TRUE(g.ok());
  GoalProgress near = GoalProgressOf(*g, 1, 1, Describe({14.9, 15.2, 14.8}), {});
  EXPECT_TRUE(near.reached);
  EXPECT_FALSE(near.reached_surely);
  EXPECT_THAT(near.summary, HasSubstr("the CI still reaches back across it"));
  GoalProgress sure = GoalProgressOf(*g, 1, 1, Describe({12.0, 12.1, 11.9}), {});
  EXPECT_TRUE(sure.reached_surely);
  GoalProgress far = GoalProgressOf(*g, 1, 1, Describe({20, 20, 20}), {});
  EXPECT_NEAR(far.attained, 0.75, 1e-12);
  EXPECT_THAT(far.summary, HasSubstr("-25.0% to go"));
}

TEST(GoalProgress, NoBaselineOfTheCurrentConfigSaysHowToMeasureIt) {
  auto g = ParseGoal(Spec(), "sps", 1500, {});
  GoalProgress p = GoalProgressOf(*g, 4, 0, Descriptive{}, {});
  EXPECT_FALSE(p.measured);
  EXPECT_THAT(p.summary, HasSubstr("config v4 has no completed baseline"));
}

TEST(GoalNote, ControlAndVariantAgainstTheTarget) {
  auto g = ParseGoal(Spec(), "sps", 1500, {});
  Verdict v;
  MetricVerdict m;
  m.metric = "sps";
  m.n_control = m.n_variant = 4;
  m.control_median = 1200;
  m.estimated = true;
  m.ratio = 1.1;
  v.metrics.push_back(m);
  EXPECT_EQ(GoalNote(*g, v), "goal sps 1500: control 1200 (80.0 % of it) -> variant 1320 (88.0 %)");
  v.metrics[0].metric = "step";
  EXPECT_EQ(GoalNote(*g, v), "");
}

TEST(GoalGuardrails, AVariantBelowAGuardrailLevelBreaksIt) {
  auto g = ParseGoal(Spec(), "sps", 1500, {"mfu >= 0.45", "step < 20"});
  ASSERT_TRUE(g.ok());
  Verdict v;
  MetricVerdict mfu;
  mfu.metric = "mfu";
  mfu.n_control = mfu.n_variant = 4;
  mfu.control_median = 0.46;
  mfu.estimated = true;
  mfu.ratio = 0.9;  // 0.414
  v.metrics.push_back(mfu);
  GuardrailCheck c = CheckGoalGuardrails(*g, v);
  ASSERT_EQ(c.broken.size(), 1u);
  EXPECT_THAT(c.broken[0], HasSubstr("mfu >= 0.45: the variant's level is 0.414"));
  ASSERT_EQ(c.unmeasured.size(), 1u);
  EXPECT_THAT(c.unmeasured[0], HasSubstr("step < 20"));
  v.metrics[0].ratio = 1.0;
  EXPECT_TRUE(CheckGoalGuardrails(*g, v).broken.empty());
}

}  // namespace
}  // namespace tunectl

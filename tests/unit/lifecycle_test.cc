// core/lifecycle.h: the rules behind workload delete/archive, agent remove, the experiment-state
// filter, config export --version, and what workload show says of a spec.
#include "core/lifecycle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(Lifecycle, AWorkloadWithoutHistoryMayBeDeletedOneWithHistoryIsToldToArchive) {
  EXPECT_TRUE(CheckWorkloadDeletable("demo", {}).ok());
  const Status st = CheckWorkloadDeletable("demo", {2, 1, 14, 1});
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("2 baselines, 14 runs, 1 experiment, 1 log entry"));
  EXPECT_THAT(st.message(), HasSubstr("tunectl workload archive demo"));
  WorkloadHistory only_log;
  only_log.log_entries = 3;
  EXPECT_FALSE(CheckWorkloadDeletable("demo", only_log).ok());
  EXPECT_EQ(only_log.Describe(), "3 log entries");
  EXPECT_EQ(WorkloadHistory().Describe(), "nothing");
}

TEST(Lifecycle, AnArchivedWorkloadRefusesNewWorkNamingTheUnarchiveCommand) {
  EXPECT_TRUE(CheckNotArchived("demo", false, "a new baseline").ok());
  const Status st = CheckNotArchived("demo", true, "a new baseline");
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "workload demo is archived: a new baseline is refused; unarchive it first: tunectl "
            "workload unarchive demo");
}

TEST(Lifecycle, OnlyADisconnectedAgentMayBeRemoved) {
  EXPECT_TRUE(CheckAgentRemovable("node-1", false).ok());
  const Status st = CheckAgentRemovable("node-1", true);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("agent node-1 is connected; stop it first"));
}

TEST(Lifecycle, TheStateFilterTakesEveryExperimentStateAndListsThemWhenWrong) {
  EXPECT_FALSE(ParseExperimentStateFilter("")->has_value());
  EXPECT_EQ(**ParseExperimentStateFilter("decided"), ExperimentState::kDecided);
  EXPECT_EQ(**ParseExperimentStateFilter("cancelled"), ExperimentState::kCancelled);
  auto bad = ParseExperimentStateFilter("done");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "--state: \"done\" is not an experiment state; allowed: running, measured, decided, "
            "frozen, closed, cancelled");
}

TEST(Lifecycle, AConfigVersionIsOneTheWorkloadHas) {
  EXPECT_FALSE(CheckConfigVersion("demo", 0, 3)->has_value());
  EXPECT_EQ(**CheckConfigVersion("demo", 2, 3), 2);
  auto missing = CheckConfigVersion("demo", 7, 3);
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no config version 7; it has v1..v3"));
  EXPECT_EQ(CheckConfigVersion("demo", -1, 3).status().code(), Status::Code::kInvalidArgument);
}

TEST(Lifecycle, ASpecIsSummarisedAsWorkloadShowPrintsIt) {
  auto spec = ParseWorkloadSpec(R"(
name: demo
command: [train, "{nw}", "{p}", "{lr}", "{fast}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
  p: {type: enum, values: [fp32, bf16], default: bf16}
  lr: {type: float, default: 0.5, min: 0.001}
  fast: {type: bool, default: false}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
  loss: {json: loss, better: lower, role: guardrail}
  tflops: {parser: megatron, field: tflops_per_gpu}
run: {repeats: 5, warmup_steps: 20, timeout: 10m, selector: {pool: cpu}}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(ParamRangeText(spec->params[0]), "0..64");
  EXPECT_EQ(ParamRangeText(spec->params[1]), "fp32|bf16");
  EXPECT_EQ(ParamRangeText(spec->params[2]), ">= 0.001");
  EXPECT_EQ(ParamRangeText(spec->params[3]), "true|false");
  EXPECT_EQ(MetricSourceText(spec->metrics[0]), "pattern sps: ([0-9.]+)");
  EXPECT_EQ(MetricSourceText(spec->metrics[1]), "json loss");
  EXPECT_EQ(MetricSourceText(spec->metrics[2]), "parser megatron, field tflops_per_gpu");
  EXPECT_EQ(RunPolicyText(spec->run),
            "repeats 5, warm-up 20 steps, timeout 10m, selector pool=cpu");
}

}  // namespace
}  // namespace tunectl

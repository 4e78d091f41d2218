#include "core/launch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(LaunchRecord, RoundTripsThroughItsJson) {
  auto spec = ParseWorkloadSpec(R"(
name: demo
command: [train, "--nw", "{nw}"]
params: {nw: {type: int, default: 2}}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
  step_ms: {json: step_ms, better: lower}
  tflops: {parser: megatron, field: tflops_per_gpu}
run: {warmup_steps: 3, timeout: 5m, skip_steps: {checkpoint: 'saving'}}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto launch = BindLaunch(*spec, DefaultParamValues(*spec));
  ASSERT_TRUE(launch.ok());
  const LaunchRecord r = AsStabilityRun(MakeLaunchRecord(*spec, *launch), 60);
  auto back = LaunchRecordFromJson(LaunchRecordToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, r);
  EXPECT_EQ(back->duration_ms, 60000);
  EXPECT_EQ(back->timeout_ms, 60000 + 300000);
  EXPECT_EQ(back->warmup_steps, 3);
  EXPECT_EQ(back->BetterOf("step_ms"), Better::kLower);
  ASSERT_EQ(back->Rules().size(), 4u);
  EXPECT_EQ(back->Rules()[2].parser, "megatron");
  EXPECT_EQ(back->Rules()[2].field, "tflops_per_gpu");
  EXPECT_EQ(back->Rules()[3].name, "skip:checkpoint");
}

TEST(LaunchMetric, SaysWhichSourceFoundNoSample) {
  EXPECT_EQ((LaunchMetric{"t", "", "", Better::kHigher, MetricRole::kObserved, "megatron",
                          "tflops_per_gpu"})
                .NoSampleReason(),
            "no sample: no line of the megatron format had the field tflops_per_gpu");
  EXPECT_EQ((LaunchMetric{"l", "", "loss"}).NoSampleReason(),
            "no sample: no JSON-object line had the key \"loss\"");
  EXPECT_EQ((LaunchMetric{"s", "sps: ([0-9]+)"}).NoSampleReason(),
            "no sample: no line matched the pattern 'sps: ([0-9]+)'");
}

TEST(LaunchRecord, ReadsRecordsWrittenBeforeDurationAndSkipSteps) {
  auto r = LaunchRecordFromJson(
      R"J({"argv": ["a"], "env": {}, "files": {}, "metrics": [{"name": "x", "pattern": "x (\\d+)",
      "json": "", "better": "lower", "role": "primary"}], "timeout_ms": 5, "warmup_steps": 1})J");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->duration_ms, 0);
  EXPECT_TRUE(r->skip_steps.empty());
  EXPECT_EQ(r->metrics[0].role, MetricRole::kPrimary);
}

TEST(LaunchRecord, RejectsTextThatIsNotARecordNamingTheField) {
  EXPECT_FALSE(LaunchRecordFromJson("[]").ok());
  auto r = LaunchRecordFromJson(R"({"argv": "train"})");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("launch.argv"));
}

}  // namespace
}  // namespace tunectl

#include "core/advisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/experiment.h"

namespace tunectl {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// A workload's spec with these params and metrics (YAML lines under `params:` / `metrics:`).
WorkloadSpec Spec(const std::string& params, const std::string& metrics) {
  auto s =
      ParseWorkloadSpec("name: w\ncommand: [train]\nparams:\n" + params + "metrics:\n" + metrics);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : WorkloadSpec{};
}

const char* kDemoMetrics =
    "  samples_per_s: {pattern: 'sps (?P<value>[0-9.]+)', better: higher, role: primary}\n"
    "  step_time_ms: {pattern: 'step (?P<value>[0-9.]+)', unit: ms, better: lower}\n"
    "  data_wait_ms: {pattern: 'wait (?P<value>[0-9.]+)', unit: ms, better: lower}\n";
const char* kLoaderParams =
    "  num_workers: {type: int, default: 1, min: 0, max: 64}\n"
    "  prefetch_factor: {type: int, default: 2, min: 1, max: 16}\n";

AdvisorInput Input(WorkloadSpec spec, std::map<std::string, double> medians) {
  AdvisorInput in;
  in.spec = std::move(spec);
  for (const auto& p : in.spec.params) in.params[p.name] = p.default_value;
  in.medians = std::move(medians);
  in.workload_flag = "--workload w";
  return in;
}

std::vector<std::string> Rules(const AdvisorReport& r) {
  std::vector<std::string> out;
  for (const auto& a : r.advice) out.push_back(a.rule);
  return out;
}

std::string NotCheckedText(const AdvisorReport& r) {
  std::string out;
  for (const auto& n : r.not_checked) out += n.rule + ": " + n.needs + "\n";
  return out;
}

TEST(Advisor, TheDemosDataWaitNamesTheDataPipelineAndSuggestsWorkers) {
  AdvisorReport r =
      Advise(Input(Spec(kLoaderParams, kDemoMetrics),
                   {{"samples_per_s", 2011.3}, {"step_time_ms", 15.9}, {"data_wait_ms", 9.8}}));
  ASSERT_EQ(Rules(r), std::vector<std::string>{"data_pipeline"});
  const Advice& a = r.advice[0];
  EXPECT_THAT(a.evidence[0],
              AllOf(HasSubstr("data wait 61.6 % of the step (threshold 10 %)"),
                    HasSubstr("data_wait_ms 9.8 ms"), HasSubstr("step_time_ms 15.9 ms")));
  ASSERT_GE(a.changes.size(), 2u);
  EXPECT_EQ(a.changes[0].param, "num_workers");
  EXPECT_EQ(a.changes[0].value, "2");
  EXPECT_EQ(a.changes[1].param, "prefetch_factor");
  EXPECT_EQ(a.changes[1].value, "4");
  // 9.8 / 15.9 of the step hidden: samples/s up to 1/(1-0.6164) - 1 = +160.7 %; half is +80 %
  EXPECT_EQ(a.expect_arg, "samples_per_s +80%");
  EXPECT_EQ(a.direction, 1);
  EXPECT_THAT(a.expected, HasSubstr("+161% at most"));
  auto parsed = ParseExpectation(Input(Spec(kLoaderParams, kDemoMetrics), {}).spec, a.expect_arg);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_DOUBLE_EQ(*parsed->size, 0.80);
  EXPECT_EQ(a.command,
            "tunectl hypothesis create --workload w --param num_workers=2 --expect "
            "'samples_per_s +80%' --statement '" +
                a.bottleneck + "' --evidence '" + a.evidence[0] + "'");
}

TEST(Advisor, ADataWaitUnderTenPercentIsCheckedAndFine) {
  AdvisorReport r = Advise(
      Input(Spec(kLoaderParams, kDemoMetrics), {{"step_time_ms", 15.9}, {"data_wait_ms", 1.0}}));
  EXPECT_TRUE(r.advice.empty());
  EXPECT_THAT(r.checked_fine, Contains(HasSubstr("data wait 6.3 % of the step (threshold 10 %)")));
}

TEST(Advisor, AParamAtItsMaxIsNotSuggestedAndOnlyDeclaredParamsAre) {
  const std::string params =
      "  num_workers: {type: int, default: 64, min: 0, max: 64}\n"
      "  prefetch_factor: {type: int, default: 12, min: 1, max: 16}\n";
  AdvisorReport r =
      Advise(Input(Spec(params, kDemoMetrics), {{"step_time_ms", 20}, {"data_wait_ms", 10}}));
  ASSERT_EQ(r.advice.size(), 1u);
  ASSERT_EQ(r.advice[0].changes.size(), 1u);
  EXPECT_EQ(r.advice[0].changes[0].param, "prefetch_factor");
  EXPECT_EQ(r.advice[0].changes[0].value, "16");  // doubled, clamped to its max
  for (const auto& c : r.advice[0].changes) EXPECT_NE(c.param, "pin_memory");  // not declared
}

TEST(Advisor, WithNothingToVaryItSaysWhatToDeclareAndPrintsNoCommand) {
  AdvisorReport r = Advise(Input(Spec("  steps: {type: int, default: 10}\n", kDemoMetrics),
                                 {{"step_time_ms", 20}, {"data_wait_ms", 10}}));
  ASSERT_EQ(r.advice.size(), 1u);
  EXPECT_TRUE(r.advice[0].changes.empty());
  EXPECT_THAT(r.advice[0].missing_params,
              HasSubstr("declare num_workers / prefetch_factor / pin_memory as params"));
  EXPECT_EQ(r.advice[0].command, "");
}

TEST(Advisor, MissingFiguresNameTheMetricsEachCheckWouldNeed) {
  AdvisorReport r = Advise(Input(Spec(kLoaderParams, kDemoMetrics), {{"samples_per_s", 100}}));
  EXPECT_TRUE(r.advice.empty());
  const std::string text = NotCheckedText(r);
  EXPECT_THAT(text, HasSubstr("data_pipeline: "));
  EXPECT_THAT(text, HasSubstr("step_time_ms"));  // data_wait_ms is declared, the step has none
  EXPECT_THAT(text, HasSubstr("communication: a communication figure"));
  EXPECT_THAT(text, HasSubstr("kernel_efficiency: "));
  EXPECT_THAT(text, HasSubstr("memory_pressure: "));
  EXPECT_THAT(text, HasSubstr("cpu_overhead: "));
  EXPECT_EQ(r.not_checked.size(), 5u);
}

TEST(Advisor, ExposedCommunicationIsTheProfilersShareLessItsOverlapAndRanksFirst) {
  const std::string params =
      "  num_workers: {type: int, default: 4, min: 0, max: 64}\n"
      "  bucket_cap_mb: {type: int, default: 25, min: 1, max: 1000}\n"
      "  overlap_grad_reduce: {type: bool, default: false}\n";
  AdvisorReport r = Advise(Input(Spec(params, kDemoMetrics), {{"step_time_ms", 100},
                                                              {"data_wait_ms", 15},
                                                              {"profile_comm_pct", 50},
                                                              {"profile_comm_overlap_pct", 40}}));
  // exposed: 50 % x (1 - 0.40) = 30 % of the step, above the data wait's 15 %
  ASSERT_EQ(Rules(r), (std::vector<std::string>{"communication", "data_pipeline"}));
  const Advice& a = r.advice[0];
  EXPECT_THAT(a.evidence[0], HasSubstr("exposed communication 30.0 % of the step"));
  std::map<std::string, std::string> to;
  for (const auto& c : a.changes) to[c.param] = c.value;
  EXPECT_EQ(to["bucket_cap_mb"], "50");
  EXPECT_EQ(to["overlap_grad_reduce"], "true");
  AdvisorReport low = Advise(Input(Spec(params, kDemoMetrics), {{"step_time_ms", 100},
                                                                {"data_wait_ms", 1},
                                                                {"profile_comm_pct", 25},
                                                                {"profile_comm_overlap_pct", 40}}));
  EXPECT_TRUE(low.advice.empty());  // 15 % exposed: under 20 %
}

const char* kModelParams =
    "  hidden_size: {type: int, default: 5120}\n"
    "  ffn_hidden_size: {type: int, default: 13824}\n"
    "  vocab_size: {type: int, default: 50257}\n"
    "  num_attention_heads: {type: int, default: 40}\n"
    "  tensor_model_parallel_size: {type: int, default: 4}\n"
    "  bias_gelu_fusion: {type: bool, default: false}\n";
const char* kGpuMetrics =
    "  tokens_per_s: {pattern: 'tps (?P<value>[0-9.]+)', better: higher, role: primary}\n"
    "  kernel_pct: {pattern: 'k (?P<value>[0-9.]+)', unit: '%', better: higher}\n"
    "  mfu: {pattern: 'mfu (?P<value>[0-9.]+)', unit: '%', better: higher}\n";

std::string Evidence(const Advice& a) {
  std::string out;
  for (const auto& e : a.evidence) out += e + "\n";
  return out;
}

TEST(Advisor, KernelBoundAtLowMfuChecksTheMatmulDimensionsExactly) {
  AdvisorReport r =
      Advise(Input(Spec(kModelParams, kGpuMetrics), {{"kernel_pct", 85}, {"mfu", 30}}));
  ASSERT_EQ(Rules(r), std::vector<std::string>{"kernel_efficiency"});
  const std::string ev = Evidence(r.advice[0]);
  EXPECT_THAT(ev, HasSubstr("hidden_size 5120 is a multiple of 64 (fine)"));
  EXPECT_THAT(ev, Not(HasSubstr("5120 is not a multiple")));
  EXPECT_THAT(ev, Not(HasSubstr("hidden_size 5120 is a multiple of 8 but")));
  EXPECT_THAT(ev, HasSubstr("ffn_hidden_size 13824 is a multiple of 64 (fine)"));
  // 50257 = 8 x 6282 + 1: not a multiple of 8; the next multiple of 64 is 50304 = 64 x 786
  EXPECT_THAT(ev, HasSubstr("vocab_size 50257 is not a multiple of 8"));
  EXPECT_THAT(ev, HasSubstr("50304"));
  EXPECT_THAT(ev, HasSubstr("head dim 128"));  // 5120 / 40
  EXPECT_THAT(ev, HasSubstr("hidden_size 5120 / tensor_model_parallel_size 4 = 1280 per GPU"));
  EXPECT_THAT(ev, HasSubstr("ffn_hidden_size 13824 / tensor_model_parallel_size 4 = 3456 per GPU"));
  ASSERT_FALSE(r.advice[0].changes.empty());
  EXPECT_EQ(r.advice[0].changes[0].param, "bias_gelu_fusion");
  EXPECT_EQ(r.advice[0].changes[0].value, "true");
  for (const auto& c : r.advice[0].changes) EXPECT_NE(c.param, "hidden_size");  // the model
}

TEST(Advisor, FiftyOneTwentyEightIsAMultipleOfEightNotOfSixtyFour) {
  const std::string params =
      "  hidden_size: {type: int, default: 5128}\n"
      "  bias_gelu_fusion: {type: bool, default: false}\n";
  AdvisorReport r = Advise(Input(Spec(params, kGpuMetrics), {{"kernel_pct", 80}, {"mfu", 20}}));
  ASSERT_EQ(r.advice.size(), 1u);
  EXPECT_THAT(Evidence(r.advice[0]),
              HasSubstr("hidden_size 5128 is a multiple of 8 but not of 64"));
  EXPECT_THAT(Evidence(r.advice[0]), HasSubstr("the next multiple of 64 is 5184"));
}

TEST(Advisor, KernelBoundWithGoodMfuOrNotKernelBoundIsFine) {
  auto spec = Spec(kModelParams, kGpuMetrics);
  EXPECT_TRUE(Advise(Input(spec, {{"kernel_pct", 85}, {"mfu", 45}})).advice.empty());
  EXPECT_TRUE(Advise(Input(spec, {{"kernel_pct", 60}, {"mfu", 20}})).advice.empty());
  // kernel-bound, MFU unknown: not checked, naming the MFU it needs
  AdvisorReport r = Advise(Input(Spec(kModelParams,
                                      "  tokens_per_s: {pattern: 't (?P<value>[0-9.]+)', better: "
                                      "higher, role: primary}\n  kernel_pct: {pattern: 'k "
                                      "(?P<value>[0-9.]+)', unit: '%', better: higher}\n"),
                                 {{"kernel_pct", 85}}));
  EXPECT_THAT(NotCheckedText(r), HasSubstr("kernel_efficiency: kernels run 85.0 % of the step"));
  EXPECT_THAT(NotCheckedText(r), HasSubstr("mfu"));
}

TEST(Advisor, MemoryNearTheLimitSuggestsRecomputationAndAHalfMicroBatch) {
  const std::string params =
      "  activation_checkpointing: {type: bool, default: false}\n"
      "  micro_batch_size: {type: int, default: 8, min: 1}\n"
      "  checkpoint_interval: {type: int, default: 1000}\n";
  const std::string metrics = std::string(kGpuMetrics) +
                              "  mem_used_pct: {pattern: 'mem (?P<value>[0-9.]+)', unit: '%', "
                              "better: lower}\n";
  AdvisorReport r = Advise(Input(Spec(params, metrics), {{"mem_used_pct", 95}}));
  ASSERT_EQ(Rules(r), std::vector<std::string>{"memory_pressure"});
  std::map<std::string, std::string> to;
  for (const auto& c : r.advice[0].changes) to[c.param] = c.value;
  EXPECT_EQ(to["activation_checkpointing"], "true");
  EXPECT_EQ(to["micro_batch_size"], "4");
  EXPECT_EQ(to.count("checkpoint_interval"), 0u);  // saving checkpoints is not recomputation
  EXPECT_EQ(r.advice[0].expect_arg, "tokens_per_s unchanged");
  EXPECT_TRUE(ParseExpectation(Spec(params, metrics), r.advice[0].expect_arg).ok());
  EXPECT_TRUE(Advise(Input(Spec(params, metrics), {{"mem_used_pct", 70}})).advice.empty());
}

TEST(Advisor, LowGpuUtilisationWithoutDataWaitIsCpuOverhead) {
  const std::string params =
      "  cuda_graphs: {type: bool, default: false}\n"
      "  micro_batch_size: {type: int, default: 4, min: 1, max: 64}\n";
  const std::string metrics =
      "  samples_per_s: {pattern: 'sps (?P<value>[0-9.]+)', better: higher, role: primary}\n"
      "  gpu_util: {pattern: 'util (?P<value>[0-9.]+)', unit: '%', better: higher}\n"
      "  data_wait_pct: {pattern: 'dw (?P<value>[0-9.]+)', unit: '%', better: lower}\n";
  AdvisorReport r = Advise(Input(Spec(params, metrics), {{"gpu_util", 50}, {"data_wait_pct", 5}}));
  ASSERT_EQ(Rules(r), std::vector<std::string>{"cpu_overhead"});
  std::map<std::string, std::string> to;
  for (const auto& c : r.advice[0].changes) to[c.param] = c.value;
  EXPECT_EQ(to["cuda_graphs"], "true");
  EXPECT_EQ(to["micro_batch_size"], "8");
  // a data wait of 30 %: the data pipeline comes first, not CPU overhead
  AdvisorReport d = Advise(Input(Spec(params, metrics), {{"gpu_util", 50}, {"data_wait_pct", 30}}));
  EXPECT_EQ(Rules(d), std::vector<std::string>{"data_pipeline"});
}

TEST(Advisor, TheSameInputGivesTheSameReport) {
  auto in =
      Input(Spec(kLoaderParams, kDemoMetrics), {{"step_time_ms", 15.9}, {"data_wait_ms", 9.8}});
  EXPECT_EQ(Advise(in).advice[0].command, Advise(in).advice[0].command);
}

TEST(TensorCoreAlignment, FiveThousandOneHundredTwentyIsAMultipleOfSixtyFour) {
  EXPECT_EQ(TensorCoreAlignment(5120), 64);
  EXPECT_EQ(TensorCoreAlignment(5128), 8);
  EXPECT_EQ(TensorCoreAlignment(50257), 0);
  EXPECT_EQ(TensorCoreAlignment(50304), 64);
  EXPECT_EQ(TensorCoreAlignment(0), 0);
}

}  // namespace
}  // namespace tunectl

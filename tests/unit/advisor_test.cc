#include "core/advisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>

#include "core/experiment.h"
#include "core/spec.h"

namespace tunectl {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A workload with the given params and metrics (YAML mapping bodies, two-space indented).
WorkloadSpec Spec(const std::string& params, const std::string& metrics) {
  const std::string yaml = "name: w\ncommand: [train]\nparams:\n" + params +
                           "metrics:\n"
                           "  samples_per_s: {pattern: 'sps (?P<value>[0-9.]+)', better: higher, "
                           "role: primary}\n" +
                           metrics;
  auto s = ParseWorkloadSpec(yaml);
  EXPECT_TRUE(s.ok()) << s.status().message() << "\n" << yaml;
  return s.ok() ? *s : WorkloadSpec{};
}

// A metric read by a pattern (the source does not matter to the advisor).
std::string M(const std::string& name, const std::string& extra = "better: lower") {
  return "  " + name + ": {pattern: '" + name + " (?P<value>[0-9.]+)', " + extra + "}\n";
}

AdvisorInput Input(WorkloadSpec spec, std::map<std::string, double> medians,
                   ParamValues overrides = {}) {
  AdvisorInput in;
  in.params = DefaultParamValues(spec);
  for (const auto& [k, v] : overrides) in.params[k] = v;
  in.spec = std::move(spec);
  in.medians = std::move(medians);
  in.workload_flag = "--workload w";
  return in;
}

const Advice* Find(const AdvisorReport& r, const std::string& rule) {
  for (const auto& a : r.advice)
    if (a.rule == rule) return &a;
  return nullptr;
}

const NotChecked* FindNotChecked(const AdvisorReport& r, const std::string& rule) {
  for (const auto& n : r.not_checked)
    if (n.rule == rule) return &n;
  return nullptr;
}

std::string AllText(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

const SuggestedChange* Change(const Advice& a, const std::string& param) {
  for (const auto& c : a.changes)
    if (c.param == param) return &c;
  return nullptr;
}

// The shipped demo's shape: loader params, step_time_ms and data_wait_ms from the log.
WorkloadSpec Demo() {
  return Spec(
      "  num_workers:     {type: int, default: 1, min: 0, max: 64}\n"
      "  prefetch_factor: {type: int, default: 2, min: 1, max: 16}\n"
      "  steps:           {type: int, default: 60, min: 1}\n",
      M("step_time_ms") + M("data_wait_ms"));
}

// ---- data_pipeline ----------------------------------------------------------------------------

TEST(Advisor, DataPipelineFiresOnTheDemoWorkload) {
  auto r = Advise(
      Input(Demo(), {{"samples_per_s", 2011}, {"step_time_ms", 15.9}, {"data_wait_ms", 9.8}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  EXPECT_NEAR(a->score, 61.6, 0.1);
  EXPECT_THAT(a->bottleneck, HasSubstr("62 %"));
  EXPECT_THAT(a->evidence.front(), HasSubstr("data wait 61.6 % of the step (threshold 10 %)"));
  EXPECT_THAT(a->evidence.front(), HasSubstr("data_wait_ms 9.8 ms of step_time_ms 15.9 ms"));
  ASSERT_EQ(a->changes.size(), 2u);
  EXPECT_EQ(a->changes[0].param, "num_workers");
  EXPECT_EQ(a->changes[0].value, "2");
  EXPECT_THAT(a->changes[0].why, HasSubstr("1 -> 2"));
  EXPECT_EQ(a->changes[1].param, "prefetch_factor");
  EXPECT_EQ(a->changes[1].value, "4");
  EXPECT_EQ(a->direction, 1);
  // s = 0.616: throughput up by at most 1/(1-s)-1 = 161 %; expected half of it.
  EXPECT_EQ(a->expect_arg, "samples_per_s +80%");
  EXPECT_THAT(a->expected, HasSubstr("samples_per_s +161% at most"));
  EXPECT_THAT(a->command, HasSubstr("tunectl hypothesis create --workload w --param "
                                    "num_workers=2 --expect 'samples_per_s +80%' --statement "
                                    "'the data pipeline: the step waits 62 % of its time for "
                                    "data' --evidence 'data wait 61.6 %"));
  EXPECT_THAT(a->missing_params, IsEmpty());
}

TEST(Advisor, DataPipelineDoesNotFireBelowTenPercent) {
  auto r = Advise(Input(Demo(), {{"step_time_ms", 15.9}, {"data_wait_ms", 0.5}}));
  EXPECT_EQ(Find(r, "data_pipeline"), nullptr);
  EXPECT_THAT(AllText(r.checked_fine),
              HasSubstr("data pipeline: data wait 3.1 % of the step (threshold 10 %)"));
  EXPECT_EQ(FindNotChecked(r, "data_pipeline"), nullptr);
}

TEST(Advisor, DataPipelineReadsAProfilerShare) {
  auto spec = Demo();
  auto r = Advise(Input(spec, {{"profile_dataloader_pct", 25}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->score, 25);
  EXPECT_THAT(a->evidence.front(), HasSubstr("profile_dataloader_pct 25.0 %"));
}

TEST(Advisor, DataPipelineSuggestsPinMemoryWhenDeclaredFalse) {
  auto spec = Spec("  pin_memory: {type: bool, default: false}\n", M("data_wait_pct"));
  auto r = Advise(Input(spec, {{"data_wait_pct", 30}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->changes.size(), 1u);
  EXPECT_EQ(a->changes[0].param, "pin_memory");
  EXPECT_EQ(a->changes[0].value, "true");
}

TEST(Advisor, RuleWithoutMatchingParamsSaysWhatToDeclareAndHasNoCommand) {
  auto spec =
      Spec("  lr: {type: float, default: 0.001, min: 0}\n", M("step_time_ms") + M("data_wait_ms"));
  auto r = Advise(Input(spec, {{"step_time_ms", 15.9}, {"data_wait_ms", 9.8}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->changes, IsEmpty());
  EXPECT_THAT(a->missing_params,
              HasSubstr("declare num_workers / prefetch_factor / pin_memory as params"));
  EXPECT_EQ(a->command, "");
  EXPECT_EQ(a->expect_arg, "samples_per_s +80%");  // the expectation still stands
}

TEST(Advisor, ParamsAreClampedAtTheirMax) {
  auto r = Advise(Input(Demo(), {{"step_time_ms", 15.9}, {"data_wait_ms", 9.8}},
                        {{"num_workers", "40"}, {"prefetch_factor", "12"}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(Change(*a, "num_workers"), nullptr);
  EXPECT_EQ(Change(*a, "num_workers")->value, "64");
  EXPECT_THAT(Change(*a, "num_workers")->why, HasSubstr("clamped to its max"));
  EXPECT_EQ(Change(*a, "prefetch_factor")->value, "16");
}

TEST(Advisor, AParamAlreadyAtItsMaxIsSkipped) {
  auto r = Advise(Input(Demo(), {{"step_time_ms", 15.9}, {"data_wait_ms", 9.8}},
                        {{"num_workers", "64"}, {"prefetch_factor", "16"}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->changes, IsEmpty());
  EXPECT_THAT(a->missing_params, HasSubstr("num_workers is already at its max 64"));
  EXPECT_THAT(a->missing_params, HasSubstr("declare pin_memory as params"));
  EXPECT_EQ(a->command, "");
}

TEST(Advisor, ZeroWorkersGoToOne) {
  auto r = Advise(
      Input(Demo(), {{"step_time_ms", 15.9}, {"data_wait_ms", 9.8}}, {{"num_workers", "0"}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(Change(*a, "num_workers")->value, "1");
  EXPECT_THAT(Change(*a, "prefetch_factor")->why, HasSubstr("workers > 0"));
}

TEST(Advisor, DeepSpeedStepMsIsNotTheStepTime) {
  // step_ms is DeepSpeed's optimizer step: a data wait time has nothing to be divided by.
  auto spec = Spec("  num_workers: {type: int, default: 1, min: 0}\n",
                   "  step_ms: {parser: deepspeed}\n" + M("data_wait_ms"));
  auto r = Advise(Input(spec, {{"step_ms", 5}, {"data_wait_ms", 9.8}}));
  EXPECT_EQ(Find(r, "data_pipeline"), nullptr);
  const NotChecked* n = FindNotChecked(r, "data_pipeline");
  ASSERT_NE(n, nullptr);
  EXPECT_THAT(n->needs, HasSubstr("step_time_ms"));
  EXPECT_THAT(n->needs, HasSubstr("to divide data_wait_ms by"));
}

TEST(Advisor, AParserFieldNamesTheFigure) {
  // A metric named t reading megatron's iter_ms is the step time; DeepSpeed's iter_s is seconds.
  auto spec = Spec("  num_workers: {type: int, default: 1, min: 0}\n",
                   "  t: {parser: megatron, field: iter_ms}\n" + M("data_ms"));
  auto r = Advise(Input(spec, {{"t", 200}, {"data_ms", 50}}));
  const Advice* a = Find(r, "data_pipeline");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->score, 25);
  EXPECT_THAT(a->evidence.front(), HasSubstr("t (megatron iter_ms) 200.0 ms"));

  auto spec2 = Spec("  num_workers: {type: int, default: 1, min: 0}\n",
                    "  iter_s: {parser: deepspeed}\n" + M("data_ms"));
  auto r2 = Advise(Input(spec2, {{"iter_s", 0.4}, {"data_ms", 100}}));
  ASSERT_NE(Find(r2, "data_pipeline"), nullptr);
  EXPECT_DOUBLE_EQ(Find(r2, "data_pipeline")->score, 25);
}

// ---- communication ----------------------------------------------------------------------------

WorkloadSpec CommSpec() {
  return Spec(
      "  bucket_cap_mb: {type: int, default: 25, min: 1, max: 1000}\n"
      "  overlap_grad_reduce: {type: bool, default: false}\n"
      "  nccl_algo: {type: enum, values: [Ring, Tree], default: Ring}\n"
      "  nccl_buffsize: {type: int, default: 4194304, min: 1}\n"
      "  gradient_accumulation_steps: {type: int, default: 4, min: 1, max: 64}\n",
      "");
}

TEST(Advisor, CommunicationFiresOnExposedShareAndSaysBoth) {
  auto r = Advise(Input(CommSpec(), {{"profile_comm_pct", 50}, {"profile_comm_overlap_pct", 40}}));
  const Advice* a = Find(r, "communication");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->score, 30);  // 50 % × (1 − 0.4)
  EXPECT_THAT(a->evidence.front(), HasSubstr("profile_comm_pct 50.0 %"));
  EXPECT_THAT(a->evidence.front(), HasSubstr("profile_comm_overlap_pct 40.0 %"));
  EXPECT_THAT(a->evidence.front(), HasSubstr("30.0 % exposed"));
  ASSERT_NE(Change(*a, "bucket_cap_mb"), nullptr);
  EXPECT_EQ(Change(*a, "bucket_cap_mb")->value, "50");
  EXPECT_THAT(Change(*a, "bucket_cap_mb")->why, HasSubstr("DDP's bucket_cap_mb"));
  EXPECT_EQ(Change(*a, "overlap_grad_reduce")->value, "true");
  EXPECT_EQ(Change(*a, "nccl_algo")->value, "Tree");
  EXPECT_EQ(Change(*a, "nccl_buffsize"), nullptr);  // an int NCCL setting: mentioned only
  EXPECT_THAT(AllText(a->evidence), HasSubstr("nccl_buffsize (4194304)"));
  ASSERT_NE(Change(*a, "gradient_accumulation_steps"), nullptr);
  EXPECT_EQ(Change(*a, "gradient_accumulation_steps")->value, "8");
  EXPECT_THAT(Change(*a, "gradient_accumulation_steps")->why,
              HasSubstr("changes the optimisation"));
  EXPECT_EQ(a->changes.front().param, "bucket_cap_mb");
}

TEST(Advisor, CommunicationHiddenUnderComputeDoesNotFire) {
  auto r = Advise(Input(CommSpec(), {{"profile_comm_pct", 30}, {"profile_comm_overlap_pct", 50}}));
  EXPECT_EQ(Find(r, "communication"), nullptr);
  EXPECT_THAT(AllText(r.checked_fine),
              HasSubstr("communication: exposed 15.0 % of the step (threshold 20 %)"));
}

TEST(Advisor, CommunicationFromAnAllReduceTime) {
  auto spec = Spec("  reduce_bucket_size: {type: int, default: 500000000, min: 1}\n",
                   M("iter_ms") + "  bwd_allreduce_ms: {parser: deepspeed}\n");
  auto r = Advise(Input(spec, {{"iter_ms", 400}, {"bwd_allreduce_ms", 120}}));
  const Advice* a = Find(r, "communication");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->score, 30);
  EXPECT_EQ(Change(*a, "reduce_bucket_size")->value, "1000000000");
  EXPECT_THAT(Change(*a, "reduce_bucket_size")->why, HasSubstr("DeepSpeed's reduce_bucket_size"));
}

// ---- kernel_efficiency ------------------------------------------------------------------------

WorkloadSpec ModelSpec(const std::string& extra = "") {
  return Spec(
      "  hidden_size: {type: int, default: 5120, min: 1}\n"
      "  ffn_hidden_size: {type: int, default: 13824, min: 1}\n"
      "  vocab_size: {type: int, default: 50257, min: 1}\n"
      "  num_attention_heads: {type: int, default: 40, min: 1}\n"
      "  bias_gelu_fusion: {type: bool, default: false}\n"
      "  torch_compile: {type: bool, default: false}\n" +
          extra,
      M("kernel_pct") + M("mfu", "unit: '%', better: higher"));
}

TEST(Advisor, KernelEfficiencyStatesDivisibilityFacts) {
  auto r = Advise(Input(ModelSpec(), {{"kernel_pct", 90}, {"mfu", 20}}));
  const Advice* a = Find(r, "kernel_efficiency");
  ASSERT_NE(a, nullptr);
  const std::string ev = AllText(a->evidence);
  EXPECT_THAT(ev, HasSubstr("hidden_size 5120 is a multiple of 64 (fine)"));
  EXPECT_THAT(ev, HasSubstr("ffn_hidden_size 13824 is a multiple of 64 (fine)"));
  EXPECT_THAT(ev, HasSubstr("vocab_size 50257 is not a multiple of 8: fp16/bf16 Tensor Core "
                            "matmuls pad or fall back; pad it to 50304 (the next multiple of 64)"));
  EXPECT_THAT(ev, HasSubstr("head dim 128 (hidden_size 5120 / num_attention_heads 40) is a "
                            "multiple of 64 (fine)"));
  EXPECT_THAT(ev, Not(HasSubstr("5120 is not")));
  EXPECT_THAT(ev, HasSubstr("changes the model"));
  // The model's shape is never a suggested change.
  EXPECT_EQ(Change(*a, "vocab_size"), nullptr);
  EXPECT_EQ(Change(*a, "hidden_size"), nullptr);
  EXPECT_EQ(Change(*a, "bias_gelu_fusion")->value, "true");
  EXPECT_EQ(Change(*a, "torch_compile")->value, "true");
  // 90 % kernels at 20 % MFU: half the kernel time would go at 40 % MFU.
  EXPECT_DOUBLE_EQ(a->score, 45);
}

TEST(Advisor, KernelEfficiencyNamesAMultipleOfEightThatIsNotOfSixtyFour) {
  auto r = Advise(Input(ModelSpec(), {{"kernel_pct", 90}, {"mfu", 20}},
                        {{"hidden_size", "5128"}, {"num_attention_heads", "8"}}));
  const Advice* a = Find(r, "kernel_efficiency");
  ASSERT_NE(a, nullptr);
  const std::string ev = AllText(a->evidence);
  EXPECT_THAT(ev, HasSubstr("hidden_size 5128 is a multiple of 8 but not of 64"));
  EXPECT_THAT(ev, HasSubstr("the next multiple of 64 is 5184"));
  EXPECT_THAT(ev, Not(HasSubstr("5128 is not a multiple of 8")));
  EXPECT_THAT(ev, HasSubstr("head dim 641 (hidden_size 5128 / num_attention_heads 8) is not a "
                            "multiple of 8"));
}

TEST(Advisor, KernelEfficiencyChecksTensorParallelShards) {
  auto r = Advise(Input(
      ModelSpec("  tensor_model_parallel_size: {type: int, default: 4, min: 1}\n"
                "  make_vocab_size_divisible_by: {type: int, default: 128, min: 1, max: 1024}\n"),
      {{"kernel_pct", 80}, {"mfu", 30}}));
  const Advice* a = Find(r, "kernel_efficiency");
  ASSERT_NE(a, nullptr);
  const std::string ev = AllText(a->evidence);
  // Megatron-LM pads 50257 to a multiple of 128 × 4 = 512: 50688.
  EXPECT_THAT(ev, HasSubstr("Megatron-LM pads vocab_size 50257 to 50688 (a multiple of "
                            "make_vocab_size_divisible_by 128 × tp 4)"));
  EXPECT_THAT(ev, HasSubstr("ffn_hidden_size 13824 / tensor_model_parallel_size 4 = 3456 per GPU "
                            "is a multiple of 64 (fine)"));
  EXPECT_THAT(ev, HasSubstr("hidden_size 5120 / tensor_model_parallel_size 4 = 1280 per GPU is a "
                            "multiple of 64 (fine)"));
  EXPECT_THAT(ev, HasSubstr("padded vocab 50688 / tensor_model_parallel_size 4 = 12672 per GPU is "
                            "a multiple of 64 (fine)"));
  EXPECT_THAT(ev, HasSubstr("num_attention_heads 40 / tensor_model_parallel_size 4 = 10 heads per "
                            "GPU (fine)"));
  EXPECT_EQ(Change(*a, "make_vocab_size_divisible_by"), nullptr);  // already 128
}

TEST(Advisor, KernelEfficiencySuggestsVocabPaddingAndNamesUnevenShards) {
  auto r = Advise(Input(
      ModelSpec("  tp: {type: int, default: 3, min: 1}\n"
                "  make_vocab_size_divisible_by: {type: int, default: 1, min: 1, max: 1024}\n"),
      {{"kernel_pct", 80}, {"mfu", 30}}));
  const Advice* a = Find(r, "kernel_efficiency");
  ASSERT_NE(a, nullptr);
  const std::string ev = AllText(a->evidence);
  EXPECT_THAT(ev, HasSubstr("num_attention_heads 40 does not divide by tp 3"));
  ASSERT_NE(Change(*a, "make_vocab_size_divisible_by"), nullptr);
  EXPECT_EQ(a->changes.front().param, "make_vocab_size_divisible_by");
  EXPECT_EQ(a->changes.front().value, "128");
}

TEST(Advisor, KernelEfficiencyDoesNotFireAtHighMfuOrLowKernelShare) {
  auto r = Advise(Input(ModelSpec(), {{"kernel_pct", 90}, {"mfu", 45}}));
  EXPECT_EQ(Find(r, "kernel_efficiency"), nullptr);
  EXPECT_THAT(AllText(r.checked_fine), HasSubstr("MFU 45.0 % (threshold 40 %)"));
  r = Advise(Input(ModelSpec(), {{"kernel_pct", 50}}));
  EXPECT_EQ(Find(r, "kernel_efficiency"), nullptr);
  EXPECT_EQ(FindNotChecked(r, "kernel_efficiency"), nullptr);  // MFU not needed below 70 %
  EXPECT_THAT(AllText(r.checked_fine), HasSubstr("kernels 50.0 % of the step (threshold 70 %)"));
}

TEST(Advisor, KernelEfficiencyWithoutMfuIsNotCheckedNamingMfu) {
  auto r = Advise(Input(ModelSpec(), {{"kernel_pct", 90}}));
  EXPECT_EQ(Find(r, "kernel_efficiency"), nullptr);
  const NotChecked* n = FindNotChecked(r, "kernel_efficiency");
  ASSERT_NE(n, nullptr);
  EXPECT_THAT(n->needs, AllOf(HasSubstr("MFU"), HasSubstr("mfu_pct"), HasSubstr("90.0 %")));
}

TEST(Advisor, MfuAsAFractionAndSmActiveAsAFraction) {
  auto spec = Spec("  cudnn_benchmark: {type: bool, default: false}\n",
                   "  sm: {prometheus: dcgm, match: 'DCGM_FI_PROF_SM_ACTIVE', better: higher}\n"
                   "  train_device_mfu: {parser: lightning_csv}\n");
  auto r = Advise(Input(spec, {{"sm", 0.85}, {"train_device_mfu", 0.25}}));
  const Advice* a = Find(r, "kernel_efficiency");
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->evidence.front(), HasSubstr("SM active 85.0 %"));
  EXPECT_THAT(a->evidence.front(), HasSubstr("MFU 25.0 %"));
  EXPECT_EQ(Change(*a, "cudnn_benchmark")->value, "true");
  EXPECT_THAT(AllText(a->evidence), HasSubstr("no matmul dimension is declared"));
}

// ---- memory_pressure --------------------------------------------------------------------------

TEST(Advisor, MemoryPressureFiresWithHonestExpectation) {
  auto spec = Spec(
      "  recompute_granularity: {type: enum, values: [none, selective, full], default: "
      "selective}\n"
      "  save_checkpoint: {type: bool, default: false}\n"
      "  micro_batch_size: {type: int, default: 8, min: 1, max: 64}\n",
      M("mem_used_pct"));
  auto r = Advise(Input(spec, {{"mem_used_pct", 95}}));
  const Advice* a = Find(r, "memory_pressure");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(Change(*a, "recompute_granularity")->value, "full");
  EXPECT_EQ(Change(*a, "micro_batch_size")->value, "4");
  EXPECT_EQ(Change(*a, "save_checkpoint"), nullptr);  // saving checkpoints is not recomputation
  EXPECT_EQ(a->direction, 0);
  EXPECT_EQ(a->expect_arg, "samples_per_s unchanged");
  EXPECT_THAT(a->expected, HasSubstr("headroom"));
  EXPECT_DOUBLE_EQ(a->score, 0);
}

TEST(Advisor, MemoryPressureFromDcgmFramebuffer) {
  auto spec = Spec("  activation_checkpointing: {type: bool, default: false}\n",
                   "  fb_used: {prometheus: dcgm, match: 'DCGM_FI_DEV_FB_USED', better: lower}\n"
                   "  fb_free: {prometheus: dcgm, match: 'DCGM_FI_DEV_FB_FREE', better: higher}\n");
  auto r = Advise(Input(spec, {{"fb_used", 76000}, {"fb_free", 4000}}));
  const Advice* a = Find(r, "memory_pressure");
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->evidence.front(), HasSubstr("memory 95.0 % of the device"));
  EXPECT_EQ(Change(*a, "activation_checkpointing")->value, "true");
}

TEST(Advisor, MemoryPressureFromPeakMemoryOverACapacityParam) {
  auto spec = Spec("  gpu_memory_gib: {type: float, default: 80, min: 1}\n",
                   "  mem_max_reserved_mb: {parser: megatron}\n");
  auto r = Advise(Input(spec, {{"mem_max_reserved_mb", 40960}}));
  EXPECT_EQ(Find(r, "memory_pressure"), nullptr);
  EXPECT_THAT(AllText(r.checked_fine), HasSubstr("memory pressure: 50.0 % of the device in use"));

  auto without =
      Spec("  x: {type: int, default: 1}\n", "  mem_max_reserved_mb: {parser: megatron}\n");
  r = Advise(Input(without, {{"mem_max_reserved_mb", 40960}}));
  const NotChecked* n = FindNotChecked(r, "memory_pressure");
  ASSERT_NE(n, nullptr);
  EXPECT_THAT(n->needs, HasSubstr("gpu_memory_gib"));
  EXPECT_THAT(n->needs, HasSubstr("mem_max_reserved_mb"));
}

// ---- cpu_overhead -----------------------------------------------------------------------------

WorkloadSpec CpuSpec() {
  return Spec(
      "  cuda_graphs: {type: bool, default: false}\n"
      "  micro_batch_size: {type: int, default: 8, min: 1, max: 12}\n",
      M("gpu_util", "better: higher") + M("data_wait_pct") + M("mem_used_pct"));
}

TEST(Advisor, CpuOverheadFiresWhenTheGpuIdlesWithoutDataWaits) {
  auto r = Advise(Input(CpuSpec(), {{"gpu_util", 50}, {"data_wait_pct", 5}, {"mem_used_pct", 40}}));
  const Advice* a = Find(r, "cpu_overhead");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->score, 45);
  EXPECT_EQ(a->changes.front().param, "cuda_graphs");
  EXPECT_EQ(a->changes.front().value, "true");
  EXPECT_EQ(Change(*a, "micro_batch_size")->value, "12");  // 16 clamped to the max
}

TEST(Advisor, CpuOverheadKeepsTheMicroBatchUnderMemoryPressure) {
  auto r = Advise(Input(CpuSpec(), {{"gpu_util", 50}, {"data_wait_pct", 5}, {"mem_used_pct", 85}}));
  const Advice* a = Find(r, "cpu_overhead");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(Change(*a, "micro_batch_size"), nullptr);
}

TEST(Advisor, CpuOverheadDoesNotFireWhenBusyOrWhenDataWaitsExplainIt) {
  auto r = Advise(Input(CpuSpec(), {{"gpu_util", 85}, {"data_wait_pct", 5}}));
  EXPECT_EQ(Find(r, "cpu_overhead"), nullptr);
  EXPECT_THAT(AllText(r.checked_fine), HasSubstr("GPU utilisation 85.0 % (threshold 70 %)"));
  r = Advise(Input(CpuSpec(), {{"gpu_util", 50}, {"data_wait_pct", 30}}));
  EXPECT_EQ(Find(r, "cpu_overhead"), nullptr);
  EXPECT_NE(Find(r, "data_pipeline"), nullptr);
  EXPECT_THAT(AllText(r.checked_fine), HasSubstr("the data pipeline comes first"));
}

TEST(Advisor, CpuOverheadReadsDcgmUtilAndProfilerIdle) {
  auto spec = Spec("  cuda_graphs: {type: bool, default: false}\n",
                   "  util: {prometheus: dcgm, match: 'DCGM_FI_DEV_GPU_UTIL', better: higher}\n");
  auto r = Advise(Input(spec, {{"util", 40}, {"profile_dataloader_pct", 2}}));
  ASSERT_NE(Find(r, "cpu_overhead"), nullptr);
  EXPECT_THAT(Find(r, "cpu_overhead")->evidence.front(), HasSubstr("util (DCGM_FI_DEV_GPU_UTIL)"));
  r = Advise(Input(spec, {{"profile_idle_pct", 60}, {"profile_dataloader_pct", 2}}));
  ASSERT_NE(Find(r, "cpu_overhead"), nullptr);
  EXPECT_DOUBLE_EQ(Find(r, "cpu_overhead")->score, 58);
}

// ---- across rules -----------------------------------------------------------------------------

TEST(Advisor, MissingFiguresAreNotCheckedNamingTheMetrics) {
  auto r = Advise(Input(Demo(), {{"samples_per_s", 2000}}));
  EXPECT_THAT(r.advice, IsEmpty());
  EXPECT_THAT(r.checked_fine, IsEmpty());
  ASSERT_EQ(r.not_checked.size(), 5u);
  EXPECT_THAT(FindNotChecked(r, "data_pipeline")->needs,
              AllOf(HasSubstr("data_wait_ms"), HasSubstr("data_wait_pct"),
                    HasSubstr("profile_dataloader_pct")));
  EXPECT_THAT(
      FindNotChecked(r, "communication")->needs,
      AllOf(HasSubstr("comm_pct"), HasSubstr("allreduce_ms"), HasSubstr("profile_comm_pct")));
  EXPECT_THAT(
      FindNotChecked(r, "kernel_efficiency")->needs,
      AllOf(HasSubstr("kernel_pct"), HasSubstr("DCGM_FI_PROF_SM_ACTIVE"), HasSubstr("mfu")));
  EXPECT_THAT(FindNotChecked(r, "memory_pressure")->needs,
              AllOf(HasSubstr("mem_used_pct"), HasSubstr("DCGM_FI_DEV_FB_USED"),
                    HasSubstr("gpu_memory_gib")));
  EXPECT_THAT(FindNotChecked(r, "cpu_overhead")->needs,
              AllOf(HasSubstr("gpu_util"), HasSubstr("DCGM_FI_DEV_GPU_UTIL"),
                    HasSubstr("profile_idle_pct")));
}

WorkloadSpec Everything() {
  return Spec(
      "  num_workers: {type: int, default: 1, min: 0, max: 64}\n"
      "  bucket_cap_mb: {type: int, default: 25, min: 1}\n"
      "  torch_compile: {type: bool, default: false}\n"
      "  hidden_size: {type: int, default: 4096, min: 1}\n"
      "  activation_checkpointing: {type: bool, default: false}\n"
      "  micro_batch_size: {type: int, default: 4, min: 1}\n",
      M("step_time_ms") + M("data_wait_ms") + M("comm_pct") + M("kernel_pct") +
          M("mfu", "unit: '%', better: higher") + M("mem_used_pct"));
}

TEST(Advisor, RanksByShareOfTheStep) {
  auto r = Advise(Input(Everything(), {{"step_time_ms", 100},
                                       {"data_wait_ms", 15},
                                       {"comm_pct", 30},
                                       {"kernel_pct", 75},
                                       {"mfu", 10},
                                       {"mem_used_pct", 95}}));
  ASSERT_EQ(r.advice.size(), 4u);
  // kernel 75 × (1 − 10/40) = 56.25 > comm 30 > data 15 > memory 0.
  EXPECT_EQ(r.advice[0].rule, "kernel_efficiency");
  EXPECT_EQ(r.advice[1].rule, "communication");
  EXPECT_EQ(r.advice[2].rule, "data_pipeline");
  EXPECT_EQ(r.advice[3].rule, "memory_pressure");
}

TEST(Advisor, EqualScoresKeepRuleOrder) {
  auto r =
      Advise(Input(Everything(), {{"step_time_ms", 100}, {"data_wait_ms", 30}, {"comm_pct", 30}}));
  ASSERT_EQ(r.advice.size(), 2u);
  EXPECT_EQ(r.advice[0].rule, "data_pipeline");
  EXPECT_EQ(r.advice[1].rule, "communication");
}

TEST(Advisor, EveryExpectArgParsesAndEveryChangeIsADeclaredValidParam) {
  const WorkloadSpec spec = Everything();
  auto r = Advise(Input(spec, {{"step_time_ms", 100},
                               {"data_wait_ms", 15},
                               {"comm_pct", 30},
                               {"kernel_pct", 75},
                               {"mfu", 10},
                               {"mem_used_pct", 95}}));
  ASSERT_FALSE(r.advice.empty());
  for (const auto& a : r.advice) {
    auto e = ParseExpectation(spec, a.expect_arg);
    ASSERT_TRUE(e.ok()) << a.rule << ": " << a.expect_arg << ": " << e.status().message();
    EXPECT_EQ(e->direction, a.direction) << a.rule;
    for (const auto& c : a.changes) {
      const ParamSpec* p = spec.FindParam(c.param);
      ASSERT_NE(p, nullptr) << a.rule << " suggested undeclared " << c.param;
      auto canon = CanonicalParamValue(*p, c.value);
      ASSERT_TRUE(canon.ok()) << canon.status().message();
      EXPECT_EQ(*canon, c.value);
    }
  }
}

TEST(Advisor, NoUndeclaredParamIsSuggested) {
  // Nothing declared to vary: every rule that fires names what to declare, changes nothing.
  auto spec = Spec("  steps: {type: int, default: 60, min: 1}\n",
                   M("step_time_ms") + M("data_wait_ms") + M("comm_pct") + M("kernel_pct") +
                       M("mfu", "unit: '%', better: higher") + M("mem_used_pct"));
  auto r = Advise(Input(spec, {{"step_time_ms", 100},
                               {"data_wait_ms", 15},
                               {"comm_pct", 30},
                               {"kernel_pct", 75},
                               {"mfu", 10},
                               {"mem_used_pct", 95}}));
  ASSERT_EQ(r.advice.size(), 4u);
  for (const auto& a : r.advice) {
    EXPECT_THAT(a.changes, IsEmpty()) << a.rule;
    EXPECT_THAT(a.missing_params, HasSubstr("declare")) << a.rule;
    EXPECT_EQ(a.command, "") << a.rule;
  }
}

TEST(Advisor, ALowerIsBetterPrimaryExpectsADecrease) {
  auto r = ParseWorkloadSpec(R"(
name: w
command: [train]
params:
  num_workers: {type: int, default: 2, min: 0}
metrics:
  step_time_ms: {pattern: 'st (?P<value>[0-9.]+)', better: lower, role: primary}
  data_wait_ms: {pattern: 'dw (?P<value>[0-9.]+)', better: lower}
)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto report = Advise(Input(*r, {{"step_time_ms", 100}, {"data_wait_ms", 40}}));
  const Advice* a = Find(report, "data_pipeline");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->direction, -1);
  EXPECT_EQ(a->expect_arg, "step_time_ms -20%");  // bound −40 %, half of it
  EXPECT_THAT(a->expected, HasSubstr("step_time_ms -40% at most"));
  auto e = ParseExpectation(*r, a->expect_arg);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->direction, -1);
  EXPECT_DOUBLE_EQ(*e->size, 0.20);
}

TEST(Advisor, CommandQuotesAnApostropheAndOmitsAnEmptyWorkloadFlag) {
  Advice a;
  a.bottleneck = "the data pipeline";
  a.evidence = {"the loader's queue is empty"};
  a.changes = {{"num_workers", "2", "why"}};
  a.expect_arg = "samples_per_s +10%";
  EXPECT_EQ(HypothesisCommand(a, ""),
            "tunectl hypothesis create --param num_workers=2 --expect 'samples_per_s +10%' "
            "--statement 'the data pipeline' --evidence 'the loader'\\''s queue is empty'");
  EXPECT_THAT(HypothesisCommand(a, "--workload demo"),
              HasSubstr("tunectl hypothesis create --workload demo --param num_workers=2"));
  a.changes[0].value = "a b";
  EXPECT_THAT(HypothesisCommand(a, ""), HasSubstr("--param 'num_workers=a b'"));
  a.changes.clear();
  EXPECT_EQ(HypothesisCommand(a, ""), "");
}

TEST(Advisor, IsDeterministic) {
  const std::map<std::string, double> med = {{"step_time_ms", 100}, {"data_wait_ms", 15},
                                             {"comm_pct", 30},      {"kernel_pct", 75},
                                             {"mfu", 10},           {"mem_used_pct", 95}};
  auto a = Advise(Input(Everything(), med));
  auto b = Advise(Input(Everything(), med));
  ASSERT_EQ(a.advice.size(), b.advice.size());
  for (size_t i = 0; i < a.advice.size(); ++i) {
    EXPECT_EQ(a.advice[i].command, b.advice[i].command);
    EXPECT_EQ(a.advice[i].evidence, b.advice[i].evidence);
  }
  EXPECT_EQ(a.checked_fine, b.checked_fine);
}

TEST(Advisor, NonFiniteMediansAreIgnored) {
  auto r = Advise(Input(Demo(), {{"step_time_ms", 15.9},
                                 {"data_wait_ms", std::numeric_limits<double>::quiet_NaN()}}));
  EXPECT_EQ(Find(r, "data_pipeline"), nullptr);
  EXPECT_NE(FindNotChecked(r, "data_pipeline"), nullptr);
}

// ---- the same rules on specs written out whole (params and metrics as YAML lines) ------------

// A workload's spec with these params and metrics (YAML lines under `params:` / `metrics:`).
WorkloadSpec LinesSpec(const std::string& params, const std::string& metrics) {
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

AdvisorInput LinesInput(WorkloadSpec spec, std::map<std::string, double> medians) {
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
  AdvisorReport r = Advise(
      LinesInput(LinesSpec(kLoaderParams, kDemoMetrics),
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
  auto parsed =
      ParseExpectation(LinesInput(LinesSpec(kLoaderParams, kDemoMetrics), {}).spec, a.expect_arg);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_DOUBLE_EQ(*parsed->size, 0.80);
  EXPECT_EQ(a.command,
            "tunectl hypothesis create --workload w --param num_workers=2 --expect "
            "'samples_per_s +80%' --statement '" +
                a.bottleneck + "' --evidence '" + a.evidence[0] + "'");
}

TEST(Advisor, ADataWaitUnderTenPercentIsCheckedAndFine) {
  AdvisorReport r = Advise(LinesInput(LinesSpec(kLoaderParams, kDemoMetrics),
                                      {{"step_time_ms", 15.9}, {"data_wait_ms", 1.0}}));
  EXPECT_TRUE(r.advice.empty());
  EXPECT_THAT(r.checked_fine, Contains(HasSubstr("data wait 6.3 % of the step (threshold 10 %)")));
}

TEST(Advisor, AParamAtItsMaxIsNotSuggestedAndOnlyDeclaredParamsAre) {
  const std::string params =
      "  num_workers: {type: int, default: 64, min: 0, max: 64}\n"
      "  prefetch_factor: {type: int, default: 12, min: 1, max: 16}\n";
  AdvisorReport r = Advise(
      LinesInput(LinesSpec(params, kDemoMetrics), {{"step_time_ms", 20}, {"data_wait_ms", 10}}));
  ASSERT_EQ(r.advice.size(), 1u);
  ASSERT_EQ(r.advice[0].changes.size(), 1u);
  EXPECT_EQ(r.advice[0].changes[0].param, "prefetch_factor");
  EXPECT_EQ(r.advice[0].changes[0].value, "16");  // doubled, clamped to its max
  for (const auto& c : r.advice[0].changes) EXPECT_NE(c.param, "pin_memory");  // not declared
}

TEST(Advisor, WithNothingToVaryItSaysWhatToDeclareAndPrintsNoCommand) {
  AdvisorReport r =
      Advise(LinesInput(LinesSpec("  steps: {type: int, default: 10}\n", kDemoMetrics),
                        {{"step_time_ms", 20}, {"data_wait_ms", 10}}));
  ASSERT_EQ(r.advice.size(), 1u);
  EXPECT_TRUE(r.advice[0].changes.empty());
  EXPECT_THAT(r.advice[0].missing_params,
              HasSubstr("declare num_workers / prefetch_factor / pin_memory as params"));
  EXPECT_EQ(r.advice[0].command, "");
}

TEST(Advisor, MissingFiguresNameTheMetricsEachCheckWouldNeed) {
  AdvisorReport r =
      Advise(LinesInput(LinesSpec(kLoaderParams, kDemoMetrics), {{"samples_per_s", 100}}));
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
  AdvisorReport r =
      Advise(LinesInput(LinesSpec(params, kDemoMetrics), {{"step_time_ms", 100},
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
  AdvisorReport low =
      Advise(LinesInput(LinesSpec(params, kDemoMetrics), {{"step_time_ms", 100},
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

std::string EvidenceText(const Advice& a) {
  std::string out;
  for (const auto& e : a.evidence) out += e + "\n";
  return out;
}

TEST(Advisor, KernelBoundAtLowMfuChecksTheMatmulDimensionsExactly) {
  AdvisorReport r =
      Advise(LinesInput(LinesSpec(kModelParams, kGpuMetrics), {{"kernel_pct", 85}, {"mfu", 30}}));
  ASSERT_EQ(Rules(r), std::vector<std::string>{"kernel_efficiency"});
  const std::string ev = EvidenceText(r.advice[0]);
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
  AdvisorReport r =
      Advise(LinesInput(LinesSpec(params, kGpuMetrics), {{"kernel_pct", 80}, {"mfu", 20}}));
  ASSERT_EQ(r.advice.size(), 1u);
  EXPECT_THAT(EvidenceText(r.advice[0]),
              HasSubstr("hidden_size 5128 is a multiple of 8 but not of 64"));
  EXPECT_THAT(EvidenceText(r.advice[0]), HasSubstr("the next multiple of 64 is 5184"));
}

TEST(Advisor, KernelBoundWithGoodMfuOrNotKernelBoundIsFine) {
  auto spec = LinesSpec(kModelParams, kGpuMetrics);
  EXPECT_TRUE(Advise(LinesInput(spec, {{"kernel_pct", 85}, {"mfu", 45}})).advice.empty());
  EXPECT_TRUE(Advise(LinesInput(spec, {{"kernel_pct", 60}, {"mfu", 20}})).advice.empty());
  // kernel-bound, MFU unknown: not checked, naming the MFU it needs
  AdvisorReport r =
      Advise(LinesInput(LinesSpec(kModelParams,
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
  AdvisorReport r = Advise(LinesInput(LinesSpec(params, metrics), {{"mem_used_pct", 95}}));
  ASSERT_EQ(Rules(r), std::vector<std::string>{"memory_pressure"});
  std::map<std::string, std::string> to;
  for (const auto& c : r.advice[0].changes) to[c.param] = c.value;
  EXPECT_EQ(to["activation_checkpointing"], "true");
  EXPECT_EQ(to["micro_batch_size"], "4");
  EXPECT_EQ(to.count("checkpoint_interval"), 0u);  // saving checkpoints is not recomputation
  EXPECT_EQ(r.advice[0].expect_arg, "tokens_per_s unchanged");
  EXPECT_TRUE(ParseExpectation(LinesSpec(params, metrics), r.advice[0].expect_arg).ok());
  EXPECT_TRUE(
      Advise(LinesInput(LinesSpec(params, metrics), {{"mem_used_pct", 70}})).advice.empty());
}

TEST(Advisor, LowGpuUtilisationWithoutDataWaitIsCpuOverhead) {
  const std::string params =
      "  cuda_graphs: {type: bool, default: false}\n"
      "  micro_batch_size: {type: int, default: 4, min: 1, max: 64}\n";
  const std::string metrics =
      "  samples_per_s: {pattern: 'sps (?P<value>[0-9.]+)', better: higher, role: primary}\n"
      "  gpu_util: {pattern: 'util (?P<value>[0-9.]+)', unit: '%', better: higher}\n"
      "  data_wait_pct: {pattern: 'dw (?P<value>[0-9.]+)', unit: '%', better: lower}\n";
  AdvisorReport r =
      Advise(LinesInput(LinesSpec(params, metrics), {{"gpu_util", 50}, {"data_wait_pct", 5}}));
  ASSERT_EQ(Rules(r), std::vector<std::string>{"cpu_overhead"});
  std::map<std::string, std::string> to;
  for (const auto& c : r.advice[0].changes) to[c.param] = c.value;
  EXPECT_EQ(to["cuda_graphs"], "true");
  EXPECT_EQ(to["micro_batch_size"], "8");
  // a data wait of 30 %: the data pipeline comes first, not CPU overhead
  AdvisorReport d =
      Advise(LinesInput(LinesSpec(params, metrics), {{"gpu_util", 50}, {"data_wait_pct", 30}}));
  EXPECT_EQ(Rules(d), std::vector<std::string>{"data_pipeline"});
}

TEST(Advisor, TheSameInputGivesTheSameReport) {
  auto in = LinesInput(LinesSpec(kLoaderParams, kDemoMetrics),
                       {{"step_time_ms", 15.9}, {"data_wait_ms", 9.8}});
  EXPECT_EQ(Advise(in).advice[0].command, Advise(in).advice[0].command);
}

// ---- TensorCoreAlignment ----------------------------------------------------------------------

TEST(TensorCoreAlignment, FiveThousandOneHundredTwentyIsAMultipleOfSixtyFour) {
  EXPECT_EQ(TensorCoreAlignment(5120), 64);
  EXPECT_EQ(TensorCoreAlignment(5128), 8);
  EXPECT_EQ(TensorCoreAlignment(50257), 0);
}

TEST(TensorCoreAlignment, PaddedVocabulariesAndZero) {
  EXPECT_EQ(TensorCoreAlignment(50304), 64);  // GPT-2's vocabulary padded to a multiple of 64
  EXPECT_EQ(TensorCoreAlignment(32000), 64);  // Llama 2
  EXPECT_EQ(TensorCoreAlignment(13824), 64);
  EXPECT_EQ(TensorCoreAlignment(8), 8);
  EXPECT_EQ(TensorCoreAlignment(0), 0);
  EXPECT_EQ(TensorCoreAlignment(-64), 64);
}

}  // namespace
}  // namespace tunectl

// Built-in log formats (core/log_formats.h) on real lines. Each sample line says where it comes
// from: a GitHub issue or pull request, a public file of the code index ("index id N"), or the
// framework's own format string when no printed line of that release was found ("built from").
#include "core/log_formats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace tunectl {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

// Every sample the `format` parser gives for `lines`, fed in order to one parser.
std::vector<FormatSample> ParseAll(const std::string& format,
                                   const std::vector<std::string>& lines) {
  auto p = LogFormatParser::Create(format);
  EXPECT_TRUE(p.ok()) << p.status().message();
  std::vector<FormatSample> out;
  if (!p.ok()) return out;
  for (const auto& l : lines) (*p)->Parse(l, &out);
  return out;
}

std::vector<FormatSample> Parse(const std::string& format, const std::string& line) {
  return ParseAll(format, {line});
}

// A sample of `field` at `step` whose value is `value` (to 1e-9 relative).
auto S(const std::string& field, double value, int64_t step) {
  return AllOf(Field(&FormatSample::field, field),
               Field(&FormatSample::value, DoubleNear(value, 1e-9 * (value < 0 ? -value : value))),
               Field(&FormatSample::step, step));
}

auto NoField(const std::string& field) {
  return Not(Contains(Field(&FormatSample::field, field)));
}

// Every sample's field is one the format lists (the formats whose parsers only give those).
void ExpectDocumented(const std::string& format, const std::vector<FormatSample>& samples) {
  const LogFormat* f = FindLogFormat(format);
  ASSERT_NE(f, nullptr);
  std::set<std::string> names;
  for (const auto& x : f->fields) names.insert(x.name);
  for (const auto& s : samples) EXPECT_EQ(names.count(s.field), 1u) << format << ": " << s.field;
}

// ------------------------------------------------------------------------------------------------

TEST(StripAnsi, RemovesTheColourCodesAroundTorchtitanFields) {
  // torchtitan's Color codes (torchtitan/tools/utils.py) around a line of PR #2389.
  const std::string line =
      "\x1b[31mstep:  4  \x1b[32mloss:  7.62585  \x1b[38;2;180;60;0mgrad_norm: 26.6250  "
      "\x1b[36mmemory: 66.91GiB(37.51%)  \x1b[34mtps: 10,050  \x1b[36mtflops: 314.71  "
      "\x1b[35mmfu: 13.99%\x1b[39m";
  EXPECT_EQ(StripAnsi(line),
            "step:  4  loss:  7.62585  grad_norm: 26.6250  memory: 66.91GiB(37.51%)  tps: 10,050  "
            "tflops: 314.71  mfu: 13.99%");
}

TEST(StripAnsi, RemovesOscStringsAndLoneEscapePairs) {
  EXPECT_EQ(StripAnsi("\x1b]0;title\x07text"), "text");                        // OSC, BEL
  EXPECT_EQ(StripAnsi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\!"), "link!");  // OSC, ST
  EXPECT_EQ(StripAnsi("\x1b(Bplain\x1b"
                      "7x\x1b"
                      "8"),
            "plainx");                             // pairs
  EXPECT_EQ(StripAnsi("a\x1b[2K\x1b[1Gb"), "ab");  // erase, column
}

TEST(StripAnsi, KeepsOtherTextAndDropsAnUnfinishedSequenceAtTheEnd) {
  EXPECT_EQ(StripAnsi("loss 2.31 — ▁▂▃ ü"), "loss 2.31 — ▁▂▃ ü");
  EXPECT_EQ(StripAnsi("x\x1b"), "x");
  EXPECT_EQ(StripAnsi("x\x1b[31"), "x");
  EXPECT_EQ(StripAnsi("x\x1b]0;never ended"), "x");
  EXPECT_EQ(StripAnsi(""), "");
}

// ------------------------------------------------------------------------------------------------

TEST(LogFormatRegistry, ListsEveryFormatInAStableOrder) {
  std::vector<std::string> names;
  for (const auto& f : LogFormats()) names.push_back(f.name);
  EXPECT_THAT(names, ElementsAre("megatron", "deepspeed", "hf_trainer", "lightning_csv",
                                 "torchtitan", "nanogpt", "nccl_tests"));
}

TEST(LogFormatRegistry, FieldNamesAreLowercaseSnakeCaseUniqueAndDescribed) {
  auto snake = [](const std::string& n) {
    if (n.empty()) return false;
    for (char c : n)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
  };
  for (const auto& f : LogFormats()) {
    EXPECT_FALSE(f.description.empty()) << f.name;
    EXPECT_FALSE(f.fields.empty()) << f.name;
    std::set<std::string> seen;
    for (const auto& x : f.fields) {
      EXPECT_TRUE(snake(x.name)) << f.name << "." << x.name;
      EXPECT_TRUE(seen.insert(x.name).second) << f.name << "." << x.name << " twice";
      EXPECT_FALSE(x.description.empty()) << f.name << "." << x.name;
    }
  }
}

TEST(LogFormatRegistry, FindsAFormatByItsExactName) {
  ASSERT_NE(FindLogFormat("megatron"), nullptr);
  EXPECT_EQ(FindLogFormat("megatron")->name, "megatron");
  EXPECT_EQ(FindLogFormat("Megatron"), nullptr);
  EXPECT_EQ(FindLogFormat(""), nullptr);
  const LogFormat* m = FindLogFormat("megatron");
  bool found = false;
  for (const auto& x : m->fields)
    if (x.name == "iter_ms") {
      found = true;
      EXPECT_EQ(x.unit, "ms");
      EXPECT_EQ(x.better, Better::kLower);
    }
  EXPECT_TRUE(found);
}

TEST(LogFormatRegistry, CreatesAParserForEveryListedFormat) {
  for (const auto& f : LogFormats()) {
    auto p = LogFormatParser::Create(f.name);
    ASSERT_TRUE(p.ok()) << f.name;
    std::vector<FormatSample> out;
    (*p)->Parse("", &out);
    (*p)->Parse("nothing of any format here", &out);
    EXPECT_THAT(out, IsEmpty()) << f.name;
  }
}

TEST(LogFormatRegistry, RejectsAnUnknownFormatNamingItAndTheKnownOnes) {
  auto p = LogFormatParser::Create("fairseq");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("\"fairseq\""));
  EXPECT_THAT(p.status().message(),
              HasSubstr("megatron, deepspeed, hf_trainer, lightning_csv, torchtitan, nanogpt, "
                        "nccl_tests"));
}

// ------------------------------------------------------------------------------------------------

TEST(MegatronFormat, ReadsTheFormatWithTimestampAndThroughput) {
  // NVIDIA/Megatron-LM issue #756 (16 x H100, MoE).
  const auto s = Parse("megatron",
                       " [2024-04-06 02:55:45] iteration        2/     100 | consumed samples:    "
                       "      256 | elapsed time per iteration (ms): 5630.1 | throughput per GPU "
                       "(TFLOP/s/GPU): 231.9 | learning rate: 4.000000E-07 | global batch size:   "
                       "128 | lm loss: 2.021530E+00 | load_balancing_loss: 1.087362E+00 | loss "
                       "scale: 1.0 | grad norm: 6.895 | num zeros: 0.0 | number of skipped "
                       "iterations:   0 | number of nan iterations:   0 |");
  EXPECT_THAT(s, UnorderedElementsAre(S("consumed_samples", 256, 2), S("iter_ms", 5630.1, 2),
                                      S("tflops_per_gpu", 231.9, 2), S("learning_rate", 4e-7, 2),
                                      S("global_batch_size", 128, 2), S("lm_loss", 2.02153, 2),
                                      S("load_balancing_loss", 1.087362, 2), S("loss_scale", 1, 2),
                                      S("grad_norm", 6.895, 2), S("num_zeros", 0, 2),
                                      S("skipped_iterations", 0, 2), S("nan_iterations", 0, 2),
                                      S("samples_per_s", 128 * 1000.0 / 5630.1, 2)));
  ExpectDocumented("megatron", s);
}

TEST(MegatronFormat, ReadsTheOldFormatWithoutTimestampOrThroughput) {
  // epfLLM/Megatron-LLM issue #11 (".3E" learning rate, no timestamp, no --log-throughput).
  const auto s = Parse("megatron",
                       " iteration      122/  250000 | consumed samples:       124928 | elapsed "
                       "time per iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch "
                       "size:  1024 | lm loss: 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 "
                       "| number of skipped iterations:   0 | number of nan iterations:   0 |");
  EXPECT_THAT(s, Contains(S("iter_ms", 86545.2, 122)));
  EXPECT_THAT(s, Contains(S("learning_rate", 9.15e-6, 122)));
  EXPECT_THAT(s, Contains(S("lm_loss", 2.50422, 122)));
  EXPECT_THAT(s, Contains(S("samples_per_s", 1024 * 1000.0 / 86545.2, 122)));
  EXPECT_THAT(s, NoField("tflops_per_gpu"));
  ExpectDocumented("megatron", s);
}

TEST(MegatronFormat, ReadsTheMicrosecondTimestampOfCurrentReleases) {
  // Built from training_log at Megatron-LM d98e8a6 (core_v0.16 on: '%Y-%m-%d %H:%M:%S.%f';
  // energy, skipped samples, params norm).
  const auto s = Parse("megatron",
                       " [2026-03-01 10:00:00.123456] iteration      100/    1000 | consumed "
                       "samples:        12800 | skipped samples:            3 | elapsed time per "
                       "iteration (ms): 812.5 | throughput per GPU (TFLOP/s/GPU): 402.3 | energy "
                       "per GPU (J/iter/GPU): 512.0 | power per GPU (W/GPU): 630.2 | learning "
                       "rate: 3.000000E-04 | global batch size:   128 | lm loss: 3.120000E+00 | "
                       "loss scale: 1.0 | grad norm: 0.912 | params norm: 312.450 | number of "
                       "skipped iterations:   0 | number of nan iterations:   0 |");
  EXPECT_THAT(s, Contains(S("iter_ms", 812.5, 100)));
  EXPECT_THAT(s, Contains(S("skipped_samples", 3, 100)));
  EXPECT_THAT(s, Contains(S("energy_j_per_gpu", 512, 100)));
  EXPECT_THAT(s, Contains(S("power_w_per_gpu", 630.2, 100)));
  EXPECT_THAT(s, Contains(S("params_norm", 312.45, 100)));
  ExpectDocumented("megatron", s);
}

TEST(MegatronFormat, KeepsTheFirstIterationWithItsStartUpTime) {
  // inclusionAI Ling-V2 docs (index id 41373183261): iteration 1 includes initialisation.
  const auto s = ParseAll(
      "megatron",
      {" [2025-09-05 16:08:14] iteration        1/    2000 | consumed samples:          128 | "
       "elapsed time per iteration (ms): 79489.9 | throughput per GPU (TFLOP/s/GPU): 18.0 | "
       "learning rate: 2.999998E-05 | global batch size:   128 | lm loss: 2.605958E+00 | z_loss: "
       "1.091659E+01 | mtp_1 loss: 2.828435E+00 | loss scale: 1.0 | grad norm: 0.258 | number of "
       "skipped iterations:   0 | number of nan iterations:   0 |",
       " [2025-09-05 16:08:25] iteration        2/    2000 | consumed samples:          256 | "
       "elapsed time per iteration (ms): 11182.0 | throughput per GPU (TFLOP/s/GPU): 128.2 | "
       "learning rate: 2.999993E-05 | global batch size:   128 | lm loss: 2.688647E+00 | z_loss: "
       "1.019938E+01 | mtp_1 loss: 2.843235E+00 | loss scale: 1.0 | grad norm: 7.737 | number of "
       "skipped iterations:   0 | number of nan iterations:   0 |"});
  EXPECT_THAT(s, Contains(S("iter_ms", 79489.9, 1)));
  EXPECT_THAT(s, Contains(S("iter_ms", 11182.0, 2)));
  EXPECT_THAT(s, Contains(S("z_loss", 10.91659, 1)));
  EXPECT_THAT(s, Contains(S("mtp_1_loss", 2.828435, 1)));
  ExpectDocumented("megatron", s);
}

TEST(MegatronFormat, GivesEveryLossKeyUnderItsNormalisedName) {
  // BERT's "sop loss" (index id 20429562672) is no listed field but still a loss.
  const auto s =
      Parse("megatron",
            " iteration      100/ 1000000 | consumed samples:         3200 | elapsed "
            "time per iteration (ms): 2378.6 | learning rate: 1.000E-04 | global batch "
            "size:    32 | lm loss: 9.648865E+00 | sop loss: 6.989935E-01 | loss scale: "
            "131072.0 | grad norm: 4.622 | number of skipped iterations:  16 | number of "
            "nan iterations:   0 |");
  EXPECT_THAT(s, Contains(S("sop_loss", 0.6989935, 100)));
  EXPECT_THAT(s, Contains(S("loss_scale", 131072, 100)));
  EXPECT_THAT(s, Contains(S("skipped_iterations", 16, 100)));
}

TEST(MegatronFormat, ReadsMegatronDeepSpeedLinesWithSecondsAndTheirOwnThroughput) {
  // bigscience tr11-176B-ml chronicles (index id 40690827215): a torchrun "[default7]:" prefix,
  // time in seconds, "samples per second" and "TFLOPs" printed.
  const auto s = Parse("megatron",
                       "[default7]: iteration    94768/  115311 | consumed samples:    177927088 "
                       "| consumed tokens: 364394676224 | elapsed time per iteration (s): 215.82 | "
                       "learning rate: 7.610E-06 | global batch size:  2048 | lm loss: "
                       "1.943883E+00 | grad norm: 0.128 | num zeros: 0.0 | number of skipped "
                       "iterations:   0 | number of nan iterations:   0 | samples per second: "
                       "9.490 | TFLOPs: 145.31 |");
  EXPECT_THAT(s, Contains(S("iter_ms", 215820, 94768)));
  EXPECT_THAT(s, Contains(S("samples_per_s", 9.49, 94768)));
  EXPECT_THAT(s, Contains(S("tflops_per_gpu", 145.31, 94768)));
  EXPECT_THAT(s, Contains(S("consumed_tokens", 364394676224.0, 94768)));
  int rates = 0;
  for (const auto& x : s) rates += x.field == "samples_per_s";
  EXPECT_EQ(rates, 1);  // the printed one, not a derived one besides
  ExpectDocumented("megatron", s);
}

TEST(MegatronFormat, DerivesSamplesPerSecondOnlyWithBothBatchAndTime) {
  // Megatron-LM v1.0 (built from its training_log): no global batch size on the line.
  const auto s = Parse("megatron",
                       " iteration      100/  500000 | elapsed time per iteration (ms): 1234.5 | "
                       "learning rate: 1.500E-04 | lm loss: 7.123456E+00 | loss scale: 65536.0 |");
  EXPECT_THAT(s, Contains(S("iter_ms", 1234.5, 100)));
  EXPECT_THAT(s, NoField("samples_per_s"));
}

TEST(MegatronFormat, ReadsTheMemoryReportOfEveryRelease) {
  // Unformatted floats until core_v0.15 (index id 33443949567; behind srun --label's "2: " in
  // index id 24522434823); "%.2f" and the optional device total since core_v0.16 (built from
  // common_utils.py report_memory).
  const auto s = ParseAll(
      "megatron", {"[Rank 0] (after 10 iterations) memory (MB) | allocated: 7253.681640625 | max "
                   "allocated: 7959.9697265625 | reserved: 8266.0 | max reserved: 8266.0",
                   "2: [Rank 2] (after 1 iterations) memory (MB) | allocated: 7063.22802734375 | "
                   "max allocated: 23105.095703125 | reserved: 35048.0 | max reserved: 35048.0",
                   "[Rank 0] (after 2 iterations) memory (MB) | allocated: 26222.72 | max "
                   "allocated: 63359.77 | reserved: 66802.00 | max reserved: 66802.00 | total "
                   "device memory used: 70211.50"});
  EXPECT_THAT(s, UnorderedElementsAre(
                     S("mem_allocated_mb", 7253.681640625, 10),
                     S("mem_max_allocated_mb", 7959.9697265625, 10), S("mem_reserved_mb", 8266, 10),
                     S("mem_max_reserved_mb", 8266, 10), S("mem_allocated_mb", 7063.22802734375, 1),
                     S("mem_max_allocated_mb", 23105.095703125, 1), S("mem_reserved_mb", 35048, 1),
                     S("mem_max_reserved_mb", 35048, 1), S("mem_allocated_mb", 26222.72, 2),
                     S("mem_max_allocated_mb", 63359.77, 2), S("mem_reserved_mb", 66802, 2),
                     S("mem_max_reserved_mb", 66802, 2), S("mem_device_used_mb", 70211.5, 2)));
  ExpectDocumented("megatron", s);
}

TEST(MegatronFormat, NanLossGivesNoSampleButTheRestOfTheLineStays) {
  // '{:.6E}'.format(float('nan')) is "NAN".
  const auto s = Parse("megatron",
                       " iteration       20/    1000 | consumed samples:         2560 | elapsed "
                       "time per iteration (ms): 900.0 | learning rate: 1.000000E-04 | global "
                       "batch size:   128 | lm loss: NAN | loss scale: 1.0 | number of skipped "
                       "iterations:   0 | number of nan iterations:   1 |");
  EXPECT_THAT(s, NoField("lm_loss"));
  EXPECT_THAT(s, Contains(S("nan_iterations", 1, 20)));
  EXPECT_THAT(s, Contains(S("iter_ms", 900, 20)));
}

TEST(MegatronFormat, IgnoresValidationCheckpointAndTimerLines) {
  const auto s = ParseAll(
      "megatron", {" validation loss at iteration 100 | lm loss value: 2.402349E+00 | lm loss PPL: "
                   "1.104926E+01 | ",
                   "time (ms) | forward-compute: 879.94 | backward-compute: 1373.40 | "
                   "backward-params-all-reduce: 1.04",
                   " saving checkpoint at iteration     100 to /ckpt in torch_dist format",
                   "[Rank 0] memory stats: nothing"});
  EXPECT_THAT(s, IsEmpty());
}

// ------------------------------------------------------------------------------------------------

TEST(DeepSpeedFormat, ReadsTheThroughputTimerLineSince2023) {
  // index id 5045379410 ([timer.py:260:stop], global_step).
  const auto s = Parse("deepspeed",
                       "[2023-11-07 01:55:23,714] [INFO] [timer.py:260:stop] "
                       "epoch=0/micro_step=40/global_step=10, "
                       "RunningAvgSamplesPerSec=25.025771473496132, "
                       "CurrSamplesPerSec=25.704280480541442, MemAllocated=4.32GB, "
                       "MaxMemAllocated=38.49GB");
  EXPECT_THAT(s, UnorderedElementsAre(S("avg_samples_per_s", 25.025771473496132, 10),
                                      S("samples_per_s", 25.704280480541442, 10),
                                      S("mem_allocated_gib", 4.32, 10),
                                      S("max_mem_allocated_gib", 38.49, 10)));
  ExpectDocumented("deepspeed", s);
}

TEST(DeepSpeedFormat, ReadsThe2022TimerLineWithoutAStep) {
  // index id 3328206572 ([timer.py:198:stop] "0/20": epoch 0, micro-step 20).
  const auto s = Parse("deepspeed",
                       "[2022-08-29 06:58:56,176] [INFO] [timer.py:198:stop] 0/20, "
                       "RunningAvgSamplesPerSec=232.7340551694273, "
                       "CurrSamplesPerSec=227.48090316379353, MemAllocated=0.36GB, "
                       "MaxMemAllocated=15.06GB");
  EXPECT_THAT(s, UnorderedElementsAre(S("avg_samples_per_s", 232.7340551694273, 0),
                                      S("samples_per_s", 227.48090316379353, 0),
                                      S("mem_allocated_gib", 0.36, 0),
                                      S("max_mem_allocated_gib", 15.06, 0)));
}

TEST(DeepSpeedFormat, ReadsTheOldSamplesPerSecLineBehindATqdmBar) {
  // index id 14161991346 ([timer.py:191:stop], mid-2022; tqdm's bar glued in front).
  const auto s = Parse("deepspeed",
                       "Iteration:   0%|          | 9/10604 [00:05<1:06:31,  2.65it/s][2022-08-03 "
                       "03:49:45,064] [INFO] [timer.py:191:stop] 0/10, "
                       "SamplesPerSec=6195.981015196498, MemAllocated=10.43GB, "
                       "MaxMemAllocated=10.43GB");
  EXPECT_THAT(s, UnorderedElementsAre(S("avg_samples_per_s", 6195.981015196498, 0),
                                      S("mem_allocated_gib", 10.43, 0),
                                      S("max_mem_allocated_gib", 10.43, 0)));
}

TEST(DeepSpeedFormat, MinusInfinityRunningAverageGivesNoSample) {
  // avg_samples_per_sec() returns float("-inf") before the first global step (timer.py).
  const auto s = Parse("deepspeed",
                       "[2024-01-01 00:00:00,000] [INFO] [timer.py:264:stop] "
                       "epoch=0/micro_step=1/global_step=1, RunningAvgSamplesPerSec=-inf, "
                       "CurrSamplesPerSec=12.5, MemAllocated=1.0GB, MaxMemAllocated=2.0GB");
  EXPECT_THAT(s, NoField("avg_samples_per_s"));
  EXPECT_THAT(s, Contains(S("samples_per_s", 12.5, 1)));
}

TEST(DeepSpeedFormat, ReadsTheEngineStepLine) {
  // index ids 5045379410 and 3328206572.
  const auto s = ParseAll(
      "deepspeed",
      {"[2023-11-07 01:55:23,711] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=4, "
       "lr=[4.99804827338393e-05, 4.99804827338393e-05], mom=[(0.9, 0.95), (0.9, 0.95)]",
       "[2022-08-29 06:58:56,121] [INFO] [logging.py:68:log_dist] [Rank 0] step=20, skipped=17, "
       "lr=[5e-05], mom=[(0.9, 0.999)]"});
  EXPECT_THAT(s, UnorderedElementsAre(S("skipped_steps", 4, 10), S("lr", 4.99804827338393e-05, 10),
                                      S("skipped_steps", 17, 20), S("lr", 5e-05, 20)));
}

TEST(DeepSpeedFormat, ReadsTheWallClockBreakdown) {
  // index id 20196590859 (micro and global timers), 9794438167 (ZeRO optimizer timers).
  const auto s = ParseAll(
      "deepspeed",
      {"[2024-04-04 09:09:53,313] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | "
       "fwd_microstep: 6567.68 | bwd_microstep: 17950.36 | bwd_inner_microstep: 17711.20 | "
       "bwd_allreduce_microstep: 239.11 | step_microstep: 1139.27",
       "[2024-04-04 09:09:53,313] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd: "
       "6567.66 | bwd: 17950.35 | bwd_inner: 17711.19 | bwd_allreduce: 239.11 | step: 1139.29",
       "time (ms) | optimizer_allgather: 26.19 | optimizer_gradients: 26.06 | optimizer_step: "
       "128.20"});
  EXPECT_THAT(s, Contains(S("fwd_microstep_ms", 6567.68, 0)));
  EXPECT_THAT(s, Contains(S("step_microstep_ms", 1139.27, 0)));
  EXPECT_THAT(s, Contains(S("fwd_ms", 6567.66, 0)));
  EXPECT_THAT(s, Contains(S("bwd_allreduce_ms", 239.11, 0)));
  EXPECT_THAT(s, Contains(S("step_ms", 1139.29, 0)));
  EXPECT_THAT(s, Contains(S("optimizer_step_ms", 128.2, 0)));
  EXPECT_EQ(s.size(), 13u);
  ExpectDocumented("deepspeed", s);
}

TEST(DeepSpeedFormat, IgnoresTimersOfOtherNames) {
  // Megatron's old timers share "time (ms) |" (index id 20429562672).
  EXPECT_THAT(Parse("deepspeed",
                    "time (ms) | forward-compute: 879.94 | backward-compute: 1373.40 | "
                    "selective_optimizer_update: 19.20"),
              IsEmpty());
}

TEST(DeepSpeedFormat, ReadsThePipelineEngineLine) {
  // onnxruntime orttraining test (index id 41739396); Megatron-DeepSpeed's extra losses between
  // (index id 34176970944).
  const auto s = ParseAll(
      "deepspeed", {"steps: 100 loss: 0.0585 iter time (s): 0.186 samples/sec: 53.694 ",
                    "steps: 200 loss: 5.5508 lm loss: 5.5103 moe loss: 0.0405 iter time (s): 0.936 "
                    "samples/sec: 136.706"});
  EXPECT_THAT(s, UnorderedElementsAre(S("loss", 0.0585, 100), S("iter_s", 0.186, 100),
                                      S("samples_per_s", 53.694, 100), S("loss", 5.5508, 200),
                                      S("iter_s", 0.936, 200), S("samples_per_s", 136.706, 200)));
}

// ------------------------------------------------------------------------------------------------

TEST(HfTrainerFormat, ReadsRawFloatDictsBehindATqdmBar) {
  // index id 59747649311 (tqdm's bar and the dict on one line).
  const auto s = Parse("hf_trainer",
                       "  3%|▎         | 10/375 [00:31<18:19,  3.01s/it]{'loss': 1.7253, "
                       "'grad_norm': 0.2710379660129547, 'learning_rate': 0.00019964928592495045, "
                       "'epoch': 0.03}");
  EXPECT_THAT(
      s, UnorderedElementsAre(S("loss", 1.7253, 0), S("grad_norm", 0.2710379660129547, 0),
                              S("learning_rate", 0.00019964928592495045, 0), S("epoch", 0.03, 0)));
  ExpectDocumented("hf_trainer", s);
}

TEST(HfTrainerFormat, ReadsTheQuotedValuesOfNewerReleases) {
  // index id 52499828979 (every float as f"{v:.4g}" in quotes).
  const auto s = Parse("hf_trainer",
                       "{'loss': '2.452', 'grad_norm': '0.4338', 'learning_rate': '2.436e-07', "
                       "'epoch': '1.22'}");
  EXPECT_THAT(s, UnorderedElementsAre(S("loss", 2.452, 0), S("grad_norm", 0.4338, 0),
                                      S("learning_rate", 2.436e-07, 0), S("epoch", 1.22, 0)));
}

TEST(HfTrainerFormat, ReadsTheFinalSummaryOfEitherForm) {
  // index id 1145372546 (raw) and 54916237494 (quoted, padded by tqdm with spaces).
  const auto s = ParseAll(
      "hf_trainer",
      {"{'train_runtime': 158.4339, 'train_samples_per_second': 108.184, "
       "'train_steps_per_second': 3.383, 'train_loss': 0.05750848997884722, 'epoch': 2.0}",
       "{'train_runtime': '7767', 'train_samples_per_second': '4.12', 'train_steps_per_second': "
       "'0.257', 'train_loss': '0.1762', 'epoch': '142.9'}                         "});
  EXPECT_THAT(s, Contains(S("train_samples_per_second", 108.184, 0)));
  EXPECT_THAT(s, Contains(S("train_runtime", 158.4339, 0)));
  EXPECT_THAT(s, Contains(S("train_samples_per_second", 4.12, 0)));
  EXPECT_THAT(s, Contains(S("train_steps_per_second", 0.257, 0)));
  EXPECT_EQ(s.size(), 10u);
  ExpectDocumented("hf_trainer", s);
}

TEST(HfTrainerFormat, ReadsEveryDictOnALine) {
  // index id 33429024642: an eval dict and the summary printed back to back.
  const auto s = Parse("hf_trainer",
                       "{'eval_loss': 1.639931082725525, 'eval_bleu': 5.4179, 'eval_gen_len': "
                       "17.6062, 'eval_runtime': 191.0498, 'eval_samples_per_second': 133.039, "
                       "'eval_steps_per_second': 4.161, 'epoch': 2.0}{'train_runtime': 1440.1939, "
                       "'train_samples_per_second': 141.187, 'train_steps_per_second': 4.413, "
                       "'train_loss': 1.9040913182733343, 'epoch': 2.0}");
  EXPECT_THAT(s, Contains(S("eval_loss", 1.639931082725525, 0)));
  EXPECT_THAT(s, Contains(S("eval_bleu", 5.4179, 0)));
  EXPECT_THAT(s, Contains(S("train_samples_per_second", 141.187, 0)));
  EXPECT_EQ(s.size(), 12u);
}

TEST(HfTrainerFormat, NormalisesKeysWithSlashesAndParentheses) {
  // index id 62880914643 (memory metrics of a Trainer subclass).
  const auto s = Parse("hf_trainer",
                       "{'loss': 4.75, 'grad_norm': 98.5, 'learning_rate': 5e-06, "
                       "'memory/max_mem_active(gib)': 25.45, 'memory/max_mem_allocated(gib)': "
                       "25.45, 'memory/device_mem_reserved(gib)': 30.22, 'epoch': 1.0}");
  EXPECT_THAT(s, Contains(S("memory_max_mem_active_gib", 25.45, 0)));
  EXPECT_THAT(s, Contains(S("memory_device_mem_reserved_gib", 30.22, 0)));
  EXPECT_THAT(s, Contains(S("learning_rate", 5e-06, 0)));
  ExpectDocumented("hf_trainer", s);
}

TEST(HfTrainerFormat, SkipsStringsListsNoneBooleansAndNan) {
  // Built from ProgressCallback.on_log: strings pass through, long ones are replaced.
  const auto s = Parse("hf_trainer",
                       "{'loss': 'nan', 'grad_norm': nan, 'note': '[String too long to display, "
                       "length: 9000 > 5000. Consider increasing `max_str_len` if needed.]', "
                       "'lrs': [0.1, 0.2], 'best': None, 'done': True, 'nested': {'a': 1}, "
                       "'epoch': 0.5}");
  EXPECT_THAT(s, UnorderedElementsAre(S("epoch", 0.5, 0)));
}

TEST(HfTrainerFormat, ReadsNumpyAndTensorScalarReprs) {
  // numpy >= 2 prints np.float64(0.5) inside a dict's repr (custom compute_metrics).
  const auto s = Parse("hf_trainer",
                       "{'eval_loss': np.float64(0.2666977345943451), 'eval_f1': "
                       "np.float32(0.91), 'x': tensor(2.5, device='cuda:0'), 'epoch': 3.0}");
  EXPECT_THAT(s, UnorderedElementsAre(S("eval_loss", 0.2666977345943451, 0), S("eval_f1", 0.91, 0),
                                      S("x", 2.5, 0), S("epoch", 3, 0)));
}

TEST(HfTrainerFormat, TakesTheStepFromAStepKey) {
  // trainer_state.json log_history entries printed by a script carry "step".
  const auto s = Parse("hf_trainer", "{'loss': 2.1, 'learning_rate': 1e-05, 'step': 50}");
  EXPECT_THAT(s, UnorderedElementsAre(S("loss", 2.1, 50), S("learning_rate", 1e-05, 50)));
}

TEST(HfTrainerFormat, IgnoresUnclosedDictsAndOtherBraces) {
  EXPECT_THAT(Parse("hf_trainer", "{'loss': 1.2, 'epoch': 0.5"), IsEmpty());  // cut off
  EXPECT_THAT(Parse("hf_trainer", "config = {a: 1} {} {'"), IsEmpty());
  EXPECT_THAT(Parse("hf_trainer", "f\"{v:.4g}\" {'loss' 1.0}"), IsEmpty());
}

// ------------------------------------------------------------------------------------------------

TEST(LightningCsvFormat, ReadsRowsByTheHeaderSkippingEmptyCells) {
  // The layout CSVLogger writes (one metric per row, others empty), as public tests of
  // metrics.csv readers use it (index id 66049020474).
  const auto s = ParseAll("lightning_csv", {"epoch,step,train/loss,val/loss", "0,1,,3.0",
                                            "0,1,2.0,", "1,2,,2.5", "1,2,1.5,"});
  EXPECT_THAT(s, ElementsAre(S("epoch", 0, 1), S("val_loss", 3.0, 1), S("epoch", 0, 1),
                             S("train_loss", 2.0, 1), S("epoch", 1, 2), S("val_loss", 2.5, 2),
                             S("epoch", 1, 2), S("train_loss", 1.5, 2)));
}

TEST(LightningCsvFormat, ReadsThroughputMonitorColumns) {
  // Column names of ThroughputMonitor (lightning/pytorch/callbacks/throughput_monitor.py:
  // "<stage>/<key>", throughput.py's keys) as CSVLogger writes them; values built.
  const auto s =
      ParseAll("lightning_csv",
               {"epoch,step,train/batches,train/device/batches_per_sec,train/device/flops_per_sec,"
                "train/device/mfu,train/device/samples_per_sec,train/samples,train/time,train_loss",
                "0,99,100,3.2,1.2e+14,0.3846,25.6,800,31.5,2.71"});
  EXPECT_THAT(s, Contains(S("train_device_samples_per_sec", 25.6, 99)));
  EXPECT_THAT(s, Contains(S("train_device_mfu", 0.3846, 99)));
  EXPECT_THAT(s, Contains(S("train_device_flops_per_sec", 1.2e14, 99)));
  EXPECT_THAT(s, Contains(S("train_loss", 2.71, 99)));
  ExpectDocumented("lightning_csv", s);
}

TEST(LightningCsvFormat, NanCellsGiveNoSample) {
  // index id 70275574734: "step,train/nll,...,grad/base_norm" with nan cells.
  const auto s =
      ParseAll("lightning_csv", {"step,train/nll,grad/base_norm", "0,11.8125,nan", "10,nan,nan"});
  EXPECT_THAT(s, ElementsAre(S("train_nll", 11.8125, 0)));
}

TEST(LightningCsvFormat, NeedsAHeaderWithAStepColumnAndRowsOfItsWidth) {
  const auto s = ParseAll("lightning_csv", {"0,1,2.0", "epoch,train_loss,val_loss", "0,0.85,0.90",
                                            "Epoch 1, step 5, loss 2.3"});
  EXPECT_THAT(s, IsEmpty());
  const auto t = ParseAll("lightning_csv",
                          {"epoch,step,train_loss", "0,5,2.3,9", "0,6", "0,7,two", "0,8,2.1"});
  EXPECT_THAT(t, ElementsAre(S("epoch", 0, 8), S("train_loss", 2.1, 8)));
}

TEST(LightningCsvFormat, ANewHeaderReplacesTheOldAndQuotedCellsAreRead) {
  // Lightning rewrites metrics.csv with a new header when new keys appear (csv_logs.py).
  const auto s =
      ParseAll("lightning_csv", {"epoch,step,train_loss", "0,10,2.5",
                                 "\"lr-AdamW\",epoch,step,\"val/acc, top1\"", "0.001,0,20,0.5"});
  EXPECT_THAT(s, ElementsAre(S("epoch", 0, 10), S("train_loss", 2.5, 10), S("lr_adamw", 0.001, 20),
                             S("epoch", 0, 20), S("val_acc_top1", 0.5, 20)));
}

// ------------------------------------------------------------------------------------------------

TEST(TorchtitanFormat, ReadsTheCurrentLineWithGradNormAndPrefixes) {
  // pytorch/torchtitan PR #3393 ("[rank0]:[titan] ... - " prefix) and PR #2389.
  const auto s = ParseAll(
      "torchtitan",
      {"[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  "
       "grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%",
       "[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4  loss:  7.62585  grad_norm: "
       "26.6250  memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%"});
  EXPECT_THAT(s, UnorderedElementsAre(
                     S("loss", 3.24405, 14), S("grad_norm", 0.8319, 14), S("memory_gib", 9.46, 14),
                     S("memory_pct", 64.99, 14), S("tps", 7282, 14), S("tflops", 0.52, 14),
                     S("mfu_pct", 0.17, 14), S("loss", 7.62585, 4), S("grad_norm", 26.625, 4),
                     S("memory_gib", 66.91, 4), S("memory_pct", 37.51, 4), S("tps", 10050, 4),
                     S("tflops", 314.71, 4), S("mfu_pct", 13.99, 4)));
  ExpectDocumented("torchtitan", s);
}

TEST(TorchtitanFormat, ReadsThe2025LineWithoutGradNorm) {
  // pytorch/torchtitan PR #950 (six-figure tps with commas).
  const auto s = Parse("torchtitan",
                       "[rank0]:[titan] 2025-03-12 11:10:21,511 - root - INFO - step: 22  loss:  "
                       "6.2250  memory:  1.41GiB(1.79%)  tps: 193,831  tflops: 18.36  mfu: 1.86%");
  EXPECT_THAT(s, Contains(S("tps", 193831, 22)));
  EXPECT_THAT(s, Contains(S("memory_pct", 1.79, 22)));
  EXPECT_THAT(s, NoField("grad_norm"));
}

TEST(TorchtitanFormat, ReadsThe2024WpsLine) {
  // Built from train.py of 2024 (index id 3279551939): "wps: {round(wps):,}", no tflops.
  const auto s = Parse("torchtitan",
                       "[rank0]:2024-05-01 10:00:00,000 - root - INFO - step: 10  loss:  9.8765  "
                       "memory: 30.12GiB(38.07%)  wps: 5,432  mfu: 31.20%");
  EXPECT_THAT(s, UnorderedElementsAre(S("loss", 9.8765, 10), S("memory_gib", 30.12, 10),
                                      S("memory_pct", 38.07, 10), S("tps", 5432, 10),
                                      S("mfu_pct", 31.2, 10)));
}

TEST(TorchtitanFormat, ReadsAColouredLineOnceStripped) {
  // ANSI colours as metrics.py prints them unless --metrics.disable_color_printing.
  const std::string coloured =
      "[titan] 2026-02-24 19:46:19,145 - root - INFO - \x1b[31mstep:  5  \x1b[32mloss:  7.07623  "
      "\x1b[38;2;180;60;0mgrad_norm: 46.5000  \x1b[36mmemory: 66.91GiB(37.51%)  \x1b[34mtps: "
      "10,007  \x1b[36mtflops: 313.36  \x1b[35mmfu: 13.93%\x1b[39m";
  const auto s = Parse("torchtitan", StripAnsi(coloured));
  EXPECT_THAT(s, Contains(S("tps", 10007, 5)));
  EXPECT_THAT(s, Contains(S("mfu_pct", 13.93, 5)));
  EXPECT_EQ(s.size(), 7u);
}

TEST(TorchtitanFormat, MfuNotAvailableGivesNoSample) {
  // metrics.py: mfu_str = "N/A" under FP8/MX quantisation.
  const auto s = Parse("torchtitan",
                       "step: 30  loss:  5.12345  grad_norm:  0.5000  memory: 40.00GiB(50.00%)  "
                       "tps: 12,000  tflops: 500.10  mfu: N/A");
  EXPECT_THAT(s, NoField("mfu_pct"));
  EXPECT_THAT(s, Contains(S("tflops", 500.1, 30)));
}

TEST(TorchtitanFormat, ReadsValidationLossAndIgnoresOtherLines) {
  // Built from metrics.py log_validation; other lines of PR #1287.
  const auto s = ParseAll(
      "torchtitan",
      {"[titan] 2026-01-01 00:00:00,000 - root - INFO - validate step: 100  loss:  3.2100  "
       "memory: 40.00GiB(50.00%)  tps: 9,999",
       "[rank0]:[titan] 2025-06-16 22:30:50,758 - root - INFO - Dumping profiler traces at step "
       "200",
       "[rank0]:[titan] 2025-06-16 22:30:48,735 - root - INFO - [GC] Peforming periodical GC "
       "collection. 0.06 seconds."});
  EXPECT_THAT(s, ElementsAre(S("val_loss", 3.21, 100)));
}

TEST(TorchtitanFormat, ThousandsCommasMustBeGroupsOfThree) {
  EXPECT_THAT(Parse("torchtitan", "step: 1  loss:  1.0  tps: 1,23"), NoField("tps"));
  EXPECT_THAT(Parse("torchtitan", "step: 1  loss:  1.0  tps: 1234,567"), NoField("tps"));
  EXPECT_THAT(Parse("torchtitan", "step: 1  loss:  1.0  tflops: 1,234.56"),
              Contains(S("tflops", 1234.56, 1)));
}

// ------------------------------------------------------------------------------------------------

TEST(NanoGptFormat, ReadsIterLinesAndSkipsTheMfuSentinel) {
  // karpathy/nanoGPT issues #178 and #215.
  const auto s = ParseAll("nanogpt", {"iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%",
                                      "iter 10: loss 3.2202, time 893.76ms, mfu 16.68%"});
  EXPECT_THAT(
      s, UnorderedElementsAre(S("loss", 4.2648, 0), S("iter_ms", 9371.81, 0), S("loss", 3.2202, 10),
                              S("iter_ms", 893.76, 10), S("mfu_pct", 16.68, 10)));
  ExpectDocumented("nanogpt", s);
}

TEST(NanoGptFormat, ReadsThePreMfuLineAndTheEvalLine) {
  // karpathy/nanoGPT issues #110 (before Feb 2023) and #178.
  const auto s = ParseAll("nanogpt", {"iter 1631: loss 4.0863, time 561.94ms",
                                      "step 250: train loss 1.5440, val loss 1.7220"});
  EXPECT_THAT(s, UnorderedElementsAre(S("loss", 4.0863, 1631), S("iter_ms", 561.94, 1631),
                                      S("train_loss", 1.544, 250), S("val_loss", 1.722, 250)));
}

TEST(NanoGptFormat, NanLossGivesNoSample) {
  const auto s = Parse("nanogpt", "iter 1632: loss nan, time 560.11ms, mfu 30.12%");
  EXPECT_THAT(s, UnorderedElementsAre(S("iter_ms", 560.11, 1632), S("mfu_pct", 30.12, 1632)));
}

// ------------------------------------------------------------------------------------------------

TEST(NcclTestsFormat, ReadsRowsByTheHeaderWithTheSizeAsStep) {
  // coreweave/nccl-tests PR #43 (GB200 NVL72) and its footer.
  const auto s = ParseAll(
      "nccl_tests",
      {"#                                                              out-of-place             "
       "          in-place          ",
       "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
       "time   algbw   busbw #wrong",
       "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
       "(us)  (GB/s)  (GB/s)       ",
       "   536870912     134217728     float     sum      -1   1806.7  297.16  586.06      0   "
       "1835.9  292.43  576.74      0",
       "  4294967296    1073741824     float     sum      -1    10094  425.49  839.16      0    "
       "10141  423.54  835.32      0",
       "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 745.53 "});
  EXPECT_THAT(
      s, UnorderedElementsAre(
             S("time_us", 1806.7, 536870912), S("algbw_gbps", 297.16, 536870912),
             S("busbw_gbps", 586.06, 536870912), S("wrong", 0, 536870912),
             S("inplace_time_us", 1835.9, 536870912), S("inplace_algbw_gbps", 292.43, 536870912),
             S("inplace_busbw_gbps", 576.74, 536870912), S("inplace_wrong", 0, 536870912),
             S("time_us", 10094, 4294967296), S("algbw_gbps", 425.49, 4294967296),
             S("busbw_gbps", 839.16, 4294967296), S("wrong", 0, 4294967296),
             S("inplace_time_us", 10141, 4294967296), S("inplace_algbw_gbps", 423.54, 4294967296),
             S("inplace_busbw_gbps", 835.32, 4294967296), S("inplace_wrong", 0, 4294967296),
             S("out_of_bounds", 0, 0), S("avg_busbw_gbps", 745.53, 0)));
  ExpectDocumented("nccl_tests", s);
}

TEST(NcclTestsFormat, ReadsOldTablesWithoutRootAndSkipsTheirErrorColumn) {
  // NVIDIA/nccl-tests issue #176: no root column, "error" (a max deviation, not a count).
  const auto s = ParseAll(
      "nccl_tests",
      {"#       size         count      type   redop     time   algbw   busbw  error     time   "
       "algbw   busbw  error",
       "        4096          1024     float     sum    93.73    0.04    0.09  1e-06    93.15    "
       "0.04    0.09  1e-06"});
  EXPECT_THAT(s, UnorderedElementsAre(
                     S("time_us", 93.73, 4096), S("algbw_gbps", 0.04, 4096),
                     S("busbw_gbps", 0.09, 4096), S("inplace_time_us", 93.15, 4096),
                     S("inplace_algbw_gbps", 0.04, 4096), S("inplace_busbw_gbps", 0.09, 4096)));
}

TEST(NcclTestsFormat, StripsMpirunTagOutputPrefixes) {
  // aws/aws-k8s-tester PR #503 (p5.48xlarge).
  const auto s = ParseAll(
      "nccl_tests",
      {"[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   "
       "busbw #wrong     time   algbw   busbw  #wrong",
       "[1,0]<stdout>:          32             8     float     sum      -1    22.25    0.00    "
       "0.00      0    13.34    0.00    0.00      0",
       "[1,0]<stdout>:# Avg bus bandwidth    : 92.3405 "});
  EXPECT_THAT(s, Contains(S("time_us", 22.25, 32)));
  EXPECT_THAT(s, Contains(S("inplace_time_us", 13.34, 32)));
  EXPECT_THAT(s, Contains(S("avg_busbw_gbps", 92.3405, 0)));
}

TEST(NcclTestsFormat, SkipsSizeZeroRowsAndNotAvailableWrongCounts) {
  // NVIDIA/nccl-tests issue #128 (size 0 rows); " N/A" without -c (util.cu).
  const auto s = ParseAll(
      "nccl_tests",
      {"           0             0     float     sum      -1     5.70    0.00    0.00      0     "
       "5.54    0.00    0.00      0",
       "         128             4     float     sum      -1    32.31    0.00    0.00    N/A    "
       "25.35    0.01    0.00    N/A"});
  EXPECT_THAT(
      s, UnorderedElementsAre(S("time_us", 32.31, 128), S("algbw_gbps", 0, 128),
                              S("busbw_gbps", 0, 128), S("inplace_time_us", 25.35, 128),
                              S("inplace_algbw_gbps", 0.01, 128), S("inplace_busbw_gbps", 0, 128)));
}

TEST(NcclTestsFormat, ReadsPerIterationAndTimestampColumnsByName) {
  // Built from util.cu's per-iteration header and getFloatStr's e-notation fallback.
  const auto s = ParseAll(
      "nccl_tests",
      {"#       size         count      type   redop    root     time   algbw   busbw #wrong   "
       "i_min   i_max   i_p99   i_cv%     time   algbw   busbw #wrong   i_min   i_max   i_p99   "
       "i_cv%  timestamp",
       "  8589934592    2147483648     float     sum      -1  1.6e+05   54.34   95.10      0  "
       "157000  159000  159000    0.50   158561   54.17   94.80      0  157000  160000  160000    "
       "0.61  2026-01-01 10:00:00"});
  EXPECT_THAT(
      s, UnorderedElementsAre(
             S("time_us", 1.6e5, 8589934592), S("algbw_gbps", 54.34, 8589934592),
             S("busbw_gbps", 95.1, 8589934592), S("wrong", 0, 8589934592),
             S("inplace_time_us", 158561, 8589934592), S("inplace_algbw_gbps", 54.17, 8589934592),
             S("inplace_busbw_gbps", 94.8, 8589934592), S("inplace_wrong", 0, 8589934592)));
}

TEST(NcclTestsFormat, IgnoresNcclInfoAndOtherCommentLines) {
  // NVIDIA/nccl issue #743 and nccl-tests issue #107.
  const auto s = ParseAll(
      "nccl_tests",
      {"task272154-tz9m4:512:512 [1] NCCL INFO Using network IB",
       "# nThread 1 nGpus 1 minBytes 1310720000 maxBytes 1310720000 step: 1048576(bytes) warmup "
       "iters: 5 iters: 20 validation: 1",
       "#   Rank  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB",
       "# Collective test concluded: all_reduce_perf"});
  EXPECT_THAT(s, IsEmpty());
}

// ------------------------------------------------------------------------------------------------

TEST(LogFormatNumbers, RejectsNonFiniteAndMalformedValuesEverywhere) {
  EXPECT_THAT(Parse("nanogpt", "iter 5: loss 1e999, time infms, mfu 1.5e-3%"),
              ElementsAre(S("mfu_pct", 1.5e-3, 5)));
  EXPECT_THAT(Parse("nanogpt", "iter 5: loss 0x10, time 1..2ms"), IsEmpty());
  EXPECT_THAT(Parse("hf_trainer", "{'a': 1e, 'b': -.5, 'c': +2, 'd': 1_000, 'e': 2.5GB}"),
              UnorderedElementsAre(S("b", -0.5, 0), S("c", 2, 0)));
  // An unquoted "1,000" is two items, and the second no key: not a dict.
  EXPECT_THAT(Parse("hf_trainer", "{'b': 1, 'd': 1,000}"), IsEmpty());
}

TEST(LogFormatNumbers, AStepPastInt64IsNoStep) {
  const auto s = Parse("nanogpt", "iter 99999999999999999999: loss 1.5, time 2.0ms");
  EXPECT_THAT(s, UnorderedElementsAre(S("loss", 1.5, 0), S("iter_ms", 2.0, 0)));
}

}  // namespace
}  // namespace tunectl

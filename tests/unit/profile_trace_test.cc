// core/profile_trace.h: hand-built Kineto traces with hand-computed shares, a trace recorded by the
// real torch.profiler on the CPU (tests/fixtures/profile/make_torch_trace.py), a fixture with the
// field layout of a GPU Kineto trace, and nsys stats CSV reports of both header generations.
#include "core/profile_trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace tunectl {
namespace {

using nlohmann::json;

constexpr double kEps = 1e-9;

std::string SourceDir() {
#ifdef TUNECTL_SOURCE_DIR
  return TUNECTL_SOURCE_DIR;
#else
  const char* dir = std::getenv("TUNECTL_SOURCE_DIR");
  return dir ? dir : ".";
#endif
}

std::string Fixture(const std::string& name) {
  const std::string path = SourceDir() + "/tests/fixtures/profile/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Events as Kineto writes them: the CPU thread of pid 100, GPU device d as pid d, streams as tids.
json Cpu(const std::string& cat, const std::string& name, double ts, double dur) {
  return {{"ph", "X"},  {"cat", cat}, {"name", name}, {"pid", 100},
          {"tid", 100}, {"ts", ts},   {"dur", dur},   {"args", json::object()}};
}
json Step(int n, double ts, double dur) {
  return Cpu("user_annotation", "ProfilerStep#" + std::to_string(n), ts, dur);
}
json Loader(double ts, double dur) {
  return Cpu("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts,
             dur);
}
json Gpu(const std::string& cat, const std::string& name, double ts, double dur, int stream,
         int device = 0) {
  static int correlation = 0;
  return {{"ph", "X"},
          {"cat", cat},
          {"name", name},
          {"pid", device},
          {"tid", stream},
          {"ts", ts},
          {"dur", dur},
          {"args", {{"device", device}, {"stream", stream}, {"correlation", ++correlation}}}};
}
json Kernel(double ts, double dur, int stream = 7, int device = 0) {
  return Gpu("kernel", "ampere_sgemm_128x64_tn", ts, dur, stream, device);
}
json Nccl(double ts, double dur, int stream = 20, int device = 0) {
  return Gpu("kernel",
             "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", ts,
             dur, stream, device);
}
json Memcpy(double ts, double dur, int stream = 7) {
  return Gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", ts, dur, stream);
}

std::string Trace(const std::vector<json>& events) {
  return json{{"schemaVersion", 1}, {"traceEvents", events}}.dump();
}

// The value of a share that must be present (NaN, failing the comparison, when absent).
double V(const std::optional<double>& share) {
  EXPECT_TRUE(share.has_value());
  return share.value_or(std::nan(""));
}

GpuTime G(const TraceSummary& s) {
  EXPECT_TRUE(s.gpu_time.has_value());
  const double nan = std::nan("");
  return s.gpu_time.value_or(GpuTime{nan, nan, nan});
}

StepShares First(const TraceSummary& s) {
  EXPECT_FALSE(s.steps.empty());
  return s.steps.empty() ? StepShares{} : s.steps[0];
}

TraceSummary Summarize(const std::string& trace) {
  auto r = SummarizeKinetoTrace(trace);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : TraceSummary{};
}

// Three steps of 100, 200 and 100 µs. Step 1: copy [10,20), compute on two streams [20,50) and
// [40,70) (union 50, not 60), NCCL [60,90) of which [60,70) under compute, a 20 µs data-loader
// wait, busy [10,90) so idle 20. Step 2: loader 10, compute [150,250) and a kernel [290,320) that
// runs into step 3 (10 µs here), NCCL [200,240) all under compute, memset [260,270). Step 3:
// [300,320) of that kernel, NCCL [350,380) with nothing to hide it. A kernel after the last step
// counts nowhere.
std::vector<json> ThreeSteps() {
  return {Step(1, 0, 100),
          Loader(0, 20),
          Memcpy(10, 10),
          Kernel(20, 30, 7),
          Kernel(40, 30, 8),
          Nccl(60, 30),
          Cpu("cpu_op", "aten::mm", 25, 10),
          Cpu("cpu_op", "aten::addmm", 27, 6),
          Cpu("cpu_op", "nccl:all_reduce", 55, 5),
          Cpu("cuda_runtime", "cudaLaunchKernel", 30, 5),
          Step(2, 100, 200),
          Loader(100, 10),
          Kernel(150, 100),
          Nccl(200, 40),
          Gpu("gpu_memset", "Memset (Device)", 260, 10, 7),
          Kernel(290, 30),
          Step(3, 300, 100),
          Nccl(350, 30),
          Kernel(400, 100)};
}

TEST(KinetoTrace, HandBuiltStepsHaveHandComputedShares) {
  const auto s = Summarize(Trace(ThreeSteps()));
  EXPECT_EQ(s.source, "torch");
  EXPECT_TRUE(s.has_gpu);
  EXPECT_FALSE(s.pseudo_step);
  EXPECT_EQ(s.gpu_devices, 1);
  ASSERT_EQ(s.steps.size(), 3u);

  const auto& a = First(s);
  EXPECT_EQ(a.step, 1);
  EXPECT_NEAR(a.wall_ms, 0.1, kEps);
  EXPECT_NEAR(V(a.kernel_pct), 50, kEps);
  EXPECT_NEAR(V(a.comm_pct), 30, kEps);
  EXPECT_NEAR(V(a.memcpy_pct), 10, kEps);
  EXPECT_NEAR(V(a.idle_pct), 20, kEps);
  EXPECT_NEAR(V(a.comm_overlap_pct), 100.0 / 3, kEps);
  EXPECT_NEAR(V(a.dataloader_pct), 20, kEps);
  EXPECT_NEAR(V(a.cpu_op_pct), 15, kEps);  // [25,35) holding addmm, and nccl:all_reduce [55,60)

  const auto& b = s.steps[1];
  EXPECT_EQ(b.step, 2);
  EXPECT_NEAR(b.wall_ms, 0.2, kEps);
  EXPECT_NEAR(V(b.kernel_pct), 55, kEps);  // 100 + 10 of the kernel running into step 3
  EXPECT_NEAR(V(b.comm_pct), 20, kEps);
  EXPECT_NEAR(V(b.memcpy_pct), 5, kEps);
  EXPECT_NEAR(V(b.idle_pct), 40, kEps);
  EXPECT_NEAR(V(b.comm_overlap_pct), 100, kEps);
  EXPECT_NEAR(V(b.dataloader_pct), 5, kEps);
  EXPECT_NEAR(V(b.cpu_op_pct), 0, kEps);

  const auto& c = s.steps[2];
  EXPECT_EQ(c.step, 3);
  EXPECT_NEAR(V(c.kernel_pct), 20, kEps);
  EXPECT_NEAR(V(c.comm_pct), 30, kEps);
  EXPECT_NEAR(V(c.memcpy_pct), 0, kEps);
  EXPECT_NEAR(V(c.idle_pct), 50, kEps);
  EXPECT_NEAR(V(c.comm_overlap_pct), 0, kEps);
  EXPECT_NEAR(V(c.dataloader_pct), 0, kEps);

  // Totals weigh the steps by wall time: 180, 100, 20, 250 busy, 50 hidden, 30 and 15 of 400 µs.
  EXPECT_EQ(s.total.step, -1);
  EXPECT_NEAR(s.total.wall_ms, 0.4, kEps);
  EXPECT_NEAR(V(s.total.kernel_pct), 45, kEps);
  EXPECT_NEAR(V(s.total.comm_pct), 25, kEps);
  EXPECT_NEAR(V(s.total.memcpy_pct), 5, kEps);
  EXPECT_NEAR(V(s.total.idle_pct), 37.5, kEps);
  EXPECT_NEAR(V(s.total.comm_overlap_pct), 50, kEps);
  EXPECT_NEAR(V(s.total.dataloader_pct), 7.5, kEps);
  EXPECT_NEAR(V(s.total.cpu_op_pct), 3.75, kEps);
  ASSERT_TRUE(s.gpu_time.has_value());
  EXPECT_NEAR(G(s).kernel_ms, 0.18, kEps);
  EXPECT_NEAR(G(s).comm_ms, 0.10, kEps);
  EXPECT_NEAR(G(s).memcpy_ms, 0.02, kEps);
  EXPECT_EQ(s.events, ThreeSteps().size());
  EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
}

TEST(KinetoTrace, NcclKernelsAreCommunication) {
  const auto s = Summarize(Trace({
      Step(0, 0, 100),
      Gpu("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 0, 10, 20),
      Gpu("kernel", "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 20,
          10, 20),
      Gpu("kernel", "void NCCL_reduce_kernel<float>", 40, 10, 20),
      Gpu("kernel", "sm80_xmma_gemm_f16f16_f16f32", 60, 10, 7),
      Cpu("cpu_op", "nccl:all_reduce", 0, 100),  // the CPU side is no GPU time
      Cpu("cpu_op", "c10d::allreduce_", 0, 100),
  }));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(First(s).step, 0);
  EXPECT_NEAR(V(First(s).comm_pct), 30, kEps);
  EXPECT_NEAR(V(First(s).kernel_pct), 10, kEps);
  EXPECT_NEAR(V(First(s).idle_pct), 60, kEps);
}

TEST(KinetoTrace, ConcurrentStreamsAreUnionedNotSummed) {
  const auto s = Summarize(Trace(
      {Step(1, 0, 100), Kernel(0, 60, 7), Kernel(10, 60, 8), Kernel(20, 10, 9), Kernel(65, 5, 7)}));
  EXPECT_NEAR(V(First(s).kernel_pct), 70, kEps);
  EXPECT_NEAR(V(First(s).idle_pct), 30, kEps);
}

TEST(KinetoTrace, CommHiddenUnderComputeOnlyCountsTheSameDevice) {
  // Device 0 computes while device 1 communicates: nothing of device 1's NCCL time is hidden.
  const auto s = Summarize(Trace({Step(1, 0, 100), Kernel(0, 100, 7, 0), Nccl(0, 50, 20, 1)}));
  EXPECT_EQ(s.gpu_devices, 2);
  EXPECT_NEAR(V(First(s).comm_overlap_pct), 0, kEps);
}

TEST(KinetoTrace, SeveralDevicesGiveTheMeanOverDevices) {
  // Device 0 busy 80 of 100 (60 compute, 20 NCCL), device 1 busy 40 (compute): means 50/10/40.
  const auto s = Summarize(
      Trace({Step(1, 0, 100), Kernel(0, 60, 7, 0), Nccl(60, 20, 20, 0), Kernel(0, 40, 7, 1)}));
  EXPECT_EQ(s.gpu_devices, 2);
  EXPECT_NEAR(V(First(s).kernel_pct), 50, kEps);
  EXPECT_NEAR(V(First(s).comm_pct), 10, kEps);
  EXPECT_NEAR(V(First(s).idle_pct), 40, kEps);
  EXPECT_NEAR(G(s).kernel_ms, 0.05, kEps);
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_NE(s.warnings.back().find("2 GPU devices"), std::string::npos);
}

TEST(KinetoTrace, DeviceWithoutWorkInAStepCountsAsIdle) {
  const auto s = Summarize(Trace({Step(1, 0, 100), Step(2, 100, 100), Kernel(0, 100, 7, 0),
                                  Kernel(100, 100, 7, 0), Kernel(100, 100, 7, 1)}));
  EXPECT_NEAR(V(First(s).idle_pct), 50, kEps);
  EXPECT_NEAR(V(s.steps[1].idle_pct), 0, kEps);
}

TEST(KinetoTrace, OlderCategorySpellingsAreRead) {
  // torch 1.8-era Kineto: "Operator", "Kernel", "Memcpy", "Memset", string stream tids, no device.
  const auto ev = [](const std::string& cat, const std::string& name, double ts, double dur,
                     json pid, json tid) {
    return json{{"ph", "X"},  {"cat", cat}, {"name", name}, {"pid", pid},
                {"tid", tid}, {"ts", ts},   {"dur", dur},   {"args", json::object()}};
  };
  const auto s = Summarize(Trace({
      ev("Operator", "ProfilerStep#7", 0, 100, 4242, "4242"),
      ev("Operator", "aten::conv2d", 0, 40, 4242, "4242"),
      ev("Runtime", "cudaLaunchKernel", 5, 5, 4242, "4242"),
      ev("Kernel", "volta_sgemm_128x64_nn", 10, 40, 0, "stream 7"),
      ev("Kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclColl)", 40, 20, 0, "stream 16"),
      ev("Memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 10, 0, "stream 7"),
      ev("Memset", "Memset (Device)", 60, 5, 0, "stream 7"),
  }));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(First(s).step, 7);
  EXPECT_EQ(s.gpu_devices, 1);
  EXPECT_NEAR(V(First(s).kernel_pct), 40, kEps);
  EXPECT_NEAR(V(First(s).comm_pct), 20, kEps);
  EXPECT_NEAR(V(First(s).memcpy_pct), 15, kEps);
  EXPECT_NEAR(V(First(s).idle_pct), 35, kEps);
  EXPECT_NEAR(V(First(s).comm_overlap_pct), 50, kEps);
  EXPECT_NEAR(V(First(s).cpu_op_pct), 40, kEps);
}

TEST(KinetoTrace, GpuAnnotationsAndSyncsAreNotActivity) {
  const auto s = Summarize(Trace({
      Step(1, 0, 100),
      Kernel(0, 10),
      Gpu("gpu_user_annotation", "ProfilerStep#1", 0, 100, 7),  // not a second step either
      Gpu("cuda_sync", "Stream Sync", 10, 90, 7),
  }));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_NEAR(V(First(s).idle_pct), 90, kEps);
}

TEST(KinetoTrace, WithoutProfilerStepsOnePseudoStepSpansTheTrace) {
  const auto s =
      Summarize(Trace({Cpu("cpu_op", "aten::mm", 1000, 50), Kernel(1010, 40), Memcpy(1100, 100)}));
  EXPECT_TRUE(s.pseudo_step);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(First(s).step, -1);
  EXPECT_NEAR(First(s).wall_ms, 0.2, kEps);
  EXPECT_NEAR(V(First(s).kernel_pct), 20, kEps);
  EXPECT_NEAR(V(First(s).memcpy_pct), 50, kEps);
  EXPECT_NEAR(V(First(s).idle_pct), 30, kEps);
  EXPECT_FALSE(First(s).comm_overlap_pct.has_value());  // no NCCL time
  EXPECT_NEAR(V(s.total.kernel_pct), 20, kEps);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("pseudo-step"), std::string::npos);
}

TEST(KinetoTrace, CpuOnlyTraceHasNoGpuSharesButCpuShares) {
  const auto s =
      Summarize(Trace({Step(1, 0, 100), Loader(0, 25), Cpu("cpu_op", "aten::mm", 30, 50)}));
  EXPECT_FALSE(s.has_gpu);
  EXPECT_EQ(s.gpu_devices, 0);
  EXPECT_FALSE(s.gpu_time.has_value());
  ASSERT_EQ(s.steps.size(), 1u);
  for (const auto* x : {&s.steps[0], &s.total}) {
    EXPECT_FALSE(x->kernel_pct || x->comm_pct || x->memcpy_pct || x->idle_pct ||
                 x->comm_overlap_pct);
    EXPECT_NEAR(V(x->dataloader_pct), 25, kEps);
    EXPECT_NEAR(V(x->cpu_op_pct), 50, kEps);
  }
}

TEST(KinetoTrace, StepsAreInTimeOrderWhateverTheFileOrder) {
  const auto s = Summarize(Trace({Step(12, 200, 100), Step(10, 0, 100), Step(11, 100, 100)}));
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(First(s).step, 10);
  EXPECT_EQ(s.steps[1].step, 11);
  EXPECT_EQ(s.steps[2].step, 12);
}

TEST(KinetoTrace, EpochMicrosecondTimestampsWithFractionsKeepTheirPrecision) {
  // µs since the epoch with ns decimals, as Kineto writes them: a double holds 1.7e15 only to
  // 0.25 µs, so each 0.123 would be off by up to 0.125 µs if read as one.
  const auto s = Summarize(R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 9, "tid": 9,
     "ts": 1701384035468921.123, "dur": 1000.250},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
     "ts": 1701384035468921.373, "dur": 250.000},
    {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
     "pid": 9, "tid": 9, "ts": 1701384035469421.123, "dur": 100.063}]})");
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_NEAR(First(s).wall_ms, 1.00025, 1e-12);
  EXPECT_NEAR(V(First(s).kernel_pct), 100 * 250 / 1000.25, 1e-9);
  EXPECT_NEAR(V(First(s).dataloader_pct), 100 * 100.063 / 1000.25, 1e-9);
}

TEST(KinetoTrace, BadEventsAreSkippedWithAWarning) {
  json no_dur = Kernel(0, 10);
  no_dur.erase("dur");
  json text_ts = Kernel(0, 10);
  text_ts["ts"] = "12";
  const auto s = Summarize(Trace(
      {Step(1, 0, 100), Kernel(0, 20), Kernel(30, -5), no_dur, text_ts, json("not an event"),
       json::array({1, 2}), Cpu("user_annotation", "ProfilerStep#x", 0, 100), Step(2, 100, 0)}));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_NEAR(V(First(s).kernel_pct), 20, kEps);
  EXPECT_EQ(s.events, 9u);
  std::string all;
  for (const auto& w : s.warnings) all += w + "\n";
  EXPECT_NE(all.find("3 complete events skipped"), std::string::npos) << all;
  EXPECT_NE(all.find("1 ProfilerStep events skipped"), std::string::npos) << all;
  EXPECT_NE(all.find("1 ProfilerStep events shorter than 1 ns"), std::string::npos) << all;
}

TEST(KinetoTrace, LegacyTopLevelArrayIsRead) {
  const auto s = Summarize(json::array({Step(1, 0, 100), Loader(0, 40)}).dump());
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_NEAR(V(First(s).dataloader_pct), 40, kEps);
}

TEST(KinetoTrace, LegacyCudaLaunchesWithoutKernelsWarnThatGpuSharesAreUnknown) {
  const auto s = Summarize(R"([
    {"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::mm", "ph": "X", "ts": 10, "dur": 20, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::mm", "ph": "s", "ts": 10, "tid": 1, "pid": "CPU functions", "id": 0, "cat": "cpu_to_cuda", "args": {}}
  ])");
  EXPECT_FALSE(s.has_gpu);
  EXPECT_NEAR(V(First(s).cpu_op_pct), 20, kEps);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("GPU shares unknown"), std::string::npos);
}

TEST(KinetoTrace, WhatIsNotATraceIsAnInvalidArgumentSayingWhy) {
  const auto error = [](std::string_view text) {
    auto r = SummarizeKinetoTrace(text);
    EXPECT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    return r.status().message();
  };
  EXPECT_NE(error("").find("not JSON"), std::string::npos);
  EXPECT_NE(error("{\"traceEvents\": [").find("not JSON"), std::string::npos);
  EXPECT_NE(error("{\"schemaVersion\": 1}").find("no traceEvents array"), std::string::npos);
  EXPECT_NE(error("42").find("no traceEvents array"), std::string::npos);
  EXPECT_NE(error("{\"traceEvents\": {}}").find("traceEvents is not an array"), std::string::npos);
  EXPECT_NE(error("{\"traceEvents\": 3}").find("traceEvents is not an array"), std::string::npos);
  EXPECT_NE(error("{\"traceEvents\": []}").find("no timed events"), std::string::npos);
  EXPECT_NE(error("[]").find("no timed events"), std::string::npos);
  EXPECT_NE(error(Trace({Kernel(5, 0), Cpu("cpu_op", "aten::add", 5, 0)})).find("spans no time"),
            std::string::npos);
  EXPECT_NE(error("{\"traceEvents\": [{\"ph\": \"i\", \"ts\": 1}]}").find("no timed events"),
            std::string::npos);
}

// Recorded by make_torch_trace.py with Debian 12's python3-torch 1.13, built without Kineto: the
// legacy profiler's array of CPU events (pid "CPU functions", no categories), ProfilerStep#1..#3,
// the single-process loader's __next__ in every step, a collate function sleeping 2 ms.
TEST(KinetoTrace, RealTorchCpuTraceHasStepsAndDataLoaderWait) {
  const std::string text = Fixture("torch_cpu_trace.json");
  const auto s = Summarize(text);
  EXPECT_FALSE(s.has_gpu);
  EXPECT_FALSE(s.pseudo_step);
  EXPECT_EQ(s.gpu_devices, 0);
  EXPECT_EQ(s.events, json::parse(text).size());
  std::vector<int64_t> numbers;
  for (const auto& step : s.steps) {
    numbers.push_back(step.step);
    EXPECT_GT(step.wall_ms, 2.0);  // each step waits over 2 ms for its batch
    EXPECT_LT(step.wall_ms, 1000.0);
    EXPECT_FALSE(step.kernel_pct || step.idle_pct || step.comm_pct || step.memcpy_pct);
    EXPECT_GT(V(step.dataloader_pct), 0);
    EXPECT_LT(V(step.dataloader_pct), 100);
    EXPECT_GT(V(step.cpu_op_pct), 0);
    EXPECT_LE(V(step.cpu_op_pct), 100);
  }
  EXPECT_EQ(numbers, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_GT(V(s.total.dataloader_pct), 0);
  EXPECT_LT(V(s.total.dataloader_pct), 100);
  double wall = 0;
  for (const auto& step : s.steps) wall += step.wall_ms;
  EXPECT_NEAR(s.total.wall_ms, wall, 1e-9);
  EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
}

// tests/fixtures/profile/kineto_gpu_trace.json: the layout of a torch 2.x Kineto trace of a DDP
// rank (deviceProperties, distributedInfo, epoch µs timestamps with fractions, cuda_runtime
// launches, ac2g flows, metadata, gpu_user_annotation and cuda_sync rows) with hand-chosen times.
// Step 4 [1000, 13000.5): memcpy [1700,1900) + memset [1900,1910); compute [2000,6500) and
// [7000,11000) on stream 7 with [10500,11500) on stream 13, plus [12800,13000.5) of a kernel
// running into step 5; NCCL [9000,12500), hidden [9000,11500). Step 5 [13000.5, 25000):
// [13000.5,13400) of that kernel, memcpy 100, compute [14000,22000), NCCL [20000,24000), hidden
// [20000,22000).
TEST(KinetoTrace, GpuTraceFixtureHasHandComputedShares) {
  const auto s = Summarize(Fixture("kineto_gpu_trace.json"));
  EXPECT_TRUE(s.has_gpu);
  EXPECT_EQ(s.gpu_devices, 1);
  ASSERT_EQ(s.steps.size(), 2u);
  const auto& a = First(s);
  const double wa = 12000.5;
  EXPECT_EQ(a.step, 4);
  EXPECT_NEAR(a.wall_ms, 12.0005, kEps);
  EXPECT_NEAR(V(a.kernel_pct), 100 * 9200.5 / wa, kEps);
  EXPECT_NEAR(V(a.comm_pct), 100 * 3500 / wa, kEps);
  EXPECT_NEAR(V(a.memcpy_pct), 100 * 210 / wa, kEps);
  EXPECT_NEAR(V(a.idle_pct), 100 - 100 * 10410.5 / wa, kEps);
  EXPECT_NEAR(V(a.comm_overlap_pct), 100 * 2500.0 / 3500, kEps);
  EXPECT_NEAR(V(a.dataloader_pct), 100 * 500 / wa, kEps);
  EXPECT_NEAR(V(a.cpu_op_pct), 100 * 430 / wa, kEps);
  const auto& b = s.steps[1];
  const double wb = 11999.5;
  EXPECT_EQ(b.step, 5);
  EXPECT_NEAR(V(b.kernel_pct), 100 * 8399.5 / wb, kEps);
  EXPECT_NEAR(V(b.comm_pct), 100 * 4000 / wb, kEps);
  EXPECT_NEAR(V(b.memcpy_pct), 100 * 100 / wb, kEps);
  EXPECT_NEAR(V(b.idle_pct), 100 - 100 * 10499.5 / wb, kEps);
  EXPECT_NEAR(V(b.comm_overlap_pct), 50, kEps);
  EXPECT_NEAR(V(b.dataloader_pct), 100 * 250 / wb, kEps);
  // Over 24000 µs: compute 17600, NCCL 7500, copies 310, busy 20910, hidden 4500, loader 750.
  EXPECT_NEAR(s.total.wall_ms, 24, kEps);
  EXPECT_NEAR(V(s.total.kernel_pct), 100 * 17600.0 / 24000, kEps);
  EXPECT_NEAR(V(s.total.comm_pct), 31.25, kEps);
  EXPECT_NEAR(V(s.total.memcpy_pct), 100 * 310.0 / 24000, kEps);
  EXPECT_NEAR(V(s.total.idle_pct), 12.875, kEps);
  EXPECT_NEAR(V(s.total.comm_overlap_pct), 60, kEps);
  EXPECT_NEAR(V(s.total.dataloader_pct), 3.125, kEps);
  EXPECT_NEAR(V(s.total.cpu_op_pct), 2.625, kEps);
  EXPECT_NEAR(G(s).kernel_ms, 17.6, kEps);
  EXPECT_NEAR(G(s).comm_ms, 7.5, kEps);
  EXPECT_NEAR(G(s).memcpy_ms, 0.31, kEps);
  EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
}

// ---- nsys stats ------------------------------------------------------------------------------

TraceSummary Nsys(std::string_view kern, std::string_view mem,
                  std::optional<double> wall = std::nullopt) {
  auto r = SummarizeNsysStats(kern, mem, wall);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : TraceSummary{};
}

void ExpectFixtureTotals(const TraceSummary& s) {
  EXPECT_EQ(s.source, "nsys");
  EXPECT_TRUE(s.has_gpu);
  EXPECT_TRUE(s.steps.empty());
  EXPECT_EQ(s.events, 7u);
  ASSERT_TRUE(s.gpu_time.has_value());
  EXPECT_NEAR(G(s).kernel_ms, 500, kEps);  // sgemm 400 + elementwise 100
  EXPECT_NEAR(G(s).comm_ms, 200, kEps);    // the two NCCL kernels
  EXPECT_NEAR(G(s).memcpy_ms, 50, kEps);
  EXPECT_NEAR(s.total.wall_ms, 1000, kEps);
  EXPECT_NEAR(V(s.total.kernel_pct), 50, kEps);
  EXPECT_NEAR(V(s.total.comm_pct), 20, kEps);
  EXPECT_NEAR(V(s.total.memcpy_pct), 5, kEps);
  EXPECT_NEAR(V(s.total.idle_pct), 25, kEps);
  EXPECT_FALSE(s.total.comm_overlap_pct.has_value());
  EXPECT_FALSE(s.total.dataloader_pct.has_value());
  EXPECT_FALSE(s.total.cpu_op_pct.has_value());
  EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
}

TEST(NsysStats, CudaGpuKernSumAndMemTimeSumHeadersAreRead) {
  ExpectFixtureTotals(Nsys(Fixture("nsys_cuda_gpu_kern_sum.csv"),
                           Fixture("nsys_cuda_gpu_mem_time_sum.csv"), 1000.0));
}

TEST(NsysStats, OlderGpukernsumAndGpumemtimesumHeadersAreRead) {
  ExpectFixtureTotals(
      Nsys(Fixture("nsys_gpukernsum_2021.csv"), Fixture("nsys_gpumemtimesum_2021.csv"), 1000.0));
}

TEST(NsysStats, WithoutWallTimeOnlyTotalsAreGiven) {
  const auto s = Nsys(Fixture("nsys_cuda_gpu_kern_sum.csv"), "");
  EXPECT_TRUE(s.has_gpu);
  EXPECT_NEAR(G(s).kernel_ms, 500, kEps);
  EXPECT_NEAR(G(s).memcpy_ms, 0, kEps);
  EXPECT_EQ(s.total.wall_ms, 0);
  EXPECT_FALSE(s.total.kernel_pct || s.total.comm_pct || s.total.memcpy_pct || s.total.idle_pct);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("memory summary"), std::string::npos);
}

TEST(NsysStats, QuotedNamesWithCommasQuotesAndNewlinesKeepTheirColumns) {
  const auto s = Nsys(
      "Time (%),Total Time (ns),Instances,Name\r\n"
      "50.0,3000000,1,\"void f<int, \"\"nccl\"\", 2>(int, float)\"\r\n"
      "50.0,1000000,1,\"gemm\nsecond line, still the name\"\r\n",
      "");
  EXPECT_NEAR(G(s).comm_ms, 3, kEps);
  EXPECT_NEAR(G(s).kernel_ms, 1, kEps);
  EXPECT_EQ(s.events, 2u);
}

TEST(NsysStats, ColumnsAreFoundByNameInAnyOrderAndQuotedHeaders) {
  const auto s = Nsys(
      "\"Name\",\"Instances\",\"Total Time (ns)\"\n"
      "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\",\"4\",\"2000000\"\n",
      "Operation,Count,  Total Time (ns) \n[CUDA memset],1, 500000\n", 10.0);
  EXPECT_NEAR(G(s).comm_ms, 2, kEps);
  EXPECT_NEAR(G(s).memcpy_ms, 0.5, kEps);
  EXPECT_NEAR(V(s.total.idle_pct), 75, kEps);
}

TEST(NsysStats, ProgressLinesBeforeTheHeaderAreSkipped) {
  const auto s = Nsys(
      "Generating SQLite file report1.sqlite from report1.nsys-rep\n"
      "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2023.2.3/host-linux-x64/"
      "reports/cuda_gpu_kern_sum.py]... \n"
      "\n" +
          Fixture("nsys_cuda_gpu_kern_sum.csv") + "\n",
      Fixture("nsys_cuda_gpu_mem_time_sum.csv"), 1000.0);
  EXPECT_NEAR(G(s).kernel_ms, 500, kEps);
  EXPECT_EQ(s.events, 7u);
}

TEST(NsysStats, TheTableEndsAtABlankLine) {
  const auto s = Nsys(
      "Time (%),Total Time (ns),Instances,Name\n100.0,1000000,1,k\n\n"
      "Time (%),Total Time (ns),Num Calls,Name\n90.0,9000000,3,cudaLaunchKernel\n",
      "");
  EXPECT_NEAR(G(s).kernel_ms, 1, kEps);
}

TEST(NsysStats, SkippedReportIsAWarningNotAnError) {
  const auto s = Nsys(Fixture("nsys_cuda_gpu_kern_sum.csv"),
                      "Processing [report1.sqlite] with [cuda_gpu_mem_time_sum.py]... \n"
                      "SKIPPED: report1.sqlite does not contain GPU memory data.\n");
  EXPECT_NEAR(G(s).memcpy_ms, 0, kEps);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("SKIPPED: report1.sqlite"), std::string::npos);
}

TEST(NsysStats, RowsWithoutANumberAreSkippedWithAWarning) {
  const auto s = Nsys("Time (%),Total Time (ns),Name\n1,abc,k1\n2,-5,k2\n3\n4,2000000,k3\n", "");
  EXPECT_NEAR(G(s).kernel_ms, 2, kEps);
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_NE(s.warnings[0].find("3 rows without a numeric Total Time"), std::string::npos);
}

TEST(NsysStats, SumsBeyondTheWallTimeAreCappedWithAWarning) {
  const auto s = Nsys("Total Time (ns),Name\n800000000,a\n700000000,b\n", "", 1000.0);
  EXPECT_NEAR(V(s.total.kernel_pct), 100, kEps);
  EXPECT_NEAR(V(s.total.idle_pct), 0, kEps);
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_NE(s.warnings[1].find("more than the wall time"), std::string::npos);
}

TEST(NsysStats, HeaderOnlyReportsHaveNoGpuActivity) {
  const auto s = Nsys("Time (%),Total Time (ns),Instances,Name\n",
                      "Time (%),Total Time (ns),Count,Operation\n", 100.0);
  EXPECT_FALSE(s.has_gpu);
  EXPECT_FALSE(s.gpu_time.has_value());
  EXPECT_FALSE(s.total.idle_pct.has_value());
}

TEST(NsysStats, MissingColumnsAndEmptyInputAreErrorsNamingThem) {
  const auto error = [](std::string_view kern, std::string_view mem,
                        std::optional<double> wall = std::nullopt) {
    auto r = SummarizeNsysStats(kern, mem, wall);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    return r.status().message();
  };
  const std::string no_total = error("Time (%),Instances,Avg (ns),Name\n1,2,3,k\n", "");
  EXPECT_NE(no_total.find("kernel summary"), std::string::npos) << no_total;
  EXPECT_NE(no_total.find("no column 'Total Time (ns)'"), std::string::npos) << no_total;
  const std::string no_op = error("", "Time (%),Total Time (ns),Count,Name\n1,2,3,[CUDA memset]\n");
  EXPECT_NE(no_op.find("memory summary"), std::string::npos) << no_op;
  EXPECT_NE(no_op.find("no column 'Operation'"), std::string::npos) << no_op;
  EXPECT_NE(error("hello\nworld\n", "").find("no CSV header"), std::string::npos);
  EXPECT_NE(error("", " \n").find("both"), std::string::npos);
  EXPECT_NE(error("Total Time (ns),Name\n1,k\n", "", 0.0).find("positive"), std::string::npos);
  EXPECT_NE(error("Total Time (ns),Name\n1,k\n", "", -1.0).find("positive"), std::string::npos);
}

}  // namespace
}  // namespace tunectl

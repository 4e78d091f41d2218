// Time shares of training steps from profiler traces: how much of each step the GPU spends in
// compute kernels, in communication (NCCL kernels) and in memory copies, how much it is idle, how
// much communication hides under compute, and how much of the step the CPU waits on the data
// loader. Reads PyTorch Profiler Chrome traces and `nsys stats` CSV summaries. Pure functions of
// the bytes given (the caller reads and decompresses files); thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

// Shares of a step's wall time, each in percent within [0, 100]. GPU shares are absent when the
// trace has no GPU activity (a CPU-only run): absent means unknown, not 0%.
struct StepShares {
  int64_t step = -1;  // N of ProfilerStep#N; -1 for a pseudo-step and for a total
  double wall_ms = 0;
  std::optional<double> kernel_pct;  // union of compute (non-NCCL) kernels
  std::optional<double> comm_pct;    // union of NCCL kernels
  std::optional<double> memcpy_pct;  // union of memcpy and memset activity
  std::optional<double> idle_pct;    // 100 - union of all GPU activity
  // Share of the NCCL time during which a compute kernel ran on the same device (communication
  // hidden by compute); absent when the step has no NCCL time.
  std::optional<double> comm_overlap_pct;
  std::optional<double> dataloader_pct;  // union of CPU data-loader waits; absent for nsys
  std::optional<double> cpu_op_pct;      // union of CPU operators; absent for nsys
};

// GPU time behind a summary's total shares, in ms.
struct GpuTime {
  double kernel_ms = 0;  // compute kernels
  double comm_ms = 0;    // NCCL kernels
  double memcpy_ms = 0;  // memcpy and memset
};

struct TraceSummary {
  std::string source;  // "torch" or "nsys"
  bool has_gpu = false;
  // The trace has no usable ProfilerStep#N: steps holds one pseudo-step (step -1) spanning the
  // trace, from its first event's start to its last event's end.
  bool pseudo_step = false;
  std::vector<StepShares> steps;    // in time order; empty for nsys
  StepShares total;                 // over all steps, each share weighted by the steps' wall times
  std::optional<GpuTime> gpu_time;  // absent without GPU activity
  int gpu_devices = 0;              // devices with GPU activity; 0 for nsys (summaries merge them)
  size_t events = 0;                // trace events read (nsys: report rows read)
  std::vector<std::string> warnings;  // what was skipped or approximated, one line each
};

// A PyTorch Profiler Chrome trace: Kineto's `{"traceEvents": [...]}` (export_chrome_trace,
// tensorboard_trace_handler's *.pt.trace.json) or the legacy profiler's top-level event array
// (torch built without Kineto; CPU only). Categories are matched case-insensitively, both
// generations (kernel/Kernel, gpu_memcpy/Memcpy, gpu_memset/Memset, cpu_op/Operator, ...).
//  - Steps: CPU events "ProfilerStep#N" (cat user_annotation, cpu_op, Operator or none), each
//    from its start to its end on the CPU timeline; GPU activity counts toward the steps whose
//    wall window it falls in (clipped), so the GPU's lag behind the CPU shifts work between
//    neighbouring steps but not out of a run of steps.
//  - GPU activity: complete events of cat kernel (NCCL when the name contains "nccl", any case),
//    gpu_memcpy/Memcpy and gpu_memset/Memset; annotations and syncs on the GPU timeline are not
//    activity. Concurrent streams are unioned per device (args.device, else pid).
//  - Several devices: each share is the mean over the devices with GPU activity anywhere in the
//    trace (a device without work in a step counts as idle); comm_overlap_pct pools their NCCL
//    time.
//  - Data-loader wait: CPU events named "enumerate(DataLoader)#...DataLoaderIter.__next__".
//  - CPU operators: cat cpu_op/Operator; in a trace without categories (legacy), every event but
//    the steps and data-loader waits.
// InvalidArgument when the text is not JSON, has no event array, or has no timed events or spans
// no time.
Result<TraceSummary> SummarizeKinetoTrace(std::string_view json);

// `nsys stats --format csv` reports: cuda_gpu_kern_sum (older: gpukernsum) and
// cuda_gpu_mem_time_sum (older: gpumemtimesum). Columns are found by name, "Total Time (ns)" (or
// "Total Time") and "Name" (memory: "Operation"); text before the header (nsys' progress lines)
// is skipped and the table ends at a blank line. Either report may be empty (not captured).
// Totals only: the summaries hold sums of durations, so concurrent kernels count once each and no
// steps or overlap can be told. With `wall_ms` (the profiled wall time) the total gets shares,
// capped at 100, and idle_pct is then a lower bound. InvalidArgument naming the report and the
// missing column, or when both reports are empty or wall_ms is not positive.
Result<TraceSummary> SummarizeNsysStats(std::string_view kern_csv, std::string_view mem_csv,
                                        std::optional<double> wall_ms = std::nullopt);

}  // namespace tunectl

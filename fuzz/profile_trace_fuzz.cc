// The profiler-trace summarisers (core/profile_trace.h) over arbitrary bytes: the whole input as a
// Chrome trace, and split at its first NUL into a kernel and a memory nsys CSV report, with and
// without a wall time. Never a crash, a hang, an exception or undefined behaviour; on success every
// share finite and within [0, 100], wall times and GPU times finite and >= 0, GPU shares present
// exactly when the summary has GPU activity, the total over the steps' wall time.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/profile_trace.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunectl;

bool IsShare(const std::optional<double>& pct) {
  return !pct || (std::isfinite(*pct) && *pct >= 0 && *pct <= 100);
}

bool IsTime(double ms) {
  return std::isfinite(ms) && ms >= 0;
}

void CheckShares(const StepShares& s, bool has_gpu, bool torch) {
  FUZZ_CHECK(IsTime(s.wall_ms), "a wall time is finite and >= 0");
  for (const auto* pct : {&s.kernel_pct, &s.comm_pct, &s.memcpy_pct, &s.idle_pct,
                          &s.comm_overlap_pct, &s.dataloader_pct, &s.cpu_op_pct})
    FUZZ_CHECK(IsShare(*pct), "a share is finite and within [0, 100]");
  if (!has_gpu)
    FUZZ_CHECK(!s.kernel_pct && !s.comm_pct && !s.memcpy_pct && !s.idle_pct && !s.comm_overlap_pct,
               "no GPU share without GPU activity");
  if (torch) {
    FUZZ_CHECK(s.wall_ms > 0, "a torch step has a positive wall time");
    FUZZ_CHECK(s.dataloader_pct && s.cpu_op_pct, "a torch step has its CPU shares");
    FUZZ_CHECK(has_gpu == (s.kernel_pct && s.comm_pct && s.memcpy_pct && s.idle_pct),
               "a torch step has GPU shares exactly when the trace has GPU activity");
  }
}

void CheckSummary(const TraceSummary& s) {
  const bool torch = s.source == "torch";
  FUZZ_CHECK(torch || s.source == "nsys", "the source is torch or nsys");
  FUZZ_CHECK(s.has_gpu == s.gpu_time.has_value(), "GPU times exactly with GPU activity");
  if (s.gpu_time)
    FUZZ_CHECK(IsTime(s.gpu_time->kernel_ms) && IsTime(s.gpu_time->comm_ms) &&
                   IsTime(s.gpu_time->memcpy_ms),
               "GPU times are finite and >= 0");
  FUZZ_CHECK(s.gpu_devices >= 0, "a device count is >= 0");
  if (torch) {
    FUZZ_CHECK(!s.steps.empty(), "a torch summary has a step");
    FUZZ_CHECK(!s.pseudo_step || (s.steps.size() == 1 && s.steps[0].step == -1),
               "a pseudo-step is the only step, numbered -1");
    FUZZ_CHECK(s.has_gpu == (s.gpu_devices > 0), "GPU activity exactly with a device");
    double wall = 0;
    for (const auto& step : s.steps) {
      CheckShares(step, s.has_gpu, true);
      FUZZ_CHECK(step.step >= -1, "a step number is >= -1");
      wall += step.wall_ms;
    }
    FUZZ_CHECK(std::fabs(wall - s.total.wall_ms) <= 1e-9 * (wall + 1),
               "the total's wall time is the steps'");
  } else {
    FUZZ_CHECK(s.steps.empty(), "an nsys summary has no steps");
  }
  CheckShares(s.total, s.has_gpu, torch);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = SummarizeKinetoTrace(in); r.ok()) {
    CheckSummary(*r);
  } else {
    FUZZ_CHECK(!r.status().message().empty(), "an error says what is wrong");
  }
  const size_t nul = in.find('\0');
  const std::string_view kern = in.substr(0, nul);
  const std::string_view mem = nul == std::string_view::npos ? "" : in.substr(nul + 1);
  for (const std::optional<double> wall : {std::optional<double>(), std::optional<double>(1.5)}) {
    if (auto r = SummarizeNsysStats(kern, mem, wall); r.ok()) {
      CheckSummary(*r);
      FUZZ_CHECK(r->total.wall_ms == wall.value_or(0), "the nsys wall time is the one given");
    } else {
      FUZZ_CHECK(!r.status().message().empty(), "an error says what is wrong");
    }
  }
  return 0;
}

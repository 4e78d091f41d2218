// Within-run analysis: where a run's steady state starts, and whether it has one. Change points
// are found by PELT (optimal partitioning with pruning; L2 cost in units of a robust long-run
// noise variance) on medians of consecutive, equal-sized windows, so single spikes cannot create
// change points. Calibration and measured error rates: docs/benchmarks.md (bench/steady.cc).
// Pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/spec.h"
#include "core/stats.h"

namespace tunectl {

struct PeltOptions {
  double penalty_per_log = 15;  // penalty = penalty_per_log · ln(n), in noise-variance units
  int min_segment = 2;          // points
  // The noise variance σ² comes from the MAD of first differences (immune to level shifts) and
  // is multiplied by this: > 1 when the points are positively autocorrelated, where first
  // differences under-estimate the variance that matters for a segment mean (AnalyzeRun passes
  // the long-run factor of its window medians).
  double variance_factor = 1;
};

// Change points of `x` (indices where a new segment starts; empty = one segment).
std::vector<size_t> Pelt(const std::vector<double>& x, const PeltOptions& o = PeltOptions());

// The printed quantum of `values`: the largest q = m·10^k such that every finite value is an
// integer multiple of q, from the decimal digits present (12 significant digits, so 0.1 + 0.2
// counts as 0.3); m > 1 only when 3 or more distinct values share the factor (0.02, 0.04, 0.06 →
// 0.02). 0.02, 0.01, 0.03 → 0.01; 3751, 3702 → 1; arbitrary doubles → about 1e-11 of their
// magnitude. 0 when there is no non-zero finite value.
double Quantum(const std::vector<double>& values);

struct SteadyState {
  int samples = 0;               // all samples of the metric (NaN/Inf included)
  int declared_warmup = 0;       // dropped by the workload's warmup_steps
  int nonfinite = 0;             // NaN/Inf samples after the declared warm-up, left out
  int detected_warmup = 0;       // finite samples dropped by change-point detection
  int steady = 0;                // samples in the steady-state window (the last segment)
  int64_t steady_from_step = 0;  // step of the window's first sample (0: no window); a workload
                                 // whose warm-up ends there declares warmup_steps: this − 1
  Descriptive stats;             // over the steady-state window
  double mad = 0;                // median absolute deviation within the window
  double lag1 = 0;               // lag-1 autocorrelation within the window
  int outliers = 0;              // samples more than 5 scaled MADs from the window median
  double resolution = 0;         // Quantum() of the window's values: the metric's printed step
  int levels = 0;                // distinct values in the window
  bool no_steady_state = false;  // last segment shorter than half of the run after warm-up
  bool slowdown = false;         // the last segment is > 2 % worse than a segment before it that
                                 // covers >= 20 % of the run (shorter ones are transients)
  // The run's value (what it delivered; docs/statistics.md): over the measured window, i.e. the
  // finite samples after the declared warm-up and after a detected leading ramp (segments each
  // worse than the next, together at most a third of the run). Stalls, throttled stretches and
  // slowdowns inside the window count in full.
  int64_t measured_from_step = 0;   // first step of the measured window (0: no window)
  int measured = 0;                 // samples in the measured window
  std::optional<double> delivered;  // its effective value: see Aggregate
  std::optional<double> pace;       // its unimpeded pace: the upper quartile of the window (lower
                                    // quartile for lower-is-better), the level between stalls
  std::string aggregate;  // how `delivered` was computed: kHarmonicMean or kArithmeticMean
  std::vector<std::string> warnings;
  // The steady window is clean: a note, never a reason to leave the run out of a comparison.
  bool usable() const { return !no_steady_state && !slowdown && stats.n > 0; }
};

// How a run's samples become its delivered value. For a higher-is-better metric (a rate: samples/s,
// tokens/s, TFLOP/s, MFU) each sample covers the same work (a step or a log interval), so the work
// over the time it took is the harmonic mean of the samples: a stall of one step at a fifth of the
// pace costs five steps' time. For a lower-is-better metric (a per-step time, a latency, a loss) it
// is the arithmetic mean: the total time over the steps. A rate with a sample <= 0 falls back to
// the arithmetic mean.
inline constexpr const char* kHarmonicMean = "harmonic mean (work over time)";
inline constexpr const char* kArithmeticMean = "arithmetic mean";
// The delivered value of `values` (finite) for a metric whose better direction is `better`, and
// how it was computed; nullopt when `values` is empty.
std::optional<double> DeliveredValue(const std::vector<double>& values, Better better,
                                     std::string* aggregate = nullptr);

// What AnalyzeRun decided about one sample (SteadyState counts them; `run samples` shows each).
enum class SampleRole {
  kDeclaredWarmup,  // at or before the workload's warmup_steps (NaN/Inf ones too)
  kNonFinite,       // NaN/Inf after the declared warm-up: left out
  kDetectedWarmup,  // finite, before the steady-state window (change-point detection)
  kSteady,          // in the window the median is taken over
  kOutlier,         // in the window and counted in its median, but beyond 5 MADs (a warning)
};

// `samples` in step order. The finite samples after the declared warm-up are cut into about 25
// windows of equal size (±1, at least 3 samples); with fewer than 8 windows no change point is
// looked for. A segment (of window medians) needs at least 3 windows to be the last one: a
// shorter final segment (a slow last step or two, a checkpoint) is merged into the one before.
// PELT's penalty is 6 · ln(windows) in units of the medians' long-run variance (from the steps'
// AR(1) coefficient, read from trimmed second differences at lags 1 and 4 so that a warm-up ramp or
// a level shift does not inflate it; clamped to [0, 0.9]): a steady run is flagged ≤ 1 % of the
// time with heavy-tailed, autocorrelated noise, stalls and warm-up ramps (bench_steady).
// NaN/Inf samples are counted in `nonfinite` and left out. When there is no steady state the
// window falls back to everything after the declared warm-up (and the run is flagged).
// `roles` (when given) gets one SampleRole per sample of `samples`, in its order.
SteadyState AnalyzeRun(const std::vector<StepValue>& samples, int declared_warmup_steps,
                       Better better, std::vector<SampleRole>* roles = nullptr);

// Removes the "skip:<tag>" series (core/metrics.h) from `series` and every metric's samples at
// the steps they mark (checkpoint saves, evaluations). Returns, per metric, how many samples were
// left out; "skip:<tag>" keys count the steps each tag marked. `left_out` (when given) gets what
// was removed: per metric its samples at marked steps, and each "skip:<tag>" series itself.
std::map<std::string, int> DropSkippedSteps(
    std::map<std::string, std::vector<StepValue>>* series,
    std::map<std::string, std::vector<StepValue>>* left_out = nullptr);

}  // namespace tunectl

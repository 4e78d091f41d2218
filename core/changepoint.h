// Within-run analysis: where a run's steady state starts, and whether it has one. Change points
// are found by PELT (optimal partitioning with pruning; L2 cost in units of a robust noise
// variance) on medians of consecutive windows, so single spikes cannot create change points.
// Pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/spec.h"
#include "core/stats.h"

namespace tunectl {

struct PeltOptions {
  double penalty_per_log = 15;  // penalty = penalty_per_log · ln(n), in noise-variance units
  int min_segment = 2;          // points
};

// Change points of `x` (indices where a new segment starts; empty = one segment).
std::vector<size_t> Pelt(const std::vector<double>& x, const PeltOptions& o = PeltOptions());

struct SteadyState {
  int samples = 0;               // all samples of the metric
  int declared_warmup = 0;       // dropped by the workload's warmup_steps
  int detected_warmup = 0;       // dropped by change-point detection
  int steady = 0;                // samples in the steady-state window (the last segment)
  Descriptive stats;             // over the steady-state window
  double mad = 0;                // median absolute deviation within the window
  double lag1 = 0;               // lag-1 autocorrelation within the window
  int outliers = 0;              // samples more than 5 scaled MADs from the window median
  bool no_steady_state = false;  // last segment shorter than half of the run after warm-up
  bool slowdown = false;         // the last segment is > 2 % worse than a segment before it that
                                 // covers >= 20 % of the run (shorter ones are transients)
  std::vector<std::string> warnings;
  bool usable() const { return !no_steady_state && !slowdown && stats.n > 0; }
};

// `samples` in step order. With fewer than 8 samples after the declared warm-up no change point
// is looked for. When there is no steady state the window falls back to everything after the
// declared warm-up (and the run is flagged).
SteadyState AnalyzeRun(const std::vector<StepValue>& samples, int declared_warmup_steps,
                       Better better);

// Removes the "skip:<tag>" series (core/metrics.h) from `series` and every metric's samples at
// the steps they mark (checkpoint saves, evaluations). Returns, per metric, how many samples were
// left out; "skip:<tag>" keys count the steps each tag marked.
std::map<std::string, int> DropSkippedSteps(std::map<std::string, std::vector<StepValue>>* series);

}  // namespace tunectl

// A run's samples as `run samples` shows them and the run page draws them: per metric every
// stored sample with what the run's summary decided about it — by the summary's own functions
// (DropSkippedSteps, then AnalyzeRun per metric), so the chart and the summary cannot disagree —
// and the points bounded by min/max decimation. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/changepoint.h"
#include "core/launch.h"
#include "core/stats.h"
#include "core/status.h"

namespace tunectl {

inline constexpr int kDefaultMaxPoints = 2000;
inline constexpr int kMinMaxPoints = 10;
inline constexpr int kMaxMaxPoints = 100000;

// A request's max_points: 0 = kDefaultMaxPoints; InvalidArgument naming the field, the value and
// the range when it is outside kMinMaxPoints..kMaxMaxPoints.
Result<int> ResolveMaxPoints(int max_points);

// Where a sample stands in the run's summary.
enum class SamplePhase {
  kWarmup,   // declared or detected warm-up: before the steady window
  kSteady,   // in the steady window, counted in the median
  kOutlier,  // in the steady window and counted, but beyond 5 MADs of its median
  kSkipped,  // left out of the metric: NaN/Inf, or at a step run.skip_steps marked
};
std::string_view PhaseName(SamplePhase p);  // warmup | steady | outlier | skipped

struct SamplePoint {
  int64_t step = 0;
  double value = 0;
  SamplePhase phase = SamplePhase::kSteady;
  bool operator==(const SamplePoint&) const = default;
};

// At most `max_points` (>= 2) of `points` (in step order): when there are more, the points are
// cut into max_points / 2 buckets of consecutive points and each bucket keeps its lowest and its
// highest point, in their order (one point when they are the same), so a spike is never averaged
// away. Fewer points are returned as they are.
std::vector<SamplePoint> DecimateMinMax(const std::vector<SamplePoint>& points, size_t max_points);

// A sample the summary left out of its metric.
struct SkippedSample {
  int64_t step = 0;
  double value = 0;        // NaN or ±Inf for a non-finite one
  bool skip_step = false;  // false: NaN/Inf; true: at a step run.skip_steps marked …
  std::string tag;         // … with this tag
};

struct MetricSeries {
  std::string metric;
  int samples = 0;                     // every stored sample of the metric (skipped steps' too)
  std::vector<SamplePoint> points;     // the finite samples in step order, decimated to max_points
  int points_total = 0;                // finite samples before decimation
  int declared_warmup_steps = 0;       // the workload's warmup_steps: steps up to it are warm-up
  std::optional<int64_t> warmup_end;   // the step of the warm-up's last sample (declared or
                                       // detected); none when no sample is in a warm-up
  std::optional<int64_t> steady_from;  // the steady window's first and last steps; none when
  std::optional<int64_t> steady_to;    // the metric has no window
  std::vector<SkippedSample> skipped;  // in step order, at most max_points (evenly thinned)
  int skipped_total = 0;
  std::vector<SamplePoint> outliers;  // in step order, at most max_points (evenly thinned)
  int outliers_total = 0;
  SteadyState analysis;  // AnalyzeRun's result, as the summary has it (steady, median, usable)
};

// The series of one attempt as the store loads them for its summary: every metric of `launch`
// (an empty series for one without samples), the run.skip_steps marks as "skip:<tag>" series, each
// in step order. `only` = "" for every metric, else that one (InvalidArgument naming it and the
// run's metrics when it has no such metric). Metrics in name order.
Result<std::vector<MetricSeries>> BuildRunSeries(
    std::map<std::string, std::vector<StepValue>> series, const LaunchRecord& launch,
    const std::string& only, size_t max_points);

}  // namespace tunectl

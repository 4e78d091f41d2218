#include "core/run_series.h"

#include <algorithm>
#include <cmath>

#include "core/metrics.h"

namespace tunectl {
namespace {

// At most `max` of `items`, evenly spaced, the first one kept.
template <typename T>
std::vector<T> Thin(std::vector<T> items, size_t max) {
  if (items.size() <= max) return items;
  std::vector<T> out;
  out.reserve(max);
  for (size_t i = 0; i < max; ++i) out.push_back(std::move(items[i * items.size() / max]));
  return out;
}

SamplePhase PhaseOf(SampleRole r) {
  switch (r) {
    case SampleRole::kDeclaredWarmup:
    case SampleRole::kDetectedWarmup: return SamplePhase::kWarmup;
    case SampleRole::kSteady: return SamplePhase::kSteady;
    case SampleRole::kOutlier: return SamplePhase::kOutlier;
    case SampleRole::kNonFinite: return SamplePhase::kSkipped;
  }
  return SamplePhase::kSkipped;
}

}  // namespace

Result<int> ResolveMaxPoints(int max_points) {
  if (max_points == 0) return kDefaultMaxPoints;
  if (max_points < kMinMaxPoints || max_points > kMaxMaxPoints)
    return Status::InvalidArgument("max_points: " + std::to_string(max_points) +
                                   " is out of range; allowed: " + std::to_string(kMinMaxPoints) +
                                   ".." + std::to_string(kMaxMaxPoints) + " (0: the default, " +
                                   std::to_string(kDefaultMaxPoints) + ")");
  return max_points;
}

std::string_view PhaseName(SamplePhase p) {
  switch (p) {
    case SamplePhase::kWarmup: return "warmup";
    case SamplePhase::kSteady: return "steady";
    case SamplePhase::kOutlier: return "outlier";
    case SamplePhase::kSkipped: return "skipped";
  }
  return "skipped";
}

std::vector<SamplePoint> DecimateMinMax(const std::vector<SamplePoint>& points, size_t max_points) {
  const size_t n = points.size();
  if (n <= max_points) return points;
  const size_t buckets = std::max<size_t>(1, max_points / 2);
  std::vector<SamplePoint> out;
  out.reserve(2 * buckets);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t from = b * n / buckets, to = (b + 1) * n / buckets;
    size_t lo = from, hi = from;
    for (size_t i = from + 1; i < to; ++i) {
      if (points[i].value < points[lo].value) lo = i;
      if (points[i].value > points[hi].value) hi = i;
    }
    out.push_back(points[std::min(lo, hi)]);
    if (lo != hi) out.push_back(points[std::max(lo, hi)]);
  }
  return out;
}

Result<std::vector<MetricSeries>> BuildRunSeries(
    std::map<std::string, std::vector<StepValue>> series, const LaunchRecord& launch,
    const std::string& only, size_t max_points) {
  std::map<std::string, std::vector<StepValue>> left_out;
  DropSkippedSteps(&series, &left_out);
  if (!only.empty() && !series.count(only)) {
    std::string names;
    for (const auto& [m, values] : series) names += (names.empty() ? "" : ", ") + m;
    return Status::InvalidArgument("metric: \"" + only +
                                   "\" is not a metric of the run; allowed: " +
                                   (names.empty() ? "none (the run has no metric)" : names));
  }
  std::map<int64_t, std::string> tag_of;  // a marked step → the first tag that marked it
  for (const auto& [name, marks] : left_out)
    if (IsSkipRule(name))
      for (const auto& sv : marks) tag_of.emplace(sv.step, name.substr(kSkipPrefix.size()));
  const auto by_step = [](const auto& a, const auto& b) { return a.step < b.step; };

  std::vector<MetricSeries> out;
  for (const auto& [metric, values] : series) {
    if (!only.empty() && metric != only) continue;
    MetricSeries m;
    m.metric = metric;
    m.declared_warmup_steps = launch.warmup_steps;
    std::vector<SampleRole> roles;
    m.analysis = AnalyzeRun(values, launch.warmup_steps, launch.BetterOf(metric), &roles);
    std::vector<SamplePoint> finite;
    std::vector<SamplePoint> outliers;
    for (size_t i = 0; i < values.size(); ++i) {
      const StepValue& sv = values[i];
      const SamplePhase phase = PhaseOf(roles[i]);
      if (roles[i] == SampleRole::kNonFinite) m.skipped.push_back({sv.step, sv.value, false, ""});
      if (phase == SamplePhase::kWarmup)
        m.warmup_end = std::max(m.warmup_end.value_or(sv.step), sv.step);
      if (phase == SamplePhase::kSteady || phase == SamplePhase::kOutlier) {
        m.steady_from = std::min(m.steady_from.value_or(sv.step), sv.step);
        m.steady_to = std::max(m.steady_to.value_or(sv.step), sv.step);
      }
      if (phase == SamplePhase::kOutlier) outliers.push_back({sv.step, sv.value, phase});
      if (std::isfinite(sv.value)) finite.push_back({sv.step, sv.value, phase});
    }
    m.samples = static_cast<int>(values.size());
    if (auto it = left_out.find(metric); it != left_out.end())
      for (const auto& sv : it->second) {
        ++m.samples;
        auto tag = tag_of.find(sv.step);
        m.skipped.push_back({sv.step, sv.value, true, tag == tag_of.end() ? "" : tag->second});
        if (std::isfinite(sv.value)) finite.push_back({sv.step, sv.value, SamplePhase::kSkipped});
      }
    std::stable_sort(finite.begin(), finite.end(), by_step);
    std::stable_sort(m.skipped.begin(), m.skipped.end(), by_step);
    m.points_total = static_cast<int>(finite.size());
    m.points = DecimateMinMax(finite, max_points);
    m.skipped_total = static_cast<int>(m.skipped.size());
    m.skipped = Thin(std::move(m.skipped), max_points);
    m.outliers_total = static_cast<int>(outliers.size());
    m.outliers = Thin(std::move(outliers), max_points);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tunectl

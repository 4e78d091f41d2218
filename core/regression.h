// Regression watch over a series of run summaries after a freeze. Pure functions.
//  - Change points: E-divisive (as in Apache Otava/Hunter): in a window, split where the energy
//    distance between the two sides is largest (then placed at the least-squares split within
//    two points, the sharper location for a level shift); keep it when a two-sample t-test between
//    the sides has p below `max_p` and the level moved by at least `min_magnitude`; recurse; at
//    the end re-test every change point against its neighbouring segments.
//  - New-run check: is the newest run worse than the runs since the last change point, by a
//    one-sided prediction-interval t boundary?
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/changepoint.h"
#include "core/spec.h"

namespace tunectl {

struct ChangePointOptions {
  size_t window = 50;           // points per analysis window (overlapping by half)
  double max_p = 0.001;         // Welch t-test p-value threshold
  double min_magnitude = 0.03;  // |after/before - 1| at least this (the metric's min_effect)
  size_t min_segment = 5;       // points on each side of a change
};

struct ChangePoint {
  size_t index = 0;   // first point of the new level
  double before = 0;  // mean level before / after
  double after = 0;
  double p = 1;
};

std::vector<ChangePoint> EDivisive(const std::vector<double>& x, const ChangePointOptions& o = {});

struct NewRunCheck {
  bool regression = false;
  double level = 0;  // mean of the reference runs
  double bound = 0;  // the value past which a run counts as a regression
  int history = 0;   // reference runs; under 3 nothing is checked (level and bound stay 0)
};
// `history`: run values since the last change point (oldest first); `value`: the new run's. A
// regression is past the one-sided bound and at least `min_effect` worse than the level (with a
// very steady history the bound alone would flag differences nobody cares about). With positive
// values both are on the log scale (level: the geometric mean; the bound never below zero).
NewRunCheck CheckNewRun(const std::vector<double>& history, double value, Better better,
                        double min_effect = 0, double alpha = 0.01);

// The whole watch over one metric's series (oldest first): change points (with whether the new
// level is worse), the newest value checked against the runs since the last change point, and
// one alert text per regression. `labels` names each point in alerts (e.g. "run 17 at …").
struct RegressionReport {
  struct Change {
    ChangePoint point;
    bool regression = false;
  };
  std::vector<Change> changes;
  NewRunCheck latest;
  std::vector<std::string> alerts;
};
// "samples_per_s went from 2400 to 1850 (-22.9%) starting with run 42": one change point in
// words, shared by alerts and recorded regressions.
std::string DescribeChange(const std::string& metric, const ChangePoint& c,
                           const std::string& first_label);

RegressionReport AnalyzeRegression(const std::vector<double>& values,
                                   const std::vector<std::string>& labels,
                                   const MetricSpec& metric);

// When a change point found by AnalyzeRegression becomes a recorded (permanent) regression.
// Change points on a growing series move and vanish as runs arrive — E-divisive's best split on
// the few newest runs can be carried by two outliers, and the t-test's p is optimistic at a
// chosen split — so a regression is confirmed only when
//  - it has at least `min_after` runs after it,
//  - the medians of its two segments differ by at least the metric's min_effect too (not only
//    the means: a couple of outliers cannot carry it),
//  - the analyses of the series without its last 1 .. stable_for-1 runs found it at the same run,
// and it is not within `tolerance` runs of a recorded one (a recorded change point that moved is
// the same regression).
struct ConfirmOptions {
  size_t min_after = 6;
  size_t stable_for = 4;
  size_t tolerance = 5;
  // The incremental form below: the newest `tail` points are analysed (four windows of 50), and
  // a change among their oldest `margin` is context only, never newly confirmed.
  size_t tail = 200;
  size_t margin = 25;
};
std::vector<ChangePoint> NewConfirmedRegressions(const std::vector<double>& values,
                                                 const MetricSpec& metric,
                                                 const std::vector<size_t>& recorded_first_bad,
                                                 const ConfirmOptions& o = {});

// The same rule, incrementally (as Apache Otava analyses only the newest part of a series): over
// the newest `o.tail` points of the series only, so that a finished run costs the same at 24,000
// runs as at 200. `newest` holds the newest points (oldest first; more than `o.tail` are cut to
// the newest `o.tail`); `whole` says no point precedes them. Indexes (in and out) are positions
// in `newest`.
//  - While the series has at most `o.tail` points (`whole`), this is NewConfirmedRegressions on
//    the same values: the same regressions at the same first bad runs.
//  - On a longer series a change among the oldest `o.margin` points of the tail is not newly
//    confirmed: that far back the tail's first window cuts the level before it short (an edge,
//    not a change). A change is therefore confirmed within tail - margin = 175 runs after it
//    began or not at all, where the full analysis could still confirm it later (its p keeps
//    falling as runs after it accumulate); the analysis windows start at the tail's first point,
//    not at the series' first, and a change's level before it reaches back at most to the tail's
//    start. bench/watch.cc replays long series with both rules and counts where they differ
//    (docs/benchmarks.md).
std::vector<ChangePoint> NewConfirmedRegressionsInTail(
    const std::vector<double>& newest, bool whole, const MetricSpec& metric,
    const std::vector<size_t>& recorded_first_bad, const ConfirmOptions& o = {});

// A stability run (one long run) judged within itself: the primary metric must reach a steady
// state, and no metric may degrade part-way through (memory creep, thermal throttling, a slowing
// data source). Other metrics may drift without settling (a loss falls for the whole run).
struct StabilityFinding {
  std::string metric;
  std::string message;
};
std::vector<StabilityFinding> CheckStabilityRun(const WorkloadSpec& spec,
                                                const std::vector<std::string>& metric_names,
                                                const std::vector<SteadyState>& analyses);

}  // namespace tunectl

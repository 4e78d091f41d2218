// A workload's quantified goal ("samples_per_s to 1500, keeping mfu >= 0.45"): its validation,
// where the current config stands against it, how far each frozen change moved it, and which
// guardrails a freeze would break. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.h"
#include "core/spec.h"
#include "core/stats.h"
#include "core/status.h"

namespace tunectl {

struct Goal {
  std::string metric;
  double target = 0;
  Better better = Better::kHigher;      // the metric's: whether the target is above or below
  std::vector<Expectation> guardrails;  // each a level: metric op X ("mfu >= 0.45")
};

// InvalidArgument naming the flag, the value and what is allowed: the metric must be one of the
// workload's (nearest suggested), the target finite and > 0, each guardrail METRIC >= X, > X,
// <= X or < X over a metric of the workload.
Result<Goal> ParseGoal(const WorkloadSpec& spec, const std::string& metric, double target,
                       const std::vector<std::string>& guardrails);

// One frozen change and what its experiment measured on the goal's metric.
struct GoalStep {
  int version = 0;     // the config version the freeze made
  std::string change;  // "num_workers=1→2"
  int64_t experiment = 0;
  std::optional<double> ratio, ci_low, ci_high;  // variant / control; unset when not measured
};

struct GoalProgress {
  bool measured = false;  // the current config has a completed baseline with values
  int config_version = 0;
  int64_t baseline = 0;
  double level = 0, ci_low = 0, ci_high = 0;  // mean of the per-run values, 95 % t CI
  int n = 0;
  double attained = 0;          // level / target (higher better) or target / level (lower better)
  bool reached = false;         // the level is at or past the target
  bool reached_surely = false;  // the whole CI is
  std::vector<GoalStep> steps;  // oldest first
  double moved = 1;             // product of the measured steps' ratios
  std::string summary;  // "samples_per_s 1240 [1215, 1262] against 1500: 82.7 % there, +21.0 %
                        // to go"
};

// `current`: the goal metric's summary of the per-run values in the current config's latest
// completed baseline (n = 0 when there is none yet).
GoalProgress GoalProgressOf(const Goal& goal, int config_version, int64_t baseline,
                            const Descriptive& current, std::vector<GoalStep> steps);

// `experiment show`'s line: where the control and the variant stand against the goal ("" when
// the verdict did not measure the goal's metric).
std::string GoalNote(const Goal& goal, const Verdict& v);

// Which of the goal's guardrails an experiment's variant breaks: per guardrail over a metric the
// verdict measured, the variant's level (control median × ratio) on the wrong side of the level.
// Unmeasured guardrail metrics are listed in `unmeasured`, not as breaks.
struct GuardrailCheck {
  std::vector<std::string> broken;  // "mfu >= 0.45: the variant's level 0.41"
  std::vector<std::string> unmeasured;
};
GuardrailCheck CheckGoalGuardrails(const Goal& goal, const Verdict& v);

}  // namespace tunectl

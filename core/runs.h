// The rules about runs: how a finished attempt ends (its outcome), when a lost one is retried,
// and which runs count — the one rule behind baseline summaries, the experiment's arms, a
// freeze's measured level, the regression series and expected durations. The store loads rows
// into these structs, calls the rule, and writes what it returns. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.h"
#include "core/spec.h"
#include "core/states.h"
#include "core/stats.h"

namespace tunectl {

// What the agent reported for one attempt, and what the server knows about it.
struct RunReport {
  int exit_code = 0;
  int signal = 0;
  std::string reason;             // "", timeout, cancelled, launch_failed: …
  bool duration_reached = false;  // a stability run stopped by the agent at its duration
  int64_t batches_sent = 0;       // metric batches the agent says it sent
  int64_t batches_stored = 0;     // metric batches the server stored for the attempt
  bool window_cancel = false;     // the server stopped it at the end of its window (requeue)
};

struct RunOutcome {
  bool requeue = false;  // stopped at the end of its window: queue again, not finished
  RunState state = RunState::kSucceeded;
  std::string reason;  // why it failed / what is off; "" for a clean success
};
RunOutcome DecideRunOutcome(const RunReport& r);

// A run whose agent was lost (or that was stopped at a window end): a new attempt while
// attempts are left, else lost.
struct RetryDecision {
  bool requeue = false;
  std::string reason;
};
RetryDecision DecideRetry(int attempt, int max_attempts, const std::string& why);

// One run as the rules see it.
struct RunMetricFacts {
  std::string metric;
  std::optional<double> median;  // of the steady-state window; nullopt without samples
  bool usable = true;            // the within-run analysis found a steady state, no slowdown
  int nonfinite = 0;             // NaN/Inf samples
  std::string warnings;
};
struct RunFacts {
  int64_t id = 0;
  RunState state = RunState::kQueued;
  std::string arm;  // control | variant | "" (a baseline's run)
  int idx = 0;      // 1-based position in its baseline or experiment
  std::string reason;
  std::optional<double> duration_s;  // finished - started, when both are known
  std::vector<RunMetricFacts> metrics;
  const RunMetricFacts* Find(const std::string& metric) const;
};

// Whether a run counts (is compared, summarised, part of a series): it succeeded and its primary
// metric has a value from a usable steady state. `why_not` says why a finished run does not.
struct RunUse {
  bool counts = false;
  bool excluded = false;  // succeeded but unusable (no steady state, slowdown, no value)
  std::string why_not;
};
RunUse UseOf(const WorkloadSpec& spec, const RunFacts& run);

// Per metric (in the spec's order, metrics without any value left out): the descriptive
// statistics of the counting runs' medians.
struct MetricSummary {
  std::string metric;
  Descriptive stats;
};
std::vector<MetricSummary> SummarizeRuns(const WorkloadSpec& spec,
                                         const std::vector<RunFacts>& runs);

// The median duration (whole seconds, rounded up) of the counting runs; 0 when unknown.
int ExpectedRunSeconds(const WorkloadSpec& spec, const std::vector<RunFacts>& runs);

// A baseline's state once none of its runs is active (nullopt while some are): completed when
// one succeeded, else failed.
std::optional<BaselineState> BaselineOutcome(const std::vector<RunFacts>& runs);

// An experiment's control and variant arms, built from its runs by the counting rule: counted
// runs give their values with their ABBA pair ((idx - 1) / 2); excluded ones are listed with the
// reason; failed and lost ones count against their arm; NaN/Inf in a variant's guardrail metric
// counts as a failure of that run.
struct Arms {
  ArmData control, variant;
  std::vector<int64_t> compared_control, compared_variant;  // run ids, in run order
};
Arms BuildArms(const WorkloadSpec& spec, const std::vector<RunFacts>& runs);

}  // namespace tunectl

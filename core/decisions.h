// The loop's policies as pure functions: how big an experiment is, how a batch's --vary expands,
// whether the controls drifted from the baseline, a batch's correction as the final decision,
// when an experiment may be frozen, and how a stability run is judged. The store loads rows,
// calls these and writes what they return. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/changepoint.h"
#include "core/experiment.h"
#include "core/spec.h"
#include "core/states.h"
#include "core/status.h"

namespace tunectl {

// --repeats is the cap per arm (0: max(10, 2 × run.repeats); allowed kFirstLookPairs..500); the
// first look comes after kFirstLookPairs interleaved pairs.
struct ExperimentSize {
  int max_pairs = 0;
  int first_pairs = 0;
};
Result<ExperimentSize> SizeExperiment(int requested_repeats, const WorkloadSpec& spec);

// "NAME=V1,V2" → one single-variable "NAME=V" per value, duplicates dropped, order kept.
Result<std::vector<std::string>> ExpandBatchVary(const std::vector<std::string>& vary);

// The drift alarm: the interleaved controls against the baseline's recorded level of the primary
// metric; "" when they agree within min_effect (or nothing to compare).
std::string DriftNote(const Verdict& v, const WorkloadSpec& spec,
                      std::optional<double> baseline_level, int64_t baseline_id);

// A batch's members once none is running: each one's final decision after the correction across
// the batch's primary comparisons (Holm or BH). A member that was cancelled counts with p = 1.
struct BatchMember {
  ExperimentState state = ExperimentState::kMeasured;
  std::string decision;  // the member's own (unadjusted) decision; "" when it has none
  double p_value = 1;    // its primary metric's p
};
struct BatchDecision {
  std::string decision;    // improved | regressed | unchanged | inconclusive
  std::string unadjusted;  // the member's own decision
  double adjusted_p = 1;
  std::string note;  // "inconclusive after Holm (adjusted p 0.12)" when it changed
};
// nullopt while a member is still running.
std::optional<std::vector<BatchDecision>> DecideBatch(const std::vector<BatchMember>& members,
                                                      const std::string& method,
                                                      double alpha = 0.05);
// The verdict as the tuning log and `freeze` see it after the batch's correction.
Verdict ApplyBatchDecision(Verdict v, const BatchDecision& d, const std::string& method);

// The tuning log's memory: an earlier experiment of the same change (same parameter values) on
// the same config.
struct EarlierTry {
  int64_t experiment = 0;
  ExperimentState state = ExperimentState::kRunning;
  std::string decision;  // final; "" while running
  std::string effect;    // "+25.3% samples_per_s [+21.0%, +29.8%]"; "" when none
  std::string decided_at;
  std::string change;      // "num_workers 1→2" (DescribeTry)
  int config_version = 0;  // the config it compared against (DescribeTry)
};
// "experiment 4 on config v1: num_workers 1→2 decided improved (+25.3% samples_per_s [...])".
std::string DescribeTry(const EarlierTry& t);
// Whether the change may be tested again: refused (FailedPrecondition naming the earlier
// experiment, its verdict and the way to insist) while one is running or once one was decided
// improved, regressed or unchanged; inconclusive and cancelled ones do not count. With `again` a
// reason is required (InvalidArgument without one) and the change goes ahead. `change` is the
// change's description ("num_workers 1→2"), `config_version` the config it would run against.
Status CheckRepeatedChange(const std::vector<EarlierTry>& earlier, const std::string& change,
                           int config_version, bool again, const std::string& reason);

// Whether an experiment may be frozen into a new config version.
struct FreezeFacts {
  int64_t experiment = 0;
  ExperimentState state = ExperimentState::kRunning;
  std::string decision;  // final (after a batch's correction)
  int frozen_version = 0;
  bool force = false;
  std::string reason;  // required with force
  std::string workload;
  int control_version = 0, current_version = 0;
  int64_t batch = 0;  // a batch member still measured waits for its batch
  // The workload goal's guardrails the variant breaks (core CheckGoalGuardrails): only --force
  // freezes it.
  std::vector<std::string> goal_breaks;
};
Status CheckFreeze(const FreezeFacts& f);

// A stability run is judged within itself: one finding per run (under the primary metric when it
// is among them) naming every metric that degraded, or a failed run. nullopt: stable, ended early
// (its job exited before its duration: no evidence either way), or not a result yet.
struct StabilityJudgement {
  std::string metric;
  std::string message;
};
std::optional<StabilityJudgement> JudgeStabilityRun(const WorkloadSpec& spec, int64_t run_id,
                                                    int config_version, RunState state,
                                                    const std::string& reason,
                                                    const std::vector<std::string>& metric_names,
                                                    const std::vector<SteadyState>& analyses);
// What `regress show` says of a stability run: pending | stable | ended early | regression |
// failed | cancelled… (`reason`: the run's, see EndedEarly).
std::string StabilityVerdictName(RunState state, bool recorded_regression,
                                 const std::string& reason = "");

}  // namespace tunectl

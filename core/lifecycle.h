// The week-one verbs (issue 16): when a workload may be deleted and when it must be archived
// instead, what an archived workload refuses, when an agent may be removed, the experiment-state
// filter of `experiment list`, which config version `config export --version` means, and a
// workload's spec as `workload show` summarises it. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/spec.h"
#include "core/states.h"
#include "core/status.h"

namespace tunectl {

// What a workload has recorded; any of it is history that a delete would lose.
struct WorkloadHistory {
  int64_t baselines = 0;  // every purpose: baselines, periodic checks, stability runs
  int64_t experiments = 0;
  int64_t runs = 0;
  int64_t log_entries = 0;
  bool any() const { return baselines + experiments + runs + log_entries > 0; }
  // "2 baselines, 14 runs, 1 experiment, 1 log entry" (only what it has; "nothing" for none).
  std::string Describe() const;
};

// Ok for a workload with no history; FailedPrecondition naming what it has and the command that
// archives it instead.
Status CheckWorkloadDeletable(std::string_view workload, const WorkloadHistory& h);

// Ok unless the workload is archived; then FailedPrecondition saying so for `what` ("a new
// baseline") and the command that unarchives it.
Status CheckNotArchived(std::string_view workload, bool archived, std::string_view what);

// Ok for an agent that is not connected; FailedPrecondition for a connected one.
Status CheckAgentRemovable(std::string_view agent, bool connected);

// `experiment list --state S`: "" = any state; otherwise one of the experiment states, or
// InvalidArgument naming the value and listing them.
Result<std::optional<ExperimentState>> ParseExperimentStateFilter(std::string_view s);

// `config export --version N` against a workload whose versions are 1..`newest`: 0 = the current
// one (nullopt); a negative N is InvalidArgument, one past `newest` NotFound naming the versions
// there are.
Result<std::optional<int>> CheckConfigVersion(std::string_view workload, int version, int newest);

// `workload show`: a parameter's allowed values ("0..64", ">= 0", "fp32|bf16", "true|false"; ""
// = any), where a metric's values come from ("pattern …", "json loss", "parser megatron, field
// tflops_per_gpu", …), and the run policy in one line ("repeats 5, warm-up 20 steps, timeout
// 10m, selector pool=cpu").
std::string ParamRangeText(const ParamSpec& p);
std::string MetricSourceText(const MetricSpec& m);
std::string RunPolicyText(const RunPolicy& r);

}  // namespace tunectl

// The bottleneck advisor (step 2 of the loop): from a finished baseline's own figures, ranked
// hypotheses about what limits the job — each with the evidence it read, the declared parameters
// it suggests varying, the expected direction and a rough size, and the command that records it —
// plus the checks it could not make and the metric each would need. Pure: the store loads the
// baseline's medians, this decides. Thresholds and their sources are in docs/advisor.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/spec.h"

namespace tunectl {

struct AdvisorInput {
  WorkloadSpec spec;   // the workload the baseline measured (its params, metrics, units)
  ParamValues params;  // the baseline's configuration (every declared param, canonical text)
  // Per metric, the baseline's median of per-run values: the declared metrics' summaries plus the
  // runs' profile_* samples (core/profile_trace.h via the agent) where the workload has `profile:`.
  std::map<std::string, double> medians;
  std::string workload_flag;  // "--workload demo" when needed in the printed commands, else ""
};

// One suggested change: a declared parameter, the value to try, why that value.
struct SuggestedChange {
  std::string param;
  std::string value;  // canonical for the param's type, inside its min/max/values
  std::string why;    // "twice the workers (1 -> 2)"
};

struct Advice {
  std::string rule;  // stable id: data_pipeline, communication, kernel_efficiency,
                     // memory_pressure, cpu_overhead
  std::string
      bottleneck;  // one line: "the data pipeline: the step waits 62 % of its time for data"
  // Ranking key, higher first: the percent of the step the bottleneck plausibly holds (the data
  // wait share; the exposed communication share; kernel share × (1 − MFU/40); the GPU idle share
  // not explained by data waits). memory_pressure holds no step time: 0, ranked last.
  double score = 0;
  std::vector<std::string> evidence;  // each figure read, with metric name, value, unit, threshold
  std::vector<SuggestedChange> changes;  // declared params only, most promising first; may be empty
  std::string missing_params;  // when `changes` is empty: what params the workload could declare
  // Expected move of the primary metric's value, as ParseExpectation reads it: +1 up (a rate that
  // is better higher), -1 down (a time that is better lower), 0 unchanged (memory_pressure).
  int direction = 0;
  std::string expected;  // "samples_per_s +25% at most if loading fully overlaps compute"
  std::string
      expect_arg;       // a valid --expect text for the primary metric, e.g. "samples_per_s +10%"
  std::string command;  // `tunectl hypothesis create …` for the first change; "" if none
};

// A check the advisor could not make for want of a figure.
struct NotChecked {
  std::string rule;
  std::string needs;  // "a data-loader wait metric (data_wait_ms, or profile: torch)"
};

struct AdvisorReport {
  std::vector<Advice> advice;  // ranked, best first; only rules whose threshold was crossed
  std::vector<NotChecked> not_checked;
  std::vector<std::string> checked_fine;  // rules evaluated and below threshold, with the figure
};

// Deterministic: the same input gives the same report.
AdvisorReport Advise(const AdvisorInput& in);

// The `tunectl hypothesis create` command recording `a`'s first change: `workload_flag` (omitted
// when ""), --param NAME=VALUE, --expect, --statement (the bottleneck), --evidence (the first
// evidence line), each single-quoted for a POSIX shell (' written '\''). "" when `a` has no change
// or no expect_arg.
std::string HypothesisCommand(const Advice& a, const std::string& workload_flag);

// Divisibility of a matmul dimension for Tensor Cores: the largest of 64 / 8 dividing `n` (0 when
// neither). 5120 -> 64; 5128 -> 8; 50257 -> 0.
int TensorCoreAlignment(long long n);

}  // namespace tunectl

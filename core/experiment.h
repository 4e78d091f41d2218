// Single-variable experiments: parsing `--vary` against a baseline (the single-variable rule,
// coupled groups), hypothesis expectations, and the verdict of variant runs against control runs.
// Pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/spec.h"
#include "core/status.h"

namespace tunectl {

// The one variable an experiment changes: one parameter, or the members of one coupled group.
struct Change {
  ParamValues from;  // baseline values of the changed parameters
  ParamValues to;    // new values (canonical)
  bool coupled = false;
  std::string Describe() const;  // "num_workers 1→8" or "a 1→2, b 4→2 (coupled)"
  std::string Params() const;    // "num_workers" or "a+b"
};

// Parses `--vary k=v` arguments against the workload and the baseline's values. Refuses a second
// variable (unless all belong to one declared coupled group), unknown parameters (suggesting the
// nearest), wrong types or ranges, and values equal to the baseline's.
Result<Change> ParseVary(const WorkloadSpec& spec, const ParamValues& base,
                         const std::vector<std::string>& varies);

// What a hypothesis expects: "samples_per_s +10%", "step_time_ms -5%", "loss unchanged".
struct Expectation {
  std::string metric;
  int direction = 0;           // +1 increase, -1 decrease, 0 no change
  std::optional<double> size;  // relative, e.g. 0.10
  std::string text;
};
Result<Expectation> ParseExpectation(const WorkloadSpec& spec, const std::string& text);

// Run-level values of one arm: per metric, one summary value per successful run.
struct ArmData {
  std::map<std::string, std::vector<double>> values;
  // Optional: the ABBA pair of each value (same order as `values`). When both arms have them
  // the comparison is paired: within-pair differences cancel drift and shared node effects.
  std::map<std::string, std::vector<int>> pairs;
  int runs = 0;                       // runs that finished
  int failed_runs = 0;                // failed / lost runs (crash, OOM, non-zero exit)
  std::vector<std::string> failures;  // "run 12: exit 1 (CUDA out of memory)"
  std::vector<std::string> excluded;  // runs not compared (no steady state, slowdown)
};

struct MetricVerdict {
  std::string metric, unit, better, role;
  int n_control = 0, n_variant = 0;
  double control_median = 0, variant_median = 0;
  double ratio = 1;                // variant / control (geometric means of run summaries)
  double ci_low = 1, ci_high = 1;  // 95 % CI of the ratio (Welch on logs)
  double ci90_low = 1, ci90_high = 1;
  double p_value = 1;
  double mw_p = 1;                     // Mann–Whitney U p-value (cross-check, unadjusted)
  double boot_low = 0, boot_high = 0;  // BCa bootstrap 95 % CI of the ratio of medians
                                       // (once both sides have >= 10 runs; else 0)
  std::string decision;                // improved | regressed | unchanged | inconclusive
  std::string guardrail;               // guardrails only: pass | fail | inconclusive
  std::string note;
};

struct Verdict {
  std::vector<MetricVerdict> metrics;  // in the workload's metric order
  std::string primary;                 // the primary metric's name ("" if none)
  std::string decision;                // overall: improved | regressed | unchanged | inconclusive
  std::vector<std::string> reasons;    // why the overall decision differs from the primary's
  std::string hypothesis;              // confirmed | refuted | inconclusive | "" (no hypothesis)
  std::string hypothesis_note;
  int pairs = 0;        // control/variant pairs compared (the look)
  int max_pairs = 0;    // the run cap per arm
  double critical = 0;  // critical value used for the CIs (0 = t quantile)
  std::string drift;    // controls vs the recorded baseline, when they differ
  // A batch member's decision is made across its batch (core/decisions.h): the method, the
  // member's own decision before it and its adjusted p. Empty / nullopt outside a batch.
  std::string correction;  // holm | bh
  std::string unadjusted_decision;
  std::optional<double> adjusted_p;
  // The primary metric's p-value (1 when there is none).
  double PrimaryP() const;
};

struct VerdictOptions {
  double alpha = 0.05;  // two-sided level of the decision CI
  double critical = 0;  // critical value of the decision CI; 0 = Student t(1 - alpha/2, df)
  double margin = 0.5;  // improved/regressed need the CI's near end past margin·min_effect
  int min_runs = 2;     // per side, below which a metric is inconclusive
  bool paired = true;   // use pair ids when both arms have them
  bool cross_checks =
      true;  // Mann–Whitney and bootstrap (reported, never decide); off in simulations
};

// The run values of one arm a verdict compares for metric `m`: from 6 runs on, runs far from the
// rest of their arm (> max(4 scaled MADs, 2·min_effect) in log terms: a slow node) are left out.
// A freeze summarises the variant's level with exactly these.
std::vector<double> ComparedRunValues(const MetricSpec& m, const std::vector<double>& values);

Verdict ComputeVerdict(const WorkloadSpec& spec, const ArmData& control, const ArmData& variant,
                       const std::optional<Expectation>& expectation,
                       const VerdictOptions& opts = VerdictOptions());

// One step of the sequential design (see core/sequential.h): after each pair, decide or go on.
struct SequentialStep {
  bool stop = false;
  Verdict verdict;  // at this look (critical value = the boundary b_k)
};
struct SequentialOptions;
// Pairs whose control and variant runs both have a compared value of the primary metric.
int UsablePairs(const WorkloadSpec& spec, const ArmData& control, const ArmData& variant);
SequentialStep EvaluateSequential(const WorkloadSpec& spec, const ArmData& control,
                                  const ArmData& variant,
                                  const std::optional<Expectation>& expectation,
                                  const SequentialOptions& design,
                                  const VerdictOptions& opts = VerdictOptions());

// Multiple-comparison correction across a batch's primary comparisons: adjusted p-values (Holm,
// or Benjamini–Hochberg for exploratory sweeps) and the decisions that survive them. Undecided
// experiments (empty decision) count with p = 1. Guardrails are not corrected.
struct BatchAdjustment {
  std::vector<double> adjusted_p;
  std::vector<std::string> decisions;
};
BatchAdjustment AdjustBatch(const std::vector<std::string>& decisions,
                            const std::vector<double>& p_values, const std::string& method,
                            double alpha = 0.05);

// "+12.3%" style for a ratio.
std::string FormatEffect(double ratio);

// Stable JSON forms (stored in the database; the tuning log keeps them verbatim).
std::string ChangeToJson(const Change& c);
Result<Change> ChangeFromJson(const std::string& text);
std::string VerdictToJson(const Verdict& v);
Result<Verdict> VerdictFromJson(const std::string& text);

}  // namespace tunectl

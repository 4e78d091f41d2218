// Single-variable experiments: parsing `--vary` against a baseline (the single-variable rule,
// coupled groups), hypothesis expectations, and the verdict of variant runs against control runs.
// Pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/spec.h"
#include "core/statistics.h"
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

// What a hypothesis expects: a relative change ("samples_per_s +10%", "step_time_ms -5%",
// "samples_per_s up"), no change ("loss unchanged"), or a level the variant reaches
// ("samples_per_s >= 300", "step_time_ms < 12.5"). A level is judged on the variant's level as the
// control's median times the ratio and its 95 % CI: confirmed when the whole CI is on the expected
// side, refuted when it is wholly on the other.
struct Expectation {
  std::string metric;
  int direction = 0;           // +1 increase, -1 decrease, 0 no change
  std::optional<double> size;  // relative, e.g. 0.10
  std::string op;              // ">=", ">", "<=", "<" for a level; "" otherwise
  double level = 0;            // with op: the level, in the metric's unit
  std::string text;
};
Result<Expectation> ParseExpectation(const WorkloadSpec& spec, const std::string& text);

// Run-level values of one arm: per metric, one summary value per successful run.
struct ArmData {
  // Per metric, each run's delivered value (RunMetricFacts::Value).
  std::map<std::string, std::vector<double>> values;
  // Optional, same order as `values`: each run's unimpeded pace (RunMetricFacts::Pace). Without
  // it the pace is the value (no lost time).
  std::map<std::string, std::vector<double>> pace;
  // Optional: the ABBA pair of each value (same order as `values`). When both arms have them
  // the comparison is paired: within-pair differences cancel drift and shared node effects.
  std::map<std::string, std::vector<int>> pairs;
  // Optional: the run id of each value (same order as `values`), reported with the verdict.
  std::map<std::string, std::vector<int64_t>> ids;
  // Optional, same order as `values`: how each run's value was computed ("harmonic mean (work
  // over time) of 140 samples, steps 11-150").
  std::map<std::string, std::vector<std::string>> how;
  // Optional, per metric: the coarsest printed quantum among the runs (0 = continuous) and the
  // most distinct values any run's steady window held (0 = unknown).
  std::map<std::string, double> resolution;
  std::map<std::string, int> levels;
  int runs = 0;                        // runs that finished
  int failed_runs = 0;                 // failed / lost runs (crash, OOM, non-zero exit)
  std::vector<std::string> failures;   // "run 12: exit 1 (CUDA out of memory)"
  std::vector<std::string> causes;     // the failures' cause keys ("OOM"), same order
  std::vector<std::string> excluded;   // succeeded runs without a value (not compared)
  std::vector<std::string> notes;      // counting runs with something off ("run 7: slowdown …")
  std::vector<std::string> nonfinite;  // "run 12: 3 NaN/Inf loss sample(s)", per run and metric
  // Finished runs that failed, had no value or counted with a note (reported only).
  int Unusable() const { return failed_runs + static_cast<int>(excluded.size() + notes.size()); }
};

// One run as a metric's comparison used it.
struct ComparedRun {
  int64_t run = 0;             // 0 when the arm carried no ids
  int pair = -1;               // ABBA pair (-1 = unpaired)
  double value = 0;            // the run's delivered value (RunMetricFacts::Value)
  std::optional<double> pace;  // its unimpeded pace, when known
  std::string how;             // how `value` was computed
  bool compared = true;
  std::string why;  // why not compared ("its pair's control run has no value")
};

// One part of a split paired comparison, as ratios (variant / control) with its CI at the
// decision's critical value.
struct PartVerdict {
  double ratio = 1, ci_low = 1, ci_high = 1;
};

struct MetricVerdict {
  std::string metric, unit, better, role;
  int n_control = 0, n_variant = 0;
  double control_median = 0, variant_median = 0;  // medians of the compared runs' values
  // Whether ratio and its CIs are estimates (2+ pairs, or 2+ runs per side unpaired, all values
  // positive). Without one they are placeholders: shown as "—", null in JSON.
  bool estimated = false;
  bool tested = false;                 // p_value is from a test that ran (else null in JSON)
  double ratio = 1;                    // variant / control of the delivered values
  double ci_low = 1, ci_high = 1;      // CI of the ratio at the decision's critical value
  double ci90_low = 1, ci90_high = 1;  // CI at the equivalence test's critical value
  double p_value = 1;
  // The split paired comparison's parts (when method is the split one): the pace (Huber
  // M-estimate, bounded influence) and the lost time beyond it (mean); ratio = pace·lost.
  bool split = false;
  PartVerdict pace, lost;
  int downweighted = 0;                // pairs whose pace ratio was beyond the Huber corner
  double mw_p = 1;                     // Mann–Whitney U p-value (cross-check, unadjusted)
  double boot_low = 0, boot_high = 0;  // BCa bootstrap 95 % CI of the ratio of medians
                                       // (once both sides have >= 10 runs; else 0)
  std::string decision;                // improved | regressed | unchanged | inconclusive
  std::string guardrail;               // guardrails only: pass | fail | inconclusive
  std::string note;
  // How: "paired t on log differences", "Welch t on logs" or "Welch t on raw values"; the
  // critical value and degrees of freedom used, and the runs on each side (values included) so
  // anyone can recompute it. control/variant medians and n are of the compared runs only.
  std::string method;
  double critical = 0, df = 0;
  double resolution = 0;  // the metric's printed quantum (0 = continuous)
  std::vector<ComparedRun> control_runs, variant_runs;
  // Primary metric of a sequential design: the estimate adjusted for early stopping
  // (median-unbiased, sample-mean ordering) and its 95 % CI, as ratios; adjusted = false otherwise.
  bool adjusted = false;
  double adj_ratio = 1, adj_low = 1, adj_high = 1;
};

struct Verdict {
  std::vector<MetricVerdict> metrics;  // in the workload's metric order
  std::string primary;                 // the primary metric's name ("" if none)
  std::string decision;                // overall: improved | regressed | unchanged | inconclusive
  std::vector<std::string> reasons;    // why the overall decision differs from the primary's
  std::string hypothesis;              // confirmed | refuted | inconclusive | "" (no hypothesis)
  std::string hypothesis_note;
  int pairs = 0;           // usable control/variant pairs (the look's index)
  int finished_pairs = 0;  // pairs whose both runs finished (usable or not)
  int min_pairs = 0;       // the first look: no decision before this many usable pairs
  int max_pairs = 0;       // the run cap per arm
  double critical = 0;     // critical value used for the primary's CI (0 = t quantile)
  std::string drift;       // controls vs the recorded baseline, when they differ
  // Finished runs per arm that failed, had no value, or counted with a note (no steady state,
  // slowdown): reported, never a rule of their own.
  int control_unusable = 0, control_finished = 0, variant_unusable = 0, variant_finished = 0;
  std::string stopped;              // why it stopped early outside the boundary ("failed: OOM")
  std::vector<std::string> advice;  // what to change when many runs were left out
  // A batch member's decision is made across its batch (core/decisions.h): the method, the
  // member's own decision before it and its adjusted p. Empty / nullopt outside a batch.
  std::string correction;  // holm | bh
  std::string unadjusted_decision;
  std::optional<double> adjusted_p;
  // The primary metric's p-value (1 when there is none).
  double PrimaryP() const;
};

struct SequentialOptions;
struct VerdictOptions {
  double alpha = 0.05;  // two-sided level of the decision CI
  double critical = 0;  // critical value of the decision CI; 0 = Student t(1 - alpha/2, df)
  // A sequential design (not owned; outlives the call): each metric's critical value is the
  // boundary for the number of pairs (or runs per arm) it actually compares, and no metric is
  // decided on fewer than design->min_pairs. Overrides `critical`.
  const SequentialOptions* design = nullptr;
  double margin = 0.5;  // improved/regressed need the CI's near end past margin·min_effect
  int min_runs = 2;     // per side, below which a metric is inconclusive
  bool paired = true;   // use pair ids when both arms have them
  bool cross_checks =
      true;  // Mann–Whitney and bootstrap (reported, never decide); off in simulations
  // EvaluateSequential: adjust the primary's estimate for early stopping once it stops (about
  // 15 ms a decision); off in simulations that do not report it.
  bool adjust_estimate = true;
};

// One metric's decision from its estimate d on the log scale (0 = no change), its standard error,
// the critical values b (superiority, two-sided alpha) and b_eq (equivalence, one-sided alpha)
// and the minimum effect on that scale: improved/regressed need the estimate past the minimum
// effect and the CI's near end past margin·min_effect; unchanged needs the equivalence CI within
// ±min_effect.
std::string DecideEffect(double d, double se, double b, double b_eq, double margin_unit,
                         bool higher, double margin);

// The same for the split paired comparison: improved/regressed on the delivered effect (what the
// user gets: a variant whose faster pace outweighs more stalls is improved); unchanged only when
// the delivered effect, the pace and the lost time are each equivalent within the minimum effect.
// `why` (when given) says which part kept "unchanged" from being called.
std::string DecideSplit(const SplitEstimate& e, double b, double b_eq, double margin_unit,
                        bool higher, double margin, std::string* why = nullptr);

Verdict ComputeVerdict(const WorkloadSpec& spec, const ArmData& control, const ArmData& variant,
                       const std::optional<Expectation>& expectation,
                       const VerdictOptions& opts = VerdictOptions());

// One step of the sequential design (see core/sequential.h): after each pair, decide or go on.
// Looks are indexed by usable pairs; it stops when the primary is decided on at least
// min_pairs usable pairs, at the run cap, or at once when two variant runs failed with the same
// cause (regressed, "failed: OOM"). The primary's estimate is then adjusted for early stopping.
struct SequentialStep {
  bool stop = false;
  Verdict verdict;  // at this look (critical value = the boundary b_k)
};
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
// The primary metric's effect in one phrase: "+25.3% samples_per_s [+21.0%, +29.8%]" ("" when
// the verdict has no primary metric with values).
std::string PrimaryEffect(const Verdict& v);
// A level in a metric's unit, 4 significant digits: 312.5, 0.0123, 1.5e+04.
std::string FormatLevel(double v);

// Stable JSON forms (stored in the database; the tuning log keeps them verbatim).
std::string ChangeToJson(const Change& c);
Result<Change> ChangeFromJson(const std::string& text);
std::string VerdictToJson(const Verdict& v);
Result<Verdict> VerdictFromJson(const std::string& text);

}  // namespace tunectl

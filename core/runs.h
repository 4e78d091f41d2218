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
  int64_t duration_ms = 0;        // a stability run's requested duration (0: not one)
  int64_t batches_sent = 0;       // metric batches the agent says it sent
  int64_t batches_stored = 0;     // metric batches the server stored for the attempt
  bool window_cancel = false;     // the server stopped it at the end of its window (requeue)
  std::string stderr_tail;        // the job's last stderr lines (the crash's cause is there)
  bool infra_failure = false;     // the node could not run the job (run dir, disk): not its fault
};

struct RunOutcome {
  bool requeue = false;  // stopped at the end of its window: queue again, not finished
  bool retry = false;    // the node failed it: a new attempt elsewhere (counts against attempts)
  RunState state = RunState::kSucceeded;
  std::string reason;  // why it failed / what is off; "" for a clean success
  std::string cause;   // a failed run's cause key (see FailureCause); "" otherwise
};
// A stability run whose job exited by itself, cleanly, before its duration succeeded but "ended
// early": its reason starts with kEndedEarly and says how to make the job run until stopped. It
// is never judged a regression (EndedEarly), and `regress` shows it as "ended early".
RunOutcome DecideRunOutcome(const RunReport& r);
inline constexpr const char* kEndedEarly = "ended early";
bool EndedEarly(const std::string& reason);

// Why a job died, from its stderr tail and exit status: a short key that two failures of the same
// kind share ("OOM", "NCCL", "NCCL timeout", "CUDA error", "segfault", "killed (SIGKILL)",
// "RuntimeError", "exit code 3") and the line that shows it ("" when none does).
struct Cause {
  std::string key;
  std::string line;
};
Cause FailureCause(const std::string& stderr_tail, int exit_code, int signal);

// How a run's delivered value was computed: "harmonic mean (work over time) of the samples at
// steps 11..150" (`aggregate` as SteadyState::aggregate).
std::string ValueHow(const std::string& aggregate, int64_t from_step, int64_t last_step);

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
  std::optional<double> median;  // of the steady-state window (a diagnostic); nullopt without
                                 // samples
  // The run's value: what it delivered over its measured window (SteadyState::delivered), and
  // its unimpeded pace. Runs stored before they existed fall back to the median.
  std::optional<double> delivered, pace;
  std::string aggregate;           // how `delivered` was computed ("" = stored before it existed)
  int64_t measured_from_step = 0;  // first step of the window `delivered` covers (0 = unknown)
  std::optional<double> Value() const { return delivered ? delivered : median; }
  std::optional<double> Pace() const { return pace ? pace : Value(); }
  // How Value() was computed, for anyone recomputing a verdict (ValueHow, or the median's note).
  std::string How() const;
  bool usable = true;     // the within-run analysis found a steady state, no slowdown (a note)
  bool slowdown = false;  // the run got slower within the run (throttling, memory creep): a
                          // note; the slowdown is in its delivered value
  int nonfinite = 0;      // NaN/Inf samples
  int samples = 0;        // samples logged
  int64_t steady_from_step = 0;  // first step of the steady window (0 = unknown)
  int64_t last_step = 0;         // the run's last logged step (0 = unknown)
  double resolution = 0;         // the printed quantum of the values (0 = unknown / continuous)
  int levels = 0;                // distinct values in the steady window (0 = unknown)
  std::string warnings;
};
struct RunFacts {
  int64_t id = 0;
  RunState state = RunState::kQueued;
  std::string arm;  // control | variant | "" (a baseline's run)
  int idx = 0;      // 1-based position in its baseline or experiment
  std::string reason;
  std::optional<double> duration_s;  // finished - started, when both are known
  std::string cause;                 // a failed run's cause key (FailureCause)
  std::string node;                  // the agent that ran it ("" = unknown)
  std::vector<RunMetricFacts> metrics;
  const RunMetricFacts* Find(const std::string& metric) const;
};

// A run's value of one metric as every comparison, summary and series takes it. For a primary or
// observed metric: what the run delivered (RunMetricFacts::Value, Pace, How). For a guardrail: the
// level the run settled at (the steady window's median) as both value and pace: a guardrail
// guards quality (a loss, memory), whose level at the end matters, not its average over a run in
// which it keeps falling. `m` may be null (a metric no longer in the spec: delivered).
struct RunValue {
  std::optional<double> value, pace;
  std::string how;
};
RunValue ValueOf(const MetricSpec* m, const RunMetricFacts& f);

// Whether a run counts (is compared, summarised, part of a series): every run that succeeded and
// has a value of the primary metric does. A run without a steady state, one that slowed down or
// a noisy one counts with the value it delivered; what was off is a note (`note`, `flagged`).
// `why_not` says why a finished run does not count (it failed, or logged no value).
struct RunUse {
  bool counts = false;
  bool excluded = false;  // succeeded but has no value of the primary metric
  bool flagged = false;   // counts, and slowed down within the run (a note)
  bool unsteady = false;  // counts, and has no steady state (a note)
  std::string why_not;
  std::string note;  // what was off in a counting run ("" = nothing)
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
// a run counts and every metric has a value in some counting run; else failed, with the reason
// (which metric had no value, and why).
struct BaselineResult {
  BaselineState state = BaselineState::kFailed;
  std::string reason;  // "" when completed
};
std::optional<BaselineResult> BaselineOutcome(const WorkloadSpec& spec,
                                              const std::vector<RunFacts>& runs);

// An experiment's control and variant arms, built from its runs by the counting rule: counted
// runs give their values with their ABBA pair ((idx - 1) / 2) and run id; excluded ones are listed
// with the reason and counted as unusable; failed and lost ones count against their arm (their
// cause kept); NaN/Inf in a variant's guardrail metric counts as a failure of that run.
struct Arms {
  ArmData control, variant;
  std::vector<int64_t> compared_control, compared_variant;  // run ids, in run order
};
Arms BuildArms(const WorkloadSpec& spec, const std::vector<RunFacts>& runs);

// Where an experiment's arm stands while it runs: its runs by state, and how many finished ones
// are compared (the rest failed or were excluded, see UseOf).
struct ArmProgress {
  int queued = 0, active = 0, succeeded = 0, failed = 0, cancelled = 0;
  int compared = 0;  // succeeded runs whose primary metric counts
};
struct ExperimentArms {
  ArmProgress control, variant;
};
ExperimentArms CountArms(const WorkloadSpec& spec, const std::vector<RunFacts>& runs);

// The estimate so far of a running experiment, from its finished runs: from the first look on,
// each metric's CI at the sequential boundary for the pairs it compares (what the next decision
// would rest on); before it, a fixed-sample 95 % CI (2+ runs per side). Never recorded and never
// a decision (decisions are cleared) — the store decides only in MaybeDecideExperiment. Without
// the early-stopping adjustment and the cross-checks: it is recomputed on every read.
struct InterimEstimate {
  Verdict verdict;
  std::string ci;  // which CI: "the sequential boundary at this look" or "fixed-sample 95% CI …"
};
InterimEstimate InterimVerdict(const WorkloadSpec& spec, const std::vector<RunFacts>& runs,
                               const std::optional<Expectation>& expectation,
                               const SequentialOptions& design);

// Advice instead of silence: when more than a quarter of an arm's finished runs had no steady
// state, slowed down or had no value, what to change: run at least N steps, set warmup_steps: M
// (only above the declared one), check clocks/thermals. Empty otherwise.
std::vector<std::string> AdviseExclusions(const WorkloadSpec& spec,
                                          const std::vector<RunFacts>& runs);

}  // namespace tunectl

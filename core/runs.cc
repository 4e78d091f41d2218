#include "core/runs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/sequential.h"

namespace tunectl {

RunOutcome DecideRunOutcome(const RunReport& r) {
  RunOutcome o;
  if (r.reason == "cancelled" && r.window_cancel) {
    o.requeue = true;
    o.reason = "stopped at the end of its window; runs again in the next one";
    return o;
  }
  if (r.infra_failure && r.reason != "cancelled") {
    o.retry = true;
    o.reason = "its node could not run it (" + r.reason + "); retried on another node";
    return o;
  }
  if (r.duration_reached) {
    o.state = RunState::kSucceeded;  // a stability run stopped at its requested duration
  } else if (r.duration_ms > 0 && r.reason.empty() && r.signal == 0 && r.exit_code == 0) {
    o.state = RunState::kSucceeded;
    o.reason = std::string(kEndedEarly) + ": the job exited by itself before its stability " +
               "duration of " + std::to_string((r.duration_ms + 999) / 1000) +
               " s, so it says nothing about a regression; a stability run needs a job that runs " +
               "until it is stopped: have it run for TUNECTL_DURATION_S seconds (or raise its " +
               "step count)";
  } else if (r.reason == "cancelled") {
    o.state = RunState::kCancelled;
    o.reason = r.reason;
  } else if (!r.reason.empty() || r.signal != 0 || r.exit_code != 0) {
    o.state = RunState::kFailed;
    o.reason = !r.reason.empty() ? r.reason
               : r.signal        ? "killed by signal " + std::to_string(r.signal)
                                 : "exit code " + std::to_string(r.exit_code);
  }
  if (o.state == RunState::kFailed) {
    const Cause c = FailureCause(r.stderr_tail, r.exit_code, r.signal);
    o.cause = !r.reason.empty() && c.line.empty() ? r.reason.substr(0, r.reason.find(':')) : c.key;
    if (!c.line.empty()) o.reason += " — " + c.key + ": " + c.line;
  }
  if (r.batches_stored != r.batches_sent)
    o.reason += (o.reason.empty() ? "" : "; ") + std::string("agent sent ") +
                std::to_string(r.batches_sent) + " metric batches, server has " +
                std::to_string(r.batches_stored);
  return o;
}

bool EndedEarly(const std::string& reason) {
  return reason.rfind(kEndedEarly, 0) == 0;
}

Cause FailureCause(const std::string& stderr_tail, int exit_code, int signal) {
  struct Pattern {
    const char* needle;
    const char* key;
  };
  // First match wins, most specific first.
  static const Pattern kPatterns[] = {
      {"CUDA out of memory", "OOM"},
      {"OutOfMemoryError", "OOM"},
      {"CUDA error: out of memory", "OOM"},
      {"HIP out of memory", "OOM"},
      {"CUBLAS_STATUS_ALLOC_FAILED", "OOM"},
      {"RESOURCE_EXHAUSTED", "OOM"},
      {"std::bad_alloc", "host OOM"},
      {"MemoryError", "host OOM"},
      {"Cannot allocate memory", "host OOM"},
      {"Watchdog caught collective operation timeout", "NCCL timeout"},
      {"collective operation timeout", "NCCL timeout"},
      {"NCCL error", "NCCL"},
      {"ncclInternalError", "NCCL"},
      {"ncclSystemError", "NCCL"},
      {"ncclUnhandledCudaError", "NCCL"},
      {"illegal memory access", "CUDA error"},
      {"device-side assert", "CUDA error"},
      {"CUDA error", "CUDA error"},
      {"Segmentation fault", "segfault"},
  };
  std::vector<std::string> lines;
  std::istringstream in(stderr_tail);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  auto clip = [](std::string l) {
    const size_t b = l.find_first_not_of(" \t");
    l = b == std::string::npos ? "" : l.substr(b);
    return l.size() > 200 ? l.substr(0, 197) + "..." : l;
  };
  for (const auto& p : kPatterns)
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (it->find(p.needle) != std::string::npos) return {p.key, clip(*it)};
  if (signal == 9) return {"killed (SIGKILL)", ""};
  if (signal == 11) return {"segfault", ""};
  // A Python traceback ends with "package.SomeError: message".
  static const std::regex kException(
      R"(^\s*((?:[A-Za-z_][A-Za-z0-9_]*\.)*([A-Za-z_][A-Za-z0-9_]*(?:Error|Exception|Interrupt)))(:|$))");
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::smatch m;
    if (std::regex_search(*it, m, kException)) return {m[2].str(), clip(*it)};
  }
  if (signal != 0) return {"signal " + std::to_string(signal), ""};
  return {"exit code " + std::to_string(exit_code), ""};
}

RetryDecision DecideRetry(int attempt, int max_attempts, const std::string& why) {
  if (attempt < max_attempts) return {true, "attempt " + std::to_string(attempt) + " " + why};
  return {false, "lost after " + std::to_string(attempt) + " attempts: " + why};
}

std::string ValueHow(const std::string& aggregate, int64_t from_step, int64_t last_step) {
  return aggregate + " of the samples at steps " + std::to_string(from_step) + ".." +
         std::to_string(last_step);
}

std::string RunMetricFacts::How() const {
  if (!delivered)
    return median ? "median of the steady-state window (stored before delivered values)" : "";
  return ValueHow(aggregate, measured_from_step, last_step);
}

RunValue ValueOf(const MetricSpec* m, const RunMetricFacts& f) {
  if (m && m->role == MetricRole::kGuardrail)
    return {f.median, f.median,
            f.median ? "median of the steady-state window (a guardrail's level)" : ""};
  return {f.Value(), f.Pace(), f.How()};
}

const RunMetricFacts* RunFacts::Find(const std::string& metric) const {
  for (const auto& m : metrics)
    if (m.metric == metric) return &m;
  return nullptr;
}

RunUse UseOf(const WorkloadSpec& spec, const RunFacts& run) {
  RunUse u;
  if (run.state != RunState::kSucceeded) {
    u.why_not = "run " + std::to_string(run.id) + " " + Name(run.state) +
                (run.reason.empty() ? "" : " (" + run.reason + ")");
    return u;
  }
  const MetricSpec* primary = spec.PrimaryMetric();
  if (!primary) {
    u.counts = true;
    return u;
  }
  const RunMetricFacts* m = run.Find(primary->name);
  if (!m || !ValueOf(primary, *m).value) {
    u.excluded = true;
    u.why_not = "run " + std::to_string(run.id) + ": no " + primary->name + " value";
    return u;
  }
  u.counts = true;
  u.flagged = m->slowdown;
  u.unsteady = !m->usable && !m->slowdown;
  if (!m->usable) u.note = "run " + std::to_string(run.id) + ": " + m->warnings;
  return u;
}

std::vector<MetricSummary> SummarizeRuns(const WorkloadSpec& spec,
                                         const std::vector<RunFacts>& runs) {
  std::vector<MetricSummary> out;
  for (const auto& m : spec.metrics) {
    std::vector<double> medians;
    for (const auto& r : runs) {
      if (!UseOf(spec, r).counts) continue;
      if (const RunMetricFacts* f = r.Find(m.name))
        if (const auto v = ValueOf(&m, *f).value) medians.push_back(*v);
    }
    Descriptive d = Describe(medians);
    if (d.n > 0) out.push_back({m.name, d});
  }
  return out;
}

int ExpectedRunSeconds(const WorkloadSpec& spec, const std::vector<RunFacts>& runs) {
  std::vector<double> d;
  for (const auto& r : runs)
    if (r.duration_s && UseOf(spec, r).counts) d.push_back(*r.duration_s);
  if (d.empty()) return 0;
  return static_cast<int>(std::ceil(Median(d)));
}

std::optional<BaselineResult> BaselineOutcome(const WorkloadSpec& spec,
                                              const std::vector<RunFacts>& runs) {
  std::vector<const RunFacts*> succeeded, counting;
  std::string failures;
  for (const auto& r : runs) {
    if (IsActive(r.state)) return std::nullopt;
    if (r.state == RunState::kSucceeded) succeeded.push_back(&r);
    if (UseOf(spec, r).counts) counting.push_back(&r);
    if (r.state != RunState::kSucceeded && failures.size() < 300)
      failures += (failures.empty() ? "" : "; ") + UseOf(spec, r).why_not;
  }
  BaselineResult out;
  if (succeeded.empty()) {
    out.reason = "no run succeeded" + (failures.empty() ? "" : ": " + failures);
    return out;
  }
  for (const auto& m : spec.metrics) {
    bool any = false;
    int samples = 0, nonfinite = 0;
    for (const RunFacts* r : succeeded) {
      const RunMetricFacts* f = r->Find(m.name);
      if (!f) continue;
      any |= ValueOf(&m, *f).value.has_value();
      samples += f->samples;
      nonfinite += f->nonfinite;
    }
    if (any) continue;
    std::string why;
    if (samples == 0)
      why = "no log line matched it in any of the " + std::to_string(succeeded.size()) + " runs (" +
            (m.parser.empty() ? std::string("check its pattern / json key against the job's "
                                            "output")
                              : "no line of the " + m.parser + " format had the field " + m.field) +
            ")";
    else if (nonfinite == samples)
      why = "all " + std::to_string(samples) + " of its samples were NaN/Inf";
    else
      why = "its " + std::to_string(samples) +
            " samples all fell inside the declared warm-up (warmup_steps) or were NaN/Inf";
    out.reason = "metric " + m.name + " has no value in any run: " + why;
    return out;
  }
  if (counting.empty()) {
    std::string why;
    for (const RunFacts* r : succeeded) {
      if (why.size() > 300) break;
      why += (why.empty() ? "" : "; ") + UseOf(spec, *r).why_not;
    }
    const MetricSpec* p = spec.PrimaryMetric();
    out.reason = "no run has a steady-state value of " + (p ? p->name : std::string("the metric")) +
                 ": " + why;
    return out;
  }
  out.state = BaselineState::kCompleted;
  return out;
}

Arms BuildArms(const WorkloadSpec& spec, const std::vector<RunFacts>& runs) {
  Arms arms;
  std::vector<const RunFacts*> ordered;
  for (const auto& r : runs) ordered.push_back(&r);
  std::sort(ordered.begin(), ordered.end(),
            [](const RunFacts* a, const RunFacts* b) { return a->id < b->id; });
  for (const RunFacts* r : ordered) {
    const bool variant = r->arm == "variant";
    ArmData& a = variant ? arms.variant : arms.control;
    if (r->state == RunState::kFailed || r->state == RunState::kLost) {
      ++a.runs;
      ++a.failed_runs;
      a.failures.push_back("run " + std::to_string(r->id) + ": " + r->reason);
      a.causes.push_back(r->state == RunState::kLost ? "" : r->cause);  // lost: not the job's
      continue;
    }
    if (r->state != RunState::kSucceeded) continue;  // active or cancelled: not a result
    ++a.runs;
    for (const auto& m : r->metrics)
      if (m.nonfinite > 0)
        a.nonfinite.push_back("run " + std::to_string(r->id) + ": " + std::to_string(m.nonfinite) +
                              " NaN/Inf " + m.metric + " sample(s) left out");
    if (variant) {
      // NaN/Inf in a variant's guardrail metric (e.g. a diverged loss) counts as a failure.
      for (const auto& m : r->metrics) {
        const MetricSpec* ms = spec.FindMetric(m.metric);
        if (!ms || ms->role != MetricRole::kGuardrail || m.nonfinite == 0) continue;
        ++a.failed_runs;
        a.failures.push_back("run " + std::to_string(r->id) + ": " + std::to_string(m.nonfinite) +
                             " non-finite " + m.metric + " value(s)");
        a.causes.push_back("non-finite " + m.metric);
      }
    }
    const RunUse use = UseOf(spec, *r);
    if (!use.counts) {
      a.excluded.push_back(use.why_not);
      continue;
    }
    if (!use.note.empty()) a.notes.push_back(use.note);
    const int pair = (r->idx - 1) / 2;  // idx 1,2 = pair 0; 3,4 = pair 1; …
    for (const auto& m : r->metrics) {
      const RunValue v = ValueOf(spec.FindMetric(m.metric), m);
      if (!v.value) continue;
      a.values[m.metric].push_back(*v.value);
      a.pace[m.metric].push_back(*v.pace);
      a.how[m.metric].push_back(v.how);
      a.pairs[m.metric].push_back(pair);
      a.ids[m.metric].push_back(r->id);
      a.resolution[m.metric] = std::max(a.resolution[m.metric], m.resolution);
      a.levels[m.metric] = std::max(a.levels[m.metric], m.levels);
    }
    (variant ? arms.compared_variant : arms.compared_control).push_back(r->id);
  }
  return arms;
}

namespace {

int64_t RoundUp(double x, int64_t to) {
  return (static_cast<int64_t>(std::ceil(x)) + to - 1) / to * to;
}

std::string StepsParam(const WorkloadSpec& spec) {
  for (const char* n : {"steps", "max_steps", "train_steps", "num_steps", "train_iters",
                        "iterations", "iters", "max_iters", "total_steps"})
    if (spec.FindParam(n)) return n;
  return "";
}

}  // namespace

std::vector<std::string> AdviseExclusions(const WorkloadSpec& spec,
                                          const std::vector<RunFacts>& runs) {
  std::vector<std::string> out;
  const MetricSpec* primary = spec.PrimaryMetric();
  if (!primary) return out;
  bool too_short = false, flagged = false;
  std::set<std::string> short_arms;  // arms with runs that never settled
  for (const char* arm : {"control", "variant"}) {
    int finished = 0, noted = 0;
    bool arm_short = false, arm_flagged = false;
    for (const auto& r : runs) {
      if (r.arm != arm || IsActive(r.state) || r.state == RunState::kCancelled) continue;
      ++finished;
      if (r.state != RunState::kSucceeded) continue;  // failures are reported as failures
      const RunUse u = UseOf(spec, r);
      if (u.excluded || u.flagged || u.unsteady) ++noted;
      arm_short |= u.unsteady;
      arm_flagged |= u.flagged;
    }
    if (finished == 0 || 4 * noted <= finished) continue;  // a quarter or fewer: no advice
    if (arm_short) short_arms.insert(arm);
    too_short |= arm_short;
    flagged |= arm_flagged;
    out.push_back(std::string(arm) + ": " + std::to_string(noted) + " of " +
                  std::to_string(finished) +
                  " finished runs had no steady state, slowed down or had no value (they count "
                  "with what they delivered; the spread they add costs runs)");
  }
  if (out.empty()) return out;
  if (too_short) {
    // Where the steady runs of the arms that had unsteady ones settle, and how long runs are.
    std::vector<double> settle, length;
    for (const auto& r : runs) {
      const RunMetricFacts* f = r.Find(primary->name);
      if (!f || r.state != RunState::kSucceeded || !short_arms.count(r.arm)) continue;
      if (f->last_step > 0) length.push_back(static_cast<double>(f->last_step));
      if (f->usable && f->steady_from_step > 0)
        settle.push_back(static_cast<double>(f->steady_from_step - 1));
    }
    const std::string param = StepsParam(spec);
    const std::string knob = param.empty() ? "the job's step count" : param;
    const double s = length.empty() ? 0 : Median(length);
    const int64_t declared = spec.run.warmup_steps;
    const int64_t warm = settle.empty() ? 0 : RoundUp(Median(settle), 1);
    if (warm > declared) {
      // The steady segment must cover at least half of the run after the declared warm-up;
      // three times the warm-up leaves room for the change-point analysis.
      const int64_t steps =
          std::max<int64_t>(RoundUp(3.0 * static_cast<double>(warm), 10), RoundUp(s, 10));
      out.push_back("runs too short for a steady state: steady runs settle only at step ~" +
                    std::to_string(warm) + " of " + std::to_string(static_cast<int64_t>(s)) +
                    "; warm-up is longer than declared (warmup_steps: " + std::to_string(declared) +
                    "): set warmup_steps: " + std::to_string(warm) + " in the workload" +
                    (steps > RoundUp(s, 10) ? ", and raise " + knob + " to " + std::to_string(steps)
                                            : std::string()));
    } else {
      const int64_t steps = s > 0 ? RoundUp(2 * s, 10) : 0;
      out.push_back(
          "runs too short for a steady state (the stable segment covers under half of "
          "each run, or the level keeps moving): raise " +
          knob + (steps > 0 ? " to " + std::to_string(steps) : std::string(" (x2)")) +
          " so that each run averages over more of its variation");
    }
  }
  if (flagged)
    out.push_back(
        "runs slowed down within the run (throttling, memory creep?): check GPU clocks "
        "and temperatures (nvidia-smi -q -d PERFORMANCE) and memory growth");
  return out;
}

ExperimentArms CountArms(const WorkloadSpec& spec, const std::vector<RunFacts>& runs) {
  ExperimentArms out;
  for (const auto& r : runs) {
    ArmProgress& a = r.arm == "variant" ? out.variant : out.control;
    switch (r.state) {
      case RunState::kQueued: ++a.queued; break;
      case RunState::kSucceeded:
        ++a.succeeded;
        if (UseOf(spec, r).counts) ++a.compared;
        break;
      case RunState::kFailed:
      case RunState::kLost: ++a.failed; break;
      case RunState::kCancelled: ++a.cancelled; break;
      default: ++a.active; break;  // assigned, running
    }
  }
  return out;
}

InterimEstimate InterimVerdict(const WorkloadSpec& spec, const std::vector<RunFacts>& runs,
                               const std::optional<Expectation>& expectation,
                               const SequentialOptions& design) {
  const Arms arms = BuildArms(spec, runs);
  VerdictOptions opts;
  opts.cross_checks = false;
  opts.adjust_estimate = false;
  Verdict v =
      EvaluateSequential(spec, arms.control, arms.variant, expectation, design, opts).verdict;
  if (v.pairs < v.min_pairs) {
    // Before the first look the boundary has no CI to give: a fixed-sample 95 % CI instead,
    // from 2 runs per side, said so by `interim_ci`.
    Verdict fixed = ComputeVerdict(spec, arms.control, arms.variant, expectation, opts);
    fixed.pairs = v.pairs;
    fixed.min_pairs = v.min_pairs;
    fixed.max_pairs = v.max_pairs;
    fixed.finished_pairs = v.finished_pairs;
    v = std::move(fixed);
  }
  InterimEstimate out;
  out.ci = v.pairs < v.min_pairs ? "fixed-sample 95% CI (before the first look)"
                                 : "the sequential boundary at this look";
  v.decision.clear();  // an estimate, not a decision
  for (auto& m : v.metrics) m.decision.clear(), m.guardrail.clear();
  out.verdict = std::move(v);
  return out;
}

}  // namespace tunectl

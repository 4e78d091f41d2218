#include "core/runs.h"

#include <algorithm>
#include <cmath>

namespace tunectl {

RunOutcome DecideRunOutcome(const RunReport& r) {
  RunOutcome o;
  if (r.reason == "cancelled" && r.window_cancel) {
    o.requeue = true;
    o.reason = "stopped at the end of its window; runs again in the next one";
    return o;
  }
  if (r.duration_reached) {
    o.state = RunState::kSucceeded;  // a stability run stopped at its requested duration
  } else if (r.reason == "cancelled") {
    o.state = RunState::kCancelled;
    o.reason = r.reason;
  } else if (!r.reason.empty() || r.signal != 0 || r.exit_code != 0) {
    o.state = RunState::kFailed;
    o.reason = !r.reason.empty() ? r.reason
               : r.signal        ? "killed by signal " + std::to_string(r.signal)
                                 : "exit code " + std::to_string(r.exit_code);
  }
  if (r.batches_stored != r.batches_sent)
    o.reason += (o.reason.empty() ? "" : "; ") + std::string("agent sent ") +
                std::to_string(r.batches_sent) + " metric batches, server has " +
                std::to_string(r.batches_stored);
  return o;
}

RetryDecision DecideRetry(int attempt, int max_attempts, const std::string& why) {
  if (attempt < max_attempts) return {true, "attempt " + std::to_string(attempt) + " " + why};
  return {false, "lost after " + std::to_string(attempt) + " attempts: " + why};
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
  u.excluded = true;
  if (!m || !m->median) {
    u.why_not = "run " + std::to_string(run.id) + ": no " + primary->name + " value";
  } else if (!m->usable) {
    u.why_not = "run " + std::to_string(run.id) + ": " + m->warnings;
  } else {
    u.excluded = false;
    u.counts = true;
  }
  return u;
}

std::vector<MetricSummary> SummarizeRuns(const WorkloadSpec& spec,
                                         const std::vector<RunFacts>& runs) {
  std::vector<MetricSummary> out;
  for (const auto& m : spec.metrics) {
    std::vector<double> medians;
    for (const auto& r : runs) {
      if (!UseOf(spec, r).counts) continue;
      if (const RunMetricFacts* f = r.Find(m.name); f && f->median) medians.push_back(*f->median);
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

std::optional<BaselineState> BaselineOutcome(const std::vector<RunFacts>& runs) {
  bool succeeded = false;
  for (const auto& r : runs) {
    if (IsActive(r.state)) return std::nullopt;
    succeeded |= r.state == RunState::kSucceeded;
  }
  return succeeded ? BaselineState::kCompleted : BaselineState::kFailed;
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
      continue;
    }
    if (r->state != RunState::kSucceeded) continue;  // active or cancelled: not a result
    ++a.runs;
    if (variant) {
      // NaN/Inf in a variant's guardrail metric (e.g. a diverged loss) counts as a failure.
      for (const auto& m : r->metrics) {
        const MetricSpec* ms = spec.FindMetric(m.metric);
        if (!ms || ms->role != MetricRole::kGuardrail || m.nonfinite == 0) continue;
        ++a.failed_runs;
        a.failures.push_back("run " + std::to_string(r->id) + ": " + std::to_string(m.nonfinite) +
                             " non-finite " + m.metric + " value(s)");
      }
    }
    const RunUse use = UseOf(spec, *r);
    if (!use.counts) {
      a.excluded.push_back(use.why_not);
      continue;
    }
    const int pair = (r->idx - 1) / 2;  // idx 1,2 = pair 0; 3,4 = pair 1; …
    for (const auto& m : r->metrics) {
      if (!m.median) continue;
      a.values[m.metric].push_back(*m.median);
      a.pairs[m.metric].push_back(pair);
    }
    (variant ? arms.compared_variant : arms.compared_control).push_back(r->id);
  }
  return arms;
}

}  // namespace tunectl

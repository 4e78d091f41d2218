#include "core/decisions.h"

#include <cmath>
#include <set>

#include "core/regression.h"
#include "core/runs.h"
#include "core/sequential.h"

namespace tunectl {

Result<ExperimentSize> SizeExperiment(int requested_repeats, const WorkloadSpec& spec) {
  const int cap = requested_repeats == 0 ? std::max(10, 2 * spec.run.repeats) : requested_repeats;
  if (cap < kFirstLookPairs || cap > 500)
    return Status::InvalidArgument(
        "--repeats: " + std::to_string(cap) + " runs per arm is out of range; allowed " +
        std::to_string(kFirstLookPairs) + "..500 (nothing is decided on fewer than " +
        std::to_string(kFirstLookPairs) + " control/variant pairs)");
  return ExperimentSize{cap, kFirstLookPairs};
}

Result<std::vector<std::string>> ExpandBatchVary(const std::vector<std::string>& vary) {
  if (vary.empty())
    return Status::InvalidArgument(
        "--vary: missing; e.g. --vary num_workers=8,16 --vary prefetch_factor=4");
  std::vector<std::string> singles;
  std::set<std::string> seen;
  for (const auto& v : vary) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("--vary: \"" + v + "\" is not NAME=VALUE[,VALUE…]");
    if (v.find(',') < eq)
      return Status::InvalidArgument("--vary: \"" + v + "\" names more than one parameter (\"" +
                                     v.substr(0, eq) +
                                     "\"); a batch varies one parameter per --vary: "
                                     "NAME=VALUE[,VALUE…]");
    const std::string values = v.substr(eq + 1) + ",";
    for (size_t p = 0, c; (c = values.find(',', p)) != std::string::npos; p = c + 1) {
      const std::string value = values.substr(p, c - p);
      if (value.empty()) return Status::InvalidArgument("--vary: \"" + v + "\" has an empty value");
      const std::string one = v.substr(0, eq) + "=" + value;
      if (seen.insert(one).second) singles.push_back(one);
    }
  }
  return singles;
}

std::string DriftNote(const Verdict& v, const WorkloadSpec& spec,
                      std::optional<double> baseline_level, int64_t baseline_id) {
  const MetricSpec* pm = spec.FindMetric(v.primary);
  if (v.primary.empty() || !pm || !baseline_level || *baseline_level == 0) return "";
  for (const auto& mv : v.metrics) {
    if (mv.metric != v.primary || mv.n_control == 0) continue;
    const double moved = mv.control_median / *baseline_level;
    if (std::fabs(moved - 1) > pm->min_effect)
      return "the interleaved controls differ from baseline " + std::to_string(baseline_id) +
             " by " + FormatEffect(moved) +
             ": the cluster moved since the baseline; the verdict compares with the controls";
  }
  return "";
}

std::optional<std::vector<BatchDecision>> DecideBatch(const std::vector<BatchMember>& members,
                                                      const std::string& method, double alpha) {
  std::vector<std::string> decisions;
  std::vector<double> p;
  for (const auto& m : members) {
    if (m.state == ExperimentState::kRunning) return std::nullopt;
    decisions.push_back(m.state == ExperimentState::kCancelled ? "" : m.decision);
    p.push_back(m.p_value);
  }
  const BatchAdjustment adj = AdjustBatch(decisions, p, method, alpha);
  std::vector<BatchDecision> out;
  for (size_t i = 0; i < members.size(); ++i) {
    BatchDecision d;
    d.unadjusted = members[i].decision;
    d.adjusted_p = adj.adjusted_p[i];
    d.decision = adj.decisions[i];
    if (d.decision != d.unadjusted) {
      char p_text[32];
      std::snprintf(p_text, sizeof p_text, "%.3g", d.adjusted_p);
      d.note = d.unadjusted + " alone, inconclusive after " + (method == "bh" ? "BH" : "Holm") +
               " across the batch's " + std::to_string(members.size()) +
               " comparisons (adjusted p " + p_text + ")";
      d.decision = "inconclusive";
    }
    out.push_back(d);
  }
  return out;
}

Verdict ApplyBatchDecision(Verdict v, const BatchDecision& d, const std::string& method) {
  v.unadjusted_decision = d.unadjusted;
  v.adjusted_p = d.adjusted_p;
  v.correction = method;
  if (!d.note.empty()) {
    v.decision = d.decision;
    v.reasons.push_back(d.note);
    if (v.hypothesis == "confirmed") {
      v.hypothesis = "inconclusive";
      v.hypothesis_note = d.note;
    }
  }
  return v;
}

std::string DescribeTry(const EarlierTry& t) {
  std::string out = "experiment " + std::to_string(t.experiment) + " on config v" +
                    std::to_string(t.config_version) + ": " + t.change + " ";
  switch (t.state) {
    case ExperimentState::kRunning:
    case ExperimentState::kMeasured: return out + "still running";
    case ExperimentState::kCancelled: return out + "cancelled";
    default: break;
  }
  out += "decided " + (t.decision.empty() ? std::string("-") : t.decision);
  if (!t.effect.empty()) out += " (" + t.effect + ")";
  if (t.state == ExperimentState::kFrozen) out += ", frozen";
  return out;
}

Status CheckRepeatedChange(const std::vector<EarlierTry>& earlier, const std::string& change,
                           int config_version, bool again, const std::string& reason) {
  if (again && reason.empty())
    return Status::InvalidArgument(
        "--reason: missing; --again records why the same change is tested again, e.g. --again "
        "--reason \"new driver\"");
  if (again) return Status::Ok();
  if (!reason.empty())
    return Status::InvalidArgument("--reason \"" + reason +
                                   "\": only with --again (a change decided before, tested again)");
  for (const auto& e : earlier) {
    const std::string ex = "experiment " + std::to_string(e.experiment);
    const std::string insist =
        ". To test it again anyway, say why: --again --reason \"…\" (kept in the tuning log)";
    if (e.state == ExperimentState::kRunning || e.state == ExperimentState::kMeasured)
      return Status::FailedPrecondition(change + " on config v" + std::to_string(config_version) +
                                        " is already being tested by " + ex +
                                        " (tunectl experiment show " +
                                        std::to_string(e.experiment) + ")" + insist);
    if (e.state == ExperimentState::kCancelled || e.decision.empty() ||
        e.decision == Name(Decision::kInconclusive))
      continue;
    return Status::FailedPrecondition(
        change + " was already tested on config v" + std::to_string(config_version) + ": " + ex +
        " decided " + e.decision + (e.effect.empty() ? "" : " (" + e.effect + ")") +
        (e.decided_at.empty() ? "" : " at " + e.decided_at) + "; see tunectl experiment show " +
        std::to_string(e.experiment) + insist);
  }
  return Status::Ok();
}

Status CheckFreeze(const FreezeFacts& f) {
  const std::string ex = "experiment " + std::to_string(f.experiment);
  switch (f.state) {
    case ExperimentState::kRunning:
      return Status::FailedPrecondition(
          ex + " is still running; wait for its verdict (tunectl experiment show " +
          std::to_string(f.experiment) + ")");
    case ExperimentState::kMeasured:
      return Status::FailedPrecondition(
          ex + " is measured but its batch " + std::to_string(f.batch) +
          " is still running: the decision is made across the batch (tunectl batch show " +
          std::to_string(f.batch) + ")");
    case ExperimentState::kFrozen:
      return Status::FailedPrecondition(ex + " is already frozen as config v" +
                                        std::to_string(f.frozen_version));
    case ExperimentState::kDecided: break;
    default:
      return Status::FailedPrecondition(ex + " is " + Name(f.state) +
                                        "; only a decided experiment freezes");
  }
  if (f.force && f.reason.empty())
    return Status::InvalidArgument(
        "--reason: missing; a forced freeze records why, e.g. --force --reason \"needed for the "
        "release\"");
  if (f.decision != Name(Decision::kImproved) && !f.force)
    return Status::FailedPrecondition(
        ex + " was decided " + f.decision +
        ", not improved; only an improved experiment freezes. To freeze it anyway, record why: "
        "tunectl experiment freeze " +
        std::to_string(f.experiment) + " --force --reason \"…\"");
  if (f.control_version != f.current_version)
    return Status::FailedPrecondition(
        ex + " compared against config v" + std::to_string(f.control_version) + ", but " +
        f.workload + "'s current config is v" + std::to_string(f.current_version) +
        "; a freeze applies one change to the config it was measured on. Re-run it against "
        "the current config: tunectl experiment run --workload " +
        f.workload + " --vary …");
  if (!f.goal_breaks.empty() && !f.force) {
    std::string broken;
    for (const auto& b : f.goal_breaks) broken += (broken.empty() ? "" : "; ") + b;
    return Status::FailedPrecondition(
        ex + " breaks a guardrail of " + f.workload + "'s goal (" + broken +
        ", tunectl goal show " + f.workload +
        "). To freeze it anyway, record why: tunectl experiment freeze " +
        std::to_string(f.experiment) + " --force --reason \"…\"");
  }
  return Status::Ok();
}

std::optional<StabilityJudgement> JudgeStabilityRun(const WorkloadSpec& spec, int64_t run_id,
                                                    int config_version, RunState state,
                                                    const std::string& reason,
                                                    const std::vector<std::string>& metric_names,
                                                    const std::vector<SteadyState>& analyses) {
  const MetricSpec* primary = spec.PrimaryMetric();
  if (!primary) return std::nullopt;
  const std::string what =
      "stability run " + std::to_string(run_id) + " of v" + std::to_string(config_version) + ": ";
  if (state == RunState::kFailed)
    return StabilityJudgement{primary->name, what + "failed (" + reason + ")"};
  if (state != RunState::kSucceeded || EndedEarly(reason)) return std::nullopt;
  auto findings = CheckStabilityRun(spec, metric_names, analyses);
  if (findings.empty()) return std::nullopt;
  StabilityJudgement j{findings[0].metric, ""};
  for (const auto& f : findings) {
    if (f.metric == primary->name) j.metric = f.metric;
    j.message += (j.message.empty() ? "" : "; ") + f.message;
  }
  j.message = what + j.message;
  return j;
}

std::string StabilityVerdictName(RunState state, bool recorded_regression,
                                 const std::string& reason) {
  if (recorded_regression) return "regression";
  if (state == RunState::kSucceeded) return EndedEarly(reason) ? kEndedEarly : "stable";
  if (!IsTerminal(state)) return "pending";
  return Name(state);
}

}  // namespace tunectl

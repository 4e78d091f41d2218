#include "core/lifecycle.h"

#include <cmath>
#include <sstream>

namespace tunectl {
namespace {

std::string Count(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// 600000 -> "10m", 5400000 -> "90m", 7200000 -> "2h", 1500 -> "1500ms".
std::string DurationText(int64_t ms) {
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  const int64_t s = ms / 1000;
  if (s % 3600 == 0 && s > 0) return std::to_string(s / 3600) + "h";
  if (s % 60 == 0 && s > 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::string Number(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

std::string WorkloadHistory::Describe() const {
  std::string out;
  auto add = [&](int64_t n, const char* one, const char* many) {
    if (n > 0) out += (out.empty() ? "" : ", ") + Count(n, one, many);
  };
  add(baselines, "baseline", "baselines");
  add(runs, "run", "runs");
  add(experiments, "experiment", "experiments");
  add(log_entries, "log entry", "log entries");
  return out.empty() ? "nothing" : out;
}

Status CheckWorkloadDeletable(std::string_view workload, const WorkloadHistory& h) {
  if (!h.any()) return Status::Ok();
  const std::string name(workload);
  return Status::FailedPrecondition(
      "workload " + name + " has history (" + h.Describe() +
      ") and cannot be deleted; archive it instead (its history is kept, it is hidden from "
      "workload list and takes no new baselines or experiments): tunectl workload archive " +
      name);
}

Status CheckNotArchived(std::string_view workload, bool archived, std::string_view what) {
  if (!archived) return Status::Ok();
  const std::string name(workload);
  return Status::FailedPrecondition("workload " + name + " is archived: " + std::string(what) +
                                    " is refused; unarchive it first: tunectl workload unarchive " +
                                    name);
}

Status CheckAgentRemovable(std::string_view agent, bool connected) {
  if (!connected) return Status::Ok();
  return Status::FailedPrecondition("agent " + std::string(agent) +
                                    " is connected; stop it first (only a disconnected agent can "
                                    "be removed; tunectl agent list shows whether it is)");
}

Result<std::optional<ExperimentState>> ParseExperimentStateFilter(std::string_view s) {
  if (s.empty()) return std::optional<ExperimentState>();
  if (auto st = ParseExperimentState(s)) return std::optional<ExperimentState>(*st);
  std::string allowed;
  for (auto st : {ExperimentState::kRunning, ExperimentState::kMeasured, ExperimentState::kDecided,
                  ExperimentState::kFrozen, ExperimentState::kClosed, ExperimentState::kCancelled})
    allowed += (allowed.empty() ? "" : ", ") + std::string(Name(st));
  return Status::InvalidArgument("--state: \"" + std::string(s) +
                                 "\" is not an experiment state; allowed: " + allowed);
}

Result<std::optional<int>> CheckConfigVersion(std::string_view workload, int version, int newest) {
  if (version == 0) return std::optional<int>();
  if (version < 0)
    return Status::InvalidArgument("--version: " + std::to_string(version) +
                                   " is not a config version; allowed: 1.." +
                                   std::to_string(newest) + " (0 or none = the current one)");
  if (version > newest)
    return Status::NotFound("workload " + std::string(workload) + " has no config version " +
                            std::to_string(version) + "; it has v1..v" + std::to_string(newest) +
                            " (tunectl config show " + std::string(workload) + ")");
  return std::optional<int>(version);
}

std::string ParamRangeText(const ParamSpec& p) {
  switch (p.type) {
    case ParamType::kBool: return "true|false";
    case ParamType::kEnum: {
      std::string out;
      for (const auto& v : p.values) out += (out.empty() ? "" : "|") + v;
      return out;
    }
    case ParamType::kInt:
    case ParamType::kFloat:
      if (p.min && p.max) return Number(*p.min) + ".." + Number(*p.max);
      if (p.min) return ">= " + Number(*p.min);
      if (p.max) return "<= " + Number(*p.max);
      return "";
    case ParamType::kString: return "";
  }
  return "";
}

std::string MetricSourceText(const MetricSpec& m) {
  if (!m.parser.empty())
    return "parser " + m.parser + ", field " + (m.field.empty() ? m.name : m.field);
  if (!m.json_key.empty()) return "json " + m.json_key;
  if (!m.expr.empty()) return "expr " + m.expr;
  if (!m.prometheus.empty())
    return "prometheus " + m.prometheus + (m.match.empty() ? "" : ", match " + m.match);
  if (!m.tensorboard.empty()) return "tensorboard " + m.tensorboard;
  if (!m.pattern.empty()) return "pattern " + m.pattern;
  return "";
}

std::string RunPolicyText(const RunPolicy& r) {
  std::string out = "repeats " + std::to_string(r.repeats);
  if (r.warmup_steps > 0) out += ", warm-up " + std::to_string(r.warmup_steps) + " steps";
  out += ", timeout " + DurationText(r.timeout_ms);
  if (!r.selector.empty()) {
    std::string sel;
    for (const auto& [k, v] : r.selector) sel += (sel.empty() ? "" : ",") + k + "=" + v;
    out += ", selector " + sel;
  }
  if (!r.skip_steps.empty()) {
    std::string tags;
    for (const auto& [tag, pattern] : r.skip_steps) tags += (tags.empty() ? "" : ",") + tag;
    out += ", skip steps " + tags;
  }
  return out;
}

}  // namespace tunectl

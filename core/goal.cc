#include "core/goal.h"

#include <cmath>
#include <cstdio>

#include "core/statistics.h"
#include "core/text.h"

namespace tunectl {
namespace {

std::string Pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", fraction * 100);
  return buf;
}

bool Holds(const std::string& op, double x, double level) {
  return op == ">=" ? x >= level : op == ">" ? x > level : op == "<=" ? x <= level : x < level;
}

}  // namespace

Result<Goal> ParseGoal(const WorkloadSpec& spec, const std::string& metric, double target,
                       const std::vector<std::string>& guardrails) {
  Goal g;
  const MetricSpec* m = spec.FindMetric(metric);
  if (!m) {
    std::vector<std::string> names;
    for (const auto& x : spec.metrics) names.push_back(x.name);
    std::string msg = "--metric: \"" + metric + "\" is not a metric of workload " + spec.name;
    std::string near = NearestName(metric, names);
    if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return Status::InvalidArgument(msg + " (metrics: " + list + ")");
  }
  if (!std::isfinite(target) || target <= 0)
    return Status::InvalidArgument("--target: " + FormatLevel(target) +
                                   " is not allowed; a target is a number > 0 in " +
                                   (m->unit.empty() ? metric + "'s unit" : m->unit));
  g.metric = metric;
  g.target = target;
  g.better = m->better;
  for (const auto& text : guardrails) {
    auto e = ParseExpectation(spec, text);
    if (!e.ok()) {
      std::string msg(e.status().message());
      if (msg.rfind("--expect", 0) == 0) msg.replace(0, 8, "--guardrail");
      return Status::InvalidArgument(msg);
    }
    if (e->op.empty())
      return Status::InvalidArgument("--guardrail: \"" + text +
                                     "\" is not a level; write METRIC >= X, > X, <= X or < X "
                                     "(\"mfu >= 0.45\")");
    g.guardrails.push_back(*e);
  }
  return g;
}

GoalProgress GoalProgressOf(const Goal& goal, int config_version, int64_t baseline,
                            const Descriptive& d, std::vector<GoalStep> steps) {
  GoalProgress p;
  p.config_version = config_version;
  p.baseline = baseline;
  p.steps = std::move(steps);
  for (const auto& s : p.steps)
    if (s.ratio) p.moved *= *s.ratio;
  const bool higher = goal.better == Better::kHigher;
  const std::string against =
      goal.metric + " target " + FormatLevel(goal.target) + (higher ? " (higher)" : " (lower)");
  if (d.n == 0) {
    p.summary = against + ": config v" + std::to_string(config_version) +
                " has no completed baseline with values yet (tunectl baseline create --wait)";
    return p;
  }
  p.measured = true;
  p.n = d.n;
  p.level = d.mean;
  const double half =
      d.n >= 2 ? StudentTQuantile(0.975, d.n - 1) * d.stddev / std::sqrt(double(d.n)) : 0;
  p.ci_low = d.mean - half;
  p.ci_high = d.mean + half;
  p.attained = higher ? p.level / goal.target : (p.level > 0 ? goal.target / p.level : 0);
  p.reached = higher ? p.level >= goal.target : p.level <= goal.target;
  p.reached_surely = higher ? p.ci_low >= goal.target : p.ci_high <= goal.target;
  std::string at = goal.metric + " " + FormatLevel(p.level) +
                   (d.n >= 2 ? " [" + FormatLevel(p.ci_low) + ", " + FormatLevel(p.ci_high) + "]"
                             : std::string(" (one run: no CI)")) +
                   " on config v" + std::to_string(config_version) + " against " + against;
  if (p.reached_surely)
    p.summary = at + ": reached (the whole CI is past the target)";
  else if (p.reached)
    p.summary = at + ": at the target, but the CI still reaches back across it";
  else
    p.summary =
        at + ": " + Pct(p.attained) + " there, " + FormatEffect(goal.target / p.level) + " to go";
  return p;
}

std::string GoalNote(const Goal& goal, const Verdict& v) {
  for (const auto& m : v.metrics) {
    if (m.metric != goal.metric || !m.estimated) continue;
    const bool higher = goal.better == Better::kHigher;
    auto share = [&](double level) {
      return Pct(higher ? level / goal.target : (level > 0 ? goal.target / level : 0));
    };
    const double variant = m.control_median * m.ratio;
    return "goal " + goal.metric + " " + FormatLevel(goal.target) + ": control " +
           FormatLevel(m.control_median) + " (" + share(m.control_median) + " of it) -> variant " +
           FormatLevel(variant) + " (" + share(variant) + ")";
  }
  return "";
}

GuardrailCheck CheckGoalGuardrails(const Goal& goal, const Verdict& v) {
  GuardrailCheck out;
  for (const auto& g : goal.guardrails) {
    const MetricVerdict* mv = nullptr;
    for (const auto& m : v.metrics)
      if (m.metric == g.metric && m.estimated) mv = &m;
    if (!mv) {
      out.unmeasured.push_back(g.text + ": not measured by this experiment");
      continue;
    }
    const double level = mv->control_median * mv->ratio;
    if (!Holds(g.op, level, g.level))
      out.broken.push_back(g.text + ": the variant's level is " + FormatLevel(level));
  }
  return out;
}

}  // namespace tunectl

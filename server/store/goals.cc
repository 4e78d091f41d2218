// Store: a workload's quantified goal (core/goal.h) and the figures its progress is made of.
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "core/goal.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

namespace internal {

Result<std::optional<GoalRow>> LoadGoal(pqxx::work& w, const WorkloadRow& wl) {
  auto r = w.exec_params(
      "SELECT metric, target, guardrails::text, actor, tunectl_ts(created_at) FROM goals WHERE "
      "workload_id = $1 AND replaced_at IS NULL",
      wl.id);
  if (r.empty()) return std::optional<GoalRow>();
  GoalRow g;
  g.workload = wl.name;
  for (const auto& x : json::parse(r[0][2].as<std::string>())) g.guardrails.push_back(x);
  g.actor = r[0][3].as<std::string>();
  g.created_at = r[0][4].as<std::string>();
  // Checked against the workload's current spec: a goal over a metric since removed says so.
  auto goal = ParseGoal(wl.spec, r[0][0].as<std::string>(), r[0][1].as<double>(), g.guardrails);
  if (!goal.ok())
    return Status::FailedPrecondition("workload " + wl.name + "'s goal no longer fits its spec (" +
                                      goal.status().message() +
                                      "); set a new one: tunectl goal set " + wl.name + " …");
  g.goal = *goal;
  return std::optional<GoalRow>(std::move(g));
}

}  // namespace internal

namespace {

// Where the current config stands and what each frozen change did to the goal's metric.
GoalProgress ProgressOf(pqxx::work& w, const WorkloadRow& wl, const Goal& goal) {
  Descriptive d;
  int64_t baseline = 0;
  auto b = w.exec_params(
      "SELECT b.id, s.n, s.median, s.mean, s.stddev, s.cv, s.min, s.max FROM baselines b "
      "LEFT JOIN baseline_summaries s ON s.baseline_id = b.id AND s.metric = $3 WHERE "
      "b.workload_id = $1 AND b.config_id = $2 AND b.state = 'completed' ORDER BY b.id DESC "
      "LIMIT 1",
      wl.id, wl.config_id, goal.metric);
  if (!b.empty()) {
    baseline = b[0][0].as<int64_t>();
    if (!b[0][1].is_null())
      d = Descriptive{b[0][1].as<int>(),    b[0][2].as<double>(), b[0][3].as<double>(),
                      b[0][4].as<double>(), b[0][5].as<double>(), b[0][6].as<double>(),
                      b[0][7].as<double>()};
  }
  std::vector<GoalStep> steps;
  for (const auto& r :
       w.exec_params("SELECT fc.version, e.change::text, e.id, COALESCE(e.verdict::text, '') FROM "
                     "experiments e JOIN config_versions fc ON fc.id = e.frozen_config_id WHERE "
                     "e.workload_id = $1 AND e.state = 'frozen' ORDER BY e.frozen_at, e.id",
                     wl.id)) {
    GoalStep s;
    s.version = r[0].as<int>();
    if (auto c = ChangeFromJson(r[1].as<std::string>()); c.ok()) s.change = c->Describe();
    s.experiment = r[2].as<int64_t>();
    if (auto v = VerdictFromJson(r[3].as<std::string>()); v.ok())
      for (const auto& m : v->metrics)
        if (m.metric == goal.metric && m.estimated) {
          s.ratio = m.ratio;
          s.ci_low = m.ci_low;
          s.ci_high = m.ci_high;
        }
    steps.push_back(std::move(s));
  }
  return GoalProgressOf(goal, wl.config_version, baseline, d, std::move(steps));
}

}  // namespace

Result<GoalRow> Store::SetGoal(const std::string& workload, const std::string& metric,
                               double target, const std::vector<std::string>& guardrails,
                               const std::string& actor) {
  return InTx<GoalRow>(pool_, clock_, [&](pqxx::work& w) -> Result<GoalRow> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    auto goal = ParseGoal(wl->spec, metric, target, guardrails);
    if (!goal.ok()) return goal.status();
    std::vector<std::string> texts;
    for (const auto& g : goal->guardrails) texts.push_back(g.text);
    w.exec_params0(
        "UPDATE goals SET replaced_at = tunectl_now() WHERE workload_id = $1 AND replaced_at IS "
        "NULL",
        wl->id);
    w.exec_params0(
        "INSERT INTO goals(workload_id, metric, target, guardrails, actor) VALUES ($1, $2, $3, "
        "$4::json, $5)",
        wl->id, metric, target, json(texts).dump(), actor);
    Audit(w, actor, "goal.set", "workload", wl->id,
          {{"metric", metric}, {"target", target}, {"guardrails", texts}});
    auto g = LoadGoal(w, *wl);
    if (!g.ok()) return g.status();
    (*g)->progress = ProgressOf(w, *wl, (*g)->goal);
    return **g;
  });
}

Result<GoalRow> Store::GetGoal(const std::string& workload) {
  return InTx<GoalRow>(pool_, clock_, [&](pqxx::work& w) -> Result<GoalRow> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    auto g = LoadGoal(w, *wl);
    if (!g.ok()) return g.status();
    if (!*g)
      return Status::NotFound("workload " + wl->name + " has no goal; set one: tunectl goal set " +
                              wl->name +
                              " --metric METRIC --target N [--guardrail \"mfu >= 0.45\"]");
    (*g)->progress = ProgressOf(w, *wl, (*g)->goal);
    return **g;
  });
}

}  // namespace tunectl

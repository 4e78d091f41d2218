// Store: hypotheses, experiments, their verdicts, freeze and the tuning log.
#include <algorithm>
#include <cmath>

#include "core/sequential.h"
#include "core/template.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

namespace {

struct BaselineRef {
  int64_t id = 0;
  std::string state;
  int64_t config_id = 0;
  int config_version = 0;
  ParamValues params;
  WorkloadRow workload;
};

Result<BaselineRef> LoadBaseline(pqxx::work& w, int64_t id) {
  auto r = w.exec_params(
      "SELECT b.id, b.state, b.config_id, c.version, c.params::text, wl.name FROM baselines b "
      "JOIN config_versions c ON c.id = b.config_id JOIN workloads wl ON wl.id = b.workload_id "
      "WHERE b.id = $1",
      id);
  if (r.empty()) return Status::NotFound("baseline " + std::to_string(id) + " not found");
  BaselineRef b;
  b.id = r[0][0].as<int64_t>();
  b.state = r[0][1].as<std::string>();
  b.config_id = r[0][2].as<int64_t>();
  b.config_version = r[0][3].as<int>();
  b.params = JsonToMap(r[0][4].as<std::string>());
  auto wl = LoadWorkload(w, r[0][5].as<std::string>());
  if (!wl.ok()) return wl.status();
  b.workload = *wl;
  return b;
}

// The baseline an experiment or hypothesis compares against: the one named, else the latest
// completed baseline of the workload's current config.
Result<BaselineRef> ResolveBaseline(pqxx::work& w, const std::string& workload, int64_t id) {
  if (id > 0) {
    auto b = LoadBaseline(w, id);
    if (!b.ok()) return b.status();
    if (!workload.empty() && b->workload.name != workload)
      return Status::InvalidArgument("--baseline " + std::to_string(id) + " belongs to workload " +
                                     b->workload.name + ", not " + workload);
    return b;
  }
  auto wl = ResolveWorkload(w, workload);
  if (!wl.ok()) return wl.status();
  auto r = w.exec_params(
      "SELECT id, state FROM baselines WHERE workload_id = $1 AND config_id = $2 AND purpose = "
      "'baseline' ORDER BY id DESC",
      wl->id, wl->config_id);
  for (const auto& row : r)
    if (row[1].as<std::string>() == "completed") return LoadBaseline(w, row[0].as<int64_t>());
  const std::string v = "v" + std::to_string(wl->config_version);
  if (!r.empty() && r[0][1].as<std::string>() == "running")
    return Status::FailedPrecondition("baseline " + r[0][0].as<std::string>() + " of " + wl->name +
                                      " config " + v +
                                      " is still running; wait for it (tunectl baseline show " +
                                      r[0][0].as<std::string>() + ") or pass --baseline ID");
  return Status::FailedPrecondition(
      "workload " + wl->name + " has no completed baseline of its current config " + v +
      "; measure one first: tunectl baseline create --workload " + wl->name + " --wait");
}

std::vector<std::string> VaryArgs(const Change& c) {
  std::vector<std::string> out;
  for (const auto& [k, v] : c.to) out.push_back(k + "=" + v);
  return out;
}

const char* const kExperimentSelect =
    "SELECT e.id, wl.name, e.baseline_id, COALESCE(e.hypothesis_id, 0), "
    "COALESCE(h.expect_text, ''), c.version, e.change::text, e.repeats, e.state, "
    "COALESCE(e.decision, ''), COALESCE(e.verdict::text, ''), "
    "(SELECT count(*) FROM runs r WHERE r.experiment_id = e.id), "
    "(SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.state = 'succeeded'), "
    "(SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.state IN ('failed','lost')), "
    "(SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.state IN "
    "('queued','assigned','running')), "
    "COALESCE(fc.version, 0), COALESCE(e.frozen_by, ''), COALESCE(e.freeze_reason, ''), e.actor, "
    "tunectl_ts(e.created_at), COALESCE(tunectl_ts(e.decided_at), ''), "
    "COALESCE(tunectl_ts(e.frozen_at), ''), COALESCE(a.name, '') "
    "FROM experiments e JOIN workloads wl ON wl.id = e.workload_id "
    "JOIN config_versions c ON c.id = e.control_config_id "
    "LEFT JOIN hypotheses h ON h.id = e.hypothesis_id "
    "LEFT JOIN config_versions fc ON fc.id = e.frozen_config_id "
    "LEFT JOIN agents a ON a.id = e.agent_id ";

Result<ExperimentRow> ExperimentFromRow(const pqxx::row& r) {
  ExperimentRow e;
  e.id = r[0].as<int64_t>();
  e.workload = r[1].as<std::string>();
  e.baseline_id = r[2].as<int64_t>();
  e.hypothesis_id = r[3].as<int64_t>();
  e.hypothesis_expect = r[4].as<std::string>();
  e.config_version = r[5].as<int>();
  auto change = ChangeFromJson(r[6].as<std::string>());
  if (!change.ok()) return change.status();
  e.change = *change;
  e.repeats = r[7].as<int>();
  e.state = r[8].as<std::string>();
  e.decision = r[9].as<std::string>();
  if (const std::string v = r[10].as<std::string>(); !v.empty()) {
    auto verdict = VerdictFromJson(v);
    if (!verdict.ok()) return verdict.status();
    e.verdict = *verdict;
  }
  e.runs_total = r[11].as<int>();
  e.runs_done = r[12].as<int>();
  e.runs_failed = r[13].as<int>();
  e.runs_active = r[14].as<int>();
  e.frozen_version = r[15].as<int>();
  e.frozen_by = r[16].as<std::string>();
  e.freeze_reason = r[17].as<std::string>();
  e.actor = r[18].as<std::string>();
  e.created_at = r[19].as<std::string>();
  e.decided_at = r[20].as<std::string>();
  e.frozen_at = r[21].as<std::string>();
  e.agent = r[22].as<std::string>();
  return e;
}

Result<ExperimentRow> LoadExperiment(pqxx::work& w, int64_t id) {
  auto r = w.exec_params(std::string(kExperimentSelect) + "WHERE e.id = $1", id);
  if (r.empty()) return Status::NotFound("experiment " + std::to_string(id) + " not found");
  return ExperimentFromRow(r[0]);
}

const char* const kHypothesisSelect =
    "SELECT h.id, wl.name, h.baseline_id, h.change::text, h.expect_text, h.evidence, "
    "h.statement, h.actor, tunectl_ts(h.created_at), h.locked_at IS NOT NULL, "
    "COALESCE(h.experiment_id, 0) FROM hypotheses h JOIN workloads wl ON wl.id = h.workload_id ";

HypothesisRow HypothesisFromRow(const pqxx::row& r) {
  HypothesisRow h;
  h.id = r[0].as<int64_t>();
  h.workload = r[1].as<std::string>();
  h.baseline_id = r[2].as<int64_t>();
  auto c = ChangeFromJson(r[3].as<std::string>());
  if (c.ok()) h.change = *c;
  h.expect = r[4].as<std::string>();
  h.evidence = r[5].as<std::string>();
  h.statement = r[6].as<std::string>();
  h.actor = r[7].as<std::string>();
  h.created_at = r[8].as<std::string>();
  h.locked = r[9].as<bool>();
  h.experiment_id = r[10].as<int64_t>();
  return h;
}

json MetricEntry(const MetricVerdict& m) {
  return {{"metric", m.metric},       {"role", m.role},
          {"ratio", m.ratio},         {"effect", FormatEffect(m.ratio)},
          {"ci_low", m.ci_low},       {"ci_high", m.ci_high},
          {"p_value", m.p_value},     {"decision", m.decision},
          {"guardrail", m.guardrail}, {"n_control", m.n_control},
          {"n_variant", m.n_variant}};
}

// Queues pair `pair` (0-based) of an experiment: ABBA order, so control goes first in even
// pairs and second in odd ones, and drift hits both arms alike.
void QueuePair(pqxx::work& w, int64_t experiment, int64_t workload, int64_t config, int pair,
               const std::string params[2], const std::string launches[2],
               const std::string& selector) {
  const int first = pair % 2 == 0 ? 0 : 1;
  int idx = 2 * pair;
  for (int arm : {first, 1 - first}) {
    w.exec_params0(
        "INSERT INTO runs(workload_id, experiment_id, arm, config_id, idx, params, launch, "
        "selector, state, schedule_id, expected_s) SELECT $1,$2,$3,$4,$5,$6::jsonb,$7::jsonb,"
        "$8::jsonb,'queued',e.schedule_id,e.expected_s FROM experiments e WHERE e.id = $2",
        workload, experiment, arm == 0 ? "control" : "variant", config, ++idx, params[arm],
        launches[arm], selector);
  }
}

}  // namespace

namespace internal {

void MaybeDecideExperiment(pqxx::work& w, int64_t experiment_id, const std::string& actor) {
  auto e = w.exec_params(
      "SELECT e.state, wl.spec::text, COALESCE(h.expect_text, ''), e.change::text, wl.id, "
      "e.baseline_id, COALESCE(e.hypothesis_id, 0), COALESCE(h.statement, ''), "
      "COALESCE(h.evidence, ''), e.actor, wl.name, c.version, e.repeats, e.min_pairs, "
      "e.queued_pairs, e.control_config_id "
      "FROM experiments e JOIN workloads wl ON wl.id = e.workload_id "
      "JOIN config_versions c ON c.id = e.control_config_id "
      "LEFT JOIN hypotheses h ON h.id = e.hypothesis_id WHERE e.id = $1",
      experiment_id);
  if (e.empty() || e[0][0].as<std::string>() != "running") return;
  auto active = w.exec_params(
                     "SELECT count(*) FROM runs WHERE experiment_id = $1 AND state IN "
                     "('queued','assigned','running')",
                     experiment_id)[0][0]
                    .as<int>();
  if (active > 0) return;
  auto spec = ParseWorkloadSpec(e[0][1].as<std::string>());
  if (!spec.ok()) return;
  ArmData arms[2];  // control, variant
  for (const auto& r : w.exec_params(
           "SELECT id, arm, state, reason, idx FROM runs WHERE experiment_id = $1 ORDER BY id",
           experiment_id)) {
    ArmData& a = arms[r[1].as<std::string>() == "variant" ? 1 : 0];
    const std::string state = r[2].as<std::string>();
    if (state == "succeeded") {
      ++a.runs;
      auto sums = w.exec_params(
          "SELECT metric, median, usable, warnings FROM run_summaries WHERE run_id = $1 AND "
          "median IS NOT NULL",
          r[0].as<int64_t>());
      bool compared = true;
      for (const auto& s : sums) {
        const MetricSpec* m = spec->FindMetric(s[0].as<std::string>());
        if (m && m->role == MetricRole::kPrimary && !s[2].as<bool>()) {
          compared = false;  // no steady state or a slowdown: marked, not compared
          a.excluded.push_back("run " + r[0].as<std::string>() + ": " + s[3].as<std::string>());
        }
      }
      if (compared) {
        const int pair = (r[4].as<int>() - 1) / 2;  // idx 1,2 = pair 0; 3,4 = pair 1; …
        for (const auto& s : sums) {
          a.values[s[0].as<std::string>()].push_back(s[1].as<double>());
          a.pairs[s[0].as<std::string>()].push_back(pair);
        }
      }
    } else if (state == "failed" || state == "lost") {
      ++a.runs;
      ++a.failed_runs;
      a.failures.push_back("run " + r[0].as<std::string>() + ": " + r[3].as<std::string>());
    }
  }
  // NaN/Inf in a variant's guardrail metric (e.g. a diverged loss) counts as a failure.
  for (const auto& r : w.exec_params(
           "SELECT r.id, rs.metric, rs.nonfinite FROM runs r JOIN run_summaries rs ON rs.run_id = "
           "r.id WHERE r.experiment_id = $1 AND r.arm = 'variant' AND r.state = 'succeeded' AND "
           "rs.nonfinite > 0",
           experiment_id)) {
    const MetricSpec* m = spec->FindMetric(r[1].as<std::string>());
    if (!m || m->role != MetricRole::kGuardrail) continue;
    ++arms[1].failed_runs;
    arms[1].failures.push_back("run " + r[0].as<std::string>() + ": " + r[2].as<std::string>() +
                               " non-finite " + m->name + " value(s)");
  }
  std::optional<Expectation> expect;
  if (const std::string t = e[0][2].as<std::string>(); !t.empty()) {
    auto x = ParseExpectation(*spec, t);
    if (x.ok()) expect = *x;
  }
  SequentialOptions design;
  design.max_pairs = e[0][12].as<int>();
  design.min_pairs = e[0][13].as<int>();
  SequentialStep step = EvaluateSequential(*spec, arms[0], arms[1], expect, design);
  const int queued = e[0][14].as<int>();
  if (!step.stop && queued < design.max_pairs) {
    // Undecided: one more interleaved pair, with the launches the experiment already uses.
    std::string params[2], launches[2];
    for (int arm = 0; arm < 2; ++arm) {
      auto l = w.exec_params1(
          "SELECT params::text, launch::text FROM runs WHERE experiment_id = $1 AND arm = $2 "
          "ORDER BY id LIMIT 1",
          experiment_id, arm == 0 ? "control" : "variant");
      params[arm] = l[0].as<std::string>();
      launches[arm] = l[1].as<std::string>();
    }
    const std::string selector =
        w.exec_params1("SELECT selector::text FROM runs WHERE experiment_id = $1 LIMIT 1",
                       experiment_id)[0]
            .as<std::string>();
    QueuePair(w, experiment_id, e[0][4].as<int64_t>(), e[0][15].as<int64_t>(), queued, params,
              launches, selector);
    w.exec_params0("UPDATE experiments SET queued_pairs = queued_pairs + 1 WHERE id = $1",
                   experiment_id);
    return;
  }
  Verdict v = step.verdict;
  // Drift alarm: the interleaved controls against the baseline's recorded level.
  if (!v.primary.empty()) {
    auto base = w.exec_params(
        "SELECT median FROM baseline_summaries WHERE baseline_id = $1 AND metric = $2",
        e[0][5].as<int64_t>(), v.primary);
    const MetricSpec* pm = spec->FindMetric(v.primary);
    for (const auto& mv : v.metrics) {
      if (mv.metric != v.primary || base.empty() || mv.n_control == 0 || !pm) continue;
      const double level = base[0][0].as<double>();
      const double moved = level != 0 ? mv.control_median / level : 1;
      if (std::fabs(moved - 1) > pm->min_effect)
        v.drift = "the interleaved controls differ from baseline " + e[0][5].as<std::string>() +
                  " by " + FormatEffect(moved) +
                  ": the cluster moved since the baseline; the verdict compares with the controls";
    }
  }
  const std::string verdict_json = VerdictToJson(v);
  w.exec_params0(
      "UPDATE experiments SET state = 'decided', decision = $2, verdict = $3::json, "
      "decided_at = now() WHERE id = $1",
      experiment_id, v.decision, verdict_json);

  auto change = ChangeFromJson(e[0][3].as<std::string>());
  json entry;
  entry["experiment"] = experiment_id;
  entry["workload"] = e[0][10].as<std::string>();
  entry["baseline"] = e[0][5].as<int64_t>();
  entry["config_version"] = e[0][11].as<int>();
  if (change.ok()) {
    entry["params"] = change->Params();
    entry["change"] = change->Describe();
    entry["from"] = change->from;
    entry["to"] = change->to;
    entry["coupled"] = change->coupled;
  }
  if (const int64_t h = e[0][6].as<int64_t>(); h > 0) {
    entry["hypothesis"] = {{"id", h},
                           {"statement", e[0][7].as<std::string>()},
                           {"evidence", e[0][8].as<std::string>()},
                           {"expected", e[0][2].as<std::string>()},
                           {"result", v.hypothesis},
                           {"note", v.hypothesis_note}};
  } else {
    entry["hypothesis"] = nullptr;
  }
  json others = json::array(), guards = json::array();
  for (const auto& m : v.metrics) {
    if (m.metric == v.primary)
      entry["primary"] = MetricEntry(m);
    else
      others.push_back(MetricEntry(m));
    if (m.role == "guardrail")
      guards.push_back({{"metric", m.metric}, {"status", m.guardrail}, {"note", m.note}});
  }
  entry["others"] = others;
  entry["guardrails"] = guards;
  entry["decision"] = v.decision;
  entry["reasons"] = v.reasons;
  entry["started_by"] = e[0][9].as<std::string>();
  entry["decided_by"] = "tunectl validator";
  entry["runs"] = {{"control", arms[0].runs},
                   {"variant", arms[1].runs},
                   {"failed", arms[0].failed_runs + arms[1].failed_runs}};
  w.exec_params0(
      "INSERT INTO tuning_log(workload_id, experiment_id, kind, actor, entry) "
      "VALUES ($1, $2, 'decided', $3, $4::json)",
      e[0][4].as<int64_t>(), experiment_id, e[0][9].as<std::string>(), entry.dump());
  Audit(w, actor, "experiment.decided", "experiment", experiment_id,
        {{"decision", v.decision}, {"hypothesis", v.hypothesis}});
}

Result<ExperimentRow> LoadExperimentById(pqxx::work& w, int64_t id) {
  return LoadExperiment(w, id);
}

Result<int64_t> CreateExperimentTx(pqxx::work& w, const ExperimentIn& in,
                                   const std::string& actor) {
  std::optional<HypothesisRow> hyp;
  if (in.hypothesis_id > 0) {
    auto r = w.exec_params(std::string(kHypothesisSelect) + "WHERE h.id = $1 FOR UPDATE OF h",
                           in.hypothesis_id);
    if (r.empty())
      return Status::NotFound("hypothesis " + std::to_string(in.hypothesis_id) + " not found");
    hyp = HypothesisFromRow(r[0]);
    if (hyp->locked)
      return Status::FailedPrecondition("hypothesis " + std::to_string(hyp->id) +
                                        " is locked: experiment " +
                                        std::to_string(hyp->experiment_id) +
                                        " already tests it. Write a new hypothesis for another "
                                        "try (tunectl hypothesis create …)");
    if (in.baseline_id > 0 && in.baseline_id != hyp->baseline_id)
      return Status::InvalidArgument("--baseline " + std::to_string(in.baseline_id) +
                                     " differs from hypothesis " + std::to_string(hyp->id) +
                                     "'s baseline " + std::to_string(hyp->baseline_id));
  }
  auto b = ResolveBaseline(w, in.workload.empty() && hyp ? hyp->workload : in.workload,
                           in.baseline_id > 0 ? in.baseline_id : (hyp ? hyp->baseline_id : 0));
  if (!b.ok()) return b.status();
  if (b->state != "completed")
    return Status::FailedPrecondition("baseline " + std::to_string(b->id) + " is " + b->state +
                                      "; an experiment compares against a completed baseline");
  const WorkloadSpec& spec = b->workload.spec;
  std::vector<std::string> vary = in.vary;
  if (vary.empty() && hyp) vary = VaryArgs(hyp->change);
  auto change = ParseVary(spec, b->params, vary);
  if (!change.ok()) return change.status();
  if (hyp && change->to != hyp->change.to)
    return Status::InvalidArgument("--vary " + change->Describe() + " differs from hypothesis " +
                                   std::to_string(hyp->id) + " (" + hyp->change.Describe() +
                                   "); drop --vary or write a new hypothesis");
  // --repeats is the cap per arm; the sequential design stops earlier when the answer is clear.
  int repeats = in.repeats == 0 ? std::max(10, 2 * spec.run.repeats) : in.repeats;
  if (repeats < 2 || repeats > 500)
    return Status::InvalidArgument("--repeats: " + std::to_string(repeats) +
                                   " runs per arm is out of range; allowed 2..500 (a verdict "
                                   "needs at least 2 runs on each side)");
  const int min_pairs = std::min(4, repeats);
  ParamValues variant = b->params;
  for (const auto& [k, v] : change->to) variant[k] = v;
  auto control_launch = BindLaunch(spec, b->params);
  if (!control_launch.ok()) return control_launch.status();
  auto variant_launch = BindLaunch(spec, variant);
  if (!variant_launch.ok()) return variant_launch.status();
  // How long one run takes: the median duration of the baseline's runs (0 = unknown).
  const int expected_s =
      w.exec_params1(
           "SELECT COALESCE(ceil(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM "
           "r.finished_at - r.started_at))), 0)::int FROM runs r, baselines b WHERE b.id = $1 AND "
           "r.state = 'succeeded' AND r.started_at IS NOT NULL AND " BASELINE_RUNS,
           b->id)[0]
          .as<int>();
  const int64_t id =
      w.exec_params1(
           "INSERT INTO experiments(workload_id, baseline_id, hypothesis_id, control_config_id, "
           "change, variant_params, repeats, min_pairs, queued_pairs, state, actor, batch_id, "
           "schedule_id, expected_s) VALUES ($1,$2,$3,$4,$5::json,$6::jsonb,$7,$8,$8,'running',$9,"
           "$10,$11,$12) RETURNING id",
           b->workload.id, b->id, hyp ? std::optional<int64_t>(hyp->id) : std::nullopt,
           b->config_id, ChangeToJson(*change), MapToJson(variant), repeats, min_pairs, actor,
           in.batch_id ? std::optional<int64_t>(in.batch_id) : std::nullopt,
           in.schedule_id ? std::optional<int64_t>(in.schedule_id) : std::nullopt, expected_s)[0]
          .as<int64_t>();
  const std::string launches[2] = {LaunchJson(spec, *control_launch),
                                   LaunchJson(spec, *variant_launch)};
  const std::string params[2] = {MapToJson(b->params), MapToJson(variant)};
  for (int pair = 0; pair < min_pairs; ++pair)
    QueuePair(w, id, b->workload.id, b->config_id, pair, params, launches,
              MapToJson(spec.run.selector));
  if (hyp)
    w.exec_params0("UPDATE hypotheses SET locked_at = now(), experiment_id = $2 WHERE id = $1",
                   hyp->id, id);
  Audit(w, actor, "experiment.created", "experiment", id,
        {{"baseline", b->id},
         {"change", change->Describe()},
         {"repeats", repeats},
         {"hypothesis", hyp ? hyp->id : 0}});
  return id;
}

}  // namespace internal

Result<PendingCancelList> Store::PendingCancels(int64_t agent_id) {
  return InTx<PendingCancelList>(pool_, [&](pqxx::work& w) -> Result<PendingCancelList> {
    PendingCancelList out;
    for (const auto& r : w.exec_params(
             "SELECT id, attempt FROM runs WHERE agent_id = $1 AND cancel_requested AND state IN "
             "('assigned','running')",
             agent_id))
      out.push_back({r[0].as<int64_t>(), r[1].as<int>()});
    return out;
  });
}

Result<int64_t> Store::CreateHypothesis(const HypothesisIn& in, const std::string& actor) {
  return InTx<int64_t>(pool_, [&](pqxx::work& w) -> Result<int64_t> {
    auto b = ResolveBaseline(w, in.workload, in.baseline_id);
    if (!b.ok()) return b.status();
    const WorkloadSpec& spec = b->workload.spec;
    auto change = ParseVary(spec, b->params, in.vary);
    if (!change.ok())
      return Status::InvalidArgument(
          std::string(change.status().message()).replace(0, 6, "--param"));
    if (in.expect.empty())
      return Status::InvalidArgument(
          "--expect: missing; say what should happen, e.g. --expect \"samples_per_s +10%\"");
    auto expect = ParseExpectation(spec, in.expect);
    if (!expect.ok()) return expect.status();
    const int64_t id =
        w.exec_params1(
             "INSERT INTO hypotheses(workload_id, baseline_id, change, expect_metric, "
             "expect_direction, expect_size, expect_text, evidence, statement, actor) "
             "VALUES ($1,$2,$3::json,$4,$5,$6,$7,$8,$9,$10) RETURNING id",
             b->workload.id, b->id, ChangeToJson(*change), expect->metric, expect->direction,
             expect->size, expect->text, in.evidence, in.statement, actor)[0]
            .as<int64_t>();
    Audit(w, actor, "hypothesis.created", "hypothesis", id,
          {{"baseline", b->id}, {"change", change->Describe()}, {"expect", expect->text}});
    return id;
  });
}

Result<HypothesisRow> Store::GetHypothesis(int64_t id) {
  return InTx<HypothesisRow>(pool_, [&](pqxx::work& w) -> Result<HypothesisRow> {
    auto r = w.exec_params(std::string(kHypothesisSelect) + "WHERE h.id = $1", id);
    if (r.empty()) return Status::NotFound("hypothesis " + std::to_string(id) + " not found");
    return HypothesisFromRow(r[0]);
  });
}

Result<std::vector<HypothesisRow>> Store::ListHypotheses(const std::string& workload) {
  return InTx<std::vector<HypothesisRow>>(
      pool_, [&](pqxx::work& w) -> Result<std::vector<HypothesisRow>> {
        if (!workload.empty()) {
          auto wl = LoadWorkload(w, workload);
          if (!wl.ok()) return wl.status();
        }
        std::vector<HypothesisRow> out;
        for (const auto& r : w.exec_params(
                 std::string(kHypothesisSelect) + "WHERE $1 = '' OR wl.name = $1 ORDER BY h.id",
                 workload))
          out.push_back(HypothesisFromRow(r));
        return out;
      });
}

Result<int64_t> Store::CreateExperiment(const ExperimentIn& in, const std::string& actor) {
  return InTx<int64_t>(pool_, [&](pqxx::work& w) { return CreateExperimentTx(w, in, actor); });
}

Result<ExperimentRow> Store::GetExperiment(int64_t id) {
  return InTx<ExperimentRow>(pool_, [&](pqxx::work& w) { return LoadExperiment(w, id); });
}

Result<std::vector<ExperimentRow>> Store::ListExperiments(const std::string& workload) {
  return InTx<std::vector<ExperimentRow>>(
      pool_, [&](pqxx::work& w) -> Result<std::vector<ExperimentRow>> {
        if (!workload.empty()) {
          auto wl = LoadWorkload(w, workload);
          if (!wl.ok()) return wl.status();
        }
        std::vector<ExperimentRow> out;
        for (const auto& r : w.exec_params(
                 std::string(kExperimentSelect) + "WHERE $1 = '' OR wl.name = $1 ORDER BY e.id",
                 workload)) {
          auto e = ExperimentFromRow(r);
          if (!e.ok()) return e.status();
          out.push_back(*e);
        }
        return out;
      });
}

Result<ExperimentRow> Store::CancelExperiment(int64_t id, const std::string& actor) {
  return InTx<ExperimentRow>(pool_, [&](pqxx::work& w) -> Result<ExperimentRow> {
    auto st = w.exec_params("SELECT state FROM experiments WHERE id = $1 FOR UPDATE", id);
    if (st.empty()) return Status::NotFound("experiment " + std::to_string(id) + " not found");
    if (st[0][0].as<std::string>() != "running")
      return Status::FailedPrecondition("experiment " + std::to_string(id) + " is " +
                                        st[0][0].as<std::string>() +
                                        "; only a running one can be cancelled");
    w.exec_params0("UPDATE experiments SET state = 'cancelled' WHERE id = $1", id);
    w.exec_params0(
        "UPDATE runs SET state = 'cancelled', finished_at = now(), reason = 'experiment cancelled' "
        "WHERE experiment_id = $1 AND state = 'queued'",
        id);
    w.exec_params0(
        "UPDATE runs SET cancel_requested = true, cancel_reason = '' WHERE experiment_id = $1 AND "
        "state IN "
        "('assigned','running')",
        id);
    Audit(w, actor, "experiment.cancelled", "experiment", id, json::object());
    return LoadExperiment(w, id);
  });
}

Result<ExperimentRow> Store::FreezeExperiment(int64_t id, bool force, const std::string& reason,
                                              const std::string& actor) {
  return InTx<ExperimentRow>(pool_, [&](pqxx::work& w) -> Result<ExperimentRow> {
    auto r = w.exec_params(
        "SELECT e.state, COALESCE(e.decision, ''), e.control_config_id, e.workload_id, "
        "e.variant_params::text, e.change::text, c.version, wl.name, wl.spec::text, "
        "COALESCE(fc.version, 0) FROM experiments e JOIN config_versions c ON "
        "c.id = e.control_config_id JOIN workloads wl ON wl.id = e.workload_id LEFT JOIN "
        "config_versions fc ON fc.id = e.frozen_config_id WHERE e.id = $1 FOR UPDATE OF e",
        id);
    const std::string ex = "experiment " + std::to_string(id);
    if (r.empty()) return Status::NotFound(ex + " not found");
    const std::string state = r[0][0].as<std::string>(), decision = r[0][1].as<std::string>();
    if (state == "running")
      return Status::FailedPrecondition(
          ex + " is still running; wait for its verdict (tunectl experiment show " +
          std::to_string(id) + ")");
    if (state == "frozen")
      return Status::FailedPrecondition(ex + " is already frozen as config v" +
                                        r[0][9].as<std::string>());
    if (state != "decided")
      return Status::FailedPrecondition(ex + " is " + state +
                                        "; only a decided experiment freezes");
    if (force && reason.empty())
      return Status::InvalidArgument(
          "--reason: missing; a forced freeze records why, e.g. --force --reason \"needed for the "
          "release\"");
    if (decision != "improved" && !force)
      return Status::FailedPrecondition(
          ex + " was decided " + decision +
          ", not improved; only an improved experiment "
          "freezes. To freeze it anyway, record why: tunectl experiment freeze " +
          std::to_string(id) + " --force --reason \"…\"");
    const int64_t control_cfg = r[0][2].as<int64_t>(), workload_id = r[0][3].as<int64_t>();
    auto cur = w.exec_params1(
        "SELECT id, version FROM config_versions WHERE workload_id = $1 AND is_current FOR UPDATE",
        workload_id);
    if (cur[0].as<int64_t>() != control_cfg)
      return Status::FailedPrecondition(
          ex + " compared against config v" + r[0][6].as<std::string>() + ", but " +
          r[0][7].as<std::string>() + "'s current config is v" + cur[1].as<std::string>() +
          "; a freeze applies one change to the config it was measured on. Re-run it against "
          "the current config: tunectl experiment run --workload " +
          r[0][7].as<std::string>() + " --vary …");
    const int version =
        w.exec_params1("SELECT max(version) + 1 FROM config_versions WHERE workload_id = $1",
                       workload_id)[0]
            .as<int>();
    json change = json::parse(r[0][5].as<std::string>());
    change["experiment"] = id;
    if (force) change["forced"] = reason;
    w.exec_params0("UPDATE config_versions SET is_current = false WHERE id = $1", control_cfg);
    const int64_t cfg =
        w.exec_params1(
             "INSERT INTO config_versions(workload_id, version, params, parent_id, change) "
             "VALUES ($1, $2, $3::jsonb, $4, $5::jsonb) RETURNING id",
             workload_id, version, r[0][4].as<std::string>(), control_cfg, change.dump())[0]
            .as<int64_t>();
    // The variant runs are the new version's measured level.
    auto spec = ParseWorkloadSpec(r[0][8].as<std::string>());
    const int n =
        w.exec_params1(
             "SELECT count(*) FROM runs WHERE experiment_id = $1 AND arm = 'variant' AND state = "
             "'succeeded'",
             id)[0]
            .as<int>();
    const int64_t bid =
        w.exec_params1(
             "INSERT INTO baselines(workload_id, config_id, repeats, state, actor, finished_at, "
             "source_experiment_id) VALUES ($1, $2, $3, 'completed', $4, now(), $5) RETURNING id",
             workload_id, cfg, std::max(1, n), actor, id)[0]
            .as<int64_t>();
    if (spec.ok()) {
      for (const auto& m : spec->metrics) {
        std::vector<double> medians;
        for (const auto& row : w.exec_params(
                 "SELECT rs.median FROM run_summaries rs JOIN runs r ON r.id = rs.run_id WHERE "
                 "r.experiment_id = $1 AND r.arm = 'variant' AND r.state = 'succeeded' AND "
                 "rs.metric = $2 AND rs.median IS NOT NULL",
                 id, m.name))
          medians.push_back(row[0].as<double>());
        Descriptive d = Describe(medians);
        if (d.n == 0) continue;
        w.exec_params0(
            "INSERT INTO baseline_summaries(baseline_id, metric, n, median, mean, stddev, cv, "
            "min, max) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
            bid, m.name, d.n, d.median, d.mean, d.stddev, d.cv, d.min, d.max);
      }
    }
    w.exec_params0(
        "UPDATE experiments SET state = 'frozen', frozen_config_id = $2, frozen_at = now(), "
        "frozen_by = $3, freeze_reason = $4 WHERE id = $1",
        id, cfg, actor, force ? std::optional<std::string>(reason) : std::nullopt);
    json entry = {{"experiment", id}, {"version", version}, {"baseline", bid},
                  {"forced", force},  {"reason", reason},   {"decision", decision}};
    w.exec_params0(
        "INSERT INTO tuning_log(workload_id, experiment_id, kind, actor, entry) "
        "VALUES ($1, $2, 'frozen', $3, $4::json)",
        workload_id, id, actor, entry.dump());
    Audit(w, actor, "config.frozen", "experiment", id,
          {{"version", version}, {"forced", force}, {"reason", reason}, {"baseline", bid}});
    return LoadExperiment(w, id);
  });
}

Result<ConfigRow> Store::GetConfig(const std::string& workload) {
  return InTx<ConfigRow>(pool_, [&](pqxx::work& w) -> Result<ConfigRow> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    ConfigRow c;
    c.workload = wl->name;
    c.spec_json = wl->spec_json;
    for (const auto& r : w.exec_params(
             "SELECT version, params::text, COALESCE(change::text, ''), tunectl_ts(created_at), "
             "is_current FROM config_versions WHERE workload_id = $1 ORDER BY version",
             wl->id)) {
      ConfigVersionRow v;
      v.version = r[0].as<int>();
      v.params = JsonToMap(r[1].as<std::string>());
      v.created_at = r[3].as<std::string>();
      v.current = r[4].as<bool>();
      if (const std::string ch = r[2].as<std::string>(); !ch.empty()) {
        auto j = json::parse(ch, nullptr, false);
        if (j.contains("to")) {
          auto parsed = ChangeFromJson(ch);
          if (parsed.ok()) v.change = *parsed;
        }
        v.experiment_id = j.value("experiment", int64_t{0});
        v.reason = j.contains("forced") ? "forced: " + j.value("forced", std::string())
                                        : j.value("reason", std::string());
      } else {
        v.reason = "workload defaults";
      }
      c.lineage.push_back(v);
    }
    return c;
  });
}

Result<std::vector<LogRow>> Store::ListLog(const std::string& workload, const std::string& param) {
  return InTx<std::vector<LogRow>>(pool_, [&](pqxx::work& w) -> Result<std::vector<LogRow>> {
    if (!workload.empty()) {
      auto wl = LoadWorkload(w, workload);
      if (!wl.ok()) return wl.status();
    }
    std::vector<LogRow> out;
    for (const auto& r : w.exec_params(
             "SELECT COALESCE(l.experiment_id, 0), wl.name, tunectl_ts(l.at), l.actor, "
             "l.entry::text, (SELECT f.entry::text FROM tuning_log f WHERE f.experiment_id = "
             "l.experiment_id AND f.kind = 'frozen' ORDER BY f.id DESC LIMIT 1), l.kind "
             "FROM tuning_log l JOIN workloads wl ON wl.id = l.workload_id "
             "WHERE l.kind IN ('decided', 'regression', 'resolved') AND ($1 = '' OR wl.name = $1) "
             "ORDER BY l.id",
             workload)) {
      LogRow row;
      row.experiment_id = r[0].as<int64_t>();
      row.workload = r[1].as<std::string>();
      row.at = r[2].as<std::string>();
      row.actor = r[3].as<std::string>();
      row.entry_json = r[4].as<std::string>();
      row.kind = r[6].as<std::string>();
      if (!param.empty()) {
        auto j = json::parse(row.entry_json, nullptr, false);
        if (!j.contains("to") || !j["to"].contains(param)) continue;
      }
      if (!r[5].is_null()) {
        auto f = json::parse(r[5].as<std::string>(), nullptr, false);
        row.frozen = "v" + std::to_string(f.value("version", 0));
        if (f.value("forced", false))
          row.frozen += " (forced: " + f.value("reason", std::string()) + ")";
      }
      out.push_back(row);
    }
    return out;
  });
}

}  // namespace tunectl

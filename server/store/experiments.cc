// Store: hypotheses, experiments, their verdicts, freeze and the tuning log.
#include <algorithm>
#include <cmath>
#include <set>

#include "core/decisions.h"
#include "core/launch.h"
#include "core/placement.h"
#include "core/sequential.h"
#include "core/template.h"
#include "core/tuning_log.h"
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
      "SELECT b.id AS id, b.state AS state, b.config_id AS config_id, c.version AS version, "
      "c.params::text AS params, wl.name AS workload FROM baselines b JOIN config_versions c ON "
      "c.id = b.config_id JOIN workloads wl ON wl.id = b.workload_id WHERE b.id = $1",
      id);
  if (r.empty()) return Status::NotFound("baseline " + std::to_string(id) + " not found");
  BaselineRef b;
  b.id = r[0]["id"].as<int64_t>();
  b.state = r[0]["state"].as<std::string>();
  b.config_id = r[0]["config_id"].as<int64_t>();
  b.config_version = r[0]["version"].as<int>();
  b.params = JsonToMap(r[0]["params"].as<std::string>());
  auto wl = LoadWorkload(w, r[0]["workload"].as<std::string>());
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
    "SELECT e.id AS id, wl.name AS workload, e.baseline_id AS baseline_id, "
    "COALESCE(e.hypothesis_id, 0) AS hypothesis_id, COALESCE(h.expect_text, '') AS "
    "hypothesis_expect, c.version AS config_version, e.change::text AS change, e.repeats AS "
    "repeats, e.state AS state, COALESCE(e.decision, '') AS decision, "
    "COALESCE(e.verdict::text, '') AS verdict, (SELECT count(*) FROM runs r WHERE "
    "r.experiment_id = e.id) AS runs_total, (SELECT count(*) FROM runs r WHERE "
    "r.experiment_id = e.id AND r.state = 'succeeded') AS runs_done, (SELECT count(*) FROM "
    "runs r WHERE r.experiment_id = e.id AND r.state IN {failed}) AS runs_failed, (SELECT "
    "count(*) FROM runs r WHERE r.experiment_id = e.id AND r.state IN {active}) AS "
    "runs_active, COALESCE(fc.version, 0) AS frozen_version, COALESCE(e.frozen_by, '') AS "
    "frozen_by, COALESCE(e.freeze_reason, '') AS freeze_reason, e.actor AS actor, "
    "tunectl_ts(e.created_at) AS created_at, COALESCE(tunectl_ts(e.decided_at), '') AS "
    "decided_at, COALESCE(tunectl_ts(e.frozen_at), '') AS frozen_at, COALESCE(a.name, '') AS "
    "agent, e.spec_revision AS spec_revision, COALESCE(e.batch_id, 0) AS batch_id, "
    "COALESCE(e.again_reason, '') AS again_reason FROM "
    "experiments e JOIN workloads wl ON wl.id = e.workload_id JOIN config_versions c ON c.id "
    "= e.control_config_id LEFT JOIN hypotheses h ON h.id = e.hypothesis_id LEFT JOIN "
    "config_versions fc ON fc.id = e.frozen_config_id LEFT JOIN agents a ON a.id = "
    "e.agent_id ";

Result<ExperimentRow> ExperimentFromRow(const pqxx::row& r) {
  ExperimentRow e;
  e.id = r["id"].as<int64_t>();
  e.workload = r["workload"].as<std::string>();
  e.baseline_id = r["baseline_id"].as<int64_t>();
  e.hypothesis_id = r["hypothesis_id"].as<int64_t>();
  e.hypothesis_expect = r["hypothesis_expect"].as<std::string>();
  e.config_version = r["config_version"].as<int>();
  auto change = ChangeFromJson(r["change"].as<std::string>());
  if (!change.ok()) return change.status();
  e.change = *change;
  e.repeats = r["repeats"].as<int>();
  e.state = r["state"].as<std::string>();
  e.decision = r["decision"].as<std::string>();
  if (const std::string v = r["verdict"].as<std::string>(); !v.empty()) {
    auto verdict = VerdictFromJson(v);
    if (!verdict.ok()) return verdict.status();
    e.verdict = *verdict;
  }
  e.runs_total = r["runs_total"].as<int>();
  e.runs_done = r["runs_done"].as<int>();
  e.runs_failed = r["runs_failed"].as<int>();
  e.runs_active = r["runs_active"].as<int>();
  e.frozen_version = r["frozen_version"].as<int>();
  e.frozen_by = r["frozen_by"].as<std::string>();
  e.freeze_reason = r["freeze_reason"].as<std::string>();
  e.actor = r["actor"].as<std::string>();
  e.created_at = r["created_at"].as<std::string>();
  e.decided_at = r["decided_at"].as<std::string>();
  e.frozen_at = r["frozen_at"].as<std::string>();
  e.agent = r["agent"].as<std::string>();
  e.spec_revision = r["spec_revision"].as<int>();
  e.batch_id = r["batch_id"].as<int64_t>();
  e.again_reason = r["again_reason"].as<std::string>();
  return e;
}

Result<ExperimentRow> LoadExperiment(pqxx::work& w, int64_t id) {
  auto r = w.exec_params(Sql(kExperimentSelect) + "WHERE e.id = $1", id);
  if (r.empty()) return Status::NotFound("experiment " + std::to_string(id) + " not found");
  return ExperimentFromRow(r[0]);
}

const char* const kHypothesisSelect =
    "SELECT h.id AS id, wl.name AS workload, h.baseline_id AS baseline_id, h.change::text AS "
    "change, h.expect_text AS expect, h.evidence AS evidence, h.statement AS statement, "
    "h.actor AS actor, tunectl_ts(h.created_at) AS created_at, h.locked_at IS NOT NULL AS "
    "locked, COALESCE(h.experiment_id, 0) AS experiment_id FROM hypotheses h JOIN workloads "
    "wl ON wl.id = h.workload_id ";

HypothesisRow HypothesisFromRow(const pqxx::row& r) {
  HypothesisRow h;
  h.id = r["id"].as<int64_t>();
  h.workload = r["workload"].as<std::string>();
  h.baseline_id = r["baseline_id"].as<int64_t>();
  auto c = ChangeFromJson(r["change"].as<std::string>());
  if (c.ok()) h.change = *c;
  h.expect = r["expect"].as<std::string>();
  h.evidence = r["evidence"].as<std::string>();
  h.statement = r["statement"].as<std::string>();
  h.actor = r["actor"].as<std::string>();
  h.created_at = r["created_at"].as<std::string>();
  h.locked = r["locked"].as<bool>();
  h.experiment_id = r["experiment_id"].as<int64_t>();
  return h;
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

namespace {

const char kDecisionInputsSelect[] =
    "SELECT e.state, e.workload_id, e.spec_revision, COALESCE(h.expect_text, '') AS expect, "
    "e.repeats, e.min_pairs, e.queued_pairs, e.control_config_id, e.baseline_id, "
    "COALESCE(e.batch_id, 0) AS batch_id FROM experiments e "
    "LEFT JOIN hypotheses h ON h.id = e.hypothesis_id WHERE e.id = $1";

// What a verdict on experiment row `e` (kDecisionInputsSelect) is computed from, beside its runs.
struct DecisionInputs {
  WorkloadSpec spec;
  std::optional<Expectation> expect;
  SequentialOptions design;
};
Result<DecisionInputs> LoadDecisionInputs(pqxx::work& w, const pqxx::row& e) {
  auto spec = LoadSpecRevision(w, e["workload_id"].as<int64_t>(), e["spec_revision"].as<int>());
  if (!spec.ok()) return spec.status();
  DecisionInputs in;
  in.spec = std::move(*spec);
  if (const std::string t = e["expect"].as<std::string>(); !t.empty()) {
    auto x = ParseExpectation(in.spec, t);
    if (x.ok()) in.expect = *x;
  }
  in.design.max_pairs = e["repeats"].as<int>();
  in.design.min_pairs = e["min_pairs"].as<int>();
  return in;
}

}  // namespace

void MaybeDecideExperiment(pqxx::work& w, int64_t experiment_id, const std::string& actor) {
  auto e = w.exec_params(kDecisionInputsSelect, experiment_id);
  if (e.empty() || e[0]["state"].as<std::string>() != Name(ExperimentState::kRunning)) return;
  const std::vector<RunFacts> runs = LoadRunFacts(w, "r.experiment_id = $1", experiment_id);
  bool active = false, failed = false;
  for (const auto& r : runs) {
    active |= IsActive(r.state);
    failed |= r.state == RunState::kFailed || r.state == RunState::kLost;
  }
  // With runs still active only a failure can end it early (the same cause twice).
  if (active && !failed) return;
  const int64_t workload_id = e[0]["workload_id"].as<int64_t>();
  auto inputs = LoadDecisionInputs(w, e[0]);
  if (!inputs.ok()) return;
  const WorkloadSpec* spec = &inputs->spec;
  const Arms arms = BuildArms(*spec, runs);
  const std::optional<Expectation>& expect = inputs->expect;
  const SequentialOptions& design = inputs->design;
  SequentialStep step = EvaluateSequential(*spec, arms.control, arms.variant, expect, design);
  if (active) {
    if (!step.stop || step.verdict.stopped.empty()) return;
    // Stopped at once (e.g. the variant died twice of OOM): the rest would waste node-hours.
    const std::string why = "experiment stopped: " + step.verdict.stopped;
    w.exec_params0(
        "UPDATE runs SET state = 'cancelled', finished_at = tunectl_now(), reason = $2 WHERE "
        "experiment_id = $1 AND state = 'queued'",
        experiment_id, why);
    w.exec_params0(Sql("UPDATE runs SET cancel_requested = true, cancel_reason = '' WHERE "
                       "experiment_id = $1 AND state IN {held}"),
                   experiment_id);
  }
  const int queued = e[0]["queued_pairs"].as<int>();
  if (!step.stop && queued < design.max_pairs) {
    // Undecided: one more interleaved pair, with the launches the experiment already uses.
    std::string params[2], launches[2];
    for (int arm = 0; arm < 2; ++arm) {
      auto l = w.exec_params1(
          "SELECT params::text AS params, launch::text AS launch FROM runs WHERE experiment_id = "
          "$1 AND arm = $2 ORDER BY id LIMIT 1",
          experiment_id, arm == 0 ? "control" : "variant");
      params[arm] = l["params"].as<std::string>();
      launches[arm] = l["launch"].as<std::string>();
    }
    const std::string selector =
        w.exec_params1("SELECT selector::text FROM runs WHERE experiment_id = $1 LIMIT 1",
                       experiment_id)[0]
            .as<std::string>();
    QueuePair(w, experiment_id, workload_id, e[0]["control_config_id"].as<int64_t>(), queued,
              params, launches, selector);
    w.exec_params0("UPDATE experiments SET queued_pairs = queued_pairs + 1 WHERE id = $1",
                   experiment_id);
    return;
  }
  Verdict v = step.verdict;
  v.advice = AdviseExclusions(*spec, runs);
  const int64_t baseline_id = e[0]["baseline_id"].as<int64_t>();
  std::optional<double> level;
  if (!v.primary.empty()) {
    auto base = w.exec_params(
        "SELECT median FROM baseline_summaries WHERE baseline_id = $1 AND metric = $2", baseline_id,
        v.primary);
    if (!base.empty()) level = base[0]["median"].as<double>();
  }
  v.drift = DriftNote(v, *spec, level, baseline_id);
  if (const int64_t batch = e[0]["batch_id"].as<int64_t>(); batch > 0) {
    // A batch member: its decision is made across the batch, once every member is measured.
    w.exec_params0("UPDATE experiments SET state = 'measured', verdict = $2::json WHERE id = $1",
                   experiment_id, VerdictToJson(v));
    Audit(w, actor, "experiment.measured", "experiment", experiment_id,
          {{"decision_before_correction", v.decision}, {"batch", batch}});
    MaybeFinishBatch(w, batch, actor);
    return;
  }
  RecordDecision(w, experiment_id, v, actor);
}

void RecordDecision(pqxx::work& w, int64_t experiment_id, const Verdict& v,
                    const std::string& actor) {
  auto e = w.exec_params(
      "SELECT e.workload_id, wl.name AS workload, e.baseline_id, c.version, e.spec_revision, "
      "e.change::text AS change, COALESCE(e.hypothesis_id, 0) AS hypothesis_id, "
      "COALESCE(h.statement, '') AS statement, COALESCE(h.evidence, '') AS evidence, "
      "COALESCE(h.expect_text, '') AS expect, e.actor, COALESCE(e.batch_id, 0) AS batch_id, "
      "COALESCE(e.again_reason, '') AS again_reason FROM experiments e JOIN workloads wl ON wl.id "
      "= e.workload_id "
      "JOIN config_versions c ON c.id = e.control_config_id "
      "LEFT JOIN hypotheses h ON h.id = e.hypothesis_id WHERE e.id = $1",
      experiment_id);
  if (e.empty()) return;
  const auto& row = e[0];
  w.exec_params0(
      "UPDATE experiments SET state = 'decided', decision = $2, verdict = $3::json, "
      "decided_at = tunectl_now() WHERE id = $1",
      experiment_id, v.decision, VerdictToJson(v));
  DecidedEntryIn in;
  in.experiment = experiment_id;
  in.workload = row["workload"].as<std::string>();
  in.baseline = row["baseline_id"].as<int64_t>();
  in.config_version = row["version"].as<int>();
  in.spec_revision = row["spec_revision"].as<int>();
  if (auto change = ChangeFromJson(row["change"].as<std::string>()); change.ok())
    in.change = *change;
  if (const int64_t h = row["hypothesis_id"].as<int64_t>(); h > 0)
    in.hypothesis =
        HypothesisRef{h, row["statement"].as<std::string>(), row["evidence"].as<std::string>(),
                      row["expect"].as<std::string>()};
  in.verdict = v;
  in.started_by = row["actor"].as<std::string>();
  in.batch = row["batch_id"].as<int64_t>();
  in.again_reason = row["again_reason"].as<std::string>();
  auto counts = w.exec_params1(
      Sql("SELECT count(*) FILTER (WHERE arm = 'control' AND (state = 'succeeded' OR state IN "
          "{failed})) AS control, count(*) FILTER (WHERE arm = 'variant' AND (state = 'succeeded' "
          "OR state IN {failed})) AS variant, count(*) FILTER (WHERE state IN {failed}) AS failed "
          "FROM runs WHERE experiment_id = $1"),
      experiment_id);
  in.control_runs = counts["control"].as<int>();
  in.variant_runs = counts["variant"].as<int>();
  in.failed_runs = counts["failed"].as<int>();
  AppendLog(w, row["workload_id"].as<int64_t>(), experiment_id, LogKind::kDecided, in.started_by,
            DecidedEntry(in));
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
  // An archived workload is refused first, before what its baselines would say.
  if (const std::string& named = in.workload.empty() && hyp ? hyp->workload : in.workload;
      !named.empty()) {
    auto wl = LoadWorkload(w, named);
    if (!wl.ok()) return wl.status();
    if (Status st = CheckNotArchived(wl->name, wl->archived(), "a new experiment"); !st.ok())
      return st;
  }
  auto b = ResolveBaseline(w, in.workload.empty() && hyp ? hyp->workload : in.workload,
                           in.baseline_id > 0 ? in.baseline_id : (hyp ? hyp->baseline_id : 0));
  if (!b.ok()) return b.status();
  if (b->state != "completed")
    return Status::FailedPrecondition("baseline " + std::to_string(b->id) + " is " + b->state +
                                      "; an experiment compares against a completed baseline");
  if (Status st = CheckNotArchived(b->workload.name, b->workload.archived(), "a new experiment");
      !st.ok())
    return st;
  const WorkloadSpec& spec = b->workload.spec;
  std::vector<std::string> vary = in.vary;
  if (vary.empty() && hyp) vary = VaryArgs(hyp->change);
  auto change = ParseVary(spec, b->params, vary);
  if (!change.ok()) return change.status();
  if (hyp && change->to != hyp->change.to)
    return Status::InvalidArgument("--vary " + change->Describe() + " differs from hypothesis " +
                                   std::to_string(hyp->id) + " (" + hyp->change.Describe() +
                                   "); drop --vary or write a new hypothesis");
  ParamValues variant = b->params;
  for (const auto& [k, v] : change->to) variant[k] = v;
  // The tuning log's memory: the same change on the same config, tried before.
  std::vector<EarlierTry> earlier;
  for (const auto& r : w.exec_params(
           "SELECT id, state, COALESCE(decision, ''), COALESCE(verdict::text, ''), "
           "COALESCE(tunectl_ts(decided_at), '') FROM experiments WHERE control_config_id = $1 "
           "AND variant_params = $2::jsonb ORDER BY id DESC",
           b->config_id, MapToJson(variant))) {
    EarlierTry e;
    e.experiment = r[0].as<int64_t>();
    e.state = ParseExperimentState(r[1].as<std::string>()).value_or(ExperimentState::kClosed);
    e.decision = r[2].as<std::string>();
    if (auto v = VerdictFromJson(r[3].as<std::string>()); v.ok()) {
      e.effect = PrimaryEffect(*v);
      if (!v->decision.empty()) e.decision = v->decision;  // final, after a batch's correction
    }
    e.decided_at = r[4].as<std::string>();
    earlier.push_back(std::move(e));
  }
  if (auto st = CheckRepeatedChange(earlier, change->Describe(), b->config_version, in.again,
                                    in.again_reason);
      !st.ok())
    return st;
  // --repeats is the cap per arm; the sequential design stops earlier when the answer is clear.
  auto size = SizeExperiment(in.repeats, spec);
  if (!size.ok()) return size.status();
  const int repeats = size->max_pairs;
  const int min_pairs = size->first_pairs;
  auto control_launch = BindLaunch(spec, b->params);
  if (!control_launch.ok()) return control_launch.status();
  auto variant_launch = BindLaunch(spec, variant);
  if (!variant_launch.ok()) return variant_launch.status();
  // How long one run takes: the median duration of the baseline's counting runs (0 = unknown).
  const int expected_s = ExpectedRunSeconds(
      spec,
      LoadRunFacts(w, "EXISTS (SELECT 1 FROM baselines b WHERE b.id = $1 AND " BASELINE_RUNS ")",
                   b->id));
  const int64_t id =
      w.exec_params1(
           "INSERT INTO experiments(workload_id, baseline_id, hypothesis_id, control_config_id, "
           "change, variant_params, repeats, min_pairs, queued_pairs, state, actor, batch_id, "
           "schedule_id, expected_s, spec_revision, again_reason) VALUES ($1,$2,$3,$4,$5::json,"
           "$6::jsonb,$7,$8,$8,'running',$9,$10,$11,$12,$13,$14) RETURNING id",
           b->workload.id, b->id, hyp ? std::optional<int64_t>(hyp->id) : std::nullopt,
           b->config_id, ChangeToJson(*change), MapToJson(variant), repeats, min_pairs, actor,
           in.batch_id ? std::optional<int64_t>(in.batch_id) : std::nullopt,
           in.schedule_id ? std::optional<int64_t>(in.schedule_id) : std::nullopt, expected_s,
           b->workload.spec_revision,
           in.again ? std::optional<std::string>(in.again_reason) : std::nullopt)[0]
          .as<int64_t>();
  const std::string launches[2] = {LaunchRecordToJson(MakeLaunchRecord(spec, *control_launch)),
                                   LaunchRecordToJson(MakeLaunchRecord(spec, *variant_launch))};
  const std::string params[2] = {MapToJson(b->params), MapToJson(variant)};
  for (int pair = 0; pair < min_pairs; ++pair)
    QueuePair(w, id, b->workload.id, b->config_id, pair, params, launches,
              MapToJson(spec.run.selector));
  if (hyp)
    w.exec_params0(
        "UPDATE hypotheses SET locked_at = tunectl_now(), experiment_id = $2 WHERE id = $1",
        hyp->id, id);
  Audit(w, actor, "experiment.created", "experiment", id,
        {{"baseline", b->id},
         {"change", change->Describe()},
         {"repeats", repeats},
         {"again_reason", in.again ? in.again_reason : ""},
         {"hypothesis", hyp ? hyp->id : 0}});
  return id;
}

}  // namespace internal

Result<int64_t> Store::CreateHypothesis(const HypothesisIn& in, const std::string& actor) {
  return InTxOnce(
      pool_, clock_, in.request_id, "hypothesis", [&](pqxx::work& w) -> Result<int64_t> {
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
  return InTx<HypothesisRow>(pool_, clock_, [&](pqxx::work& w) -> Result<HypothesisRow> {
    auto r = w.exec_params(std::string(kHypothesisSelect) + "WHERE h.id = $1", id);
    if (r.empty()) return Status::NotFound("hypothesis " + std::to_string(id) + " not found");
    HypothesisRow h = HypothesisFromRow(r[0]);
    // The tuning log's memory: every experiment that changed one of the same parameters.
    std::vector<std::string> params;
    for (const auto& [k, v] : h.change.to) params.push_back(k);
    for (const auto& e : w.exec_params(
             "SELECT e.id, e.state, COALESCE(e.decision, ''), COALESCE(e.verdict::text, ''), "
             "e.change::text, c.version FROM experiments e JOIN config_versions c ON c.id = "
             "e.control_config_id JOIN hypotheses h ON h.id = $1 WHERE e.workload_id = "
             "h.workload_id AND e.id IS DISTINCT FROM h.experiment_id AND (e.change::jsonb -> "
             "'to') ?| $2::text[] ORDER BY e.id",
             id, PgArray(params))) {
      EarlierTry t;
      t.experiment = e[0].as<int64_t>();
      t.state = ParseExperimentState(e[1].as<std::string>()).value_or(ExperimentState::kClosed);
      t.decision = e[2].as<std::string>();
      if (auto v = VerdictFromJson(e[3].as<std::string>()); v.ok()) {
        t.effect = PrimaryEffect(*v);
        if (!v->decision.empty()) t.decision = v->decision;
      }
      if (auto c = ChangeFromJson(e[4].as<std::string>()); c.ok()) t.change = c->Describe();
      t.config_version = e[5].as<int>();
      h.earlier.push_back(DescribeTry(t));
    }
    return h;
  });
}

Result<Paged<HypothesisRow>> Store::ListHypotheses(const std::string& workload, const Page& page) {
  return InTx<Paged<HypothesisRow>>(
      pool_, clock_, [&](pqxx::work& w) -> Result<Paged<HypothesisRow>> {
        std::string where = "true";
        if (!workload.empty()) {
          auto wl = LoadWorkload(w, workload);
          if (!wl.ok()) return wl.status();
          where = "h.workload_id = " + std::to_string(wl->id);
        }
        std::vector<HypothesisRow> rows;
        for (const auto& r :
             w.exec(std::string(kHypothesisSelect) + "WHERE " + where +
                    PageWhere(page, "h.id", "h.created_at") + PageOrder(page, "h.id")))
          rows.push_back(HypothesisFromRow(r));
        return MakePage(std::move(rows), page, [](const HypothesisRow& h) { return h.id; });
      });
}

Result<int64_t> Store::CreateExperiment(const ExperimentIn& in, const std::string& actor) {
  return InTxOnce(pool_, clock_, in.request_id, "experiment",
                  [&](pqxx::work& w) { return CreateExperimentTx(w, in, actor); });
}

Result<ExperimentRow> Store::GetExperiment(int64_t id) {
  return InTx<ExperimentRow>(pool_, clock_, [&](pqxx::work& w) -> Result<ExperimentRow> {
    auto e = LoadExperiment(w, id);
    if (!e.ok()) return e;
    std::vector<PlacedRun> runs;
    std::set<std::string> isolated;
    for (const auto& r : w.exec_params(
             "SELECT COALESCE(r.arm, '') AS arm, COALESCE(a.name, '') AS agent, r.node AS node, "
             "COALESCE((EXTRACT(EPOCH FROM r.started_at) * 1000)::bigint, 0) AS started, "
             "COALESCE((EXTRACT(EPOCH FROM r.finished_at) * 1000)::bigint, 0) AS finished, "
             "COALESCE(a.isolated_slots, false) AS isolated FROM runs r LEFT JOIN agents a ON a.id "
             "= r.agent_id WHERE r.experiment_id = $1 ORDER BY r.id",
             id)) {
      PlacedRun p;
      p.arm = r["arm"].as<std::string>();
      p.agent = r["agent"].as<std::string>();
      p.node = r["node"].as<std::string>();
      p.started_ms = r["started"].as<int64_t>();
      p.finished_ms = r["finished"].as<int64_t>();
      if (r["isolated"].as<bool>()) isolated.insert(p.agent);
      runs.push_back(std::move(p));
    }
    auto now = w.exec("SELECT (EXTRACT(EPOCH FROM tunectl_now()) * 1000)::bigint");
    e->placement = DescribePlacement(runs, isolated, now[0][0].as<int64_t>()).summary;
    if (auto in = w.exec_params(kDecisionInputsSelect, id); !in.empty()) {
      const std::vector<RunFacts> facts = LoadRunFacts(w, "r.experiment_id = $1", id);
      if (auto inputs = LoadDecisionInputs(w, in[0]); inputs.ok()) {
        e->arms = CountArms(inputs->spec, facts);
        if (e->state == Name(ExperimentState::kRunning))
          e->interim = InterimVerdict(inputs->spec, facts, inputs->expect, inputs->design);
      }
    }
    if (e->verdict)
      if (auto wl = LoadWorkload(w, e->workload); wl.ok())
        if (auto goal = LoadGoal(w, *wl); goal.ok() && *goal)
          e->goal_note = GoalNote((*goal)->goal, *e->verdict);
    return e;
  });
}

Result<Paged<ExperimentRow>> Store::ListExperiments(const std::string& workload, const Page& page,
                                                    std::optional<ExperimentState> state) {
  return InTx<Paged<ExperimentRow>>(
      pool_, clock_, [&](pqxx::work& w) -> Result<Paged<ExperimentRow>> {
        std::string where = "true";
        if (!workload.empty()) {
          auto wl = LoadWorkload(w, workload);
          if (!wl.ok()) return wl.status();
          where = "e.workload_id = " + std::to_string(wl->id);
        }
        if (state) where += " AND e.state = " + w.quote(Name(*state));
        std::vector<ExperimentRow> rows;
        for (const auto& r :
             w.exec(Sql(kExperimentSelect) + "WHERE " + where +
                    PageWhere(page, "e.id", "e.created_at") + PageOrder(page, "e.id"))) {
          auto e = ExperimentFromRow(r);
          if (!e.ok()) return e.status();
          rows.push_back(*e);
        }
        return MakePage(std::move(rows), page, [](const ExperimentRow& e) { return e.id; });
      });
}

Result<ExperimentRow> Store::CancelExperiment(int64_t id, const std::string& actor) {
  return InTx<ExperimentRow>(pool_, clock_, [&](pqxx::work& w) -> Result<ExperimentRow> {
    // Lock order: its batch, then the experiment, then its runs (see store_internal.h).
    auto pre =
        w.exec_params("SELECT COALESCE(batch_id, 0) AS batch FROM experiments WHERE id = $1", id);
    if (pre.empty()) return Status::NotFound("experiment " + std::to_string(id) + " not found");
    const int64_t batch = pre[0]["batch"].as<int64_t>();
    if (batch) w.exec_params("SELECT 1 FROM batches WHERE id = $1 FOR UPDATE", batch);
    auto st = w.exec_params("SELECT state FROM experiments WHERE id = $1 FOR UPDATE", id);
    if (st[0]["state"].as<std::string>() != Name(ExperimentState::kRunning))
      return Status::FailedPrecondition("experiment " + std::to_string(id) + " is " +
                                        st[0]["state"].as<std::string>() +
                                        "; only a running one can be cancelled");
    w.exec_params0("UPDATE experiments SET state = 'cancelled' WHERE id = $1", id);
    w.exec_params0(
        "UPDATE runs SET state = 'cancelled', finished_at = tunectl_now(), reason = 'experiment "
        "cancelled' WHERE experiment_id = $1 AND state = 'queued'",
        id);
    w.exec_params0(
        "UPDATE runs SET cancel_requested = true, cancel_reason = '' WHERE "
        "experiment_id = $1 AND state IN " +
            HeldStatesSql(),
        id);
    Audit(w, actor, "experiment.cancelled", "experiment", id, json::object());
    if (batch) MaybeFinishBatch(w, batch, actor);
    return LoadExperiment(w, id);
  });
}

}  // namespace tunectl

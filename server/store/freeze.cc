// Store: freezing an experiment into a config version, and the tuning log.
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "core/decisions.h"
#include "core/tuning_log.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

Result<ExperimentRow> Store::FreezeExperiment(int64_t id, bool force, const std::string& reason,
                                              const std::string& actor) {
  return InTx<ExperimentRow>(pool_, clock_, [&](pqxx::work& w) -> Result<ExperimentRow> {
    auto r = w.exec_params(
        "SELECT e.state, COALESCE(e.decision, '') AS decision, e.control_config_id, "
        "e.workload_id, e.variant_params::text AS variant_params, e.change::text AS change, "
        "c.version AS control_version, wl.name AS workload, e.spec_revision, "
        "COALESCE(fc.version, 0) AS frozen_version, COALESCE(e.batch_id, 0) AS batch_id, "
        "COALESCE(e.verdict::text, '') AS verdict FROM experiments e JOIN config_versions c ON "
        "c.id = e.control_config_id "
        "JOIN workloads wl ON wl.id = e.workload_id LEFT JOIN config_versions fc ON "
        "fc.id = e.frozen_config_id WHERE e.id = $1 FOR UPDATE OF e",
        id);
    if (r.empty()) return Status::NotFound("experiment " + std::to_string(id) + " not found");
    const auto& row = r[0];
    const int64_t control_cfg = row["control_config_id"].as<int64_t>();
    const int64_t workload_id = row["workload_id"].as<int64_t>();
    auto cur = w.exec_params1(
        "SELECT id, version FROM config_versions WHERE workload_id = $1 AND is_current FOR UPDATE",
        workload_id);
    FreezeFacts facts;
    facts.experiment = id;
    facts.state =
        ParseExperimentState(row["state"].as<std::string>()).value_or(ExperimentState::kClosed);
    facts.decision = row["decision"].as<std::string>();
    facts.frozen_version = row["frozen_version"].as<int>();
    facts.force = force;
    facts.reason = reason;
    facts.workload = row["workload"].as<std::string>();
    facts.control_version = row["control_version"].as<int>();
    facts.current_version =
        cur["id"].as<int64_t>() == control_cfg ? facts.control_version : cur["version"].as<int>();
    facts.batch = row["batch_id"].as<int64_t>();
    // The workload's goal: a freeze must not break one of its guardrails (unless forced).
    if (auto wl = LoadWorkload(w, facts.workload); wl.ok()) {
      auto goal = LoadGoal(w, *wl);
      auto verdict = VerdictFromJson(row["verdict"].as<std::string>());
      if (goal.ok() && *goal && verdict.ok())
        facts.goal_breaks = CheckGoalGuardrails((*goal)->goal, *verdict).broken;
    }
    if (Status st = CheckFreeze(facts); !st.ok()) return st;
    auto spec = LoadSpecRevision(w, workload_id, row["spec_revision"].as<int>());
    if (!spec.ok()) return spec.status();

    const int version =
        w.exec_params1("SELECT max(version) + 1 FROM config_versions WHERE workload_id = $1",
                       workload_id)[0]
            .as<int>();
    json change = json::parse(row["change"].as<std::string>());
    change["experiment"] = id;
    if (force) change["forced"] = reason;
    w.exec_params0("UPDATE config_versions SET is_current = false WHERE id = $1", control_cfg);
    const int64_t cfg =
        w.exec_params1(
             "INSERT INTO config_versions(workload_id, version, params, parent_id, change) "
             "VALUES ($1, $2, $3::jsonb, $4, $5::jsonb) RETURNING id",
             workload_id, version, row["variant_params"].as<std::string>(), control_cfg,
             change.dump())[0]
            .as<int64_t>();
    // The new version's measured level: exactly the variant runs the verdict compared (the one
    // counting rule, core::BuildArms, then the comparison's own choice of runs: complete pairs,
    // outlier pairs or runs left out), read from the verdict's run lists.
    const Arms arms = BuildArms(*spec, LoadRunFacts(w, "r.experiment_id = $1", id));
    VerdictOptions vo;
    vo.cross_checks = false;
    const Verdict compared = ComputeVerdict(*spec, arms.control, arms.variant, std::nullopt, vo);
    const int n = static_cast<int>(arms.compared_variant.size());
    const int64_t bid =
        w.exec_params1(
             "INSERT INTO baselines(workload_id, config_id, repeats, state, actor, finished_at, "
             "source_experiment_id, spec_revision) VALUES ($1, $2, $3, 'completed', $4, "
             "tunectl_now(), $5, $6) RETURNING id",
             workload_id, cfg, std::max(1, n), actor, id, row["spec_revision"].as<int>())[0]
            .as<int64_t>();
    for (const auto& m : compared.metrics) {
      std::vector<double> values;
      for (const auto& run : m.variant_runs)
        if (run.compared) values.push_back(run.value);
      Descriptive d = Describe(values);
      if (d.n == 0) continue;
      w.exec_params0(
          "INSERT INTO baseline_summaries(baseline_id, metric, n, median, mean, stddev, cv, "
          "min, max) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
          bid, m.metric, d.n, d.median, d.mean, d.stddev, d.cv, d.min, d.max);
    }
    w.exec_params0(
        "UPDATE experiments SET state = 'frozen', frozen_config_id = $2, frozen_at = "
        "tunectl_now(), frozen_by = $3, freeze_reason = $4 WHERE id = $1",
        id, cfg, actor, force ? std::optional<std::string>(reason) : std::nullopt);
    AppendLog(w, workload_id, id, LogKind::kFrozen, actor,
              FrozenEntry({id, version, bid, force, reason, facts.decision}));
    Audit(w, actor, "config.frozen", "experiment", id,
          {{"version", version},
           {"forced", force},
           {"reason", reason},
           {"baseline", bid},
           {"goal_guardrails_broken", facts.goal_breaks}});
    return LoadExperimentById(w, id);
  });
}

Result<Paged<LogRow>> Store::ListLog(const std::string& workload, const std::string& param,
                                     const Page& page) {
  return InTx<Paged<LogRow>>(pool_, clock_, [&](pqxx::work& w) -> Result<Paged<LogRow>> {
    std::string where = "l.kind IN ('decided', 'regression', 'resolved')";
    if (!workload.empty()) {
      auto wl = LoadWorkload(w, workload);
      if (!wl.ok()) return wl.status();
      where += " AND l.workload_id = " + std::to_string(wl->id);
    }
    // The entry's change ({"to": {"num_workers": "8"}}): regression entries have none.
    if (!param.empty()) where += " AND (l.entry -> 'to') -> " + w.quote(param) + " IS NOT NULL";
    // One 'frozen' entry per experiment at most (tuning_log_one_frozen), found by its index.
    std::vector<LogRow> rows;
    for (const auto& r :
         w.exec("SELECT l.id AS id, COALESCE(l.experiment_id, 0) AS experiment_id, wl.name AS "
                "workload, tunectl_ts(l.at) AS at, l.actor AS actor, l.entry::text AS entry, "
                "f.entry::text AS frozen, l.kind AS kind FROM tuning_log l JOIN workloads wl ON "
                "wl.id = l.workload_id LEFT JOIN tuning_log f ON f.experiment_id = l.experiment_id "
                "AND f.kind = 'frozen' WHERE " +
                where + PageWhere(page, "l.id", "l.at") + PageOrder(page, "l.id"))) {
      LogRow row;
      row.id = r["id"].as<int64_t>();
      row.experiment_id = r["experiment_id"].as<int64_t>();
      row.workload = r["workload"].as<std::string>();
      row.at = r["at"].as<std::string>();
      row.actor = r["actor"].as<std::string>();
      row.entry_json = r["entry"].as<std::string>();
      row.kind = r["kind"].as<std::string>();
      if (!r["frozen"].is_null()) {
        auto f = json::parse(r["frozen"].as<std::string>(), nullptr, false);
        row.frozen = "v" + std::to_string(f.value("version", 0));
        if (f.value("forced", false))
          row.frozen += " (forced: " + f.value("reason", std::string()) + ")";
      }
      rows.push_back(std::move(row));
    }
    return MakePage(std::move(rows), page, [](const LogRow& r) { return r.id; });
  });
}

}  // namespace tunectl

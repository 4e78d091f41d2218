#include "server/store/store.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <tuple>

#include "core/changepoint.h"
#include "core/template.h"
#include "server/store/store_internal.h"

namespace tunectl {
namespace internal {

Status ToStatus(const Result<bool>& r) {
  return r.ok() ? Status::Ok() : r.status();
}

std::string MapToJson(const std::map<std::string, std::string>& m) {
  return json(m).dump();
}

std::map<std::string, std::string> JsonToMap(const std::string& text) {
  std::map<std::string, std::string> out;
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it)
    out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  return out;
}

void Audit(pqxx::work& w, const std::string& actor, const std::string& kind,
           const std::string& entity, int64_t id, const json& detail) {
  w.exec_params0(
      "INSERT INTO audit_events(actor, kind, entity, entity_id, detail) VALUES "
      "($1,$2,$3,$4,$5::jsonb)",
      actor, kind, entity, id, detail.dump());
}

std::string LaunchJson(const WorkloadSpec& spec, const Launch& l) {
  json j;
  j["argv"] = l.argv;
  j["env"] = l.env;
  j["files"] = l.files;
  json metrics = json::array();
  for (const auto& m : spec.metrics)
    metrics.push_back({{"name", m.name},
                       {"pattern", m.pattern},
                       {"json", m.json_key},
                       {"better", BetterName(m.better)},
                       {"role", RoleName(m.role)}});
  j["metrics"] = metrics;
  json skip = json::array();
  for (const auto& [tag, pattern] : spec.run.skip_steps)
    skip.push_back({{"tag", tag}, {"pattern", pattern}});
  j["skip_steps"] = skip;
  j["timeout_ms"] = spec.run.timeout_ms;
  j["warmup_steps"] = spec.run.warmup_steps;
  return j.dump();
}

const char* const kWorkloadSelect =
    "SELECT w.id, w.name, w.description, w.spec::text, w.spec_revision, c.id, c.version, "
    "c.params::text, tunectl_ts(w.created_at) FROM workloads w "
    "JOIN config_versions c ON c.workload_id = w.id AND c.is_current ";

Result<WorkloadRow> WorkloadFromRow(const pqxx::row& r) {
  WorkloadRow w;
  w.id = r[0].as<int64_t>();
  w.name = r[1].as<std::string>();
  w.description = r[2].as<std::string>();
  w.spec_json = r[3].as<std::string>();
  auto spec = ParseWorkloadSpec(w.spec_json, "stored spec of " + w.name);
  if (!spec.ok()) return Status::Internal(spec.status().message());
  w.spec = *spec;
  w.spec_revision = r[4].as<int>();
  w.config_id = r[5].as<int64_t>();
  w.config_version = r[6].as<int>();
  w.config_params = JsonToMap(r[7].as<std::string>());
  w.created_at = r[8].as<std::string>();
  return w;
}

Result<WorkloadRow> LoadWorkload(pqxx::work& w, const std::string& name) {
  auto r = w.exec_params(std::string(kWorkloadSelect) + "WHERE w.name = $1", name);
  if (r.empty()) {
    auto all = w.exec("SELECT name FROM workloads ORDER BY name");
    std::string known;
    for (const auto& row : all) known += (known.empty() ? "" : ", ") + row[0].as<std::string>();
    return Status::NotFound(
        "workload \"" + name + "\" not found; known workloads: " +
        (known.empty() ? "none (apply one with tunectl workload apply -f FILE)" : known));
  }
  return WorkloadFromRow(r[0]);
}

Result<WorkloadRow> ResolveWorkload(pqxx::work& w, const std::string& workload) {
  std::string name = workload;
  if (name.empty()) {
    auto all = w.exec("SELECT name FROM workloads ORDER BY name");
    if (all.empty())
      return Status::FailedPrecondition(
          "no workloads yet; apply one first: tunectl workload apply -f FILE");
    if (all.size() > 1) {
      std::string names;
      for (const auto& r : all) names += (names.empty() ? "" : ", ") + r[0].as<std::string>();
      return Status::InvalidArgument("--workload: several workloads exist (" + names +
                                     "); name one with --workload NAME");
    }
    name = all[0][0].as<std::string>();
  }
  return LoadWorkload(w, name);
}

// Values of the current config carried over to a changed spec: kept where still valid,
// otherwise the new default.
ParamValues CarryOver(const WorkloadSpec& spec, const ParamValues& old) {
  ParamValues out;
  for (const auto& p : spec.params) {
    auto it = old.find(p.name);
    if (it != old.end()) {
      auto c = CanonicalParamValue(p, it->second);
      if (c.ok()) {
        out[p.name] = *c;
        continue;
      }
    }
    out[p.name] = p.default_value;
  }
  return out;
}

bool IsTerminal(const std::string& s) {
  return s == "succeeded" || s == "failed" || s == "cancelled" || s == "lost";
}

// Completes the baseline (summary over its succeeded runs) once no run is active.
// The caller holds the baseline row lock.
void MaybeCompleteBaseline(pqxx::work& w, int64_t baseline_id, const std::string& actor) {
  auto b = w.exec_params(
      "SELECT b.state, w.spec::text FROM baselines b JOIN workloads w ON w.id = b.workload_id "
      "WHERE b.id = $1",
      baseline_id);
  if (b.empty() || b[0][0].as<std::string>() != "running") return;
  auto active = w.exec_params(
      "SELECT count(*) FILTER (WHERE state NOT IN ('succeeded','failed','cancelled','lost')), "
      "count(*) FILTER (WHERE state = 'succeeded'), count(*) FROM runs WHERE baseline_id = $1",
      baseline_id)[0];
  if (active[0].as<int>() > 0) return;
  const int succeeded = active[1].as<int>();
  auto spec = ParseWorkloadSpec(b[0][1].as<std::string>());
  w.exec_params0("DELETE FROM baseline_summaries WHERE baseline_id = $1", baseline_id);
  json detail = {{"succeeded", succeeded}, {"runs", active[2].as<int>()}};
  const MetricSpec* primary_metric = spec.ok() ? spec->PrimaryMetric() : nullptr;
  const std::string primary = primary_metric ? primary_metric->name : "";
  if (spec.ok()) {
    for (const auto& m : spec->metrics) {
      auto rows = w.exec_params(
          "SELECT rs.median FROM run_summaries rs JOIN runs r ON r.id = rs.run_id "
          "WHERE r.baseline_id = $1 AND r.state = 'succeeded' AND rs.metric = $2 "
          "AND rs.median IS NOT NULL AND NOT EXISTS (SELECT 1 FROM run_summaries p WHERE "
          "p.run_id = r.id AND p.metric = $3 AND NOT p.usable)",
          baseline_id, m.name, primary);
      std::vector<double> medians;
      for (const auto& row : rows) medians.push_back(row[0].as<double>());
      Descriptive d = Describe(medians);
      if (d.n == 0) continue;
      w.exec_params0(
          "INSERT INTO baseline_summaries(baseline_id, metric, n, median, mean, stddev, cv, min, "
          "max) "
          "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
          baseline_id, m.name, d.n, d.median, d.mean, d.stddev, d.cv, d.min, d.max);
      detail["median_" + m.name] = d.median;
    }
  }
  const std::string state = succeeded > 0 ? "completed" : "failed";
  w.exec_params0("UPDATE baselines SET state = $2, finished_at = now() WHERE id = $1", baseline_id,
                 state);
  Audit(w, actor, "baseline." + state, "baseline", baseline_id, detail);
}

// Requeues (new attempt) or loses the given active runs. Locks their baselines first.
int RequeueRuns(pqxx::work& w, const std::vector<int64_t>& run_ids, const std::string& why,
                const std::string& actor) {
  if (run_ids.empty()) return 0;
  std::set<int64_t> baselines, experiments;
  for (int64_t id : run_ids) {
    auto r = w.exec_params("SELECT baseline_id, experiment_id FROM runs WHERE id = $1", id);
    if (!r.empty() && !r[0][0].is_null()) baselines.insert(r[0][0].as<int64_t>());
    if (!r.empty() && !r[0][1].is_null()) experiments.insert(r[0][1].as<int64_t>());
  }
  for (int64_t b : baselines) w.exec_params("SELECT 1 FROM baselines WHERE id = $1 FOR UPDATE", b);
  for (int64_t e : experiments)
    w.exec_params("SELECT 1 FROM experiments WHERE id = $1 FOR UPDATE", e);
  int n = 0;
  for (int64_t id : run_ids) {
    auto r =
        w.exec_params("SELECT attempt, max_attempts, state FROM runs WHERE id = $1 FOR UPDATE", id);
    if (r.empty()) continue;
    const std::string state = r[0][2].as<std::string>();
    if (state != "assigned" && state != "running") continue;
    const int attempt = r[0][0].as<int>();
    if (attempt < r[0][1].as<int>()) {
      w.exec_params0(
          "UPDATE runs SET state = 'queued', attempt = attempt + 1, agent_id = NULL, "
          "assigned_at = NULL, started_at = NULL, reason = $2 WHERE id = $1",
          id, "attempt " + std::to_string(attempt) + " " + why);
      Audit(w, actor, "run.requeued", "run", id, {{"attempt", attempt}, {"why", why}});
    } else {
      w.exec_params0(
          "UPDATE runs SET state = 'lost', finished_at = now(), reason = $2 WHERE id = $1", id,
          "lost after " + std::to_string(attempt) + " attempts: " + why);
      Audit(w, actor, "run.lost", "run", id, {{"attempt", attempt}, {"why", why}});
    }
    ++n;
  }
  for (int64_t b : baselines) MaybeCompleteBaseline(w, b, actor);
  for (int64_t e : experiments) MaybeDecideExperiment(w, e, actor);
  return n;
}

const char* const kRunSelect =
    "SELECT r.id, COALESCE(r.baseline_id, 0), w.name, r.idx, r.attempt, r.state, "
    "COALESCE(a.name, ''), r.params::text, r.selector::text, r.exit_code, r.signal, r.reason, "
    "r.stderr_tail, (SELECT count(*) FROM metric_samples s WHERE s.run_id = r.id AND "
    "s.attempt = r.attempt), tunectl_ts(r.created_at), COALESCE(tunectl_ts(r.started_at), ''), "
    "COALESCE(tunectl_ts(r.finished_at), ''), COALESCE(r.experiment_id, 0), COALESCE(r.arm, ''), "
    "COALESCE(r.schedule_id, 0), COALESCE((SELECT b.purpose FROM baselines b WHERE b.id = "
    "r.baseline_id), '') "
    "FROM runs r JOIN workloads w ON w.id = r.workload_id "
    "LEFT JOIN agents a ON a.id = r.agent_id ";

RunRow RunFromRow(const pqxx::row& r) {
  RunRow x;
  x.id = r[0].as<int64_t>();
  x.baseline_id = r[1].as<int64_t>();
  x.workload = r[2].as<std::string>();
  x.idx = r[3].as<int>();
  x.attempt = r[4].as<int>();
  x.state = r[5].as<std::string>();
  x.agent = r[6].as<std::string>();
  x.params = JsonToMap(r[7].as<std::string>());
  x.selector = JsonToMap(r[8].as<std::string>());
  if (!r[9].is_null()) x.exit_code = r[9].as<int>();
  if (!r[10].is_null()) x.signal = r[10].as<int>();
  x.reason = r[11].as<std::string>();
  x.stderr_tail = r[12].as<std::string>();
  x.samples = r[13].as<int64_t>();
  x.created_at = r[14].as<std::string>();
  x.started_at = r[15].as<std::string>();
  x.finished_at = r[16].as<std::string>();
  x.experiment_id = r[17].as<int64_t>();
  x.arm = r[18].as<std::string>();
  x.schedule_id = r[19].as<int64_t>();
  x.purpose = r[20].as<std::string>();
  return x;
}

}  // namespace internal

using namespace internal;  // NOLINT(google-build-using-namespace): this file's own helpers

Result<ApplyResult> Store::ApplyWorkload(const WorkloadSpec& spec, const std::string& text,
                                         const std::string& actor) {
  return InTx<ApplyResult>(pool_, [&](pqxx::work& w) -> Result<ApplyResult> {
    const std::string spec_json = WorkloadSpecToJson(spec);
    auto cur =
        w.exec_params("SELECT id, spec::text FROM workloads WHERE name = $1 FOR UPDATE", spec.name);
    std::string action;
    if (cur.empty()) {
      int64_t id = w.exec_params1(
                        "INSERT INTO workloads(name, description, spec, spec_text) VALUES "
                        "($1,$2,$3::json,$4) "
                        "RETURNING id",
                        spec.name, spec.description, spec_json, text)[0]
                       .as<int64_t>();
      int64_t cfg = w.exec_params1(
                         "INSERT INTO config_versions(workload_id, version, params) VALUES ($1, 1, "
                         "$2::jsonb) "
                         "RETURNING id",
                         id, MapToJson(DefaultParamValues(spec)))[0]
                        .as<int64_t>();
      Audit(w, actor, "workload.created", "workload", id,
            {{"name", spec.name}, {"config_id", cfg}});
      action = "created";
    } else {
      const int64_t id = cur[0][0].as<int64_t>();
      if (json::parse(cur[0][1].as<std::string>()) == json::parse(spec_json)) {
        action = "unchanged";
      } else {
        w.exec_params0(
            "UPDATE workloads SET description = $2, spec = $3::json, spec_text = $4, "
            "spec_revision = spec_revision + 1, updated_at = now() WHERE id = $1",
            id, spec.description, spec_json, text);
        auto c = w.exec_params1(
            "SELECT id, version, params::text FROM config_versions WHERE workload_id = $1 AND "
            "is_current",
            id);
        ParamValues old = JsonToMap(c[2].as<std::string>());
        ParamValues now = CarryOver(spec, old);
        json detail = {{"name", spec.name}};
        if (now != old) {
          w.exec_params0("UPDATE config_versions SET is_current = false WHERE id = $1",
                         c[0].as<int64_t>());
          int64_t cfg =
              w.exec_params1(
                   "INSERT INTO config_versions(workload_id, version, params, parent_id, change) "
                   "VALUES ($1, $2, $3::jsonb, $4, $5::jsonb) RETURNING id",
                   id, c[1].as<int>() + 1, MapToJson(now), c[0].as<int64_t>(),
                   json({{"reason", "workload spec changed its parameters"}}).dump())[0]
                  .as<int64_t>();
          detail["config_id"] = cfg;
        }
        Audit(w, actor, "workload.updated", "workload", id, detail);
        action = "updated";
      }
    }
    auto row = LoadWorkload(w, spec.name);
    if (!row.ok()) return row.status();
    return ApplyResult{*row, action};
  });
}

Result<std::vector<WorkloadRow>> Store::ListWorkloads() {
  return InTx<std::vector<WorkloadRow>>(
      pool_, [&](pqxx::work& w) -> Result<std::vector<WorkloadRow>> {
        std::vector<WorkloadRow> out;
        for (const auto& r : w.exec(std::string(kWorkloadSelect) + "ORDER BY w.name")) {
          auto row = WorkloadFromRow(r);
          if (!row.ok()) return row.status();
          out.push_back(*row);
        }
        return out;
      });
}

Result<WorkloadRow> Store::GetWorkload(const std::string& name) {
  return InTx<WorkloadRow>(pool_, [&](pqxx::work& w) { return LoadWorkload(w, name); });
}

namespace internal {

Result<int64_t> CreateBaselineTx(pqxx::work& w, const WorkloadRow& wl, int repeats,
                                 const std::string& actor, const BaselineExtras& x) {
  auto launch = BindLaunch(wl.spec, wl.config_params);
  if (!launch.ok()) return launch.status();
  auto opt = [](int64_t v) { return v ? std::optional<int64_t>(v) : std::nullopt; };
  const int64_t id =
      w.exec_params1(
           "INSERT INTO baselines(workload_id, config_id, repeats, state, actor, purpose, "
           "duration_s, watch_id) VALUES ($1,$2,$3,'running',$4,$5,$6,$7) RETURNING id",
           wl.id, wl.config_id, repeats, actor, x.purpose, x.duration_s, opt(x.watch_id))[0]
          .as<int64_t>();
  std::string launch_json = LaunchJson(wl.spec, *launch);
  if (x.duration_s > 0) {
    auto j = json::parse(launch_json);
    j["duration_ms"] = x.duration_s * 1000;
    // The agent stops the run at its duration; the timeout only catches a job that ignores it.
    j["timeout_ms"] = x.duration_s * 1000 + 5 * 60 * 1000;
    launch_json = j.dump();
  }
  const std::string params = MapToJson(wl.config_params);
  const std::string selector = MapToJson(wl.spec.run.selector);
  for (int i = 1; i <= repeats; ++i) {
    w.exec_params0(
        "INSERT INTO runs(workload_id, baseline_id, config_id, idx, params, launch, selector, "
        "state, schedule_id, expected_s) VALUES ($1,$2,$3,$4,$5::jsonb,$6::jsonb,$7::jsonb,"
        "'queued',$8,$9)",
        wl.id, id, wl.config_id, i, params, launch_json, selector, opt(x.schedule_id),
        x.expected_s);
  }
  Audit(w, actor, x.purpose == "baseline" ? "baseline.created" : x.purpose + ".created", "baseline",
        id,
        {{"workload", wl.name},
         {"config_version", wl.config_version},
         {"repeats", repeats},
         {"purpose", x.purpose}});
  return id;
}

}  // namespace internal

Result<int64_t> Store::CreateBaseline(const std::string& workload, int repeats,
                                      const std::string& actor) {
  return InTx<int64_t>(pool_, [&](pqxx::work& w) -> Result<int64_t> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    if (repeats < 0 || repeats > 1000)
      return Status::InvalidArgument(
          "--repeats: " + std::to_string(repeats) +
          " is out of range; allowed 1..1000 (0 = the workload's run.repeats)");
    if (repeats == 0) repeats = wl->spec.run.repeats;
    return CreateBaselineTx(w, *wl, repeats, actor);
  });
}

Result<BaselineRow> Store::CancelBaseline(int64_t id, const std::string& actor) {
  auto done = InTx<bool>(pool_, [&](pqxx::work& w) -> Result<bool> {
    auto st = w.exec_params("SELECT state, purpose FROM baselines WHERE id = $1 FOR UPDATE", id);
    if (st.empty()) return Status::NotFound("baseline " + std::to_string(id) + " not found");
    if (st[0][0].as<std::string>() != "running")
      return Status::FailedPrecondition("baseline " + std::to_string(id) + " is " +
                                        st[0][0].as<std::string>() +
                                        "; only a running one can be cancelled");
    w.exec_params0("UPDATE baselines SET state = 'cancelled', finished_at = now() WHERE id = $1",
                   id);
    w.exec_params0(
        "UPDATE runs SET state = 'cancelled', finished_at = now(), reason = $2 WHERE baseline_id = "
        "$1 AND state = 'queued'",
        id, st[0][1].as<std::string>() + " cancelled");
    w.exec_params0(
        "UPDATE runs SET cancel_requested = true, cancel_reason = '' WHERE baseline_id = $1 AND "
        "state IN ('assigned','running')",
        id);
    Audit(w, actor, "baseline.cancelled", "baseline", id,
          {{"purpose", st[0][1].as<std::string>()}});
    return true;
  });
  if (!done.ok()) return done.status();
  return GetBaseline(id);
}

Result<BaselineRow> Store::GetBaseline(int64_t id) {
  return InTx<BaselineRow>(pool_, [&](pqxx::work& w) -> Result<BaselineRow> {
    auto r = w.exec_params(
        "SELECT b.id, wl.name, c.version, c.params::text, b.repeats, b.state, wl.spec::text, "
        "tunectl_ts(b.created_at), COALESCE(tunectl_ts(b.finished_at), ''), "
        "(SELECT count(*) FROM runs r WHERE " BASELINE_RUNS
        " AND r.state = 'succeeded'), "
        "(SELECT count(*) FROM runs r WHERE " BASELINE_RUNS
        " AND r.state IN "
        "('failed','cancelled','lost')), "
        "(SELECT count(*) FROM runs r WHERE " BASELINE_RUNS
        " AND r.state IN "
        "('queued','assigned','running')), b.purpose "
        "FROM baselines b JOIN workloads wl ON wl.id = b.workload_id "
        "JOIN config_versions c ON c.id = b.config_id WHERE b.id = $1",
        id);
    if (r.empty()) {
      auto last = w.exec("SELECT max(id) FROM baselines")[0][0];
      return Status::NotFound("baseline " + std::to_string(id) + " not found" +
                              (last.is_null()
                                   ? "; there are no baselines yet"
                                   : "; baselines are numbered 1.." + last.as<std::string>()));
    }
    BaselineRow b;
    b.id = r[0][0].as<int64_t>();
    b.workload = r[0][1].as<std::string>();
    b.config_version = r[0][2].as<int>();
    b.params = JsonToMap(r[0][3].as<std::string>());
    b.repeats = r[0][4].as<int>();
    b.state = r[0][5].as<std::string>();
    auto spec = ParseWorkloadSpec(r[0][6].as<std::string>());
    if (spec.ok()) b.spec = *spec;
    b.created_at = r[0][7].as<std::string>();
    b.finished_at = r[0][8].as<std::string>();
    b.purpose = r[0][12].as<std::string>();
    b.runs_succeeded = r[0][9].as<int>();
    b.runs_failed = r[0][10].as<int>();
    b.runs_active = r[0][11].as<int>();
    auto sums = w.exec_params(
        "SELECT metric, n, median, mean, stddev, cv, min, max FROM baseline_summaries "
        "WHERE baseline_id = $1",
        id);
    std::map<std::string, MetricSummaryRow> by_name;
    for (const auto& s : sums) {
      MetricSummaryRow m;
      m.metric = s[0].as<std::string>();
      m.stats.n = s[1].as<int>();
      m.stats.median = s[2].as<double>();
      m.stats.mean = s[3].as<double>();
      m.stats.stddev = s[4].as<double>();
      m.stats.cv = s[5].as<double>();
      m.stats.min = s[6].as<double>();
      m.stats.max = s[7].as<double>();
      by_name[m.metric] = m;
    }
    for (const auto& m : b.spec.metrics)
      if (auto it = by_name.find(m.name); it != by_name.end()) b.summaries.push_back(it->second);
    return b;
  });
}

Result<std::vector<BaselineRow>> Store::ListBaselines(const std::string& workload) {
  auto ids = InTx<std::vector<int64_t>>(pool_, [&](pqxx::work& w) -> Result<std::vector<int64_t>> {
    if (!workload.empty()) {
      auto wl = LoadWorkload(w, workload);
      if (!wl.ok()) return wl.status();
    }
    std::vector<int64_t> out;
    auto r = w.exec_params(
        "SELECT b.id FROM baselines b JOIN workloads wl ON wl.id = b.workload_id "
        "WHERE ($1 = '' OR wl.name = $1) AND b.purpose = 'baseline' ORDER BY b.id",
        workload);
    for (const auto& row : r) out.push_back(row[0].as<int64_t>());
    return out;
  });
  if (!ids.ok()) return ids.status();
  std::vector<BaselineRow> out;
  for (int64_t id : *ids) {
    auto b = GetBaseline(id);
    if (!b.ok()) return b.status();
    out.push_back(*b);
  }
  return out;
}

Result<std::vector<RunRow>> Store::ListRuns(int64_t baseline_id, int limit) {
  return InTx<std::vector<RunRow>>(pool_, [&](pqxx::work& w) -> Result<std::vector<RunRow>> {
    if (baseline_id > 0 &&
        w.exec_params("SELECT 1 FROM baselines WHERE id = $1", baseline_id).empty())
      return Status::NotFound("baseline " + std::to_string(baseline_id) + " not found");
    auto r = w.exec_params(
        std::string(kRunSelect) +
            "WHERE $1 = 0 OR EXISTS (SELECT 1 FROM baselines b WHERE b.id = $1 AND " BASELINE_RUNS
            ") ORDER BY r.id DESC LIMIT $2",
        baseline_id, limit > 0 ? limit : 200);
    std::vector<RunRow> out;
    for (const auto& row : r) out.push_back(RunFromRow(row));
    std::reverse(out.begin(), out.end());
    return out;
  });
}

Result<RunRow> Store::GetRun(int64_t id) {
  return InTx<RunRow>(pool_, [&](pqxx::work& w) -> Result<RunRow> {
    auto r = w.exec_params(std::string(kRunSelect) + "WHERE r.id = $1", id);
    if (r.empty()) return Status::NotFound("run " + std::to_string(id) + " not found");
    RunRow x = RunFromRow(r[0]);
    auto m = w.exec_params(
        "SELECT metric, samples, steady, median, min, max, usable, detected_warmup, warnings "
        "FROM run_summaries WHERE run_id = $1 "
        "ORDER BY metric",
        id);
    for (const auto& row : m) {
      RunMetricRow rm;
      rm.metric = row[0].as<std::string>();
      rm.samples = row[1].as<int>();
      rm.steady = row[2].as<int>();
      if (!row[3].is_null()) rm.median = row[3].as<double>();
      if (!row[4].is_null()) rm.min = row[4].as<double>();
      if (!row[5].is_null()) rm.max = row[5].as<double>();
      rm.usable = row[6].as<bool>();
      rm.detected_warmup = row[7].as<int>();
      rm.warnings = row[8].as<std::string>();
      x.metrics.push_back(rm);
    }
    return x;
  });
}

Result<int64_t> Store::RegisterAgent(const std::string& name, const LabelMap& labels, int slots,
                                     const std::string& version, const std::string& session) {
  return InTx<int64_t>(pool_, [&](pqxx::work& w) -> Result<int64_t> {
    auto r = w.exec_params1(
        "INSERT INTO agents(name, labels, slots, version, connected, session, last_seen) "
        "VALUES ($1, $2::jsonb, $3, $4, true, $5, now()) ON CONFLICT (name) DO UPDATE SET "
        "labels = EXCLUDED.labels, slots = EXCLUDED.slots, version = EXCLUDED.version, "
        "connected = true, session = EXCLUDED.session, last_seen = now() RETURNING id",
        name, MapToJson(labels), slots, version, session);
    const int64_t id = r[0].as<int64_t>();
    Audit(w, "agent:" + name, "agent.connected", "agent", id,
          {{"labels", labels}, {"slots", slots}, {"version", version}});
    return id;
  });
}

Status Store::TouchAgent(int64_t agent_id, bool busy) {
  return ToStatus(InTx<bool>(pool_, [&](pqxx::work& w) -> Result<bool> {
    w.exec_params0("UPDATE agents SET last_seen = now(), busy = $2 WHERE id = $1", agent_id, busy);
    return true;
  }));
}

Status Store::DisconnectAgent(int64_t agent_id, const std::string& session) {
  return ToStatus(InTx<bool>(pool_, [&](pqxx::work& w) -> Result<bool> {
    auto r = w.exec_params(
        "UPDATE agents SET connected = false, last_seen = now() WHERE id = $1 AND session = $2 "
        "RETURNING name",
        agent_id, session);
    if (!r.empty())
      Audit(w, "agent:" + r[0][0].as<std::string>(), "agent.disconnected", "agent", agent_id,
            json::object());
    return true;
  }));
}

Result<std::vector<AgentRow>> Store::ListAgents() {
  return InTx<std::vector<AgentRow>>(pool_, [&](pqxx::work& w) -> Result<std::vector<AgentRow>> {
    std::vector<AgentRow> out;
    auto r = w.exec(
        "SELECT a.id, a.name, a.labels::text, a.slots, a.connected, a.version, "
        "tunectl_ts(a.last_seen), (SELECT count(*) FROM runs r WHERE r.agent_id = a.id AND "
        "r.state IN ('assigned','running')), a.busy FROM agents a ORDER BY a.name");
    for (const auto& row : r) {
      AgentRow a;
      a.id = row[0].as<int64_t>();
      a.name = row[1].as<std::string>();
      a.labels = JsonToMap(row[2].as<std::string>());
      a.slots = row[3].as<int>();
      a.connected = row[4].as<bool>();
      a.version = row[5].as<std::string>();
      a.last_seen = row[6].as<std::string>();
      a.running = row[7].as<int>();
      a.busy = row[8].as<bool>();
      out.push_back(a);
    }
    return out;
  });
}

Result<int> Store::ReconcileAgentRuns(int64_t agent_id, const std::vector<RunRef>& active) {
  return InTx<int>(pool_, [&](pqxx::work& w) -> Result<int> {
    std::set<RunRef> keep(active.begin(), active.end());
    std::vector<int64_t> stale;
    auto r = w.exec_params(
        "SELECT id, attempt FROM runs WHERE agent_id = $1 AND state IN ('assigned','running')",
        agent_id);
    for (const auto& row : r) {
      RunRef ref{row[0].as<int64_t>(), row[1].as<int>()};
      if (!keep.count(ref)) stale.push_back(ref.run_id);
    }
    return RequeueRuns(w, stale, "was not running on its agent after a reconnect", "server");
  });
}

Result<int> Store::ExpireAgents(int timeout_s) {
  return InTx<int>(pool_, [&](pqxx::work& w) -> Result<int> {
    auto agents = w.exec_params(
        "SELECT a.id, a.name FROM agents a WHERE a.last_seen < now() - make_interval(secs => $1) "
        "AND (a.connected OR EXISTS (SELECT 1 FROM runs r WHERE r.agent_id = a.id AND r.state IN "
        "('assigned','running'))) FOR UPDATE SKIP LOCKED",
        timeout_s);
    int n = 0;
    for (const auto& a : agents) {
      const int64_t id = a[0].as<int64_t>();
      auto was = w.exec_params(
          "UPDATE agents SET connected = false WHERE id = $1 AND connected RETURNING id", id);
      if (!was.empty())
        Audit(w, "server", "agent.expired", "agent", id, {{"silent_for_s", timeout_s}});
      std::vector<int64_t> runs;
      for (const auto& r : w.exec_params(
               "SELECT id FROM runs WHERE agent_id = $1 AND state IN ('assigned','running')", id))
        runs.push_back(r[0].as<int64_t>());
      n += RequeueRuns(w, runs, "lost: agent " + a[1].as<std::string>() + " went silent", "server");
    }
    return n;
  });
}

Result<std::vector<LaunchPlan>> Store::ClaimRuns(int64_t agent_id, const LabelMap& labels,
                                                 int slots, const std::string& open_windows) {
  return InTx<
      std::vector<LaunchPlan>>(pool_, [&](pqxx::work& w) -> Result<std::vector<LaunchPlan>> {
    std::vector<LaunchPlan> out;
    if (slots <= 0) return out;
    // A schedule's agent cap is checked against the runs active now; claims that could raise
    // it are serialized so two agents cannot both take the last place.
    if (!w.exec("SELECT 1 FROM schedules WHERE max_agents > 0 LIMIT 1").empty())
      w.exec("SELECT pg_advisory_xact_lock(7325001)");
    auto r = w.exec_params(
        "WITH c AS (SELECT r.id FROM runs r LEFT JOIN experiments e ON e.id = r.experiment_id "
        "LEFT JOIN schedules s ON s.id = r.schedule_id "
        "WHERE r.state = 'queued' AND r.selector <@ $1::jsonb AND (e.agent_id IS NULL OR "
        "e.agent_id = $3 OR NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = e.agent_id AND "
        "a.connected)) AND (r.schedule_id IS NULL OR (COALESCE(($4::jsonb ->> "
        "r.schedule_id::text)::bigint, -1) >= r.expected_s AND (s.max_agents = 0 OR EXISTS "
        "(SELECT 1 FROM runs x WHERE x.schedule_id = r.schedule_id AND x.agent_id = $3 AND "
        "x.state IN ('assigned','running')) OR (SELECT count(DISTINCT x.agent_id) FROM runs x "
        "WHERE x.schedule_id = r.schedule_id AND x.state IN ('assigned','running')) < "
        "s.max_agents))) "
        "ORDER BY r.id LIMIT GREATEST(0, $2 - (SELECT count(*) FROM runs b WHERE b.agent_id = $3 "
        "AND b.state IN ('assigned','running'))) FOR UPDATE OF r SKIP LOCKED) "
        "UPDATE runs SET state = 'assigned', agent_id = $3, assigned_at = now(), reason = '' "
        "FROM c, workloads wl WHERE runs.id = c.id AND wl.id = runs.workload_id "
        "RETURNING runs.id, runs.attempt, runs.launch::text, wl.name",
        MapToJson(labels), slots, agent_id, open_windows);
    for (const auto& row : r) {
      LaunchPlan p;
      p.run_id = row[0].as<int64_t>();
      p.attempt = row[1].as<int>();
      p.workload = row[3].as<std::string>();
      auto j = json::parse(row[2].as<std::string>());
      p.argv = j["argv"].get<std::vector<std::string>>();
      p.env = j["env"].get<std::map<std::string, std::string>>();
      p.files = j["files"].get<std::map<std::string, std::string>>();
      for (const auto& m : j["metrics"]) p.metrics.push_back({m["name"], m["pattern"], m["json"]});
      for (const auto& s : j.value("skip_steps", json::array()))
        p.metrics.push_back(
            {std::string(kSkipPrefix) + s["tag"].get<std::string>(), s["pattern"], ""});
      p.timeout_ms = j["timeout_ms"].get<int64_t>();
      p.duration_ms = j.value("duration_ms", int64_t{0});
      Audit(w, "server", "run.assigned", "run", p.run_id,
            {{"agent_id", agent_id}, {"attempt", p.attempt}});
      out.push_back(std::move(p));
    }
    // Keep an experiment's control and variant runs on one agent where possible (same node,
    // same noise); another agent takes over only while this one is disconnected.
    if (!out.empty())
      w.exec_params0(
          "UPDATE experiments e SET agent_id = $1 WHERE (e.agent_id IS NULL OR NOT EXISTS "
          "(SELECT 1 FROM agents a WHERE a.id = e.agent_id AND a.connected)) AND e.id IN "
          "(SELECT experiment_id FROM runs WHERE agent_id = $1 AND state = 'assigned' AND "
          "experiment_id IS NOT NULL)",
          agent_id);
    std::sort(out.begin(), out.end(),
              [](const LaunchPlan& a, const LaunchPlan& b) { return a.run_id < b.run_id; });
    return out;
  });
}

Status Store::MarkRunStarted(int64_t run_id, int attempt, int64_t agent_id) {
  return ToStatus(InTx<bool>(pool_, [&](pqxx::work& w) -> Result<bool> {
    auto r = w.exec_params(
        "UPDATE runs SET state = 'running', started_at = now() WHERE id = $1 AND attempt = $2 "
        "AND agent_id = $3 AND state = 'assigned' RETURNING id",
        run_id, attempt, agent_id);
    if (!r.empty()) Audit(w, "server", "run.started", "run", run_id, {{"attempt", attempt}});
    return true;
  }));
}

Result<bool> Store::StoreMetricBatch(int64_t run_id, int attempt, int64_t seq,
                                     const std::vector<SampleIn>& samples) {
  return InTx<bool>(pool_, [&](pqxx::work& w) -> Result<bool> {
    auto r = w.exec_params(
        "INSERT INTO metric_batches(run_id, attempt, seq, samples) VALUES ($1,$2,$3,$4) "
        "ON CONFLICT DO NOTHING RETURNING seq",
        run_id, attempt, seq, static_cast<int>(samples.size()));
    if (r.empty()) return false;
    if (!samples.empty()) {
      pqxx::stream_to s(
          w, "metric_samples",
          std::vector<std::string>{"run_id", "attempt", "metric", "step", "value", "line_no"});
      for (const auto& x : samples)
        s << std::make_tuple(run_id, attempt, x.metric, x.step, x.value, x.line_no);
      s.complete();
    }
    return true;
  });
}

Status Store::FinishRun(int64_t run_id, int attempt, const RunResult& res,
                        const std::string& actor) {
  return ToStatus(InTx<bool>(pool_, [&](pqxx::work& w) -> Result<bool> {
    auto pre = w.exec_params("SELECT baseline_id, experiment_id FROM runs WHERE id = $1", run_id);
    if (pre.empty()) return Status::NotFound("run " + std::to_string(run_id) + " not found");
    std::optional<int64_t> baseline, experiment;
    if (!pre[0][0].is_null()) {
      baseline = pre[0][0].as<int64_t>();
      w.exec_params("SELECT 1 FROM baselines WHERE id = $1 FOR UPDATE", *baseline);
    }
    if (!pre[0][1].is_null()) {
      experiment = pre[0][1].as<int64_t>();
      w.exec_params("SELECT 1 FROM experiments WHERE id = $1 FOR UPDATE", *experiment);
    }
    auto r = w.exec_params(
        "SELECT attempt, state, launch::text, cancel_reason FROM runs WHERE id = $1 FOR UPDATE",
        run_id);
    if (r[0][0].as<int>() != attempt || IsTerminal(r[0][1].as<std::string>())) return true;
    if (res.reason == "cancelled" && r[0][3].as<std::string>() == "window") {
      // Stopped at the end of its window (policy requeue): runs again in the next one, as a new
      // attempt that does not count against the run's attempts.
      w.exec_params0(
          "UPDATE runs SET max_attempts = max_attempts + 1, cancel_requested = false, "
          "cancel_reason = '' WHERE id = $1",
          run_id);
      RequeueRuns(w, {run_id}, "stopped at the end of its window; runs again in the next one",
                  actor);
      return true;
    }
    std::string state = "succeeded";
    if (res.duration_reached)
      state = "succeeded";  // a stability run stopped by the agent at its requested duration
    else if (res.reason == "cancelled")
      state = "cancelled";
    else if (!res.reason.empty() || res.signal != 0 || res.exit_code != 0)
      state = "failed";
    std::string reason = res.duration_reached ? "" : res.reason;
    if (reason.empty() && state == "failed")
      reason = res.signal ? "killed by signal " + std::to_string(res.signal)
                          : "exit code " + std::to_string(res.exit_code);
    const int64_t stored_batches =
        w.exec_params1("SELECT count(*) FROM metric_batches WHERE run_id = $1 AND attempt = $2",
                       run_id, attempt)[0]
            .as<int64_t>();
    if (stored_batches != res.batches)
      reason += (reason.empty() ? "" : "; ") + std::string("agent sent ") +
                std::to_string(res.batches) + " metric batches, server has " +
                std::to_string(stored_batches);
    w.exec_params0(
        "UPDATE runs SET state = $2, exit_code = $3, signal = $4, reason = $5, stderr_tail = $6, "
        "lines = $7, finished_at = now() WHERE id = $1",
        run_id, state, res.exit_code, res.signal, reason, res.stderr_tail, res.lines);

    auto launch = json::parse(r[0][2].as<std::string>());
    const int warmup = launch.value("warmup_steps", 0);
    std::map<std::string, std::vector<StepValue>> series;
    for (const auto& m : launch["metrics"]) series[m["name"].get<std::string>()];
    for (const auto& s : w.exec_params(
             "SELECT metric, step, value FROM metric_samples WHERE run_id = $1 AND attempt = $2 "
             "ORDER BY metric, step",
             run_id, attempt))
      series[s[0].as<std::string>()].push_back({s[1].as<int64_t>(), s[2].as<double>()});
    // Steps marked by run.skip_steps (checkpoint saves, evaluations) are left out of every metric.
    const std::map<std::string, int> skipped = DropSkippedSteps(&series);
    w.exec_params0("DELETE FROM run_summaries WHERE run_id = $1", run_id);
    json detail = {{"attempt", attempt},
                   {"state", state},
                   {"exit_code", res.exit_code},
                   {"signal", res.signal},
                   {"reason", reason}};
    std::map<std::string, Better> better;
    for (const auto& m : launch["metrics"])
      better[m["name"].get<std::string>()] =
          m.value("better", std::string("higher")) == "lower" ? Better::kLower : Better::kHigher;
    std::vector<std::string> names;
    std::vector<SteadyState> analyses;
    for (const auto& [metric, values] : series) {
      SteadyState s = AnalyzeRun(values, warmup, better[metric]);
      names.push_back(metric);
      analyses.push_back(s);
      std::optional<double> med, mn, mx;
      if (s.stats.n > 0) {
        med = s.stats.median;
        mn = s.stats.min;
        mx = s.stats.max;
      }
      int nonfinite = 0;
      for (const auto& sv : values) nonfinite += std::isfinite(sv.value) ? 0 : 1;
      std::string warnings;
      for (const auto& x : s.warnings) warnings += (warnings.empty() ? "" : "; ") + x;
      if (auto it = skipped.find(metric); it != skipped.end())
        warnings += (warnings.empty() ? "" : "; ") + std::to_string(it->second) +
                    " sample(s) at skipped steps (run.skip_steps) left out";
      w.exec_params0(
          "INSERT INTO run_summaries(run_id, metric, samples, steady, median, min, max, nonfinite, "
          "usable, detected_warmup, mad, lag1, warnings) "
          "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)",
          run_id, metric, s.samples, s.steady, med, mn, mx, nonfinite, s.usable(),
          s.detected_warmup, s.mad, s.lag1, warnings);
    }
    Audit(w, actor, "run." + state, "run", run_id, detail);
    WatchRun(w, run_id, names, analyses);
    if (baseline) MaybeCompleteBaseline(w, *baseline, actor);
    if (experiment) MaybeDecideExperiment(w, *experiment, actor);
    return true;
  }));
}

}  // namespace tunectl

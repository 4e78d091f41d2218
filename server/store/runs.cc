// Store: baselines, runs, metric ingest and a run's finish.
#include <cmath>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <tuple>

#include "core/agent_messages.h"
#include "core/launch.h"
#include "core/run_logs.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {
namespace internal {

std::vector<RunFacts> LoadRunFacts(pqxx::work& w, const std::string& condition, int64_t id,
                                   const std::string& order, std::vector<std::string>* finished_at,
                                   const std::string& metric) {
  std::vector<RunFacts> out;
  auto rows = w.exec_params(
      "SELECT r.id, r.state, COALESCE(r.arm, '') AS arm, r.idx, r.reason, r.failure_cause, "
      "COALESCE((SELECT a.name FROM agents a WHERE a.id = r.agent_id), '') AS node, "
      "extract(epoch FROM r.finished_at - r.started_at)::float8 AS duration_s, "
      "COALESCE(tunectl_ts(r.finished_at), '') AS finished_at, rs.metric, rs.median, "
      "COALESCE(rs.usable, true) AS usable, COALESCE(rs.nonfinite, 0) AS nonfinite, "
      "COALESCE(rs.warnings, '') AS warnings, COALESCE(rs.slowdown, false) AS slowdown, "
      "COALESCE(rs.samples, 0) AS samples, COALESCE(rs.resolution, 0) AS resolution, "
      "COALESCE(rs.levels, 0) AS levels, COALESCE(rs.steady_from_step, 0) AS steady_from_step, "
      "COALESCE(rs.last_step, 0) AS last_step, rs.delivered, rs.pace, "
      "COALESCE(rs.aggregate, '') AS aggregate, "
      "COALESCE(rs.measured_from_step, 0) AS measured_from_step FROM runs r LEFT JOIN "
      "run_summaries rs ON "
      "rs.run_id = r.id" +
          (metric.empty() ? std::string() : " AND rs.metric = " + w.quote(metric)) + " WHERE " +
          condition + " ORDER BY " + order + ", r.id, rs.metric",
      id);
  for (const auto& row : rows) {
    const int64_t run = row["id"].as<int64_t>();
    if (out.empty() || out.back().id != run) {
      RunFacts f;
      f.id = run;
      f.state = ParseRunState(row["state"].as<std::string>()).value_or(RunState::kFailed);
      f.arm = row["arm"].as<std::string>();
      f.idx = row["idx"].as<int>();
      f.reason = row["reason"].as<std::string>();
      f.cause = row["failure_cause"].as<std::string>();
      f.node = row["node"].as<std::string>();
      if (!row["duration_s"].is_null()) f.duration_s = row["duration_s"].as<double>();
      out.push_back(std::move(f));
      if (finished_at) finished_at->push_back(row["finished_at"].as<std::string>());
    }
    if (row["metric"].is_null()) continue;
    RunMetricFacts m;
    m.metric = row["metric"].as<std::string>();
    if (!row["median"].is_null()) m.median = row["median"].as<double>();
    m.usable = row["usable"].as<bool>();
    m.nonfinite = row["nonfinite"].as<int>();
    m.warnings = row["warnings"].as<std::string>();
    m.slowdown = row["slowdown"].as<bool>();
    m.samples = row["samples"].as<int>();
    m.resolution = row["resolution"].as<double>();
    m.levels = row["levels"].as<int>();
    if (!row["delivered"].is_null()) m.delivered = row["delivered"].as<double>();
    if (!row["pace"].is_null()) m.pace = row["pace"].as<double>();
    m.aggregate = row["aggregate"].as<std::string>();
    m.measured_from_step = row["measured_from_step"].as<int64_t>();
    m.steady_from_step = row["steady_from_step"].as<int64_t>();
    m.last_step = row["last_step"].as<int64_t>();
    out.back().metrics.push_back(std::move(m));
  }
  return out;
}

RunOwners LockRunOwners(pqxx::work& w, const std::vector<int64_t>& run_ids) {
  std::set<int64_t> batches, baselines, experiments;
  size_t found = 0;
  for (int64_t id : run_ids) {
    auto r = w.exec_params(
        "SELECT r.baseline_id, r.experiment_id, e.batch_id FROM runs r LEFT JOIN experiments e "
        "ON e.id = r.experiment_id WHERE r.id = $1",
        id);
    if (r.empty()) continue;
    ++found;
    if (!r[0]["baseline_id"].is_null()) baselines.insert(r[0]["baseline_id"].as<int64_t>());
    if (!r[0]["experiment_id"].is_null()) experiments.insert(r[0]["experiment_id"].as<int64_t>());
    if (!r[0]["batch_id"].is_null()) batches.insert(r[0]["batch_id"].as<int64_t>());
  }
  for (int64_t b : batches) w.exec_params("SELECT 1 FROM batches WHERE id = $1 FOR UPDATE", b);
  // KEY SHARE: finishes of one baseline's runs do not wait for each other (MaybeCompleteBaseline
  // serializes only its own check), while a cancel (FOR UPDATE) still waits for them, and they
  // for it.
  for (int64_t b : baselines)
    w.exec_params("SELECT 1 FROM baselines WHERE id = $1 FOR KEY SHARE", b);
  for (int64_t e : experiments)
    w.exec_params("SELECT 1 FROM experiments WHERE id = $1 FOR UPDATE", e);
  return {{batches.begin(), batches.end()},
          {baselines.begin(), baselines.end()},
          {experiments.begin(), experiments.end()},
          found};
}

void MaybeCompleteBaseline(pqxx::work& w, int64_t baseline_id, const std::string& actor) {
  // The completion lock, to the commit: of finishes running at once, the last to take it sees
  // the others' runs committed, so exactly one of them ends the baseline (the statements after
  // it read a new snapshot). Taken last in a finish, it is held for this check (and the
  // completion, by the one that completes) and the commit.
  w.exec_params("SELECT pg_advisory_xact_lock(7325200, ($1::bigint % 2147483647)::int)",
                baseline_id);
  // While a run of the baseline is active BaselineOutcome decides nothing (core/runs.h): the
  // runs' facts are loaded only for the finish that may end it, not for each of its N runs.
  auto b = w.exec_params(Sql("SELECT state, workload_id, spec_revision, EXISTS (SELECT 1 FROM runs "
                             "r WHERE r.baseline_id = b.id AND r.state IN {active}) AS open FROM "
                             "baselines b WHERE id = $1"),
                         baseline_id);
  if (b.empty() || b[0]["state"].as<std::string>() != Name(BaselineState::kRunning)) return;
  if (b[0]["open"].as<bool>()) return;
  const std::vector<RunFacts> runs = LoadRunFacts(w, "r.baseline_id = $1", baseline_id);
  auto spec =
      LoadSpecRevision(w, b[0]["workload_id"].as<int64_t>(), b[0]["spec_revision"].as<int>());
  if (!spec.ok()) return;
  const std::optional<BaselineResult> result = BaselineOutcome(*spec, runs);
  if (!result) return;
  const BaselineState* state = &result->state;
  int succeeded = 0;
  for (const auto& r : runs) succeeded += r.state == RunState::kSucceeded;
  json detail = {{"succeeded", succeeded}, {"runs", runs.size()}};
  if (!result->reason.empty()) detail["reason"] = result->reason;
  w.exec_params0("DELETE FROM baseline_summaries WHERE baseline_id = $1", baseline_id);
  if (spec.ok()) {
    for (const auto& m : SummarizeRuns(*spec, runs)) {
      const Descriptive& d = m.stats;
      w.exec_params0(
          "INSERT INTO baseline_summaries(baseline_id, metric, n, median, mean, stddev, cv, min, "
          "max) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
          baseline_id, m.metric, d.n, d.median, d.mean, d.stddev, d.cv, d.min, d.max);
      detail["median_" + m.metric] = d.median;
    }
  }
  w.exec_params0(
      "UPDATE baselines SET state = $2, reason = $3, finished_at = tunectl_now() WHERE id = $1",
      baseline_id, Name(*state), result->reason);
  Audit(w, actor, std::string("baseline.") + Name(*state), "baseline", baseline_id, detail);
}

int RequeueRuns(pqxx::work& w, const std::vector<int64_t>& run_ids, const std::string& why,
                const std::string& actor) {
  std::map<int64_t, std::string> why_of_run;
  for (int64_t id : run_ids) why_of_run[id] = why;
  return RequeueRuns(w, why_of_run, actor);
}

int RequeueRuns(pqxx::work& w, const std::map<int64_t, std::string>& why_of_run,
                const std::string& actor) {
  if (why_of_run.empty()) return 0;
  std::vector<int64_t> run_ids;
  for (const auto& [id, why] : why_of_run) run_ids.push_back(id);
  const RunOwners owners = LockRunOwners(w, run_ids);
  int n = 0;
  for (const auto& [id, why] : why_of_run) {  // in id order
    auto r =
        w.exec_params("SELECT attempt, max_attempts, state FROM runs WHERE id = $1 FOR UPDATE", id);
    if (r.empty()) continue;
    const auto state = ParseRunState(r[0]["state"].as<std::string>());
    if (state != RunState::kAssigned && state != RunState::kRunning) continue;
    const int attempt = r[0]["attempt"].as<int>();
    const RetryDecision retry = DecideRetry(attempt, r[0]["max_attempts"].as<int>(), why);
    if (retry.requeue) {
      w.exec_params0(
          "UPDATE runs SET state = 'queued', attempt = attempt + 1, agent_id = NULL, "
          "assigned_at = NULL, started_at = NULL, reason = $2 WHERE id = $1",
          id, retry.reason);
      Audit(w, actor, "run.requeued", "run", id, {{"attempt", attempt}, {"why", why}});
    } else {
      w.exec_params0(
          "UPDATE runs SET state = 'lost', finished_at = tunectl_now(), reason = $2 WHERE id = $1",
          id, retry.reason);
      Audit(w, actor, "run.lost", "run", id, {{"attempt", attempt}, {"why", why}});
    }
    ++n;
  }
  for (int64_t b : owners.baselines) MaybeCompleteBaseline(w, b, actor);
  for (int64_t e : owners.experiments) MaybeDecideExperiment(w, e, actor);
  return n;
}

int ExpectedSecondsOfCurrentConfig(pqxx::work& w, const WorkloadRow& wl) {
  const auto runs = LoadRunFacts(
      w,
      "r.config_id = $1 AND r.state = 'succeeded' AND NOT EXISTS (SELECT 1 FROM baselines sb "
      "WHERE sb.id = r.baseline_id AND sb.purpose = 'stability')",
      wl.config_id);
  return ExpectedRunSeconds(wl.spec, runs);
}

const char* const kRunSelect =
    "SELECT r.id AS id, COALESCE(r.baseline_id, 0) AS baseline_id, w.name AS workload, r.idx "
    "AS idx, r.attempt AS attempt, r.state AS state, COALESCE(a.name, '') AS agent, "
    "r.params::text AS params, r.selector::text AS selector, r.exit_code AS exit_code, "
    "r.signal AS signal, r.reason AS reason, r.stderr_tail AS stderr_tail, (SELECT count(*) "
    "FROM metric_samples s WHERE s.run_id = r.id AND s.attempt = r.attempt) AS samples, "
    "tunectl_ts(r.created_at) AS created_at, COALESCE(tunectl_ts(r.started_at), '') AS "
    "started_at, COALESCE(tunectl_ts(r.finished_at), '') AS finished_at, "
    "COALESCE(r.experiment_id, 0) AS experiment_id, COALESCE(r.arm, '') AS arm, "
    "COALESCE(r.schedule_id, 0) AS schedule_id, COALESCE((SELECT b.purpose FROM baselines b "
    "WHERE b.id = r.baseline_id), '') AS purpose, r.node AS node, r.slot AS slot, r.external_id "
    "AS external_id, r.placement AS placement, r.pending_reason AS pending_reason, "
    "COALESCE(a.executor, '') AS executor FROM runs r JOIN workloads w ON w.id = r.workload_id "
    "LEFT JOIN agents a ON a.id = r.agent_id ";

RunRow RunFromRow(const pqxx::row& r) {
  RunRow x;
  x.id = r["id"].as<int64_t>();
  x.baseline_id = r["baseline_id"].as<int64_t>();
  x.workload = r["workload"].as<std::string>();
  x.idx = r["idx"].as<int>();
  x.attempt = r["attempt"].as<int>();
  x.state = r["state"].as<std::string>();
  x.agent = r["agent"].as<std::string>();
  x.params = JsonToMap(r["params"].as<std::string>());
  x.selector = JsonToMap(r["selector"].as<std::string>());
  if (!r["exit_code"].is_null()) x.exit_code = r["exit_code"].as<int>();
  if (!r["signal"].is_null()) x.signal = r["signal"].as<int>();
  x.reason = r["reason"].as<std::string>();
  x.stderr_tail = r["stderr_tail"].as<std::string>();
  x.samples = r["samples"].as<int64_t>();
  x.created_at = r["created_at"].as<std::string>();
  x.started_at = r["started_at"].as<std::string>();
  x.finished_at = r["finished_at"].as<std::string>();
  x.experiment_id = r["experiment_id"].as<int64_t>();
  x.arm = r["arm"].as<std::string>();
  x.schedule_id = r["schedule_id"].as<int64_t>();
  x.purpose = r["purpose"].as<std::string>();
  x.node = r["node"].as<std::string>();
  x.slot = r["slot"].as<int>();
  x.external_id = r["external_id"].as<std::string>();
  x.placement = r["placement"].as<std::string>();
  x.pending_reason = r["pending_reason"].as<std::string>();
  x.executor = r["executor"].as<std::string>();
  return x;
}

Result<int64_t> CreateBaselineTx(pqxx::work& w, const WorkloadRow& wl, int repeats,
                                 const std::string& actor, const BaselineExtras& x) {
  // Also a periodic check of an archived workload: QueueDueChecks skips it.
  if (Status st =
          CheckNotArchived(wl.name, wl.archived(),
                           x.purpose == "stability"
                               ? "a new stability run"
                               : (x.purpose == "check" ? "a periodic check" : "a new baseline"));
      !st.ok())
    return st;
  auto launch = BindLaunch(wl.spec, wl.config_params);
  if (!launch.ok()) return launch.status();
  auto opt = [](int64_t v) { return v ? std::optional<int64_t>(v) : std::nullopt; };
  const int64_t id =
      w.exec_params1(
           "INSERT INTO baselines(workload_id, config_id, repeats, state, actor, purpose, "
           "duration_s, watch_id, spec_revision) VALUES ($1,$2,$3,'running',$4,$5,$6,$7,$8) "
           "RETURNING id",
           wl.id, wl.config_id, repeats, actor, x.purpose, x.duration_s, opt(x.watch_id),
           wl.spec_revision)[0]
          .as<int64_t>();
  LaunchRecord record = MakeLaunchRecord(wl.spec, *launch);
  if (x.duration_s > 0) record = AsStabilityRun(std::move(record), x.duration_s);
  const std::string launch_json = LaunchRecordToJson(record);
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

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

Result<int64_t> Store::CreateBaseline(const std::string& workload, int repeats,
                                      const std::string& actor, const std::string& request_id) {
  return InTxOnce(pool_, clock_, request_id, "baseline", [&](pqxx::work& w) -> Result<int64_t> {
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
  auto done = InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    auto st = w.exec_params(
        "SELECT state AS state, purpose AS purpose FROM baselines WHERE id = "
        "$1 FOR UPDATE",
        id);
    if (st.empty()) return Status::NotFound("baseline " + std::to_string(id) + " not found");
    if (st[0]["state"].as<std::string>() != "running")
      return Status::FailedPrecondition("baseline " + std::to_string(id) + " is " +
                                        st[0]["state"].as<std::string>() +
                                        "; only a running one can be cancelled");
    w.exec_params0(
        "UPDATE baselines SET state = 'cancelled', finished_at = tunectl_now() WHERE id = $1", id);
    w.exec_params0(
        "UPDATE runs SET state = 'cancelled', finished_at = tunectl_now(), reason = $2 WHERE "
        "baseline_id = "
        "$1 AND state = 'queued'",
        id, st[0]["purpose"].as<std::string>() + " cancelled");
    w.exec_params0(Sql("UPDATE runs SET cancel_requested = true, cancel_reason = '' WHERE "
                       "baseline_id = $1 AND state IN {held}"),
                   id);
    Audit(w, actor, "baseline.cancelled", "baseline", id,
          {{"purpose", st[0]["purpose"].as<std::string>()}});
    return true;
  });
  if (!done.ok()) return done.status();
  return GetBaseline(id);
}

namespace {

// One attempt's samples per metric in step order, with an empty series for every metric of
// `launch` (and the run.skip_steps marks as "skip:<tag>" series): what its summary is made of.
std::map<std::string, std::vector<StepValue>> LoadSeries(pqxx::work& w, int64_t run_id, int attempt,
                                                         const LaunchRecord& launch) {
  std::map<std::string, std::vector<StepValue>> series;
  for (const auto& m : launch.metrics) series[m.name];
  for (const auto& s : w.exec_params(
           "SELECT metric, step, value FROM metric_samples WHERE run_id = $1 AND attempt = $2 "
           "ORDER BY metric, step",
           run_id, attempt))
    series[s["metric"].as<std::string>()].push_back(
        {s["step"].as<int64_t>(), s["value"].as<double>()});
  return series;
}

// Baselines (`where`: SQL over b, with its order and limit) with their run counts and summaries:
// one query for the rows, one for the summaries of all of them.
std::vector<BaselineRow> LoadBaselines(pqxx::work& w, const std::string& where) {
  std::vector<BaselineRow> out;
  std::map<std::pair<std::string, int>, WorkloadSpec> specs;  // parsed once per revision
  std::string ids;
  for (const auto& row : w.exec(
           Sql("SELECT b.id, wl.name AS workload, c.version, c.params::text AS params, b.repeats, "
               "b.state, wr.spec::text AS spec, b.spec_revision, tunectl_ts(b.created_at) AS "
               "created_at, COALESCE(tunectl_ts(b.finished_at), '') AS finished_at, b.purpose, "
               "b.reason, n.succeeded, n.failed, n.active "
               "FROM baselines b JOIN workloads wl ON wl.id = b.workload_id "
               "JOIN workload_revisions wr ON wr.workload_id = b.workload_id AND wr.revision = "
               "b.spec_revision JOIN config_versions c ON c.id = b.config_id "
               // The runs of BASELINE_RUNS, read once, each side through its own index (an OR of
               // the two made PostgreSQL read the whole runs table, three times per baseline).
               "CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE x.state = 'succeeded') AS "
               "succeeded, count(*) FILTER (WHERE x.state = 'cancelled' OR x.state IN {failed}) "
               "AS failed, count(*) FILTER (WHERE x.state IN {active}) AS active FROM (SELECT "
               "r.state FROM runs r WHERE r.baseline_id = b.id UNION ALL SELECT r.state FROM runs "
               "r WHERE r.experiment_id = b.source_experiment_id AND r.arm = 'variant' AND "
               "r.baseline_id IS DISTINCT FROM b.id) x) n WHERE ") +
           where)) {
    BaselineRow b;
    b.id = row["id"].as<int64_t>();
    b.workload = row["workload"].as<std::string>();
    b.config_version = row["version"].as<int>();
    b.spec_revision = row["spec_revision"].as<int>();
    b.params = JsonToMap(row["params"].as<std::string>());
    b.repeats = row["repeats"].as<int>();
    b.state = row["state"].as<std::string>();
    auto [spec, fresh] = specs.try_emplace({b.workload, b.spec_revision});
    if (fresh) {
      auto parsed = ParseWorkloadSpec(row["spec"].as<std::string>());
      if (parsed.ok()) spec->second = *parsed;
    }
    b.spec = spec->second;
    b.created_at = row["created_at"].as<std::string>();
    b.finished_at = row["finished_at"].as<std::string>();
    b.purpose = row["purpose"].as<std::string>();
    b.reason = row["reason"].as<std::string>();
    b.runs_succeeded = row["succeeded"].as<int>();
    b.runs_failed = row["failed"].as<int>();
    b.runs_active = row["active"].as<int>();
    ids += (ids.empty() ? "" : ",") + std::to_string(b.id);
    out.push_back(std::move(b));
  }
  if (out.empty()) return out;
  std::map<int64_t, std::map<std::string, MetricSummaryRow>> by_baseline;
  for (const auto& s : w.exec(
           "SELECT baseline_id, metric AS metric, n AS n, median AS median, mean AS mean, stddev "
           "AS stddev, cv AS cv, min AS min, max AS max FROM baseline_summaries WHERE baseline_id "
           "IN (" +
           ids + ")")) {
    MetricSummaryRow m;
    m.metric = s["metric"].as<std::string>();
    m.stats.n = s["n"].as<int>();
    m.stats.median = s["median"].as<double>();
    m.stats.mean = s["mean"].as<double>();
    m.stats.stddev = s["stddev"].as<double>();
    m.stats.cv = s["cv"].as<double>();
    m.stats.min = s["min"].as<double>();
    m.stats.max = s["max"].as<double>();
    by_baseline[s["baseline_id"].as<int64_t>()][m.metric] = m;
  }
  for (auto& b : out) {
    const auto& by_name = by_baseline[b.id];
    for (const auto& m : b.spec.metrics)
      if (auto it = by_name.find(m.name); it != by_name.end()) b.summaries.push_back(it->second);
  }
  return out;
}

}  // namespace

Result<BaselineRow> Store::GetBaseline(int64_t id) {
  return InTx<BaselineRow>(pool_, clock_, [&](pqxx::work& w) -> Result<BaselineRow> {
    auto rows = LoadBaselines(w, "b.id = " + std::to_string(id));
    if (rows.empty()) {
      auto last = w.exec("SELECT max(id) FROM baselines")[0][0];
      return Status::NotFound("baseline " + std::to_string(id) + " not found" +
                              (last.is_null()
                                   ? "; there are no baselines yet"
                                   : "; baselines are numbered 1.." + last.as<std::string>()));
    }
    return rows[0];
  });
}

Result<AdvisorInput> Store::AdvisorInputOf(int64_t baseline_id) {
  auto b = GetBaseline(baseline_id);
  if (!b.ok()) return b.status();
  if (b->state != "completed")
    return Status::FailedPrecondition(
        "baseline " + std::to_string(baseline_id) + " is " + b->state +
        (b->state == "running" ? " (" + std::to_string(b->runs_succeeded) + " of " +
                                     std::to_string(b->repeats) + " runs done)"
                               : "") +
        "; the advisor reads a completed baseline's figures");
  AdvisorInput in;
  in.spec = b->spec;
  in.params = b->params;
  for (const auto& s : b->summaries)
    if (s.stats.n > 0) in.medians[s.metric] = s.stats.median;
  auto side = InTx<std::map<std::string, std::vector<double>>>(
      pool_, clock_, [&](pqxx::work& w) -> Result<std::map<std::string, std::vector<double>>> {
        std::map<std::string, std::vector<double>> per_run;
        for (const auto& row : w.exec_params(
                 "SELECT rs.metric, rs.median FROM baselines b JOIN runs r ON " BASELINE_RUNS
                 " JOIN run_summaries rs ON rs.run_id = r.id WHERE b.id = $1 AND r.state = "
                 "'succeeded' AND rs.usable AND rs.median IS NOT NULL AND rs.metric LIKE "
                 "'profile\\_%' ORDER BY rs.metric, r.id",
                 baseline_id))
          per_run[row[0].as<std::string>()].push_back(row[1].as<double>());
        return per_run;
      });
  if (!side.ok()) return side.status();
  for (const auto& [metric, values] : *side)
    if (!in.medians.count(metric)) in.medians[metric] = Median(values);
  return in;
}

Result<Paged<BaselineRow>> Store::ListBaselines(const std::string& workload, const Page& page) {
  return InTx<Paged<BaselineRow>>(pool_, clock_, [&](pqxx::work& w) -> Result<Paged<BaselineRow>> {
    std::string where = "b.purpose = 'baseline'";
    if (!workload.empty()) {
      auto wl = LoadWorkload(w, workload);
      if (!wl.ok()) return wl.status();
      where += " AND b.workload_id = " + std::to_string(wl->id);
    }
    return MakePage(
        LoadBaselines(w, where + PageWhere(page, "b.id", "b.created_at") + PageOrder(page, "b.id")),
        page, [](const BaselineRow& b) { return b.id; });
  });
}

Result<Paged<RunRow>> Store::ListRuns(int64_t baseline_id, const Page& page,
                                      int64_t experiment_id) {
  return InTx<Paged<RunRow>>(pool_, clock_, [&](pqxx::work& w) -> Result<Paged<RunRow>> {
    std::string where = "true";
    if (experiment_id > 0) {
      if (w.exec_params("SELECT 1 FROM experiments WHERE id = $1", experiment_id).empty())
        return Status::NotFound("experiment " + std::to_string(experiment_id) +
                                " not found (tunectl experiment list)");
      // Both arms: control and variant runs.
      where = "r.experiment_id = " + std::to_string(experiment_id);
    }
    if (baseline_id > 0) {
      auto b =
          w.exec_params("SELECT source_experiment_id FROM baselines WHERE id = $1", baseline_id);
      if (b.empty())
        return Status::NotFound("baseline " + std::to_string(baseline_id) + " not found");
      // A baseline's runs (BASELINE_RUNS), written so that each side walks its own index.
      where += " AND (r.baseline_id = " + std::to_string(baseline_id);
      if (!b[0][0].is_null())
        where += " OR (r.experiment_id = " + b[0][0].as<std::string>() + " AND r.arm = 'variant')";
      where += ")";
    }
    std::vector<RunRow> rows;
    for (const auto& row :
         w.exec(Sql(kRunSelect) + "WHERE " + where + PageWhere(page, "r.id", "r.created_at") +
                PageOrder(page, "r.id")))
      rows.push_back(RunFromRow(row));
    return MakePage(std::move(rows), page, [](const RunRow& r) { return r.id; });
  });
}

Result<RunRow> Store::GetRunHeader(int64_t id) {
  return InTx<RunRow>(pool_, clock_, [&](pqxx::work& w) -> Result<RunRow> {
    auto r = w.exec_params(Sql(kRunSelect) + "WHERE r.id = $1", id);
    if (r.empty()) return Status::NotFound("run " + std::to_string(id) + " not found");
    return RunFromRow(r[0]);
  });
}

Result<RunRow> Store::GetRun(int64_t id) {
  return InTx<RunRow>(pool_, clock_, [&](pqxx::work& w) -> Result<RunRow> {
    auto r = w.exec_params(Sql(kRunSelect) + "WHERE r.id = $1", id);
    if (r.empty()) return Status::NotFound("run " + std::to_string(id) + " not found");
    RunRow x = RunFromRow(r[0]);
    auto launch = LaunchRecordFromJson(
        w.exec_params1("SELECT launch::text FROM runs WHERE id = $1", id)[0].as<std::string>());
    auto m = w.exec_params(
        "SELECT metric AS metric, samples AS samples, steady AS steady, median AS median, min AS "
        "min, max AS max, usable AS usable, detected_warmup AS detected_warmup, warnings AS "
        "warnings, delivered, pace, aggregate, measured_from_step, last_step FROM run_summaries "
        "WHERE run_id = $1 ORDER BY metric",
        id);
    for (const auto& row : m) {
      RunMetricRow rm;
      rm.metric = row["metric"].as<std::string>();
      rm.samples = row["samples"].as<int>();
      rm.steady = row["steady"].as<int>();
      if (!row["median"].is_null()) rm.median = row["median"].as<double>();
      if (!row["min"].is_null()) rm.min = row["min"].as<double>();
      if (!row["max"].is_null()) rm.max = row["max"].as<double>();
      rm.usable = row["usable"].as<bool>();
      rm.detected_warmup = row["detected_warmup"].as<int>();
      rm.warnings = row["warnings"].as<std::string>();
      if (!row["delivered"].is_null()) {
        rm.value = row["delivered"].as<double>();
        rm.value_how =
            ValueHow(row["aggregate"].as<std::string>(), row["measured_from_step"].as<int64_t>(),
                     row["last_step"].as<int64_t>());
        if (!row["pace"].is_null()) rm.pace = row["pace"].as<double>();
      }
      if (launch.ok()) rm.source = launch->SourceOf(rm.metric);
      x.metrics.push_back(rm);
    }
    if (m.empty() && launch.ok() && (x.state == Name(RunState::kRunning))) {
      // Still running: each metric as the samples stored so far give it (the same analysis as at
      // its end), so a user watching it sees its level, not nothing.
      x.live = true;
      auto series = LoadSeries(w, id, x.attempt, *launch);
      DropSkippedSteps(&series);
      for (const auto& [metric, values] : series) {
        const SteadyState st = AnalyzeRun(values, launch->warmup_steps, launch->BetterOf(metric));
        RunMetricRow rm;
        rm.metric = metric;
        rm.samples = st.samples;
        rm.steady = st.steady;
        if (st.stats.n > 0) {
          rm.median = st.stats.median;
          rm.min = st.stats.min;
          rm.max = st.stats.max;
        }
        rm.usable = st.usable();
        rm.detected_warmup = st.detected_warmup;
        if (st.delivered) {
          rm.value = st.delivered;
          rm.pace = st.pace;
          rm.value_how = ValueHow(st.aggregate, st.measured_from_step, values.back().step);
        }
        for (const auto& warn : st.warnings)
          rm.warnings += (rm.warnings.empty() ? "" : "; ") + warn;
        rm.source = launch->SourceOf(metric);
        x.metrics.push_back(rm);
      }
    }
    return x;
  });
}

Result<RunSamplesRow> Store::GetRunSamples(int64_t id, int attempt, const std::string& metric,
                                           int max_points) {
  return InTx<RunSamplesRow>(pool_, clock_, [&](pqxx::work& w) -> Result<RunSamplesRow> {
    auto r = w.exec_params(
        "SELECT w.name AS workload, r.attempt, r.state, r.launch::text AS launch FROM runs r JOIN "
        "workloads w ON w.id = r.workload_id WHERE r.id = $1",
        id);
    if (r.empty()) return Status::NotFound("run " + std::to_string(id) + " not found");
    RunSamplesRow x;
    x.run_id = id;
    x.workload = r[0]["workload"].as<std::string>();
    x.state = r[0]["state"].as<std::string>();
    x.max_points = max_points;
    const int current = std::max(r[0]["attempt"].as<int>(), 1);
    auto chosen = ResolveAttempt(id, attempt, current);
    if (!chosen.ok()) return chosen.status();
    x.attempt = *chosen;
    const auto state = ParseRunState(x.state);
    x.live = x.attempt == current && state && IsActive(*state);
    auto launch = LaunchRecordFromJson(r[0]["launch"].as<std::string>());
    if (!launch.ok())
      return Status::Internal("run " + std::to_string(id) + ": " + launch.status().message());
    auto metrics = BuildRunSeries(LoadSeries(w, id, x.attempt, *launch), *launch, metric,
                                  static_cast<size_t>(max_points));
    if (!metrics.ok())
      return Status::InvalidArgument(metrics.status().message() + " (run " + std::to_string(id) +
                                     ")");
    x.metrics = std::move(*metrics);
    return x;
  });
}

Result<bool> Store::StoreMetricBatch(int64_t run_id, int attempt, int64_t seq,
                                     const std::vector<SampleIn>& samples,
                                     std::optional<int64_t> reporter) {
  // A metric name COPY would refuse (NUL) refuses the whole batch before any statement, so the
  // agent's session acks and drops it instead of resending it on every reconnect.
  for (const auto& x : samples)
    if (Status st = CheckSampleMetric(x.metric); !st.ok())
      return Status::InvalidArgument("metric batch for run " + std::to_string(run_id) +
                                     " attempt " + std::to_string(attempt) +
                                     " refused: " + st.message() + "; nothing stored");
  // The hot path decides nothing: no clock round trip (received_at is the database's time).
  return InTx<bool>(pool_, nullptr, [&](pqxx::work& w) -> Result<bool> {
    pqxx::result r;
    if (reporter) {
      // Ownership in the same statement: one round trip, as before.
      r = w.exec_params(
          "INSERT INTO metric_batches(run_id, attempt, seq, samples) SELECT $1,$2,$3,$4 WHERE "
          "EXISTS (SELECT 1 FROM runs WHERE id = $1 AND attempt = $2 AND agent_id = $5 AND state "
          "IN ('assigned', 'running')) ON CONFLICT DO NOTHING RETURNING seq",
          run_id, attempt, seq, static_cast<int>(samples.size()), *reporter);
      if (r.empty()) {
        if (!w.exec_params("SELECT 1 FROM metric_batches WHERE run_id = $1 AND attempt = $2 AND "
                           "seq = $3",
                           run_id, attempt, seq)
                 .empty())
          return false;  // a resend of a stored batch
        return Status::FailedPrecondition(
            "metric batch for run " + std::to_string(run_id) + " attempt " +
            std::to_string(attempt) +
            " refused: not an active attempt assigned to this agent; nothing stored");
      }
    } else {
      r = w.exec_params(
          "INSERT INTO metric_batches(run_id, attempt, seq, samples) VALUES ($1,$2,$3,$4) "
          "ON CONFLICT DO NOTHING RETURNING seq",
          run_id, attempt, seq, static_cast<int>(samples.size()));
    }
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

Status Store::FinishRun(int64_t run_id, int attempt, const RunResult& res, const std::string& actor,
                        std::optional<int64_t> reporter) {
  bool watch_due = false;  // the change-point watch, once the finish committed
  const Status finished = ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    watch_due = false;
    const RunOwners owners = LockRunOwners(w, {run_id});
    if (owners.found == 0) return Status::NotFound("run " + std::to_string(run_id) + " not found");
    // The reported attempt's stored batches come with the row (one round trip less per finish).
    auto r = w.exec_params(
        "SELECT attempt, state, launch::text AS launch, cancel_reason, agent_id, (SELECT count(*) "
        "FROM metric_batches b WHERE b.run_id = runs.id AND b.attempt = $2) AS batches_stored "
        "FROM runs WHERE id = $1 FOR UPDATE OF runs",
        run_id, attempt);
    if (reporter && (r[0]["agent_id"].is_null() || r[0]["agent_id"].as<int64_t>() != *reporter))
      return Status::FailedPrecondition("result for run " + std::to_string(run_id) + " attempt " +
                                        std::to_string(attempt) +
                                        " refused: the run is not assigned to this agent; "
                                        "nothing changed");
    const auto current = ParseRunState(r[0]["state"].as<std::string>());
    if (r[0]["attempt"].as<int>() != attempt || !current || IsTerminal(*current)) {
      // A finish sent again (the agent had no ack): the watch's pass may not have run.
      watch_due = r[0]["attempt"].as<int>() == attempt && current == RunState::kSucceeded;
      return true;
    }

    auto launch = LaunchRecordFromJson(r[0]["launch"].as<std::string>());
    if (!launch.ok())
      return Status::Internal("run " + std::to_string(run_id) + ": " + launch.status().message());
    RunReport report;
    report.exit_code = res.exit_code;
    report.signal = res.signal;
    report.reason = res.reason;
    report.duration_reached = res.duration_reached;
    report.duration_ms = launch->duration_ms;
    report.batches_sent = res.batches;
    report.batches_stored = r[0]["batches_stored"].as<int64_t>();
    report.window_cancel = r[0]["cancel_reason"].as<std::string>() == "window";
    report.stderr_tail = res.stderr_tail;
    report.infra_failure = res.infra_failure;
    const RunOutcome outcome = DecideRunOutcome(report);
    if (outcome.retry) {
      RequeueRuns(w, {run_id}, outcome.reason, actor);
      return true;
    }
    if (outcome.requeue) {
      // Stopped at the end of its window (policy requeue): a new attempt that does not count
      // against the run's attempts.
      w.exec_params0(
          "UPDATE runs SET max_attempts = max_attempts + 1, cancel_requested = false, "
          "cancel_reason = '' WHERE id = $1",
          run_id);
      RequeueRuns(w, {run_id}, outcome.reason, actor);
      return true;
    }
    const std::string state = Name(outcome.state);
    w.exec_params0(
        "UPDATE runs SET state = $2, exit_code = $3, signal = $4, reason = $5, stderr_tail = $6, "
        "lines = $7, failure_cause = $8, finished_at = tunectl_now() WHERE id = $1",
        run_id, state, res.exit_code, res.signal, outcome.reason, res.stderr_tail, res.lines,
        outcome.cause);

    auto series = LoadSeries(w, run_id, attempt, *launch);
    // A profiler trace's summary (profile_*) has a row with the agent's note even when it gave
    // no sample, so `run show` says why.
    for (const auto& [m, note] : res.metric_notes)
      if (m.rfind("profile_", 0) == 0 && !launch->profile.empty()) series[m];
    // Steps marked by run.skip_steps (checkpoint saves, evaluations) are left out of every metric.
    const std::map<std::string, int> skipped = DropSkippedSteps(&series);
    json detail = {{"attempt", attempt},   {"state", state},           {"exit_code", res.exit_code},
                   {"signal", res.signal}, {"reason", outcome.reason}, {"cause", outcome.cause}};
    std::vector<std::string> names;
    std::vector<SteadyState> analyses;
    // Every metric's summary in one statement. A run turns terminal once (nothing makes a
    // terminal run active again), so it has no summary rows before this.
    std::string rows;
    auto q = [&w](const auto& v) { return w.quote(v); };
    auto q_opt = [&w](const std::optional<double>& v) { return v ? w.quote(*v) : "NULL"; };
    for (const auto& [metric, values] : series) {
      SteadyState s = AnalyzeRun(values, launch->warmup_steps, launch->BetterOf(metric));
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
      if (values.empty())  // say which source found nothing, not only that nothing is there
        for (const auto& m : launch->metrics)
          if (m.name == metric) warnings = m.NoSampleReason();
      if (auto it = res.metric_notes.find(metric); it != res.metric_notes.end())
        warnings += (warnings.empty() ? "" : "; ") + it->second;
      for (const auto& x : s.warnings) warnings += (warnings.empty() ? "" : "; ") + x;
      if (auto it = skipped.find(metric); it != skipped.end())
        warnings += (warnings.empty() ? "" : "; ") + std::to_string(it->second) +
                    " sample(s) at skipped steps (run.skip_steps) left out";
      const int64_t last_step = values.empty() ? 0 : values.back().step;
      rows += std::string(rows.empty() ? "" : ",") + "(" + q(run_id) + "," + q(metric) + "," +
              q(s.samples) + "," + q(s.steady) + "," + q_opt(med) + "," + q_opt(mn) + "," +
              q_opt(mx) + "," + q(nonfinite) + "," + q(s.usable()) + "," + q(s.detected_warmup) +
              "," + q(s.mad) + "," + q(s.lag1) + "," + q(warnings) + "," + q(s.slowdown) + "," +
              q(s.resolution) + "," + q(s.levels) + "," + q(s.steady_from_step) + "," +
              q(last_step) + "," + q_opt(s.delivered) + "," + q_opt(s.pace) + "," + q(s.aggregate) +
              "," + q(s.measured_from_step) + ")";
    }
    if (!rows.empty())
      w.exec0(
          "INSERT INTO run_summaries(run_id, metric, samples, steady, median, min, max, nonfinite, "
          "usable, detected_warmup, mad, lag1, warnings, slowdown, resolution, levels, "
          "steady_from_step, last_step, delivered, pace, aggregate, measured_from_step) VALUES " +
          rows);
    Audit(w, actor, "run." + state, "run", run_id, detail);
    // Before the completion lock (the watch lock it may take comes first in the order), so that
    // lock is held for the completion's own work and the commit.
    watch_due = JudgeRunForWatch(w, run_id, names, analyses);
    for (int64_t b : owners.baselines) MaybeCompleteBaseline(w, b, actor);
    for (int64_t e : owners.experiments) MaybeDecideExperiment(w, e, actor);
    return true;
  }));
  if (!finished.ok() || !watch_due) return finished;
  // After the commit, so that the pass of the run committed last sees every point of the series
  // and finishes of one workload do not wait for each other's watch (WatchSeries). A failure
  // here is returned: the agent sends the finish again, which runs this pass again.
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    WatchSeries(w, run_id);
    return true;
  }));
}

}  // namespace tunectl

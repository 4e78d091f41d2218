// Regression watch in the store: the current config's series, stability runs, periodic checks
// (watches), the scheduler's window duties, and recording confirmed regressions.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "core/decisions.h"
#include "core/regression.h"
#include "core/tuning_log.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

namespace {

// The primary metric's series: the counting runs (core::UseOf) of the current config — its
// baselines, periodic checks and interleaved controls, not stability runs — and the variant runs
// it was frozen from, in finishing order. Only its newest `want` points are read: newest first
// down the config's index (runs_config_finished), a little more than wanted since a run may not
// count, and again with twice as many in the rare case that was not enough.
struct Series {
  std::vector<SeriesPoint> points;  // oldest first
  bool more = false;                // older points exist
};
Series LoadSeries(pqxx::work& w, const WorkloadRow& wl, const std::string& m, size_t want) {
  for (size_t fetch = want + want / 4 + 16;; fetch *= 2) {
    const std::string n = std::to_string(fetch);
    std::vector<std::string> finished;
    const auto runs = LoadRunFacts(
        w,
        "r.id IN (SELECT s.id FROM ((SELECT c.id, c.finished_at FROM runs c WHERE c.config_id = $1 "
        "AND c.state = 'succeeded' AND (c.arm IS NULL OR c.arm = 'control') AND NOT EXISTS "
        "(SELECT 1 FROM baselines sb WHERE sb.id = c.baseline_id AND sb.purpose = 'stability') "
        "ORDER BY c.finished_at DESC, c.id DESC LIMIT " +
            n +
            ") UNION ALL (SELECT v.id, v.finished_at FROM runs v JOIN experiments e ON e.id = "
            "v.experiment_id WHERE e.frozen_config_id = $1 AND v.arm = 'variant' AND v.state = "
            "'succeeded')) s ORDER BY s.finished_at DESC, s.id DESC LIMIT " +
            n + ")",
        wl.config_id, "r.finished_at DESC, r.id DESC", &finished, m);
    std::vector<SeriesPoint> newest;
    for (size_t i = 0; i < runs.size() && newest.size() <= want; ++i) {
      if (!UseOf(wl.spec, runs[i]).counts) continue;
      const RunMetricFacts* f = runs[i].Find(m);
      if (!f) continue;
      if (const auto v = ValueOf(wl.spec.FindMetric(m), *f).value)
        newest.push_back({runs[i].id, finished[i], *v});
    }
    if (newest.size() <= want && runs.size() == fetch) continue;  // not enough counted yet
    Series out;
    out.more = newest.size() > want;
    if (out.more) newest.resize(want);
    out.points.assign(newest.rbegin(), newest.rend());
    return out;
  }
}

std::optional<double> OptDouble(const pqxx::field& f) {
  return f.is_null() ? std::nullopt : std::optional<double>(f.as<double>());
}

// Inserts the regression once; on the first insert also its tuning-log entry and audit event.
void Record(pqxx::work& w, const WorkloadRow& wl, const std::string& kind,
            const std::string& metric, int64_t first_bad_run, std::optional<double> before,
            std::optional<double> after, std::optional<double> p, const std::string& message) {
  auto ins = w.exec_params(
      "INSERT INTO regressions(workload_id, config_id, metric, kind, first_bad_run, before, "
      "after, p, message) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9) ON CONFLICT DO NOTHING RETURNING id",
      wl.id, wl.config_id, metric, kind, first_bad_run, before, after, p, message);
  if (ins.empty()) return;
  const int64_t id = ins[0][0].as<int64_t>();
  const std::string entry = RegressionEntry(
      {id, kind, wl.name, metric, message, wl.config_version, first_bad_run, before, after, p});
  AppendLog(w, wl.id, 0, LogKind::kRegression, "watch", entry);
  Audit(w, "watch", "regression.detected", "regression", id, json::parse(entry));
}

const char* const kRegressionSelect =
    "SELECT g.id AS id, g.kind AS kind, g.metric AS metric, g.message AS message, "
    "tunectl_ts(g.detected_at) AS detected_at, g.first_bad_run AS first_bad_run, g.before AS "
    "before, g.after AS after, g.p AS p, c.version AS config_version, "
    "COALESCE(tunectl_ts(g.resolved_at), '') AS resolved_at, COALESCE(g.resolved_by, '') AS "
    "resolved_by, COALESCE(g.resolution, '') AS resolution FROM regressions g JOIN "
    "config_versions c ON c.id = g.config_id ";

RegressionRecord RegressionFromRow(const pqxx::row& r) {
  RegressionRecord x;
  x.id = r["id"].as<int64_t>();
  x.kind = r["kind"].as<std::string>();
  x.metric = r["metric"].as<std::string>();
  x.message = r["message"].as<std::string>();
  x.detected_at = r["detected_at"].as<std::string>();
  x.first_bad_run = r["first_bad_run"].as<int64_t>();
  x.before = OptDouble(r["before"]);
  x.after = OptDouble(r["after"]);
  x.p = OptDouble(r["p"]);
  x.config_version = r["config_version"].as<int>();
  x.resolved_at = r["resolved_at"].as<std::string>();
  x.resolved_by = r["resolved_by"].as<std::string>();
  x.resolution = r["resolution"].as<std::string>();
  return x;
}

const char* const kWatchSelect =
    "SELECT wa.id AS id, wl.name AS workload, s.name AS schedule, wa.schedule_id AS "
    "schedule_id, wa.repeats AS repeats, wa.state AS state, wa.actor AS actor, "
    "tunectl_ts(wa.created_at) AS created_at, (SELECT count(*) FROM baselines b WHERE "
    "b.watch_id = wa.id) AS checks FROM watches wa JOIN workloads wl ON wl.id = "
    "wa.workload_id JOIN schedules s ON s.id = wa.schedule_id ";

WatchRow WatchFromRow(const pqxx::row& r) {
  WatchRow x;
  x.id = r["id"].as<int64_t>();
  x.workload = r["workload"].as<std::string>();
  x.schedule = r["schedule"].as<std::string>();
  x.schedule_id = r["schedule_id"].as<int64_t>();
  x.repeats = r["repeats"].as<int>();
  x.state = r["state"].as<std::string>();
  x.actor = r["actor"].as<std::string>();
  x.created_at = r["created_at"].as<std::string>();
  x.checks = r["checks"].as<int>();
  return x;
}

const char* const kStabilitySelect =
    "SELECT b.id AS baseline_id, r.id AS run_id, c.version AS config_version, b.duration_s, "
    "r.state, COALESCE(tunectl_ts(r.started_at), '') AS started_at, "
    "COALESCE(tunectl_ts(r.finished_at), '') AS finished_at, r.reason, (SELECT "
    "string_agg(g.message, '; ' ORDER BY g.id) FROM regressions g WHERE g.first_bad_run = r.id "
    "AND g.kind = 'stability') AS regression_message FROM baselines b JOIN runs r ON "
    "r.baseline_id = b.id JOIN config_versions c ON c.id = b.config_id WHERE b.purpose = "
    "'stability' ";

StabilityRow StabilityFromRow(const pqxx::row& r) {
  StabilityRow x;
  x.baseline_id = r["baseline_id"].as<int64_t>();
  x.run_id = r["run_id"].as<int64_t>();
  x.config_version = r["config_version"].as<int>();
  x.duration_s = r["duration_s"].as<int64_t>();
  x.state = r["state"].as<std::string>();
  x.started_at = r["started_at"].as<std::string>();
  x.finished_at = r["finished_at"].as<std::string>();
  x.verdict =
      StabilityVerdictName(ParseRunState(x.state).value_or(RunState::kFailed),
                           !r["regression_message"].is_null(), r["reason"].as<std::string>());
  if (!r["regression_message"].is_null())
    x.message = r["regression_message"].as<std::string>();
  else if (x.verdict != "stable" && x.verdict != "pending")
    x.message = r["reason"].as<std::string>();
  return x;
}

}  // namespace

namespace internal {

bool JudgeRunForWatch(pqxx::work& w, int64_t run_id, const std::vector<std::string>& names,
                      const std::vector<SteadyState>& analyses) {
  auto of_run = LoadWorkloadOfRun(w, run_id,
                                  "r.state AS run_state, r.config_id AS run_config_id, "
                                  "COALESCE(b.purpose, '') AS purpose, r.reason AS run_reason");
  if (!of_run.ok()) return false;
  const WorkloadRow* wl = &of_run->first;
  const pqxx::row& run = of_run->second;
  const std::string state = run["run_state"].as<std::string>();
  if (!wl->spec.PrimaryMetric()) return false;
  // Only a run of the current config changes what the watch sees.
  if (run["run_config_id"].as<int64_t>() != wl->config_id) return false;
  if (run["purpose"].as<std::string>() == "stability") {
    // One regression per run (one alert, one log entry) naming every metric that degraded.
    auto j = JudgeStabilityRun(wl->spec, run_id, wl->config_version,
                               ParseRunState(state).value_or(RunState::kFailed),
                               run["run_reason"].as<std::string>(), names, analyses);
    if (!j) return false;
    // The workload's watch lock (see WatchSeries), only when there is something to record.
    w.exec_params("SELECT pg_advisory_xact_lock(7325100, $1::int)", wl->id);
    Record(w, *wl, "stability", j->metric, run_id, std::nullopt, std::nullopt, std::nullopt,
           j->message);
    return false;
  }
  return state == "succeeded";
}

void WatchSeries(pqxx::work& w, int64_t run_id) {
  auto of_run = LoadWorkloadOfRun(w, run_id, "r.config_id AS run_config_id");
  if (!of_run.ok()) return;
  const WorkloadRow* wl = &of_run->first;
  const MetricSpec* primary = wl->spec.PrimaryMetric();
  if (!primary || of_run->second["run_config_id"].as<int64_t>() != wl->config_id) return;
  // The incremental rule reads only the newest ConfirmOptions::tail points of the series: the
  // work of a finished run does not grow with the history.
  const ConfirmOptions options;
  // The series' newest points and the regressions they confirm that are not recorded yet;
  // nothing when the run is not (or no longer) among those points.
  struct Judged {
    std::vector<SeriesPoint> points;
    std::vector<ChangePoint> found;
  };
  auto judge = [&]() -> Judged {
    Series series = LoadSeries(w, *wl, primary->name, options.tail);
    std::vector<double> values;
    std::map<int64_t, size_t> index_of;
    for (size_t i = 0; i < series.points.size(); ++i) {
      values.push_back(series.points[i].value);
      index_of[series.points[i].run_id] = i;
    }
    if (!index_of.count(run_id)) return {};
    std::vector<size_t> recorded;
    for (const auto& g : w.exec_params(
             "SELECT first_bad_run FROM regressions WHERE config_id = $1 AND metric = $2 AND "
             "kind = 'change_point'",
             wl->config_id, primary->name))
      if (auto it = index_of.find(g[0].as<int64_t>()); it != index_of.end())
        recorded.push_back(it->second);
    auto found = NewConfirmedRegressionsInTail(values, !series.more, *primary, recorded, options);
    return {std::move(series.points), std::move(found)};
  };
  // Without a lock first: most finished runs confirm nothing, and then no finish of the workload
  // waits for another. Every pass reads after its own run committed, so the pass of the run that
  // committed last sees every point. Only to record, one watcher per workload at a time: with the
  // workload's advisory lock (not a row lock, which would also block every insert referencing
  // the workload) the series and the recorded regressions are read again (statements after it
  // see what the passes before it committed), so a change is recorded once, not once per pass.
  if (judge().found.empty()) return;
  w.exec_params("SELECT pg_advisory_xact_lock(7325100, $1::int)", wl->id);
  const Judged j = judge();
  for (const ChangePoint& c : j.found) {
    const int64_t first = j.points[c.index].run_id;
    Record(w, *wl, "change_point", primary->name, first, c.before, c.after, c.p,
           "v" + std::to_string(wl->config_version) + ": " +
               DescribeChange(primary->name, c, "run " + std::to_string(first)) +
               ", without a config change");
  }
}

}  // namespace internal

Result<RegressionSeries> Store::GetRegressionSeries(const std::string& workload, int points) {
  return InTx<RegressionSeries>(pool_, clock_, [&](pqxx::work& w) -> Result<RegressionSeries> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    RegressionSeries s;
    s.workload = wl->name;
    s.config_version = wl->config_version;
    const MetricSpec* primary = wl->spec.PrimaryMetric();
    if (!primary) return Status::FailedPrecondition("workload " + wl->name + " has no metrics");
    s.metric = *primary;
    Series series = LoadSeries(w, *wl, s.metric.name, static_cast<size_t>(std::max(points, 1)));
    s.points = std::move(series.points);
    s.more_points = series.more;
    // The newest 100 recorded (the tuning log has every one).
    for (const auto& r : w.exec_params(std::string(kRegressionSelect) +
                                           "WHERE g.workload_id = $1 ORDER BY g.id DESC LIMIT 100",
                                       wl->id))
      s.recorded.insert(s.recorded.begin(), RegressionFromRow(r));
    for (const auto& r : w.exec_params(
             std::string(kStabilitySelect) + "AND b.workload_id = $1 ORDER BY b.id DESC LIMIT 20",
             wl->id))
      s.stability.push_back(StabilityFromRow(r));
    auto watch = w.exec_params(std::string(kWatchSelect) +
                                   "WHERE wa.workload_id = $1 ORDER BY wa.state = 'active' DESC, "
                                   "wa.id DESC LIMIT 1",
                               wl->id);
    if (!watch.empty()) s.watch = WatchFromRow(watch[0]);
    return s;
  });
}

Result<RegressionRecord> Store::ResolveRegression(int64_t id, const std::string& reason,
                                                  const std::string& actor) {
  return InTx<RegressionRecord>(pool_, clock_, [&](pqxx::work& w) -> Result<RegressionRecord> {
    auto r = w.exec_params(std::string(kRegressionSelect) + "WHERE g.id = $1 FOR UPDATE OF g", id);
    if (r.empty()) {
      auto last = w.exec("SELECT max(id) FROM regressions")[0][0];
      return Status::NotFound("regression " + std::to_string(id) + " not found" +
                              (last.is_null()
                                   ? "; none has been recorded"
                                   : "; regressions are numbered 1.." + last.as<std::string>()));
    }
    RegressionRecord g = RegressionFromRow(r[0]);
    if (!g.resolved_at.empty())
      return Status::FailedPrecondition("regression " + std::to_string(id) + " was resolved at " +
                                        g.resolved_at + " by " + g.resolved_by + ": " +
                                        g.resolution);
    if (reason.empty())
      return Status::InvalidArgument(
          "--reason: missing; say what fixed it, e.g. --reason \"node n3 replaced\"");
    w.exec_params0(
        "UPDATE regressions SET resolved_at = tunectl_now(), resolved_by = $2, resolution = $3 "
        "WHERE id = "
        "$1",
        id, actor, reason);
    const std::string entry =
        ResolvedEntry({id, g.metric, reason, g.first_bad_run, g.config_version});
    w.exec_params0(
        "INSERT INTO tuning_log(workload_id, kind, actor, entry) SELECT workload_id, 'resolved', "
        "$2, $3::json FROM regressions WHERE id = $1",
        id, actor, entry);
    Audit(w, actor, "regression.resolved", "regression", id, json::parse(entry));
    return RegressionFromRow(
        w.exec_params(std::string(kRegressionSelect) + "WHERE g.id = $1", id)[0]);
  });
}

Result<StabilityRow> Store::CreateStabilityRun(const std::string& workload, int64_t duration_s,
                                               const std::string& schedule,
                                               const std::string& actor,
                                               const std::string& request_id) {
  auto load = [](pqxx::work& w, int64_t id) -> Result<StabilityRow> {
    auto r = w.exec_params(std::string(kStabilitySelect) + "AND b.id = $1", id);
    if (r.empty()) return Status::NotFound("stability run " + std::to_string(id) + " not found");
    return StabilityFromRow(r[0]);
  };
  auto id_of = [](const StabilityRow& s) { return s.baseline_id; };
  return InTxOnce<StabilityRow>(
      pool_, clock_, request_id, "stability",
      [&](pqxx::work& w) -> Result<StabilityRow> {
        auto wl = ResolveWorkload(w, workload);
        if (!wl.ok()) return wl.status();
        if (duration_s < 5 || duration_s > 30LL * 86400)
          return Status::InvalidArgument("--duration: " + std::to_string(duration_s) +
                                         "s is out of range; allowed 5s..30d (e.g. 2h, 90m)");
        BaselineExtras x;
        x.purpose = "stability";
        x.duration_s = duration_s;
        x.expected_s = static_cast<int>(duration_s);
        if (!schedule.empty()) {
          auto sid = ScheduleId(w, schedule);
          if (!sid.ok()) return sid.status();
          x.schedule_id = *sid;
        }
        auto id = CreateBaselineTx(w, *wl, 1, actor, x);
        if (!id.ok()) return id.status();
        return load(w, *id);
      },
      id_of, load);
}

Result<WatchRow> Store::CreateWatch(const std::string& workload, const std::string& schedule,
                                    int repeats, const std::string& actor) {
  return InTx<WatchRow>(pool_, clock_, [&](pqxx::work& w) -> Result<WatchRow> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    if (Status st = CheckNotArchived(wl->name, wl->archived(), "a periodic check"); !st.ok())
      return st;
    if (repeats == 0) repeats = 3;
    if (repeats < 1 || repeats > 100)
      return Status::InvalidArgument("--repeats: " + std::to_string(repeats) +
                                     " is out of range; allowed 1..100 runs per window");
    if (schedule.empty())
      return Status::InvalidArgument(
          "--schedule: missing; name the schedule whose windows the checks run in");
    auto sid = ScheduleId(w, schedule);
    if (!sid.ok()) return sid.status();
    auto active = w.exec_params(
        std::string(kWatchSelect) + "WHERE wa.workload_id = $1 AND wa.state = 'active'", wl->id);
    if (!active.empty()) {
      auto a = WatchFromRow(active[0]);
      return Status::AlreadyExists("workload " + wl->name + " is already watched on schedule " +
                                   a.schedule + " (watch " + std::to_string(a.id) +
                                   "); stop it first: tunectl regress stop " + wl->name);
    }
    const int64_t id =
        w.exec_params1(
             "INSERT INTO watches(workload_id, schedule_id, repeats, actor) VALUES ($1,$2,$3,$4) "
             "RETURNING id",
             wl->id, *sid, repeats, actor)[0]
            .as<int64_t>();
    Audit(w, actor, "watch.created", "watch", id,
          {{"workload", wl->name}, {"schedule", schedule}, {"repeats", repeats}});
    return WatchFromRow(w.exec_params(std::string(kWatchSelect) + "WHERE wa.id = $1", id)[0]);
  });
}

Result<WatchRow> Store::StopWatch(const std::string& workload, const std::string& actor) {
  return InTx<WatchRow>(pool_, clock_, [&](pqxx::work& w) -> Result<WatchRow> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    auto r = w.exec_params(
        "UPDATE watches SET state = 'stopped' WHERE workload_id = $1 AND state = 'active' "
        "RETURNING id",
        wl->id);
    if (r.empty())
      return Status::FailedPrecondition("workload " + wl->name +
                                        " has no active periodic check; start one with tunectl "
                                        "regress schedule " +
                                        wl->name + " --schedule NAME");
    const int64_t id = r[0][0].as<int64_t>();
    for (const auto& b : w.exec_params(
             "SELECT id FROM baselines WHERE watch_id = $1 AND state = 'running' FOR UPDATE", id)) {
      w.exec_params0(
          "UPDATE runs SET state = 'cancelled', finished_at = tunectl_now(), reason = 'watch "
          "stopped' "
          "WHERE baseline_id = $1 AND state = 'queued'",
          b[0].as<int64_t>());
      MaybeCompleteBaseline(w, b[0].as<int64_t>(), actor);
    }
    Audit(w, actor, "watch.stopped", "watch", id, {{"workload", wl->name}});
    return WatchFromRow(w.exec_params(std::string(kWatchSelect) + "WHERE wa.id = $1", id)[0]);
  });
}

Result<int> Store::QueueDueChecks(const std::map<int64_t, int64_t>& window_starts,
                                  const std::string& actor) {
  return InTx<int>(pool_, clock_, [&](pqxx::work& w) -> Result<int> {
    int queued = 0;
    for (const auto& r : w.exec(
             "SELECT wa.id AS id, wa.schedule_id AS schedule_id, wa.last_window AS last_window, "
             "wl.name AS workload, wa.repeats AS repeats, EXISTS (SELECT 1 FROM baselines b "
             "WHERE b.watch_id = wa.id AND b.state = 'running') AS checking FROM watches wa JOIN "
             "workloads wl ON wl.id = wa.workload_id WHERE wa.state = 'active' FOR UPDATE OF wa "
             "SKIP LOCKED")) {
      auto open = window_starts.find(r["schedule_id"].as<int64_t>());
      if (open == window_starts.end() || r["last_window"].as<int64_t>() >= open->second) continue;
      const int64_t watch = r["id"].as<int64_t>();
      w.exec_params0("UPDATE watches SET last_window = $2 WHERE id = $1", watch, open->second);
      // The previous check has not finished (it waits for windows too): do not pile up another.
      if (r["checking"].as<bool>()) continue;
      auto wl = LoadWorkload(w, r["workload"].as<std::string>());
      if (!wl.ok()) continue;
      BaselineExtras x;
      x.purpose = "check";
      x.schedule_id = r["schedule_id"].as<int64_t>();
      x.expected_s = ExpectedSecondsOfCurrentConfig(w, *wl);
      x.watch_id = watch;
      if (CreateBaselineTx(w, *wl, r["repeats"].as<int>(), actor, x).ok()) ++queued;
    }
    return queued;
  });
}

Result<int> Store::RequeueAtWindowEnd(const std::map<int64_t, int64_t>& window_starts) {
  return InTx<int>(pool_, clock_, [&](pqxx::work& w) -> Result<int> {
    json open = json::array();
    for (const auto& [id, _] : window_starts) open.push_back(id);
    auto r = w.exec_params(
        Sql("UPDATE runs r SET cancel_requested = true, cancel_reason = 'window' FROM schedules s "
            "WHERE s.id = r.schedule_id AND s.on_window_end = 'requeue' AND r.state IN {held} AND "
            "NOT r.cancel_requested AND NOT (r.schedule_id IN (SELECT "
            "jsonb_array_elements_text($1::jsonb)::bigint)) RETURNING r.id"),
        open.dump());
    for (const auto& row : r)
      Audit(w, "scheduler", "run.window_closed", "run", row[0].as<int64_t>(),
            {{"policy", "requeue"}});
    return static_cast<int>(r.size());
  });
}

Result<StoreSnapshot> Store::Snapshot() {
  return InTx<StoreSnapshot>(pool_, clock_, [&](pqxx::work& w) -> Result<StoreSnapshot> {
    StoreSnapshot s;
    for (const auto& r : w.exec("SELECT state, count(*) AS n FROM runs GROUP BY state"))
      s.runs_by_state[r["state"].as<std::string>()] = r["n"].as<int64_t>();
    for (const auto& r : w.exec("SELECT state, count(*) AS n FROM experiments GROUP BY state"))
      s.experiments_by_state[r["state"].as<std::string>()] = r["n"].as<int64_t>();
    s.agents_connected = w.exec1("SELECT count(*) FROM agents WHERE connected")[0].as<int64_t>();
    for (const auto& r : w.exec(
             "SELECT wl.name AS workload, g.metric, g.kind, count(*) FILTER (WHERE c.is_current "
             "AND g.resolved_at IS NULL) AS open, count(*) AS total "
             "FROM regressions g JOIN workloads wl ON wl.id = g.workload_id JOIN config_versions "
             "c ON c.id = g.config_id GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"))
      s.regressions.push_back({r["workload"].as<std::string>(), r["metric"].as<std::string>(),
                               r["kind"].as<std::string>(), r["open"].as<int64_t>(),
                               r["total"].as<int64_t>()});
    return s;
  });
}

Status Store::Ping() {
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    w.exec("SELECT 1");
    return true;
  }));
}

}  // namespace tunectl

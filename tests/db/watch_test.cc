#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "server/dispatch/dispatcher.h"
#include "server/store/leader.h"
#include "server/store/store.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

const char* const kSpec = R"(
name: demo
command: [train, "{nw}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary, min_effect: 0.05}
  mem_gb: {pattern: 'mem: ([0-9.]+)', better: lower}
run: {repeats: 2}
)";

struct Cluster {
  std::unique_ptr<TestDb> db;
  int64_t agent = 0;
  Store& st() { return db->store(); }
};

Cluster NewCluster(std::unique_ptr<TestDb> db) {
  Cluster c{std::move(db)};
  auto spec = ParseWorkloadSpec(kSpec);
  EXPECT_TRUE(c.st().ApplyWorkload(*spec, kSpec, "user:t").ok());
  c.agent = *c.st().RegisterAgent("n1", {}, 100, "t", "s1");
  return c;
}

// Stores `sps` (and a flat mem_gb) samples for steps 1..n and finishes the run.
void Complete(Store& st, int64_t agent, const LaunchPlan& p, const std::vector<double>& sps,
              bool duration_reached = false, const std::vector<double>& mem = {}) {
  ASSERT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, agent).ok());
  std::vector<SampleIn> samples;
  for (size_t i = 0; i < sps.size(); ++i) {
    const int64_t step = static_cast<int64_t>(i) + 1;
    samples.push_back({"sps", step, sps[i], step});
    samples.push_back({"mem_gb", step, mem.empty() ? 10.0 : mem[i], step});
  }
  ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, samples));
  RunResult r;
  r.batches = 1;
  r.duration_reached = duration_reached;
  ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, r, "agent:n1").ok());
}

// A level with small deterministic noise, `n` samples.
std::vector<double> Level(double v, int n, int phase = 0) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(v * (1 + 0.004 * std::sin(1.7 * (i + phase))));
  return out;
}

TEST(Watch, StabilityRunThatSlowsDownIsOneRegressionInTheLog) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  auto s = c.st().CreateStabilityRun("demo", 7200, "", "user:t");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->verdict, "pending");
  EXPECT_EQ(s->duration_s, 7200);
  auto plans = c.st().ClaimRuns(c.agent, {}, 10);
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_EQ((*plans)[0].duration_ms, 7200 * 1000);
  EXPECT_GT((*plans)[0].timeout_ms, (*plans)[0].duration_ms);  // the duration stops it first
  std::vector<double> sps = Level(100, 30);
  for (double v : Level(80, 30, 3)) sps.push_back(v);
  Complete(c.st(), c.agent, (*plans)[0], sps, /*duration_reached=*/true);
  // Finishing again (an agent resend) records nothing new.
  RunResult again;
  again.batches = 1;
  again.duration_reached = true;
  ASSERT_TRUE(c.st().FinishRun((*plans)[0].run_id, 1, again, "agent:n1").ok());

  auto run = c.st().GetRun((*plans)[0].run_id);
  EXPECT_EQ(run->state, "succeeded");  // stopped at its duration on purpose
  auto series = c.st().GetRegressionSeries("demo");
  ASSERT_TRUE(series.ok());
  ASSERT_EQ(series->recorded.size(), 1u);
  EXPECT_EQ(series->recorded[0].kind, "stability");
  EXPECT_EQ(series->recorded[0].metric, "sps");
  EXPECT_EQ(series->recorded[0].first_bad_run, (*plans)[0].run_id);
  EXPECT_THAT(series->recorded[0].message, HasSubstr("degraded part-way"));
  ASSERT_EQ(series->stability.size(), 1u);
  EXPECT_EQ(series->stability[0].verdict, "regression");
  EXPECT_TRUE(series->points.empty());  // a stability run is not a point of the series
  auto log = c.st().ListLog("demo", "");
  ASSERT_EQ(log->rows.size(), 1u);
  EXPECT_EQ(log->rows[0].kind, "regression");
  EXPECT_EQ(log->rows[0].experiment_id, 0);
  EXPECT_THAT(log->rows[0].entry_json, HasSubstr("\"first_bad_run\""));
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM audit_events WHERE kind = 'regression.detected'"),
            "1");
  auto snap = c.st().Snapshot();
  ASSERT_EQ(snap->regressions.size(), 1u);
  EXPECT_EQ(snap->regressions[0].current_config, 1);

  // Resolving it stops the alert and is logged; bad requests change nothing.
  const int64_t id = series->recorded[0].id;
  EXPECT_THAT(c.st().ResolveRegression(id, "", "user:t").status().message(),
              HasSubstr("--reason: missing"));
  EXPECT_EQ(c.st().ResolveRegression(id + 5, "x", "user:t").status().code(),
            Status::Code::kNotFound);
  auto resolved = c.st().ResolveRegression(id, "node n3 replaced", "user:t");
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(resolved->resolution, "node n3 replaced");
  EXPECT_EQ(resolved->resolved_by, "user:t");
  EXPECT_FALSE(resolved->resolved_at.empty());
  EXPECT_THAT(c.st().ResolveRegression(id, "again", "user:t").status().message(),
              HasSubstr("was resolved at"));
  EXPECT_EQ(c.st().Snapshot()->regressions[0].current_config, 0);
  EXPECT_EQ(c.st().Snapshot()->regressions[0].total, 1);
  auto log2 = c.st().ListLog("demo", "");
  ASSERT_EQ(log2->rows.size(), 2u);
  EXPECT_EQ(log2->rows[1].kind, "resolved");
  EXPECT_THAT(log2->rows[1].entry_json, HasSubstr("node n3 replaced"));
}

TEST(Watch, SteadyStabilityRunAndAFallingLossAreStable) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  ASSERT_TRUE(c.st().CreateStabilityRun("demo", 60, "", "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 10);
  ASSERT_EQ(plans->size(), 1u);
  Complete(c.st(), c.agent, (*plans)[0], Level(100, 60), true);
  auto series = c.st().GetRegressionSeries("demo");
  EXPECT_TRUE(series->recorded.empty());
  ASSERT_EQ(series->stability.size(), 1u);
  EXPECT_EQ(series->stability[0].verdict, "stable");
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM tuning_log"), "0");
}

TEST(Watch, MemoryCreepInAStabilityRunIsARegression) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  ASSERT_TRUE(c.st().CreateStabilityRun("demo", 60, "", "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 10);
  std::vector<double> mem = Level(10, 30);
  for (double v : Level(13, 30, 5)) mem.push_back(v);
  Complete(c.st(), c.agent, (*plans)[0], Level(100, 60), true, mem);
  auto series = c.st().GetRegressionSeries("demo");
  ASSERT_EQ(series->recorded.size(), 1u);
  EXPECT_EQ(series->recorded[0].metric, "mem_gb");
}

TEST(Watch, StabilityRefusalsChangeNothing) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  auto tiny = c.st().CreateStabilityRun("demo", 1, "", "user:t");
  EXPECT_THAT(tiny.status().message(), HasSubstr("--duration: 1s is out of range"));
  auto sched = c.st().CreateStabilityRun("demo", 600, "nope", "user:t");
  EXPECT_THAT(sched.status().message(), HasSubstr("--schedule: no schedule named \"nope\""));
  auto wl = c.st().CreateStabilityRun("other", 600, "", "user:t");
  EXPECT_EQ(wl.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM baselines"), "0");
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM runs"), "0");
}

// A baseline of 24 runs finished one after another, a degraded node from the 15th on (level 100,
// then 85); its runs in order.
std::vector<LaunchPlan> FinishAStep(Cluster& c) {
  EXPECT_TRUE(c.st().CreateBaseline("demo", 24, "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 100);
  EXPECT_TRUE(plans.ok() && plans->size() == 24u);
  if (!plans.ok()) return {};
  for (size_t i = 0; i < plans->size(); ++i) {
    const double level = i < 14 ? 100 : 85;
    const double noise = 1 + 0.01 * std::sin(2.3 * static_cast<double>(i));
    Complete(c.st(), c.agent, (*plans)[i], Level(level * noise, 12, static_cast<int>(i)));
  }
  return *plans;
}

TEST(Watch, ChangePointInTheSeriesIsRecordedOnceAsTheSeriesGrows) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  const std::vector<LaunchPlan> plans = FinishAStep(c);
  ASSERT_EQ(plans.size(), 24u);
  auto series = c.st().GetRegressionSeries("demo");
  ASSERT_EQ(series->points.size(), 24u);
  ASSERT_EQ(series->recorded.size(), 1u) << series->recorded.size();
  EXPECT_EQ(series->recorded[0].kind, "change_point");
  EXPECT_EQ(series->recorded[0].first_bad_run, plans[14].run_id);
  EXPECT_NEAR(*series->recorded[0].before, 100, 2);
  EXPECT_NEAR(*series->recorded[0].after, 85, 2);
  EXPECT_THAT(series->recorded[0].message, HasSubstr("without a config change"));
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM tuning_log WHERE kind = 'regression'"), "1");
}

// The watch's pass runs after the finish commits; a finish sent again for the same attempt (the
// agent got no ack: the pass failed, or the server died between the two) runs it again, so what
// the run confirms is still recorded, once.
TEST(Watch, AFinishSentAgainRunsTheWatchAgain) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  const std::vector<LaunchPlan> plans = FinishAStep(c);
  ASSERT_EQ(plans.size(), 24u);
  ASSERT_EQ(c.db->Scalar("SELECT count(*) FROM regressions"), "1");
  c.db->Scalar("DELETE FROM regressions RETURNING 1");  // as if the last pass never ran
  RunResult r;
  r.batches = 1;
  const LaunchPlan& last = plans.back();
  ASSERT_TRUE(c.st().FinishRun(last.run_id, last.attempt, r, "agent:n1").ok());
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM regressions"), "1");
  ASSERT_TRUE(c.st().FinishRun(last.run_id, last.attempt, r, "agent:n1").ok());
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM regressions"), "1");
  EXPECT_EQ(c.db->Scalar("SELECT state FROM runs WHERE id = " + std::to_string(last.run_id)),
            "succeeded");
}

// `n` runs of the current config's series made by SQL (a periodic check's), finished one a minute
// up to an hour ago, at `level` with small deterministic noise: a long history in a moment.
void History(TestDb& db, int n, double level) {
  const std::string bid = db.Scalar(
      "INSERT INTO baselines(workload_id, config_id, repeats, state, actor, purpose, "
      "spec_revision, finished_at) SELECT w.id, c.id, " +
      std::to_string(n) +
      ", 'completed', 't', 'check', w.spec_revision, now() FROM workloads w JOIN config_versions "
      "c ON c.workload_id = w.id AND c.is_current WHERE w.name = 'demo' RETURNING id");
  db.Scalar(
      "INSERT INTO runs(workload_id, baseline_id, config_id, idx, params, launch, state, "
      "started_at, finished_at) SELECT b.workload_id, b.id, b.config_id, g, '{}', '{}', "
      "'succeeded', now() - interval '1 hour' - (" +
      std::to_string(n) + " - g + 1) * interval '1 minute', now() - interval '1 hour' - (" +
      std::to_string(n) + " - g) * interval '1 minute' FROM baselines b, generate_series(1, " +
      std::to_string(n) + ") g WHERE b.id = " + bid + " RETURNING 1");
  db.Scalar(
      "INSERT INTO run_summaries(run_id, metric, samples, steady, median, usable) SELECT r.id, "
      "m.metric, 12, 12, CASE m.metric WHEN 'sps' THEN " +
      std::to_string(level) +
      " * (1 + 0.01 * sin(2.3 * r.idx)) ELSE 10 END, true FROM runs r, (VALUES ('sps'), "
      "('mem_gb')) m(metric) WHERE r.baseline_id = " +
      bid + " RETURNING 1");
}

// With more history than the watch reads (its newest 200 points), a step in the newest runs is
// still found, once, at its first bad run, and `regress show` gives the newest points it asks for.
TEST(Watch, AfterALongHistoryTheNewestRunsAreWatched) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  History(*c.db, 320, 100);
  ASSERT_TRUE(c.st().CreateBaseline("demo", 16, "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 100);
  ASSERT_EQ(plans->size(), 16u);
  for (size_t i = 0; i < plans->size(); ++i) {
    const double level = i < 4 ? 100 : 85;  // a degraded node from the 5th new run on
    const double noise = 1 + 0.01 * std::sin(2.3 * static_cast<double>(i));
    Complete(c.st(), c.agent, (*plans)[i], Level(level * noise, 12, static_cast<int>(i)));
  }
  auto series = c.st().GetRegressionSeries("demo", 50);
  ASSERT_TRUE(series.ok()) << series.status().message();
  ASSERT_EQ(series->points.size(), 50u);
  EXPECT_TRUE(series->more_points);
  EXPECT_EQ(series->points.back().run_id, plans->back().run_id);  // the newest, oldest first
  EXPECT_EQ(series->points[34].run_id, (*plans)[0].run_id);
  ASSERT_EQ(series->recorded.size(), 1u);
  EXPECT_EQ(series->recorded[0].first_bad_run, (*plans)[4].run_id);
  EXPECT_NEAR(*series->recorded[0].before, 100, 2);
  EXPECT_NEAR(*series->recorded[0].after, 85, 2);
  auto whole = c.st().GetRegressionSeries("demo", kMaxSeriesPoints);
  EXPECT_EQ(whole->points.size(), 336u);
  EXPECT_FALSE(whole->more_points);
}

// A finished run that confirms nothing does not wait for the workload's watcher: here one holds
// the workload's watch lock (as one recording a regression does, to its commit).
TEST(Watch, AFinishThatConfirmsNothingDoesNotWaitForTheWatcher) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  History(*c.db, 40, 100);
  ASSERT_TRUE(c.st().CreateBaseline("demo", 1, "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 100);
  ASSERT_EQ(plans->size(), 1u);
  const LaunchPlan p = (*plans)[0];
  ASSERT_TRUE(c.st().MarkRunStarted(p.run_id, p.attempt, c.agent).ok());
  std::vector<SampleIn> samples;
  for (int i = 0; i < 12; ++i) samples.push_back({"sps", i + 1, 100.5, i + 1});
  ASSERT_TRUE(*c.st().StoreMetricBatch(p.run_id, p.attempt, 1, samples));
  pqxx::connection raw(c.db->dsn());
  pqxx::work hold(raw);
  hold.exec(
      "SELECT pg_advisory_xact_lock(7325100, (SELECT id FROM workloads WHERE name = "
      "'demo')::int)");
  RunResult r;
  r.batches = 1;
  auto finish =
      std::async(std::launch::async, [&] { return c.st().FinishRun(p.run_id, 1, r, "agent:n1"); });
  const bool prompt = finish.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  hold.abort();
  EXPECT_TRUE(prompt) << "the finish waited for the workload's watch lock";
  EXPECT_TRUE(finish.get().ok());
  EXPECT_EQ(c.db->Scalar("SELECT state FROM runs WHERE id = " + std::to_string(p.run_id)),
            "succeeded");
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM regressions"), "0");
}

// A step in runs that finish at once on many agents (each finish's watch pass reading without a
// lock) is recorded once, with one log entry, at one of the new runs.
TEST(Watch, AStepInRunsFinishingAtOnceIsRecordedOnce) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  History(*c.db, 60, 100);
  ASSERT_TRUE(c.st().CreateBaseline("demo", 16, "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 100);
  ASSERT_EQ(plans->size(), 16u);
  std::set<int64_t> fresh;
  for (size_t i = 0; i < plans->size(); ++i) {
    const LaunchPlan& p = (*plans)[i];
    fresh.insert(p.run_id);
    ASSERT_TRUE(c.st().MarkRunStarted(p.run_id, p.attempt, c.agent).ok());
    std::vector<SampleIn> samples;
    const std::vector<double> level =
        Level(85 * (1 + 0.01 * std::sin(2.3 * static_cast<double>(i))), 12, static_cast<int>(i));
    for (size_t k = 0; k < level.size(); ++k)
      samples.push_back(
          {"sps", static_cast<int64_t>(k) + 1, level[k], static_cast<int64_t>(k) + 1});
    ASSERT_TRUE(*c.st().StoreMetricBatch(p.run_id, p.attempt, 1, samples));
  }
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      RunResult r;
      r.batches = 1;
      for (size_t i = t; i < plans->size(); i += 8)
        EXPECT_TRUE(c.st().FinishRun((*plans)[i].run_id, 1, r, "agent:n1").ok());
    });
  for (auto& t : ts) t.join();
  auto series = c.st().GetRegressionSeries("demo");
  ASSERT_TRUE(series.ok()) << series.status().message();
  ASSERT_EQ(series->recorded.size(), 1u);
  EXPECT_EQ(fresh.count(series->recorded[0].first_bad_run), 1u);
  EXPECT_NEAR(*series->recorded[0].after, 85, 2);
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM tuning_log WHERE kind = 'regression'"), "1");
}

TEST(Watch, StableSeriesRecordsNothing) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  ASSERT_TRUE(c.st().CreateBaseline("demo", 24, "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 100);
  for (size_t i = 0; i < plans->size(); ++i)
    Complete(c.st(), c.agent, (*plans)[i],
             Level(100 * (1 + 0.02 * std::sin(2.3 * static_cast<double>(i))), 12));
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM regressions"), "0");
}

ScheduleRow Nightly(const std::string& policy = "finish", int max_agents = 0) {
  ScheduleRow row;
  row.name = "nightly";
  row.window = "Mon-Fri 01:00-06:00";
  row.tz = "UTC";
  row.on_window_end = policy;
  row.max_agents = max_agents;
  return row;
}

TEST(Watch, OneCheckPerWindowAndNoneWhileTheLastIsUnfinished) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  const int64_t sched = *c.st().CreateSchedule(Nightly(), "user:t");
  auto w = c.st().CreateWatch("demo", "nightly", 2, "user:t");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->state, "active");
  EXPECT_EQ(*c.st().QueueDueChecks({}, "scheduler"), 0);  // no window open
  EXPECT_EQ(*c.st().QueueDueChecks({{sched, 1000}}, "scheduler"), 1);
  EXPECT_EQ(*c.st().QueueDueChecks({{sched, 1000}}, "scheduler"), 0);  // same window
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM runs WHERE schedule_id IS NOT NULL"), "2");
  // Next window, but the first check has not run: nothing piles up.
  EXPECT_EQ(*c.st().QueueDueChecks({{sched, 2000}}, "scheduler"), 0);
  // Its runs are claimed only inside a window.
  EXPECT_TRUE(c.st().ClaimRuns(c.agent, {}, 10)->empty());
  auto plans = c.st().ClaimRuns(c.agent, {}, 10, "{\"" + std::to_string(sched) + "\": 3600}");
  ASSERT_EQ(plans->size(), 2u);
  for (const auto& p : *plans) Complete(c.st(), c.agent, p, Level(100, 12));
  EXPECT_EQ(*c.st().QueueDueChecks({{sched, 3000}}, "scheduler"), 1);
  auto series = c.st().GetRegressionSeries("demo");
  EXPECT_EQ(series->points.size(), 2u);  // the check runs extend the series
  ASSERT_TRUE(series->watch.has_value());
  EXPECT_EQ(series->watch->checks, 2);
  // Stopping cancels the pending check's runs; no more are queued.
  auto stopped = c.st().StopWatch("demo", "user:t");
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->state, "stopped");
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM runs WHERE state = 'queued'"), "0");
  EXPECT_EQ(*c.st().QueueDueChecks({{sched, 9000}}, "scheduler"), 0);
}

TEST(Watch, WatchRefusalsChangeNothing) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  ASSERT_TRUE(c.st().CreateSchedule(Nightly(), "user:t").ok());
  EXPECT_THAT(c.st().CreateWatch("demo", "nope", 3, "user:t").status().message(),
              HasSubstr("schedules: nightly"));
  EXPECT_THAT(c.st().CreateWatch("demo", "nightly", 101, "user:t").status().message(),
              HasSubstr("--repeats: 101 is out of range"));
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM watches"), "0");
  ASSERT_TRUE(c.st().CreateWatch("demo", "nightly", 0, "user:t").ok());
  auto twice = c.st().CreateWatch("demo", "nightly", 3, "user:t");
  EXPECT_EQ(twice.status().code(), Status::Code::kAlreadyExists);
  EXPECT_THAT(twice.status().message(), HasSubstr("tunectl regress stop demo"));
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM watches"), "1");
  EXPECT_EQ(c.db->Scalar("SELECT repeats FROM watches"), "3");  // 0 = the default 3
  EXPECT_EQ(c.st().StopWatch("demo", "user:t").status().code(), Status::Code::kOk);
  EXPECT_EQ(c.st().StopWatch("demo", "user:t").status().code(), Status::Code::kFailedPrecondition);
}

TEST(Watch, WindowEndRequeuesRunsOfARequeueSchedule) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  const int64_t sched = *c.st().CreateSchedule(Nightly("requeue"), "user:t");
  ASSERT_TRUE(c.st().CreateStabilityRun("demo", 600, "nightly", "user:t").ok());
  const std::string open = "{\"" + std::to_string(sched) + "\": 3600}";
  auto plans = c.st().ClaimRuns(c.agent, {}, 10, open);
  ASSERT_EQ(plans->size(), 1u);
  const LaunchPlan p = (*plans)[0];
  ASSERT_TRUE(c.st().MarkRunStarted(p.run_id, p.attempt, c.agent).ok());
  EXPECT_EQ(*c.st().RequeueAtWindowEnd({{sched, 0}}), 0);  // still open
  EXPECT_EQ(*c.st().RequeueAtWindowEnd({}), 1);            // closed
  EXPECT_EQ(*c.st().RequeueAtWindowEnd({}), 0);            // asked once
  auto cancels = c.st().PendingCancels(c.agent);
  ASSERT_EQ(cancels->size(), 1u);
  RunResult r;
  r.reason = "cancelled";
  r.signal = 15;
  ASSERT_TRUE(c.st().FinishRun(p.run_id, p.attempt, r, "agent:n1").ok());
  auto run = c.st().GetRun(p.run_id);
  EXPECT_EQ(run->state, "queued");
  EXPECT_EQ(run->attempt, 2);
  EXPECT_THAT(run->reason, HasSubstr("end of its window"));
  EXPECT_EQ(c.db->Scalar("SELECT max_attempts FROM runs"), "4");  // not counted as a failure
  EXPECT_TRUE(c.st().ClaimRuns(c.agent, {}, 10)->empty());        // waits for the next window
  EXPECT_EQ(c.st().ClaimRuns(c.agent, {}, 10, open)->size(), 1u);
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM regressions"), "0");
}

TEST(Watch, WindowEndLetsRunsOfAFinishScheduleComplete) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  const int64_t sched = *c.st().CreateSchedule(Nightly("finish"), "user:t");
  ASSERT_TRUE(c.st().CreateStabilityRun("demo", 600, "nightly", "user:t").ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 10, "{\"" + std::to_string(sched) + "\": 3600}");
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_EQ(*c.st().RequeueAtWindowEnd({}), 0);
  EXPECT_TRUE(c.st().PendingCancels(c.agent)->empty());
}

TEST(Watch, MaxAgentsCapsTheAgentsRunningAScheduleAtOnce) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  const int64_t sched = *c.st().CreateSchedule(Nightly("finish", 1), "user:t");
  const int64_t other = *c.st().RegisterAgent("n2", {}, 100, "t", "s2");
  ASSERT_TRUE(c.st().CreateWatch("demo", "nightly", 3, "user:t").ok());
  ASSERT_EQ(*c.st().QueueDueChecks({{sched, 1}}, "scheduler"), 1);
  const std::string open = "{\"" + std::to_string(sched) + "\": 3600}";
  auto first = c.st().ClaimRuns(c.agent, {}, 1, open);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_TRUE(c.st().ClaimRuns(other, {}, 10, open)->empty());    // one agent at a time
  EXPECT_EQ(c.st().ClaimRuns(c.agent, {}, 2, open)->size(), 1u);  // the same agent may add more
  ASSERT_TRUE(c.st().MarkRunStarted((*first)[0].run_id, 1, c.agent).ok());
  c.db->Scalar("UPDATE runs SET state = 'succeeded', finished_at = now() WHERE agent_id = " +
               std::to_string(c.agent) + " RETURNING 1");
  EXPECT_EQ(c.st().ClaimRuns(other, {}, 10, open)->size(), 1u);  // free again
}

TEST(LeaderLock, OneServerLeadsAndAnotherTakesOverWhenItGoes) {
  TUNECTL_TEST_DB(db);
  auto a = std::make_unique<LeaderLock>(db->dsn(), 4242);
  LeaderLock b(db->dsn(), 4242);
  EXPECT_TRUE(a->Check());
  EXPECT_FALSE(b.Check());
  EXPECT_TRUE(a->Check());  // still held
  a.reset();                // its connection closes: the lock is released
  EXPECT_TRUE(b.Check());
}

TEST(Scheduler, OnlyTheLeaderQueuesChecksInWindowsOfTheInjectedClock) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  ASSERT_TRUE(c.st().CreateSchedule(Nightly(), "user:t").ok());  // Mon-Fri 01:00-06:00 UTC
  ASSERT_TRUE(c.st().CreateWatch("demo", "nightly", 1, "user:t").ok());
  // One clock for the store (its records and decisions) and the dispatcher (its windows).
  ManualClock clock(1796603400LL * 1000);  // Mon 2026-12-07 00:30 UTC: before the window
  Store st(&c.db->pool(), &clock);
  bool lead = false;
  DispatcherOptions o;
  o.clock = &clock;
  o.try_lead = [&] { return lead; };
  Dispatcher d(&st, o, [](LogLevel, const std::string&) {});
  EXPECT_EQ(d.ScheduleOnce(), 0);
  clock.Advance(3600 * 1000);      // 01:30, inside
  EXPECT_EQ(d.ScheduleOnce(), 0);  // another server leads
  EXPECT_FALSE(d.leader());
  lead = true;
  // Three nights: one check each, its run finished inside the window.
  for (int night = 0; night < 3; ++night) {
    EXPECT_EQ(d.ScheduleOnce(), 1) << "night " << night;
    EXPECT_TRUE(d.leader());
    EXPECT_EQ(d.ScheduleOnce(), 0);
    auto plans = st.ClaimRuns(c.agent, {}, 10, "{\"1\": 3600}");
    ASSERT_EQ(plans->size(), 1u);
    Complete(st, c.agent, (*plans)[0], Level(100, 12));
    clock.Advance(86400LL * 1000);
  }
  clock.Advance(2 * 86400LL * 1000);  // Saturday: no window
  EXPECT_EQ(d.ScheduleOnce(), 0);
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM baselines WHERE purpose = 'check'"), "3");
  // The records carry the injected clock's days, not the wall clock's.
  EXPECT_EQ(c.db->Scalar("SELECT string_agg(to_char(created_at AT TIME ZONE 'UTC', 'Dy HH24:MI'), "
                         "',' ORDER BY id) FROM baselines WHERE purpose = 'check'"),
            "Mon 01:30,Tue 01:30,Wed 01:30");
}

TEST(SkipSteps, CheckpointStepsAreLeftOutOfTheRunSummary) {
  TUNECTL_TEST_DB(db);
  std::string text = kSpec;
  text.replace(text.find("run: {repeats: 2}"), 17,
               "run: {repeats: 2, skip_steps: {checkpoint: 'saving checkpoint'}}");
  auto spec = ParseWorkloadSpec(text);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(*spec, text, "user:t").ok());
  const int64_t agent = *st.RegisterAgent("n1", {}, 10, "t", "s1");
  ASSERT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
  auto plans = st.ClaimRuns(agent, {}, 10);
  ASSERT_EQ(plans->size(), 1u);
  const LaunchPlan& p = (*plans)[0];
  bool has_rule = false;  // the agent gets the skip rule with the metric rules
  for (const auto& m : p.metrics)
    has_rule |= m.name == "skip:checkpoint" && m.pattern == "saving checkpoint";
  EXPECT_TRUE(has_rule);
  ASSERT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, agent).ok());
  std::vector<SampleIn> samples;
  for (int step = 1; step <= 20; ++step)
    samples.push_back({"sps", step, step == 10 ? 5.0 : 100.0 + step % 3, step});
  samples.push_back({"skip:checkpoint", 10, 1, 10});
  ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, samples));
  RunResult r;
  r.batches = 1;
  ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, r, "agent:n1").ok());
  auto run = st.GetRun(p.run_id);
  ASSERT_TRUE(run.ok());
  const RunMetricRow* sps = nullptr;
  for (const auto& m : run->metrics) {
    EXPECT_NE(m.metric, "skip:checkpoint");  // a mark, not a metric
    if (m.metric == "sps") sps = &m;
  }
  ASSERT_NE(sps, nullptr);
  EXPECT_EQ(sps->samples, 19);
  EXPECT_GE(*sps->min, 100);  // the slow checkpoint step is not in the summary
  EXPECT_THAT(sps->warnings, HasSubstr("1 sample(s) at skipped steps"));
}

TEST(Scheduler, TwoServersOnOneDatabaseScheduleOnce) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  ASSERT_TRUE(c.st().CreateSchedule(Nightly(), "user:t").ok());
  ASSERT_TRUE(c.st().CreateWatch("demo", "nightly", 1, "user:t").ok());
  const int64_t monday_0130 = 1796603400 + 3600;
  auto server = [&](LeaderLock* lock) {
    static ManualClock clock(monday_0130 * 1000);
    DispatcherOptions o;
    o.clock = &clock;
    o.try_lead = [lock] { return lock->Check(); };
    return std::make_unique<Dispatcher>(&c.st(), o, [](LogLevel, const std::string&) {});
  };
  auto lock_a = std::make_unique<LeaderLock>(c.db->dsn());
  LeaderLock lock_b(c.db->dsn());
  auto a = server(lock_a.get());
  auto b = server(&lock_b);
  EXPECT_EQ(a->ScheduleOnce(), 1);  // a leads and queues tonight's check
  EXPECT_EQ(b->ScheduleOnce(), 0);  // b does not lead
  EXPECT_TRUE(a->leader());
  EXPECT_FALSE(b->leader());
  a.reset();
  lock_a.reset();                   // server a goes away
  EXPECT_EQ(b->ScheduleOnce(), 0);  // b takes over; tonight's check exists already
  EXPECT_TRUE(b->leader());
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM baselines WHERE purpose = 'check'"), "1");
}

TEST(Watch, CancellingAStabilityRunStopsItWithoutARegression) {
  TUNECTL_TEST_DB(db);
  Cluster c = NewCluster(std::move(db));
  auto s = c.st().CreateStabilityRun("demo", 7200, "", "user:t");
  ASSERT_TRUE(s.ok());
  auto plans = c.st().ClaimRuns(c.agent, {}, 10);
  ASSERT_EQ(plans->size(), 1u);
  ASSERT_TRUE(c.st().MarkRunStarted((*plans)[0].run_id, 1, c.agent).ok());
  EXPECT_EQ(c.st().CancelBaseline(s->baseline_id + 7, "user:t").status().code(),
            Status::Code::kNotFound);
  auto b = c.st().CancelBaseline(s->baseline_id, "user:t");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->state, "cancelled");
  EXPECT_EQ(b->purpose, "stability");
  ASSERT_EQ(c.st().PendingCancels(c.agent)->size(), 1u);  // the agent is told to stop it
  RunResult r;
  r.reason = "cancelled";
  r.signal = 15;
  ASSERT_TRUE(c.st().FinishRun((*plans)[0].run_id, 1, r, "agent:n1").ok());
  EXPECT_EQ(c.st().GetRun((*plans)[0].run_id)->state, "cancelled");
  EXPECT_EQ(c.db->Scalar("SELECT count(*) FROM regressions"), "0");
  EXPECT_EQ(c.st().GetBaseline(s->baseline_id)->state, "cancelled");
  EXPECT_EQ(c.st().CancelBaseline(s->baseline_id, "user:t").status().code(),
            Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace tunectl

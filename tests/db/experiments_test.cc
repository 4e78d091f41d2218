#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <set>

#include "server/store/store.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

AgentNodeState IsolatedSlots() {
  AgentNodeState n;
  n.isolated_slots = true;
  return n;
}

using ::testing::Contains;
using ::testing::HasSubstr;

WorkloadSpec Spec() {
  auto s = ParseWorkloadSpec(R"(
name: demo
command: [train, "{nw}", "{li}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
  li: {type: int, default: 1, min: 1}
metrics:
  sps:  {pattern: 'sps: ([0-9.]+)', better: higher, role: primary, min_effect: 0.03}
  loss: {json: loss, better: lower, role: guardrail, tolerance: 0.01}
run: {repeats: 3, warmup_steps: 0}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

// Runs every queued run on one agent, reporting `level(arm)` as sps and a flat loss.
void RunAll(Store& st, int64_t agent, double control, double variant, bool crash_variant = false,
            bool nan_loss_in_variant = false) {
  for (;;) {
    auto plans = st.ClaimRuns(agent, {}, 100);
    ASSERT_TRUE(plans.ok()) << plans.status().message();
    if (plans->empty()) return;
    for (const auto& p : *plans) {
      auto run = st.GetRun(p.run_id);
      const bool is_variant = run->arm == "variant";
      const double level = is_variant ? variant : control;
      std::vector<SampleIn> s;
      for (int k = 1; k <= 5; ++k) {
        // Runs differ by up to ±0.3 % (run to run noise); samples within a run by 0.4 %.
        s.push_back({"sps", k,
                     level * (1 + 0.002 * (static_cast<double>((p.run_id * 3) % 4) - 1.5)) *
                         (1 + 0.001 * static_cast<double>((p.run_id * 7 + k) % 5 - 2)),
                     k});
        s.push_back({"loss", k,
                     nan_loss_in_variant && is_variant && k == 3
                         ? std::numeric_limits<double>::quiet_NaN()
                         : 1.377 + 0.0001 * ((p.run_id + k) % 3),
                     k});
      }
      ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, s));
      const int exit_code = crash_variant && is_variant ? 1 : 0;
      ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {exit_code, 0, "", "", 1, 10}, "agent:t").ok());
    }
  }
}

struct Loop {
  std::unique_ptr<TestDb> db;
  int64_t agent = 0;
  int64_t baseline = 0;
};

Loop MeasuredBaseline(std::unique_ptr<TestDb> db) {
  Loop l;
  l.db = std::move(db);
  Store& st = l.db->store();
  EXPECT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  // Isolated slots: an experiment's runs may all be claimed at once, as these tests drive them.
  l.agent = *st.RegisterAgent("n1", {}, 100, "t", "s1", {}, IsolatedSlots());
  l.baseline = *st.CreateBaseline("demo", 3, "user:t");
  RunAll(st, l.agent, 100, 100);
  EXPECT_EQ(st.GetBaseline(l.baseline)->state, "completed");
  return l;
}

std::string Counts(TestDb& db) {
  return db.Scalar(
      "SELECT (SELECT count(*) FROM experiments) || '/' || (SELECT count(*) FROM runs) || '/' || "
      "(SELECT count(*) FROM hypotheses) || '/' || (SELECT count(*) FROM audit_events) || '/' || "
      "(SELECT count(*) FROM config_versions)");
}

TEST(Experiments, ANodeWithoutIsolatedSlotsRunsOneOfItsRunsAtATime) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  const int64_t plain = *st.RegisterAgent("n2", {}, 4, "t", "s2");  // slots not isolated
  ASSERT_TRUE(st.DisconnectAgent(l.agent, "s1", false).ok());
  auto e = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:t");
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto plans = st.ClaimRunsFor({{plain, "s2", {}, 4}});
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  ASSERT_EQ((*plans)[plain].size(), 1u);  // four free slots, one run of the experiment
  EXPECT_EQ((*plans)[plain][0].experiment_id, *e);
  EXPECT_EQ((*plans)[plain][0].arm, "control");
  EXPECT_EQ(st.ClaimRunsFor({{plain, "s2", {}, 4}})->size(), 0u);  // the variant waits
  // The same node, reconnected with isolated slots, takes the rest side by side.
  ASSERT_TRUE(st.RegisterAgent("n2", {}, 4, "t", "s3", {}, IsolatedSlots()).ok());
  plans = st.ClaimRunsFor({{plain, "s3", {}, 4}});
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  EXPECT_EQ((*plans)[plain].size(), 3u);
}

TEST(Experiments, RefusedInputsLeaveTheDatabaseUnchanged) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  const std::string before = Counts(*l.db);
  struct Case {
    ExperimentIn in;
    std::string message;
  } cases[] = {
      {{"", 0, {"nw=8", "li=5"}, 0, 0}, "single-variable rule"},
      {{"", 0, {"nww=8"}, 0, 0}, "did you mean \"nw\""},
      {{"", 0, {"nw=x"}, 0, 0}, "is not an integer"},
      {{"", 0, {"nw=99"}, 0, 0}, "out of range"},
      {{"", 0, {"nw=1"}, 0, 0}, "the baseline's value already"},
      {{"", 0, {}, 0, 0}, "--vary: missing"},
      {{"", 0, {"nw=8"}, 0, 1}, "--repeats: 1 runs per arm is out of range"},
      {{"", 0, {"nw=8"}, 42, 0}, "hypothesis 42 not found"},
      {{"", 999, {"nw=8"}, 0, 0}, "baseline 999 not found"},
      {{"nope", 0, {"nw=8"}, 0, 0}, "workload \"nope\" not found"},
  };
  for (const auto& c : cases) {
    auto r = st.CreateExperiment(c.in, "user:t");
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
  EXPECT_EQ(Counts(*l.db), before);
}

TEST(Experiments, InterleavesControlAndVariantInAbbaBlocks) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  auto id = l.db->store().CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:t");
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(l.db->Scalar("SELECT string_agg(left(arm, 1), '' ORDER BY idx) FROM runs WHERE "
                         "experiment_id = " +
                         std::to_string(*id)),
            "cvvccvvc");
  EXPECT_EQ(l.db->Scalar("SELECT DISTINCT launch->'argv'->>1 FROM runs WHERE arm = 'variant'"),
            "8");
}

TEST(Experiments, ClearEffectIsImprovedConfirmedAndFreezesIntoV2) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto h = st.CreateHypothesis({"", 0, {"nw=8"}, "sps +10%", "data wait 40%", "starved"}, "user:a");
  ASSERT_TRUE(h.ok()) << h.status().message();
  auto id = st.CreateExperiment({"", 0, {}, *h, 4}, "user:a");
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_TRUE(st.GetHypothesis(*h)->locked);
  // a locked hypothesis cannot start another experiment, nor be edited
  EXPECT_THAT(st.CreateExperiment({"", 0, {}, *h, 4}, "user:a").status().message(),
              HasSubstr("is locked"));
  EXPECT_THROW(l.db->Scalar("UPDATE hypotheses SET statement = 'x' RETURNING 1"), std::exception);
  RunAll(st, l.agent, 100, 200);
  auto e = st.GetExperiment(*id);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state, "decided");
  EXPECT_EQ(e->decision, "improved");
  ASSERT_TRUE(e->verdict);
  EXPECT_EQ(e->verdict->hypothesis, "confirmed");
  EXPECT_NEAR(e->verdict->metrics[0].ratio, 2.0, 0.01);
  EXPECT_EQ(e->agent, "n1");

  auto f = st.FreezeExperiment(*id, false, "", "user:b");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->state, "frozen");
  EXPECT_EQ(f->frozen_version, 2);
  auto cfg = st.GetConfig("demo");
  ASSERT_EQ(cfg->lineage.size(), 2u);
  EXPECT_TRUE(cfg->lineage[1].current);
  EXPECT_EQ(cfg->lineage[1].params.at("nw"), "8");
  EXPECT_EQ(cfg->lineage[1].experiment_id, *id);
  // the variant runs are v2's measured level: its baseline is complete with their summary
  const int64_t b2 = std::stoll(l.db->Scalar("SELECT max(id) FROM baselines"));
  auto b = st.GetBaseline(b2);
  EXPECT_EQ(b->state, "completed");
  EXPECT_EQ(b->config_version, 2);
  EXPECT_EQ(b->runs_succeeded, 4);
  EXPECT_NEAR(b->summaries[0].stats.median, 200, 1);
  // freezing twice, or an experiment against the old config, is refused
  EXPECT_THAT(st.FreezeExperiment(*id, false, "", "user:b").status().message(),
              HasSubstr("already frozen as config v2"));
  auto log = st.ListLog("demo", "");
  ASSERT_EQ(log->rows.size(), 1u);
  EXPECT_EQ(log->rows[0].frozen, "v2");
  EXPECT_THAT(log->rows[0].entry_json, HasSubstr("\"expected\":\"sps +10%\""));
  EXPECT_THAT(log->rows[0].entry_json, HasSubstr("\"result\":\"confirmed\""));
  EXPECT_EQ(st.ListLog("demo", "li")->rows.size(), 0u);
  EXPECT_EQ(st.ListLog("demo", "nw")->rows.size(), 1u);
  // the log and the audit trail are append-only
  EXPECT_THROW(l.db->Scalar("UPDATE tuning_log SET actor = 'x' RETURNING 1"), std::exception);
  EXPECT_THROW(l.db->Scalar("DELETE FROM audit_events RETURNING 1"), std::exception);
}

TEST(Experiments, NoEffectIsNotImprovedAndFreezeNeedsForceWithReason) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"li=5"}, 0, 4}, "user:a");
  RunAll(st, l.agent, 100, 100);
  auto e = st.GetExperiment(*id);
  EXPECT_NE(e->decision, "improved");
  const std::string before = Counts(*l.db);
  auto f = st.FreezeExperiment(*id, false, "", "user:b");
  EXPECT_THAT(f.status().message(), HasSubstr("not improved"));
  EXPECT_THAT(st.FreezeExperiment(*id, true, "", "user:b").status().message(),
              HasSubstr("--reason: missing"));
  EXPECT_EQ(Counts(*l.db), before);
  auto forced = st.FreezeExperiment(*id, true, "needed by the release", "user:b");
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_EQ(st.ListLog("demo", "")->rows.at(0).frozen, "v2 (forced: needed by the release)");
}

TEST(Experiments, CrashedVariantVetoesImproved) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  RunAll(st, l.agent, 100, 200, /*crash_variant=*/true);
  auto e = st.GetExperiment(*id);
  EXPECT_EQ(e->decision, "regressed");
  EXPECT_EQ(e->verdict->stopped, "failed: exit code 1");
  EXPECT_THAT(e->verdict->reasons, Contains(HasSubstr("2 variant run(s) failed")));
}

TEST(Experiments, FreezeAgainstAnOldConfigIsRefused) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto a = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  auto b = st.CreateExperiment({"", 0, {"nw=4"}, 0, 4}, "user:a");
  RunAll(st, l.agent, 100, 200);
  ASSERT_TRUE(st.FreezeExperiment(*a, false, "", "user:b").ok());
  auto r = st.FreezeExperiment(*b, false, "", "user:b");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("compared against config v1, but demo's current config is v2"));
  // without --baseline, a new experiment now compares against v2's level
  auto c = st.CreateExperiment({"", 0, {"nw=16"}, 0, 4}, "user:a");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(st.GetExperiment(*c)->config_version, 2);
  EXPECT_EQ(st.GetExperiment(*c)->change.from.at("nw"), "8");
}

TEST(Experiments, CancelStopsQueuedRunsAndFlagsRunningOnes) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  auto claimed = st.ClaimRuns(l.agent, {}, 2);
  ASSERT_EQ(claimed->size(), 2u);
  auto c = st.CancelExperiment(*id, "user:a");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->state, "cancelled");
  EXPECT_EQ(st.PendingCancels(l.agent)->size(), 2u);
  EXPECT_EQ(l.db->Scalar("SELECT count(*) FROM runs WHERE experiment_id = " + std::to_string(*id) +
                         " AND state = 'cancelled'"),
            "6");
  EXPECT_THAT(st.CancelExperiment(*id, "user:a").status().message(),
              HasSubstr("only a running one"));
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Experiments, NonFiniteGuardrailInAVariantVetoesImproved) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  RunAll(st, l.agent, 100, 200, false, /*nan_loss_in_variant=*/true);
  auto e = st.GetExperiment(*id);
  EXPECT_EQ(e->decision, "regressed");
  ASSERT_FALSE(e->verdict->reasons.empty());
  EXPECT_THAT(e->verdict->reasons.back(), HasSubstr("non-finite loss"));
}

TEST(Experiments, DriftAlarmWhenControlsMovedFromTheBaseline) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));  // baseline level 100
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  RunAll(st, l.agent, 90, 180);  // the cluster got 10 % slower since
  auto e = st.GetExperiment(*id);
  EXPECT_EQ(e->decision, "improved");
  EXPECT_THAT(e->verdict->drift, HasSubstr("the cluster moved"));
  EXPECT_THAT(e->verdict->drift, HasSubstr("-10."));
}

TEST(Experiments, ClearEffectStopsBeforeTheCap) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 10}, "user:a");
  EXPECT_EQ(l.db->Scalar("SELECT count(*) FROM runs WHERE experiment_id = " + std::to_string(*id)),
            "8");
  RunAll(st, l.agent, 100, 200);
  auto e = st.GetExperiment(*id);
  EXPECT_EQ(e->decision, "improved");
  EXPECT_EQ(e->verdict->pairs, 4);
  EXPECT_EQ(e->runs_total, 8);
}

TEST(Experiments, ARunningExperimentShowsEachArmAndTheEstimateSoFarWithoutDeciding) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 10}, "user:a");
  ASSERT_TRUE(id.ok()) << id.status().message();
  auto e = st.GetExperiment(*id);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->arms.control.queued, 4);
  EXPECT_EQ(e->arms.variant.queued, 4);
  ASSERT_TRUE(e->interim);
  EXPECT_EQ(e->interim->verdict.pairs, 0);
  EXPECT_EQ(e->interim->verdict.min_pairs, 4);

  // Two pairs finish (+100 %), a third pair's control is running with samples stored so far.
  auto plans = st.ClaimRuns(l.agent, {}, 5);
  ASSERT_TRUE(plans.ok());
  ASSERT_EQ(plans->size(), 5u);
  for (size_t i = 0; i < plans->size(); ++i) {
    const auto& p = (*plans)[i];
    const bool variant = st.GetRun(p.run_id)->arm == "variant";
    std::vector<SampleIn> s;
    for (int k = 1; k <= 5; ++k)
      s.push_back({"sps", k, (variant ? 200.0 : 100.0) * (1 + 0.001 * ((p.run_id + k) % 3)), k});
    ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, s));
    if (i == 4) {
      ASSERT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, l.agent, {}).ok());
      auto live = st.GetRun(p.run_id);
      ASSERT_TRUE(live.ok());
      EXPECT_TRUE(live->live);  // a running run's metrics are the samples so far
      bool found = false;
      for (const auto& m : live->metrics)
        if (m.metric == "sps") {
          found = true;
          EXPECT_EQ(m.samples, 5);
          ASSERT_TRUE(m.median);
          EXPECT_NEAR(*m.median, variant ? 200 : 100, 1);
        }
      EXPECT_TRUE(found);
      continue;
    }
    ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 10}, "agent:t").ok());
  }
  e = st.GetExperiment(*id);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state, "running");
  EXPECT_TRUE(e->decision.empty());
  EXPECT_EQ(e->arms.control.succeeded + e->arms.variant.succeeded, 4);
  EXPECT_EQ(e->arms.control.compared + e->arms.variant.compared, 4);
  EXPECT_EQ(e->arms.control.active + e->arms.variant.active, 1);
  EXPECT_EQ(e->arms.control.queued + e->arms.variant.queued, 3);
  ASSERT_TRUE(e->interim);
  const Verdict& v = e->interim->verdict;
  EXPECT_EQ(v.pairs, 2);
  ASSERT_FALSE(v.metrics.empty());
  EXPECT_EQ(v.metrics[0].metric, "sps");
  EXPECT_NEAR(v.metrics[0].ratio, 2.0, 0.01);
  EXPECT_GT(v.metrics[0].ci_low, 1.5);  // a fixed-sample CI before the first look
  EXPECT_EQ(v.metrics[0].n_control, 2);
  EXPECT_EQ(v.metrics[0].decision, "");  // an estimate, not a decision
  EXPECT_THAT(e->interim->ci, HasSubstr("fixed-sample"));
  // Nothing was recorded: the estimate is computed on reading, the verdict column stays empty.
  EXPECT_EQ(l.db->Scalar("SELECT count(*) FROM experiments WHERE verdict IS NOT NULL"), "0");
  EXPECT_FALSE(e->verdict);
}

TEST(Experiments, AfterAFreezeTheWatchedSeriesIsTheNewConfigsRuns) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  ASSERT_TRUE(id.ok()) << id.status().message();
  RunAll(st, l.agent, 100, 200);
  ASSERT_TRUE(st.FreezeExperiment(*id, false, "", "user:b").ok());
  auto s = st.GetRegressionSeries("demo");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->config_version, 2);
  ASSERT_EQ(s->points.size(), 4u);  // the variant runs it was frozen from, not v1's runs
  for (const auto& p : s->points) {
    EXPECT_EQ(st.GetRun(p.run_id)->arm, "variant");
    EXPECT_NEAR(p.value, 200, 1);
  }
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:c").ok());  // v2 measured again later
  RunAll(st, l.agent, 200, 200);
  EXPECT_EQ(st.GetRegressionSeries("demo")->points.size(), 6u);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Experiments, TheSameChangeOnTheSameConfigIsRefusedUntilAgainWithAReason) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto first = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  ASSERT_TRUE(first.ok()) << first.status().message();
  // while it runs
  EXPECT_THAT(st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a").status().message(),
              HasSubstr("already being tested by experiment " + std::to_string(*first)));
  RunAll(st, l.agent, 100, 200);
  const std::string before = Counts(*l.db);
  auto again = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  EXPECT_EQ(again.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(again.status().message(),
              HasSubstr("experiment " + std::to_string(*first) + " decided improved (+"));
  BatchIn batch;
  batch.vary = {"nw=4,8"};
  EXPECT_THAT(st.CreateBatch(batch, "user:a").status().message(),
              HasSubstr("batch: nw=8: nw 1→8 was already tested on config v1"));
  EXPECT_EQ(Counts(*l.db), before);  // nothing of the refused batch stays
  // another value, and the hypothesis on the same parameter lists what was tried
  EXPECT_TRUE(st.CreateExperiment({"", 0, {"nw=4"}, 0, 4}, "user:a").ok());
  auto h = st.CreateHypothesis({"", 0, {"nw=16"}, "sps >= 150", "", ""}, "user:a");
  ASSERT_TRUE(h.ok()) << h.status().message();
  auto hyp = st.GetHypothesis(*h);
  ASSERT_EQ(hyp->earlier.size(), 2u);
  EXPECT_THAT(hyp->earlier[0], HasSubstr("experiment " + std::to_string(*first) +
                                         " on config v1: nw 1→8 decided improved"));
  EXPECT_THAT(hyp->earlier[1], HasSubstr("still running"));
  ExperimentIn in{"", 0, {"nw=8"}, 0, 4};
  in.again = true;
  EXPECT_THAT(st.CreateExperiment(in, "user:a").status().message(), HasSubstr("--reason"));
  in.again_reason = "new kernel";
  auto third = st.CreateExperiment(in, "user:a");
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_EQ(st.GetExperiment(*third)->again_reason, "new kernel");
}

TEST(Goals, ProgressMovesWithAFreezeAndAGuardrailHoldsAFreezeBack) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  EXPECT_THAT(st.GetGoal("demo").status().message(), HasSubstr("has no goal; set one"));
  EXPECT_THAT(st.SetGoal("demo", "spss", 300, {}, "user:a").status().message(),
              HasSubstr("did you mean \"sps\""));
  auto g = st.SetGoal("demo", "sps", 300, {"loss <= 1.2"}, "user:a");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->progress.measured);
  EXPECT_EQ(g->progress.config_version, 1);
  EXPECT_NEAR(g->progress.level, 100, 1);
  EXPECT_NEAR(g->progress.attained, 1.0 / 3, 0.01);
  EXPECT_TRUE(g->progress.steps.empty());

  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  RunAll(st, l.agent, 100, 200);
  EXPECT_THAT(st.GetExperiment(*id)->goal_note, HasSubstr("goal sps 300: control "));
  EXPECT_THAT(st.GetExperiment(*id)->goal_note, HasSubstr("% of it) -> variant 200"));
  // loss ~1.377 breaks "loss <= 1.2": the freeze needs --force
  auto refused = st.FreezeExperiment(*id, false, "", "user:b");
  EXPECT_THAT(refused.status().message(), HasSubstr("breaks a guardrail of demo's goal"));
  ASSERT_TRUE(st.SetGoal("demo", "sps", 300, {"loss <= 2"}, "user:a").ok());  // replaces it
  ASSERT_TRUE(st.FreezeExperiment(*id, false, "", "user:b").ok());
  auto after = st.GetGoal("demo");
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(after->progress.config_version, 2);
  EXPECT_NEAR(after->progress.level, 200, 2);
  ASSERT_EQ(after->progress.steps.size(), 1u);
  EXPECT_EQ(after->progress.steps[0].experiment, *id);
  EXPECT_NEAR(*after->progress.steps[0].ratio, 2.0, 0.02);
  EXPECT_EQ(after->guardrails, (std::vector<std::string>{"loss <= 2"}));
  EXPECT_EQ(l.db->Scalar("SELECT count(*) FROM goals"), "2");
}

TEST(Advisor, ReadsACompletedBaselinesMediansAndRefusesARunningOne) {
  TUNECTL_TEST_DB(db);
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto in = st.AdvisorInputOf(l.baseline);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_NEAR(in->medians.at("sps"), 100, 1);
  EXPECT_EQ(in->params.at("nw"), "1");
  EXPECT_EQ(in->spec.name, "demo");
  auto running = st.CreateBaseline("demo", 3, "user:t");
  EXPECT_THAT(st.AdvisorInputOf(*running).status().message(),
              HasSubstr("is running (0 of 3 runs done)"));
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

// A decided and frozen experiment: audit events and tuning-log entries, all sealed.
Loop Sealed(std::unique_ptr<TestDb> db) {
  Loop l = MeasuredBaseline(std::move(db));
  Store& st = l.db->store();
  auto id = st.CreateExperiment({"", 0, {"nw=8"}, 0, 4}, "user:a");
  RunAll(st, l.agent, 100, 200);
  EXPECT_TRUE(st.FreezeExperiment(*id, false, "", "user:b").ok());
  auto n = st.SealAudit();
  EXPECT_TRUE(n.ok()) << n.status().message();
  EXPECT_GT(*n, 5);
  EXPECT_EQ(*st.SealAudit(), 0);  // nothing twice
  return l;
}

// As the database superuser, with the append-only triggers off.
void Tamper(TestDb& db, const std::string& table, const std::string& sql) {
  db.Scalar("ALTER TABLE " + table + " DISABLE TRIGGER USER");
  db.Scalar(sql);
  db.Scalar("ALTER TABLE " + table + " ENABLE TRIGGER USER");
}

TEST(AuditChain, AnUntouchedChainVerifiesAndTruncateIsRefused) {
  TUNECTL_TEST_DB(db);
  Loop l = Sealed(std::move(db));
  auto v = l.db->store().VerifyAudit();
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_FALSE(v->report.broken.has_value());
  EXPECT_EQ(v->pending, 0);
  EXPECT_EQ(v->report.links, v->rows);
  EXPECT_THROW(l.db->Scalar("TRUNCATE audit_events"), std::exception);
  EXPECT_THROW(l.db->Scalar("TRUNCATE tuning_log CASCADE"), std::exception);
  EXPECT_THROW(l.db->Scalar("DELETE FROM audit_chain"), std::exception);
}

TEST(AuditChain, AnEditedLogEntryIsNamed) {
  TUNECTL_TEST_DB(db);
  Loop l = Sealed(std::move(db));
  const std::string id = l.db->Scalar("SELECT min(id) FROM tuning_log");
  Tamper(*l.db, "tuning_log",
         "UPDATE tuning_log SET entry = '{\"decision\": \"regressed\"}' WHERE id = " + id);
  auto v = l.db->store().VerifyAudit();
  ASSERT_TRUE(v->report.broken);
  EXPECT_EQ(v->report.broken->kind, "edited");
  EXPECT_EQ(v->report.broken->source, "log");
  EXPECT_EQ(std::to_string(v->report.broken->row_id), id);
}

TEST(AuditChain, DeletedInsertedAndSwappedRowsAreNamed) {
  TUNECTL_TEST_DB(db);
  Loop l = Sealed(std::move(db));
  Store& st = l.db->store();
  Tamper(*l.db, "audit_events", "DELETE FROM audit_events WHERE id = 3");
  auto del = st.VerifyAudit();
  ASSERT_TRUE(del->report.broken);
  EXPECT_EQ(del->report.broken->kind, "deleted");
  EXPECT_EQ(del->report.broken->row_id, 3);

  TUNECTL_TEST_DB(db2);
  Loop m = Sealed(std::move(db2));
  // a row put into the sealed past (an old timestamp, an id below the sealed ones)
  m.db->Scalar(
      "INSERT INTO audit_events(id, at, actor, kind, entity) VALUES (0, now() - interval '1 day', "
      "'user:mallory', 'config.frozen', 'experiment')");
  auto ins = m.db->store().VerifyAudit();
  ASSERT_TRUE(ins->report.broken);
  EXPECT_EQ(ins->report.broken->kind, "inserted");
  EXPECT_EQ(ins->report.broken->row_id, 0);
  EXPECT_EQ(*m.db->store().SealAudit(), 0);  // the sealer does not take it in either

  TUNECTL_TEST_DB(db3);
  Loop s = Sealed(std::move(db3));
  // two audit events' actors swapped
  Tamper(*s.db, "audit_events",
         "UPDATE audit_events a SET actor = b.actor FROM audit_events b WHERE (a.id, b.id) IN "
         "((1, 2), (2, 1))");
  auto swp = s.db->store().VerifyAudit();
  ASSERT_TRUE(swp->report.broken);
  EXPECT_EQ(swp->report.broken->kind, "edited");
  EXPECT_EQ(swp->report.broken->row_id, 1);
}

TEST(AuditChain, ARebuiltChainNoLongerExtendsAKeptHead) {
  TUNECTL_TEST_DB(db);
  Loop l = Sealed(std::move(db));
  Store& st = l.db->store();
  auto head = st.VerifyAudit();
  const int64_t seq = head->report.head_seq;
  const std::string hash = head->report.head_hash;
  EXPECT_FALSE(st.VerifyAudit(seq, hash)->report.broken.has_value());
  // edit a row, then throw the chain away and seal everything again: consistent in itself
  Tamper(*l.db, "audit_events", "UPDATE audit_events SET actor = 'user:mallory' WHERE id = 2");
  Tamper(*l.db, "audit_chain", "DELETE FROM audit_chain");
  ASSERT_TRUE(st.SealAudit().ok());
  EXPECT_FALSE(st.VerifyAudit()->report.broken.has_value());
  auto against = st.VerifyAudit(seq, hash);
  ASSERT_TRUE(against->report.broken);
  EXPECT_EQ(against->report.broken->kind, "edited");
  EXPECT_THAT(against->report.broken->detail, HasSubstr("differs from the kept head"));
}

// --- audit export: the chain's rows page by page, each re-hashable from what the page holds ---

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Every page of an export, the token round-tripped as the service does; `between` runs after
// the first page (the sealer, say).
std::vector<AuditExportRow> ExportAll(Store& st, ChainPageRequest in, int* pages = nullptr,
                                      const std::function<void()>& between = {}) {
  std::vector<AuditExportRow> all;
  for (int n = 1;; ++n) {
    auto page = ResolveChainPage(in, NowMs());
    EXPECT_TRUE(page.ok()) << page.status().message();
    if (!page.ok()) return all;
    auto r = st.ExportAudit(*page);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return all;
    EXPECT_LE(r->rows.size(), static_cast<size_t>(page->limit));
    all.insert(all.end(), r->rows.begin(), r->rows.end());
    if (pages) *pages = n;
    if (!r->more) return all;
    in.token = ChainPageToken(r->next);
    if (n == 1 && between) between();
  }
}

// The links in seq order from 1, then the rows no link covers by (source, id); each row once.
void ExpectChainOrder(const std::vector<AuditExportRow>& rows, int64_t links) {
  std::set<std::pair<std::string, int64_t>> seen;
  for (size_t i = 0; i < rows.size(); ++i) {
    const AuditExportRow& r = rows[i];
    EXPECT_TRUE(seen.insert({r.entry.source, r.entry.id}).second)
        << r.entry.source << " " << r.entry.id << " twice";
    if (static_cast<int64_t>(i) < links) {
      EXPECT_EQ(r.seq, static_cast<int64_t>(i) + 1);
      continue;
    }
    EXPECT_EQ(r.seq, 0) << i;
    EXPECT_EQ(r.hash, "");
    EXPECT_EQ(r.prev_hash, "");
    if (static_cast<int64_t>(i) > links) {
      const auto& p = rows[i - 1].entry;
      EXPECT_LT(std::make_pair(p.source, p.id), std::make_pair(r.entry.source, r.entry.id));
    }
  }
}

TEST(AuditExport, PagesTheLinksInOrderThenTheUnsealedRowsAndEveryHashReHashes) {
  TUNECTL_TEST_DB(db);
  Loop l = Sealed(std::move(db));
  Store& st = l.db->store();
  // not sealed yet: a goal, and an event whose detail has a comma, quotes and a newline
  ASSERT_TRUE(st.SetGoal("demo", "sps", 300, {}, "user:a").ok());
  l.db->Scalar(
      "INSERT INTO audit_events(actor, kind, entity, detail) VALUES ('user:x', 'note', "
      "'workload', '{\"text\": \"a, \\\"b\\\"\\nc\"}')");
  const size_t total = std::stoul(l.db->Scalar(
      "SELECT (SELECT count(*) FROM audit_events) + (SELECT count(*) FROM tuning_log)"));
  const int64_t links = std::stoll(l.db->Scalar("SELECT count(*) FROM audit_chain"));
  ASSERT_GT(total, static_cast<size_t>(links));
  ASSERT_GT(std::stoll(l.db->Scalar("SELECT count(*) FROM tuning_log")), 1);

  int pages = 0;
  const auto rows = ExportAll(st, {"2000-01-01", "", 4, ""}, &pages);
  ASSERT_EQ(rows.size(), total);
  EXPECT_EQ(pages, static_cast<int>((total + 3) / 4));
  ExpectChainOrder(rows, links);
  // Re-hashed from the exported columns alone, each link gives its hash, after its predecessor.
  std::string prev = ChainGenesis();
  for (int64_t i = 0; i < links; ++i) {
    const AuditExportRow& r = rows[static_cast<size_t>(i)];
    EXPECT_EQ(r.prev_hash, prev) << r.seq;
    EXPECT_EQ(ChainHash(prev, ChainRowOf(r.entry)), r.hash) << r.entry.source << " " << r.entry.id;
    prev = r.hash;
  }
  EXPECT_EQ(prev, l.db->Scalar("SELECT hash FROM audit_chain ORDER BY seq DESC LIMIT 1"));
  // the columns as stored; the time in RFC 3339 and in microseconds agree
  const auto& log = *std::find_if(rows.begin(), rows.end(),
                                  [](const auto& r) { return r.entry.source == "log"; });
  EXPECT_EQ(log.entry.payload, l.db->Scalar("SELECT entry::text FROM tuning_log WHERE id = " +
                                            std::to_string(log.entry.id)));
  EXPECT_EQ(log.at, l.db->Scalar("SELECT to_char(to_timestamp(" + std::to_string(log.entry.at_us) +
                                 " / 1000000.0) AT TIME ZONE 'UTC', "
                                 "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"));
  EXPECT_EQ(log.at.size(), std::string("2026-12-01T08:00:00.123456Z").size());
  EXPECT_FALSE(log.entry.workload_id.empty());
  const auto& note =
      *std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.entry.kind == "note"; });
  EXPECT_EQ(note.seq, 0);
  EXPECT_EQ(note.entry.kind, "note");
  EXPECT_EQ(note.entry.entity_id, "");  // NULL, as the chain hashes it
  EXPECT_THAT(note.entry.payload, HasSubstr("\\n"));

  // Sealed now, the same rows re-hash as the links the sealer made.
  ASSERT_GT(*st.SealAudit(), 0);
  const auto sealed = ExportAll(st, {"2000-01-01", "", 0, ""});
  ASSERT_EQ(sealed.size(), total);
  ExpectChainOrder(sealed, static_cast<int64_t>(total));
  for (size_t i = 0; i < sealed.size(); ++i) {
    EXPECT_EQ(ChainHash(sealed[i].prev_hash, ChainRowOf(sealed[i].entry)), sealed[i].hash) << i;
    if (i > 0) {
      EXPECT_EQ(sealed[i].prev_hash, sealed[i - 1].hash);
    }
  }
  EXPECT_FALSE(st.VerifyAudit()->report.broken.has_value());
}

TEST(AuditExport, TheSealerRunningBetweenPagesNeitherSkipsNorRepeatsARow) {
  TUNECTL_TEST_DB(db);
  Loop l = Sealed(std::move(db));
  Store& st = l.db->store();
  const int64_t links = std::stoll(l.db->Scalar("SELECT count(*) FROM audit_chain"));
  for (int i = 0; i < 5; ++i)
    l.db->Scalar("INSERT INTO audit_events(actor, kind, entity) VALUES ('user:x', 'note', 'x')");
  const size_t total = std::stoul(l.db->Scalar(
      "SELECT (SELECT count(*) FROM audit_events) + (SELECT count(*) FROM tuning_log)"));
  // pages of 2 through the links and the unsealed rows; the sealer runs after the first page
  const auto rows =
      ExportAll(st, {"2000-01-01", "", 2, ""}, nullptr, [&] { ASSERT_EQ(*st.SealAudit(), 5); });
  ASSERT_EQ(rows.size(), total);
  ExpectChainOrder(rows, links);  // sealed after the first page: still in the unsealed part
}

TEST(AuditExport, SinceAndUntilCutTheWindowAtTheRowsTimes) {
  TUNECTL_TEST_DB(db);
  Loop l = Sealed(std::move(db));
  Store& st = l.db->store();
  for (const char* at : {"2001-01-01T00:00:00Z", "2001-06-01T00:00:00Z"})
    l.db->Scalar(std::string("INSERT INTO audit_events(at, actor, kind, entity) VALUES ('") + at +
                 "', 'user:old', 'note', 'x')");
  ASSERT_EQ(*st.SealAudit(), 2);
  auto kinds = [](const std::vector<AuditExportRow>& rows) {
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(r.entry.actor + "@" + r.at.substr(0, 10));
    return out;
  };
  using V = std::vector<std::string>;
  // --until is exclusive; a date is midnight UTC
  EXPECT_EQ(kinds(ExportAll(st, {"2001-01-01", "2001-06-01", 0, ""})), V{"user:old@2001-01-01"});
  EXPECT_EQ(kinds(ExportAll(st, {"2000-12-31T23:00:00-01:00", "2001-06-02", 1, ""})),
            (V{"user:old@2001-01-01", "user:old@2001-06-01"}));
  EXPECT_EQ(kinds(ExportAll(st, {"2001-01-01T00:00:00.001Z", "2002-01-01", 0, ""})),
            V{"user:old@2001-06-01"});
  // a duration back from now: today's rows, not the old ones; each one's link in seq order
  const size_t today = std::stoul(l.db->Scalar(
      "SELECT (SELECT count(*) FROM audit_events WHERE actor <> 'user:old') + (SELECT count(*) "
      "FROM tuning_log)"));
  const auto recent = ExportAll(st, {"1d", "", 3, ""});
  ASSERT_EQ(recent.size(), today);
  for (size_t i = 0; i < recent.size(); ++i) {
    EXPECT_NE(recent[i].entry.actor, "user:old");
    if (i > 0) {
      EXPECT_LT(recent[i - 1].seq, recent[i].seq);
    }
  }
  EXPECT_TRUE(ExportAll(st, {"2002-01-01", "2003-01-01", 0, ""}).empty());
}

}  // namespace
}  // namespace tunectl

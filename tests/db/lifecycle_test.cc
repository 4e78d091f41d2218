// The week-one verbs (issue 16) against a real PostgreSQL: a workload deleted only without
// history, archived with it (hidden, refusing new work, audited), an agent removed only when
// disconnected with its held runs requeued, and the filters of run list and experiment list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/store/store.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

WorkloadSpec Spec(const std::string& name = "demo") {
  auto s = ParseWorkloadSpec("name: " + name + R"(
command: [train, "{nw}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary, min_effect: 0.03}
run: {repeats: 3, warmup_steps: 0}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

AgentNodeState IsolatedSlots() {
  AgentNodeState n;
  n.isolated_slots = true;
  return n;
}

// Runs every queued run on `agent` with a steady sps level (variant runs `variant`).
void RunAll(Store& st, int64_t agent, double control, double variant) {
  for (;;) {
    auto plans = st.ClaimRuns(agent, {}, 100);
    ASSERT_TRUE(plans.ok()) << plans.status().message();
    if (plans->empty()) return;
    for (const auto& p : *plans) {
      const double level = p.arm == "variant" ? variant : control;
      std::vector<SampleIn> s;
      for (int k = 1; k <= 5; ++k)
        s.push_back(
            {"sps", k, level * (1 + 0.002 * static_cast<double>((p.run_id * 3 + k) % 4 - 1.5)), k});
      ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, s));
      ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 10}, "agent:t").ok());
    }
  }
}

TEST(Lifecycle, AWorkloadWithNoHistoryIsDeletedAndItsNameCanBeAppliedAgain) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.SetGoal("demo", "sps", 120, {}, "user:t").ok());
  auto shown = st.DescribeWorkload("demo");
  ASSERT_TRUE(shown.ok()) << shown.status().message();
  EXPECT_FALSE(shown->history.any());
  auto gone = st.DeleteWorkload("demo", "user:alice");
  ASSERT_TRUE(gone.ok()) << gone.status().message();
  EXPECT_EQ(gone->name, "demo");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM workloads"), "0");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM config_versions"), "0");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM workload_revisions"), "1");  // append-only: kept
  EXPECT_EQ(db->Scalar("SELECT actor || ' ' || (detail->>'name') FROM audit_events WHERE kind = "
                       "'workload.deleted'"),
            "user:alice demo");
  EXPECT_EQ(st.DeleteWorkload("demo", "user:t").status().code(), Status::Code::kNotFound);
  auto again = st.ApplyWorkload(Spec(), "t", "user:t");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->action, "created");
  EXPECT_EQ(again->workload.config_version, 1);
  EXPECT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
}

TEST(Lifecycle, DeleteIsRefusedWithHistoryNamingItAndTheArchiveCommandAndChangesNothing) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  const std::string audits = db->Scalar("SELECT count(*) FROM audit_events");
  auto refused = st.DeleteWorkload("demo", "user:t");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("1 baseline, 2 runs"));
  EXPECT_THAT(refused.status().message(), HasSubstr("tunectl workload archive demo"));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM workloads"), "1");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events"), audits);
  auto shown = st.DescribeWorkload("demo");
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->history.baselines, 1);
  EXPECT_EQ(shown->history.runs, 2);
  EXPECT_EQ(shown->history.experiments, 0);
}

TEST(Lifecycle, AnArchivedWorkloadIsHiddenAndRefusesNewWorkUntilUnarchived) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.ApplyWorkload(Spec("other"), "t", "user:t").ok());
  const int64_t agent = *st.RegisterAgent("n1", {}, 100, "t", "s1", {}, IsolatedSlots());
  const int64_t baseline = *st.CreateBaseline("demo", 3, "user:t");
  RunAll(st, agent, 100, 100);
  ASSERT_EQ(st.GetBaseline(baseline)->state, "completed");

  auto archived = st.SetWorkloadArchived("demo", true, "user:bob");
  ASSERT_TRUE(archived.ok()) << archived.status().message();
  EXPECT_TRUE(archived->archived());
  EXPECT_EQ(archived->archived_by, "user:bob");
  ASSERT_TRUE(st.SetWorkloadArchived("demo", true, "user:bob").ok());  // already: no change
  EXPECT_EQ(db->Scalar("SELECT count(*) || ' ' || max(actor) FROM audit_events WHERE kind = "
                       "'workload.archived'"),
            "1 user:bob");

  auto listed = st.ListWorkloads();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->rows.size(), 1u);
  EXPECT_EQ(listed->rows[0].name, "other");
  auto all = st.ListWorkloads(Page(), /*include_archived=*/true);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->rows.size(), 2u);

  const std::string runs = db->Scalar("SELECT count(*) FROM runs");
  for (const auto& status : {st.CreateBaseline("demo", 1, "user:t").status(),
                             st.CreateExperiment({"demo", 0, {"nw=8"}, 0, 4}, "user:t").status(),
                             st.CreateStabilityRun("demo", 60, "", "user:t").status()}) {
    EXPECT_EQ(status.code(), Status::Code::kFailedPrecondition) << status.message();
    EXPECT_THAT(status.message(), HasSubstr("workload demo is archived"));
    EXPECT_THAT(status.message(), HasSubstr("tunectl workload unarchive demo"));
  }
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs"), runs);
  // History is still there to read.
  EXPECT_TRUE(st.GetBaseline(baseline).ok());
  EXPECT_EQ(st.ListBaselines("demo")->rows.size(), 1u);

  auto back = st.SetWorkloadArchived("demo", false, "user:bob");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(back->archived());
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events WHERE kind = 'workload.unarchived'"),
            "1");
  EXPECT_TRUE(st.CreateExperiment({"demo", 0, {"nw=8"}, 0, 4}, "user:t").ok());
}

TEST(Lifecycle, AConnectedAgentIsNotRemovedADisconnectedOneIsWithItsHeldRunsRequeued) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  const int64_t agent = *st.RegisterAgent("node-1", {}, 4, "t", "s1");
  ASSERT_TRUE(st.RegisterAgent("node-2", {}, 4, "t", "s2").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  auto plans = st.ClaimRuns(agent, {}, 4);
  ASSERT_TRUE(plans.ok());
  ASSERT_EQ(plans->size(), 2u);
  ASSERT_TRUE(st.MarkRunStarted((*plans)[0].run_id, 1, agent).ok());

  auto refused = st.RemoveAgent("node-1", "user:t");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("agent node-1 is connected; stop it first"));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE agent_id IS NOT NULL"), "2");

  // Gone, within its --agent-timeout: the server still keeps its two runs for it.
  ASSERT_TRUE(st.DisconnectAgent(agent, "s1").ok());
  auto removed = st.RemoveAgent("node-1", "user:carol");
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  EXPECT_EQ(removed->agent.name, "node-1");
  EXPECT_EQ(removed->requeued, 2);
  EXPECT_EQ(db->Scalar("SELECT string_agg(state || ':' || attempt, ',' ORDER BY id) FROM runs"),
            "queued:2,queued:2");
  EXPECT_EQ(db->Scalar("SELECT actor || ' ' || (detail->>'requeued') FROM audit_events WHERE "
                       "kind = 'agent.removed'"),
            "user:carol 2");
  auto listed = st.ListAgents();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "node-2");
  EXPECT_EQ(st.RemoveAgent("node-1", "user:t").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(st.RemoveAgent("nope", "user:t").status().code(), Status::Code::kNotFound);

  // It comes back by registering again, with the same row.
  EXPECT_EQ(*st.RegisterAgent("node-1", {}, 4, "t", "s3"), agent);
  EXPECT_EQ(st.ListAgents()->size(), 2u);
}

TEST(Lifecycle, RunsFilterByExperimentBothArmsAndExperimentsByState) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  const int64_t agent = *st.RegisterAgent("n1", {}, 100, "t", "s1", {}, IsolatedSlots());
  const int64_t baseline = *st.CreateBaseline("demo", 3, "user:t");
  RunAll(st, agent, 100, 100);
  ASSERT_EQ(st.GetBaseline(baseline)->state, "completed");
  auto first = st.CreateExperiment({"demo", 0, {"nw=8"}, 0, 4}, "user:t");
  ASSERT_TRUE(first.ok()) << first.status().message();
  RunAll(st, agent, 100, 130);
  auto second = st.CreateExperiment({"demo", 0, {"nw=4"}, 0, 4}, "user:t");
  ASSERT_TRUE(second.ok()) << second.status().message();

  auto runs = st.ListRuns(0, Page(), *first);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_FALSE(runs->rows.empty());
  int control = 0, variant = 0;
  for (const auto& r : runs->rows) {
    EXPECT_EQ(r.experiment_id, *first);
    control += r.arm == "control";
    variant += r.arm == "variant";
  }
  EXPECT_GT(control, 0);
  EXPECT_EQ(control, variant);
  EXPECT_EQ(st.ListRuns(0, Page(), 999).status().code(), Status::Code::kNotFound);

  auto running = st.ListExperiments("demo", Page(), ExperimentState::kRunning);
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->rows.size(), 1u);
  EXPECT_EQ(running->rows[0].id, *second);
  auto decided = st.ListExperiments("", Page(), ExperimentState::kDecided);
  ASSERT_TRUE(decided.ok());
  ASSERT_EQ(decided->rows.size(), 1u);
  EXPECT_EQ(decided->rows[0].id, *first);
  EXPECT_EQ(st.ListExperiments("nope", Page()).status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace tunectl

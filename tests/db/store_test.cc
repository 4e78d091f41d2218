#include "server/store/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "tests/db/test_db.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

WorkloadSpec Spec(const std::string& name = "demo", const std::string& selector = "pool: cpu") {
  auto s = ParseWorkloadSpec("name: " + name + R"(
command: [python3, train.py, --nw, "{num_workers}"]
params:
  num_workers: {type: int, default: 1, min: 0, max: 64}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
  loss: {json: loss, better: lower, role: guardrail}
run: {repeats: 3, warmup_steps: 2, selector: {)" +
                             selector + "}}\n");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

int64_t AddAgent(Store& st, const std::string& name, LabelMap labels = {{"pool", "cpu"}},
                 int slots = 4) {
  auto id = st.RegisterAgent(name, labels, slots, "test", "session-" + name);
  EXPECT_TRUE(id.ok()) << id.status().message();
  return *id;
}

TEST(Store, ApplyWorkloadCreatesThenReportsUnchangedThenUpdated) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  auto a = st.ApplyWorkload(Spec(), "text", "user:t");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->action, "created");
  EXPECT_EQ(a->workload.config_version, 1);
  EXPECT_EQ(a->workload.config_params.at("num_workers"), "1");
  auto b = st.ApplyWorkload(Spec(), "text", "user:t");
  EXPECT_EQ(b->action, "unchanged");
  WorkloadSpec changed = Spec();
  changed.description = "new words";
  auto c = st.ApplyWorkload(changed, "text2", "user:t");
  EXPECT_EQ(c->action, "updated");
  EXPECT_EQ(c->workload.spec_revision, 2);
  EXPECT_EQ(c->workload.config_version, 1);  // same parameters: same config
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events WHERE entity = 'workload'"), "2");
}

TEST(Store, CreateBaselineQueuesRunsWithResolvedLaunch) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  auto id = st.CreateBaseline("", 0, "user:t");  // the only workload; its repeats
  ASSERT_TRUE(id.ok()) << id.status().message();
  auto b = st.GetBaseline(*id);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->repeats, 3);
  EXPECT_EQ(b->state, "running");
  EXPECT_EQ(b->runs_active, 3);
  EXPECT_EQ(db->Scalar("SELECT launch->'argv'->>3 FROM runs LIMIT 1"), "1");
}

TEST(Store, CreateBaselineForUnknownWorkloadChangesNothing) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  const std::string audit_before = db->Scalar("SELECT count(*) FROM audit_events");
  auto id = st.CreateBaseline("nope", 2, "user:t");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(id.status().message(),
              HasSubstr("workload \"nope\" not found; known workloads: demo"));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM baselines"), "0");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs"), "0");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events"), audit_before);
}

TEST(Store, CreateBaselineWithSeveralWorkloadsNeedsAName) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec("a"), "t", "user:t").ok());
  ASSERT_TRUE(st.ApplyWorkload(Spec("b"), "t", "user:t").ok());
  auto id = st.CreateBaseline("", 0, "user:t");
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.status().message(), HasSubstr("several workloads exist (a, b)"));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs"), "0");
}

TEST(Store, DuplicateMetricBatchIsStoredOnce) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
  int64_t agent = AddAgent(st, "n1");
  auto claimed = st.ClaimRuns(agent, {{"pool", "cpu"}}, 4);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  const int64_t run = (*claimed)[0].run_id;
  std::vector<SampleIn> samples = {{"sps", 1, 10.0, 1}, {"sps", 2, 11.0, 2}, {"loss", 1, 2.5, 3}};
  auto first = st.StoreMetricBatch(run, 1, 1, samples);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(*first);
  auto again = st.StoreMetricBatch(run, 1, 1, samples);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_samples"), "3");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_batches"), "1");
  // Another attempt's batch with the same seq is a different batch.
  EXPECT_TRUE(*st.StoreMetricBatch(run, 2, 1, samples));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_samples"), "6");
}

TEST(Store, MetricBatchForUnknownRunIsRejected) {
  TUNECTL_TEST_DB(db);
  auto r = db->store().StoreMetricBatch(999, 1, 1, {{"x", 1, 1.0, 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_samples"), "0");
}

TEST(Store, AMetricBatchWithANulInAMetricNameIsRefusedNotRetriedForever) {
  // PostgreSQL refuses a NUL in COPY's text: the transaction failed (Internal), the session ended
  // with the batch unacked, and the agent resent it on every reconnect. Now it is refused
  // (InvalidArgument: the session acks it, the agent drops it) and nothing is stored.
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
  const int64_t agent = AddAgent(st, "n1");
  auto claimed = st.ClaimRuns(agent, {{"pool", "cpu"}}, 4);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  const int64_t run = (*claimed)[0].run_id;
  auto r = st.StoreMetricBatch(run, 1, 1, {{"sps", 1, 10.0, 1}, {std::string("sps\0", 4), 2, 1, 2}},
                               agent);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << r.status().message();
  EXPECT_THAT(r.status().message(), HasSubstr("control character"));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_batches"), "0");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_samples"), "0");
}

TEST(Store, AnAgentWithANulInItsNameOrLabelsIsRefused) {
  // libpq cut the name at its NUL ("n1\0x" registered as "n1"); jsonb refused the label (Internal).
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  auto name = st.RegisterAgent(std::string("n1\0x", 4), {}, 1, "t", "s1");
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.status().code(), Status::Code::kInvalidArgument) << name.status().message();
  auto label = st.RegisterAgent("n1", {{"pool", std::string("c\0", 2)}}, 1, "t", "s1");
  ASSERT_FALSE(label.ok());
  EXPECT_EQ(label.status().code(), Status::Code::kInvalidArgument) << label.status().message();
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM agents"), "0");
}

TEST(Store, TwoDispatchersNeverClaimTheSameRun) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(st.CreateBaseline("demo", 20, "user:t").ok());
  // Two stores on separate pools, as two servers would be.
  auto pool2 = ConnectionPool::Open(db->dsn(), 4);
  ASSERT_TRUE(pool2.ok());
  Store other(pool2->get());
  std::vector<int64_t> agents;
  for (int i = 0; i < 8; ++i)
    agents.push_back(AddAgent(st, "n" + std::to_string(i), {{"pool", "cpu"}}, 1000));
  std::vector<std::vector<int64_t>> got(8);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&, i] {
      Store& s = i % 2 ? other : st;
      for (int k = 0; k < 10; ++k) {
        auto c = s.ClaimRuns(agents[i], {{"pool", "cpu"}}, 3 * (k + 1));
        ASSERT_TRUE(c.ok()) << c.status().message();
        for (const auto& p : *c) got[i].push_back(p.run_id);
      }
    });
  }
  for (auto& t : ts) t.join();
  // SKIP LOCKED lets a claim pass over rows another one holds locked at that moment; the
  // dispatcher's next pass takes them. Here one sequential claim stands for that pass.
  const int64_t sweeper = AddAgent(st, "sweep", {{"pool", "cpu"}}, 1000);
  auto rest = st.ClaimRuns(sweeper, {{"pool", "cpu"}}, 1000);
  ASSERT_TRUE(rest.ok()) << rest.status().message();
  std::set<int64_t> all;
  size_t total = 0, concurrent = 0;
  for (const auto& g : got) {
    concurrent += g.size();
    all.insert(g.begin(), g.end());
  }
  total = concurrent;
  for (const auto& p : *rest) {
    ++total;
    all.insert(p.run_id);
  }
  EXPECT_EQ(all.size(), total) << "a run was claimed twice";
  EXPECT_EQ(total, 200u);
  EXPECT_GT(concurrent, 100u) << "the concurrent claims took too few runs to test anything";
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'assigned'"), "200");
}

// The finish that ends a baseline is the one whose runs are all over; finishes of its runs at
// the same moment must still end it exactly once (none may take the other's for still running).
TEST(Store, RunsOfOneBaselineFinishingAtOnceEndItExactlyOnce) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  for (int round = 0; round < 3; ++round) {
    const int64_t bl = *st.CreateBaseline("demo", 12, "user:t");
    const int64_t agent = AddAgent(st, "f" + std::to_string(round), {{"pool", "cpu"}}, 12);
    auto plans = st.ClaimRuns(agent, {{"pool", "cpu"}}, 12);
    ASSERT_TRUE(plans.ok() && plans->size() == 12u);
    std::vector<std::thread> ts;
    for (int i = 0; i < 6; ++i)
      ts.emplace_back([&, i] {
        for (int k = 0; k < 2; ++k) {
          const int64_t run = (*plans)[2 * i + k].run_id;
          EXPECT_TRUE(st.FinishRun(run, 1, RunResult{}, "agent:f").ok());
        }
      });
    for (auto& t : ts) t.join();
    const std::string id = std::to_string(bl);
    EXPECT_NE(db->Scalar("SELECT state FROM baselines WHERE id = " + id), "running");
    EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events WHERE entity = 'baseline' AND "
                         "entity_id = " +
                         id +
                         " AND kind LIKE 'baseline.%' AND kind <> "
                         "'baseline.created'"),
              "1");
  }
}

// A baseline of two claimed runs, and the finish of the first one started and held on its run's
// row (another transaction holds that row lock), where it has taken its owners' locks already.
// Release with hold.abort() or hold.commit() before the end of the test.
struct HeldFinish {
  std::future<Status> finish;  // first: destroyed last, after `hold` let it go on
  int64_t baseline = 0, held = 0, other = 0;
  std::unique_ptr<pqxx::connection> raw;
  std::unique_ptr<pqxx::work> hold;
};

void StartHeldFinish(TestDb& db, HeldFinish* h) {
  Store& st = db.store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  h->baseline = *st.CreateBaseline("demo", 2, "user:t");
  const int64_t agent = AddAgent(st, "f", {{"pool", "cpu"}}, 2);
  auto plans = st.ClaimRuns(agent, {{"pool", "cpu"}}, 2);
  ASSERT_TRUE(plans.ok() && plans->size() == 2u);
  h->held = (*plans)[0].run_id;
  h->other = (*plans)[1].run_id;
  h->raw = std::make_unique<pqxx::connection>(db.dsn());
  h->hold = std::make_unique<pqxx::work>(*h->raw);
  h->hold->exec_params("SELECT 1 FROM runs WHERE id = $1 FOR UPDATE", h->held);
  const int64_t run = h->held;
  h->finish = std::async(std::launch::async,
                         [&st, run] { return st.FinishRun(run, 1, RunResult{}, "agent:f"); });
  const std::string waiting =
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
      "backend_type = 'client backend' AND wait_event_type = 'Lock'";
  for (int i = 0; i < 200 && db.Scalar(waiting) != "1"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_EQ(db.Scalar(waiting), "1") << "the first finish never reached its run's row lock";
}

// A finish of a baseline's run does not wait for another finish of the same baseline that is
// still in its transaction; the held one, the last, then ends the baseline, once.
TEST(Store, AFinishDoesNotWaitForAnotherFinishOfTheSameBaseline) {
  TUNECTL_TEST_DB(db);
  HeldFinish h;
  StartHeldFinish(*db, &h);
  if (HasFatalFailure()) return;
  auto second = std::async(std::launch::async, [&] {
    return db->store().FinishRun(h.other, 1, RunResult{}, "agent:f");
  });
  const bool prompt = second.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  const std::string bl = std::to_string(h.baseline);
  const std::string state_then = db->Scalar("SELECT state FROM baselines WHERE id = " + bl);
  h.hold->abort();
  EXPECT_TRUE(prompt) << "the second finish waited for the first one's transaction";
  EXPECT_EQ(state_then, "running") << "ended while a run was still being finished";
  EXPECT_TRUE(second.get().ok());
  EXPECT_TRUE(h.finish.get().ok());
  EXPECT_NE(db->Scalar("SELECT state FROM baselines WHERE id = " + bl), "running");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events WHERE entity = 'baseline' AND kind "
                       "LIKE 'baseline.%' AND kind <> 'baseline.created'"),
            "1");
}

// A cancel of the baseline waits for a finish of one of its runs in flight (and the other way
// round), so it never interleaves with one: the finish's run is not cancelled under it.
TEST(Store, ACancelWaitsForAFinishOfTheBaselineInFlight) {
  TUNECTL_TEST_DB(db);
  HeldFinish h;
  StartHeldFinish(*db, &h);
  if (HasFatalFailure()) return;
  auto cancel = std::async(std::launch::async,
                           [&] { return db->store().CancelBaseline(h.baseline, "user:t"); });
  // Where it waits: at its lock on the baseline (the finish holds it), not later at the run's row
  // (which the held transaction holds too).
  const std::string at_baseline =
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
      "wait_event_type = 'Lock' AND query LIKE '%FROM baselines WHERE id = $1 FOR UPDATE%'";
  for (int i = 0; i < 200 && db->Scalar(at_baseline) != "1"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  const std::string waited = db->Scalar(at_baseline);
  const bool pending = cancel.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout;
  h.hold->commit();
  EXPECT_EQ(waited, "1") << "the cancel did not wait for the finish at the baseline";
  EXPECT_TRUE(pending) << "the cancel did not wait for the finish in flight";
  EXPECT_TRUE(h.finish.get().ok());
  auto cancelled = cancel.get();
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().message();
  EXPECT_EQ(cancelled->state, "cancelled");
  EXPECT_EQ(db->Scalar("SELECT state NOT IN ('cancelled', 'assigned', 'running') AND NOT "
                       "cancel_requested FROM runs WHERE id = " +
                       std::to_string(h.held)),
            "t");
}

TEST(Store, ClaimRespectsSelectorAndFreeSlots) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec("g", "pool: gpu"), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("g", 3, "user:t").ok());
  int64_t cpu = AddAgent(st, "cpu-node", {{"pool", "cpu"}}, 4);
  EXPECT_TRUE(st.ClaimRuns(cpu, {{"pool", "cpu"}}, 4)->empty());
  int64_t gpu = AddAgent(st, "gpu-node", {{"pool", "gpu"}, {"gpu", "a100"}}, 2);
  EXPECT_EQ(st.ClaimRuns(gpu, {{"pool", "gpu"}, {"gpu", "a100"}}, 2)->size(), 2u);
  EXPECT_TRUE(st.ClaimRuns(gpu, {{"pool", "gpu"}, {"gpu", "a100"}}, 2)->empty());  // slots full
}

TEST(Store, ABaselineFailsNamingAMetricNoRunLogged) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  auto bid = st.CreateBaseline("demo", 2, "user:t");
  int64_t agent = AddAgent(st, "n1");
  auto plans = st.ClaimRuns(agent, {{"pool", "cpu"}}, 2);
  ASSERT_TRUE(plans.ok());
  for (const auto& p : *plans) {
    ASSERT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, agent).ok());
    std::vector<SampleIn> s;
    for (int k = 1; k <= 6; ++k) s.push_back({"sps", k, 100.0 + k % 3, k});  // no loss at all
    ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, s));
    ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 6}, "agent:n1").ok());
  }
  auto b = st.GetBaseline(*bid);
  EXPECT_EQ(b->state, "failed");
  EXPECT_THAT(b->reason, HasSubstr("metric loss has no value in any run: no log line matched it"));
}

TEST(Store, FinishedRunsCompleteTheBaselineWithSummary) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  auto bid = st.CreateBaseline("demo", 3, "user:t");
  int64_t agent = AddAgent(st, "n1");
  auto plans = st.ClaimRuns(agent, {{"pool", "cpu"}}, 3);
  ASSERT_EQ(plans->size(), 3u);
  const double level[] = {100, 110, 120};
  for (size_t i = 0; i < 3; ++i) {
    const auto& p = (*plans)[i];
    ASSERT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, agent).ok());
    // warm-up steps 1-2 are slow outliers; steady steps 3..6 are level[i]
    std::vector<SampleIn> s = {{"sps", 1, 1.0, 1}, {"sps", 2, 1.0, 2}};
    for (int k = 3; k <= 6; ++k) s.push_back({"sps", k, level[i], k});
    for (int k = 1; k <= 6; ++k) s.push_back({"loss", k, 2.0 + 0.01 * k, k});
    ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, s));
    ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 6}, "agent:n1").ok());
    auto b = st.GetBaseline(*bid);
    EXPECT_EQ(b->state, i < 2 ? "running" : "completed");
  }
  auto b = st.GetBaseline(*bid);
  ASSERT_EQ(b->summaries.size(), 2u);
  EXPECT_EQ(b->summaries[0].metric, "sps");
  EXPECT_EQ(b->summaries[0].stats.n, 3);
  EXPECT_DOUBLE_EQ(b->summaries[0].stats.median, 110);
  EXPECT_DOUBLE_EQ(b->summaries[0].stats.stddev, 10);
  auto run = st.GetRun((*plans)[0].run_id);
  ASSERT_EQ(run->metrics.size(), 2u);
  EXPECT_EQ(run->metrics[1].metric, "sps");
  EXPECT_EQ(run->metrics[1].steady, 4);
  EXPECT_EQ(run->samples, 12);
  // Finishing again (a resent RunFinished) changes nothing.
  ASSERT_TRUE(st.FinishRun((*plans)[0].run_id, 1, {1, 0, "", "", 1, 6}, "agent:n1").ok());
  EXPECT_EQ(st.GetRun((*plans)[0].run_id)->state, "succeeded");
}

TEST(Store, FailedRunKeepsReasonAndBaselineFailsWhenNoRunSucceeds) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  auto bid = st.CreateBaseline("demo", 1, "user:t");
  int64_t agent = AddAgent(st, "n1");
  auto p = (*st.ClaimRuns(agent, {{"pool", "cpu"}}, 1))[0];
  ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 9, "", "oom", 0, 3}, "agent:n1").ok());
  auto run = st.GetRun(p.run_id);
  EXPECT_EQ(run->state, "failed");
  EXPECT_EQ(run->reason, "killed by signal 9");
  EXPECT_EQ(run->stderr_tail, "oom");
  EXPECT_EQ(st.GetBaseline(*bid)->state, "failed");
}

TEST(Store, RunsOfASilentAgentAreRequeuedAsNewAttempts) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  int64_t agent = AddAgent(st, "n1");
  ASSERT_EQ(st.ClaimRuns(agent, {{"pool", "cpu"}}, 2)->size(), 2u);
  db->Scalar("UPDATE agents SET last_seen = now() - interval '1 hour'");
  auto n = st.ExpireAgents(15);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'queued' AND attempt = 2"), "2");
  EXPECT_EQ(db->Scalar("SELECT connected::text FROM agents"), "false");
  // A late RunFinished of the superseded attempt changes nothing.
  int64_t run = std::stoll(db->Scalar("SELECT min(id) FROM runs"));
  ASSERT_TRUE(st.FinishRun(run, 1, {0, 0, "", "", 0, 0}, "agent:n1").ok());
  EXPECT_EQ(st.GetRun(run)->state, "queued");
}

// Silent agents expire in one step (their runs requeued together); each run still says which
// agent it was lost with.
TEST(Store, AnExpiryOfTwoAgentsRequeuesEachRunNamingItsOwnAgent) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  const int64_t n1 = AddAgent(st, "n1"), n2 = AddAgent(st, "n2");
  const int64_t r1 = (*st.ClaimRuns(n1, {{"pool", "cpu"}}, 1))[0].run_id;
  const int64_t r2 = (*st.ClaimRuns(n2, {{"pool", "cpu"}}, 1))[0].run_id;
  db->Scalar("UPDATE agents SET last_seen = now() - interval '1 hour' RETURNING 1");
  auto n = st.ExpireAgents(15);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 2);
  auto why = [&](int64_t run) {
    return db->Scalar(
        "SELECT detail->>'why' FROM audit_events WHERE kind = 'run.requeued' AND "
        "entity_id = " +
        std::to_string(run));
  };
  EXPECT_EQ(why(r1), "lost: agent n1 went silent");
  EXPECT_EQ(why(r2), "lost: agent n2 went silent");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'queued' AND attempt = 2"), "2");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM agents WHERE connected"), "0");
}

// Samples that are not finite (NaN, ±inf: a loss that diverged) are counted in the run's summary
// and left out of its statistics; the summary is stored.
TEST(Store, NonFiniteSamplesAreCountedInAStoredSummary) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
  const int64_t agent = AddAgent(st, "n1");
  const LaunchPlan p = (*st.ClaimRuns(agent, {{"pool", "cpu"}}, 1))[0];
  ASSERT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, agent).ok());
  std::vector<SampleIn> s;
  for (int k = 1; k <= 8; ++k) s.push_back({"sps", k, 100.0 + k % 3, k});
  s.push_back({"sps", 9, std::nan(""), 9});
  s.push_back({"sps", 10, HUGE_VAL, 10});
  for (int k = 1; k <= 4; ++k) s.push_back({"loss", k, std::nan(""), k});
  ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, s));
  const Status done = st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 12}, "agent:n1");
  ASSERT_TRUE(done.ok()) << done.message();
  const std::string id = std::to_string(p.run_id);
  EXPECT_EQ(
      db->Scalar("SELECT nonfinite FROM run_summaries WHERE metric = 'sps' AND run_id = " + id),
      "2");
  EXPECT_EQ(
      db->Scalar("SELECT nonfinite FROM run_summaries WHERE metric = 'loss' AND run_id = " + id),
      "4");
  EXPECT_EQ(db->Scalar("SELECT median IS NULL FROM run_summaries WHERE metric = 'loss' AND "
                       "run_id = " +
                       id),
            "t");
}

TEST(Store, ReconnectKeepsReportedRunsAndRequeuesTheRest) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  int64_t agent = AddAgent(st, "n1");
  auto plans = *st.ClaimRuns(agent, {{"pool", "cpu"}}, 2);
  auto n = st.ReconcileAgentRuns(agent, {{plans[0].run_id, plans[0].attempt}});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->requeued, 1);
  EXPECT_TRUE(n->stop.empty());
  EXPECT_EQ(st.GetRun(plans[0].run_id)->state, "assigned");
  EXPECT_EQ(st.GetRun(plans[1].run_id)->state, "queued");
  // Reporting the superseded attempt again (the agent was away): it is told to stop it.
  auto again = st.ReconcileAgentRuns(
      agent, {{plans[0].run_id, plans[0].attempt}, {plans[1].run_id, plans[1].attempt}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->requeued, 0);
  ASSERT_EQ(again->stop.size(), 1u);
  EXPECT_EQ(again->stop[0].run_id, plans[1].run_id);
  EXPECT_EQ(again->stop[0].attempt, plans[1].attempt);
}

TEST(Store, RunOutOfAttemptsIsLostAndCompletesBaseline) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  auto bid = st.CreateBaseline("demo", 1, "user:t");
  int64_t agent = AddAgent(st, "n1");
  for (int attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_EQ(st.ClaimRuns(agent, {{"pool", "cpu"}}, 1)->size(), 1u);
    ASSERT_TRUE(st.ReconcileAgentRuns(agent, {}).ok());
  }
  auto run = st.GetRun(std::stoll(db->Scalar("SELECT min(id) FROM runs")));
  EXPECT_EQ(run->state, "lost");
  EXPECT_THAT(run->reason, HasSubstr("lost after 3 attempts"));
  EXPECT_EQ(st.GetBaseline(*bid)->state, "failed");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Store, ReportsAreAcceptedOnlyFromTheAgentHoldingTheAttempt) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
  const int64_t owner = AddAgent(st, "n1"), rogue = AddAgent(st, "n2");
  auto claimed = st.ClaimRuns(owner, {{"pool", "cpu"}}, 4);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  const int64_t run = (*claimed)[0].run_id;
  const std::vector<SampleIn> rogue_samples = {{"sps", 1, 1e9, 1}};
  // Another agent's batch, and a batch for an attempt that does not exist: refused, not stored.
  auto other = st.StoreMetricBatch(run, 1, 1, rogue_samples, rogue);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), HasSubstr("not an active attempt assigned to this agent"));
  auto stale = st.StoreMetricBatch(run, 7, 1, rogue_samples, owner);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_samples"), "0");
  // Another agent's result does not finish the run.
  Status fin = st.FinishRun(run, 1, {0, 0, "", "", 0, 0}, "agent:n2", rogue);
  EXPECT_EQ(fin.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(db->Scalar("SELECT state FROM runs WHERE id = " + std::to_string(run)), "assigned");
  // The owner's are stored, a resend of its batch is a duplicate, not a refusal.
  auto mine = st.StoreMetricBatch(run, 1, 1, {{"sps", 1, 10.0, 1}}, owner);
  ASSERT_TRUE(mine.ok()) << mine.status().message();
  EXPECT_TRUE(*mine);
  ASSERT_TRUE(st.FinishRun(run, 1, {0, 0, "", "", 1, 1}, "agent:n1", owner).ok());
  auto resend = st.StoreMetricBatch(run, 1, 1, {{"sps", 1, 10.0, 1}}, owner);
  ASSERT_TRUE(resend.ok());
  EXPECT_FALSE(*resend);
  // A batch the owner never sent, after its run ended, is refused.
  EXPECT_FALSE(st.StoreMetricBatch(run, 1, 2, rogue_samples, owner).ok());
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM metric_samples"), "1");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Store, ALiveAgentNameIsNotTakenByAnotherProcess) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  AgentNameClaim a{"host-a:100:1", "host-a", 15000, nullptr};
  AgentNameClaim b{"host-b:200:2", "host-b", 15000, nullptr};
  auto first = st.RegisterAgent("gpu-node", {}, 1, "t", "s1", a);
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = st.RegisterAgent("gpu-node", {}, 1, "t", "s2", b);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kAlreadyExists);
  EXPECT_THAT(second.status().message(), HasSubstr("held by a live agent on host host-a"));
  EXPECT_THAT(second.status().message(), HasSubstr("--name"));
  EXPECT_EQ(db->Scalar("SELECT session FROM agents WHERE name = 'gpu-node'"), "s1");
  // The same process reconnecting takes its name back at once.
  auto again = st.RegisterAgent("gpu-node", {}, 1, "t", "s3", a);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  // A session its server knows is dead, or a disconnected one, frees the name.
  b.session_live = [](const std::string&) { return false; };
  EXPECT_TRUE(st.RegisterAgent("gpu-node", {}, 1, "t", "s4", b).ok());
  ASSERT_TRUE(st.DisconnectAgent(*first, "s4").ok());
  EXPECT_TRUE(st.RegisterAgent("gpu-node", {}, 1, "t", "s5", a).ok());
}

TEST(Store, ARetriedCreateWithTheSameRequestIdCreatesOnce) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  auto first = st.CreateBaseline("demo", 2, "user:t", "req-0123456789");
  auto retry = st.CreateBaseline("demo", 2, "user:t", "req-0123456789");
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(retry.ok()) << retry.status().message();
  EXPECT_EQ(*first, *retry);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM baselines"), "1");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs"), "2");
  auto other = st.CreateBaseline("demo", 2, "user:t", "req-other-key");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first);
  // A key names one request: reused for another kind, or malformed, it is refused.
  auto stab = st.CreateStabilityRun("demo", 60, "", "user:t", "req-0123456789");
  ASSERT_FALSE(stab.ok());
  EXPECT_THAT(stab.status().message(), HasSubstr("already used to create a baseline"));
  auto bad = st.CreateBaseline("demo", 2, "user:t", "x y");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("request_id: \"x y\" is not allowed"));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM baselines"), "2");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Store, ARunsSamplesAreAnalysedAsItsSummaryIs) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
  int64_t agent = AddAgent(st, "n1");
  const auto p = (*st.ClaimRuns(agent, {{"pool", "cpu"}}, 1))[0];
  ASSERT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, agent).ok());
  std::vector<SampleIn> s;
  for (int k = 1; k <= 40; ++k) {
    const double v = k == 20 ? std::nan("") : k == 30 ? 5.0 : 100.0 + (k % 3);
    s.push_back({"sps", k, v, k});
    s.push_back({"loss", k, 2.0 - 0.01 * k, k});
  }
  s.push_back({"skip:ckpt", 30, 1, 30});  // step 30 is a checkpoint: left out of every metric
  ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, s));

  auto live = st.GetRunSamples(p.run_id, 0, "", 2000);
  ASSERT_TRUE(live.ok()) << live.status().message();
  EXPECT_TRUE(live->live);
  EXPECT_EQ(live->attempt, 1);
  EXPECT_EQ(live->workload, "demo");
  ASSERT_EQ(live->metrics.size(), 2u);  // loss, sps (the marks are not a metric)

  ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 81}, "agent:n1").ok());
  auto r = st.GetRunSamples(p.run_id, 0, "sps", 2000);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->live);
  EXPECT_EQ(r->state, "succeeded");
  ASSERT_EQ(r->metrics.size(), 1u);
  const MetricSeries& m = r->metrics[0];
  EXPECT_EQ(m.samples, 40);
  EXPECT_EQ(m.points_total, 39);  // the NaN is not a point
  ASSERT_EQ(m.skipped.size(), 2u);
  EXPECT_EQ(m.skipped[0].step, 20);
  EXPECT_TRUE(std::isnan(m.skipped[0].value));  // NaN read back from PostgreSQL
  EXPECT_EQ(m.skipped[1].step, 30);
  EXPECT_EQ(m.skipped[1].tag, "ckpt");
  EXPECT_EQ(m.declared_warmup_steps, 2);
  // the summary FinishRun stored: the same window and median
  auto run = st.GetRun(p.run_id);
  ASSERT_EQ(run->metrics[1].metric, "sps");
  EXPECT_EQ(m.analysis.steady, run->metrics[1].steady);
  EXPECT_EQ(m.analysis.stats.median, *run->metrics[1].median);
  ASSERT_TRUE(m.steady_from.has_value());
  EXPECT_EQ(std::to_string(*m.steady_from),
            db->Scalar("SELECT steady_from_step FROM run_summaries WHERE metric = 'sps'"));
  EXPECT_EQ(*m.steady_to, 40);

  auto few = st.GetRunSamples(p.run_id, 1, "loss", 10);
  ASSERT_TRUE(few.ok());
  EXPECT_LE(few->metrics[0].points.size(), 10u);
  EXPECT_EQ(few->metrics[0].points_total, 40);  // step 30 of loss is a point, and skipped

  auto bad_attempt = st.GetRunSamples(p.run_id, 2, "", 2000);
  EXPECT_EQ(bad_attempt.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(bad_attempt.status().message(), HasSubstr("attempt: 2"));
  EXPECT_THAT(bad_attempt.status().message(), HasSubstr("allowed: 1..1"));
  auto bad_metric = st.GetRunSamples(p.run_id, 0, "nope", 2000);
  EXPECT_EQ(bad_metric.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(bad_metric.status().message(), HasSubstr("loss, sps"));
  EXPECT_EQ(st.GetRunSamples(p.run_id + 100, 0, "", 2000).status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace tunectl

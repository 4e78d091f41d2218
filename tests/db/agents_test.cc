// The session layer's storage: one claim for every agent, claims tied to the live session,
// released claims, heartbeats flushed in one statement, cancels for many agents, the node's own
// failures retried elsewhere, dispatch notifications and a pool that fails fast when marked down.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>

#include "server/dispatch/dispatcher.h"
#include "server/store/listener.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"
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
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
run: {repeats: 3, warmup_steps: 0}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

int64_t Agent(Store& st, const std::string& name, int slots = 4) {
  auto id = st.RegisterAgent(name, {{"pool", "cpu"}}, slots, "test", "session-" + name);
  EXPECT_TRUE(id.ok()) << id.status().message();
  return *id;
}

TEST(Agents, OneClaimServesEveryAgentUpToItsFreeSlots) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 10, "user:t").ok());
  const int64_t a = Agent(st, "a"), b = Agent(st, "b"), c = Agent(st, "c");
  ASSERT_EQ(st.ClaimRuns(c, {{"pool", "cpu"}}, 1)->size(), 1u);  // c holds one already
  auto plans = st.ClaimRunsFor({{a, "session-a", {{"pool", "cpu"}}, 3},
                                {b, "session-b", {{"pool", "cpu"}}, 4},
                                {c, "session-c", {{"pool", "cpu"}}, 2}});
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  EXPECT_EQ((*plans)[a].size(), 3u);
  EXPECT_EQ((*plans)[b].size(), 4u);
  EXPECT_EQ((*plans)[c].size(), 1u);  // 2 slots, 1 held
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'assigned'"), "9");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM audit_events WHERE kind = 'run.assigned'"), "9");
  EXPECT_EQ(db->Scalar("SELECT count(DISTINCT agent_id) FROM runs WHERE state = 'assigned'"), "3");
}

TEST(Agents, ARunOnlyAFreeAgentCanTakeIsNotStarvedBehindALongQueueForOthers) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  auto cpu = Spec("wide");
  cpu.run.selector = {{"pool", "cpu"}};
  auto gpu = Spec("narrow");
  gpu.run.selector = {{"pool", "gpu"}};
  ASSERT_TRUE(st.ApplyWorkload(cpu, "t", "user:t").ok());
  ASSERT_TRUE(st.ApplyWorkload(gpu, "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("wide", 60, "user:t").ok());  // older: ahead in the queue
  ASSERT_TRUE(st.CreateBaseline("narrow", 1, "user:t").ok());
  const int64_t a = Agent(st, "a", 1);
  auto g = st.RegisterAgent("g", {{"pool", "gpu"}}, 1, "test", "session-g");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto plans = st.ClaimRunsFor(
      {{a, "session-a", {{"pool", "cpu"}}, 1}, {*g, "session-g", {{"pool", "gpu"}}, 1}});
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  ASSERT_EQ((*plans)[a].size(), 1u);
  EXPECT_EQ((*plans)[a][0].workload, "wide");
  ASSERT_EQ((*plans)[*g].size(), 1u);  // the narrow run, though 59 older runs are still queued
  EXPECT_EQ((*plans)[*g][0].workload, "narrow");
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'queued'"), "59");
}

TEST(Agents, AClaimHoldsOnlyForTheSessionThatHoldsTheAgent) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  const int64_t a = Agent(st, "a");
  // A stream that ended (its agent reconnected as another session) claims nothing.
  auto stale = st.ClaimRunsFor({{a, "an-ended-session", {{"pool", "cpu"}}, 2}});
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE((*stale)[a].empty());
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'queued'"), "2");
  ASSERT_TRUE(st.DisconnectAgent(a, "session-a").ok());
  auto gone = st.ClaimRunsFor({{a, "session-a", {{"pool", "cpu"}}, 2}});
  EXPECT_TRUE((*gone)[a].empty());                                  // nor does a disconnected one
  ASSERT_TRUE(st.TouchAgents({{a, "session-a", false, ""}}).ok());  // it beats here: live again
  auto live = st.ClaimRunsFor({{a, "session-a", {{"pool", "cpu"}}, 2}});
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)[a].size(), 2u);
}

TEST(Agents, ReleasedClaimsAreQueuedAgainAsTheSameAttempt) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  const int64_t a = Agent(st, "a"), b = Agent(st, "b");
  auto plans = *st.ClaimRuns(a, {{"pool", "cpu"}}, 2);
  ASSERT_EQ(plans.size(), 2u);
  ASSERT_TRUE(st.MarkRunStarted(plans[1].run_id, plans[1].attempt, a).ok());
  // The stream ended before the runs reached the agent: both are handed back; the one that
  // already started is not (it is the agent's to report).
  auto n = st.ReleaseClaims(a, {{plans[0].run_id, 1}, {plans[1].run_id, 1}});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  auto r = st.GetRun(plans[0].run_id);
  EXPECT_EQ(r->state, "queued");
  EXPECT_EQ(r->attempt, 1);  // it never ran: no attempt spent
  EXPECT_EQ(st.GetRun(plans[1].run_id)->state, "running");
  EXPECT_EQ((*st.ClaimRuns(b, {{"pool", "cpu"}}, 2)).size(), 1u);
}

TEST(Agents, RunsKeptOnAFullAgentDoNotCrowdOutTheOthers) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  const int64_t a = Agent(st, "a", 100);
  const int64_t bl = *st.CreateBaseline("demo", 3, "user:t");
  const auto first = st.ClaimRuns(a, {}, 100);
  ASSERT_TRUE(first.ok());
  for (const auto& p : *first) {
    ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, {{"sps", 1, 100, 1}}));
    ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 1}, "agent:t").ok());
  }
  ASSERT_EQ(st.GetBaseline(bl)->state, "completed");
  // Three experiments whose runs are kept on agent a (24+ queued runs, older than the baseline's)
  for (const char* v : {"nw=2", "nw=3", "nw=4"}) {
    ExperimentIn in;
    in.workload = "demo";
    in.vary = {v};
    ASSERT_TRUE(st.CreateExperiment(in, "user:t").ok());
  }
  db->Scalar("UPDATE experiments SET agent_id = " + std::to_string(a));
  ASSERT_TRUE(st.CreateBaseline("demo", 5, "user:t").ok());
  const int64_t b = Agent(st, "b", 5);
  // a has one free slot, b five: a takes one experiment run, b the five baseline runs behind them.
  auto plans = st.ClaimRunsFor(
      {{a, "session-a", {{"pool", "cpu"}}, 1}, {b, "session-b", {{"pool", "cpu"}}, 5}});
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  ASSERT_EQ((*plans)[a].size(), 1u);
  EXPECT_NE(st.GetRun((*plans)[a][0].run_id)->experiment_id, 0);
  ASSERT_EQ((*plans)[b].size(), 5u);
  for (const auto& p : (*plans)[b]) EXPECT_EQ(st.GetRun(p.run_id)->experiment_id, 0);
}

TEST(Agents, HeartbeatsOfManyAgentsAreFlushedInOneCallForTheirOwnSessionsOnly) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  const int64_t a = Agent(st, "a"), b = Agent(st, "b");
  db->Scalar("UPDATE agents SET last_seen = now() - interval '1 hour', connected = false");
  ASSERT_TRUE(st.TouchAgents({{a, "session-a", true, "runs directory /x is not writable"},
                              {b, "someone-elses", false, ""}})
                  .ok());
  auto agents = *st.ListAgents();
  ASSERT_EQ(agents.size(), 2u);
  EXPECT_TRUE(agents[0].connected);
  EXPECT_TRUE(agents[0].busy);
  EXPECT_EQ(agents[0].unhealthy, "runs directory /x is not writable");
  EXPECT_FALSE(agents[1].connected);  // b's row belongs to another session: untouched
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM agents WHERE last_seen > now() - interval '1 min'"),
            "1");
}

TEST(Agents, ANodeBusyOrUnhealthyAtHelloIsRecordedBeforeItsFirstBeat) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  AgentNodeState node;
  node.busy = true;
  ASSERT_TRUE(st.RegisterAgent("prod", {{"pool", "cpu"}}, 1, "t", "s1", {}, node).ok());
  auto agents = *st.ListAgents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_TRUE(agents[0].busy);  // what `run list` explains a queued run's wait with
  // Reconnecting free clears it; an unhealthy node says why.
  node.busy = false;
  node.unhealthy = "disk nearly full under /runs: 10 MiB free";
  ASSERT_TRUE(st.RegisterAgent("prod", {{"pool", "cpu"}}, 1, "t", "s2", {}, node).ok());
  agents = *st.ListAgents();
  EXPECT_FALSE(agents[0].busy);
  EXPECT_EQ(agents[0].unhealthy, node.unhealthy);
}

TEST(Agents, ARunRecordsWhyItsClusterKeepsItPendingAndThenWhereItRan) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 1, "user:t").ok());
  const int64_t a = Agent(st, "login"), other = Agent(st, "other");
  auto plans = st.ClaimRuns(a, {{"pool", "cpu"}}, 1);
  ASSERT_EQ(plans->size(), 1u);
  const int64_t run = (*plans)[0].run_id;
  ASSERT_TRUE(st.MarkRunPending(run, 1, other, "99", "Resources").ok());  // not its run: ignored
  EXPECT_EQ(st.GetRun(run)->pending_reason, "");
  ASSERT_TRUE(st.MarkRunPending(run, 1, a, "17", "Priority").ok());
  auto r = st.GetRun(run);
  EXPECT_EQ(r->state, "assigned");
  EXPECT_EQ(r->external_id, "17");
  EXPECT_EQ(r->pending_reason, "Priority");
  EXPECT_EQ(r->executor, "local");
  RunStartInfo info;
  info.node = "gpu-node-3";
  info.placement = "nodelist of run 12";
  ASSERT_TRUE(st.MarkRunStarted(run, 1, a, info).ok());
  r = st.GetRun(run);
  EXPECT_EQ(r->state, "running");
  EXPECT_EQ(r->node, "gpu-node-3");
  EXPECT_EQ(r->slot, -1);
  EXPECT_EQ(r->external_id, "17");  // kept: RunStarted did not name one
  EXPECT_EQ(r->placement, "nodelist of run 12");
  EXPECT_EQ(r->pending_reason, "");
  EXPECT_EQ(db->Scalar("SELECT detail->>'node' FROM audit_events WHERE kind = 'run.started'"),
            "gpu-node-3");
}

TEST(Agents, PendingCancelsOfManyAgentsComeFromOneQuery) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  const int64_t bl = *st.CreateBaseline("demo", 4, "user:t");
  const int64_t a = Agent(st, "a"), b = Agent(st, "b");
  ASSERT_EQ(st.ClaimRuns(a, {{"pool", "cpu"}}, 2)->size(), 2u);
  ASSERT_EQ(st.ClaimRuns(b, {{"pool", "cpu"}}, 1)->size(), 1u);
  ASSERT_TRUE(st.CancelBaseline(bl, "user:t").ok());
  auto c = st.PendingCancelsFor({a, b});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[a].size(), 2u);
  EXPECT_EQ((*c)[b].size(), 1u);
  auto only_a = st.PendingCancelsFor({a});  // another agent's cancels are not handed out
  ASSERT_TRUE(only_a.ok());
  EXPECT_EQ(only_a->count(b), 0u);
  EXPECT_EQ((*only_a)[a].size(), 2u);
  // A cancelled run that ended is no longer pending.
  const int64_t ended = (*c)[b][0].run_id;
  ASSERT_TRUE(st.FinishRun(ended, 1, RunResult{0, 15, "cancelled", "", 0, 0}, "agent:b").ok());
  EXPECT_EQ(st.PendingCancelsFor({a, b})->count(b), 0u);
  // The query can use the index of pending cancels (migration 0019): its predicate spells the
  // same held states as core's list ({held}), or PostgreSQL could only scan the whole table.
  pqxx::connection conn(db->dsn());
  pqxx::work w(conn);
  w.exec("SET LOCAL enable_seqscan = off");
  std::string plan;
  for (const auto& row : w.exec("EXPLAIN SELECT agent_id, id, attempt FROM runs WHERE "
                                "cancel_requested AND state IN " +
                                internal::HeldStatesSql() + " ORDER BY id"))
    plan += row[0].as<std::string>() + "\n";
  EXPECT_NE(plan.find("runs_cancel_pending"), std::string::npos) << plan;
}

TEST(Agents, ARunItsNodeCouldNotRunIsRetriedAsANewAttempt) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  const int64_t bl = *st.CreateBaseline("demo", 1, "user:t");
  const int64_t a = Agent(st, "a");
  auto p = (*st.ClaimRuns(a, {{"pool", "cpu"}}, 1))[0];
  RunResult broken{127, 0, "launch_failed: cannot create /runs/1-1: Read-only file system",
                   "",  0, 0};
  broken.infra_failure = true;
  ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, broken, "agent:a", a).ok());
  auto r = st.GetRun(p.run_id);
  EXPECT_EQ(r->state, "queued");
  EXPECT_EQ(r->attempt, 2);
  EXPECT_THAT(r->reason, HasSubstr("its node could not run it"));
  EXPECT_EQ(st.GetBaseline(bl)->state, "running");  // not a failed run of the baseline
}

TEST(Agents, AQueuedRunWakesEveryListeningDispatcher) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  std::atomic<int> wakes{0};
  std::string errors;
  DispatchListener listener(
      db->dsn(), [&] { ++wakes; }, [&](const std::string& e) { errors += e; });
  for (int i = 0; i < 100 && wakes < 1; ++i)  // once when it starts listening
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(wakes, 1) << errors;
  ASSERT_TRUE(st.CreateBaseline("demo", 3, "user:t").ok());  // one notification per transaction
  for (int i = 0; i < 100 && wakes < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(wakes, 2) << errors;
  db->Scalar("UPDATE agents SET version = 'x'");  // nothing queued: no wake
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(wakes, 2);
}

TEST(Agents, APoolMarkedDownRefusesAtOnceAndNamesWhy) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  db->pool().MarkDown("the database has not answered for 4 s");
  auto r = st.ListAgents();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(),
              HasSubstr("database unavailable: the database has not answered for 4 s"));
  db->pool().MarkUp();
  EXPECT_TRUE(st.ListAgents().ok());
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(Agents, AClaimSaysWhatEachAgentHasFreeAfterIt) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 5, "user:t").ok());
  const int64_t a = Agent(st, "a"), b = Agent(st, "b");
  std::map<int64_t, int> free_after;
  auto plans = st.ClaimRunsFor(
      {{a, "session-a", {{"pool", "cpu"}}, 3}, {b, "session-b", {{"pool", "cpu"}}, 4}}, "{}",
      &free_after);
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  EXPECT_EQ((*plans)[a].size() + (*plans)[b].size(), 5u);
  EXPECT_EQ(free_after[a], 3 - static_cast<int>((*plans)[a].size()));
  EXPECT_EQ(free_after[b], 4 - static_cast<int>((*plans)[b].size()));
  EXPECT_EQ(free_after[a] + free_after[b], 2);  // 7 slots, 5 runs
}

// A session as the dispatcher sees it, recording what it is sent.
class RecordingSession : public AgentSession {
 public:
  bool Send(const v1::ServerMessage& m) override {
    std::lock_guard<std::mutex> g(mu);
    if (m.has_assign()) assigned.push_back(m.assign().run_id());
    return true;
  }
  void Close(const std::string&) override {}
  std::mutex mu;
  std::vector<int64_t> assigned;
};

std::shared_ptr<RecordingSession> CpuSession(Store& st, const std::string& name, int slots) {
  auto s = std::make_shared<RecordingSession>();
  s->agent_id = Agent(st, name, slots);
  s->name = name;
  s->session_id = "session-" + name;
  s->labels = {{"pool", "cpu"}};
  s->slots = slots;
  return s;
}

// Stores the success of the run last assigned to `s` (its first attempt).
void FinishLast(Store& st, const RecordingSession& s) {
  ASSERT_TRUE(st.FinishRun(s.assigned.back(), 1, {0, 0, "", "", 1, 1}, "agent:" + s.name).ok());
}

// How many runs the database shows assigned to `s`'s agent.
std::string AssignedTo(TestDb& db, const AgentSession& s) {
  return db.Scalar("SELECT count(*) FROM runs WHERE state = 'assigned' AND agent_id = " +
                   std::to_string(s.agent_id));
}

TEST(Dispatch, AFullAgentIsLeftOutOfPassesUntilASlotMayBeFreeOrASecondHasPassed) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 4, "user:t").ok());
  auto s = CpuSession(st, "a", 1);
  Dispatcher d(&st, DispatcherOptions(), [](LogLevel, const std::string&) {});
  d.Register(s);
  EXPECT_EQ(d.DispatchOnce(), 1);  // the first pass asks everyone
  EXPECT_FALSE(s->MayHaveRoom());  // its one slot is taken
  FinishLast(st, *s);              // the slot is free in the database, unknown to the hint
  EXPECT_EQ(d.DispatchOnce(), 0);  // not asked: no pass walks full agents
  s->SlotMayBeFree();              // what the session does when it stores a RunFinished
  EXPECT_EQ(d.DispatchOnce(), 1);
  FinishLast(st, *s);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(d.DispatchOnce(), 1);  // once a second every agent is asked, hint or not
  EXPECT_EQ(s->assigned.size(), 3u);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'assigned'"), "1");
}

TEST(Dispatch, AFreedSlotIsClaimedForAtOnceWithoutWaitingForAPass) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 3, "user:t").ok());
  auto s = CpuSession(st, "a", 1);
  Dispatcher d(&st, DispatcherOptions(), [](LogLevel, const std::string&) {});
  d.Register(s);
  ASSERT_EQ(d.DispatchOnce(), 1);
  FinishLast(st, *s);
  EXPECT_EQ(d.ClaimFreedSlot(s), 1);  // what the session does once it stored the RunFinished
  ASSERT_EQ(s->assigned.size(), 2u);
  EXPECT_NE(s->assigned[0], s->assigned[1]);
  EXPECT_FALSE(s->MayHaveRoom());  // full again: no pass needs to ask for it
  EXPECT_EQ(AssignedTo(*db, *s), "1");
}

TEST(Dispatch, AFreedSlotOfAnAgentThatCannotTakeWorkIsLeftToAPass) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  auto s = CpuSession(st, "a", 1);
  Dispatcher d(&st, DispatcherOptions(), [](LogLevel, const std::string&) {});
  d.Register(s);
  ASSERT_EQ(d.DispatchOnce(), 1);
  FinishLast(st, *s);
  s->Beat(/*busy=*/true, "");  // its idle probe fails: nothing starts there
  EXPECT_EQ(d.ClaimFreedSlot(s), 0);
  EXPECT_TRUE(s->MayHaveRoom());  // the hint stays: the next pass asks for it
  s->Beat(false, "");
  EXPECT_EQ(d.DispatchOnce(), 1);
  EXPECT_EQ(s->assigned.size(), 2u);
}

TEST(Dispatch, AClosingSessionsFreedSlotIsNotClaimedFor) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  auto s = CpuSession(st, "a", 1);
  Dispatcher d(&st, DispatcherOptions(), [](LogLevel, const std::string&) {});
  d.Register(s);
  ASSERT_EQ(d.DispatchOnce(), 1);
  FinishLast(st, *s);
  d.Unregister(s.get());  // the stream is closing; the database still shows the agent connected
  EXPECT_EQ(d.ClaimFreedSlot(s), 0);
  EXPECT_EQ(s->assigned.size(), 1u);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM runs WHERE state = 'queued'"), "1");
}

TEST(Dispatch, ClaimsForOneAgentAtOnceNeverGiveItMoreRunsThanSlots) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  ASSERT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  ASSERT_TRUE(st.CreateBaseline("demo", 20, "user:t").ok());
  auto s = CpuSession(st, "a", 2);
  Dispatcher d(&st, DispatcherOptions(), [](LogLevel, const std::string&) {});
  d.Register(s);
  // Ten threads free "a slot" of the same agent at once while passes run: each claim alone would
  // see both slots free; together they must not give it more than two runs.
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  for (int i = 0; i < 10; ++i)
    threads.emplace_back([&] {
      while (!go) std::this_thread::yield();
      d.ClaimFreedSlot(s);
    });
  threads.emplace_back([&] {
    while (!go) std::this_thread::yield();
    for (int i = 0; i < 3; ++i) d.DispatchOnce();
  });
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(AssignedTo(*db, *s), "2");
  EXPECT_EQ(s->assigned.size(), 2u);
}

}  // namespace
}  // namespace tunectl

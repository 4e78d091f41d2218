#include "core/dispatch.h"

#include <gtest/gtest.h>

namespace tunectl {
namespace {

const LabelMap kCpu{{"pool", "cpu"}};
const LabelMap kGpu{{"pool", "gpu"}, {"gpu", "h100"}};

std::map<int64_t, int64_t> ByRun(const std::vector<ClaimPick>& picks) {
  std::map<int64_t, int64_t> m;
  for (const auto& p : picks) m[p.run_id] = p.agent_id;
  return m;
}

TEST(PlanClaims, ABurstSpreadsOverIdleAgentsOneRunPerFreeSlot) {
  std::vector<ClaimSlot> agents;
  for (int64_t a = 1; a <= 1000; ++a) agents.push_back({a, kCpu, 1});
  std::vector<ClaimCandidate> runs;
  for (int64_t r = 1; r <= 1200; ++r) runs.push_back({r, kCpu});
  auto picks = PlanClaims(agents, runs);
  ASSERT_EQ(picks.size(), 1000u);  // one per free slot, the rest wait
  std::set<int64_t> used;
  for (const auto& p : picks) used.insert(p.agent_id);
  EXPECT_EQ(used.size(), 1000u);
  EXPECT_EQ(picks.front().run_id, 1);  // oldest first
  EXPECT_EQ(picks.back().run_id, 1000);
}

TEST(PlanClaims, SelectorsMustBeContainedInTheAgentsLabels) {
  auto picks = ByRun(PlanClaims({{1, kCpu, 4}, {2, kGpu, 4}},
                                {{10, {{"pool", "gpu"}}}, {11, kCpu}, {12, {{"gpu", "a100"}}}}));
  EXPECT_EQ(picks, (std::map<int64_t, int64_t>{{10, 2}, {11, 1}}));  // 12: no agent offers a100
}

TEST(PlanClaims, TheAgentWithMostFreeSlotsGoesFirst) {
  auto picks =
      PlanClaims({{1, kCpu, 1}, {2, kCpu, 3}, {3, kCpu, 2}}, {{1, kCpu}, {2, kCpu}, {3, kCpu}});
  ASSERT_EQ(picks.size(), 3u);
  EXPECT_EQ(picks[0].agent_id, 2);  // 3 free
  EXPECT_EQ(picks[1].agent_id, 2);  // 2 free, ties with agent 3: the lower id
  EXPECT_EQ(picks[2].agent_id, 3);
}

TEST(PlanClaims, APinnedRunGoesOnlyToItsAgentAndWaitsWhenItIsFull) {
  auto picks = ByRun(PlanClaims({{1, kCpu, 1}, {2, kCpu, 5}},
                                {{10, kCpu, 7, /*pinned*/ 1}, {11, kCpu, 7, 1}, {12, kCpu, 8, 9}}));
  // 10 takes agent 1's only slot; 11 waits for it rather than moving to agent 2; 12 is pinned to
  // an agent that has no free slot here.
  EXPECT_EQ(picks, (std::map<int64_t, int64_t>{{10, 1}}));
}

TEST(PlanClaims, AnExperimentsRunsInOnePlanStayOnTheAgentOfItsFirst) {
  std::vector<ClaimSlot> agents;
  for (int64_t a = 1; a <= 8; ++a) agents.push_back({a, kCpu, a == 5 ? 4 : 1, /*isolated*/ true});
  std::vector<ClaimCandidate> runs;
  for (int64_t r = 1; r <= 6; ++r) runs.push_back({r, kCpu, /*experiment*/ 42});
  auto picks = PlanClaims(agents, runs);
  ASSERT_EQ(picks.size(), 4u);  // agent 5's four slots; the other two runs wait for it
  for (const auto& p : picks) EXPECT_EQ(p.agent_id, 5);
}

TEST(PlanClaims, ANodeWithoutIsolatedSlotsRunsOneRunOfAnExperimentAtATime) {
  // Agent 1 (two slots, not isolated) already runs a run of experiment 42: the next one waits,
  // while a baseline run and another experiment's run may use the free slot.
  std::vector<ClaimSlot> agents{{1, kCpu, 1, false, {42}}};
  auto picks = ByRun(PlanClaims(agents, {{10, kCpu, 42, 1}, {11, kCpu, 0}}));
  EXPECT_EQ(picks, (std::map<int64_t, int64_t>{{11, 1}}));
  // Two free slots and an experiment's control and variant queued: only one of them starts.
  picks = ByRun(PlanClaims({{1, kCpu, 2}}, {{20, kCpu, 43}, {21, kCpu, 43}}));
  EXPECT_EQ(picks, (std::map<int64_t, int64_t>{{20, 1}}));
  // With isolated slots both start side by side.
  picks = ByRun(PlanClaims({{1, kCpu, 2, true}}, {{20, kCpu, 43}, {21, kCpu, 43}}));
  EXPECT_EQ(picks, (std::map<int64_t, int64_t>{{20, 1}, {21, 1}}));
}

TEST(PlanClaims, AnUnpinnedExperimentRunAvoidsANodeBusyWithItsOtherArm) {
  // Agent 1 has the most free slots but already runs experiment 42 (not isolated): agent 2 gets it.
  auto picks = ByRun(PlanClaims({{1, kCpu, 3, false, {42}}, {2, kCpu, 1}}, {{10, kCpu, 42}}));
  EXPECT_EQ(picks, (std::map<int64_t, int64_t>{{10, 2}}));
}

TEST(PlanClaims, ACappedScheduleNeverRunsOnMoreAgentsThanItsCap) {
  std::vector<ClaimSlot> agents{{1, kCpu, 2}, {2, kCpu, 2}, {3, kCpu, 2}};
  std::vector<ClaimCandidate> runs;
  for (int64_t r = 1; r <= 6; ++r) runs.push_back({r, kCpu, 0, 0, /*schedule*/ 9});
  std::map<int64_t, ScheduleCap> caps{{9, {2, {3}}}};  // agent 3 already runs one of them
  auto picks = PlanClaims(agents, runs, caps);
  std::set<int64_t> used;
  for (const auto& p : picks) used.insert(p.agent_id);
  EXPECT_EQ(used.size(), 2u);
  EXPECT_TRUE(used.count(3));
  EXPECT_EQ(picks.size(), 4u);  // two agents, two slots each
}

TEST(PlanClaims, AgentsWithoutFreeSlotsGetNothing) {
  EXPECT_TRUE(PlanClaims({{1, kCpu, 0}}, {{1, kCpu}}).empty());
  EXPECT_TRUE(PlanClaims({}, {{1, kCpu}}).empty());
}

}  // namespace
}  // namespace tunectl

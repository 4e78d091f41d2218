#include "core/selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(SelectorMatches, EveryKeyMustMatch) {
  EXPECT_TRUE(SelectorMatches({}, {{"pool", "cpu"}}));
  EXPECT_TRUE(SelectorMatches({{"pool", "cpu"}}, {{"pool", "cpu"}, {"gpu", "a100"}}));
  EXPECT_FALSE(SelectorMatches({{"pool", "gpu"}}, {{"pool", "cpu"}}));
  EXPECT_FALSE(SelectorMatches({{"zone", "a"}}, {{"pool", "cpu"}}));
}

TEST(WaitReason, NamesSelectorAndWhatAgentsOffer) {
  std::vector<AgentView> agents = {{"node-1", {{"pool", "cpu"}}, 2, 0, true}};
  std::string r = WaitReason({{"pool", "gpu"}}, agents);
  EXPECT_THAT(r, HasSubstr("no connected agent matches selector pool=gpu"));
  EXPECT_THAT(r, HasSubstr("node-1 {pool=cpu}"));
}

TEST(WaitReason, NoAgentsAtAll) {
  EXPECT_THAT(WaitReason({}, {}), HasSubstr("no agent is connected"));
}

TEST(WaitReason, MatchingButDisconnectedOrBusy) {
  std::vector<AgentView> off = {{"n1", {{"pool", "cpu"}}, 2, 0, false}};
  EXPECT_THAT(WaitReason({{"pool", "cpu"}}, off), HasSubstr("are disconnected (n1)"));
  std::vector<AgentView> busy = {{"n1", {{"pool", "cpu"}}, 1, 1, true}};
  EXPECT_THAT(WaitReason({{"pool", "cpu"}}, busy), HasSubstr("all slots busy"));
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(WaitReason, BusyAgentsAreNamed) {
  std::vector<AgentView> agents = {{"n1", {{"pool", "cpu"}}, 2, 0, true, true}};
  EXPECT_THAT(WaitReason({{"pool", "cpu"}}, agents),
              HasSubstr("report production work (idle probe fails): n1"));
}

TEST(WaitReason, AClusterPendingRunNamesTheClusterItsJobAndItsReason) {
  EXPECT_EQ(ClusterPendingReason("slurm", "17", "Priority"), "pending in slurm (job 17): Priority");
  EXPECT_EQ(ClusterPendingReason("", "", "Resources"), "pending in the cluster: Resources");
}

TEST(WaitReason, OneRunAtATimeSaysWhyAndHowToLiftIt) {
  const std::string r = OneAtATimeReason(7, "node-1");
  EXPECT_THAT(r, HasSubstr("experiment 7 runs one run at a time on node-1"));
  EXPECT_THAT(r, HasSubstr("--isolated-slots"));
}

}  // namespace
}  // namespace tunectl

#include "core/placement.h"

#include <gtest/gtest.h>

namespace tunectl {
namespace {

PlacedRun R(const std::string& arm, int64_t start, int64_t end, const std::string& node = "n1") {
  PlacedRun r;
  r.arm = arm;
  r.agent = "a1";
  r.node = node;
  r.started_ms = 1000 + start;  // 0 would mean "never started"
  r.finished_ms = end ? 1000 + end : 0;
  return r;
}

TEST(Placement, RunsOneAfterAnotherNeverOverlap) {
  auto p = DescribePlacement({R("control", 0, 10), R("variant", 10, 20), R("control", 20, 30)}, {},
                             1100);
  EXPECT_EQ(p.runs, 3);
  EXPECT_EQ(p.overlaps, 0);
  EXPECT_EQ(p.summary,
            "3 runs on node n1 (3); control and variant never ran at the same time on "
            "one node");
}

TEST(Placement, CountsControlVariantPairsThatRanAtOnceOnOneNode) {
  // Two controls overlapping each other do not count; a variant overlapping both counts twice; a
  // variant on another node does not count.
  auto p = DescribePlacement(
      {R("control", 0, 10), R("control", 5, 15), R("variant", 8, 12), R("variant", 0, 100, "n2")},
      {}, 1200);
  EXPECT_EQ(p.overlaps, 2);
  EXPECT_FALSE(p.isolated);
  EXPECT_NE(p.summary.find("2 nodes: n1 (3), n2 (1)"), std::string::npos) << p.summary;
  EXPECT_NE(p.summary.find("2 times (slots not isolated"), std::string::npos) << p.summary;
}

TEST(Placement, ARunStillRunningCountsUntilNow) {
  auto p = DescribePlacement({R("control", 0, 0), R("variant", 50, 60)}, {"a1"}, 1100);
  EXPECT_EQ(p.overlaps, 1);
  EXPECT_TRUE(p.isolated);
  EXPECT_NE(p.summary.find("(isolated slots)"), std::string::npos) << p.summary;
}

TEST(Placement, NothingStartedSaysSo) {
  PlacedRun queued;
  queued.arm = "control";
  EXPECT_EQ(DescribePlacement({queued}, {}, 1).summary, "no run has started yet");
}

}  // namespace
}  // namespace tunectl

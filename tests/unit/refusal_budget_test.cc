#include "core/refusal_budget.h"

#include <gtest/gtest.h>

namespace tunectl {
namespace {

TEST(PeerHost, DropsThePortOnly) {
  EXPECT_EQ(PeerHost("ipv4:10.0.0.7:51234"), "ipv4:10.0.0.7");
  EXPECT_EQ(PeerHost("ipv6:[::1]:4000"), "ipv6:[::1]");
  EXPECT_EQ(PeerHost("unix:/run/tunectl.sock"), "unix:/run/tunectl.sock");
  EXPECT_EQ(PeerHost("in-process"), "in-process");
}

TEST(RefusalBudget, RecordsTheFirstOfAWindowAndCountsTheRest) {
  RefusalBudget b({3, 60'000, 100});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.Refused("anonymous\nipv4:10.0.0.7", 1000 + i).record);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(b.Refused("anonymous\nipv4:10.0.0.7", 2000 + i).record);
  // Another source has a budget of its own.
  EXPECT_TRUE(b.Refused("anonymous\nipv4:10.0.0.8", 2500).record);
  // The next window's first refusal is recorded with the count of the ones left out before it.
  const auto next = b.Refused("anonymous\nipv4:10.0.0.7", 61'000);
  EXPECT_TRUE(next.record);
  EXPECT_EQ(next.suppressed, 5);
  EXPECT_EQ(b.Refused("anonymous\nipv4:10.0.0.7", 61'001).suppressed, 0);
}

TEST(RefusalBudget, ACountWhoseSourceWentQuietIsTakenOnceAfterItsWindow) {
  RefusalBudget b({1, 60'000, 100});
  b.Refused("a\nh", 0);
  b.Refused("a\nh", 10);
  b.Refused("a\nh", 20);
  b.Refused("quiet\nh2", 30);  // nothing left out: nothing to report
  EXPECT_TRUE(b.TakeOverdue(59'999).empty());
  const auto due = b.TakeOverdue(60'000);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].source, "a\nh");
  EXPECT_EQ(due[0].suppressed, 2);
  EXPECT_TRUE(b.TakeOverdue(120'000).empty());
  EXPECT_TRUE(b.Refused("a\nh", 120'001).record);  // forgotten: a fresh budget
}

TEST(RefusalBudget, ASourceGivenUpForRoomHasItsCountReported) {
  RefusalBudget b({1, 60'000, 2});
  b.Refused("s1", 0);
  b.Refused("s1", 1);  // counted
  b.Refused("s2", 2);
  b.Refused("s3", 3);  // no room: s1, the oldest window, is given up
  const auto due = b.TakeOverdue(4);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].source, "s1");
  EXPECT_EQ(due[0].suppressed, 1);
  EXPECT_TRUE(b.Refused("s1", 5).record);
}

}  // namespace
}  // namespace tunectl

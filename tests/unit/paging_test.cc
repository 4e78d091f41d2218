#include "core/paging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1'800'000'000'000;  // 2027-01-15T08:00:00Z
const PageRules kLog{"log"};

TEST(ResolvePage, NoLimitGivesTheDefaultFromTheNewest) {
  auto p = ResolvePage(kLog, {}, kNow);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->limit, kDefaultPageSize);
  EXPECT_EQ(p->before_id, 0);
  EXPECT_FALSE(p->all);
  EXPECT_EQ(p->since_ms, 0);
}

TEST(ResolvePage, AllMeansTheCapAndIsMarked) {
  PageRequest in;
  in.all = true;
  auto p = ResolvePage(kLog, in, kNow);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->all);
  EXPECT_EQ(p->limit, kMaxPageSize);
}

TEST(ResolvePage, LimitPastTheCapOrNegativeIsRefusedNamingTheRange) {
  PageRequest in;
  in.limit = kMaxPageSize + 1;
  auto p = ResolvePage(kLog, in, kNow);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("--limit: 1001 is out of range; allowed 1..1000"));
  EXPECT_THAT(p.status().message(), HasSubstr("--page-token"));
  in.limit = -1;
  EXPECT_FALSE(ResolvePage(kLog, in, kNow).ok());
}

TEST(ResolvePage, TokenRoundTripsAndCarriesTheKeyset) {
  PageRequest in;
  in.token = PageToken("log", int64_t{1234});
  auto p = ResolvePage(kLog, in, kNow);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->before_id, 1234);
  PageRules names{"workloads"};
  names.keyed_by_name = true;
  in.token = PageToken("workloads", "demo");
  auto w = ResolvePage(names, in, kNow);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->after_key, "demo");
}

TEST(ResolvePage, ATokenOfAnotherListOrGarbageIsRefused) {
  PageRequest in;
  for (std::string bad : {"experiments:12", "log:", "log:x", "log:-3", "12", "log:12junk"}) {
    in.token = bad;
    auto p = ResolvePage(kLog, in, kNow);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_THAT(p.status().message(), HasSubstr("--page-token: \"" + bad + "\""));
    EXPECT_THAT(p.status().message(), HasSubstr("log list"));
  }
}

TEST(ResolvePage, SinceIsResolvedAgainstNowOrRefusedWhereTimeMeansNothing) {
  PageRequest in;
  in.since = "30d";
  auto p = ResolvePage(kLog, in, kNow);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->since_ms, kNow - 30LL * 86'400'000);
  PageRules workloads{"workloads"};
  workloads.has_since = false;
  auto w = ResolvePage(workloads, in, kNow);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("--since: the workloads list has no time"));
}

TEST(ParseSince, DurationsCountBackFromNow) {
  EXPECT_EQ(*ParseSince("12h", kNow), kNow - 12 * 3'600'000);
  EXPECT_EQ(*ParseSince("1h30m", kNow), kNow - 90 * 60'000);
}

TEST(ParseSince, DatesAndTimesAreUtcUnlessAnOffsetIsGiven) {
  EXPECT_EQ(*ParseSince("1970-01-02", kNow), 86'400'000);
  EXPECT_EQ(*ParseSince("2026-01-31T08:00:00Z", kNow), 1'769'846'400'000);
  EXPECT_EQ(*ParseSince("2026-01-31 08:00", kNow), 1'769'846'400'000);
  EXPECT_EQ(*ParseSince("2026-01-31T08:00:00.250Z", kNow), 1'769'846'400'250);
  EXPECT_EQ(*ParseSince("2026-01-31T16:00:00+08:00", kNow), 1'769'846'400'000);
}

TEST(ParseSince, AnythingElseIsRefusedWithExamples) {
  for (const char* bad : {"", "yesterday", "30", "2026-02-30", "2026-13-01", "2026-01-31T25:00",
                          "2026-01-31T08:00:00Zjunk", "-5d"}) {
    auto s = ParseSince(bad, kNow);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("--since: \"" + std::string(bad) + "\""));
    EXPECT_THAT(s.status().message(), HasSubstr("30d"));
  }
}

TEST(TooManyForOnePage, SaysTheCapAndHowToPage) {
  const Status s = TooManyForOnePage(kLog);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("--limit 0: more than 1000 log match"));
  EXPECT_THAT(s.message(), HasSubstr("--page-token"));
  EXPECT_THAT(s.message(), HasSubstr("--since"));
}

TEST(ResolveSeriesPoints, DefaultAllAndTheCap) {
  EXPECT_EQ(*ResolveSeriesPoints(0, false), kDefaultSeriesPoints);
  EXPECT_EQ(*ResolveSeriesPoints(500, false), 500);
  EXPECT_EQ(*ResolveSeriesPoints(0, true), kMaxSeriesPoints);
  auto too_many = ResolveSeriesPoints(kMaxSeriesPoints + 1, false);
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(too_many.status().message(), HasSubstr("--limit: 20001 is out of range"));
  EXPECT_THAT(TooManyPoints().message(), HasSubstr("more than 20000 points"));
}

}  // namespace
}  // namespace tunectl

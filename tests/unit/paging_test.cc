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

TEST(ChainPage, SinceIsRequiredAndUntilMustComeAfterIt) {
  auto none = ResolveChainPage({}, kNow);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("--since: required"));
  EXPECT_THAT(none.status().message(), HasSubstr("2026-12-01"));
  EXPECT_THAT(none.status().message(), HasSubstr("7d"));
  auto bad_until = ResolveChainPage({"7d", "soon", 0, ""}, kNow);
  ASSERT_FALSE(bad_until.ok());
  EXPECT_THAT(bad_until.status().message(), HasSubstr("--until: \"soon\" is neither"));
  auto bad_since = ResolveChainPage({"last week", "", 0, ""}, kNow);
  EXPECT_THAT(bad_since.status().message(), HasSubstr("--since: \"last week\" is neither"));
  auto backwards = ResolveChainPage({"2026-12-02", "2026-12-01", 0, ""}, kNow);
  ASSERT_FALSE(backwards.ok());
  EXPECT_THAT(backwards.status().message(),
              HasSubstr("--until: \"2026-12-01\" is not after --since \"2026-12-02\""));
  auto limit = ResolveChainPage({"7d", "", kMaxPageSize + 1, ""}, kNow);
  EXPECT_THAT(limit.status().message(), HasSubstr("limit: 1001 is out of range"));
}

TEST(ChainPage, TheFirstPageResolvesTheWindowOnceAndTheTokenCarriesIt) {
  auto p = ResolveChainPage({"7d", "2027-01-15T07:00:00+00:00", 0, ""}, kNow);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->since_ms, kNow - 7 * 86'400'000LL);
  EXPECT_EQ(p->until_ms, kNow - 3'600'000);
  EXPECT_EQ(p->upto_seq, -1);  // fixed by the store on the first page
  EXPECT_EQ(p->limit, kMaxPageSize);
  ChainPage next = *p;
  next.upto_seq = 40;
  next.after_seq = 12;
  // an hour later, with other --since/--until: the token's window and position hold
  auto q = ResolveChainPage({"1d", "", 10, ChainPageToken(next)}, kNow + 3'600'000);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->since_ms, p->since_ms);
  EXPECT_EQ(q->until_ms, p->until_ms);
  EXPECT_EQ(q->upto_seq, 40);
  EXPECT_EQ(q->after_seq, 12);
  EXPECT_EQ(q->after_source, "");
  EXPECT_EQ(q->limit, 10);
  next.after_source = "log";
  next.after_id = 7;
  next.since_ms = -86'400'000;  // before the epoch
  auto r = ResolveChainPage({"", "", 0, ChainPageToken(next)}, kNow);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->after_source, "log");
  EXPECT_EQ(r->after_id, 7);
  EXPECT_EQ(r->since_ms, -86'400'000);
}

TEST(ChainPage, ATokenOfAnotherListOrGarbageIsRefused) {
  for (std::string bad : {"log:12", "audit:", "audit:1:2:3:4::", "audit:1:2:3:4:x:5",
                          "audit:1:2:-3:4::5", "audit:1:2:3:4::5:6", "audit:a:2:3:4::5"}) {
    auto p = ResolveChainPage({"7d", "", 0, bad}, kNow);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_THAT(p.status().message(),
                HasSubstr("page_token: \"" + bad + "\" is not a page token of the audit export"));
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

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/store/store.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

AgentNodeState IsolatedSlots() {
  AgentNodeState n;
  n.isolated_slots = true;
  return n;
}

using ::testing::HasSubstr;

struct Measurement {
  std::unique_ptr<TestDb> db;
  int64_t agent = 0;
  int64_t schedule = 0;
};

// A workload with a completed baseline whose runs took ~60 s each, and a schedule.
Measurement Measured(std::unique_ptr<TestDb> db) {
  Measurement s;
  s.db = std::move(db);
  Store& st = s.db->store();
  auto spec = ParseWorkloadSpec(R"(
name: demo
command: [train, "{nw}", "{pf}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
  pf: {type: int, default: 2, min: 1, max: 16}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
run: {repeats: 2}
)");
  EXPECT_TRUE(st.ApplyWorkload(*spec, "t", "user:t").ok());
  // Isolated slots: an experiment's runs may all be claimed at once, as these tests drive them.
  s.agent = *st.RegisterAgent("n1", {}, 100, "t", "s1", {}, IsolatedSlots());
  auto b = st.CreateBaseline("demo", 2, "user:t");
  auto claimed = st.ClaimRuns(s.agent, {}, 10);
  EXPECT_TRUE(claimed.ok());
  for (const auto& p : *claimed) {
    EXPECT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, s.agent).ok());
    EXPECT_TRUE(
        *st.StoreMetricBatch(p.run_id, p.attempt, 1, {{"sps", 1, 100, 1}, {"sps", 2, 101, 2}}));
    EXPECT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 2}, "agent:n1").ok());
  }
  s.db->Scalar("UPDATE runs SET started_at = finished_at - interval '60 seconds' RETURNING 1");
  EXPECT_EQ(st.GetBaseline(*b)->state, "completed");
  ScheduleRow row;
  row.name = "nightly";
  row.window = "Mon-Fri 01:00-06:00";
  row.tz = "Asia/Shanghai";
  auto created = st.CreateSchedule(row, "user:t");
  EXPECT_TRUE(created.ok()) << created.status().message();
  s.schedule = created.ok() ? *created : 0;
  return s;
}

TEST(Batches, OneExperimentPerValueAgainstOneBaseline) {
  TUNECTL_TEST_DB(db);
  Measurement s = Measured(std::move(db));
  Store& st = s.db->store();
  auto id = st.CreateBatch({"", 0, {"nw=8,16", "pf=4"}, "nightly", 4, "holm"}, "user:t");
  ASSERT_TRUE(id.ok()) << id.status().message();
  auto b = st.GetBatch(*id);
  ASSERT_EQ(b->experiments.size(), 3u);
  EXPECT_EQ(b->experiments[0].change.Describe(), "nw 1→8");
  EXPECT_EQ(b->experiments[1].change.Describe(), "nw 1→16");
  EXPECT_EQ(b->experiments[2].change.Describe(), "pf 2→4");
  for (const auto& e : b->experiments) EXPECT_EQ(e.baseline_id, b->baseline_id);
  EXPECT_EQ(b->schedule, "nightly");
  EXPECT_EQ(b->state, "running");
  EXPECT_EQ(s.db->Scalar("SELECT DISTINCT expected_s FROM experiments"), "60");
}

TEST(Batches, RefusedInputChangesNothing) {
  TUNECTL_TEST_DB(db);
  Measurement s = Measured(std::move(db));
  Store& st = s.db->store();
  const std::string before = s.db->Scalar(
      "SELECT (SELECT count(*) FROM experiments) || '/' || (SELECT count(*) FROM batches)");
  EXPECT_THAT(st.CreateBatch({"", 0, {"nw=8,99"}, "nightly", 4, "holm"}, "u").status().message(),
              HasSubstr("nw=99 is out of range"));
  EXPECT_THAT(st.CreateBatch({"", 0, {"nw=8"}, "weekly", 4, "holm"}, "u").status().message(),
              HasSubstr("--schedule: no schedule named \"weekly\"; schedules: nightly"));
  EXPECT_THAT(st.CreateBatch({"", 0, {"nw=8"}, "", 4, "bonferroni"}, "u").status().message(),
              HasSubstr("allowed: holm, bh"));
  EXPECT_THAT(st.CreateBatch({"", 0, {"nw=8,"}, "", 4, "holm"}, "u").status().message(),
              HasSubstr("empty value"));
  EXPECT_EQ(
      s.db->Scalar(
          "SELECT (SELECT count(*) FROM experiments) || '/' || (SELECT count(*) FROM batches)"),
      before);
  ScheduleRow dup;
  dup.name = "nightly";
  dup.window = "daily 01:00-02:00";
  dup.tz = "UTC";
  EXPECT_EQ(st.CreateSchedule(dup, "u").status().code(), Status::Code::kAlreadyExists);
}

TEST(Batches, RunsAreClaimedOnlyInsideAnOpenWindowWithTimeLeft) {
  TUNECTL_TEST_DB(db);
  Measurement s = Measured(std::move(db));
  Store& st = s.db->store();
  ASSERT_TRUE(st.CreateBatch({"", 0, {"nw=8"}, "nightly", 4, "holm"}, "u").ok());
  const std::string key = "\"" + std::to_string(s.schedule) + "\"";
  EXPECT_TRUE(st.ClaimRuns(s.agent, {}, 10, "{}")->empty());                 // window closed
  EXPECT_TRUE(st.ClaimRuns(s.agent, {}, 10, "{" + key + ": 30}")->empty());  // 30 s left < 60 s
  EXPECT_EQ(st.ClaimRuns(s.agent, {}, 10, "{" + key + ": 3600}")->size(),
            8u);  // open, an hour left
  // unscheduled experiments are not gated
  ASSERT_TRUE(st.CreateExperiment({"", 0, {"pf=4"}, 0, 4}, "u").ok());
  EXPECT_EQ(st.ClaimRuns(s.agent, {}, 100, "{}")->size(), 8u);
}

TEST(Batches, CancelStopsEveryExperiment) {
  TUNECTL_TEST_DB(db);
  Measurement s = Measured(std::move(db));
  Store& st = s.db->store();
  auto id = st.CreateBatch({"", 0, {"nw=8,16"}, "nightly", 4, "holm"}, "u");
  auto b = st.CancelBatch(*id, "u");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->state, "cancelled");
  for (const auto& e : b->experiments) EXPECT_EQ(e.state, "cancelled");
  EXPECT_EQ(s.db->Scalar("SELECT count(*) FROM runs WHERE state = 'queued'"), "0");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

// Each "night" the window opens with room for one pair on a 2-slot agent, then closes: the
// batch resumes night after night until its experiment is decided.
TEST(Batches, ABatchSpanningSeveralNightsCompletes) {
  TUNECTL_TEST_DB(db);
  Measurement s = Measured(std::move(db));
  Store& st = s.db->store();
  auto id = st.CreateBatch({"", 0, {"nw=8"}, "nightly", 6, "holm"}, "u");
  ASSERT_TRUE(id.ok()) << id.status().message();
  const std::string open = "{\"" + std::to_string(s.schedule) + "\": 100}";
  int nights = 0;
  while (st.GetBatch(*id)->state == "running" && nights < 20) {
    ++nights;
    auto plans = st.ClaimRuns(s.agent, {}, 2, open);  // two runs fit tonight
    ASSERT_TRUE(plans.ok());
    for (const auto& p : *plans) {
      const double level = (st.GetRun(p.run_id)->arm == "variant" ? 200 : 100) *
                           (1 + 0.002 * (static_cast<double>((p.run_id * 5) % 4) - 1.5));
      ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1,
                                       {{"sps", 1, level, 1}, {"sps", 2, level + 1, 2}}));
      ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 2}, "agent:n1").ok());
    }
    EXPECT_TRUE(st.ClaimRuns(s.agent, {}, 2, "{}")->empty());  // day: the window is closed
  }
  EXPECT_GE(nights, 3);
  auto b = st.GetBatch(*id);
  EXPECT_EQ(b->state, "done");
  EXPECT_EQ(b->experiments[0].decision, "improved");
}

}  // namespace
}  // namespace tunectl

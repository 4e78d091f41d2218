#include "cli/views.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

v1::Baseline Sample() {
  v1::Baseline b;
  b.set_id(3);
  b.set_workload("demo");
  b.set_config_version(1);
  b.set_state("completed");
  b.set_repeats(5);
  b.set_runs_succeeded(5);
  (*b.mutable_params())["num_workers"] = "1";
  auto* m = b.add_summaries();
  m->set_metric("samples_per_s");
  m->set_unit("samples/s");
  m->set_better("higher");
  m->set_role("primary");
  m->set_n(5);
  m->set_median(2427.4);
  m->set_mean(2429);
  m->set_stddev(11.43);
  m->set_cv(0.0047);
  m->set_min(2418);
  m->set_max(2444);
  return b;
}

TEST(BaselineViews, JsonHasSummaryWithNumbers) {
  ojson j = BaselineJson(Sample());
  EXPECT_EQ(j["id"], 3);
  EXPECT_EQ(j["params"]["num_workers"], "1");
  ASSERT_EQ(j["summary"].size(), 1u);
  EXPECT_EQ(j["summary"][0]["metric"], "samples_per_s");
  EXPECT_DOUBLE_EQ(j["summary"][0]["median"].get<double>(), 2427.4);
  EXPECT_EQ(j["runs"]["succeeded"], 5);
}

TEST(BaselineViews, DetailShowsHeaderAndMetricRow) {
  std::string d = BaselineDetail(Sample());
  EXPECT_THAT(d, HasSubstr("Baseline 3  workload demo  config v1  completed"));
  EXPECT_THAT(d, HasSubstr("params: num_workers=1"));
  EXPECT_THAT(
      d,
      HasSubstr(
          "samples_per_s  samples/s  higher  primary  5  2427    2429  11.43   0.5%  2418  2444"));
}

TEST(BaselineViews, ProgressShowsWaitReasonWhenNothingRuns) {
  v1::ListRunsResponse runs;
  auto* r = runs.add_runs();
  r->set_state("queued");
  r->set_wait_reason("waiting: no connected agent matches selector pool=gpu");
  v1::Baseline b = Sample();
  std::string p = BaselineProgress(b, runs, 3);
  EXPECT_THAT(p,
              HasSubstr("0/5 runs done, 0 running, 1 queued [3s] - waiting: no connected agent"));
}

TEST(RunViews, TableShowsWaitReasonForQueuedRuns) {
  v1::ListRunsResponse runs;
  auto* r = runs.add_runs();
  r->set_id(7);
  r->set_state("queued");
  r->set_wait_reason("waiting: x");
  Table t = RunsTable(runs);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], "7");
  EXPECT_EQ(t.rows[0].back(), "waiting: x");
}

}  // namespace
}  // namespace tunectl

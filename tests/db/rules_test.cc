// The rules moved into core, seen through the store: one counting rule for the verdict and the
// frozen level, analyses fixed to their spec revision, a batch's correction as the decision.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "server/store/store.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

std::string SpecText(double min_effect) {
  return R"(
name: demo
command: [train, "{nw}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary, min_effect: )" +
         std::to_string(min_effect) + R"(}
run: {repeats: 3, warmup_steps: 0}
)";
}

WorkloadSpec Spec(double min_effect = 0.03) {
  auto s = ParseWorkloadSpec(SpecText(min_effect));
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

// Run-to-run noise (±0.3 %): real runs never repeat each other exactly.
double Jitter(const RunRow& r) {
  return 1 + 0.002 * (static_cast<double>((r.id * 5) % 4) - 1.5);
}

// Samples of one run: `n` steps at `level`, the second half at `tail` × level (1 = steady).
std::vector<SampleIn> Samples(int64_t seed, double level, double tail = 1, int n = 40) {
  std::vector<SampleIn> s;
  std::mt19937 gen(static_cast<unsigned>(seed));  // step noise, 0.3 %: the same for a run id
  std::normal_distribution<double> noise(0, 0.003);
  for (int k = 1; k <= n; ++k)
    s.push_back({"sps", k, level * (k > n / 2 ? tail : 1) * (1 + noise(gen)), k});
  return s;
}

// Runs every queued run; `samples(run)` gives each run's samples.
void RunAll(
    Store& st, int64_t agent, const std::function<std::vector<SampleIn>(const RunRow&)>& f,
    const std::function<void()>& between = [] {}) {
  for (;;) {
    auto plans = st.ClaimRuns(agent, {}, 1);
    ASSERT_TRUE(plans.ok()) << plans.status().message();
    if (plans->empty()) return;
    for (const auto& p : *plans) {
      auto run = st.GetRun(p.run_id);
      ASSERT_TRUE(*st.StoreMetricBatch(p.run_id, p.attempt, 1, f(*run)));
      ASSERT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 40}, "agent:t").ok());
    }
    between();
  }
}

struct Measured {
  std::unique_ptr<TestDb> db;
  int64_t agent = 0, baseline = 0;
  Store& st() { return db->store(); }
};

Measured Baseline(std::unique_ptr<TestDb> db) {
  Measured m;
  m.db = std::move(db);
  EXPECT_TRUE(m.st().ApplyWorkload(Spec(), SpecText(0.03), "user:t").ok());
  m.agent = *m.st().RegisterAgent("n1", {}, 100, "t", "s1");
  m.baseline = *m.st().CreateBaseline("demo", 3, "user:t");
  RunAll(m.st(), m.agent, [](const RunRow& r) { return Samples(r.id, 100); });
  return m;
}

TEST(Rules, FrozenLevelIsTheVerdictsVariantMedianOverTheRunsItCompared) {
  TUNECTL_TEST_DB(db);
  Measured m = Baseline(std::move(db));
  ExperimentIn in;
  in.vary = {"nw=8"};
  in.repeats = 6;
  auto id = m.st().CreateExperiment(in, "user:t");
  ASSERT_TRUE(id.ok()) << id.status().message();
  int variants = 0;
  RunAll(m.st(), m.agent, [&](const RunRow& r) {
    if (r.arm != "variant") return Samples(r.id, 100 * Jitter(r));
    // The first variant run throttles half-way (a slowdown: it counts with what it delivered);
    // the others gain 10 %.
    return ++variants == 1 ? Samples(r.id, 300, 0.5) : Samples(r.id, 110 + variants);
  });
  auto e = m.st().GetExperiment(*id);
  ASSERT_TRUE(e->verdict.has_value());
  ASSERT_FALSE(e->verdict->metrics.empty());
  const MetricVerdict& sps = e->verdict->metrics[0];
  int left_out = 0;
  for (const auto& r : sps.variant_runs) left_out += !r.compared;
  auto f = m.st().FreezeExperiment(*id, e->decision != "improved", "test", "user:t");
  ASSERT_TRUE(f.ok()) << f.status().message();
  const std::string where =
      " FROM baseline_summaries s JOIN baselines b ON b.id = s.baseline_id "
      "WHERE s.metric = 'sps' AND b.source_experiment_id = " +
      std::to_string(*id);
  EXPECT_EQ(m.db->Scalar("SELECT s.n" + where), std::to_string(sps.n_variant));
  EXPECT_NEAR(std::stod(m.db->Scalar("SELECT s.median" + where)), sps.variant_median, 1e-9);
  const int succeeded = std::stoi(
      m.db->Scalar("SELECT count(*) FROM runs WHERE arm = 'variant' AND state = 'succeeded' AND "
                   "experiment_id = " +
                   std::to_string(*id)));
  // The throttled run succeeded: it counts with what it delivered, here and in the frozen level.
  EXPECT_EQ(left_out, 0);
  // Its stored value is the work over the time it took (20 steps at 300/s, 20 at 150/s: 200/s),
  // not the median of its last segment, and the verdict says how it was computed and carries its
  // pace.
  const ComparedRun& throttled = sps.variant_runs.front();
  EXPECT_NEAR(throttled.value, 40.0 / (20 / 300.0 + 20 / 150.0), 8);
  ASSERT_TRUE(throttled.pace.has_value());
  EXPECT_GT(*throttled.pace, throttled.value);
  EXPECT_THAT(throttled.how, HasSubstr("harmonic mean (work over time) of the samples at steps"));
  EXPECT_NEAR(std::stod(m.db->Scalar("SELECT delivered FROM run_summaries WHERE metric = 'sps' "
                                     "AND run_id = " +
                                     std::to_string(throttled.run))),
              throttled.value, 1e-9);
  EXPECT_EQ(m.db->Scalar("SELECT aggregate FROM run_summaries WHERE metric = 'sps' AND run_id = " +
                         std::to_string(throttled.run)),
            "harmonic mean (work over time)");
  // run show gives the same value, and how it was computed.
  auto shown = m.st().GetRun(throttled.run);
  ASSERT_TRUE(shown.ok());
  ASSERT_FALSE(shown->metrics.empty());
  ASSERT_TRUE(shown->metrics[0].value.has_value());
  EXPECT_DOUBLE_EQ(*shown->metrics[0].value, throttled.value);
  EXPECT_EQ(shown->metrics[0].value_how, throttled.how);
  EXPECT_EQ(sps.n_variant, succeeded) << testing::PrintToString(e->verdict->reasons);
}

TEST(Rules, ReapplyingASpecDuringAnExperimentDoesNotChangeItsDecision) {
  TUNECTL_TEST_DB(db);
  Measured m = Baseline(std::move(db));
  ExperimentIn in;
  in.vary = {"nw=8"};
  auto id = m.st().CreateExperiment(in, "user:t");
  ASSERT_TRUE(id.ok()) << id.status().message();
  bool reapplied = false;
  RunAll(
      m.st(), m.agent,
      [](const RunRow& r) {
        return Samples(r.id, (r.arm == "variant" ? 108 + r.idx % 2 : 100) * Jitter(r));
      },
      [&] {
        if (reapplied) return;
        // Half-way: a min_effect of 50 % would make +8 % "unchanged"; it is for new analyses.
        auto a = m.st().ApplyWorkload(Spec(0.5), SpecText(0.5), "user:t");
        ASSERT_TRUE(a.ok()) << a.status().message();
        EXPECT_EQ(a->action, "updated");
        reapplied = true;
      });
  auto e = m.st().GetExperiment(*id);
  EXPECT_EQ(e->spec_revision, 1);
  EXPECT_EQ(m.st().GetWorkload("demo")->spec_revision, 2);
  EXPECT_EQ(e->decision, "improved") << VerdictToJson(*e->verdict);
  // A new experiment uses the new revision.
  in.vary = {"nw=4"};
  auto next = m.st().CreateExperiment(in, "user:t");
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(m.st().GetExperiment(*next)->spec_revision, 2);
}

TEST(Rules, BatchCorrectionIsTheDecisionTheLogRecordsAndFreezeChecks) {
  TUNECTL_TEST_DB(db);
  Measured m = Baseline(std::move(db));
  BatchIn in;
  in.vary = {"nw=2,3,4,5,6,7"};
  in.repeats = 8;
  auto batch = m.st().CreateBatch(in, "user:t");
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  auto b = m.st().GetBatch(*batch);
  const int64_t first = b->experiments[0].id;
  // nw=2 gains ~15 % with pair-to-pair noise: improved alone at the first look (p ≈ 0.012), not
  // after Holm over six.
  const double noise[] = {0.04, -0.04, 0.02, -0.02};
  std::vector<int64_t> measured_before_last;
  RunAll(m.st(), m.agent, [&](const RunRow& r) {
    if (r.arm != "variant") return Samples(r.id, 100 * Jitter(r));
    if (r.experiment_id != first) return Samples(r.id, 100 * (1 + 0.001 * (r.idx % 3)));
    return Samples(r.id, 115 * (1 + noise[(r.idx - 1) / 2 % 4]));
  });
  auto e = m.st().GetExperiment(first);
  ASSERT_TRUE(e->verdict.has_value());
  EXPECT_EQ(e->verdict->correction, "holm");
  EXPECT_EQ(e->verdict->unadjusted_decision, "improved") << "p " << e->verdict->PrimaryP();
  ASSERT_TRUE(e->verdict->adjusted_p.has_value());
  EXPECT_GE(*e->verdict->adjusted_p, e->verdict->PrimaryP());
  // The decision is the one Holm's adjusted p allows, and the log records that very decision.
  const bool survives = *e->verdict->adjusted_p < 0.05;
  EXPECT_EQ(e->decision, survives ? "improved" : "inconclusive")
      << "adjusted p " << *e->verdict->adjusted_p;
  EXPECT_EQ(e->state, "decided");
  EXPECT_EQ(m.st().FreezeExperiment(first, false, "", "user:t").ok(), survives);
  EXPECT_EQ(m.db->Scalar("SELECT entry->>'decision' FROM tuning_log WHERE kind = 'decided' AND "
                         "experiment_id = " +
                         std::to_string(first)),
            e->decision);
  EXPECT_EQ(m.db->Scalar("SELECT entry->'correction'->>'unadjusted_decision' FROM tuning_log "
                         "WHERE kind = 'decided' AND experiment_id = " +
                         std::to_string(first)),
            "improved");
  EXPECT_EQ(m.db->Scalar("SELECT state FROM batches WHERE id = " + std::to_string(*batch)), "done");
  if (survives) return;
  EXPECT_TRUE(m.st().FreezeExperiment(first, true, "accepted risk", "user:t").ok());
}

TEST(Rules, BatchMemberWaitsMeasuredAndCannotFreezeUntilTheBatchIsDone) {
  TUNECTL_TEST_DB(db);
  Measured m = Baseline(std::move(db));
  BatchIn in;
  in.vary = {"nw=2,3"};
  in.repeats = 4;
  auto batch = m.st().CreateBatch(in, "user:t");
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  const int64_t first = m.st().GetBatch(*batch)->experiments[0].id;
  // Only the first member's runs finish.
  for (;;) {
    auto plans = m.st().ClaimRuns(m.agent, {}, 100);
    ASSERT_TRUE(plans.ok());
    bool any = false;
    for (const auto& p : *plans) {
      auto run = m.st().GetRun(p.run_id);
      if (run->experiment_id != first) continue;
      any = true;
      ASSERT_TRUE(*m.st().StoreMetricBatch(
          p.run_id, p.attempt, 1,
          Samples(run->id, (run->arm == "variant" ? 120 : 100) * Jitter(*run))));
      ASSERT_TRUE(m.st().FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 40}, "agent:t").ok());
    }
    if (!any) break;
  }
  EXPECT_EQ(m.st().GetExperiment(first)->state, "measured");
  EXPECT_EQ(m.db->Scalar("SELECT count(*) FROM tuning_log WHERE kind = 'decided'"), "0");
  auto refused = m.st().FreezeExperiment(first, true, "hurry", "user:t");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("is still running"));
  // Cancelling the batch decides the measured member, corrected across both.
  ASSERT_TRUE(m.st().CancelBatch(*batch, "user:t").ok());
  EXPECT_EQ(m.st().GetExperiment(first)->state, "decided");
  EXPECT_EQ(m.db->Scalar("SELECT count(*) FROM tuning_log WHERE kind = 'decided'"), "1");
}

}  // namespace
}  // namespace tunectl

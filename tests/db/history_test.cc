// History that pages: every list reads one page by keyset, newest first, and its pages together
// hold every row exactly once; filters (workload, --param, --since) are applied by the query.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "server/store/store.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

const char* const kSpec = R"(
name: demo
command: [train, "{nw}", "{pf}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
  pf: {type: int, default: 2, min: 1, max: 16}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
run: {repeats: 2}
)";

void Apply(Store& st, const std::string& name) {
  std::string text = kSpec;
  text.replace(text.find("demo"), 4, name);
  auto spec = ParseWorkloadSpec(text);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_TRUE(st.ApplyWorkload(*spec, text, "user:t").ok());
}

// Walks a list page by page (`limit` rows each) and returns the ids of every page in the order
// read; checks each page is oldest first and older than the page before.
template <typename Row>
std::vector<int64_t> Walk(int limit, const std::function<Result<Paged<Row>>(const Page&)>& list,
                          const std::function<int64_t(const Row&)>& id_of, int64_t since_ms = 0) {
  std::vector<int64_t> ids;
  Page page;
  page.limit = limit;
  page.since_ms = since_ms;
  int64_t older_than = 0;  // the oldest id of the page before
  for (int guard = 0; guard < 1000; ++guard) {
    auto r = list(page);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) break;
    EXPECT_LE(r->rows.size(), static_cast<size_t>(limit));
    if (r->more) {
      EXPECT_EQ(r->rows.size(), static_cast<size_t>(limit));  // only the last page is short
    }
    for (size_t i = 0; i < r->rows.size(); ++i) {
      if (i > 0) {
        EXPECT_LT(id_of(r->rows[i - 1]), id_of(r->rows[i]));
      }
      ids.push_back(id_of(r->rows[i]));
    }
    if (older_than && !r->rows.empty()) {
      EXPECT_LT(id_of(r->rows.back()), older_than);
    }
    if (!r->rows.empty()) older_than = id_of(r->rows.front());
    if (!r->more) break;
    EXPECT_EQ(r->next_before, id_of(r->rows.front()));
    page.before_id = r->next_before;
  }
  return ids;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> Ids(TestDb& db, const std::string& sql) {
  std::vector<int64_t> out;
  const std::string text = db.Scalar(
      "SELECT COALESCE(string_agg(id::text, ',' ORDER BY id), '') "
      "FROM (" +
      sql + ") x");
  for (size_t p = 0; p < text.size();) {
    size_t q = text.find(',', p);
    if (q == std::string::npos) q = text.size();
    out.push_back(std::stoll(text.substr(p, q - p)));
    p = q + 1;
  }
  return out;
}

// 30 log entries of workload demo (and 10 of other), one a day back from now: every third changes
// nw, the others pf. Regression-kind rows carry no experiment, so plain SQL can write them.
void FillLog(TestDb& db) {
  db.Scalar(
      "INSERT INTO tuning_log(at, workload_id, kind, actor, entry) SELECT now() - (40 - g) * "
      "interval '1 day', (SELECT id FROM workloads WHERE name = CASE WHEN g % 4 = 0 THEN 'other' "
      "ELSE 'demo' END), 'regression', 'watch', json_build_object('to', CASE WHEN g % 3 = 0 THEN "
      "json_build_object('nw', g) ELSE json_build_object('pf', g) END, 'message', 'entry ' || g) "
      "FROM generate_series(1, 40) g RETURNING 1");
}

TEST(History, LogPagesHoldEveryEntryOnceNewestPageFirst) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  Apply(st, "demo");
  Apply(st, "other");
  FillLog(*db);
  const auto all = Ids(*db, "SELECT id FROM tuning_log");
  ASSERT_EQ(all.size(), 40u);
  const auto walked = Walk<LogRow>(
      7, [&](const Page& p) { return st.ListLog("", "", p); },
      [](const LogRow& r) { return r.id; });
  EXPECT_EQ(walked.size(), all.size());
  EXPECT_EQ(Sorted(walked), all);
  EXPECT_EQ(std::set<int64_t>(walked.begin(), walked.end()).size(), walked.size());
  // The first page is the newest entries, oldest first.
  Page first;
  first.limit = 3;
  auto page = st.ListLog("", "", first);
  ASSERT_EQ(page->rows.size(), 3u);
  EXPECT_EQ(page->rows[2].id, all.back());
  EXPECT_EQ(page->rows[0].id, all[all.size() - 3]);
  EXPECT_TRUE(page->more);
  // Every row in one response when they fit the cap; none left over.
  Page every;
  every.all = true;
  every.limit = kMaxPageSize;
  auto whole = st.ListLog("", "", every);
  EXPECT_EQ(whole->rows.size(), 40u);
  EXPECT_FALSE(whole->more);
}

TEST(History, LogFiltersByWorkloadParamAndSinceInTheQuery) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  Apply(st, "demo");
  Apply(st, "other");
  FillLog(*db);
  const auto nw = Ids(*db,
                      "SELECT l.id FROM tuning_log l JOIN workloads w ON w.id = l.workload_id "
                      "WHERE w.name = 'demo' AND (l.entry -> 'to' ->> 'nw') IS NOT NULL");
  ASSERT_GE(nw.size(), 5u);
  // Pages of 2 are full although most entries do not match: the filter is part of the query, not
  // applied to a page after it was read.
  const auto walked = Walk<LogRow>(
      2, [&](const Page& p) { return st.ListLog("demo", "nw", p); },
      [](const LogRow& r) { return r.id; });
  EXPECT_EQ(Sorted(walked), nw);
  auto first = st.ListLog("demo", "nw", Page());
  ASSERT_TRUE(first.ok());
  for (const auto& r : first->rows) {
    EXPECT_EQ(r.workload, "demo");
    EXPECT_THAT(r.entry_json, ::testing::HasSubstr("\"nw\""));
  }
  // Since 10.5 days ago: the entries of the last 10 days.
  const int64_t now_ms =
      std::stoll(db->Scalar("SELECT (extract(epoch FROM now()) * 1000)::bigint"));
  const auto recent = Walk<LogRow>(
      4, [&](const Page& p) { return st.ListLog("", "", p); }, [](const LogRow& r) { return r.id; },
      now_ms - 252 * 3'600'000LL);
  EXPECT_EQ(Sorted(recent),
            Ids(*db, "SELECT id FROM tuning_log WHERE at >= now() - interval '252 hours'"));
  EXPECT_EQ(recent.size(), 11u);  // days 0..10 back
  EXPECT_EQ(st.ListLog("nope", "", Page()).status().code(), Status::Code::kNotFound);
  // A quote in the parameter is a name like any other.
  EXPECT_TRUE(st.ListLog("", "n'w", Page())->rows.empty());
}

// A workload with a completed baseline (2 runs), agent n1.
int64_t Measured(TestDb& db, int64_t* agent) {
  Store& st = db.store();
  Apply(st, "demo");
  *agent = *st.RegisterAgent("n1", {}, 100, "t", "s1");
  auto b = st.CreateBaseline("demo", 2, "user:t");
  auto claimed = st.ClaimRuns(*agent, {}, 10);
  EXPECT_TRUE(claimed.ok());
  for (const auto& p : *claimed) {
    EXPECT_TRUE(st.MarkRunStarted(p.run_id, p.attempt, *agent).ok());
    EXPECT_TRUE(
        *st.StoreMetricBatch(p.run_id, p.attempt, 1, {{"sps", 1, 100, 1}, {"sps", 2, 101, 2}}));
    EXPECT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 2}, "agent:n1").ok());
  }
  EXPECT_EQ(st.GetBaseline(*b)->state, "completed");
  return *b;
}

TEST(History, EveryListPagesThroughAllItsRowsOnce) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  int64_t agent = 0;
  const int64_t baseline = Measured(*db, &agent);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(st.CreateBaseline("demo", 2, "user:t").ok());
  for (int i = 0; i < 5; ++i) {
    HypothesisIn h;
    h.baseline_id = baseline;
    h.vary = {"nw=" + std::to_string(i + 2)};
    h.expect = "sps +10%";
    ASSERT_TRUE(st.CreateHypothesis(h, "user:t").ok());
  }
  for (const char* vary : {"nw=8,16,32", "pf=4,8", "nw=3"}) {
    auto batch = st.CreateBatch({"", baseline, {vary}, "", 4, "holm"}, "user:t");
    ASSERT_TRUE(batch.ok()) << vary << ": " << batch.status().message();
  }
  for (const char* name : {"zeta", "alpha", "mu", "beta"}) Apply(st, name);

  auto check = [&](const std::vector<int64_t>& walked, const std::string& sql) {
    EXPECT_EQ(Sorted(walked), Ids(*db, sql)) << sql;
    EXPECT_EQ(std::set<int64_t>(walked.begin(), walked.end()).size(), walked.size()) << sql;
  };
  check(Walk<BaselineRow>(
            3, [&](const Page& p) { return st.ListBaselines("demo", p); },
            [](const BaselineRow& b) { return b.id; }),
        "SELECT id FROM baselines WHERE purpose = 'baseline'");
  check(Walk<RunRow>(
            4, [&](const Page& p) { return st.ListRuns(0, p); },
            [](const RunRow& r) { return r.id; }),
        "SELECT id FROM runs");
  check(Walk<RunRow>(
            1, [&](const Page& p) { return st.ListRuns(baseline, p); },
            [](const RunRow& r) { return r.id; }),
        "SELECT id FROM runs WHERE baseline_id = " + std::to_string(baseline));
  check(Walk<HypothesisRow>(
            2, [&](const Page& p) { return st.ListHypotheses("", p); },
            [](const HypothesisRow& h) { return h.id; }),
        "SELECT id FROM hypotheses");
  check(Walk<ExperimentRow>(
            4, [&](const Page& p) { return st.ListExperiments("demo", p); },
            [](const ExperimentRow& e) { return e.id; }),
        "SELECT id FROM experiments");
  check(Walk<BatchRow>(
            1, [&](const Page& p) { return st.ListBatches(p); },
            [](const BatchRow& b) { return b.id; }),
        "SELECT id FROM batches");
  // Workloads go by name, A to Z.
  std::vector<std::string> names;
  Page page;
  page.limit = 2;
  for (;;) {
    auto r = st.ListWorkloads(page);
    ASSERT_TRUE(r.ok());
    for (const auto& w : r->rows) names.push_back(w.name);
    if (!r->more) break;
    page.after_key = r->next_after;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "beta", "demo", "mu", "zeta"}));
  // Since: baselines created in the last hour (all of them here) and none from the future.
  Page future;
  future.since_ms = std::stoll(
      db->Scalar("SELECT (extract(epoch FROM now() + interval '1 day') * 1000)::bigint"));
  EXPECT_TRUE(st.ListBaselines("", future)->rows.empty());
  EXPECT_TRUE(st.ListExperiments("", future)->rows.empty());
  EXPECT_TRUE(st.ListRuns(0, future)->rows.empty());
  EXPECT_TRUE(st.ListBatches(future)->rows.empty());
  EXPECT_TRUE(st.ListHypotheses("", future)->rows.empty());
}

TEST(History, BatchListCountsMembersByStateAndDecisionWithoutLoadingThem) {
  TUNECTL_TEST_DB(db);
  Store& st = db->store();
  int64_t agent = 0;
  const int64_t baseline = Measured(*db, &agent);
  auto created = st.CreateBatch({"", baseline, {"nw=8,16,32"}, "", 4, "holm"}, "user:t");
  ASSERT_TRUE(created.ok()) << created.status().message();
  const int64_t one = *created;
  auto second = st.CreateBatch({"", baseline, {"pf=4,8"}, "", 4, "holm"}, "user:t");
  ASSERT_TRUE(second.ok()) << second.status().message();
  const int64_t two = *second;
  ASSERT_TRUE(st.CancelBatch(two, "user:t").ok());
  // Two members of the first batch decided (as a batch's correction leaves them).
  db->Scalar(
      "UPDATE experiments SET state = 'decided', decision = CASE WHEN id % 2 = 0 THEN 'improved' "
      "ELSE 'unchanged' END WHERE batch_id = " +
      std::to_string(one) + " AND id < (SELECT max(id) FROM experiments WHERE batch_id = " +
      std::to_string(one) + ") RETURNING 1");
  auto list = st.ListBatches(Page());
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->rows.size(), 2u);
  const BatchRow& a = list->rows[0];
  EXPECT_EQ(a.id, one);
  EXPECT_TRUE(a.experiments.empty());
  EXPECT_EQ(a.members, 3);
  EXPECT_EQ(a.members_by_state.at("decided"), 2);
  EXPECT_EQ(a.members_by_state.at("running"), 1);
  int decided = 0;
  for (const auto& [d, n] : a.members_by_decision) decided += n;
  EXPECT_EQ(decided, 2);
  EXPECT_EQ(a.state, "running");
  const BatchRow& b = list->rows[1];
  EXPECT_EQ(b.members, 2);
  EXPECT_EQ(b.members_by_state.at("cancelled"), 2);
  EXPECT_EQ(b.state, "cancelled");
  // batch show keeps the full view, with the same counts.
  auto full = st.GetBatch(one);
  EXPECT_EQ(full->experiments.size(), 3u);
  EXPECT_EQ(full->members_by_state, a.members_by_state);
  EXPECT_EQ(full->members_by_decision, a.members_by_decision);
}

}  // namespace
}  // namespace tunectl

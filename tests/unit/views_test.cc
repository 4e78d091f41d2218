#include "cli/views.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/spec.h"

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
  EXPECT_EQ(j["params"]["num_workers"], 1);  // no declared types: typed by its literal
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

namespace tunectl {
namespace {

v1::Config DemoConfig() {
  auto spec = ParseWorkloadSpec(R"(
name: demo
command: [python3, train.py, --num-workers, "{num_workers}", --tag, "{tag}"]
env: {LOG_EVERY: "{log_interval}"}
params:
  num_workers:  {type: int, default: 1}
  log_interval: {type: int, default: 1}
  lr:           {type: float, default: 0.0003}
  compile:      {type: bool, default: false}
  tag:          {type: string, default: "a b"}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher}
)");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  v1::Config c;
  c.set_workload("demo");
  c.set_spec_json(WorkloadSpecToJson(*spec));
  auto* cur = c.mutable_current();
  cur->set_version(2);
  auto& p = *cur->mutable_params();
  p["num_workers"] = "4";
  p["log_interval"] = "1";
  p["lr"] = "0.0003";
  p["compile"] = "true";
  p["tag"] = "a b";
  return c;
}

TEST(ConfigExport, JsonIsTyped) {
  auto j = ojson::parse(*ConfigExport(DemoConfig(), "json"));
  EXPECT_EQ(j["num_workers"], 4);
  EXPECT_DOUBLE_EQ(j["lr"].get<double>(), 0.0003);
  EXPECT_EQ(j["compile"], true);
  EXPECT_EQ(j["tag"], "a b");
}

TEST(ConfigExport, YamlEnvAndArgs) {
  v1::Config c = DemoConfig();
  EXPECT_THAT(*ConfigExport(c, "yaml"), HasSubstr("# demo config v2\nnum_workers: 4\n"));
  EXPECT_THAT(*ConfigExport(c, "yaml"), HasSubstr("tag: \"a b\"\n"));
  EXPECT_THAT(*ConfigExport(c, "env"), HasSubstr("NUM_WORKERS=4\n"));
  EXPECT_THAT(*ConfigExport(c, "env"), HasSubstr("TAG='a b'\n"));
  EXPECT_EQ(*ConfigExport(c, "args"), "LOG_EVERY=1 python3 train.py --num-workers 4 --tag 'a b'\n");
}

TEST(ConfigExport, RejectsUnknownFormatNamingAllowed) {
  auto r = ConfigExport(DemoConfig(), "toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--format: \"toml\" is not allowed; allowed: json, yaml, env, args");
}

TEST(RegressViews, DetailListsRecordedRegressionsStabilityRunsAndTheWatch) {
  v1::Regression r;
  r.set_workload("demo");
  r.set_config_version(2);
  r.set_metric("samples_per_s");
  r.set_better("higher");
  auto* g = r.add_recorded();
  g->set_id(1);
  g->set_kind("change_point");
  g->set_metric("samples_per_s");
  g->set_first_bad_run(42);
  g->set_before(2400);
  g->set_after(1850);
  g->set_config_version(2);
  g->set_message("samples_per_s of v2 went from 2400 to 1850 (-22.9%) starting with run 42");
  auto* st = r.add_stability();
  st->set_run_id(50);
  st->set_config_version(2);
  st->set_duration_s(7200);
  st->set_state("succeeded");
  st->set_verdict("regression");
  st->set_message("mem_gb degraded part-way through the run");
  r.mutable_watch()->set_workload("demo");
  r.mutable_watch()->set_schedule("nightly");
  r.mutable_watch()->set_repeats(3);
  r.mutable_watch()->set_state("active");
  r.mutable_watch()->set_status("next window 2026-12-03 01:00 UTC");
  const std::string text = RegressionDetail(r);
  EXPECT_THAT(text, HasSubstr("recorded regressions (in the tuning log)"));
  EXPECT_THAT(text, HasSubstr("starting with run 42"));
  EXPECT_THAT(text, HasSubstr("2h"));
  EXPECT_THAT(text, HasSubstr("mem_gb degraded"));
  EXPECT_THAT(text, HasSubstr("3 run(s) of the current config in each window of nightly"));
  auto j = RegressionJson(r);
  EXPECT_EQ(j["regressions"][0]["first_bad_run"], 42);
  EXPECT_EQ(j["regressions"][0]["after"], 1850);
  EXPECT_EQ(j["stability_runs"][0]["verdict"], "regression");
  EXPECT_EQ(j["watch"]["schedule"], "nightly");
  r.clear_watch();
  EXPECT_TRUE(RegressionJson(r)["watch"].is_null());
}

TEST(ScheduleViews, TableShowsThePolicyAndTheAgentCap) {
  v1::ListSchedulesResponse r;
  auto* s = r.add_schedules();
  s->set_name("weekend");
  s->set_cron("0 22 * * Sat");
  s->set_duration_s(72000);
  s->set_tz("UTC");
  s->set_on_window_end("requeue");
  s->set_max_agents(4);
  auto t = SchedulesTable(r);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][1], "0 22 * * Sat for 20h");
  EXPECT_EQ(t.rows[0][3], "requeue");
  EXPECT_EQ(t.rows[0][4], "4");
}

TEST(RunViews, OwnerNamesTheKindOfMeasurement) {
  v1::ListRunsResponse r;
  auto* a = r.add_runs();
  a->set_baseline_id(7);
  a->set_purpose("check");
  auto* b = r.add_runs();
  b->set_experiment_id(3);
  b->set_arm("variant");
  auto* c = r.add_runs();
  c->set_baseline_id(9);
  c->set_purpose("stability");
  auto t = RunsTable(r);
  EXPECT_EQ(t.rows[0][1], "check 7");
  EXPECT_EQ(t.rows[1][1], "exp 3 variant");
  EXPECT_EQ(t.rows[2][1], "stability 9");
  EXPECT_THAT(RunDetail(*b), HasSubstr("exp 3 variant #0"));  // not "baseline 0"
}

TEST(RegressViews, ResolvedRegressionsSayWhatFixedThem) {
  v1::Regression r;
  auto* g = r.add_recorded();
  g->set_id(4);
  g->set_kind("stability");
  g->set_resolved_at("2026-12-02T10:00:00.000Z");
  g->set_resolved_by("ana");
  g->set_resolution("node n3 replaced");
  auto* open = r.add_recorded();
  open->set_id(5);
  open->set_kind("change_point");
  const std::string text = RegressionDetail(r);
  EXPECT_THAT(text, HasSubstr("resolved: node n3 replaced"));
  EXPECT_THAT(text, HasSubstr("OPEN"));
  auto j = RegressionJson(r);
  EXPECT_EQ(j["regressions"][0]["state"], "resolved");
  EXPECT_EQ(j["regressions"][0]["resolved_by"], "ana");
  EXPECT_TRUE(j["regressions"][0]["before"].is_null());  // stability: no levels
  EXPECT_EQ(j["regressions"][1]["state"], "open");
}

TEST(RegressViews, TheNewestRunIsCheckedOnlyWithEnoughHistory) {
  v1::Regression r;
  auto* p = r.add_points();
  p->set_run_id(5);
  p->set_value(2402);
  r.set_latest_history(2);
  EXPECT_THAT(RegressionDetail(r), HasSubstr("not checked yet (2 runs since the last change"));
  EXPECT_TRUE(RegressionJson(r)["latest"]["level"].is_null());
  r.set_latest_history(8);
  r.set_latest_level(2400);
  r.set_latest_bound(2300);
  EXPECT_THAT(RegressionDetail(r), HasSubstr("against level 2400 of 8 runs"));
  EXPECT_EQ(RegressionJson(r)["latest"]["bound"], 2300);
}

TEST(RegressViews, SeriesTableMarksChangesAndLevels) {
  v1::Regression r;
  r.set_metric("samples_per_s");
  for (int i = 1; i <= 4; ++i) {
    auto* p = r.add_points();
    p->set_run_id(i);
    p->set_value(i <= 2 ? 100 : 80);
  }
  auto* c = r.add_changes();
  c->set_first_run_id(3);
  c->set_before(100);
  c->set_after(80);
  c->set_regression(true);
  auto t = RegressionSeriesTable(r);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.headers[2], "samples_per_s");
  EXPECT_EQ(t.rows[1][3], "100");
  EXPECT_EQ(t.rows[1][4], "");
  EXPECT_EQ(t.rows[2][3], "80");
  EXPECT_EQ(t.rows[2][4], "regression");
}

TEST(LogViews, RegressionAndResolvedEntriesShowNoConfidenceInterval) {
  v1::ListLogResponse r;
  auto* g = r.add_entries();
  g->set_kind("regression");
  g->set_change("none (v2 unchanged): samples_per_s went from 2400 to 1850");
  g->set_primary_metric("samples_per_s");
  g->set_ratio(1850.0 / 2400);
  g->set_decision("regressed");
  auto* s = r.add_entries();
  s->set_kind("resolved");
  s->set_change("regression 1 resolved: node n3 replaced");
  s->set_decision("resolved");
  auto t = LogTable(r);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][0], "-");   // no experiment
  EXPECT_NE(t.rows[0][7], "-");   // the effect: after / before
  EXPECT_EQ(t.rows[0][8], "—");   // no CI
  EXPECT_EQ(t.rows[1][7], "—");   // a resolution has no effect
  EXPECT_EQ(t.rows[1][12], "-");  // nor a freeze
  EXPECT_EQ(t.rows[1][3], "regression 1 resolved: node n3 replaced");
}

TEST(ExperimentViews, MeasuredBatchMemberSaysItWaitsForItsBatch) {
  v1::Experiment e;
  e.set_id(4);
  e.set_state("measured");
  e.set_batch_id(2);
  EXPECT_THAT(ExperimentDetail(e), HasSubstr("batch:  2 still running"));
}

TEST(ExperimentViews, CorrectedDecisionShowsWhatItWasAloneAndTheAdjustedP) {
  v1::Experiment e;
  e.set_id(4);
  e.set_state("decided");
  e.set_decision("inconclusive");
  e.set_batch_id(2);
  e.set_spec_revision(3);
  e.set_correction("holm");
  e.set_unadjusted_decision("improved");
  e.set_adjusted_p(0.077);
  EXPECT_THAT(ExperimentDetail(e), HasSubstr("Holm-corrected: improved alone"));
  auto j = ExperimentJson(e);
  EXPECT_EQ(j["correction"]["unadjusted_decision"], "improved");
  EXPECT_EQ(j["spec_revision"], 3);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(BatchViews, AdjustedPIsShownOnlyOnceTheBatchIsCorrected) {
  v1::Batch b;
  b.set_id(2);
  b.set_correction("holm");
  auto* measured = b.add_experiments();
  measured->set_id(4);
  measured->set_state("measured");
  b.add_adjusted_p(0.01);  // its own p: not an adjusted one yet
  b.add_adjusted_decision("");
  auto* decided = b.add_experiments();
  decided->set_id(5);
  decided->set_state("decided");
  b.add_adjusted_p(0.08);
  b.add_adjusted_decision("inconclusive");
  auto j = BatchJson(b);
  EXPECT_TRUE(j["experiments"][0]["adjusted_p"].is_null());
  EXPECT_EQ(j["experiments"][1]["adjusted_p"], 0.08);
  const std::string text = BatchDetail(b);
  EXPECT_THAT(text, HasSubstr("0.08"));
  EXPECT_THAT(text, testing::Not(HasSubstr("0.01")));
}

TEST(PageViews, JsonCarriesTheItemsAndTheNextTokenOrNull) {
  auto j = ListDocument("LogEntry", ojson::array({1, 2}), "log:17");
  EXPECT_EQ(j["kind"], "LogEntryList");
  EXPECT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(j["next_page_token"], "log:17");
  EXPECT_TRUE(ListDocument("LogEntry", ojson::array(), "")["next_page_token"].is_null());
  EXPECT_THAT(NextPageHint("log:17"), HasSubstr("--page-token log:17"));
}

TEST(BatchViews, ListShowsMembersCountedByStateAndDecision) {
  v1::ListBatchesResponse r;
  auto* b = r.add_batches();
  b->set_id(7);
  b->set_workload("demo");
  b->set_state("running");
  b->set_members(5);
  (*b->mutable_members_by_state())["running"] = 2;
  (*b->mutable_members_by_state())["decided"] = 3;
  (*b->mutable_members_by_decision())["unchanged"] = 1;
  (*b->mutable_members_by_decision())["improved"] = 2;
  const Table t = BatchesTable(r);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][5], "5");  // experiments
  EXPECT_EQ(t.rows[0][6], "3");  // done: not running
  EXPECT_EQ(t.rows[0][7], "improved 2, unchanged 1");
  const ojson j = BatchSummaryJson(*b);
  EXPECT_EQ(j["members"]["total"], 5);
  EXPECT_EQ(j["members"]["by_state"]["running"], 2);
  EXPECT_EQ(j["members"]["by_decision"]["improved"], 2);
  EXPECT_FALSE(j.contains("experiments"));
}

TEST(RegressViews, ASeriesCutToItsNewestPointsSaysSo) {
  v1::Regression r;
  r.set_workload("demo");
  for (int i = 1; i <= 3; ++i) r.add_points()->set_run_id(i);
  EXPECT_THAT(RegressionDetail(r), HasSubstr(", 3 comparable runs"));
  EXPECT_FALSE(RegressionJson(r)["more_points"]);
  r.set_more_points(true);
  EXPECT_THAT(RegressionDetail(r),
              HasSubstr("the newest 3 comparable runs (older ones: --limit N"));
  EXPECT_TRUE(RegressionJson(r)["more_points"]);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(AgentViews, StatusSaysWhyANodeTakesNoWork) {
  v1::ListAgentsResponse r;
  auto add = [&](const std::string& name, bool connected, bool busy, const std::string& why) {
    auto* a = r.add_agents();
    a->set_name(name);
    a->set_connected(connected);
    a->set_busy(busy);
    a->set_unhealthy(why);
  };
  add("n1", true, false, "");
  add("n2", true, true, "");
  add("n3", true, false, "runs directory /r is not writable: Read-only file system");
  add("n4", false, false, "disk nearly full");
  const Table t = AgentsTable(r);
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0][1], "connected");
  EXPECT_EQ(t.rows[1][1], "busy (idle probe)");
  EXPECT_EQ(t.rows[2][1], "unhealthy: runs directory /r is not writable: Read-only file system");
  EXPECT_EQ(t.rows[3][1], "disconnected");
  EXPECT_EQ(AgentJson(r.agents(2))["unhealthy"], r.agents(2).unhealthy());
}

TEST(AgentViews, ShowTheExecutorAndWhetherSlotsAreIsolated) {
  v1::ListAgentsResponse r;
  auto* a = r.add_agents();
  a->set_name("login1");
  a->set_connected(true);
  a->set_executor("slurm");
  a->set_slots(8);
  auto* b = r.add_agents();
  b->set_name("gpu1");
  b->set_connected(true);
  b->set_slots(4);
  b->set_isolated_slots(true);
  const Table t = AgentsTable(r);
  EXPECT_EQ(t.rows[0][2], "slurm");
  EXPECT_EQ(t.rows[0][3], "8");
  EXPECT_EQ(t.rows[1][2], "local");  // an agent too old to say
  EXPECT_EQ(t.rows[1][3], "4 isolated");
  EXPECT_EQ(AgentJson(*b)["isolated_slots"], true);
}

TEST(RunViews, AnAssignedRunPendingInTheClusterSaysWhy) {
  v1::ListRunsResponse r;
  auto* x = r.add_runs();
  x->set_id(5);
  x->set_state("assigned");
  x->set_wait_reason("pending in slurm (job 17): Priority");
  auto* y = r.add_runs();
  y->set_id(6);
  y->set_state("running");
  y->set_node("gpu-node-3");
  y->set_agent("login1");
  y->set_external_id("18");
  y->set_placement("nodelist of the experiment's first run");
  const Table t = RunsTable(r);
  EXPECT_EQ(t.rows[0].back(), "pending in slurm (job 17): Priority");
  EXPECT_NE(RunDetail(*y).find("agent:   login1 on gpu-node-3 (job 18), nodelist"),
            std::string::npos)
      << RunDetail(*y);
  EXPECT_EQ(RunJson(*y)["external_id"], "18");
}

TEST(TokenViews, JsonHasNullsForWhatIsNotThereAndTheSecretOnlyWhenGiven) {
  v1::Token t;
  t.set_name("bob");
  t.set_role("viewer");
  t.set_created_at("2026-12-06T02:00:00.000Z");
  t.set_created_by("user:local-root");
  const ojson j = TokenJson(t);
  EXPECT_TRUE(j["agent"].is_null());
  EXPECT_TRUE(j["revoked_at"].is_null());
  EXPECT_FALSE(j.contains("secret"));
  t.set_secret("tct_x");
  t.set_role("agent");
  t.set_agent("n1");
  const ojson made = TokenJson(t);
  EXPECT_EQ(made["secret"], "tct_x");
  EXPECT_EQ(made["agent"], "n1");
}

TEST(TokenViews, TableSaysWhoRevokedATokenAndWhen) {
  v1::ListTokensResponse r;
  auto* live = r.add_tokens();
  live->set_name("bob");
  live->set_role("viewer");
  auto* gone = r.add_tokens();
  gone->set_name("carol");
  gone->set_role("operator");
  gone->set_revoked_at("2026-12-06T02:10:00.000Z");
  gone->set_revoked_by("user:local-root");
  const std::string text = RenderTable(TokensTable(r));
  EXPECT_THAT(text, HasSubstr("2026-12-06T02:10:00.000Z by user:local-root"));
  EXPECT_EQ(TokensTable(r).rows[0][5], "-");
  EXPECT_EQ(TokensTable(r).rows[0][2], "-");
}

TEST(TokenViews, WhoAmIJsonIsTyped) {
  v1::WhoAmIResponse w;
  w.set_name("alice");
  w.set_role("operator");
  w.set_actor("user:alice");
  w.set_tls(true);
  w.set_version("0.1.0");
  const ojson j = WhoAmIJson(w);
  EXPECT_TRUE(j["tls"].is_boolean());
  EXPECT_TRUE(j["agent"].is_null());
  EXPECT_EQ(j["actor"], "user:alice");
}

v1::ExportAuditResponse ExportPage() {
  v1::ExportAuditResponse r;
  auto* a = r.add_entries();
  a->set_seq(7);
  a->set_source("audit");
  a->set_id(3);
  a->set_at("2026-12-01T08:00:00.123456Z");
  a->set_at_us(1796112000123456);
  a->set_actor("user:alice");
  a->set_kind("experiment.created");
  a->set_entity("experiment");
  a->set_entity_id("4");
  a->set_payload(R"({"reason": "a, b", "q": "say \"hi\""})");
  a->set_hash(std::string(64, 'a'));
  a->set_prev_hash(std::string(64, '0'));
  auto* l = r.add_entries();
  l->set_source("log");
  l->set_id(9);
  l->set_at("2026-12-01T08:00:01.000000Z");
  l->set_at_us(1796112001000000);
  l->set_actor("user:bob");
  l->set_kind("decided");
  l->set_workload_id("1");
  l->set_payload("{\"note\": \"two\nlines\"}");  // a newline kept as stored (json)
  return r;
}

TEST(AuditExportViews, CsvQuotesCommasQuotesAndNewlinesAndLeavesUnsealedEmpty) {
  const std::string csv = RenderCsv(AuditExportCsv(ExportPage()));
  const std::string header =
      "seq,source,id,at,at_us,actor,kind,entity,entity_id,workload_id,experiment_id,payload,hash,"
      "prev_hash\r\n";
  const std::string audit =
      R"(7,audit,3,2026-12-01T08:00:00.123456Z,1796112000123456,user:alice,experiment.created,)"
      R"(experiment,4,,,"{""reason"": ""a, b"", ""q"": ""say \""hi\""""}",)" +
      std::string(64, 'a') + "," + std::string(64, '0') + "\r\n";
  const std::string log =
      ",log,9,2026-12-01T08:00:01.000000Z,1796112001000000,user:bob,decided,,,"
      "1,,\"{\"\"note\"\": \"\"two\nlines\"\"}\",,\r\n";
  EXPECT_EQ(csv, header + audit + log);
}

TEST(AuditExportViews, JsonKeepsThePayloadAsHashedAndNullsWhatIsNotSealed) {
  const auto r = ExportPage();
  const ojson a = AuditEntryJson(r.entries(0));
  EXPECT_EQ(a["seq"], 7);
  EXPECT_EQ(a["payload"], r.entries(0).payload());  // a string: the exact text hashed
  EXPECT_EQ(a["at_us"], 1796112000123456);
  EXPECT_EQ(a["entity_id"], "4");
  // the dump round-trips the payload byte for byte
  EXPECT_EQ(ojson::parse(a.dump())["payload"].get<std::string>(), r.entries(0).payload());
  const ojson l = AuditEntryJson(r.entries(1));
  EXPECT_TRUE(l["seq"].is_null());
  EXPECT_TRUE(l["hash"].is_null());
  EXPECT_TRUE(l["prev_hash"].is_null());
  EXPECT_EQ(l["workload_id"], "1");
  std::vector<std::string> keys;
  for (const auto& [k, v] : a.items()) keys.push_back(k);
  EXPECT_EQ(keys, AuditExportCsv(r).headers);  // one set of columns for both formats
}

TEST(AuditExportViews, TableIsCompactAndNamesTheSubject) {
  const std::string t = RenderTable(AuditExportTable(ExportPage()));
  EXPECT_THAT(t, HasSubstr("experiment 4"));
  EXPECT_THAT(t, HasSubstr("workload 1"));
  EXPECT_THAT(t, HasSubstr("aaaaaaaaaaaa\n"));
  EXPECT_THAT(t, HasSubstr("(not sealed)"));
  EXPECT_THAT(t, ::testing::Not(HasSubstr("reason")));  // no payload
}

}  // namespace
TEST(ExperimentViews, ProgressShowsEachArmAndTheEstimateSoFar) {
  v1::Experiment e;
  e.set_id(7);
  e.set_state("running");
  e.set_primary("samples_per_s");
  e.set_interim_pairs(2);
  e.set_min_pairs(4);
  e.mutable_control_arm()->set_succeeded(2);
  e.mutable_control_arm()->set_active(1);
  e.mutable_variant_arm()->set_succeeded(2);
  e.mutable_variant_arm()->set_queued(2);
  EXPECT_EQ(ExperimentProgress(e, 65),
            "experiment 7: control 2 done, 1 running; variant 2 done, 2 queued; no estimate yet: "
            "2 usable pair(s), first look at 4 [1m5s]");
  auto* m = e.add_interim();
  m->set_metric("samples_per_s");
  m->set_n_control(1);
  m->set_n_variant(1);
  m->set_ratio(1.25);
  m->set_ci_low(1.1);
  m->set_ci_high(1.4);
  EXPECT_NE(ExperimentProgress(e, 5).find("no estimate yet"), std::string::npos);  // 1 per side
  m->set_n_control(2);
  m->set_n_variant(2);
  m->set_estimated(true);
  const std::string p = ExperimentProgress(e, 5);
  EXPECT_NE(p.find("samples_per_s +25.0% [+10.0%, +40.0%] so far on 2 usable pair(s)"),
            std::string::npos)
      << p;
  const std::string detail = ExperimentDetail(e);
  EXPECT_NE(detail.find("interim (not a decision)"), std::string::npos) << detail;
  const ojson j = ExperimentJson(e);
  EXPECT_EQ(j["arms"]["control"]["active"], 1);
  EXPECT_EQ(j["interim"]["usable_pairs"], 2);
  EXPECT_DOUBLE_EQ(j["interim"]["metrics"][0]["ratio"].get<double>(), 1.25);
  e.set_state("decided");
  EXPECT_TRUE(ExperimentJson(e)["interim"].is_null());  // only while it runs
}

TEST(RegressViews, StabilityProgressShowsTheMetricSoFar) {
  v1::StabilityRun s;
  s.set_run_id(12);
  s.set_state("running");
  s.set_duration_s(600);
  EXPECT_EQ(StabilityProgress(s, nullptr, "samples_per_s", 60),
            "stability run 12: running [1m of 10m]");
  v1::Run run;
  run.set_live(true);
  auto* m = run.add_metrics();
  m->set_metric("samples_per_s");
  m->set_samples(120);
  m->set_steady(100);
  m->set_median(4321);
  EXPECT_EQ(StabilityProgress(s, &run, "samples_per_s", 60),
            "stability run 12: running, samples_per_s 4321 (median of 100 steady of 120 samples "
            "so far) [1m of 10m]");
}

}  // namespace tunectl

namespace tunectl {
namespace {

// No figure without an estimate: one pair's medians, but no effect, CI or p anywhere.
TEST(ExperimentViews, AMetricWithoutAnEstimateShowsADashNotZero) {
  v1::Experiment e;
  e.set_id(3);
  e.set_primary("samples_per_s");
  auto* m = e.add_metrics();
  m->set_metric("samples_per_s");
  m->set_n_control(1);
  m->set_n_variant(1);
  m->set_control_median(2407);
  m->set_variant_median(5086);
  m->set_ratio(1);  // what an old server sent as a placeholder
  m->set_ci_low(1);
  m->set_ci_high(1);
  m->set_p_value(1);
  m->set_decision("inconclusive");
  const Table t = VerdictTable(e);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][3], "2407");
  EXPECT_EQ(t.rows[0][5], "—");
  EXPECT_EQ(t.rows[0][6], "—");
  EXPECT_EQ(t.rows[0][7], "—");
  const ojson j = ExperimentJson(e);
  EXPECT_FALSE(j["metrics"][0]["estimated"].get<bool>());
  EXPECT_TRUE(j["metrics"][0]["ratio"].is_null());
  EXPECT_TRUE(j["metrics"][0]["p_value"].is_null());
  EXPECT_DOUBLE_EQ(j["metrics"][0]["control_median"].get<double>(), 2407);
  v1::ListExperimentsResponse list;
  *list.add_experiments() = e;
  EXPECT_EQ(ExperimentsTable(list).rows[0][6], "—");
  // With an estimate the same rows show it.
  m->set_estimated(true);
  m->set_tested(true);
  m->set_ratio(2.113);
  m->set_ci_low(1.9);
  m->set_ci_high(2.3);
  m->set_p_value(0.001);
  EXPECT_EQ(VerdictTable(e).rows[0][5], "+111.3%");
  *list.mutable_experiments(0) = e;
  EXPECT_THAT(ExperimentsTable(list).rows[0][6], ::testing::HasSubstr("+111.3%"));
}

TEST(LogViews, ADecidedEntryWithoutAnEstimateShowsADash) {
  v1::ListLogResponse r;
  auto* d = r.add_entries();
  d->set_kind("decided");
  d->set_experiment_id(4);
  d->set_primary_metric("samples_per_s");
  d->set_decision("inconclusive");  // ratio 0: the entry recorded null
  const Table t = LogTable(r);
  EXPECT_EQ(t.rows[0][7], "—");
  EXPECT_EQ(t.rows[0][8], "—");
  const Table csv = LogCsv(r);
  EXPECT_EQ(csv.rows[0][8], "");
  EXPECT_EQ(csv.rows[0][9], "");
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(RunViews, RunJsonCarriesTheValueBesideTheMedianAndNullWithoutOne) {
  v1::Run r;
  r.set_id(7);
  r.set_state("succeeded");
  auto* m = r.add_metrics();
  m->set_metric("samples_per_s");
  m->set_steady(55);
  m->set_median(2427.4);
  m->set_has_value(true);
  m->set_value(2398.75);
  m->set_pace(2441);
  m->set_value_how("harmonic mean (work over time) of the samples at steps 6..60");
  r.add_metrics()->set_metric("loss");
  const ojson j = RunJson(r);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["value"].get<double>(), 2398.75);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["pace"].get<double>(), 2441);
  EXPECT_EQ(j["metrics"][0]["value_how"], m->value_how());
  EXPECT_TRUE(j["metrics"][1]["value"].is_null());
  EXPECT_TRUE(j["metrics"][1]["pace"].is_null());
  const std::string text = RunDetail(r);
  EXPECT_NE(text.find("2399"), std::string::npos) << text;
  EXPECT_NE(text.find("value: harmonic mean"), std::string::npos) << text;
}

}  // namespace
}  // namespace tunectl

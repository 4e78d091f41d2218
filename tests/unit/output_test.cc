// The output contract of docs/output.md: every JSON document's apiVersion and kind, lists as
// <Kind>List, typed parameters, null for what does not exist, raw CSV, -o name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "cli/commands.h"
#include "cli/views.h"
#include "core/spec.h"
#include "tests/unit/mock_client.h"

namespace tunectl {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Not;
using ::testing::Return;

const char* kSpec =
    R"spec({"name": "demo", "command": ["train", "{num_workers}", "{lr}", "{precision}",
  "{compile}", "{tag}"],
  "params": {"num_workers": {"type": "int", "default": 1},
             "lr": {"type": "float", "default": 0.001},
             "precision": {"type": "enum", "values": ["16", "32"], "default": "32"},
             "compile": {"type": "bool", "default": false},
             "tag": {"type": "string", "default": "7"}},
  "metrics": {"samples_per_s": {"pattern": "s: ([0-9.]+)", "better": "higher",
                                "role": "primary"}}})spec";

std::string SpecJson() {
  auto spec = ParseWorkloadSpec(kSpec);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? WorkloadSpecToJson(*spec) : "";
}

v1::MetricVerdict* Verdict(v1::Experiment* e, const std::string& metric, int nc, int nv) {
  auto* m = e->add_metrics();
  m->set_metric(metric);
  m->set_role("primary");
  m->set_unit("samples/s");
  m->set_better("higher");
  m->set_n_control(nc);
  m->set_n_variant(nv);
  m->set_control_median(nc ? 100 : 0);
  m->set_variant_median(nv ? 132.2 : 0);
  if (nc && nv) {
    m->set_estimated(true);
    m->set_tested(true);
    m->set_ratio(1.322);
    m->set_ci_low(1.165);
    m->set_ci_high(1.5);
    m->set_p_value(0.0004);
  }
  m->set_decision(nc && nv ? "improved" : "inconclusive");
  return m;
}

TEST(Output, EveryDocumentStartsWithApiVersionAndKind) {
  v1::Experiment e;
  e.set_id(12);
  const ojson j = Document(DocKind<v1::Experiment>::kName, ExperimentJson(e));
  ASSERT_GE(j.size(), 3u);
  EXPECT_EQ(j.begin().key(), "apiVersion");
  EXPECT_EQ(j["apiVersion"], "tunectl/v1");
  EXPECT_EQ(std::next(j.begin()).key(), "kind");
  EXPECT_EQ(j["kind"], "Experiment");
  EXPECT_EQ(j["id"], 12);
}

TEST(Output, ListsAreKindListWithItemsAndANullTokenOnTheLastPage) {
  const ojson j = ListDocument("Agent", ojson::array({{{"name", "n1"}}}), "");
  EXPECT_EQ(j["apiVersion"], "tunectl/v1");
  EXPECT_EQ(j["kind"], "AgentList");
  EXPECT_EQ(j["items"][0]["name"], "n1");
  EXPECT_TRUE(j["next_page_token"].is_null());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"apiVersion", "kind", "items", "next_page_token"}));
}

TEST(Output, ARecordedRegressionsOwnKindIsItsTypeSoItCannotShadowTheDocumentKind) {
  v1::RecordedRegression g;
  g.set_id(3);
  g.set_kind("change_point");
  const ojson j = Document(DocKind<v1::RecordedRegression>::kName, RecordedRegressionJson(g));
  EXPECT_EQ(j["kind"], "Regression");
  EXPECT_EQ(j["type"], "change_point");
}

TEST(Output, ParamsAreTypedByTheirDeclaredType) {
  const ParamTypes types = ParamTypesOf(SpecJson());
  EXPECT_EQ(types.at("num_workers"), "int");
  v1::Baseline b;
  auto& p = *b.mutable_params();
  p["num_workers"] = "4";
  p["lr"] = "0.0003";
  p["precision"] = "16";  // an enum whose values look like numbers: still a string
  p["compile"] = "true";
  p["tag"] = "7";  // a string param: a string
  const ojson j = BaselineJson(b, types)["params"];
  EXPECT_EQ(j["num_workers"], 4);
  EXPECT_TRUE(j["num_workers"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["lr"].get<double>(), 0.0003);
  EXPECT_EQ(j["precision"], "16");
  EXPECT_EQ(j["compile"], true);
  EXPECT_EQ(j["tag"], "7");
}

TEST(Output, AFloatParamWithAnIntegerValueIsStillANumber) {
  EXPECT_TRUE(ParamValueJson("2", "float").is_number());
  EXPECT_EQ(ParamValueJson("2", "float"), 2);
}

TEST(Output, ParamsWithoutDeclaredTypesAreTypedByTheirLiterals) {
  EXPECT_EQ(ParamValueJson("8", ""), 8);
  EXPECT_EQ(ParamValueJson("-3", ""), -3);
  EXPECT_DOUBLE_EQ(ParamValueJson("1e-4", "").get<double>(), 1e-4);
  EXPECT_EQ(ParamValueJson("false", ""), false);
  EXPECT_EQ(ParamValueJson("bf16", ""), "bf16");
  EXPECT_EQ(ParamValueJson("", ""), "");
  EXPECT_EQ(ParamValueJson("nan", ""), "nan");   // not a JSON number
  EXPECT_EQ(ParamValueJson("4x", "int"), "4x");  // what the type cannot read stays text
}

TEST(Output, AChangesFromAndToAreTypedLikeParams) {
  v1::Experiment e;
  (*e.mutable_change()->mutable_from())["num_workers"] = "1";
  (*e.mutable_change()->mutable_to())["num_workers"] = "8";
  const ojson j = ExperimentJson(e, ParamTypesOf(SpecJson()));
  EXPECT_EQ(j["change"]["from"]["num_workers"], 1);
  EXPECT_EQ(j["change"]["to"]["num_workers"], 8);
}

TEST(Output, AConfigsParamsAreTypedByItsOwnSpec) {
  v1::Config c;
  c.set_workload("demo");
  c.set_spec_json(SpecJson());
  (*c.mutable_current()->mutable_params())["num_workers"] = "4";
  (*c.mutable_current()->mutable_params())["tag"] = "7";
  const ojson j = ConfigJson(c);
  EXPECT_EQ(j["params"]["num_workers"], 4);
  EXPECT_EQ(j["params"]["tag"], "7");
}

TEST(Output, AVerdictWithoutRunsOnASideIsNullNotZero) {
  v1::Experiment e;
  e.set_id(1);
  Verdict(&e, "samples_per_s", 3, 0);
  const ojson m = ExperimentJson(e)["metrics"][0];
  EXPECT_EQ(m["control_median"], 100);
  EXPECT_TRUE(m["variant_median"].is_null());
  EXPECT_TRUE(m["ratio"].is_null());
  EXPECT_TRUE(m["ci_low"].is_null());
  EXPECT_TRUE(m["p_value"].is_null());
  EXPECT_TRUE(m["boot_low"].is_null());  // no bootstrap below 10 runs a side
  EXPECT_TRUE(m["mw_p"].is_null());
}

TEST(Output, AnUndecidedExperimentHasNullsWhereNothingHappenedYet) {
  v1::Experiment e;
  e.set_id(1);
  e.set_state("running");
  const ojson j = ExperimentJson(e);
  for (const char* k : {"decision", "batch_id", "hypothesis_id", "frozen_version", "decided_at",
                        "frozen_at", "critical", "correction", "agent"})
    EXPECT_TRUE(j[k].is_null()) << k;
}

TEST(Output, ARunWithoutSteadyStateOrExitHasNulls) {
  v1::Run r;
  r.set_id(5);
  r.set_state("queued");
  r.set_slot(0);
  auto* m = r.add_metrics();
  m->set_metric("loss");
  m->set_samples(3);
  m->set_steady(0);
  const ojson j = RunJson(r);
  for (const char* k : {"baseline_id", "experiment_id", "agent", "slot", "exit_code", "signal",
                        "started_at", "finished_at"})
    EXPECT_TRUE(j[k].is_null()) << k;
  EXPECT_TRUE(j["metrics"][0]["median"].is_null());
  r.set_state("succeeded");
  r.set_exit_code(0);
  EXPECT_EQ(RunJson(r)["exit_code"], 0);
}

TEST(Output, ABaselineSummaryOfNoRunsIsNull) {
  v1::Baseline b;
  auto* s = b.add_summaries();
  s->set_metric("mfu");
  s->set_n(0);
  const ojson m = BaselineJson(b)["summary"][0];
  EXPECT_EQ(m["n"], 0);
  EXPECT_TRUE(m["median"].is_null());
  EXPECT_TRUE(m["cv"].is_null());
  EXPECT_TRUE(BaselineJson(b)["finished_at"].is_null());
}

TEST(Output, VerdictCsvHasRawNumbersInTheirOwnColumns) {
  v1::Experiment e;
  e.set_id(9);
  Verdict(&e, "samples_per_s", 4, 4);
  Verdict(&e, "mfu", 4, 0);
  const std::string csv = RenderCsv(VerdictCsv(e));
  EXPECT_THAT(csv, HasSubstr("experiment_id,metric,unit,better,role,control_median,control_n,"
                             "variant_median,variant_n,ratio,ci_low,ci_high,p,decision"));
  EXPECT_THAT(csv, HasSubstr("9,samples_per_s,samples/s,higher,primary,100,4,132.2,4,1.322,1.165,"
                             "1.5,0.0004,improved,"));
  EXPECT_THAT(csv, HasSubstr("9,mfu,samples/s,higher,primary,100,4,,0,,,,,inconclusive,"));
  EXPECT_THAT(csv, ::testing::Not(HasSubstr("%")));
}

TEST(Output, CsvNumbersReadBackExactlyAndMissingIsEmpty) {
  EXPECT_EQ(CsvNumber(1.322), "1.322");
  EXPECT_EQ(CsvNumber(2427.4), "2427.4");
  EXPECT_EQ(CsvNumber(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(CsvNumber(std::nan("")), "");
  EXPECT_EQ(CsvNumber(0.0004), "0.0004");
  EXPECT_EQ(std::stod(CsvNumber(1e-9)), 1e-9);
  EXPECT_EQ(CsvNumber(0), "0");
}

TEST(Output, RunCsvIsOneRowPerMetric) {
  v1::Run r;
  r.set_id(7);
  r.set_baseline_id(2);
  r.set_state("succeeded");
  r.set_attempt(1);
  auto* m = r.add_metrics();
  m->set_metric("samples_per_s");
  m->set_samples(60);
  m->set_steady(55);
  m->set_median(2427.4);
  m->set_min(2400);
  m->set_max(2450.5);
  m->set_usable(true);
  m->set_has_value(true);
  m->set_value(2398.75);
  auto* l = r.add_metrics();
  l->set_metric("loss");
  l->set_samples(2);
  const Table t = RunCsv(r);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(RenderCsv(t).substr(0, RenderCsv(t).find('\r')),
            "run_id,workload,baseline_id,experiment_id,arm,attempt,state,metric,samples,warmup,"
            "steady,median,min,max,usable,warnings,value");
  EXPECT_EQ(t.rows[0][11], "2427.4");
  EXPECT_EQ(t.rows[0][16], "2398.75");  // what the run delivered, beside the median
  EXPECT_EQ(t.rows[1][16], "");         // no value: empty, never 0
  EXPECT_EQ(t.rows[0][9], "5");
  EXPECT_EQ(t.rows[1][11], "");  // no steady state: no median
}

TEST(Output, BatchCsvIsOneRowPerMemberWithTheRawAdjustedP) {
  v1::Batch b;
  b.set_id(2);
  auto* e = b.add_experiments();
  e->set_id(4);
  e->set_primary("samples_per_s");
  e->set_decision("improved");
  (*e->mutable_change()->mutable_from())["num_workers"] = "1";
  (*e->mutable_change()->mutable_to())["num_workers"] = "4";
  Verdict(e, "samples_per_s", 4, 4);
  b.add_adjusted_p(0.0012);
  b.add_adjusted_decision("improved");
  const Table t = BatchCsv(b);
  ASSERT_EQ(t.rows.size(), 1u);
  const auto col = [&](const std::string& h) {
    return t.rows[0][std::find(t.headers.begin(), t.headers.end(), h) - t.headers.begin()];
  };
  EXPECT_EQ(col("param"), "num_workers");
  EXPECT_EQ(col("from"), "1");
  EXPECT_EQ(col("to"), "4");
  EXPECT_EQ(col("ratio"), "1.322");
  EXPECT_EQ(col("adjusted_p"), "0.0012");
  EXPECT_EQ(col("adjusted_decision"), "improved");
}

TEST(Output, ConfigCsvIsParamValueRowsAndHypothesisCsvIsOneRow) {
  v1::Config c;
  (*c.mutable_current()->mutable_params())["num_workers"] = "4";
  (*c.mutable_current()->mutable_params())["lr"] = "0.001";
  EXPECT_EQ(RenderCsv(ConfigCsv(c)), "param,value\r\nlr,0.001\r\nnum_workers,4\r\n");
  v1::Hypothesis h;
  h.set_id(3);
  (*h.mutable_change()->mutable_to())["num_workers"] = "8";
  const Table t = HypothesisCsv(h);
  EXPECT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], "3");
  EXPECT_EQ(t.rows[0][5], "8");
}

TEST(Output, AnyOtherDocumentIsOneCsvRowOfItsScalarsWithDottedNames) {
  const ojson doc = {{"a", 1.5}, {"b", nullptr}, {"c", {{"d", "x"}}}, {"e", ojson::array({1})}};
  const Table t = DocumentCsv(doc);
  EXPECT_EQ(t.headers, (std::vector<std::string>{"a", "b", "c.d", "e"}));
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1.5", "", "x", "[1]"}));
}

TEST(Output, NamesAreKindSlashId) {
  v1::Experiment e;
  e.set_id(12);
  EXPECT_EQ(NameOf(e), "experiment/12");
  v1::Workload w;
  w.set_name("demo");
  EXPECT_EQ(NameOf(w), "workload/demo");
}

TEST(Output, NameListsOneKindSlashIdALine) {
  NiceMock<MockClient> c;
  v1::ListExperimentsResponse r;
  r.add_experiments()->set_id(3);
  r.add_experiments()->set_id(4);
  EXPECT_CALL(c, ListExperiments(_)).WillOnce(Return(Result<v1::ListExperimentsResponse>(r)));
  CliOptions o;
  o.output = "name";
  const Ran ran = RunCommand(c, "experiment", "list", o);
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "experiment/3\nexperiment/4\n");
}

TEST(Output, NameIsRefusedForEntriesThatHaveNone) {
  NiceMock<MockClient> c;
  EXPECT_CALL(c, ListLog(_)).WillOnce(Return(Result<v1::ListLogResponse>(v1::ListLogResponse{})));
  CliOptions o;
  o.output = "name";
  const Ran ran = RunCommand(c, "log", "", o);
  EXPECT_EQ(ran.code, 2);
  EXPECT_THAT(ran.err, HasSubstr("-o name"));
}

TEST(Output, LogCsvHasTheRawRatioAndCiInTheirOwnColumns) {
  NiceMock<MockClient> c;
  v1::ListLogResponse r;
  auto* d = r.add_entries();
  d->set_experiment_id(12);
  d->set_kind("decided");
  d->set_workload("demo");
  d->set_change("num_workers 4 -> 8");
  d->set_primary_metric("samples_per_s");
  d->set_ratio(1.322);
  d->set_ci_low(1.165);
  d->set_ci_high(1.5);
  d->set_decision("improved");
  auto* reg = r.add_entries();  // a regression without known levels: no effect, no CI
  reg->set_kind("regression");
  reg->set_workload("demo");
  reg->set_decision("regression");
  EXPECT_CALL(c, ListLog(_)).WillOnce(Return(Result<v1::ListLogResponse>(r)));
  CliOptions o;
  o.output = "csv";
  const Ran ran = RunCommand(c, "log", "", o);
  ASSERT_EQ(ran.code, 0) << ran.err;
  std::istringstream in(ran.out);
  std::string header, decided, regression;
  std::getline(in, header);
  std::getline(in, decided);
  std::getline(in, regression);
  EXPECT_EQ(header,
            "experiment_id,at,kind,workload,change,expected,hypothesis_result,primary_metric,"
            "ratio,ci_low,ci_high,decision,frozen,actor\r");  // RFC 4180 line ends
  EXPECT_THAT(decided, HasSubstr(",samples_per_s,1.322,1.165,1.5,improved,"));
  EXPECT_THAT(regression, HasSubstr(",regression,demo,"));
  EXPECT_THAT(regression, HasSubstr(",,,,regression,"));
  EXPECT_THAT(ran.out, Not(HasSubstr("%")));
}

TEST(Output, ShowAsksTheWorkloadsDeclaredTypesForJson) {
  NiceMock<MockClient> c;
  v1::Run run;
  run.set_id(5);
  run.set_workload("demo");
  (*run.mutable_params())["tag"] = "7";
  (*run.mutable_params())["num_workers"] = "2";
  v1::Config cfg;
  cfg.set_workload("demo");
  cfg.set_spec_json(SpecJson());
  EXPECT_CALL(c, GetRun(5)).WillOnce(Return(Result<v1::Run>(run)));
  EXPECT_CALL(c, GetConfig(::testing::Property(&v1::GetConfigRequest::workload, "demo")))
      .WillOnce(Return(Result<v1::Config>(cfg)));
  CliOptions o;
  o.output = "json";
  o.id = 5;
  const Ran ran = RunCommand(c, "run", "show", o);
  EXPECT_EQ(ran.code, 0) << ran.err;
  const ojson j = ojson::parse(ran.out);
  EXPECT_EQ(j["kind"], "Run");
  EXPECT_EQ(j["params"]["tag"], "7");
  EXPECT_EQ(j["params"]["num_workers"], 2);
}

TEST(Output, ShowTypesByLiteralsWhenTheSpecCannotBeHad) {
  NiceMock<MockClient> c;
  v1::Run run;
  run.set_id(5);
  run.set_workload("demo");
  (*run.mutable_params())["tag"] = "7";
  EXPECT_CALL(c, GetRun(5)).WillOnce(Return(Result<v1::Run>(run)));
  EXPECT_CALL(c, GetConfig(::testing::Property(&v1::GetConfigRequest::workload, "demo")))
      .WillOnce(Return(Result<v1::Config>(Status::PermissionDenied("no"))));
  CliOptions o;
  o.output = "json";
  o.id = 5;
  const Ran ran = RunCommand(c, "run", "show", o);
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ojson::parse(ran.out)["params"]["tag"], 7);
}

TEST(Output, TableAndCsvAskNoTypes) {
  NiceMock<MockClient> c;
  v1::Run run;
  run.set_id(5);
  run.set_workload("demo");
  EXPECT_CALL(c, GetRun(5)).WillOnce(Return(Result<v1::Run>(run)));
  EXPECT_CALL(c, GetConfig(_)).Times(0);
  CliOptions o;
  o.output = "csv";
  o.id = 5;
  EXPECT_EQ(RunCommand(c, "run", "show", o).code, 0);
}

TEST(Output, ExperimentShowCsvIsTheRawVerdict) {
  NiceMock<MockClient> c;
  v1::Experiment e;
  e.set_id(9);
  Verdict(&e, "samples_per_s", 4, 4);
  EXPECT_CALL(c, GetExperiment(9)).WillOnce(Return(Result<v1::Experiment>(e)));
  CliOptions o;
  o.output = "csv";
  o.id = 9;
  const Ran ran = RunCommand(c, "experiment", "show", o);
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr(",1.322,1.165,1.5,0.0004,improved"));
}

TEST(Output, ListJsonOfABareListIsAKindList) {
  NiceMock<MockClient> c;
  v1::ListAgentsResponse r;
  r.add_agents()->set_name("n1");
  EXPECT_CALL(c, ListAgents()).WillOnce(Return(Result<v1::ListAgentsResponse>(r)));
  CliOptions o;
  o.output = "json";
  const ojson j = ojson::parse(RunCommand(c, "agent", "list", o).out);
  EXPECT_EQ(j["kind"], "AgentList");
  EXPECT_EQ(j["items"][0]["name"], "n1");
  EXPECT_TRUE(j["next_page_token"].is_null());
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

// A run's samples as the server sends them: warm-up to step 3, the window 4..8 (an outlier at
// 7), a NaN at 5, a checkpoint at 6; `decimated`: 3 of 9 points.
v1::RunSamples SomeSamples(bool decimated = false, bool window = true) {
  v1::RunSamples r;
  r.set_run_id(7);
  r.set_workload("demo");
  r.set_attempt(2);
  r.set_state("succeeded");
  r.set_max_points(2000);
  auto* m = r.add_metrics();
  m->set_metric("samples_per_s");
  m->set_samples(9);
  m->set_declared_warmup_steps(2);
  m->set_warmup_samples(window ? 3 : 0);
  m->set_detected_warmup(1);
  m->set_warmup_end(3);
  m->set_steady(window ? 4 : 0);
  m->set_steady_from(4);
  m->set_steady_to(8);
  m->set_median(101.5);
  m->set_usable(true);
  const auto point = [](v1::SamplePoint* p, int64_t step, double value, const char* phase) {
    p->set_step(step);
    p->set_value(value);
    p->set_phase(phase);
  };
  const std::vector<std::tuple<int64_t, double, const char*>> all = {
      {1, 50, "warmup"},  {2, 70, "warmup"},   {3, 90, "warmup"}, {4, 100, "steady"},
      {6, 12, "skipped"}, {7, 250, "outlier"}, {8, 103, "steady"}};
  for (const auto& [s, v, ph] : all)
    if (!decimated || s == 1 || s == 6 || s == 7) point(m->add_points(), s, v, ph);
  m->set_points_total(decimated ? 9 : 7);
  auto* nan = m->add_skipped();
  nan->set_step(5);
  nan->set_value(std::nan(""));
  auto* ckpt = m->add_skipped();
  ckpt->set_step(6);
  ckpt->set_value(12);
  ckpt->set_skip_step(true);
  ckpt->set_tag("checkpoint");
  m->set_skipped_total(2);
  point(m->add_outliers(), 7, 250, "outlier");
  m->set_outliers_total(1);
  return r;
}

Ran SamplesCommand(const v1::RunSamples& r, const std::string& output) {
  NiceMock<MockClient> c;
  EXPECT_CALL(c, GetRunSamples(_)).WillOnce(Return(Result<v1::RunSamples>(r)));
  CliOptions o;
  o.output = output;
  o.id = r.run_id();
  return RunCommand(c, "run", "samples", o);
}

TEST(Output, RunSamplesJsonHasThePointsTheWindowAndWhatWasLeftOut) {
  const Ran ran = SamplesCommand(SomeSamples(), "json");
  ASSERT_EQ(ran.code, 0) << ran.err;
  const ojson j = ojson::parse(ran.out);
  EXPECT_EQ(j["apiVersion"], "tunectl/v1");
  EXPECT_EQ(j["kind"], "RunSamples");
  EXPECT_EQ(j["run_id"], 7);
  EXPECT_EQ(j["attempt"], 2);
  const ojson& m = j["metrics"][0];
  EXPECT_EQ(m["metric"], "samples_per_s");
  EXPECT_EQ(m["points"].size(), 7u);
  EXPECT_EQ(m["points"][0], ojson({{"step", 1}, {"value", 50.0}}));
  EXPECT_EQ(m["decimated"], false);
  EXPECT_EQ(m["warmup_end"], 3);
  EXPECT_EQ(m["steady_from"], 4);
  EXPECT_EQ(m["steady_to"], 8);
  EXPECT_EQ(m["median"], 101.5);
  EXPECT_EQ(m["skipped"][0],
            ojson({{"step", 5}, {"value", nullptr}, {"reason", "nonfinite"}, {"tag", nullptr}}));
  EXPECT_EQ(m["skipped"][1],
            ojson({{"step", 6}, {"value", 12.0}, {"reason", "skip_step"}, {"tag", "checkpoint"}}));
  EXPECT_EQ(m["outliers"][0], ojson({{"step", 7}, {"value", 250.0}}));
}

TEST(Output, RunSamplesWithoutAWindowHaveNullsNotZeros) {
  const ojson j = ojson::parse(SamplesCommand(SomeSamples(false, false), "json").out);
  const ojson& m = j["metrics"][0];
  for (const char* k : {"warmup_end", "steady_from", "steady_to", "median"})
    EXPECT_TRUE(m[k].is_null()) << k;
}

TEST(Output, DecimatedRunSamplesSayFromHowMany) {
  const ojson j = ojson::parse(SamplesCommand(SomeSamples(true), "json").out);
  EXPECT_EQ(j["metrics"][0]["decimated"], true);
  EXPECT_EQ(j["metrics"][0]["points_total"], 9);
  EXPECT_EQ(j["metrics"][0]["points"].size(), 3u);
  const Ran table = SamplesCommand(SomeSamples(true), "table");
  EXPECT_THAT(table.out, HasSubstr("3 of 9 points shown (decimated"));
  EXPECT_THAT(SamplesCommand(SomeSamples(), "table").out, Not(HasSubstr("decimated")));
}

TEST(Output, RunSamplesTextNamesTheWindowAndWhatWasLeftOut) {
  const Ran ran = SamplesCommand(SomeSamples(), "table");
  ASSERT_EQ(ran.code, 0) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("warm-up: to step 3"));
  EXPECT_THAT(ran.out, HasSubstr("steady:  steps 4..8 (4 samples), median 101.5"));
  EXPECT_THAT(ran.out, HasSubstr("left out (2): step 5 (NaN/Inf), step 6 (skip_steps checkpoint)"));
  EXPECT_THAT(ran.out, HasSubstr("outliers beyond 5 MADs, counted (1): step 7"));
  EXPECT_THAT(ran.out, HasSubstr("STEP"));
}

TEST(Output, RunSamplesCsvIsOneRowPerSampleWithItsPhase) {
  const Ran ran = SamplesCommand(SomeSamples(), "csv");
  ASSERT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out,
            "run_id,attempt,metric,step,value,phase,skipped,tag\r\n"
            "7,2,samples_per_s,1,50,warmup,,\r\n"
            "7,2,samples_per_s,2,70,warmup,,\r\n"
            "7,2,samples_per_s,3,90,warmup,,\r\n"
            "7,2,samples_per_s,4,100,steady,,\r\n"
            "7,2,samples_per_s,5,,skipped,nonfinite,\r\n"
            "7,2,samples_per_s,6,12,skipped,skip_step,checkpoint\r\n"
            "7,2,samples_per_s,7,250,outlier,,\r\n"
            "7,2,samples_per_s,8,103,steady,,\r\n");
}

TEST(Output, RunSamplesHaveNoName) {
  const Ran ran = SamplesCommand(SomeSamples(), "name");
  EXPECT_EQ(ran.code, 2);
  EXPECT_THAT(ran.err, HasSubstr("-o name"));
}

TEST(Output, RunSamplesPassTheFlagsAndAnUnknownRunIsExit3) {
  NiceMock<MockClient> c;
  EXPECT_CALL(c, GetRunSamples(_))
      .WillOnce([](const v1::GetRunSamplesRequest& r) -> Result<v1::RunSamples> {
        EXPECT_EQ(r.run_id(), 99);
        EXPECT_EQ(r.metric(), "loss");
        EXPECT_EQ(r.attempt(), 1);
        EXPECT_EQ(r.max_points(), 50);
        return Status::NotFound("run 99 not found");
      });
  CliOptions o;
  o.id = 99;
  o.metric = "loss";
  o.attempt = 1;
  o.max_points = 50;
  const Ran ran = RunCommand(c, "run", "samples", o);
  EXPECT_EQ(ran.code, 3);
  EXPECT_THAT(ran.err, HasSubstr("run 99 not found"));
}

}  // namespace
}  // namespace tunectl

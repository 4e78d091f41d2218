#include "core/spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

const char* kDemo = R"(
name: demo
description: demo trainer
command: ["python3", "train.py", "--num-workers", "{num_workers}", "--steps", "{steps}"]
env:
  DEMO_LOG_INTERVAL: "{log_interval}"
params:
  num_workers:     {type: int, default: 1, min: 0, max: 64}
  log_interval:    {type: int, default: 1, min: 1}
  steps:           {type: int, default: 60, min: 1}
  lr:              {type: float, default: 3e-4, min: 0}
  compile:         {type: bool, default: false}
  precision:       {type: enum, values: [fp32, bf16], default: bf16}
  tag:             {type: string, default: "x"}
coupled: [[num_workers, steps]]
metrics:
  samples_per_s: {pattern: 'samples/s: (?P<value>[0-9.]+)', unit: samples/s, better: higher,
                  role: primary, min_effect: 0.03}
  loss:          {json: loss, better: lower, role: guardrail, tolerance: 0.01}
run:
  repeats: 4
  warmup_steps: 5
  timeout: 10m
  selector: {pool: cpu}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

TEST(WorkloadSpec, ParsesEveryField) {
  auto r = ParseWorkloadSpec(kDemo, "demo.yaml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const WorkloadSpec& s = *r;
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.command.size(), 6u);
  EXPECT_EQ(s.env.at("DEMO_LOG_INTERVAL"), "{log_interval}");
  ASSERT_EQ(s.params.size(), 7u);
  EXPECT_EQ(s.params[0].name, "num_workers");  // declaration order kept
  EXPECT_EQ(*s.params[0].max, 64);
  EXPECT_EQ(s.FindParam("lr")->default_value, "0.0003");
  EXPECT_EQ(s.FindParam("compile")->default_value, "false");
  EXPECT_EQ(s.FindParam("precision")->values, (std::vector<std::string>{"fp32", "bf16"}));
  ASSERT_EQ(s.coupled.size(), 1u);
  ASSERT_EQ(s.metrics.size(), 2u);
  EXPECT_EQ(s.metrics[0].role, MetricRole::kPrimary);
  EXPECT_DOUBLE_EQ(s.metrics[0].min_effect, 0.03);
  EXPECT_EQ(s.metrics[1].json_key, "loss");
  EXPECT_EQ(s.metrics[1].better, Better::kLower);
  EXPECT_EQ(s.run.repeats, 4);
  EXPECT_EQ(s.run.warmup_steps, 5);
  EXPECT_EQ(s.run.timeout_ms, 600000);
  EXPECT_EQ(s.run.selector.at("pool"), "cpu");
}

TEST(WorkloadSpec, ShippedDemoWorkloadParses) {
  std::ifstream in(std::string(TUNECTL_SOURCE_DIR) + "/examples/workloads/demo.yaml");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = ParseWorkloadSpec(ss.str());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->name, "demo");
}

TEST(WorkloadSpec, JsonRoundTripIsIdentity) {
  auto a = ParseWorkloadSpec(kDemo);
  ASSERT_TRUE(a.ok());
  std::string j = WorkloadSpecToJson(*a);
  auto b = ParseWorkloadSpec(j, "json");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(WorkloadSpecToJson(*b), j);
  EXPECT_EQ(b->FindParam("lr")->default_value, "0.0003");
}

TEST(WorkloadSpec, RejectsUnknownTopLevelKeyNamingIt) {
  auto r = ParseWorkloadSpec(std::string(kDemo) + "colour: blue\n", "w.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("w.yaml: colour: unknown key \"colour\""));
  EXPECT_THAT(r.status().message(), HasSubstr("allowed keys: name,"));
}

TEST(WorkloadSpec, RejectsUnknownNestedKeyWithPathAndSuggestion) {
  auto r = ParseWorkloadSpec(Replace(kDemo, "min: 0, max: 64", "min: 0, maxx: 64"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("params.num_workers.maxx: unknown key"));
  EXPECT_THAT(r.status().message(), HasSubstr("did you mean \"max\""));
}

TEST(WorkloadSpec, RejectsWrongTypeNamingValueAndAllowed) {
  auto r = ParseWorkloadSpec(
      Replace(kDemo, "{type: int, default: 1, min: 0", "{type: int, default: many, min: 0"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("params.num_workers.default"));
  EXPECT_THAT(r.status().message(), HasSubstr("\"many\" is not an integer"));
  r = ParseWorkloadSpec(Replace(kDemo, "repeats: 4", "repeats: four"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("run.repeats: expected an integer, got \"four\""));
  r = ParseWorkloadSpec(Replace(kDemo, "type: enum", "type: enumeration"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("allowed: int, float, bool, enum, string"));
}

TEST(WorkloadSpec, RejectsMissingCommand) {
  std::string s = kDemo;
  auto b = s.find("command:");
  auto e = s.find("env:");
  s.erase(b, e - b);
  auto r = ParseWorkloadSpec(s);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("command: missing"));
}

TEST(WorkloadSpec, RejectsCommandGivenAsOneString) {
  auto r = ParseWorkloadSpec(Replace(
      kDemo, R"(["python3", "train.py", "--num-workers", "{num_workers}", "--steps", "{steps}"])",
      "python3 train.py"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("expected a list of arguments"));
}

TEST(WorkloadSpec, RejectsPlaceholderNamingNoParameter) {
  auto r = ParseWorkloadSpec(Replace(kDemo, "{num_workers}", "{num_worker}"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("command[3]: placeholder {num_worker} names no parameter"));
  EXPECT_THAT(r.status().message(), HasSubstr("did you mean {num_workers}?"));
  r = ParseWorkloadSpec(Replace(kDemo, "\"{log_interval}\"", "\"{interval}\""));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("env.DEMO_LOG_INTERVAL: placeholder {interval}"));
}

TEST(WorkloadSpec, RejectsDefaultOutOfRange) {
  auto r = ParseWorkloadSpec(
      Replace(kDemo, "default: 1, min: 0, max: 64", "default: 65, min: 0, max: 64"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("num_workers=65 is out of range; allowed 0..64"));
}

TEST(WorkloadSpec, RejectsEnumDefaultNotInValues) {
  auto r = ParseWorkloadSpec(Replace(kDemo, "default: bf16", "default: fp16"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("precision=fp16 is not allowed; allowed: fp32, bf16"));
}

TEST(WorkloadSpec, RejectsInvalidRegexAndPatternWithoutGroup) {
  auto r = ParseWorkloadSpec(Replace(kDemo, "(?P<value>[0-9.]+)", "([0-9.]+"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("metrics.samples_per_s.pattern: invalid RE2 regex"));
  r = ParseWorkloadSpec(Replace(kDemo, "(?P<value>[0-9.]+)", "[0-9.]+"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("needs a capture group"));
}

TEST(WorkloadSpec, RejectsBadBetterRoleAndTwoPrimaries) {
  auto r = ParseWorkloadSpec(Replace(kDemo, "better: higher", "better: more"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(
      r.status().message(),
      HasSubstr("metrics.samples_per_s.better: \"more\" is not allowed; allowed: higher, lower"));
  r = ParseWorkloadSpec(Replace(kDemo, "role: guardrail", "role: primary"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a second primary metric"));
}

TEST(WorkloadSpec, AParserMetricTakesItsUnitAndBetterFromTheFormatsField) {
  auto r = ParseWorkloadSpec(Replace(
      kDemo, "  loss:          {json: loss, better: lower, role: guardrail, tolerance: 0.01}",
      "  loss:          {parser: megatron, field: lm_loss, role: guardrail}\n"
      "  iter_ms:       {parser: megatron}"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const MetricSpec* loss = nullptr;
  const MetricSpec* iter = nullptr;
  for (const auto& m : r->metrics) {
    if (m.name == "loss") loss = &m;
    if (m.name == "iter_ms") iter = &m;
  }
  ASSERT_TRUE(loss && iter);
  EXPECT_EQ(loss->parser, "megatron");
  EXPECT_EQ(loss->field, "lm_loss");
  EXPECT_EQ(loss->better, Better::kLower);
  EXPECT_EQ(iter->field, "iter_ms");  // the metric's name
  EXPECT_EQ(iter->better, Better::kLower);
  EXPECT_EQ(iter->unit, "ms");
  // The canonical JSON keeps the source, and reads back the same.
  const std::string j = WorkloadSpecToJson(*r);
  auto b = ParseWorkloadSpec(j, "json");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(WorkloadSpecToJson(*b), j);
}

TEST(WorkloadSpec, AnUnlistedNameAnOpenFormatGivesNeedsBetter) {
  // Megatron prints every "<name> loss" key (an MoE model's load_balancing_loss, sop_loss).
  auto r = ParseWorkloadSpec(Replace(kDemo, "{json: loss, better: lower,",
                                     "{parser: megatron, field: sop_loss, better: lower,"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  r = ParseWorkloadSpec(
      Replace(kDemo, "{json: loss, better: lower,", "{parser: megatron, field: sop_loss,"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("metrics.loss.better: missing"));
  r = ParseWorkloadSpec(Replace(kDemo, "{json: loss, better: lower,",
                                "{parser: megatron, field: sop_lossy, better: lower,"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("or any other *_loss key it prints"));
  r = ParseWorkloadSpec(Replace(kDemo, "{json: loss, better: lower,",
                                "{parser: hf_trainer, field: eval_rouge1, better: higher,"));
  ASSERT_TRUE(r.ok()) << r.status().message();
}

TEST(WorkloadSpec, RejectsAnUnknownFormatOrFieldListingWhatIsAllowed) {
  auto r = ParseWorkloadSpec(Replace(kDemo, "{json: loss, better: lower,", "{parser: megatorn,"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("metrics.loss.parser: \"megatorn\" is not a built-in format; allowed: "
                        "megatron, "));
  r = ParseWorkloadSpec(Replace(kDemo, "{json: loss, better: lower,", "{parser: megatron,"));
  ASSERT_FALSE(r.ok());  // "loss" is not a megatron field
  EXPECT_THAT(r.status().message(), HasSubstr("metrics.loss.parser: the megatron format has no "
                                              "field \"loss\""));
  EXPECT_THAT(r.status().message(), HasSubstr("lm_loss"));
  r = ParseWorkloadSpec(
      Replace(kDemo, "{json: loss, better: lower,", "{parser: megatron, field: nope,"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("metrics.loss.field: the megatron format has no"));
  r = ParseWorkloadSpec(
      Replace(kDemo, "{json: loss, better: lower,", "{json: loss, parser: nanogpt,"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("set one source: pattern, json, parser, expr, prometheus or tensorboard"));
  r = ParseWorkloadSpec(
      Replace(kDemo, "{json: loss, better: lower,", "{json: loss, field: x, better: lower,"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("metrics.loss.field: is the field of a parser"));
}

TEST(WorkloadSpec, RejectsCoupledGroupWithUnknownParam) {
  auto r = ParseWorkloadSpec(Replace(kDemo, "[[num_workers, steps]]", "[[num_workers, batch]]"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("coupled[0]: \"batch\" is not a declared parameter"));
}

TEST(WorkloadSpec, ReportsYamlSyntaxErrorWithLine) {
  auto r = ParseWorkloadSpec("name: demo\ncommand: [a, b\n", "bad.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("bad.yaml: YAML syntax error at line"));
}

TEST(WorkloadSpec, AcceptsJsonInput) {
  auto r = ParseWorkloadSpec(R"J({"name": "j", "command": ["echo", "{n}"],
    "params": {"n": {"type": "int", "default": 3}},
    "metrics": {"m": {"pattern": "m=(\\d+)", "better": "lower"}}})J");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->FindParam("n")->default_value, "3");
  EXPECT_EQ(r->metrics[0].pattern, "m=(\\d+)");
}

TEST(CanonicalParamValue, NormalisesAndValidates) {
  ParamSpec p{"x", ParamType::kFloat, "1", 0.0, 2.0, {}, ""};
  EXPECT_EQ(*CanonicalParamValue(p, "1.50"), "1.5");
  EXPECT_FALSE(CanonicalParamValue(p, "2.5").ok());
  EXPECT_FALSE(CanonicalParamValue(p, "nan").ok());
  ParamSpec b{"b", ParamType::kBool, "false", {}, {}, {}, ""};
  EXPECT_EQ(*CanonicalParamValue(b, "Yes"), "true");
  EXPECT_THAT(CanonicalParamValue(b, "maybe").status().message(),
              HasSubstr("allowed: true, false"));
  ParamSpec i{"i", ParamType::kInt, "1", {}, {}, {}, ""};
  EXPECT_FALSE(CanonicalParamValue(i, "1.0").ok());
  EXPECT_FALSE(CanonicalParamValue(i, "").ok());
  EXPECT_EQ(*CanonicalParamValue(i, "-7"), "-7");
}

TEST(CanonicalParamValue, ABoolAcceptsExactlyTheFormsItsErrorLists) {
  ParamSpec b{"pin_memory", ParamType::kBool, "false", {}, {}, {}, ""};
  const std::string listed = CanonicalParamValue(b, "y").status().message();
  EXPECT_THAT(listed, HasSubstr("allowed: true, false (also 1/0, yes/no, on/off, any case)"));
  for (const char* t : {"true", "TRUE", "1", "yes", "Yes", "on", "ON"})
    EXPECT_EQ(*CanonicalParamValue(b, t), "true") << t;
  for (const char* f : {"false", "False", "0", "no", "NO", "off", "Off"})
    EXPECT_EQ(*CanonicalParamValue(b, f), "false") << f;
  for (const char* bad : {"y", "n", "t", "f", "2", "", "yes please"})
    EXPECT_FALSE(CanonicalParamValue(b, bad).ok()) << bad;
}

TEST(ParseDurationMs, AcceptsUnitsAndRejectsGarbage) {
  EXPECT_EQ(*ParseDurationMs("10m"), 600000);
  EXPECT_EQ(*ParseDurationMs("1h30m"), 5400000);
  EXPECT_EQ(*ParseDurationMs("250ms"), 250);
  EXPECT_FALSE(ParseDurationMs("10").ok());
  EXPECT_FALSE(ParseDurationMs("ten minutes").ok());
  EXPECT_FALSE(ParseDurationMs("0s").ok());
}

TEST(NearestName, SuggestsOnlyCloseNames) {
  EXPECT_EQ(NearestName("num_worker", {"num_workers", "steps"}), "num_workers");
  EXPECT_EQ(NearestName("zzzzzz", {"num_workers", "steps"}), "");
}

TEST(WorkloadSpec, SkipStepsNeedATagAndAValidRegex) {
  const std::string base =
      "name: w\ncommand: [t]\nmetrics: {sps: {pattern: 'sps: ([0-9.]+)', better: higher}}\n";
  auto ok = ParseWorkloadSpec(base + "run: {skip_steps: {checkpoint: 'saving checkpoint'}}\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->run.skip_steps.at("checkpoint"), "saving checkpoint");
  auto tag = ParseWorkloadSpec(base + "run: {skip_steps: {Check-Point: 'x'}}\n");
  EXPECT_NE(tag.status().message().find("run.skip_steps.Check-Point"), std::string::npos)
      << tag.status().message();
  auto re = ParseWorkloadSpec(base + "run: {skip_steps: {eval: 'val(('}}\n");
  EXPECT_NE(re.status().message().find("invalid RE2 regex"), std::string::npos)
      << re.status().message();
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(WorkloadSpec, RejectsADuplicateKeyNamingItAndBothLines) {
  auto s = ParseWorkloadSpec(R"(name: w
command: [train]
params:
  nw: {type: int, default: 1}
  nw: {type: int, default: 8}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
)",
                             "w.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("w.yaml: params.nw: key \"nw\" appears twice"));
  EXPECT_THAT(s.status().message(), HasSubstr("lines 4 and 5"));
  auto j = ParseWorkloadSpec(
      R"js({"name": "w", "name": "v", "command": ["t"], "metrics": {"s": {"pattern": "s: ([0-9]+)"}}})js",
      "w.json");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), HasSubstr("key \"name\" appears twice"));
}

TEST(WorkloadSpec, RejectsANulCharacterInAnyValue) {
  auto s = ParseWorkloadSpec(R"(name: w
command: [train, "--tag=a\0b"]
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
)",
                             "w.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("command[1] (line 2): contains a NUL character"));
  ParamSpec p;
  p.name = "tag";
  p.type = ParamType::kString;
  auto v = CanonicalParamValue(p, std::string_view("a\0b", 3));
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("tag: the value contains a NUL character"));
}

TEST(WorkloadSpec, RefusesADeeplyNestedDocumentInsteadOfCrashing) {
  const std::string deep = "{\"name\": " + std::string(50000, '[') + std::string(50000, ']') + "}";
  auto s = ParseWorkloadSpec(deep, "deep.json");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("deep.json: nested more than 64 levels"));
  auto big = ParseWorkloadSpec("name: w\ndescription: " + std::string(3 << 20, 'x') + "\n", "big");
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.status().message(), HasSubstr("allowed at most 1048576"));
}

TEST(WorkloadSpec, ReadsRunResourcesAndKeepsThemInItsCanonicalForm) {
  auto s = ParseWorkloadSpec(R"(
name: big
command: [train]
metrics: {sps: {pattern: 'sps: ([0-9.]+)', better: higher}}
run:
  resources: {nodes: 2, gpus_per_node: 8, cpus_per_task: 12, mem: 64G, time: 2h}
)");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->run.resources.nodes, 2);
  EXPECT_EQ(s->run.resources.gpus_per_node, 8);
  EXPECT_EQ(s->run.resources.cpus_per_task, 12);
  EXPECT_EQ(s->run.resources.mem_mb, 64 * 1024);
  EXPECT_EQ(s->run.resources.time_ms, 2 * 3600 * 1000);
  auto again = ParseWorkloadSpec(WorkloadSpecToJson(*s));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->run.resources, s->run.resources);
}

TEST(WorkloadSpec, RefusesBadResourcesNamingTheField) {
  auto bad = [](const std::string& res) {
    auto s = ParseWorkloadSpec(
        "name: x\ncommand: [t]\nmetrics: {a: {pattern: 'a=(\\d+)', better: higher}}\n"
        "run: {resources: " +
        res + "}\n");
    return s.ok() ? std::string("accepted") : s.status().message();
  };
  EXPECT_THAT(bad("{mem: lots}"), HasSubstr("run.resources.mem: memory \"lots\""));
  EXPECT_THAT(bad("{nodes: 0}"), HasSubstr("run.resources.nodes"));
  EXPECT_THAT(
      bad("{gpus: 1}"),
      HasSubstr("run.resources.gpus: unknown key \"gpus\"; allowed keys: nodes, gpus_per_node"));
  EXPECT_EQ(ParseMemoryMb("512M").value(), 512);
  EXPECT_EQ(ParseMemoryMb("1Ti").value(), 1024 * 1024);
  EXPECT_EQ(ParseMemoryMb("2048").value(), 2048);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST(WorkloadSpec, ASpecToApplyHasAtMost16ValidSelectorLabels) {
  auto parse = [](const std::string& selector) {
    auto spec = ParseWorkloadSpec(Replace(kDemo, "selector: {pool: cpu}", selector), "w.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status().message();  // stored revisions still read back
    return CheckSpecToApply(*spec, "w.yaml");
  };
  EXPECT_TRUE(parse("selector: {pool: cpu}").ok());
  Status bad_key = parse("selector: {'p ool': cpu}");
  EXPECT_THAT(bad_key.message(), HasSubstr("w.yaml: run.selector: key \"p ool\""));
  std::string many = "selector: {";
  for (int i = 0; i < 16; ++i) many += (i ? ", l" : "l") + std::to_string(i) + ": x";
  EXPECT_TRUE(parse(many + "}").ok());
  Status too_many = parse(many + ", l16: x}");
  EXPECT_THAT(too_many.message(), HasSubstr("w.yaml: run.selector: 17 labels; at most 16"));
}

}  // namespace
}  // namespace tunectl

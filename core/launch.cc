#include "core/launch.h"

#include <nlohmann/json.hpp>

#include "core/derived.h"

namespace tunectl {

using json = nlohmann::json;

std::vector<MetricRule> LaunchRecord::Rules() const {
  std::vector<MetricRule> out;
  for (const auto& m : metrics)
    out.push_back({m.name, m.pattern, m.json_key, m.parser, m.field, m.expr, m.prometheus, m.match,
                   m.every_ms, m.agg, m.tensorboard});
  for (const auto& [tag, pattern] : skip_steps)
    out.push_back({std::string(kSkipPrefix) + tag, pattern, "", "", "", ""});
  return out;
}

std::string LaunchMetric::SourceText() const {
  if (!expr.empty()) return "expr " + expr;
  if (!prometheus.empty())
    return "prometheus " + prometheus + ", " + match + ", every " + std::to_string(every_ms) +
           " ms, " + (agg.empty() ? std::string("mean") : agg);
  if (!tensorboard.empty()) return "tensorboard " + tensorboard;
  if (!parser.empty()) return "parser " + parser + ", field " + field;
  if (!json_key.empty()) return "json key \"" + json_key + "\"";
  return "pattern '" + pattern + "'";
}

std::string LaunchRecord::SourceOf(std::string_view metric) const {
  for (const auto& m : metrics)
    if (m.name == metric) return m.SourceText();
  if (!profile.empty() && metric.rfind("profile_", 0) == 0) return "profile " + profile;
  return "";
}

std::string LaunchMetric::NoSampleReason() const {
  if (!expr.empty()) {
    auto e = DerivedExpr::Parse(expr);
    std::string inputs;
    if (e.ok())
      for (const auto& in : e->inputs()) inputs += (inputs.empty() ? "" : ", ") + in;
    if (inputs.empty()) return "no sample: the expression " + expr + " gave no finite value";
    return "no sample: its inputs " + inputs + " never all had a value at one step (" + expr +
           "), or it divided by zero there";
  }
  if (!prometheus.empty())
    return "no sample: no scrape of " + prometheus + " every " + std::to_string(every_ms) +
           " ms gave a value of " + match;
  if (!tensorboard.empty())
    return "no sample: no TensorBoard event file under the run directory had the tag " +
           tensorboard;
  if (!parser.empty())
    return "no sample: no line of the " + parser + " format had the field " + field;
  if (!json_key.empty()) return "no sample: no JSON-object line had the key \"" + json_key + "\"";
  return "no sample: no line matched the pattern '" + pattern + "'";
}

Better LaunchRecord::BetterOf(std::string_view metric) const {
  for (const auto& m : metrics)
    if (m.name == metric) return m.better;
  return Better::kHigher;
}

LaunchRecord MakeLaunchRecord(const WorkloadSpec& spec, const Launch& launch) {
  LaunchRecord r;
  r.argv = launch.argv;
  r.env = launch.env;
  r.files = launch.files;
  for (const auto& m : spec.metrics) {
    auto bound = launch.metric_exprs.find(m.name);  // what runs: the expression with its params
    r.metrics.push_back({m.name, m.pattern, m.json_key, m.better, m.role, m.parser, m.field,
                         bound == launch.metric_exprs.end() ? m.expr : bound->second, m.prometheus,
                         m.match, m.every_ms, m.agg, m.tensorboard});
  }
  r.skip_steps = spec.run.skip_steps;
  r.timeout_ms = spec.run.timeout_ms;
  r.warmup_steps = spec.run.warmup_steps;
  r.profile = spec.profile;
  r.resources = spec.run.resources;
  return r;
}

LaunchRecord AsStabilityRun(LaunchRecord r, int64_t duration_s) {
  r.duration_ms = duration_s * 1000;
  r.timeout_ms = duration_s * 1000 + 5 * 60 * 1000;
  return r;
}

std::string LaunchRecordToJson(const LaunchRecord& r) {
  json j;
  j["argv"] = r.argv;
  j["env"] = r.env;
  j["files"] = r.files;
  json metrics = json::array();
  for (const auto& m : r.metrics)
    metrics.push_back({{"name", m.name},
                       {"pattern", m.pattern},
                       {"json", m.json_key},
                       {"better", BetterName(m.better)},
                       {"role", RoleName(m.role)}});
  for (size_t i = 0; i < r.metrics.size(); ++i)
    if (!r.metrics[i].parser.empty()) {  // written only where set: older records stay as they were
      metrics[i]["parser"] = r.metrics[i].parser;
      metrics[i]["field"] = r.metrics[i].field;
    }
  for (size_t i = 0; i < r.metrics.size(); ++i) {
    const LaunchMetric& m = r.metrics[i];
    if (!m.expr.empty()) metrics[i]["expr"] = m.expr;
    if (!m.prometheus.empty()) {
      metrics[i]["prometheus"] = m.prometheus;
      metrics[i]["match"] = m.match;
      metrics[i]["every_ms"] = m.every_ms;
      metrics[i]["agg"] = m.agg;
    }
    if (!m.tensorboard.empty()) metrics[i]["tensorboard"] = m.tensorboard;
  }
  j["metrics"] = metrics;
  json skip = json::array();
  for (const auto& [tag, pattern] : r.skip_steps)
    skip.push_back({{"tag", tag}, {"pattern", pattern}});
  j["skip_steps"] = skip;
  j["timeout_ms"] = r.timeout_ms;
  j["warmup_steps"] = r.warmup_steps;
  if (!r.profile.empty()) j["profile"] = r.profile;
  if (r.duration_ms > 0) j["duration_ms"] = r.duration_ms;
  if (!r.resources.empty())
    j["resources"] = {{"nodes", r.resources.nodes},
                      {"gpus_per_node", r.resources.gpus_per_node},
                      {"cpus_per_task", r.resources.cpus_per_task},
                      {"mem_mb", r.resources.mem_mb},
                      {"time_ms", r.resources.time_ms}};
  return j.dump();
}

Result<LaunchRecord> LaunchRecordFromJson(std::string_view text) {
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Status::InvalidArgument("launch: not a JSON object");
  const char* field = "argv";
  try {
    LaunchRecord r;
    r.argv = j.at("argv").get<std::vector<std::string>>();
    field = "env";
    r.env = j.value("env", std::map<std::string, std::string>());
    field = "files";
    r.files = j.value("files", std::map<std::string, std::string>());
    field = "metrics";
    for (const auto& m : j.value("metrics", json::array())) {
      LaunchMetric x;
      x.name = m.at("name").get<std::string>();
      x.pattern = m.value("pattern", std::string());
      x.json_key = m.value("json", std::string());
      x.parser = m.value("parser", std::string());
      x.field = m.value("field", std::string());
      x.expr = m.value("expr", std::string());
      x.prometheus = m.value("prometheus", std::string());
      x.match = m.value("match", std::string());
      x.every_ms = m.value("every_ms", int64_t{0});
      x.agg = m.value("agg", std::string());
      x.tensorboard = m.value("tensorboard", std::string());
      x.better =
          m.value("better", std::string("higher")) == "lower" ? Better::kLower : Better::kHigher;
      const std::string role = m.value("role", std::string("observed"));
      x.role = role == "primary"     ? MetricRole::kPrimary
               : role == "guardrail" ? MetricRole::kGuardrail
                                     : MetricRole::kObserved;
      r.metrics.push_back(std::move(x));
    }
    field = "skip_steps";
    for (const auto& s : j.value("skip_steps", json::array()))
      r.skip_steps[s.at("tag").get<std::string>()] = s.at("pattern").get<std::string>();
    field = "timeout_ms";
    r.timeout_ms = j.value("timeout_ms", int64_t{0});
    field = "warmup_steps";
    r.warmup_steps = j.value("warmup_steps", 0);
    r.profile = j.value("profile", std::string());
    field = "duration_ms";
    r.duration_ms = j.value("duration_ms", int64_t{0});
    field = "resources";
    if (j.contains("resources")) {
      const json& res = j.at("resources");
      r.resources.nodes = res.value("nodes", 0);
      r.resources.gpus_per_node = res.value("gpus_per_node", 0);
      r.resources.cpus_per_task = res.value("cpus_per_task", 0);
      r.resources.mem_mb = res.value("mem_mb", int64_t{0});
      r.resources.time_ms = res.value("time_ms", int64_t{0});
    }
    return r;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("launch.") + field + ": " + e.what());
  }
}

}  // namespace tunectl

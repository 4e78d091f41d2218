#include "core/launch.h"

#include <nlohmann/json.hpp>

namespace tunectl {

using json = nlohmann::json;

std::vector<MetricRule> LaunchRecord::Rules() const {
  std::vector<MetricRule> out;
  for (const auto& m : metrics) out.push_back({m.name, m.pattern, m.json_key, m.parser, m.field});
  for (const auto& [tag, pattern] : skip_steps)
    out.push_back({std::string(kSkipPrefix) + tag, pattern, "", "", ""});
  return out;
}

std::string LaunchMetric::NoSampleReason() const {
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
  for (const auto& m : spec.metrics)
    r.metrics.push_back({m.name, m.pattern, m.json_key, m.better, m.role, m.parser, m.field});
  r.skip_steps = spec.run.skip_steps;
  r.timeout_ms = spec.run.timeout_ms;
  r.warmup_steps = spec.run.warmup_steps;
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
  j["metrics"] = metrics;
  json skip = json::array();
  for (const auto& [tag, pattern] : r.skip_steps)
    skip.push_back({{"tag", tag}, {"pattern", pattern}});
  j["skip_steps"] = skip;
  j["timeout_ms"] = r.timeout_ms;
  j["warmup_steps"] = r.warmup_steps;
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

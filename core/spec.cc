#include "core/spec.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/derived.h"
#include "core/log_formats.h"
#include "core/names.h"
#include "core/prom_scrape.h"
#include "core/template.h"
#include "core/text.h"

namespace tunectl {
namespace {

using nlohmann::ordered_json;

std::string Join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

// The built-in formats' names, for messages.
std::string FormatNames() {
  std::string out;
  for (const auto& f : LogFormats()) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

std::string Quote(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

std::string FormatDouble(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  if (ec != std::errc()) return std::to_string(v);
  return std::string(buf, end);
}

// Converts JSON text into a YAML node tree so that one validator serves both formats.
YAML::Node JsonToYaml(const ordered_json& j) {
  switch (j.type()) {
    case ordered_json::value_t::object: {
      YAML::Node n(YAML::NodeType::Map);
      for (auto it = j.begin(); it != j.end(); ++it) n[it.key()] = JsonToYaml(it.value());
      return n;
    }
    case ordered_json::value_t::array: {
      YAML::Node n(YAML::NodeType::Sequence);
      for (const auto& e : j) n.push_back(JsonToYaml(e));
      return n;
    }
    case ordered_json::value_t::string: return YAML::Node(j.get<std::string>());
    case ordered_json::value_t::null: return YAML::Node(YAML::NodeType::Null);
    case ordered_json::value_t::number_float: return YAML::Node(FormatDouble(j.get<double>()));
    default: return YAML::Node(j.dump());
  }
}

// Walks the YAML tree and collects the first error with its path.
class Checker {
 public:
  Status Fail(const std::string& path, const std::string& what) {
    return Status::InvalidArgument(path + ": " + what);
  }

  static std::string Describe(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Map: return "a mapping";
      case YAML::NodeType::Sequence: return "a list";
      case YAML::NodeType::Null: return "nothing";
      case YAML::NodeType::Scalar: return Quote(n.Scalar());
      default: return "an undefined value";
    }
  }

  Status CheckKeys(const YAML::Node& map, const std::string& path,
                   const std::vector<std::string>& allowed) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string near = NearestName(key, allowed);
        std::string msg = "unknown key " + Quote(key) + "; allowed keys: " + Join(allowed);
        if (!near.empty()) msg += " (did you mean " + Quote(near) + "?)";
        return Fail(path.empty() ? key : path + "." + key, msg);
      }
    }
    return Status::Ok();
  }

  Result<std::string> Scalar(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) return Fail(path, "expected a text value, got " + Describe(n));
    return n.Scalar();
  }

  Result<int64_t> Int(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi) {
    if (!n.IsScalar()) return Fail(path, "expected an integer, got " + Describe(n));
    const std::string& s = n.Scalar();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
      return Fail(path, "expected an integer, got " + Quote(s));
    if (v < lo || v > hi)
      return Fail(path, Quote(s) + " is out of range; allowed " + std::to_string(lo) + ".." +
                            std::to_string(hi));
    return v;
  }

  Result<double> Number(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) return Fail(path, "expected a number, got " + Describe(n));
    const std::string& s = n.Scalar();
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
      return Fail(path, "expected a number, got " + Quote(s));
    return v;
  }

  Result<std::map<std::string, std::string>> StringMap(const YAML::Node& n,
                                                       const std::string& path) {
    std::map<std::string, std::string> out;
    if (n.IsNull()) return out;
    if (!n.IsMap()) return Fail(path, "expected a mapping of name: value, got " + Describe(n));
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string key = it->first.Scalar();
      auto v = Scalar(it->second, path + "." + key);
      if (!v.ok()) return v.status();
      out[key] = *v;
    }
    return out;
  }
};

bool ValidIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool ValidWorkloadName(std::string_view s) {
  static const RE2 re("[a-z0-9][a-z0-9_.-]{0,62}");
  return RE2::FullMatch(re2::StringPiece(s.data(), s.size()), re);
}

Result<ParamSpec> ParseParam(Checker& c, const std::string& name, const YAML::Node& n) {
  const std::string path = "params." + name;
  if (!ValidIdentifier(name))
    return c.Fail(path,
                  "parameter names are identifiers (letters, digits, _; not starting "
                  "with a digit), got " +
                      Quote(name));
  if (!n.IsMap())
    return c.Fail(path,
                  "expected a mapping like {type: int, default: 1}, got " + Checker::Describe(n));
  if (auto s = c.CheckKeys(n, path, {"type", "default", "min", "max", "values", "description"});
      !s.ok())
    return s;
  ParamSpec p;
  p.name = name;
  if (!n["type"]) return c.Fail(path + ".type", "missing; allowed: int, float, bool, enum, string");
  auto type = c.Scalar(n["type"], path + ".type");
  if (!type.ok()) return type.status();
  static const std::map<std::string, ParamType> kTypes = {{"int", ParamType::kInt},
                                                          {"float", ParamType::kFloat},
                                                          {"bool", ParamType::kBool},
                                                          {"enum", ParamType::kEnum},
                                                          {"string", ParamType::kString}};
  auto t = kTypes.find(*type);
  if (t == kTypes.end())
    return c.Fail(path + ".type",
                  Quote(*type) + " is not a type; allowed: int, float, bool, enum, string");
  p.type = t->second;
  const bool numeric = p.type == ParamType::kInt || p.type == ParamType::kFloat;
  for (const char* k : {"min", "max"}) {
    if (!n[k]) continue;
    if (!numeric)
      return c.Fail(path + "." + k, std::string("only int and float parameters have ") + k);
    auto v = c.Number(n[k], path + "." + k);
    if (!v.ok()) return v.status();
    if (p.type == ParamType::kInt && std::floor(*v) != *v)
      return c.Fail(path + "." + k, "expected an integer, got " + Quote(n[k].Scalar()));
    (std::string(k) == "min" ? p.min : p.max) = *v;
  }
  if (p.min && p.max && *p.min > *p.max)
    return c.Fail(path,
                  "min " + FormatDouble(*p.min) + " is greater than max " + FormatDouble(*p.max));
  if (n["values"]) {
    if (p.type != ParamType::kEnum)
      return c.Fail(path + ".values", "only enum parameters have values");
    if (!n["values"].IsSequence() || n["values"].size() == 0)
      return c.Fail(path + ".values",
                    "expected a non-empty list, got " + Checker::Describe(n["values"]));
    std::set<std::string> seen;
    for (size_t i = 0; i < n["values"].size(); ++i) {
      auto v = c.Scalar(n["values"][i], path + ".values[" + std::to_string(i) + "]");
      if (!v.ok()) return v.status();
      if (!seen.insert(*v).second)
        return c.Fail(path + ".values[" + std::to_string(i) + "]", "duplicate value " + Quote(*v));
      p.values.push_back(*v);
    }
  } else if (p.type == ParamType::kEnum) {
    return c.Fail(path + ".values",
                  "missing; an enum parameter lists its values, e.g. [fp32, bf16]");
  }
  if (n["description"]) {
    auto d = c.Scalar(n["description"], path + ".description");
    if (!d.ok()) return d.status();
    p.description = *d;
  }
  if (!n["default"])
    return c.Fail(path + ".default",
                  "missing; every parameter needs a default (config v1 is the defaults)");
  auto raw = c.Scalar(n["default"], path + ".default");
  if (!raw.ok()) return raw.status();
  auto canon = CanonicalParamValue(p, *raw);
  if (!canon.ok()) return c.Fail(path + ".default", canon.status().message());
  p.default_value = *canon;
  return p;
}

Result<MetricSpec> ParseMetric(Checker& c, const std::string& name, const YAML::Node& n) {
  const std::string path = "metrics." + name;
  if (!ValidIdentifier(name))
    return c.Fail(path, "metric names are identifiers (letters, digits, _), got " + Quote(name));
  if (!n.IsMap())
    return c.Fail(path, "expected a mapping like {pattern: '...', better: higher}, got " +
                            Checker::Describe(n));
  if (auto s = c.CheckKeys(n, path,
                           {"pattern", "json", "parser", "expr", "prometheus", "match", "every",
                            "agg", "tensorboard", "field", "unit", "better", "role", "min_effect",
                            "tolerance", "description"});
      !s.ok())
    return s;
  MetricSpec m;
  m.name = name;
  for (const char* k : {"match", "every", "agg"})
    if (n[k] && !n["prometheus"])
      return c.Fail(path + "." + k, "belongs to a scrape; set prometheus: <URL> too");
  int sources = 0;
  for (const char* k : {"pattern", "json", "parser", "expr", "prometheus", "tensorboard"})
    sources += n[k] ? 1 : 0;
  if (sources > 1)
    return c.Fail(path, "set one source: pattern, json, parser, expr, prometheus or tensorboard");
  if (sources == 0)
    return c.Fail(path,
                  "missing a source; set pattern: '<RE2 regex>', json: <key>, parser: <format> ("
                  "built in: " +
                      FormatNames() +
                      "), expr: '<expression over other metrics>', prometheus: <URL, node or "
                      "dcgm> with match: '<selector>', or tensorboard: <tag>");
  if (n["field"] && !n["parser"])
    return c.Fail(path + ".field", "is the field of a parser; set parser: <format> too");
  const FormatField* from = nullptr;  // the parser's field: default unit and better
  if (n["parser"]) {
    auto p = c.Scalar(n["parser"], path + ".parser");
    if (!p.ok()) return p.status();
    const LogFormat* format = FindLogFormat(*p);
    if (!format)
      return c.Fail(path + ".parser",
                    Quote(*p) + " is not a built-in format; allowed: " + FormatNames());
    std::string field = name;
    if (n["field"]) {
      auto f = c.Scalar(n["field"], path + ".field");
      if (!f.ok()) return f.status();
      field = *f;
    }
    for (const auto& f : format->fields)
      if (f.name == field) from = &f;
    // An unlisted name the format gives (an MoE loss, a user's CSV column): `better` is needed.
    const bool open_name =
        !from && !format->open_fields.empty() && !field.empty() &&
        field.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos &&
        (format->open_fields == "*" ||
         (field.size() > format->open_fields.size() &&
          field.compare(field.size() - format->open_fields.size(), std::string::npos,
                        format->open_fields) == 0));
    if (!from && !open_name) {
      std::string names;
      for (const auto& f : format->fields) names += (names.empty() ? "" : ", ") + f.name;
      return c.Fail(path + (n["field"] ? ".field" : ".parser"),
                    "the " + format->name + " format has no field " + Quote(field) +
                        (n["field"] ? "" : " (the metric's name; set field: to pick one)") +
                        "; its fields: " + names +
                        (format->open_fields == "*" ? ", or any other key it prints, normalised"
                         : format->open_fields.empty()
                             ? ""
                             : ", or any other *" + format->open_fields + " key it prints"));
    }
    m.parser = format->name;
    m.field = field;
    if (from) {
      m.unit = from->unit;
      m.better = from->better;
    }
  } else if (n["expr"]) {  // checked against the other metrics once all are read
    auto e = c.Scalar(n["expr"], path + ".expr");
    if (!e.ok()) return e.status();
    if (e->empty()) return c.Fail(path + ".expr", "expected an expression, got \"\"");
    m.expr = *e;
  } else if (n["prometheus"]) {
    auto url = c.Scalar(n["prometheus"], path + ".prometheus");
    if (!url.ok()) return url.status();
    if (*url != "node" && *url != "dcgm") {
      // {node} is the node the run is on, filled in by the agent.
      std::string probe = *url;
      for (size_t at = probe.find("{node}"); at != std::string::npos; at = probe.find("{node}"))
        probe.replace(at, 6, "localhost");
      if (auto u = ParsePromUrl(probe); !u.ok())
        return c.Fail(path + ".prometheus",
                      u.status().message() + "; or node / dcgm for the exporter the agent knows");
    }
    m.prometheus = *url;
    if (!n["match"])
      return c.Fail(path + ".match",
                    "missing; a selector like 'DCGM_FI_DEV_GPU_UTIL{gpu=~\"0|1\"}'");
    auto sel = c.Scalar(n["match"], path + ".match");
    if (!sel.ok()) return sel.status();
    if (auto mt = PromMatcher::Parse(*sel); !mt.ok())
      return c.Fail(path + ".match", mt.status().message());
    m.match = *sel;
    m.every_ms = 5000;
    if (n["every"]) {
      auto e = c.Scalar(n["every"], path + ".every");
      if (!e.ok()) return e.status();
      auto ms = ParsePromInterval(*e);
      if (!ms.ok()) return c.Fail(path + ".every", ms.status().message());
      m.every_ms = *ms;
    }
    m.agg = "mean";
    if (n["agg"]) {
      auto a = c.Scalar(n["agg"], path + ".agg");
      if (!a.ok()) return a.status();
      if (auto g = ParsePromAgg(*a); !g.ok()) return c.Fail(path + ".agg", g.status().message());
      m.agg = *a;
    }
  } else if (n["tensorboard"]) {
    auto t = c.Scalar(n["tensorboard"], path + ".tensorboard");
    if (!t.ok()) return t.status();
    if (t->empty())
      return c.Fail(path + ".tensorboard", "expected a tag like train/loss, got \"\"");
    m.tensorboard = *t;
  } else if (n["pattern"]) {
    auto p = c.Scalar(n["pattern"], path + ".pattern");
    if (!p.ok()) return p.status();
    RE2 re(*p, RE2::Quiet);
    if (!re.ok())
      return c.Fail(path + ".pattern", "invalid RE2 regex " + Quote(*p) + ": " + re.error());
    if (re.NumberOfCapturingGroups() < 1)
      return c.Fail(path + ".pattern",
                    "needs a capture group for the value, e.g. 'loss: (?P<value>[0-9.]+)'");
    m.pattern = *p;
  } else {
    auto j = c.Scalar(n["json"], path + ".json");
    if (!j.ok()) return j.status();
    if (j->empty()) return c.Fail(path + ".json", "expected a key name, got \"\"");
    m.json_key = *j;
  }
  if (n["unit"]) {
    auto u = c.Scalar(n["unit"], path + ".unit");
    if (!u.ok()) return u.status();
    m.unit = *u;
  }
  if (!n["better"] && !from) return c.Fail(path + ".better", "missing; allowed: higher, lower");
  if (n["better"]) {  // a parser's field says which way is better unless the workload does
    auto b = c.Scalar(n["better"], path + ".better");
    if (!b.ok()) return b.status();
    if (*b == "higher")
      m.better = Better::kHigher;
    else if (*b == "lower")
      m.better = Better::kLower;
    else
      return c.Fail(path + ".better", Quote(*b) + " is not allowed; allowed: higher, lower");
  }
  if (n["role"]) {
    auto r = c.Scalar(n["role"], path + ".role");
    if (!r.ok()) return r.status();
    if (*r == "primary")
      m.role = MetricRole::kPrimary;
    else if (*r == "guardrail")
      m.role = MetricRole::kGuardrail;
    else if (*r == "observed")
      m.role = MetricRole::kObserved;
    else
      return c.Fail(path + ".role",
                    Quote(*r) + " is not allowed; allowed: primary, guardrail, observed");
  }
  if (n["min_effect"]) {
    auto v = c.Number(n["min_effect"], path + ".min_effect");
    if (!v.ok()) return v.status();
    if (*v <= 0 || *v >= 1)
      return c.Fail(path + ".min_effect",
                    Quote(n["min_effect"].Scalar()) +
                        " is out of range; allowed: a fraction in (0, 1), e.g. 0.03 for 3 %");
    m.min_effect = *v;
  }
  if (n["tolerance"]) {
    auto v = c.Number(n["tolerance"], path + ".tolerance");
    if (!v.ok()) return v.status();
    if (*v < 0 || *v >= 1)
      return c.Fail(path + ".tolerance", Quote(n["tolerance"].Scalar()) +
                                             " is out of range; allowed: a fraction in [0, 1)");
    m.tolerance = *v;
  }
  if (n["description"]) {
    auto d = c.Scalar(n["description"], path + ".description");
    if (!d.ok()) return d.status();
    m.description = *d;
  }
  return m;
}

Status CheckPlaceholders(const WorkloadSpec& s) {
  std::vector<std::string> names;
  for (const auto& p : s.params) names.push_back(p.name);
  auto check = [&](const std::string& tmpl, const std::string& field) -> Status {
    for (const auto& n : PlaceholderNames(tmpl)) {
      if (s.FindParam(n)) continue;
      std::string msg = "placeholder {" + n + "} names no parameter; declared parameters: " +
                        (names.empty() ? std::string("none") : Join(names));
      std::string near = NearestName(n, names);
      if (!near.empty()) msg += " (did you mean {" + near + "}?)";
      return Status::InvalidArgument(field + ": " + msg);
    }
    return Status::Ok();
  };
  for (size_t i = 0; i < s.command.size(); ++i)
    if (auto st = check(s.command[i], "command[" + std::to_string(i) + "]"); !st.ok()) return st;
  for (const auto& [k, v] : s.env)
    if (auto st = check(v, "env." + k); !st.ok()) return st;
  for (const auto& [k, v] : s.files)
    if (auto st = check(v, "files." + k); !st.ok()) return st;
  for (const auto& m : s.metrics)
    if (auto st = check(m.expr, "metrics." + m.name + ".expr"); !st.ok()) return st;
  return Status::Ok();
}

// Derived metrics: each expression (bound with the defaults) parses, reads only metrics of the
// workload, and no two read each other.
Status CheckDerived(const WorkloadSpec& s) {
  std::vector<std::string> names;
  for (const auto& m : s.metrics) names.push_back(m.name);
  const ParamValues defaults = DefaultParamValues(s);
  std::map<std::string, std::vector<std::string>> inputs;
  for (const auto& m : s.metrics) {
    if (m.expr.empty()) continue;
    const std::string path = "metrics." + m.name + ".expr";
    auto bound = ExpandTemplate(m.expr, defaults, path);
    if (!bound.ok()) return bound.status();
    auto e = DerivedExpr::Parse(*bound);
    if (!e.ok())
      return Status::InvalidArgument(path + ": " + e.status().message() +
                                     (*bound == m.expr ? "" : " (its {params} at their defaults)"));
    for (const auto& in : e->inputs()) {
      if (in == m.name)
        return Status::InvalidArgument(path + ": reads itself (" + in + "); a cycle");
      if (s.FindMetric(in)) continue;
      std::string msg = path + ": " + Quote(in) +
                        " is not a metric of this workload; its metrics: " + Join(names);
      std::string near = NearestName(in, names);
      if (!near.empty()) msg += " (did you mean " + near + "?)";
      return Status::InvalidArgument(msg);
    }
    inputs[m.name] = e->inputs();
  }
  if (auto order = OrderDerived(inputs); !order.ok()) return order.status();
  // A scrape's step is its count, a line's step the job's own: an expression over both would pair
  // unrelated moments. The metrics each expression reads in the end (through other expressions).
  for (const auto& [name, direct] : inputs) {
    std::string scraped, stepped;
    std::vector<std::string> todo = direct;
    std::set<std::string> seen;
    while (!todo.empty()) {
      std::string in = todo.back();
      todo.pop_back();
      if (!seen.insert(in).second) continue;
      if (auto it = inputs.find(in); it != inputs.end()) {
        todo.insert(todo.end(), it->second.begin(), it->second.end());
        continue;
      }
      (s.FindMetric(in)->prometheus.empty() ? stepped : scraped) = in;
    }
    if (!scraped.empty() && !stepped.empty())
      return Status::InvalidArgument(
          "metrics." + name + ".expr: reads " + scraped + " (scraped: its step is the scrape's " +
          "count) and " + stepped + " (its step is the job's); an expression reads metrics of " +
          "one kind, all scraped or none");
  }
  return Status::Ok();
}

Result<WorkloadSpec> ParseTree(const YAML::Node& root) {
  Checker c;
  if (!root.IsMap())
    return c.Fail("(top level)", "expected a mapping with name, command, params, metrics");
  if (auto s = c.CheckKeys(root, "",
                           {"name", "description", "command", "env", "files", "params", "coupled",
                            "metrics", "run", "profile"});
      !s.ok())
    return s;
  WorkloadSpec w;
  if (!root["name"]) return c.Fail("name", "missing; e.g. name: demo");
  auto name = c.Scalar(root["name"], "name");
  if (!name.ok()) return name.status();
  if (!ValidWorkloadName(*name))
    return c.Fail(
        "name", Quote(*name) +
                    " is not allowed; use 1-63 of a-z, 0-9, _ . - starting with a letter or digit");
  w.name = *name;
  if (root["profile"]) {
    auto p = c.Scalar(root["profile"], "profile");
    if (!p.ok()) return p.status();
    if (*p != "torch" && *p != "nsys")
      return c.Fail("profile", Quote(*p) + " is not allowed; allowed: torch, nsys");
    w.profile = *p;
  }
  if (root["description"]) {
    auto d = c.Scalar(root["description"], "description");
    if (!d.ok()) return d.status();
    w.description = *d;
  }
  const YAML::Node cmd = root["command"];
  if (!cmd)
    return c.Fail(
        "command",
        "missing; the argv to launch, e.g. [python3, train.py, --workers, \"{num_workers}\"]");
  if (cmd.IsScalar())
    return c.Fail("command", "expected a list of arguments (argv), got the text " +
                                 Quote(cmd.Scalar()) + "; write it as [prog, arg, ...]");
  if (!cmd.IsSequence() || cmd.size() == 0)
    return c.Fail("command",
                  "expected a non-empty list of arguments, got " + Checker::Describe(cmd));
  for (size_t i = 0; i < cmd.size(); ++i) {
    auto a = c.Scalar(cmd[i], "command[" + std::to_string(i) + "]");
    if (!a.ok()) return a.status();
    w.command.push_back(*a);
  }
  if (w.command[0].empty()) return c.Fail("command[0]", "the program name is empty");
  if (root["env"]) {
    auto env = c.StringMap(root["env"], "env");
    if (!env.ok()) return env.status();
    w.env = *env;
  }
  if (root["files"]) {
    auto files = c.StringMap(root["files"], "files");
    if (!files.ok()) return files.status();
    for (const auto& [path, _] : *files) {
      if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos)
        return c.Fail("files." + path,
                      "file paths are relative to the run directory and may not contain \"..\"");
    }
    w.files = *files;
  }
  if (root["params"] && !root["params"].IsNull()) {
    if (!root["params"].IsMap())
      return c.Fail("params", "expected a mapping of name: {type, default, ...}, got " +
                                  Checker::Describe(root["params"]));
    for (auto it = root["params"].begin(); it != root["params"].end(); ++it) {
      auto p = ParseParam(c, it->first.Scalar(), it->second);
      if (!p.ok()) return p.status();
      w.params.push_back(*p);
    }
  }
  if (root["coupled"] && !root["coupled"].IsNull()) {
    const YAML::Node g = root["coupled"];
    if (!g.IsSequence())
      return c.Fail(
          "coupled",
          "expected a list of parameter groups, e.g. [[micro_batch_size, grad_accum_steps]]");
    std::set<std::string> used;
    for (size_t i = 0; i < g.size(); ++i) {
      const std::string path = "coupled[" + std::to_string(i) + "]";
      if (!g[i].IsSequence() || g[i].size() < 2)
        return c.Fail(
            path, "a coupled group lists two or more parameters, got " + Checker::Describe(g[i]));
      std::vector<std::string> group;
      for (size_t j = 0; j < g[i].size(); ++j) {
        auto n = c.Scalar(g[i][j], path + "[" + std::to_string(j) + "]");
        if (!n.ok()) return n.status();
        if (!w.FindParam(*n)) return c.Fail(path, Quote(*n) + " is not a declared parameter");
        if (!used.insert(*n).second)
          return c.Fail(path, Quote(*n) + " is already in another coupled group");
        group.push_back(*n);
      }
      w.coupled.push_back(group);
    }
  }
  if (!root["metrics"] || root["metrics"].IsNull() ||
      (root["metrics"].IsMap() && root["metrics"].size() == 0))
    return c.Fail("metrics",
                  "missing; declare at least one metric, e.g. samples_per_s: {pattern: 'samples/s: "
                  "([0-9.]+)', better: higher, role: primary}");
  if (!root["metrics"].IsMap())
    return c.Fail("metrics", "expected a mapping of name: {pattern|json, better, ...}, got " +
                                 Checker::Describe(root["metrics"]));
  int primaries = 0;
  for (auto it = root["metrics"].begin(); it != root["metrics"].end(); ++it) {
    auto m = ParseMetric(c, it->first.Scalar(), it->second);
    if (!m.ok()) return m.status();
    if (m->role == MetricRole::kPrimary && ++primaries > 1)
      return c.Fail("metrics." + m->name + ".role",
                    "a second primary metric; a workload has at most one (make the others observed "
                    "or guardrail)");
    w.metrics.push_back(*m);
  }
  if (root["run"] && !root["run"].IsNull()) {
    const YAML::Node r = root["run"];
    if (!r.IsMap())
      return c.Fail("run",
                    "expected a mapping {repeats, warmup_steps, timeout, selector, skip_steps, "
                    "resources}");
    if (auto s = c.CheckKeys(
            r, "run",
            {"repeats", "warmup_steps", "timeout", "selector", "skip_steps", "resources"});
        !s.ok())
      return s;
    if (r["repeats"]) {
      auto v = c.Int(r["repeats"], "run.repeats", 1, 1000);
      if (!v.ok()) return v.status();
      w.run.repeats = static_cast<int>(*v);
    }
    if (r["warmup_steps"]) {
      auto v = c.Int(r["warmup_steps"], "run.warmup_steps", 0, 1000000000);
      if (!v.ok()) return v.status();
      w.run.warmup_steps = static_cast<int>(*v);
    }
    if (r["timeout"]) {
      auto t = c.Scalar(r["timeout"], "run.timeout");
      if (!t.ok()) return t.status();
      auto ms = ParseDurationMs(*t);
      if (!ms.ok()) return c.Fail("run.timeout", ms.status().message());
      w.run.timeout_ms = *ms;
    }
    if (r["selector"]) {
      auto sel = c.StringMap(r["selector"], "run.selector");
      if (!sel.ok()) return sel.status();
      w.run.selector = *sel;
    }
    if (r["skip_steps"]) {
      auto skip = c.StringMap(r["skip_steps"], "run.skip_steps");
      if (!skip.ok()) return skip.status();
      static const RE2 tag_re("[a-z][a-z0-9_]{0,31}");
      for (const auto& [tag, pattern] : *skip) {
        const std::string path = "run.skip_steps." + tag;
        if (!RE2::FullMatch(tag, tag_re))
          return c.Fail(path, "tag " + Quote(tag) + " must match [a-z][a-z0-9_]*, e.g. checkpoint");
        RE2 re(pattern, RE2::Quiet);
        if (!re.ok())
          return c.Fail(path, "invalid RE2 regex " + Quote(pattern) + ": " + re.error());
      }
      w.run.skip_steps = *skip;
    }
    if (const YAML::Node res = r["resources"]; res && !res.IsNull()) {
      const std::vector<std::string> keys = {"nodes", "gpus_per_node", "cpus_per_task", "mem",
                                             "time"};
      if (!res.IsMap()) return c.Fail("run.resources", "expected a mapping {" + Join(keys) + "}");
      if (auto s = c.CheckKeys(res, "run.resources", keys); !s.ok()) return s;
      Resources& out = w.run.resources;
      struct IntKey {
        const char* key;
        int* field;
        int64_t lo, hi;
      };
      for (const IntKey& k : {IntKey{"nodes", &out.nodes, 1, 4096},
                              IntKey{"gpus_per_node", &out.gpus_per_node, 0, 64},
                              IntKey{"cpus_per_task", &out.cpus_per_task, 1, 4096}}) {
        if (!res[k.key]) continue;
        auto v = c.Int(res[k.key], std::string("run.resources.") + k.key, k.lo, k.hi);
        if (!v.ok()) return v.status();
        *k.field = static_cast<int>(*v);
      }
      if (res["mem"]) {
        auto t = c.Scalar(res["mem"], "run.resources.mem");
        if (!t.ok()) return t.status();
        auto mb = ParseMemoryMb(*t);
        if (!mb.ok()) return c.Fail("run.resources.mem", mb.status().message());
        out.mem_mb = *mb;
      }
      if (res["time"]) {
        auto t = c.Scalar(res["time"], "run.resources.time");
        if (!t.ok()) return t.status();
        auto ms = ParseDurationMs(*t);
        if (!ms.ok()) return c.Fail("run.resources.time", ms.status().message());
        out.time_ms = *ms;
      }
    }
  }
  if (auto s = CheckPlaceholders(w); !s.ok()) return s;
  if (auto s = CheckDerived(w); !s.ok()) return s;
  return w;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const char* ParamTypeName(ParamType t) {
  switch (t) {
    case ParamType::kInt: return "int";
    case ParamType::kFloat: return "float";
    case ParamType::kBool: return "bool";
    case ParamType::kEnum: return "enum";
    case ParamType::kString: return "string";
  }
  return "?";
}
const char* BetterName(Better b) {
  return b == Better::kHigher ? "higher" : "lower";
}
const char* RoleName(MetricRole r) {
  switch (r) {
    case MetricRole::kPrimary: return "primary";
    case MetricRole::kGuardrail: return "guardrail";
    case MetricRole::kObserved: return "observed";
  }
  return "?";
}

const ParamSpec* WorkloadSpec::FindParam(std::string_view n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}
const MetricSpec* WorkloadSpec::PrimaryMetric() const {
  for (const auto& m : metrics)
    if (m.role == MetricRole::kPrimary) return &m;
  return metrics.empty() ? nullptr : &metrics[0];
}

const MetricSpec* WorkloadSpec::FindMetric(std::string_view n) const {
  for (const auto& m : metrics)
    if (m.name == n) return &m;
  return nullptr;
}

namespace {

// Duplicate mapping keys (yaml-cpp keeps both; a lookup sees only the first) and NUL characters
// (argv, env and PostgreSQL text cannot carry them) anywhere in the tree, named by path and line.
Status CheckTreeValues(const YAML::Node& n, const std::string& path) {
  const auto where = [&](const YAML::Node& x) {
    const std::string p = path.empty() ? std::string("the document") : path;
    return x.Mark().line >= 0 ? p + " (line " + std::to_string(x.Mark().line + 1) + ")" : p;
  };
  if (n.IsScalar()) {
    if (n.Scalar().find('\0') != std::string::npos)
      return Status::InvalidArgument(where(n) +
                                     ": contains a NUL character; not allowed in any value");
    return Status::Ok();
  }
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i)
      if (Status st = CheckTreeValues(n[i], path + "[" + std::to_string(i) + "]"); !st.ok())
        return st;
    return Status::Ok();
  }
  if (n.IsMap()) {
    std::map<std::string, int> seen;  // key → line
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      const std::string sub = path.empty() ? key : path + "." + key;
      const int line = it->first.Mark().line + 1;  // a JSON document's keys are unique already
      if (auto [at, fresh] = seen.emplace(key, line); !fresh)
        return Status::InvalidArgument(sub + ": key " + Quote(key) + " appears twice (lines " +
                                       std::to_string(at->second) + " and " + std::to_string(line) +
                                       "); keys must be unique");
      if (Status st = CheckTreeValues(it->first, sub); !st.ok()) return st;
      if (Status st = CheckTreeValues(it->second, sub); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<WorkloadSpec> ParseWorkloadSpec(std::string_view text, std::string_view source) {
  // Bounded before any parser sees it: both recurse per nesting level.
  if (Status st = CheckDocument(text, std::string(source)); !st.ok()) return st;
  YAML::Node root;
  size_t first = text.find_first_not_of(" \t\r\n");
  try {
    if (first != std::string_view::npos && text[first] == '{') {
      // Keys seen per open object: a duplicate key is refused (nlohmann keeps the last silently).
      std::vector<std::set<std::string>> keys;
      std::string duplicate;
      auto on_event = [&](int, ordered_json::parse_event_t e, ordered_json& parsed) {
        if (e == ordered_json::parse_event_t::object_start) keys.emplace_back();
        if (e == ordered_json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        if (e == ordered_json::parse_event_t::key && !keys.empty() &&
            !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        return true;
      };
      auto j = ordered_json::parse(text.begin(), text.end(), on_event, false);
      if (j.is_discarded())
        return Status::InvalidArgument(std::string(source) + ": not valid JSON");
      if (!duplicate.empty())
        return Status::InvalidArgument(std::string(source) + ": key " + Quote(duplicate) +
                                       " appears twice in one object; keys must be unique");
      root = JsonToYaml(j);
      if (Status st = CheckTreeValues(root, ""); !st.ok())
        return Status::InvalidArgument(std::string(source) + ": " + st.message());
    } else {
      root = YAML::Load(std::string(text));
      if (Status st = CheckTreeValues(root, ""); !st.ok())
        return Status::InvalidArgument(std::string(source) + ": " + st.message());
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(source) + ": YAML syntax error at line " +
                                   std::to_string(e.mark.line + 1) + ", column " +
                                   std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  try {
    auto r = ParseTree(root);
    if (!r.ok()) return Status::InvalidArgument(std::string(source) + ": " + r.status().message());
    return r;
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(source) + ": " + e.msg);
  }
}

std::string WorkloadSpecToJson(const WorkloadSpec& w) {
  ordered_json j;
  j["name"] = w.name;
  if (!w.description.empty()) j["description"] = w.description;
  j["command"] = w.command;
  if (!w.env.empty()) j["env"] = w.env;
  if (!w.files.empty()) j["files"] = w.files;
  ordered_json params = ordered_json::object();
  for (const auto& p : w.params) {
    ordered_json pj;
    pj["type"] = ParamTypeName(p.type);
    pj["default"] = p.default_value;
    if (p.min) pj["min"] = *p.min;
    if (p.max) pj["max"] = *p.max;
    if (!p.values.empty()) pj["values"] = p.values;
    if (!p.description.empty()) pj["description"] = p.description;
    params[p.name] = pj;
  }
  j["params"] = params;
  j["coupled"] = w.coupled;
  if (!w.profile.empty()) j["profile"] = w.profile;
  ordered_json metrics = ordered_json::object();
  for (const auto& m : w.metrics) {
    ordered_json mj;
    if (!m.pattern.empty()) mj["pattern"] = m.pattern;
    if (!m.json_key.empty()) mj["json"] = m.json_key;
    if (!m.parser.empty()) {
      mj["parser"] = m.parser;
      mj["field"] = m.field;
    }
    if (!m.expr.empty()) mj["expr"] = m.expr;
    if (!m.prometheus.empty()) {
      mj["prometheus"] = m.prometheus;
      mj["match"] = m.match;
      mj["every"] = std::to_string(m.every_ms) + "ms";
      mj["agg"] = m.agg;
    }
    if (!m.tensorboard.empty()) mj["tensorboard"] = m.tensorboard;
    if (!m.unit.empty()) mj["unit"] = m.unit;
    mj["better"] = BetterName(m.better);
    mj["role"] = RoleName(m.role);
    mj["min_effect"] = m.min_effect;
    mj["tolerance"] = m.tolerance;
    if (!m.description.empty()) mj["description"] = m.description;
    metrics[m.name] = mj;
  }
  j["metrics"] = metrics;
  ordered_json run;
  run["repeats"] = w.run.repeats;
  run["warmup_steps"] = w.run.warmup_steps;
  run["timeout"] = std::to_string(w.run.timeout_ms) + "ms";
  run["selector"] = w.run.selector;
  if (!w.run.skip_steps.empty()) run["skip_steps"] = w.run.skip_steps;
  if (!w.run.resources.empty()) {
    const Resources& r = w.run.resources;
    ordered_json res;
    if (r.nodes) res["nodes"] = r.nodes;
    if (r.gpus_per_node) res["gpus_per_node"] = r.gpus_per_node;
    if (r.cpus_per_task) res["cpus_per_task"] = r.cpus_per_task;
    if (r.mem_mb) res["mem"] = std::to_string(r.mem_mb) + "M";
    if (r.time_ms) res["time"] = std::to_string(r.time_ms) + "ms";
    run["resources"] = res;
  }
  j["run"] = run;
  return j.dump();
}

Result<std::string> CanonicalParamValue(const ParamSpec& p, std::string_view raw) {
  const std::string type = ParamTypeName(p.type);
  if (raw.find('\0') != std::string_view::npos)
    return Status::InvalidArgument(p.name +
                                   ": the value contains a NUL character; argv and env "
                                   "cannot carry it");
  auto range = [&]() {
    std::string lo = p.min ? FormatDouble(*p.min) : "-inf";
    std::string hi = p.max ? FormatDouble(*p.max) : "inf";
    return lo + ".." + hi;
  };
  switch (p.type) {
    case ParamType::kInt: {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
      if (ec != std::errc() || end != raw.data() + raw.size() || raw.empty())
        return Status::InvalidArgument(p.name + " is an int parameter; " + Quote(raw) +
                                       " is not an integer");
      if ((p.min && v < *p.min) || (p.max && v > *p.max))
        return Status::InvalidArgument(p.name + "=" + std::string(raw) +
                                       " is out of range; allowed " + range());
      return std::to_string(v);
    }
    case ParamType::kFloat: {
      double v = 0;
      auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
      if (ec != std::errc() || end != raw.data() + raw.size() || raw.empty() || !std::isfinite(v))
        return Status::InvalidArgument(p.name + " is a float parameter; " + Quote(raw) +
                                       " is not a number");
      if ((p.min && v < *p.min) || (p.max && v > *p.max))
        return Status::InvalidArgument(p.name + "=" + std::string(raw) +
                                       " is out of range; allowed " + range());
      return FormatDouble(v);
    }
    case ParamType::kBool: {
      std::string s(raw);
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
      if (s == "true" || s == "1" || s == "yes" || s == "on") return std::string("true");
      if (s == "false" || s == "0" || s == "no" || s == "off") return std::string("false");
      return Status::InvalidArgument(p.name + " is a bool parameter; " + Quote(raw) +
                                     " is not allowed; allowed: true, false (also 1/0, yes/no, "
                                     "on/off, any case)");
    }
    case ParamType::kEnum: {
      for (const auto& v : p.values)
        if (v == raw) return v;
      return Status::InvalidArgument(p.name + "=" + std::string(raw) +
                                     " is not allowed; allowed: " + Join(p.values));
    }
    case ParamType::kString: return std::string(raw);
  }
  return Status::Internal("unknown parameter type " + type);
}

ParamValues DefaultParamValues(const WorkloadSpec& spec) {
  ParamValues v;
  for (const auto& p : spec.params) v[p.name] = p.default_value;
  return v;
}

Result<int64_t> ParseMemoryMb(std::string_view text) {
  static const RE2 re("([0-9]{1,12})\\s*([KkMmGgTt]?)(i?[Bb]?)");
  std::string digits, unit, suffix;
  if (!RE2::FullMatch(text, re, &digits, &unit, &suffix))
    return Status::InvalidArgument("memory " + Quote(std::string(text)) +
                                   " is not a size: use a number with K, M, G or T (e.g. 64G, "
                                   "512M, 64Gi); a bare number is MiB");
  const int64_t n = std::stoll(digits);
  const char u = unit.empty() ? 'M' : static_cast<char>(std::toupper(unit[0]));
  int64_t mb = 0;
  switch (u) {
    case 'K': mb = (n + 1023) / 1024; break;
    case 'M': mb = n; break;
    case 'G': mb = n * 1024; break;
    case 'T': mb = n * 1024 * 1024; break;
  }
  if (mb <= 0 || mb > (int64_t{1} << 40))
    return Status::InvalidArgument("memory " + Quote(std::string(text)) +
                                   " must be between 1M and 1048576T");
  return mb;
}

Result<int64_t> ParseDurationMs(std::string_view text) {
  auto bad = [&]() {
    return Status::InvalidArgument(Quote(text) +
                                   " is not a duration; use e.g. 90s, 10m, 1h30m, 250ms");
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) return bad();
    int64_t n = std::stoll(std::string(text.substr(start, i - start)));
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    int64_t mult = 0;
    if (unit == "ms")
      mult = 1;
    else if (unit == "s")
      mult = 1000;
    else if (unit == "m")
      mult = 60'000;
    else if (unit == "h")
      mult = 3'600'000;
    else if (unit == "d")
      mult = 86'400'000;
    else
      return bad();
    total += n * mult;
  }
  if (total <= 0) return bad();
  return total;
}

std::string NearestName(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = EditDistance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

Status CheckSpecToApply(const WorkloadSpec& spec, std::string_view source) {
  const std::string where = std::string(source) + ": run.selector";
  if (spec.run.selector.size() > kMaxSelectorLabels)
    return Status::InvalidArgument(where + ": " + std::to_string(spec.run.selector.size()) +
                                   " labels; at most " + std::to_string(kMaxSelectorLabels) +
                                   " are allowed");
  for (const auto& [k, v] : spec.run.selector)
    if (Status st = CheckLabel(where, k, v); !st.ok()) return st;
  return Status::Ok();
}

}  // namespace tunectl

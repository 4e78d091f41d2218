#include "core/template.h"

#include <cctype>

#include "core/derived.h"

namespace tunectl {
namespace {

bool IdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Visits the template: literal text goes to `lit`, placeholder names to `ph`.
template <typename Lit, typename Ph>
void Scan(std::string_view t, Lit lit, Ph ph) {
  size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (c == '{' && i + 1 < t.size() && t[i + 1] == '{') {
      lit('{');
      i += 2;
      continue;
    }
    if (c == '}' && i + 1 < t.size() && t[i + 1] == '}') {
      lit('}');
      i += 2;
      continue;
    }
    if (c == '{' && i + 1 < t.size() && IdentStart(t[i + 1])) {
      size_t j = i + 1;
      while (j < t.size() && IdentChar(t[j])) ++j;
      if (j < t.size() && t[j] == '}') {
        ph(t.substr(i + 1, j - i - 1));
        i = j + 1;
        continue;
      }
    }
    lit(c);
    ++i;
  }
}

}  // namespace

std::vector<std::string> PlaceholderNames(std::string_view tmpl) {
  std::vector<std::string> names;
  Scan(
      tmpl, [](char) {}, [&](std::string_view n) { names.emplace_back(n); });
  return names;
}

Result<std::string> ExpandTemplate(std::string_view tmpl, const ParamValues& values,
                                   std::string_view field) {
  std::string out;
  std::string missing;
  Scan(
      tmpl, [&](char c) { out.push_back(c); },
      [&](std::string_view n) {
        auto it = values.find(std::string(n));
        if (it == values.end()) {
          if (missing.empty()) missing = std::string(n);
          return;
        }
        out += it->second;
      });
  if (!missing.empty())
    return Status::InvalidArgument(std::string(field) + ": placeholder {" + missing +
                                   "} has no value");
  return out;
}

Result<Launch> BindLaunch(const WorkloadSpec& spec, const ParamValues& values) {
  Launch l;
  for (size_t i = 0; i < spec.command.size(); ++i) {
    auto a = ExpandTemplate(spec.command[i], values, "command[" + std::to_string(i) + "]");
    if (!a.ok()) return a.status();
    l.argv.push_back(*a);
  }
  for (const auto& [k, v] : spec.env) {
    auto e = ExpandTemplate(v, values, "env." + k);
    if (!e.ok()) return e.status();
    l.env[k] = *e;
  }
  for (const auto& [k, v] : spec.files) {
    auto f = ExpandTemplate(v, values, "files." + k);
    if (!f.ok()) return f.status();
    l.files[k] = *f;
  }
  for (const auto& m : spec.metrics) {
    if (m.expr.empty()) continue;
    const std::string field = "metrics." + m.name + ".expr";
    auto e = ExpandTemplate(m.expr, values, field);
    if (!e.ok()) return e.status();
    if (auto parsed = DerivedExpr::Parse(*e); !parsed.ok())
      return Status::InvalidArgument(field + ": " + parsed.status().message());
    l.metric_exprs[m.name] = *e;
  }
  return l;
}

}  // namespace tunectl

#include "core/prometheus.h"

#include <cmath>
#include <cstdio>

namespace tunectl {
namespace {

std::string Escape(const std::string& s, bool label) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && label) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string RenderPrometheus(const std::vector<PromFamily>& families) {
  std::string out;
  for (const auto& f : families) {
    out += "# HELP " + f.name + " " + Escape(f.help, false) + "\n";
    out += "# TYPE " + f.name + " " + f.type + "\n";
    for (const auto& s : f.samples) {
      out += f.name;
      if (!s.labels.empty()) {
        out += "{";
        bool first = true;
        for (const auto& [k, v] : s.labels) {
          out += (first ? "" : ",") + k + "=\"" + Escape(v, true) + "\"";
          first = false;
        }
        out += "}";
      }
      out += " " + Value(s.value) + "\n";
    }
  }
  return out;
}

}  // namespace tunectl

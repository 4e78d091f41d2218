// Prometheus text exposition format (version 0.0.4). Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tunectl {

struct PromSample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string name;  // e.g. tunectl_regressions
  std::string help;
  std::string type = "gauge";  // gauge | counter
  std::vector<PromSample> samples;
};

// "# HELP …\n# TYPE …\nname{k=\"v\"} value\n" per family; label values escaped (\\ \" \n).
std::string RenderPrometheus(const std::vector<PromFamily>& families);

}  // namespace tunectl

// Metric extraction from job output lines: per-metric RE2 patterns (linear time, so no line can
// stall the agent) and JSON-object lines. One extractor per run; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/derived.h"
#include "core/status.h"

namespace re2 {
class RE2;
}

namespace tunectl {

class LogFormatParser;
struct FormatSample;

// A rule named "skip:<tag>" marks steps instead of measuring them (run.skip_steps): a matching
// line emits a sample of metric "skip:<tag>", value 1, at group "step" (else group 1) of the line,
// or, with no group, at the next step any metric reports.
inline constexpr std::string_view kSkipPrefix = "skip:";
inline bool IsSkipRule(std::string_view name) {
  return name.substr(0, kSkipPrefix.size()) == kSkipPrefix;
}

struct MetricRule {
  std::string name;
  std::string pattern;   // group "value" (else group 1) is the value; group "step" the step
  std::string json_key;  // instead of pattern: KEY of a JSON-object line; its "step" key the step
  std::string parser;    // instead of both: a built-in format (core/log_formats.h) …
  std::string field;     // … and its field; the step is the one the line names
  std::string expr;      // instead of all: a derived metric (core/derived.h), its {params} bound
  // Not read from lines (the agent's SideSources read them; MetricExtractor passes them over, and
  // a derived metric may read them): a Prometheus scrape …
  std::string prometheus, match;
  int64_t every_ms = 0;
  std::string agg;
  std::string tensorboard;  // … or a TensorBoard tag
};

struct ExtractedSample {
  std::string metric;
  int64_t step = 0;
  double value = 0;
};

class MetricExtractor {
 public:
  static constexpr size_t kMaxPendingSteps = 1000;
  static Result<std::unique_ptr<MetricExtractor>> Create(const std::vector<MetricRule>& rules);
  ~MetricExtractor();

  // Appends every sample found in `line` (without its newline). ANSI escape sequences are
  // removed first and a '\r' ends a line too (progress bars redraw with it). A metric without a
  // step in the line gets the next number of its own counter, starting at 1.
  // A derived metric (rule.expr) is emitted at a step once every metric it reads has a value at
  // that step (from any lines, in any order; the first value of a metric at a step counts), once
  // per step, in dependency order; no sample when the expression divides by zero or is not
  // finite. Only the last kMaxPendingSteps steps wait for their missing inputs.
  void ProcessLine(std::string_view line, std::vector<ExtractedSample>* out);
  // Samples read elsewhere ((*out)[first..], the agent's side sources) feed derived metrics too;
  // the derived samples they complete are appended.
  void Derive(size_t first, std::vector<ExtractedSample>* out) {
    if (!derived_.empty()) EmitDerived(first, out);
  }

 private:
  struct Compiled {
    MetricRule rule;
    std::unique_ptr<re2::RE2> re;
    int value_group = 1;  // 1-based
    int step_group = 0;   // 0 = none
  };
  MetricExtractor() = default;
  int64_t NextStep(const std::string& metric, const int64_t* explicit_step);
  void ProcessSegment(std::string_view line, std::vector<ExtractedSample>* out);

  struct Derived {
    std::string name;
    DerivedExpr expr;
  };
  struct PendingStep {
    std::map<std::string, double> values;  // inputs (and derived values) at this step
    std::vector<bool> tried;               // by derived_ index: evaluated once already
  };
  void EmitDerived(size_t first, std::vector<ExtractedSample>* out);

  std::vector<Compiled> rules_;
  std::vector<Derived> derived_;            // in dependency order
  std::set<std::string> feeds_;             // metrics some derived metric reads
  std::map<int64_t, PendingStep> pending_;  // by step
  bool has_json_ = false;
  std::vector<std::string> pending_skips_;  // skip rules waiting for the next reported step
  std::map<std::string, int64_t> last_step_;
  std::map<std::string, std::unique_ptr<LogFormatParser>> parsers_;  // by format
  std::vector<FormatSample> parsed_;
};

// Parses a metric value: decimal or E notation; thousands separators (1,234.5) are ignored.
bool ParseMetricValue(std::string_view text, double* out);

}  // namespace tunectl

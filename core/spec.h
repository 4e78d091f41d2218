// Workload specification: the validated, typed form of a workload file (YAML; JSON accepted).
// ParseWorkloadSpec never throws; every problem comes back as InvalidArgument naming the field
// path (e.g. "params.num_workers.max"), the value and what is allowed. Value types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

// A run.selector being applied names at most this many agent labels (CheckSpecToApply).
inline constexpr size_t kMaxSelectorLabels = 16;

enum class ParamType { kInt, kFloat, kBool, kEnum, kString };
const char* ParamTypeName(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::string default_value;  // canonical text form (see CanonicalParamValue)
  std::optional<double> min;  // int and float only
  std::optional<double> max;
  std::vector<std::string> values;  // enum only
  std::string description;
};

enum class Better { kHigher, kLower };
enum class MetricRole { kPrimary, kGuardrail, kObserved };
const char* BetterName(Better b);
const char* RoleName(MetricRole r);

struct MetricSpec {
  std::string name;
  std::string pattern;  // RE2; exactly one source
  std::string json_key;
  std::string parser;       // a built-in format (core/log_formats.h) …
  std::string field;        // … and its field (default: the metric's name)
  std::string expr;         // a derived metric (core/derived.h): other metrics, {params} unbound
  std::string prometheus;   // a scrape: URL ({node} = the run's node), or node / dcgm …
  std::string match;        // … its selector (core/prom_scrape.h) …
  int64_t every_ms = 0;     // … its interval (5000 when not set) …
  std::string agg;          // … and how matching series combine: mean (default), max, min, sum
  std::string tensorboard;  // a TensorBoard tag in event files under the run directory
  std::string unit;
  Better better = Better::kHigher;
  MetricRole role = MetricRole::kObserved;
  double min_effect = 0.05;  // smallest relative change worth acting on (0.03 = 3 %)
  double tolerance = 0.0;    // guardrails: allowed relative worsening
  std::string description;
};

// What one run asks of a cluster (run.resources): rendered as sbatch options by the Slurm executor
// and as a Kubernetes Job's requests/limits; the local executor runs on the slot it is given. 0 =
// not asked for (the cluster's default).
struct Resources {
  int nodes = 0;          // --nodes; a Job's parallelism
  int gpus_per_node = 0;  // --gres=gpu:N; nvidia.com/gpu
  int cpus_per_task = 0;  // --cpus-per-task; cpu
  int64_t mem_mb = 0;     // --mem=<N>M; memory <N>Mi (written "64G", "512M", "1T", "64Gi")
  int64_t time_ms = 0;    // --time (rounded up to a minute); 0 = run.timeout
  bool empty() const {
    return nodes == 0 && gpus_per_node == 0 && cpus_per_task == 0 && mem_mb == 0 && time_ms == 0;
  }
  bool operator==(const Resources&) const = default;
};

// "64G" / "64GB" / "64Gi" / "512M" / "1T" / "1024" (MiB) -> MiB. InvalidArgument otherwise.
Result<int64_t> ParseMemoryMb(std::string_view text);

struct RunPolicy {
  int repeats = 5;
  int warmup_steps = 0;                         // samples with step <= this are warm-up
  int64_t timeout_ms = 60LL * 60 * 1000;        // 1h
  std::map<std::string, std::string> selector;  // agent labels that must match
  // Tag -> RE2 pattern of a log line marking a step that is not representative (a checkpoint
  // save, an evaluation): that step's samples are left out of every metric's analysis. The step
  // is group "step" (else group 1); a pattern without a group marks the next step reported.
  std::map<std::string, std::string> skip_steps;
  Resources resources;
};

struct WorkloadSpec {
  std::string name;
  std::string description;
  std::vector<std::string> command;          // argv templates
  std::map<std::string, std::string> env;    // value templates
  std::map<std::string, std::string> files;  // path (relative to the run dir) -> content template
  std::vector<ParamSpec> params;             // in declaration order
  std::vector<std::vector<std::string>> coupled;
  std::vector<MetricSpec> metrics;  // in declaration order
  RunPolicy run;
  // A profiler trace the job writes into its run directory, summarised into per-step time shares
  // (core/profile_trace.h) when the run ends: "" none, "torch" (*.pt.trace.json or *trace*.json),
  // "nsys" (`nsys stats` CSV reports).
  std::string profile;

  const ParamSpec* FindParam(std::string_view name) const;
  const MetricSpec* FindMetric(std::string_view name) const;
  // The metric with role primary, else the first declared; nullptr when there are none.
  const MetricSpec* PrimaryMetric() const;
};

using ParamValues = std::map<std::string, std::string>;

// Parses and validates YAML or JSON text. `source` names the input in messages.
Result<WorkloadSpec> ParseWorkloadSpec(std::string_view text, std::string_view source = "workload");
// The rules a spec must also meet to be applied now, beyond what a stored revision is read back
// with (so a revision stored before a rule existed still loads): run.selector has at most
// kMaxSelectorLabels labels, each a valid agent label (an agent could hold no other; the bound
// keeps a queued run's selector inside the claim's index entry). InvalidArgument naming the field.
Status CheckSpecToApply(const WorkloadSpec& spec, std::string_view source = "workload");

// Canonical JSON (stable key order); ParseWorkloadSpec(ToJson(s)) == s.
std::string WorkloadSpecToJson(const WorkloadSpec& spec);

// Validates `raw` against the parameter's type and range; returns its canonical text.
Result<std::string> CanonicalParamValue(const ParamSpec& p, std::string_view raw);

// Every parameter at its default (config version 1).
ParamValues DefaultParamValues(const WorkloadSpec& spec);

// "10m", "1h30m", "45s", "250ms" -> milliseconds.
Result<int64_t> ParseDurationMs(std::string_view text);

// The declared name closest to `name` by edit distance, or "" when nothing is close.
std::string NearestName(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace tunectl

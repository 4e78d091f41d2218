// LaunchRecord: what a run executes, resolved when it is queued (argv, env, files, the metric
// rules, warm-up, timeout) and stored with the run, so what ran stays on record even when the
// workload changes later. One codec: the store writes it, the dispatcher sends it, the run's
// analysis reads it. Value type; pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/metrics.h"
#include "core/spec.h"
#include "core/status.h"
#include "core/template.h"

namespace tunectl {

struct LaunchMetric {
  std::string name, pattern, json_key;
  Better better = Better::kHigher;
  MetricRole role = MetricRole::kObserved;
  std::string parser, field;  // a built-in format and its field (instead of pattern / json)
  std::string expr;           // a derived metric: its expression, {params} bound (instead of all)
  std::string prometheus, match;  // a scrape (core/prom_scrape.h): URL or node/dcgm, selector …
  int64_t every_ms = 0;           // … interval …
  std::string agg;                // … and aggregation over the matching series
  std::string tensorboard;        // a TensorBoard tag read from the run directory's event files
  bool operator==(const LaunchMetric&) const = default;
  // Why a run has no sample of this metric, naming its source: "no sample: no line of the
  // megatron format had the field tflops_per_gpu"; for a derived metric, the inputs that never
  // had values at one step.
  std::string NoSampleReason() const;
  // Where its values come from, in a line: "parser megatron, field tflops_per_gpu",
  // "prometheus http://…/metrics, DCGM_FI_DEV_GPU_UTIL, every 5000 ms, mean", "tensorboard
  // train/loss", "expr …", "pattern '…'", "json key \"loss\"".
  std::string SourceText() const;
};

struct LaunchRecord {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  std::vector<LaunchMetric> metrics;              // in the workload's order
  std::map<std::string, std::string> skip_steps;  // tag -> pattern (run.skip_steps)
  int64_t timeout_ms = 0;
  int warmup_steps = 0;
  std::string profile;      // the workload's profile: "", torch, nsys
  int64_t duration_ms = 0;  // stability run: stopped at this age and counted as succeeded
  Resources resources;      // run.resources when the run was queued

  // The agent's extraction rules: every metric, then one "skip:<tag>" rule per skip pattern.
  std::vector<MetricRule> Rules() const;
  Better BetterOf(std::string_view metric) const;  // kHigher for an unknown metric
  // A metric's source (LaunchMetric::SourceText); a profile_* metric's is the profiler's;
  // "" for a metric the record does not name.
  std::string SourceOf(std::string_view metric) const;
  bool operator==(const LaunchRecord&) const = default;
};

// The record of `launch` (bound from `spec`) for an ordinary run.
LaunchRecord MakeLaunchRecord(const WorkloadSpec& spec, const Launch& launch);
// A stability run: stopped by the agent at `duration_s`; the timeout only catches a job that
// ignores the stop (five minutes later).
LaunchRecord AsStabilityRun(LaunchRecord r, int64_t duration_s);

std::string LaunchRecordToJson(const LaunchRecord& r);
// Reads what LaunchRecordToJson wrote (and records written before duration_ms/skip_steps
// existed). InvalidArgument naming the field when the text is not a launch record.
Result<LaunchRecord> LaunchRecordFromJson(std::string_view text);

}  // namespace tunectl

// SideSources: a run's metrics that are not in its output lines — Prometheus exporters scraped on
// their own interval (`prometheus:` metrics, core/prom_scrape.h) and TensorBoard event files the
// job writes under its run directory (`tensorboard:` metrics, core/tfevents.h). Polled by the
// thread that reads the run's output (RunOutput::Tick); what went wrong with a source is kept per
// metric for the run's finish (Notes). Not thread-safe; one per run.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/http_get.h"
#include "core/metrics.h"
#include "core/profile_trace.h"
#include "core/prom_scrape.h"
#include "core/status.h"
#include "core/tfevents.h"

namespace tunectl {

struct SideSourceOptions {
  std::string run_dir;                           // searched for event files, 4 levels deep
  std::string node = "127.0.0.1";                // replaces {node} in a scrape URL
  std::map<std::string, std::string> exporters;  // "node"/"dcgm" -> URL (the agent's flags)
  int tfevents_poll_ms = 1000;                   // how often the run directory is listed
  int scrape_timeout_ms = 2000;                  // at most; also at most the metric's interval
  // The workload's `profile:` ("", torch, nsys): at the run's end the trace in run_dir is
  // summarised into samples profile_<share> per step (ProfileSamples).
  std::string profile;
};

// The samples a trace summary gives: per step (a pseudo-step or nsys' totals are step 1)
// profile_step_ms, profile_kernel_pct, profile_comm_pct, profile_memcpy_pct, profile_idle_pct,
// profile_comm_overlap_pct, profile_dataloader_pct, profile_cpu_op_pct (those the trace has);
// nsys adds profile_kernel_ms, profile_comm_ms, profile_memcpy_ms.
std::vector<ExtractedSample> ProfileSamples(const TraceSummary& s);

class SideSources {
 public:
  using SteadyClock = std::chrono::steady_clock;
  // Only the rules with `prometheus` or `tensorboard` set are taken. InvalidArgument naming the
  // metric when a selector, aggregation, interval or URL does not parse. `http` is not owned and
  // must outlive this.
  static Result<std::unique_ptr<SideSources>> Create(const std::vector<MetricRule>& rules,
                                                     SideSourceOptions opts, HttpGetter* http);
  bool empty() const { return scrapes_.empty() && tags_.empty() && opts_.profile.empty(); }

  // Scrapes whatever is due at `now` and reads what the event files gained; appends samples.
  // `final`: the run has ended: the event files are read to their end, the profiler trace (if
  // the workload declares one) is summarised, nothing is scraped. Call it once.
  void Poll(SteadyClock::time_point now, bool final, std::vector<ExtractedSample>* out);

  // After an agent restart: each scrape's steps go on after `sent[metric]` (the next is one more).
  void ContinueSteps(const std::map<std::string, int64_t>& sent);

  // Per metric, what its source went through when something went wrong ("3 of 12 scrapes of
  // http://…: connection refused"; "an event file at byte 120: data CRC …").
  std::map<std::string, std::string> Notes() const;

 private:
  struct Scrape {
    std::string metric, url;
    int64_t every_ms = 0;
    PromSampler sampler;
    SteadyClock::time_point next{};
    int64_t step = 0, tried = 0, failed = 0, empty = 0, got = 0;
    std::string last_error, last_empty;
  };
  struct EventFile {
    TfEventsReader reader;
    uint64_t offset = 0;
    bool failed = false;
  };
  SideSources() = default;
  void ReadEventFiles(std::vector<ExtractedSample>* out);
  void ReadProfile(std::vector<ExtractedSample>* out);

  SideSourceOptions opts_;
  HttpGetter* http_ = nullptr;
  std::vector<Scrape> scrapes_;
  std::map<std::string, std::vector<std::string>> tags_;  // tag -> metrics
  std::map<std::string, EventFile> files_;                // by path
  std::map<std::string, std::string> file_errors_;        // path -> what failed
  std::string profile_note_;                              // what the profile summary went through
  SteadyClock::time_point next_listing_{};
};

}  // namespace tunectl

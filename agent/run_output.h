// RunOutput: a run's output lines -> metric samples (the run's rules) -> MetricBatch messages,
// batched by count and age, numbered 1, 2, 3 … per attempt; plus the line count and the last lines
// of stderr. Every executor feeds its job's lines through one. Not thread-safe: one per run, used
// by the thread that reads the run's output.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/side_sources.h"
#include "core/metrics.h"
#include "core/status.h"
#include "sys/process.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

class RunOutput {
 public:
  // Called with each complete batch and the number of output lines it covers (batches end at a
  // line's end, so a job's output read again from the start gives the same samples and lines).
  using Emit = std::function<void(const v1::MetricBatch& batch, int64_t covered_lines)>;

  // InvalidArgument when one of the assignment's metric rules does not compile.
  static Result<std::unique_ptr<RunOutput>> Create(const v1::Assign& a, int batch_max_samples,
                                                   int batch_max_ms, Emit emit);

  // The output is being read again from its first line after a restart: lines 1..`sent_lines`
  // were already sent, in batches 1..`sent_seq`; their samples are not sent again. Likewise the
  // side sources' samples at steps up to `side_steps[metric]` (event files are read again from
  // their start; scrapes count their steps on from there).
  void ResumeAfter(int64_t sent_seq, int64_t sent_lines,
                   const std::map<std::string, int64_t>& side_steps = {});
  // One line, without its newline. `log` (may be null) gets it prefixed "O " or "E ".
  void Line(Stream s, std::string_view line, std::ostream* log = nullptr);
  // The assignment's metrics read beside the lines (scrapes, event files), polled by Tick from
  // now on. InvalidArgument naming the metric whose source does not parse. `http` not owned.
  Status ReadSideSources(const v1::Assign& a, SideSourceOptions opts, HttpGetter* http);
  void Tick();    // polls the side sources; sends the open batch once its oldest sample is
                  // batch_max_ms old
  void Flush();   // sends the open batch now
  void Finish();  // the job has ended: the side sources read to their end, then Flush
  // Per metric, what went wrong with a side source (RunFinished.metric_notes).
  std::map<std::string, std::string> Notes() const;

  int64_t seq() const { return seq_; }
  // Per metric read beside the lines, the highest step sent in a batch so far.
  const std::map<std::string, int64_t>& side_steps() const { return side_sent_; }
  int64_t lines() const { return lines_; }
  std::string StderrTail() const;  // the last 20 stderr lines, at most 4 KiB

 private:
  RunOutput() = default;
  using SteadyClock = std::chrono::steady_clock;

  int64_t run_id_ = 0;
  int attempt_ = 0;
  int batch_max_samples_ = 500;
  int batch_max_ms_ = 1000;
  Emit emit_;
  void AddSideSamples(bool final);
  void AddFound(int64_t line_no);  // found_ into the open batch; flushes a full one
  std::unique_ptr<MetricExtractor> extractor_;
  std::unique_ptr<SideSources> sides_;
  std::vector<ExtractedSample> found_;
  v1::MetricBatch batch_;
  SteadyClock::time_point batch_started_{};
  int64_t seq_ = 0, lines_ = 0, skip_through_ = 0;
  std::deque<std::string> stderr_tail_;
  std::map<std::string, int64_t> side_sent_, side_resume_;
};

}  // namespace tunectl

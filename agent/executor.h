// Executes one assigned run to completion on the calling thread: writes the generated files into
// the run directory, launches the job as a real process (own process group), reads stdout and
// stderr line by line, extracts metrics, batches them by count and time, and enforces timeout and
// cancellation (SIGTERM to the group, SIGKILL after a grace period).
#pragma once

#include <atomic>
#include <string>

#include "sys/process.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

struct ExecutorOptions {
  std::string workdir;          // the job's working directory ("" = the agent's)
  std::string runs_dir;         // run directories <runs_dir>/<run>-<attempt> (files, output.log)
  int batch_max_samples = 500;  // a batch is sent when it has this many samples …
  int batch_max_ms = 1000;      // … or when its oldest sample is this old
  int kill_grace_ms = 5000;     // SIGTERM -> SIGKILL
  int linger_ms = 2000;         // after the main process exits, how long to drain its pipes
  // Every job gets TUNECTL_JOB=<this><run>-<attempt>| in its environment, so that its whole
  // tree (setsid and daemonised children too) can be found and stopped; "" = "<runs_dir>|".
  std::string job_tag = "";
};

// The environment entry that marks a job's processes, and the prefix every job of an executor
// with these options carries (an agent stops its earlier life's jobs with it).
std::string JobTagEntry(const ExecutorOptions& o, int64_t run_id, int attempt);
std::string JobTagPrefix(const ExecutorOptions& o);

// Receives what an executing run produces, in order. Called from the executor's thread.
class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual void OnStarted(const v1::RunStarted& m) = 0;
  virtual void OnBatch(const v1::MetricBatch& m) = 0;
  virtual void OnFinished(const v1::RunFinished& m) = 0;
  // Processes of the run still alive after its job ended (daemonised, setsid), now killed.
  virtual void OnLeftovers(int64_t /*run_id*/, int /*processes*/) {}
};

class Executor {
 public:
  Executor(ProcessLauncher* launcher, ExecutorOptions opts)
      : launcher_(launcher), opts_(std::move(opts)) {}
  // Returns when the run has finished and OnFinished was called. `cancel` may be set from
  // another thread at any time.
  void Run(const v1::Assign& a, const std::atomic<bool>& cancel, RunSink& sink);

 private:
  ProcessLauncher* launcher_;
  ExecutorOptions opts_;
};

}  // namespace tunectl

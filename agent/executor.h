// Executors: what starts a run, where its output is read from, how it is stopped and what its end
// means. `Executor` is the interface the agent drives (one call per run, each on its own thread);
// `LocalExecutor` runs the job as a child process of the agent; the cluster executors
// (agent/slurm_executor.h, agent/kube_executor.h) implement the same interface.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "agent/http_get.h"
#include "agent/side_sources.h"
#include "core/spec.h"
#include "core/status.h"
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
  // What `prometheus: node` and `prometheus: dcgm` scrape ({node}: the node the run is on), from
  // --node-exporter and --dcgm-exporter.
  std::map<std::string, std::string> exporters = {{"node", "http://{node}:9100/metrics"},
                                                  {"dcgm", "http://{node}:9400/metrics"}};
  HttpGetter* http = nullptr;  // scrapes go through it; null: a PosixHttpGetter (not owned)
};

// The side sources of a run in `run_dir` on `node`, with these options.
SideSourceOptions SideSourcesFor(const ExecutorOptions& o, const std::string& run_dir,
                                 const std::string& node);

// <runs_dir>/<run>-<attempt>: the run directory of one attempt.
std::string RunDirOf(const ExecutorOptions& o, int64_t run_id, int attempt);
// Creates the run directory and writes the assignment's generated files into it. The error is the
// node's (no room, no permission), not the job's.
Status PrepareRunDir(const std::string& run_dir, const v1::Assign& a);

// run.resources as the assignment carries them.
Resources ResourcesOf(const v1::Assign& a);

// The environment entry that marks a job's processes, and the prefix every job of an executor
// with these options carries (an agent stops its earlier life's jobs with it).
std::string JobTagEntry(const ExecutorOptions& o, int64_t run_id, int attempt);
std::string JobTagPrefix(const ExecutorOptions& o);
// The job tag of an agent named `name` with runs in `runs_dir`: stable across its restarts.
std::string DefaultJobTag(const std::string& name, const std::string& runs_dir);

// Receives what an executing run produces, in order. Called from the executor's thread.
class RunSink {
 public:
  virtual ~RunSink() = default;
  // The cluster accepted the run but it does not run yet (a Slurm job pending), and why.
  virtual void OnPending(const v1::RunPending& /*m*/) {}
  virtual void OnStarted(const v1::RunStarted& m) = 0;
  virtual void OnBatch(const v1::MetricBatch& m) = 0;
  virtual void OnFinished(const v1::RunFinished& m) = 0;
  // Processes of the run still alive after its job ended (daemonised, setsid), now killed.
  virtual void OnLeftovers(int64_t /*run_id*/, int /*processes*/) {}
};

// What the agent gives one run of a local executor: a slot and the devices it owns.
struct SlotGrant {
  int index = -1;    // 0-based slot; the job gets TUNECTL_SLOT; -1 = none (cluster executors)
  std::string gpus;  // "0,1": the job's CUDA_VISIBLE_DEVICES; "" = left as the agent's
  std::string cpus;  // "0-3": the job is pinned to these CPUs (taskset); "" = not pinned
};

// Set from other threads while a run executes.
struct RunControl {
  std::atomic<bool> cancel{false};  // the server cancelled it (or its timeout): stop the job
  // The agent is stopping: a job the cluster keeps on its own (a Slurm job) is left running, to
  // be adopted again by the next agent process; a local job is stopped (it cannot outlive us).
  std::atomic<bool> detach{false};
};

// Thread-safe: Run is called concurrently for different runs.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* Kind() const = 0;  // "local", "slurm", "kubernetes"
  // Runs `a` to its end and calls sink.OnFinished, unless detached first (then it returns
  // without OnFinished, the job left to the cluster).
  // `slot` is the agent's slot for the run; an executor whose jobs run elsewhere ignores it.
  virtual void Run(const v1::Assign& a, const SlotGrant& slot, const RunControl& ctl,
                   RunSink& sink) = 0;
  // Runs an earlier process of this agent left to the cluster (detached, not finished), read back
  // from the runs directory when the agent starts. The agent reports them as active in its first
  // Hello and passes each to Run again, which then follows its job instead of starting a new one.
  virtual std::vector<v1::Assign> Adoptable() { return {}; }
  // Whether a run's infra_failure says this agent's own node is unfit (local: yes, so no new work
  // lands here for a while). A cluster executor's infra failures are the cluster's nodes', not the
  // agent's: it stays open for the retry.
  virtual bool InfraFailureMarksAgent() const { return true; }
};

// A job as a child process of the agent: writes the generated files into the run directory,
// launches the job (own process group, in its slot: TUNECTL_SLOT, CUDA_VISIBLE_DEVICES, CPU set),
// reads stdout and stderr line by line, extracts metrics, batches them by count and time, and
// enforces timeout and cancellation (SIGTERM to the group, SIGKILL after a grace period).
class LocalExecutor : public Executor {
 public:
  LocalExecutor(ProcessLauncher* launcher, ExecutorOptions opts)
      : launcher_(launcher), opts_(std::move(opts)) {}
  const char* Kind() const override { return "local"; }
  void Run(const v1::Assign& a, const SlotGrant& slot, const RunControl& ctl,
           RunSink& sink) override;

 private:
  ProcessLauncher* launcher_;
  ExecutorOptions opts_;
  PosixHttpGetter http_;
};

// "0,1,2,3" or "0-3,8" -> the list of ids, in order. InvalidArgument naming `flag` otherwise.
Result<std::vector<int>> ParseIdList(const std::string& flag, const std::string& text);
// Splits `ids` into `slots` equal, contiguous groups ("0,1" "2,3"); InvalidArgument when they do
// not divide evenly (a slot with fewer GPUs than another would not be a fair comparison).
Result<std::vector<std::string>> SplitAmongSlots(const std::string& flag,
                                                 const std::vector<int>& ids, int slots);

}  // namespace tunectl

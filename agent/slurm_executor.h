// The Slurm executor: each run (one attempt) becomes a batch job submitted from the node the agent
// runs on (a login node). The agent writes the run directory (the generated files, the script, the
// Assign), submits the job held, records its id, then releases it; it follows the job's state
// (squeue, then scontrol, then the job-completion log, then sacct), reads the job's output file as
// it grows for metrics, and reports pending reasons, the start (nodes, job id), the batches and the
// end. The run directory must be on a file system the compute nodes share with the agent.
//
// A job outlives its agent: on a detach (the agent stops) the job is left running; the next agent
// process finds it in the runs directory (Adoptable) and follows it again from the last batch it
// handed over. What the end means is core's rule (ClassifySlurmEnd); a job Slurm requeues (node
// failure, preemption, `scontrol requeue`) is stopped and reported as the cluster's failure, so
// the server retries it as a new attempt instead of mixing two executions in one.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/executor.h"
#include "core/slurm.h"
#include "sys/process.h"

namespace tunectl {

// Slurm's commands. One real implementation (SlurmCli); tests use fakes that record the calls.
// Thread-safe: called from every run's thread.
class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  // sbatch --parsable --hold <script>: the job id. Unavailable when the controller did not answer
  // (worth retrying), InvalidArgument with sbatch's words when it refused the job.
  virtual Result<std::string> SubmitHeld(const std::string& script_path) = 0;
  virtual Status Release(const std::string& job_id) = 0;  // scontrol release
  // What Slurm knows of the job: squeue, then scontrol show job, then the job-completion log,
  // then sacct. nullopt when no source knows it; Unavailable when the controller did not answer.
  virtual Result<std::optional<SlurmJobInfo>> Query(const std::string& job_id) = 0;
  // scancel ID, or with `signal` ("TERM") scancel --signal=TERM --full ID (the job goes on).
  virtual Status Cancel(const std::string& job_id, const std::string& signal = "") = 0;
};

// The commands as child processes (sbatch, scontrol, squeue, scancel, sacct from PATH or
// `bin_dir`), each with a timeout. `launcher` is not owned.
class SlurmCli : public SlurmClient {
 public:
  explicit SlurmCli(ProcessLauncher* launcher, std::string bin_dir = "",
                    int command_timeout_ms = 30000)
      : launcher_(launcher), bin_dir_(std::move(bin_dir)), timeout_ms_(command_timeout_ms) {}
  Result<std::string> SubmitHeld(const std::string& script_path) override;
  Status Release(const std::string& job_id) override;
  Result<std::optional<SlurmJobInfo>> Query(const std::string& job_id) override;
  Status Cancel(const std::string& job_id, const std::string& signal) override;

 private:
  Result<CommandResult> Command(std::vector<std::string> argv);
  std::string JobcompLog();  // JobCompLoc when JobCompType is jobcomp/filetxt; "" otherwise

  ProcessLauncher* launcher_;
  std::string bin_dir_;
  int timeout_ms_;
  std::mutex mu_;
  std::optional<std::string> jobcomp_;  // asked once
  bool sacct_works_ = true;             // false after "accounting storage is disabled"
};

struct SlurmExecutorOptions {
  SlurmOptions slurm;           // partition, account, qos, exclusive, extra sbatch options
  int poll_ms = 1000;           // the job's state is asked for this often
  int tail_ms = 200;            // its output file is read this often
  int submit_tries = 3;         // sbatch tries while the controller does not answer
  int retry_ms = 2000;          // between them (doubling)
  int vanished_ms = 120000;     // a job no source knows of for this long: lost (the cluster's)
  int stop_wait_ms = 60000;     // after scancel, how long to wait for the job to end
  bool pin_experiments = true;  // an experiment's runs go to the nodes its first run ran on
};

class SlurmExecutor : public Executor {
 public:
  // `client` is not owned and outlives the executor.
  SlurmExecutor(SlurmClient* client, ExecutorOptions opts, SlurmExecutorOptions sopts)
      : client_(client), opts_(std::move(opts)), sopts_(std::move(sopts)) {}
  const char* Kind() const override { return "slurm"; }
  void Run(const v1::Assign& a, const SlotGrant& slot, const RunControl& ctl,
           RunSink& sink) override;
  std::vector<v1::Assign> Adoptable() override;
  bool InfraFailureMarksAgent() const override { return false; }

 private:
  // scancel, tried again while the controller does not answer.
  Status CancelJob(const std::string& job_id);
  // The nodes an experiment's first run ran on ("" = none yet); kept in <runs_dir>/.slurm-nodes.
  std::string PinnedNodes(int64_t experiment_id);
  void Pin(int64_t experiment_id, const std::string& nodes);

  SlurmClient* client_;
  ExecutorOptions opts_;
  SlurmExecutorOptions sopts_;
  PosixHttpGetter http_;
  std::mutex mu_;  // guards the pins' files
};

}  // namespace tunectl

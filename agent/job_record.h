// JobRecord: what a cluster executor keeps in a run's directory so that its job can outlive the
// agent — the Assign, the cluster's id of the job (a Slurm job id, a Kubernetes Job name), the
// last batch handed over with the output lines it covers, and whether the run's end was reported.
// A restarted agent reads these back (FindAdoptable) and follows the job again from there. Files
// are replaced atomically; one JobRecord per run, used by that run's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/executor.h"
#include "agent/run_output.h"
#include "core/status.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

class JobRecord {
 public:
  // `id_file`: the file name of the job's id in the run directory ("slurm-job", "kube-job").
  JobRecord(std::string run_dir, std::string id_file)
      : dir_(std::move(run_dir)), id_file_(std::move(id_file)) {}

  // The run was handed to the cluster (its id is on record) / its end was reported.
  bool Submitted() const;
  bool Finished() const;
  Status SaveAssign(const v1::Assign& a) const;
  // Written before the job may start, so an agent that dies at any moment still finds it.
  Status SaveId(const std::string& id) const;
  std::string Id() const;  // "" when there is none

  // Called with each batch before it is handed over: an agent killed in between sends it again
  // (the server keeps one copy per sequence number).
  // `side_steps`: per metric read beside the lines, the highest step sent (RunOutput::side_steps).
  Status SaveProgress(const v1::MetricBatch& batch, int64_t covered_lines,
                      const std::map<std::string, int64_t>& side_steps = {}) const;
  struct Progress {
    int64_t seq = 0;    // the last batch handed over (0 = none)
    int64_t lines = 0;  // output lines it covers
    std::map<std::string, int64_t> side_steps;
    std::optional<v1::MetricBatch> last;
  };
  Progress LoadProgress() const;
  void MarkFinished(const std::string& why) const;

  // When the job was first seen running: Slurm's StartTime (an execution's identity: a requeued
  // job starts again with another) and this host's clock then (its age after an adoption).
  struct Start {
    std::string slurm_start;  // "" = not seen running
    std::chrono::system_clock::time_point seen_at{};
  };
  void SaveStart(const std::string& slurm_start) const;
  Start LoadStart() const;

 private:
  std::string dir_, id_file_;
};

// The reporting side of one cluster run: its RunOutput, each batch recorded (JobRecord) before
// it goes to the sink, and the RunFinished that ends it. Used by the run's thread only; `record`
// and `sink` outlive it.
class JobReport {
 public:
  JobReport(const v1::Assign& a, const ExecutorOptions& opts, const JobRecord& record,
            RunSink& sink);
  // False when the run's metric rules do not compile (status() says which): Finish it at once.
  bool ok() const { return output_ != nullptr; }
  const Status& status() const { return status_; }
  RunOutput& output() { return *output_; }
  // An adopted run: the last batch handed over is sent again (the earlier agent may have died
  // before it left), and the output, read again from its first line, skips what it covered.
  void Resume();
  // The job waits in the cluster for `reason` (sent when the job or the reason changes).
  void Pending(const std::string& external_id, const std::string& reason);
  // The job runs (slot -1: a cluster's job holds no agent slot).
  void Started(const std::string& node, const std::string& external_id,
               const std::string& placement);
  // The RunFinished being made: set signal, infra_failure, duration_reached on it before Finish.
  v1::RunFinished& fin() { return fin_; }
  // Ends the run: the open batch is sent, then RunFinished with the line count and the output's
  // last lines, and the record says finished.
  // `job_over` false: the job may still exist (it did not end after a stop), so the record is
  // kept open and a restarted agent finds it again.
  void Finish(const std::string& reason, int exit_code, bool job_over = true);
  // The cluster's failure, not the run's: the server retries it as a new attempt.
  void Fail(const std::string& reason, bool job_over = true);
  // False once a batch's progress could not be recorded: the executor must stop the job (an
  // adoption would resume from a stale point and lose or double samples).
  bool record_ok() const { return record_error_.empty(); }
  const std::string& record_error() const { return record_error_; }

 private:
  const JobRecord& record_;
  RunSink& sink_;
  Status status_;
  std::unique_ptr<RunOutput> output_;
  v1::RunFinished fin_;
  int64_t batches_ = 0;
  std::string last_pending_;
  std::string record_error_;
};

// The runs an earlier agent process left to the cluster: per run, the newest attempt with an id
// and no reported end; and older unfinished attempts of the same runs, whose jobs the executor
// stops and then marks finished (MarkFinished("superseded")).
struct Adoption {
  std::vector<v1::Assign> runs;
  struct Superseded {
    std::string run_dir, id;
  };
  std::vector<Superseded> superseded;
};
Adoption FindAdoptable(const ExecutorOptions& opts, const std::string& id_file);

}  // namespace tunectl

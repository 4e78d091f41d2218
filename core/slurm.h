// Slurm, as pure functions over text: the sbatch script of one run, what squeue, scontrol, the
// job-completion log and sacct say about a job, and what a job's end means for its run. The Slurm
// executor (agent/slurm_executor.h) runs the commands and calls these; nothing here runs anything.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec.h"
#include "core/status.h"
#include "core/text.h"  // ShellQuote

namespace tunectl {

// How the agent submits (tunectl-agent --executor slurm flags).
struct SlurmOptions {
  std::string partition;   // --partition; "" = the cluster's default partition
  std::string account;     // --account; "" = the user's default account
  std::string qos;         // --qos; "" = the association's default
  bool exclusive = false;  // --exclusive: a job has its nodes to itself
  std::vector<std::string>
      extra;  // further sbatch options, one per #SBATCH line ("--constraint=a100")
};

// One run (one attempt) as a batch job.
struct SbatchJob {
  int64_t run_id = 0;
  int attempt = 0;
  std::string workload;                    // in the job name and comment
  std::vector<std::string> argv;           // what runs (non-empty)
  std::map<std::string, std::string> env;  // exported before argv runs (the run's env, TUNECTL_*)
  std::string workdir;                     // --chdir; "" = sbatch's default (the submit dir)
  std::string run_dir;                     // --output=<run_dir>/output.log (stdout and stderr)
  Resources resources;                     // run.resources
  int64_t timeout_ms = 0;  // run.timeout: --time is this plus a minute when resources.time_ms is 0
  std::string nodelist;    // --nodelist (keep a control/variant pair on one node); "" = anywhere
};

// The script: "#!/bin/bash", one "#SBATCH" line per option (--job-name=tunectl-<run>-<attempt>,
// --comment="tunectl workload=<w> run=<r> attempt=<a>", --output=<run_dir>/output.log and no
// --error, so stdout and stderr are one file in the order the job wrote them, --open-mode=append
// (Slurm's default truncates the file when a requeued job starts again, under the agent's tail),
// --chdir, --partition/--account/--qos/--exclusive, --nodes, --gres=gpu:N, --cpus-per-task,
// --mem=<N>M, --time, --nodelist, then opts.extra in order), the environment as `export K='v'`
// lines, then `exec argv` on one node, or, when resources.nodes > 1, `exec srun --nodes=N
// --ntasks=N --ntasks-per-node=1 [--cpus-per-task=C] -- argv` (one task per node; srun 22.05 does
// not inherit --cpus-per-task from the batch job). Env values and argv are shell-quoted
// (ShellQuote). sbatch reads #SBATCH lines with its own parser, not the shell's: a value is
// written bare unless it holds whitespace, a quote, a backslash or '#' (a comment there), else in
// double quotes with '\' and '"' escaped; a '%' in the output path is written "%%" (sbatch expands
// %j, %x, …). InvalidArgument naming the field when a value cannot be written: a line break or NUL
// in an #SBATCH value (run_dir, workdir, workload, slurm.partition, …, slurm.extra[i]), an extra
// that is not an option ("-…"), an env name that is not a shell name, a NUL in an env value or
// argv (line breaks there are fine), an empty argv or argv[0], an empty run_dir, a negative
// resource.
Result<std::string> RenderSbatch(const SbatchJob& job, const SlurmOptions& opts);

// A duration for --time, rounded up to a whole minute: "D-HH:MM:SS" (90 s -> "0-00:02:00",
// 25 h -> "1-01:00:00"). At least one minute: 0 ms (or less) -> "0-00:01:00", because Slurm reads
// a limit of zero as no limit at all.
std::string FormatSlurmTime(int64_t ms);

// One job as Slurm reports it. Fields a source does not give keep their defaults.
struct SlurmJobInfo {
  std::string id;
  // JobState without decorations ("CANCELLED by 0" -> "CANCELLED"): PENDING, CONFIGURING,
  // RUNNING, COMPLETING, SUSPENDED, REQUEUED, REQUEUE_HOLD, COMPLETED, FAILED, CANCELLED, TIMEOUT,
  // OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE, …
  std::string state;
  std::string reason;  // Slurm's reason (Priority, Resources, BeginTime, None, …); "" if none
  std::string nodes;   // NodeList; "" when none yet ("(null)", "None assigned")
  // As printed; "" when unknown ("Unknown", "N/A", "None"). For a pending job it may be the
  // expected start: a requeued job shows its BeginTime (about two minutes after the requeue).
  std::string start_time;
  int restarts = 0;  // Restarts= (scontrol); 0 where the source does not say
  // The source reported an exit code. jobcomp/filetxt writes ExitCode=0:0 for a cancelled or
  // timed-out job where scontrol says 0:15.
  bool has_exit = false;
  int exit_code = 0;  // ExitCode=X:Y -> X …
  int signal = 0;     // … and Y
};

// The squeue format the executor asks for: squeue -h -t all -j ID -o kSqueueFormat.
inline constexpr const char* kSqueueFormat = "%i|%T|%r|%N|%S";
// The job `job_id` in squeue's output (other lines ignored); nullopt when it is not listed.
// InvalidArgument quoting the line when a line does not have the five fields.
Result<std::optional<SlurmJobInfo>> ParseSqueue(std::string_view out, std::string_view job_id);
// `scontrol show job -o ID` (one line of Key=Value; values may hold spaces, e.g. Command=, and
// '=', e.g. TRES=cpu=1,node=1). nullopt for "slurm_load_jobs error: Invalid job id specified".
Result<std::optional<SlurmJobInfo>> ParseScontrolJob(std::string_view out, std::string_view job_id);
// jobcomp/filetxt's log (one line per ended job, "JobId=2 UserId=… JobState=… ExitCode=0:0 …"):
// the last line for `job_id`, or nullopt. A requeue writes a line too, with JobState=PENDING.
std::optional<SlurmJobInfo> ParseJobcomp(std::string_view log, std::string_view job_id);
// sacct -n -P -X -j ID -o JobID,State,ExitCode,NodeList,Reason,Start ("|"-separated);
// nullopt when the job is not listed.
inline constexpr const char* kSacctFields = "JobID,State,ExitCode,NodeList,Reason,Start";
Result<std::optional<SlurmJobInfo>> ParseSacct(std::string_view out, std::string_view job_id);
// sbatch --parsable: "123" or "123;cluster" -> "123"; InvalidArgument quoting anything else.
Result<std::string> ParseSbatchJobId(std::string_view out);
// `scontrol show config`: the value of `key` ("JobCompType", "JobCompLoc"), trimmed; nullopt when
// the key is absent or its value is "(null)" or empty.
std::optional<std::string> ParseSlurmConfig(std::string_view out, std::string_view key);

enum class SlurmPhase {
  kPending,  // PENDING, CONFIGURING (nodes booting), REQUEUED, REQUEUE_HOLD, SUSPENDED, …
  kRunning,  // RUNNING, COMPLETING
  kEnded,    // every other state: the job is over and its exit is final
};
SlurmPhase PhaseOf(std::string_view state);

// What an ended job means for its run.
struct SlurmEnd {
  bool succeeded = false;      // COMPLETED with exit 0
  bool infra_failure = false;  // the cluster's fault, not the run's: retried as a new attempt
  // "" on success, and for a FAILED job with an exit code or a signal: those say it, as a local
  // run's do (runs.h's DecideRunOutcome words them and finds the cause from the output's tail).
  // Else "<cause>: <detail>" ("timeout: Slurm's time limit (--time) was reached") or "cancelled".
  std::string reason;
  int exit_code = 0;
  int signal = 0;
};
// COMPLETED (exit 0) succeeds. The run's own failures: FAILED (its exit code / signal),
// OUT_OF_MEMORY, TIMEOUT (its own limit). The cluster's: NODE_FAIL, PREEMPTED, BOOT_FAIL,
// DEADLINE, REVOKED, a CANCELLED the agent did not ask for (an operator's scancel), a failed
// launch (FAILED, Reason=JobLaunchFailure, ExitCode 0:53 — no signal: the node could not chdir or
// open the output file) and a state this code does not know.
// `cancelled_by_agent`: a CANCELLED is the run's cancel (reason "cancelled"), and so is a FAILED
// with signal 15 or 9 (`scancel --signal=TERM --full` of a batch job ends FAILED, ExitCode 0:15).
SlurmEnd ClassifySlurmEnd(const SlurmJobInfo& job, bool cancelled_by_agent);

// The agent's options on their own (checked once at its start): what RenderSbatch would refuse
// for every job (a newline in --partition, an --sbatch-option that is not an option).
Status CheckSlurmOptions(const SlurmOptions& opts);

// Is `job` another execution than the one the agent followed (started at `seen_start`, Slurm's
// StartTime when it was first seen running)? A requeue (node failure, preemption, `scontrol
// requeue`) shows as pending again, a restart count, or another StartTime. A suspended job is the
// same execution, paused.
bool IsAnotherExecution(const SlurmJobInfo& job, const std::string& seen_start);
// A pending reason saying the nodes named by --nodelist cannot take the job (down, not in the
// partition, too few): the job should be placed anywhere instead of waiting.
bool PinnedNodesRefused(std::string_view reason);

// The first host of a Slurm hostlist ("gpu[07-09,12],cpu1" -> "gpu07"); "" for "" or "(null)".
std::string FirstNodeOf(std::string_view nodelist);

// sbatch/squeue/scontrol's stderr says the controller did not answer (worth retrying), as opposed
// to a refusal (an unknown partition, an impossible request) that a retry would not change.
bool IsTransientSlurmError(std::string_view stderr_text);

}  // namespace tunectl

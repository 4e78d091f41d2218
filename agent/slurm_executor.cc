#include "agent/slurm_executor.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/job_record.h"
#include "agent/run_output.h"
#include "core/text.h"
#include "sys/files.h"

namespace tunectl {
namespace {

using Steady = std::chrono::steady_clock;

constexpr const char* kScriptFile = "job.sbatch";
constexpr const char* kJobIdFile = "slurm-job";
constexpr const char* kOutputFile = "output.log";
constexpr size_t kMaxLine = 1 << 20;
constexpr std::streamoff kChunk = 4 << 20;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  return s.substr(i);
}

// Reads a growing file line by line from where it left off; a final line without a newline is
// kept until more arrives (or Drain is called at the end).
class FileTail {
 public:
  explicit FileTail(std::string path) : path_(std::move(path)) {}
  template <typename Fn>
  void Read(Fn&& on_line) {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;  // not there yet: the job has not started writing
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < offset_) offset_ = 0;  // rewritten from the start
    if (size == offset_) return;
    in.seekg(offset_);
    // At most kChunk a look: a large file (an adopted job's) is read over several looks.
    std::string chunk(static_cast<size_t>(std::min<std::streamoff>(size - offset_, kChunk)), '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<size_t>(in.gcount()));
    offset_ += static_cast<std::streamoff>(chunk.size());
    partial_ += chunk;
    // A line longer than kMaxLine is cut every kMaxLine bytes from its start, as a pipe's would
    // be: where it is cut does not depend on how the file was read.
    size_t start = 0;
    for (;;) {
      const size_t nl = partial_.find('\n', start);
      const size_t end = nl == std::string::npos ? partial_.size() : nl;
      if (end - start >= kMaxLine) {
        on_line(std::string_view(partial_).substr(start, kMaxLine));
        start += kMaxLine;
        continue;
      }
      if (nl == std::string::npos) break;
      on_line(std::string_view(partial_).substr(start, nl - start));
      start = nl + 1;
    }
    partial_.erase(0, start);
  }
  template <typename Fn>
  void Drain(Fn&& on_line) {
    for (std::streamoff before = -1; before != offset_;) {  // to the end, chunk by chunk
      before = offset_;
      Read(on_line);
    }
    if (!partial_.empty()) on_line(std::string_view(partial_));
    partial_.clear();
  }

 private:
  std::string path_;
  std::streamoff offset_ = 0;
  std::string partial_;
};

}  // namespace

// ---- SlurmCli --------------------------------------------------------------------------------

Result<CommandResult> SlurmCli::Command(std::vector<std::string> argv) {
  if (!bin_dir_.empty()) argv[0] = bin_dir_ + "/" + argv[0];
  ProcessSpec spec;
  spec.argv = std::move(argv);
  return RunCommand(*launcher_, spec, std::chrono::milliseconds(timeout_ms_));
}

namespace {
Status CommandError(const std::string& what, const CommandResult& r) {
  const std::string text = what + ": " + Trim(r.output);
  if (r.timed_out) return Status::Unavailable(what + ": no answer (timed out)");
  if (IsTransientSlurmError(r.output)) return Status::Unavailable(text);
  return Status::InvalidArgument(text);
}
}  // namespace

Result<std::string> SlurmCli::SubmitHeld(const std::string& script_path) {
  auto r = Command({"sbatch", "--parsable", "--hold", script_path});
  if (!r.ok()) return Status::Unavailable("sbatch: " + r.status().message());
  if (!r->status.ok() || r->timed_out) return CommandError("sbatch", *r);
  // Warnings (stderr) may come before or after the id: the id is the last line that is one.
  std::istringstream lines(r->output);
  std::optional<std::string> id;
  for (std::string line; std::getline(lines, line);)
    if (auto parsed = ParseSbatchJobId(Trim(line)); parsed.ok()) id = *parsed;
  if (id) return *id;
  return ParseSbatchJobId(Trim(r->output));
}

Status SlurmCli::Release(const std::string& job_id) {
  auto r = Command({"scontrol", "release", job_id});
  if (!r.ok()) return Status::Unavailable("scontrol release: " + r.status().message());
  if (!r->status.ok() || r->timed_out) return CommandError("scontrol release " + job_id, *r);
  return Status::Ok();
}

Status SlurmCli::Cancel(const std::string& job_id, const std::string& signal) {
  std::vector<std::string> argv = {"scancel"};
  if (!signal.empty()) {
    argv.push_back("--signal=" + signal);
    argv.push_back("--full");
  }
  argv.push_back(job_id);
  auto r = Command(argv);
  if (!r.ok()) return Status::Unavailable("scancel: " + r.status().message());
  if (!r->status.ok() || r->timed_out) return CommandError("scancel " + job_id, *r);
  return Status::Ok();
}

std::string SlurmCli::JobcompLog() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (jobcomp_) return *jobcomp_;
  }
  std::string loc;
  auto r = Command({"scontrol", "show", "config"});
  if (!r.ok() || !r->status.ok()) return "";  // asked again next time
  auto type = ParseSlurmConfig(r->output, "JobCompType");
  auto where = ParseSlurmConfig(r->output, "JobCompLoc");
  if (type && *type == "jobcomp/filetxt" && where) loc = *where;
  std::lock_guard<std::mutex> g(mu_);
  jobcomp_ = loc;
  return loc;
}

Result<std::optional<SlurmJobInfo>> SlurmCli::Query(const std::string& job_id) {
  // 1. squeue: pending and running jobs, and ended ones for MinJobAge.
  auto sq = Command({"squeue", "-h", "-t", "all", "-j", job_id, "-o", kSqueueFormat});
  if (!sq.ok()) return Status::Unavailable("squeue: " + sq.status().message());
  if (sq->timed_out || (!sq->status.ok() && IsTransientSlurmError(sq->output)))
    return CommandError("squeue", *sq);
  if (sq->status.ok()) {
    auto job = ParseSqueue(sq->output, job_id);
    if (!job.ok()) return job.status();
    if (*job && PhaseOf((**job).state) != SlurmPhase::kEnded) return job;
  }
  // 2. scontrol: the exit code of an ended job while the controller still holds it.
  auto sc = Command({"scontrol", "show", "job", "-o", job_id});
  if (!sc.ok()) return Status::Unavailable("scontrol: " + sc.status().message());
  if (sc->timed_out || (!sc->status.ok() && IsTransientSlurmError(sc->output)))
    return CommandError("scontrol show job", *sc);
  {
    auto job = ParseScontrolJob(sc->output, job_id);
    if (job.ok() && *job) return job;
  }
  // 3. The job-completion log (jobcomp/filetxt), when this node can read it.
  if (const std::string log = JobcompLog(); !log.empty()) {
    if (auto text = ReadFile(log); text.ok())
      if (auto job = ParseJobcomp(*text, job_id)) return std::optional<SlurmJobInfo>(*job);
  }
  // 4. sacct, where accounting runs (slurmdbd).
  bool try_sacct;
  {
    std::lock_guard<std::mutex> g(mu_);
    try_sacct = sacct_works_;
  }
  if (try_sacct) {
    auto sa = Command({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", kSacctFields});
    if (sa.ok() && sa->status.ok()) {
      auto job = ParseSacct(sa->output, job_id);
      if (job.ok() && *job) return job;
    } else if (sa.ok() && sa->output.find("accounting storage is disabled") != std::string::npos) {
      std::lock_guard<std::mutex> g(mu_);
      sacct_works_ = false;
    }
  }
  return std::optional<SlurmJobInfo>();
}

// ---- SlurmExecutor ---------------------------------------------------------------------------

std::string SlurmExecutor::PinnedNodes(int64_t experiment_id) {
  if (experiment_id <= 0 || !sopts_.pin_experiments) return "";
  std::lock_guard<std::mutex> g(mu_);
  auto text = ReadFile(opts_.runs_dir + "/.slurm-nodes/" + std::to_string(experiment_id));
  return text.ok() ? Trim(*text) : "";
}

void SlurmExecutor::Pin(int64_t experiment_id, const std::string& nodes) {
  if (experiment_id <= 0 || !sopts_.pin_experiments || nodes.empty()) return;
  std::lock_guard<std::mutex> g(mu_);
  const std::string dir = opts_.runs_dir + "/.slurm-nodes";
  const std::string path = dir + "/" + std::to_string(experiment_id);
  if (ReadFile(path).ok()) return;  // the first run's nodes stay the experiment's
  if (MakeDirs(dir).ok()) (void)WriteFileAtomic(path, nodes + "\n");
}

Status SlurmExecutor::CancelJob(const std::string& job_id) {
  Status st;
  int wait = sopts_.retry_ms;
  for (int i = 0; i < std::max(1, sopts_.submit_tries); ++i) {
    if (i > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
      wait *= 2;
    }
    st = client_->Cancel(job_id);
    if (st.ok() || st.code() != Status::Code::kUnavailable) return st;
  }
  return st;
}

std::vector<v1::Assign> SlurmExecutor::Adoptable() {
  Adoption found = FindAdoptable(opts_, kJobIdFile);
  // An older attempt of a run that has a newer one here is over: its job must not go on.
  for (const auto& old : found.superseded)
    if (CancelJob(old.id).ok()) JobRecord(old.run_dir, kJobIdFile).MarkFinished("superseded");
  return found.runs;
}

void SlurmExecutor::Run(const v1::Assign& a, const SlotGrant& /*slot*/, const RunControl& ctl,
                        RunSink& sink) {
  const std::string run_dir = RunDirOf(opts_, a.run_id(), a.attempt());
  const JobRecord record(run_dir, kJobIdFile);
  JobReport report(a, opts_, record, sink);
  if (!report.ok()) return report.Finish("launch_failed: " + report.status().message(), 127);
  RunOutput& output = report.output();

  std::string job_id;
  std::string placement;
  const int64_t experiment = a.experiment_id();
  const bool resumed = record.Submitted();

  auto submit = [&](const std::string& nodelist) -> Status {
    SbatchJob job;
    job.run_id = a.run_id();
    job.attempt = a.attempt();
    job.workload = a.workload();
    job.argv.assign(a.argv().begin(), a.argv().end());
    job.env.insert(a.env().begin(), a.env().end());
    job.env["TUNECTL_RUN_ID"] = std::to_string(a.run_id());
    job.env["TUNECTL_ATTEMPT"] = std::to_string(a.attempt());
    job.env["TUNECTL_RUN_DIR"] = run_dir;
    if (a.duration_ms() > 0) job.env["TUNECTL_DURATION_S"] = std::to_string(a.duration_ms() / 1000);
    job.workdir = opts_.workdir;
    job.run_dir = run_dir;
    job.resources = ResourcesOf(a);
    job.timeout_ms = a.timeout_ms();
    job.nodelist = nodelist;
    auto script = RenderSbatch(job, sopts_.slurm);
    if (!script.ok()) return script.status();
    const std::string path = run_dir + "/" + kScriptFile;
    if (auto s = WriteFileAtomic(path, *script); !s.ok()) return Status::Unavailable(s.message());
    Status last;
    int wait = sopts_.retry_ms;
    for (int i = 0; i < std::max(1, sopts_.submit_tries); ++i) {
      if (i > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(wait));
        wait *= 2;
      }
      auto id = client_->SubmitHeld(path);
      if (id.ok()) {
        job_id = *id;
        // The id is on disk before the job may start: an agent restarted now still finds it.
        if (auto s = record.SaveId(job_id); !s.ok()) {
          (void)client_->Cancel(job_id);
          return Status::Unavailable("cannot record the job id: " + s.message());
        }
        for (int k = 0; k < std::max(1, sopts_.submit_tries); ++k) {
          last = client_->Release(job_id);
          if (last.ok() || last.code() != Status::Code::kUnavailable) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(sopts_.retry_ms));
        }
        return last;
      }
      last = id.status();
      if (last.code() != Status::Code::kUnavailable) break;
    }
    return last;
  };

  if (resumed) {
    report.Resume();
    job_id = record.Id();
    if (job_id.empty()) return report.Fail("lost: the job id of this run could not be read");
    placement = "Slurm job " + job_id + " (adopted after an agent restart)";
  } else {
    if (auto s = PrepareRunDir(run_dir, a); !s.ok())
      return report.Fail("launch_failed: " + s.message());
    if (auto s = record.SaveAssign(a); !s.ok()) return report.Fail("launch_failed: " + s.message());
    const std::string pin = PinnedNodes(experiment);
    Status st = submit(pin);
    if (!st.ok() && !pin.empty() && st.code() == Status::Code::kInvalidArgument && job_id.empty()) {
      placement = "the nodes of experiment " + std::to_string(experiment) + "'s first run (" + pin +
                  ") were refused (" + st.message() + "); placed by Slurm";
      st = submit("");
    } else if (!pin.empty()) {
      placement = "on the nodes of experiment " + std::to_string(experiment) + "'s first run";
    }
    if (!st.ok()) {
      if (!job_id.empty()) (void)CancelJob(job_id);
      if (st.code() == Status::Code::kUnavailable)
        return report.Fail("launch_failed: " + st.message());
      return report.Finish("launch_failed: " + st.message(), 127);  // the run's request was refused
    }
  }

  FileTail tail(run_dir + "/" + kOutputFile);
  // One file holds the job's stdout and stderr in the order written; its last lines stand in for
  // the stderr tail.
  auto on_line = [&](std::string_view line) { output.Line(Stream::kStderr, line); };

  bool started = false, cancelled = false, duration_reached = false;
  std::string stop_reason;   // why the agent stopped the job ("cancelled", "timeout after …")
  std::string infra_reason;  // … when that is the cluster's failure (a requeue)
  std::string seen_start;    // Slurm's StartTime of the execution we follow
  std::optional<Steady::time_point> running_since, stop_sent, last_scancel, vanished_since,
      term_sent;
  auto next_poll = Steady::now();
  // An adopted job that an earlier agent saw run: the same execution (its StartTime), and its
  // timeout and duration counted from when it started, not from this agent's start.
  if (const JobRecord::Start st = record.LoadStart(); resumed && !st.slurm_start.empty()) {
    started = true;
    seen_start = st.slurm_start;
    const auto age = std::chrono::system_clock::now() - st.seen_at;
    running_since = Steady::now() - std::chrono::duration_cast<Steady::duration>(age);
  }
  auto stop_job = [&](const std::string& why) {
    cancelled = true;
    stop_reason = why;
    stop_sent = last_scancel = Steady::now();
    (void)client_->Cancel(job_id);
  };

  for (;;) {
    if (ctl.detach.load() && !ctl.cancel.load()) {
      output.Flush();  // what was read is recorded; the job goes on without us
      return;
    }
    tail.Read(on_line);
    output.Tick();
    const auto now = Steady::now();

    if (!report.record_ok()) {
      // Its progress cannot be recorded (the runs directory): an agent restarted later would
      // resume from a stale point. Stop it; the server retries the run.
      if (!stop_sent) stop_job("");
      tail.Drain(on_line);
      return report.Fail("cannot record the run's progress: " + report.record_error() +
                         "; Slurm job " + job_id + " was cancelled");
    }
    if (!stop_sent && ctl.cancel.load()) stop_job("cancelled");
    if (running_since && !stop_sent && a.timeout_ms() > 0 &&
        now - *running_since >= std::chrono::milliseconds(a.timeout_ms()))
      stop_job("timeout after " + std::to_string(a.timeout_ms() / 1000) + "s");
    if (running_since && !term_sent && !stop_sent && a.duration_ms() > 0 &&
        now - *running_since >= std::chrono::milliseconds(a.duration_ms())) {
      // A stability run has lasted as long as asked: SIGTERM, as a time limit would.
      duration_reached = true;
      (void)client_->Cancel(job_id, "TERM");
      term_sent = now;
    }
    if (term_sent && !stop_sent &&
        now - *term_sent >= std::chrono::milliseconds(opts_.kill_grace_ms)) {
      stop_job("did not stop within " + std::to_string(opts_.kill_grace_ms / 1000) +
               "s of SIGTERM at the end of its requested duration");
    }
    // scancel again until the job has ended: one may be lost while the controller is busy.
    if (last_scancel && now - *last_scancel >= std::chrono::milliseconds(sopts_.poll_ms * 5)) {
      last_scancel = now;
      (void)client_->Cancel(job_id);
    }
    if (stop_sent && now - *stop_sent >= std::chrono::milliseconds(sopts_.stop_wait_ms)) {
      // Reported, but not recorded as over: a restarted agent finds the job again and the
      // server, which no longer wants it, has it cancelled.
      tail.Drain(on_line);
      if (!infra_reason.empty()) return report.Fail(infra_reason, /*job_over=*/false);
      return report.Finish(stop_reason, 0, /*job_over=*/false);
    }

    if (now < next_poll) {
      std::this_thread::sleep_for(std::chrono::milliseconds(sopts_.tail_ms));
      continue;
    }
    next_poll = now + std::chrono::milliseconds(sopts_.poll_ms);
    auto q = client_->Query(job_id);
    if (!q.ok()) continue;  // the controller did not answer: ask again
    if (!*q) {
      if (!vanished_since) vanished_since = now;
      if (now - *vanished_since >= std::chrono::milliseconds(sopts_.vanished_ms)) {
        tail.Drain(on_line);
        return report.Fail("lost: Slurm job " + job_id + " is known to neither squeue, " +
                           "scontrol, the job-completion log nor sacct");
      }
      continue;
    }
    vanished_since.reset();
    const SlurmJobInfo& job = **q;
    const SlurmPhase phase = PhaseOf(job.state);
    // Requeued (a node failure, a preemption, `scontrol requeue`): the execution we followed is
    // over and Slurm would start another into the same attempt. Stop it; the server retries.
    const bool suspended = job.state == "SUSPENDED" || job.state == "STOPPED";
    if (started && !stop_sent && IsAnotherExecution(job, seen_start)) {
      infra_reason = "requeued by Slurm (" + job.state +
                     (job.reason.empty() || job.reason == "None" ? "" : ", " + job.reason) +
                     "): Slurm job " + job_id + " was stopped; the run is retried";
      const Status cancel = CancelJob(job_id);
      tail.Drain(on_line);
      if (cancel.ok()) return report.Fail(infra_reason);
      stop_job(infra_reason);  // scancel again until it is gone
      continue;
    }
    if (phase == SlurmPhase::kPending) {
      if (suspended) continue;
      if (job.restarts > 0 && !started && !stop_sent) {
        (void)CancelJob(job_id);
        return report.Fail("requeued by Slurm before this agent saw it run (Slurm job " + job_id +
                           ")");
      }
      if (!stop_sent && !started && !PinnedNodes(experiment).empty() && !resumed &&
          PinnedNodesRefused(job.reason) && placement.rfind("on the nodes", 0) == 0) {
        // The pinned nodes cannot take it (down, not in the partition): let Slurm place it.
        if (!CancelJob(job_id).ok()) continue;  // asked again at the next look
        const std::string old = job_id;
        job_id.clear();
        if (Status s = submit(""); !s.ok()) {
          if (!job_id.empty()) (void)CancelJob(job_id);
          return report.Fail("launch_failed: " + s.message());
        }
        placement = "the nodes of experiment " + std::to_string(experiment) +
                    "'s first run could not take it (Slurm job " + old + ": " + job.reason +
                    "); placed by Slurm";
        continue;
      }
      // Held (an agent died between submitting and releasing it): release it now.
      if (job.reason.rfind("JobHeldUser", 0) == 0 && !stop_sent) (void)client_->Release(job_id);
      const std::string reason = job.reason.empty() ? job.state : job.reason;
      report.Pending(job_id, reason);
      continue;
    }
    // A job that ended between two looks ran; one the agent cancelled while it pended did not.
    if (!started &&
        (phase == SlurmPhase::kRunning || (phase == SlurmPhase::kEnded && !stop_sent))) {
      started = true;
      seen_start = job.start_time;
      running_since = now;
      record.SaveStart(job.start_time);
      Pin(experiment, job.nodes);
      report.Started(job.nodes, job_id, placement.empty() ? "Slurm job " + job_id : placement);
      // Scrapes go to the job's (first) node; its event files are in the shared run directory.
      if (Status st =
              output.ReadSideSources(a, SideSourcesFor(opts_, run_dir, FirstNodeOf(job.nodes)),
                                     opts_.http ? opts_.http : &http_);
          !st.ok())
        for (const auto& m : a.metrics())
          if (!m.prometheus().empty() || !m.tensorboard().empty())
            (*report.fin().mutable_metric_notes())[m.name()] = SanitizeUtf8(st.message(), 1024);
    }
    if (phase != SlurmPhase::kEnded) continue;

    // The job is over: read what it wrote to the end, then what its end means.
    tail.Drain(on_line);
    if (duration_reached && !stop_sent) {
      report.fin().set_duration_reached(true);
      return report.Finish("", 0);
    }
    if (!infra_reason.empty()) return report.Fail(infra_reason);
    if (!stop_reason.empty()) return report.Finish(stop_reason, job.exit_code);
    const SlurmEnd end = ClassifySlurmEnd(job, cancelled);
    report.fin().set_signal(end.signal);
    if (end.infra_failure) report.fin().set_infra_failure(true);
    return report.Finish(end.reason, end.exit_code);
  }
}

}  // namespace tunectl

#include "agent/kube_executor.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <thread>

#include "agent/job_record.h"
#include "agent/run_output.h"
#include "sys/files.h"

namespace tunectl {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kManifestFile = "job.yaml";
constexpr const char* kJobNameFile = "kube-job";
constexpr const char* kOutputFile = "output.log";

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  return s.substr(i);
}

// kubectl's output is stdout and stderr interleaved by line (RunCommand): the JSON document is
// from the first line that starts with '{' to the last that starts with '}'; warnings around it
// are dropped. "" when there is none (--ignore-not-found printed nothing).
std::string JsonPart(const std::string& out) {
  size_t begin = out.rfind('{', 0) == 0 ? 0 : out.find("\n{");
  if (begin == std::string::npos) return "";
  if (out[begin] == '\n') ++begin;
  size_t end = out.rfind("\n}");
  end = end == std::string::npos || end < begin ? out.size() : end + 2;
  return out.substr(begin, end - begin);
}

// "2026-12-05T07:00:01.5Z text" -> {"2026-12-05T07:00:01.500000000", "text"}: a timestamp that
// compares as text. A line without one gives {"", line}.
std::pair<std::string, std::string_view> SplitTimestamp(std::string_view line) {
  const size_t sp = line.find(' ');
  const std::string_view ts = line.substr(0, sp);
  if (ts.size() < 20 || ts[4] != '-' || ts[10] != 'T' || ts[13] != ':') return {"", line};
  std::string key(ts.substr(0, 19));
  std::string frac;
  if (ts.size() > 19 && ts[19] == '.') {
    size_t i = 20;
    while (i < ts.size() && ts[i] >= '0' && ts[i] <= '9') frac += ts[i++];
  }
  frac.resize(9, '0');
  key += "." + frac;
  return {key, sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1)};
}

// Where the logs were read to. A stream restarted with --since-time (whole seconds) repeats the
// lines of that second and before: its first lines are skipped by their timestamps until one is
// newer than what was read (or as new, and past the lines read with that same timestamp).
struct LogCursor {
  std::string last;        // the newest timestamp read
  int at_last = 0;         // lines read with exactly that timestamp
  bool replaying = false;  // at the start of a restarted stream
  int to_skip = 0;         // lines at `last` still to skip there
  // Whether a line is new (and notes it).
  bool Take(const std::string& ts) {
    if (replaying) {
      if (!ts.empty() && ts < last) return false;
      if (!ts.empty() && ts == last && to_skip > 0) {
        --to_skip;
        return false;
      }
      replaying = false;
    }
    if (ts.empty() || ts < last) return true;  // no timestamp, or out of order: kept
    if (ts == last) {
      ++at_last;
    } else {
      last = ts;
      at_last = 1;
    }
    return true;
  }
  void Restart() {
    replaying = !last.empty();
    to_skip = at_last;
  }
  std::string SinceTime() const { return last.empty() ? "" : last.substr(0, 19) + "Z"; }
};

}  // namespace

// ---- Kubectl ---------------------------------------------------------------------------------

std::vector<std::string> Kubectl::Base() const {
  std::vector<std::string> argv = {kubectl_};
  if (!kubeconfig_.empty()) argv.push_back("--kubeconfig=" + kubeconfig_);
  if (!context_.empty()) argv.push_back("--context=" + context_);
  if (!ns_.empty()) argv.push_back("--namespace=" + ns_);
  return argv;
}

namespace {
Status KubectlError(const std::string& what, const CommandResult& r) {
  if (r.timed_out) return Status::Unavailable(what + ": no answer (timed out)");
  const std::string text = what + ": " + Trim(r.output);
  if (IsTransientKubectlError(r.output)) return Status::Unavailable(text);
  if (r.output.find("exceeded quota") != std::string::npos) return Status::FailedPrecondition(text);
  return Status::InvalidArgument(text);
}
}  // namespace

Result<std::string> Kubectl::Get(const std::string& what, std::vector<std::string> args) {
  ProcessSpec spec;
  spec.argv = Base();
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  auto r = RunCommand(*launcher_, spec, milliseconds(timeout_ms_));
  if (!r.ok()) return Status::Unavailable(what + ": " + r.status().message());
  if (!r->status.ok() || r->timed_out) return KubectlError(what, *r);
  return JsonPart(r->output);
}

Status Kubectl::Apply(const std::string& manifest_path) {
  auto r = Get("kubectl apply", {"apply", "-f", manifest_path});
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::string> Kubectl::GetJobJson(const std::string& name) {
  return Get("kubectl get job", {"get", "job", name, "-o", "json", "--ignore-not-found"});
}

Result<std::string> Kubectl::GetPodsJson(const std::string& job_name) {
  auto r = Get("kubectl get pods", {"get", "pods", "-l", "job-name=" + job_name, "-o", "json"});
  if (r.ok() && r->empty())
    return Status::InvalidArgument("kubectl get pods: printed no JSON for job-name=" + job_name);
  return r;
}

Result<std::unique_ptr<Process>> Kubectl::FollowLogs(const std::string& pod,
                                                     const std::string& since_time) {
  ProcessSpec spec;
  spec.argv = Base();
  for (const char* a : {"logs", "-f", "--timestamps", "-c"}) spec.argv.push_back(a);
  spec.argv.push_back(kKubeContainer);
  spec.argv.push_back(pod);
  if (!since_time.empty()) spec.argv.push_back("--since-time=" + since_time);
  return launcher_->Start(spec);
}

Status Kubectl::Delete(const std::vector<std::string>& objects, bool foreground) {
  std::vector<std::string> args = {"delete"};
  args.insert(args.end(), objects.begin(), objects.end());
  for (const char* a : {"--ignore-not-found", "--wait=false"}) args.push_back(a);
  args.push_back(std::string("--cascade=") + (foreground ? "foreground" : "background"));
  auto r = Get("kubectl delete", args);
  return r.ok() ? Status::Ok() : r.status();
}

// ---- KubeExecutor ----------------------------------------------------------------------------

KubeExecutor::KubeExecutor(KubectlClient* client, ExecutorOptions opts, KubeExecutorOptions kopts)
    : client_(client), opts_(std::move(opts)), kopts_(std::move(kopts)) {}

std::vector<v1::Assign> KubeExecutor::Adoptable() {
  Adoption found = FindAdoptable(opts_, kJobNameFile);
  // An older attempt of a run that has a newer one here is over: its Job must not go on.
  for (const auto& old : found.superseded)
    if (client_->Delete({"job/" + old.id, "configmap/" + old.id}, false).ok())
      JobRecord(old.run_dir, kJobNameFile).MarkFinished("superseded");
  return found.runs;
}

void KubeExecutor::Run(const v1::Assign& a, const SlotGrant& /*slot*/, const RunControl& ctl,
                       RunSink& sink) {
  const std::string run_dir = RunDirOf(opts_, a.run_id(), a.attempt());
  const std::string name = KubeObjectName(kopts_.kube, a.run_id(), a.attempt());
  const bool has_files = a.files_size() > 0;
  const JobRecord record(run_dir, kJobNameFile);
  JobReport report(a, opts_, record, sink);
  if (!report.ok()) return report.Finish("launch_failed: " + report.status().message(), 127);
  RunOutput& output = report.output();

  const bool resumed = record.Submitted();
  std::string placement =
      "Kubernetes Job " + name + (kopts_.kube.ns.empty() ? "" : " in namespace " + kopts_.kube.ns);
  if (resumed) {
    report.Resume();
    placement += " (adopted after an agent restart)";
  } else {
    KubeJob job;
    job.run_id = a.run_id();
    job.attempt = a.attempt();
    job.workload = a.workload();
    job.argv.assign(a.argv().begin(), a.argv().end());
    job.env.insert(a.env().begin(), a.env().end());
    if (a.duration_ms() > 0) job.env["TUNECTL_DURATION_S"] = std::to_string(a.duration_ms() / 1000);
    for (const auto& f : a.files()) job.files[f.path()] = f.content();
    job.run_dir = kopts_.pod_run_dir;
    job.workdir = kopts_.pod_workdir;
    job.resources = ResourcesOf(a);
    job.timeout_ms = a.timeout_ms();
    auto manifest = RenderKubeJob(job, kopts_.kube);
    // The run's request cannot be a Job (several nodes, a file too large): the run's failure.
    if (!manifest.ok()) return report.Finish("launch_failed: " + manifest.status().message(), 127);
    // The agent's own disk: not the run's fault.
    if (auto s = MakeDirs(run_dir); !s.ok()) return report.Fail("launch_failed: " + s.message());
    const std::string path = run_dir + "/" + kManifestFile;
    // The name is on disk before the Job exists: an agent restarted now still finds it.
    for (Status s : {record.SaveAssign(a), WriteFileAtomic(path, *manifest), record.SaveId(name)})
      if (!s.ok()) return report.Fail("launch_failed: " + s.message());
    Status st;
    int wait = kopts_.retry_ms;
    for (int i = 0; i < std::max(1, kopts_.apply_tries); ++i) {
      if (i > 0) {
        std::this_thread::sleep_for(milliseconds(wait));
        wait *= 2;
      }
      st = client_->Apply(path);
      if (st.code() != Status::Code::kUnavailable) break;
    }
    if (!st.ok()) {
      // A part may exist (the ConfigMap before a refused Job).
      (void)client_->Delete({"job/" + name, "configmap/" + name}, false);
      record.MarkFinished("not applied");
      if (st.code() == Status::Code::kInvalidArgument)
        return report.Finish("launch_failed: " + st.message(), 127);  // the cluster refused the run
      return report.Fail("launch_failed: " + st.message());
    }
  }

  std::ofstream log(run_dir + "/" + kOutputFile, std::ios::trunc);
  std::unique_ptr<Process> logs;
  LogCursor cursor;
  auto on_line = [&](Stream s, std::string_view line) {
    if (s == Stream::kStderr) {  // kubectl's own words (a broken stream), not the job's
      log << "K " << line << '\n';
      return;
    }
    auto [ts, text] = SplitTimestamp(line);
    if (!cursor.Take(ts)) return;  // read before the stream was restarted
    // The container's stdout and stderr are one stream: its last lines stand in for the tail.
    output.Line(Stream::kStderr, text, &log);
  };
  auto start_logs = [&](const std::string& pod) {
    cursor.Restart();
    auto p = client_->FollowLogs(pod, cursor.SinceTime());
    if (p.ok()) logs = std::move(*p);
  };
  auto stop_logs = [&] {
    if (!logs) return;
    logs->Signal(SIGKILL);
    (void)logs->Wait();
    logs.reset();
  };

  KubeObserved seen;
  std::string pod_name;
  bool started = false, duration_reached = false, delete_pending = false;
  std::string stop_reason;
  std::optional<Steady::time_point> running_since, stop_sent, unseen_since, stuck_since, gone_since;
  auto next_poll = Steady::now();

  auto wrap_up = [&] {
    stop_logs();
    output.Flush();
    log.flush();
  };
  auto stop = [&](const std::string& reason) {
    stop_reason = reason;
    stop_sent = Steady::now();
    delete_pending = !client_->Delete({"job/" + name, "configmap/" + name}, true).ok();
  };

  for (;;) {
    if (ctl.detach.load() && !ctl.cancel.load()) {
      stop_logs();
      output.Flush();  // what was read is recorded; the Job goes on without us
      return;
    }
    if (!report.record_ok()) {
      // Its progress cannot be recorded (the runs directory): an agent restarted later would
      // resume from a stale point. Stop it; the server retries the run.
      stop_logs();
      (void)client_->Delete({"job/" + name, "configmap/" + name}, false);
      return report.Fail("cannot record the run's progress: " + report.record_error() + "; Job " +
                         name + " was deleted");
    }
    if (logs) {
      if (!logs->Poll(milliseconds(100), on_line)) {
        (void)logs->Wait();
        logs.reset();
      }
    } else {
      std::this_thread::sleep_for(milliseconds(std::min(kopts_.poll_ms, 100)));
    }
    output.Tick();
    log.flush();  // `run logs -f` reads output.log as it grows
    const auto now = Steady::now();

    if (!stop_sent && ctl.cancel.load()) stop("cancelled");
    if (running_since && !stop_sent && a.timeout_ms() > 0 &&
        now - *running_since >= milliseconds(a.timeout_ms()))
      stop("timeout after " + std::to_string(a.timeout_ms() / 1000) + "s");
    if (running_since && !stop_sent && a.duration_ms() > 0 &&
        now - *running_since >= milliseconds(a.duration_ms())) {
      duration_reached = true;  // a stability run has lasted as long as asked
      stop("");
    }
    if (stop_sent && now - *stop_sent >= milliseconds(kopts_.stop_wait_ms)) {
      wrap_up();
      return report.Finish(
          (duration_reached ? "did not stop at the end of its requested duration" : stop_reason) +
              " (Job " + name + " still there " + std::to_string(kopts_.stop_wait_ms / 1000) +
              "s after kubectl delete)",
          0);
    }
    if (now < next_poll) continue;
    next_poll = now + milliseconds(kopts_.poll_ms);
    if (delete_pending)
      delete_pending = !client_->Delete({"job/" + name, "configmap/" + name}, true).ok();

    auto unreadable = [&](const std::string& why) {
      if (!unseen_since) unseen_since = now;
      if (now - *unseen_since < milliseconds(kopts_.vanished_ms)) return false;
      wrap_up();
      report.Fail("lost: " + why + " for " + std::to_string(kopts_.vanished_ms / 1000) + "s");
      return true;
    };
    auto job_json = client_->GetJobJson(name);
    if (!job_json.ok()) {
      if (unreadable("Job " + name + " could not be read (" + job_json.status().message() + ")"))
        return;
      continue;
    }
    auto job = ParseKubeJob(*job_json);
    if (!job.ok()) {
      if (unreadable(job.status().message())) return;
      continue;
    }
    if (!*job) {  // gone
      if (stop_sent) {
        wrap_up();
        if (duration_reached) {
          report.fin().set_duration_reached(true);
          return report.Finish("", 0);
        }
        const bool exited = seen.pod && seen.pod->container.state == "terminated";
        report.fin().set_signal(exited ? seen.pod->container.signal : 0);
        return report.Finish(stop_reason, exited ? seen.pod->container.exit_code : 0);
      }
      if (!unseen_since) unseen_since = now;
      if (now - *unseen_since < milliseconds(kopts_.vanished_ms)) continue;
      seen.job.reset();
      wrap_up();
      const KubeEnd end = ClassifyKubeEnd(seen);
      report.fin().set_signal(end.signal);
      if (end.infra_failure) report.fin().set_infra_failure(true);
      return report.Finish(end.reason, end.exit_code);
    }
    unseen_since.reset();
    seen.job = **job;

    const KubePodInfo* pod = nullptr;
    auto pods_json = client_->GetPodsJson(name);
    std::optional<std::vector<KubePodInfo>> pods;
    if (pods_json.ok()) {
      auto parsed = ParseKubePods(*pods_json);
      if (parsed.ok()) pods = std::move(*parsed);
    }
    if (pods) {
      if (pod_name.empty() && !pods->empty()) pod_name = pods->front().name;
      for (const auto& p : *pods)
        if (p.name == pod_name) pod = &p;
      if (!pod_name.empty() && !pod) seen.pod_gone = true;
      if (pod) seen.pod = *pod;
    } else if (seen.pod && !seen.pod_gone) {
      pod = &*seen.pod;  // not readable now: as last seen
    }
    if (stop_sent) continue;  // waiting for the Job to go (foreground: after its pod)

    const KubePhase phase = KubePhaseOf(*seen.job, pod);
    if (seen.pod_gone && phase != KubePhase::kEnded) {
      // The pod went away under a Job that has not ended (deleted, its node lost): the Job
      // controller fails the Job (backoffLimit 0); wait for that, within a bound.
      if (!gone_since) gone_since = now;
      if (now - *gone_since < milliseconds(kopts_.vanished_ms)) continue;
    } else if (phase == KubePhase::kPending) {
      if (const std::string stuck = pod ? KubeStuckReason(*pod) : ""; !stuck.empty()) {
        if (!stuck_since) stuck_since = now;
        if (now - *stuck_since >= milliseconds(kopts_.stuck_ms)) {
          (void)client_->Delete({"job/" + name, "configmap/" + name}, false);
          wrap_up();
          const KubeEnd end = ClassifyKubeEnd(seen);
          report.fin().set_signal(end.signal);
          if (end.infra_failure) report.fin().set_infra_failure(true);
          return report.Finish(
              end.reason + " (for " + std::to_string(kopts_.stuck_ms / 1000) + "s)", end.exit_code);
        }
      } else {
        stuck_since.reset();
      }
      const std::string reason = KubePendingReason(*seen.job, pod);
      report.Pending(name, reason);
      continue;
    }
    // The container runs, or ran between two looks.
    const bool ran =
        pod && (pod->container.state == "running" ||
                (pod->container.state == "terminated" && !pod->container.started_at.empty()));
    if (ran) seen.ran = true;
    if (!started && ran) {
      started = true;
      running_since = now;
      report.Started(pod->node, name, placement + ", pod " + pod->name);
    }
    if (phase == KubePhase::kRunning) {
      if (!logs && pod) start_logs(pod->name);  // first, or the stream broke: go on reading
      continue;
    }

    // Ended: the logs to their end (a stream that is not open is read once more from where it
    // was; an open one ends with the container), then what the end means.
    if (!logs && started && pod) start_logs(pod->name);
    const auto drain_until = Steady::now() + milliseconds(kopts_.command_timeout_ms);
    while (logs && Steady::now() < drain_until) {
      if (!logs->Poll(milliseconds(100), on_line)) {
        (void)logs->Wait();
        logs.reset();
      }
      output.Tick();
      log.flush();  // `run logs -f` reads output.log as it grows
    }
    wrap_up();
    const KubeEnd end = ClassifyKubeEnd(seen);
    report.fin().set_signal(end.signal);
    if (end.infra_failure) report.fin().set_infra_failure(true);
    // The Job stays for its TTL (to be inspected); its files are not needed any more.
    if (has_files) (void)client_->Delete({"configmap/" + name}, false);
    return report.Finish(end.reason, end.exit_code);
  }
}

}  // namespace tunectl

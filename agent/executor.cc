#include "agent/executor.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/run_output.h"
#include "core/text.h"
#include "sys/files.h"

namespace tunectl {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Resources ResourcesOf(const v1::Assign& a) {
  const auto& r = a.resources();
  Resources out;
  out.nodes = r.nodes();
  out.gpus_per_node = r.gpus_per_node();
  out.cpus_per_task = r.cpus_per_task();
  out.mem_mb = r.mem_mb();
  out.time_ms = r.time_ms();
  return out;
}

SideSourceOptions SideSourcesFor(const ExecutorOptions& o, const std::string& run_dir,
                                 const std::string& node) {
  SideSourceOptions so;
  so.run_dir = run_dir;
  so.node = node;
  so.exporters = o.exporters;
  return so;
}

std::string RunDirOf(const ExecutorOptions& o, int64_t run_id, int attempt) {
  return o.runs_dir + "/" + std::to_string(run_id) + "-" + std::to_string(attempt);
}

Status PrepareRunDir(const std::string& run_dir, const v1::Assign& a) {
  if (auto s = MakeDirs(run_dir); !s.ok()) return s;
  for (const auto& f : a.files()) {
    const std::string path = run_dir + "/" + f.path();
    if (auto s = MakeDirs(std::filesystem::path(path).parent_path().string()); !s.ok()) return s;
    if (auto s = WriteFileAtomic(path, f.content()); !s.ok()) return s;
  }
  return Status::Ok();
}

std::string JobTagPrefix(const ExecutorOptions& o) {
  return "TUNECTL_JOB=" + (o.job_tag.empty() ? o.runs_dir + "|" : o.job_tag);
}

std::string DefaultJobTag(const std::string& name, const std::string& runs_dir) {
  return name + "|" + runs_dir + "|";
}

std::string JobTagEntry(const ExecutorOptions& o, int64_t run_id, int attempt) {
  return JobTagPrefix(o) + std::to_string(run_id) + "-" + std::to_string(attempt) + "|";
}

Result<std::vector<int>> ParseIdList(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(flag + ": \"" + text + "\" " + why +
                                   "; expected ids like 0,1,2,3 or 0-3");
  };
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(',', i);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(i, end - i);
    int lo = 0, hi = 0;
    char dash = 0, rest = 0;
    const int n = std::sscanf(part.c_str(), "%d%c%d%c", &lo, &dash, &hi, &rest);
    if (n == 1 && part.find_first_not_of("0123456789") == std::string::npos) {
      hi = lo;
    } else if (!(n == 3 && dash == '-' &&
                 part.find_first_not_of("0123456789-") == std::string::npos)) {
      return bad("has \"" + part + "\", which is not an id or a range");
    }
    if (lo < 0 || hi < lo || hi > 4095) return bad("has the range \"" + part + "\"");
    for (int x = lo; x <= hi; ++x) {
      if (std::find(out.begin(), out.end(), x) != out.end())
        return bad("names " + std::to_string(x) + " twice");
      out.push_back(x);
    }
    i = end + 1;
    if (end + 1 == text.size()) return bad("ends with a comma");
  }
  if (out.empty()) return bad("is empty");
  return out;
}

Result<std::vector<std::string>> SplitAmongSlots(const std::string& flag,
                                                 const std::vector<int>& ids, int slots) {
  if (slots <= 0) return std::vector<std::string>{};
  if (ids.size() % static_cast<size_t>(slots) != 0)
    return Status::InvalidArgument(flag + ": " + std::to_string(ids.size()) +
                                   " ids cannot be split evenly among " + std::to_string(slots) +
                                   " slots; give a multiple of --slots (each slot gets the same "
                                   "share, or its runs would not compare)");
  const size_t per = ids.size() / static_cast<size_t>(slots);
  std::vector<std::string> out;
  for (int s = 0; s < slots; ++s) {
    std::string g;
    for (size_t k = 0; k < per; ++k)
      g += (k ? "," : "") + std::to_string(ids[static_cast<size_t>(s) * per + k]);
    out.push_back(g);
  }
  return out;
}

void LocalExecutor::Run(const v1::Assign& a, const SlotGrant& slot, const RunControl& ctl,
                        RunSink& sink) {
  auto cancelled = [&] { return ctl.cancel.load() || ctl.detach.load(); };
  v1::RunFinished fin;
  fin.set_run_id(a.run_id());
  fin.set_attempt(a.attempt());
  int64_t seq = 0;  // batches sent
  auto finish = [&](const std::string& reason, int code) {
    fin.set_reason(reason);
    fin.set_exit_code(code);
    fin.set_seq(seq + 1);
    fin.set_batches(seq);
    sink.OnFinished(fin);
  };

  const std::string run_dir = RunDirOf(opts_, a.run_id(), a.attempt());
  // The node's own failures (no run directory, no room for the generated files or the output)
  // are not the job's: the server retries the run on another node.
  auto node_failed = [&](const std::string& why) {
    fin.set_infra_failure(true);
    finish("launch_failed: " + why, 127);
  };
  if (auto s = PrepareRunDir(run_dir, a); !s.ok()) return node_failed(s.message());
  auto out = RunOutput::Create(a, opts_.batch_max_samples, opts_.batch_max_ms,
                               [&](const v1::MetricBatch& b, int64_t) { sink.OnBatch(b); });
  if (!out.ok()) return finish("launch_failed: " + out.status().message(), 127);
  RunOutput& output = **out;
  if (auto st = output.ReadSideSources(a, SideSourcesFor(opts_, run_dir, "127.0.0.1"),
                                       opts_.http ? opts_.http : &http_);
      !st.ok())
    return finish("launch_failed: " + st.message(), 127);

  ProcessSpec spec;
  if (!slot.cpus.empty()) spec.argv = {"taskset", "-c", slot.cpus};  // the slot's CPU set
  spec.argv.insert(spec.argv.end(), a.argv().begin(), a.argv().end());
  spec.env_overrides.insert(a.env().begin(), a.env().end());
  spec.env_overrides["TUNECTL_RUN_ID"] = std::to_string(a.run_id());
  spec.env_overrides["TUNECTL_ATTEMPT"] = std::to_string(a.attempt());
  spec.env_overrides["TUNECTL_RUN_DIR"] = run_dir;
  std::string placement;
  if (slot.index >= 0) {
    spec.env_overrides["TUNECTL_SLOT"] = std::to_string(slot.index);
    placement = "slot " + std::to_string(slot.index);
  }
  if (!slot.gpus.empty()) {
    spec.env_overrides["CUDA_VISIBLE_DEVICES"] = slot.gpus;
    placement += (placement.empty() ? "" : ", ") + std::string("GPUs ") + slot.gpus;
  }
  if (!slot.cpus.empty())
    placement += (placement.empty() ? "" : ", ") + std::string("CPUs ") + slot.cpus;
  const std::string tag = JobTagEntry(opts_, a.run_id(), a.attempt());
  spec.env_overrides["TUNECTL_JOB"] = tag.substr(std::string("TUNECTL_JOB=").size());
  // The whole tree: the process group, and whoever left it (setsid, daemonised) with the tag.
  auto signal_all = [&](Process& p, int sig) {
    p.Signal(sig);
    SignalProcessesWithEnv(tag, sig);
  };
  if (a.duration_ms() > 0)  // a stability run: the job may stop itself at this age
    spec.env_overrides["TUNECTL_DURATION_S"] = std::to_string(a.duration_ms() / 1000);
  spec.cwd = opts_.workdir;
  std::ofstream log(run_dir + "/output.log", std::ios::trunc);
  if (!log) return node_failed("cannot create " + run_dir + "/output.log");  // nothing ran yet
  auto proc = launcher_->Start(spec);
  if (!proc.ok()) return finish("launch_failed: " + proc.status().message(), 127);
  Process& p = **proc;

  v1::RunStarted started;
  started.set_run_id(a.run_id());
  started.set_attempt(a.attempt());
  started.set_pid(p.pid());
  started.set_node(HostName());
  started.set_slot(slot.index);
  started.set_placement(placement);
  sink.OnStarted(started);

  auto on_line = [&](Stream st, std::string_view line) { output.Line(st, line, &log); };

  const auto started_at = Clock::now();
  const auto deadline = a.timeout_ms() > 0 ? started_at + std::chrono::milliseconds(a.timeout_ms())
                                           : Clock::time_point::max();
  const auto duration_end = a.duration_ms() > 0
                                ? started_at + std::chrono::milliseconds(a.duration_ms())
                                : Clock::time_point::max();
  bool duration_reached = false;
  std::string reason;
  std::optional<Clock::time_point> kill_at, exited_at;
  // The process is supervised, not its pipes: a job that closes its stdout and stderr still
  // meets its timeout, its cancel and its duration while it lives.
  bool open = true;
  for (;;) {
    if (open)
      open = p.Poll(std::chrono::milliseconds(100), on_line);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto now = Clock::now();
    output.Tick();
    log.flush();  // what the job printed is in output.log within a poll: `run logs -f` reads it
    if (reason.empty() && !duration_reached && !exited_at && now >= duration_end) {
      // A stability run has lasted as long as asked: stop it as a time limit would; the run
      // succeeded unless the job fails to stop within the grace period.
      duration_reached = true;
      p.Signal(SIGTERM);
      kill_at = now + std::chrono::milliseconds(opts_.kill_grace_ms);
    }
    if (reason.empty() && (cancelled() || now >= deadline)) {
      reason = cancelled() ? "cancelled" : "timeout";
      signal_all(p, SIGTERM);
      kill_at = now + std::chrono::milliseconds(opts_.kill_grace_ms);
    }
    if (kill_at && now >= *kill_at) {
      signal_all(p, SIGKILL);
      kill_at.reset();
    }
    if (!exited_at && p.TryWait()) exited_at = now;
    if (!open && exited_at) break;
    if (open && exited_at && now - *exited_at >= std::chrono::milliseconds(opts_.linger_ms)) {
      p.Signal(SIGKILL);  // children still hold the pipes open after the job's main process ended
      break;
    }
  }
  ExitStatus st = p.Wait();
  // A run ends with its job: what it left behind (a daemon, a setsid child) is stopped too.
  if (const int left = SignalProcessesWithEnv(tag, SIGKILL); left > 0)
    sink.OnLeftovers(a.run_id(), left);
  output.Finish();
  seq = output.seq();
  log.flush();
  // A log that could not be written (a full disk) is the run's error, not a silent truncation.
  if (!log && reason.empty()) {
    reason = "output_failed: cannot write " + run_dir + "/output.log (disk full?)";
    fin.set_infra_failure(true);
  }
  fin.set_signal(st.signal);
  fin.set_lines(output.lines());
  for (const auto& [metric, note] : output.Notes())
    (*fin.mutable_metric_notes())[metric] = SanitizeUtf8(note, 1024);
  fin.set_stderr_tail(output.StderrTail());
  if (reason == "timeout") reason = "timeout after " + std::to_string(a.timeout_ms() / 1000) + "s";
  if (duration_reached && reason.empty() && st.signal != SIGKILL) {
    fin.set_duration_reached(true);
    fin.set_signal(0);
    return finish("", 0);
  }
  if (duration_reached && reason.empty())
    reason = "did not stop within " + std::to_string(opts_.kill_grace_ms / 1000) +
             "s of SIGTERM at the end of its requested duration";
  finish(reason, st.exit_code);
}

}  // namespace tunectl

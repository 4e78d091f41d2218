#include "core/slurm.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace tunectl {
namespace {

constexpr int64_t kMinuteMs = 60 * 1000;

std::string_view TrimView(std::string_view s) {
  const char* const kSpace = " \t\r\n";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(kSpace);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t p = s.find(sep);
    out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) return out;
    s.remove_prefix(p + 1);
  }
}

// Quotes a value for an error message, line breaks and NUL bytes made visible.
std::string Quoted(std::string_view s) {
  constexpr size_t kMax = 200;
  std::string out = "'";
  for (char c : s.substr(0, kMax)) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\0')
      out += "\\0";
    else
      out += c;
  }
  out += "'";
  if (s.size() > kMax) out += "...";
  return out;
}

// ---- rendering -------------------------------------------------------------------------------

bool IsShellName(std::string_view name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

// sbatch reads an #SBATCH line with its own small parser (opt.c, _get_argument), not the shell's:
// whitespace separates arguments, '…' and "…" group, a backslash escapes the next character even
// inside quotes, and an unquoted '#' starts a comment. A value with none of these characters is
// written bare ("--partition=gpu", "--nodelist=gpu[03-04]"); any other value inside double quotes
// with '\' and '"' escaped.
std::string SbatchQuote(std::string_view v) {
  const bool bare = !v.empty() && v.find_first_of(" \t\"'\\#") == std::string_view::npos;
  if (bare) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

// sbatch expands %j, %x, %N, … in --output; "%%" is a literal '%'.
std::string EscapeFilenamePattern(std::string_view path) {
  std::string out;
  for (char c : path) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

// A value for an #SBATCH line: one line, no NUL.
Status CheckSbatchValue(std::string_view field, std::string_view value) {
  if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string_view::npos)
    return Status::InvalidArgument(std::string(field) + " " + Quoted(value) +
                                   " holds a line break or a NUL byte; an #SBATCH option must be "
                                   "one line");
  return Status::Ok();
}

// A value for the shell: single quotes carry anything but a NUL byte.
Status CheckShellValue(std::string_view field, std::string_view value) {
  if (value.find('\0') != std::string_view::npos)
    return Status::InvalidArgument(std::string(field) + " " + Quoted(value) +
                                   " holds a NUL byte, which a shell word cannot carry");
  return Status::Ok();
}

// ---- parsing ---------------------------------------------------------------------------------

// "CANCELLED by 0" -> "CANCELLED"; sacct's truncation mark "CANCELLED+" -> "CANCELLED".
std::string BareState(std::string_view s) {
  s = TrimView(s);
  s = s.substr(0, s.find_first_of(" \t"));
  while (!s.empty() && s.back() == '+') s.remove_suffix(1);
  return std::string(s);
}

std::string CleanNodes(std::string_view s) {
  s = TrimView(s);
  if (s == "(null)" || s == "None assigned" || s == "None" || s == "N/A") return "";
  return std::string(s);
}

std::string CleanTime(std::string_view s) {
  s = TrimView(s);
  if (s == "Unknown" || s == "N/A" || s == "None" || s == "(null)") return "";
  return std::string(s);
}

bool ParseInt(std::string_view s, int* out) {
  s = TrimView(s);
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// "3:0" -> exit 3, signal 0. False when the text is not two numbers.
bool ParseExitCode(std::string_view s, SlurmJobInfo* job) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  int code = 0, sig = 0;
  if (!ParseInt(s.substr(0, colon), &code) || !ParseInt(s.substr(colon + 1), &sig)) return false;
  job->has_exit = true;
  job->exit_code = code;
  job->signal = sig;
  return true;
}

// Does the word start a "Key=" of scontrol's or jobcomp's output? Keys are letters, digits and
// ":/_" ("AllocNode:Sid", "CPUs/Task", "MCS_label"), starting with a letter.
bool StartsKey(std::string_view word) {
  const size_t eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  const char c0 = word[0];
  if (!((c0 >= 'A' && c0 <= 'Z') || (c0 >= 'a' && c0 <= 'z'))) return false;
  for (char c : word.substr(0, eq))
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' ||
          c == '/' || c == '_'))
      return false;
  return true;
}

// "JobId=1 JobName=wrap … Command=/a b/c WorkDir=/w": a word that does not start a key belongs to
// the value before it, so values keep their spaces (Command=/a b/c) and their '=' (TRES=cpu=1,…).
// The first occurrence of a key wins: fields that hold free text (a command's arguments, a
// comment) come after the ones read here and cannot override them.
std::map<std::string, std::string, std::less<>> KeyValues(std::string_view record) {
  std::map<std::string, std::string, std::less<>> kv;
  std::string key, value;
  bool have = false;
  auto flush = [&] {
    if (have) kv.emplace(std::move(key), std::string(TrimView(value)));
    key.clear();
    value.clear();
  };
  for (std::string_view word : Split(record, ' ')) {
    if (StartsKey(word)) {
      flush();
      const size_t eq = word.find('=');
      key = std::string(word.substr(0, eq));
      value = std::string(word.substr(eq + 1));
      have = true;
    } else if (have) {
      value += ' ';
      value += word;
    }
  }
  flush();
  return kv;
}

std::string_view Get(const std::map<std::string, std::string, std::less<>>& kv,
                     std::string_view key) {
  auto it = kv.find(key);
  return it == kv.end() ? std::string_view() : std::string_view(it->second);
}

// A job from scontrol's or jobcomp's Key=Value record.
SlurmJobInfo FromKeyValues(const std::map<std::string, std::string, std::less<>>& kv) {
  SlurmJobInfo job;
  job.id = std::string(Get(kv, "JobId"));
  job.state = BareState(Get(kv, "JobState"));
  job.reason = std::string(TrimView(Get(kv, "Reason")));
  job.nodes = CleanNodes(Get(kv, "NodeList"));
  job.start_time = CleanTime(Get(kv, "StartTime"));
  int restarts = 0;
  if (ParseInt(Get(kv, "Restarts"), &restarts)) job.restarts = restarts;
  ParseExitCode(Get(kv, "ExitCode"), &job);
  return job;
}

bool HasAny(std::string_view text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return text.find(n) != std::string_view::npos; });
}

}  // namespace

// ---- rendering -------------------------------------------------------------------------------

std::string FormatSlurmTime(int64_t ms) {
  // Slurm reads a limit of zero as "no limit": the shortest limit written is one minute.
  int64_t minutes = ms <= 0 ? 1 : ms / kMinuteMs + (ms % kMinuteMs != 0 ? 1 : 0);
  const int64_t days = minutes / (24 * 60);
  minutes %= 24 * 60;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:00", static_cast<long long>(days),
                static_cast<long long>(minutes / 60), static_cast<long long>(minutes % 60));
  return buf;
}

Result<std::string> RenderSbatch(const SbatchJob& job, const SlurmOptions& opts) {
  if (job.argv.empty())
    return Status::InvalidArgument("argv is empty: a Slurm job needs a command to run");
  if (job.argv[0].empty())
    return Status::InvalidArgument("argv[0] is empty: a Slurm job needs a command to run");
  if (job.run_dir.empty())
    return Status::InvalidArgument(
        "run_dir is empty: the job's output file goes to <run_dir>/output.log");
  const Resources& r = job.resources;
  if (r.nodes < 0 || r.gpus_per_node < 0 || r.cpus_per_task < 0 || r.mem_mb < 0 || r.time_ms < 0)
    return Status::InvalidArgument(
        "resources: nodes, gpus_per_node, cpus_per_task, mem_mb and "
        "time_ms must be 0 (not asked) or positive");

  std::vector<std::string> lines;  // #SBATCH options
  Status bad;                      // the first value that cannot be written, by its field
  auto option = [&](std::string_view field, std::string_view name, std::string_view value) {
    if (!bad.ok()) return;
    bad = CheckSbatchValue(field, value);
    lines.push_back("--" + std::string(name) + "=" + SbatchQuote(value));
  };
  const std::string id = std::to_string(job.run_id) + "-" + std::to_string(job.attempt);
  option("run_id", "job-name", "tunectl-" + id);
  option("workload", "comment",
         "tunectl workload=" + job.workload + " run=" + std::to_string(job.run_id) +
             " attempt=" + std::to_string(job.attempt));
  // stdout and stderr in one file, in the order written (the executor tails it). Appended, never
  // truncated: a file being tailed must not shrink if Slurm starts the job again (a requeue).
  option("run_dir", "output", EscapeFilenamePattern(job.run_dir + "/output.log"));
  lines.push_back("--open-mode=append");
  if (!job.workdir.empty()) option("workdir", "chdir", job.workdir);
  if (!opts.partition.empty()) option("slurm.partition", "partition", opts.partition);
  if (!opts.account.empty()) option("slurm.account", "account", opts.account);
  if (!opts.qos.empty()) option("slurm.qos", "qos", opts.qos);
  if (opts.exclusive) lines.push_back("--exclusive");
  if (r.nodes > 0) option("resources.nodes", "nodes", std::to_string(r.nodes));
  if (r.gpus_per_node > 0)
    option("resources.gpus_per_node", "gres", "gpu:" + std::to_string(r.gpus_per_node));
  if (r.cpus_per_task > 0)
    option("resources.cpus_per_task", "cpus-per-task", std::to_string(r.cpus_per_task));
  if (r.mem_mb > 0) option("resources.mem_mb", "mem", std::to_string(r.mem_mb) + "M");
  if (r.time_ms > 0)
    option("resources.time_ms", "time", FormatSlurmTime(r.time_ms));
  else if (job.timeout_ms > 0)
    option("timeout_ms", "time", FormatSlurmTime(job.timeout_ms + kMinuteMs));
  if (!job.nodelist.empty()) option("nodelist", "nodelist", job.nodelist);
  for (size_t i = 0; i < opts.extra.size(); ++i) {
    const std::string field = "slurm.extra[" + std::to_string(i) + "]";
    const std::string& e = opts.extra[i];
    if (bad.ok() && (e.size() < 2 || e[0] != '-'))
      bad = Status::InvalidArgument(field + " " + Quoted(e) +
                                    " is not an sbatch option: write one option per entry, "
                                    "starting with '-' (\"--constraint=a100\")");
    if (bad.ok()) bad = CheckSbatchValue(field, e);
    lines.push_back(SbatchQuote(e));
  }
  if (!bad.ok()) return bad;

  std::string out = "#!/bin/bash\n";
  for (const auto& l : lines) out += "#SBATCH " + l + "\n";
  for (const auto& [name, value] : job.env) {
    if (!IsShellName(name))
      return Status::InvalidArgument(
          "env name " + Quoted(name) +
          " is not a shell variable name (letters, digits and '_', not starting with a digit)");
    if (Status s = CheckShellValue("env " + name, value); !s.ok()) return s;
    out += "export " + name + "=" + ShellQuote(value) + "\n";
  }
  std::string command;
  for (size_t i = 0; i < job.argv.size(); ++i) {
    if (Status s = CheckShellValue("argv[" + std::to_string(i) + "]", job.argv[i]); !s.ok())
      return s;
    command += " " + ShellQuote(job.argv[i]);
  }
  if (r.nodes > 1) {
    // One task per node. srun of Slurm 22.05 does not take --cpus-per-task from the batch job's
    // environment (SLURM_CPUS_PER_TASK), so it is given again.
    std::string srun = "srun --nodes=" + std::to_string(r.nodes) +
                       " --ntasks=" + std::to_string(r.nodes) + " --ntasks-per-node=1";
    if (r.cpus_per_task > 0) srun += " --cpus-per-task=" + std::to_string(r.cpus_per_task);
    out += "exec " + srun + " --" + command + "\n";
  } else {
    out += "exec" + command + "\n";
  }
  return out;
}

// ---- parsing ---------------------------------------------------------------------------------

Status CheckSlurmOptions(const SlurmOptions& opts) {
  SbatchJob probe;  // a job of no consequence: only the options can be refused
  probe.run_id = probe.attempt = 1;
  probe.argv = {"true"};
  probe.run_dir = "/tmp";
  auto r = RenderSbatch(probe, opts);
  return r.ok() ? Status::Ok() : r.status();
}

bool IsAnotherExecution(const SlurmJobInfo& job, const std::string& seen_start) {
  if (job.state == "SUSPENDED" || job.state == "STOPPED") return false;
  const SlurmPhase phase = PhaseOf(job.state);
  return phase == SlurmPhase::kPending || job.restarts > 0 ||
         (phase == SlurmPhase::kRunning && !job.start_time.empty() && !seen_start.empty() &&
          job.start_time != seen_start);
}

bool PinnedNodesRefused(std::string_view reason) {
  for (std::string_view r :
       {"ReqNodeNotAvail", "NodeDown", "BadConstraints", "PartitionNodeLimit", "InvalidNodeName"})
    if (reason.substr(0, r.size()) == r) return true;
  return false;
}

Result<std::optional<SlurmJobInfo>> ParseSqueue(std::string_view out, std::string_view job_id) {
  std::optional<SlurmJobInfo> found;
  for (std::string_view line : Lines(out)) {
    if (TrimView(line).empty()) continue;
    const std::vector<std::string_view> f = Split(line, '|');
    if (f.size() < 5)
      return Status::InvalidArgument("squeue line " + Quoted(line) + " does not have the " +
                                     std::to_string(5) + " fields of " + kSqueueFormat);
    if (TrimView(f[0]) != job_id) continue;
    SlurmJobInfo job;
    job.id = std::string(TrimView(f[0]));
    job.state = BareState(f[1]);
    // The reason is free text (a job's state description): a '|' in it leaves the fields around
    // it where they are, the node list and the start time last.
    std::string reason;
    for (size_t i = 2; i + 2 < f.size(); ++i) reason += (i > 2 ? "|" : "") + std::string(f[i]);
    job.reason = std::string(TrimView(reason));
    job.nodes = CleanNodes(f[f.size() - 2]);
    job.start_time = CleanTime(f[f.size() - 1]);
    if (job.state.empty())
      return Status::InvalidArgument("squeue line " + Quoted(line) + " has no job state");
    found = std::move(job);
  }
  return found;
}

Result<std::optional<SlurmJobInfo>> ParseScontrolJob(std::string_view out,
                                                     std::string_view job_id) {
  // `scontrol show job -o` prints one record a line; without -o a record's later lines are
  // indented. A record starts at "JobId=".
  std::vector<std::string> records;
  bool unknown = false;
  std::string other;
  for (std::string_view line : Lines(out)) {
    std::string_view t = TrimView(line);
    if (t.empty()) continue;
    if (t.rfind("JobId=", 0) == 0) {
      records.emplace_back(t);
    } else if (t.find("Invalid job id specified") != std::string_view::npos) {
      unknown = true;
    } else if (!records.empty() && line.size() > t.size() && (line[0] == ' ' || line[0] == '\t')) {
      records.back() += " ";
      records.back() += t;
    } else if (other.empty()) {
      other = std::string(t);
    }
  }
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const auto kv = KeyValues(*it);
    if (Get(kv, "JobId") != job_id) continue;
    SlurmJobInfo job = FromKeyValues(kv);
    if (job.state.empty())
      return Status::InvalidArgument("scontrol show job record " + Quoted(*it) +
                                     " has no JobState=");
    return std::optional<SlurmJobInfo>(std::move(job));
  }
  if (records.empty() && !unknown && !other.empty())
    return Status::InvalidArgument("scontrol show job printed " + Quoted(other) +
                                   ", neither a job record (JobId=…) nor \"Invalid job id "
                                   "specified\"");
  return std::optional<SlurmJobInfo>();
}

std::optional<SlurmJobInfo> ParseJobcomp(std::string_view log, std::string_view job_id) {
  // Cheap test first: the log holds one line per ended job, for every job of the cluster.
  const std::string prefix = "JobId=" + std::string(job_id) + " ";
  std::optional<SlurmJobInfo> found;
  for (std::string_view line : Lines(log)) {
    if (line.rfind(prefix, 0) != 0) continue;
    SlurmJobInfo job = FromKeyValues(KeyValues(line));
    if (job.id != job_id || job.state.empty()) continue;
    job.reason.clear();  // jobcomp/filetxt has no Reason=
    job.restarts = 0;
    found = std::move(job);
  }
  return found;
}

Result<std::optional<SlurmJobInfo>> ParseSacct(std::string_view out, std::string_view job_id) {
  std::optional<SlurmJobInfo> found;
  for (std::string_view line : Lines(out)) {
    if (TrimView(line).empty()) continue;
    const std::vector<std::string_view> f = Split(line, '|');
    if (f.size() < 6)
      return Status::InvalidArgument("sacct line " + Quoted(line) + " does not have the " +
                                     std::to_string(6) + " fields of " + kSacctFields);
    if (TrimView(f[0]) != job_id) continue;
    SlurmJobInfo job;
    job.id = std::string(TrimView(f[0]));
    job.state = BareState(f[1]);
    if (!ParseExitCode(TrimView(f[2]), &job) && !TrimView(f[2]).empty())
      return Status::InvalidArgument("sacct line " + Quoted(line) + ": ExitCode " +
                                     Quoted(TrimView(f[2])) + " is not <exit>:<signal>");
    job.nodes = CleanNodes(f[3]);
    std::string reason;
    for (size_t i = 4; i + 1 < f.size(); ++i) reason += (i > 4 ? "|" : "") + std::string(f[i]);
    job.reason = std::string(TrimView(reason));
    job.start_time = CleanTime(f.back());
    if (job.state.empty())
      return Status::InvalidArgument("sacct line " + Quoted(line) + " has no job state");
    found = std::move(job);  // with -D a requeued job has a line per run: the last is the latest
  }
  return found;
}

Result<std::string> ParseSbatchJobId(std::string_view out) {
  const std::string_view t = TrimView(out);
  const std::string_view id = TrimView(t.substr(0, t.find(';')));
  const bool digits =
      !id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits)
    return Status::InvalidArgument("sbatch --parsable printed " + Quoted(t) +
                                   ", not a job id (\"123\" or \"123;cluster\")");
  return std::string(id);
}

std::optional<std::string> ParseSlurmConfig(std::string_view out, std::string_view key) {
  for (std::string_view line : Lines(out)) {
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || TrimView(line.substr(0, eq)) != key) continue;
    const std::string_view value = TrimView(line.substr(eq + 1));
    if (value.empty() || value == "(null)") return std::nullopt;
    return std::string(value);
  }
  return std::nullopt;
}

// ---- meaning ---------------------------------------------------------------------------------

SlurmPhase PhaseOf(std::string_view state) {
  // Slurm prints a job's state flag before its base state (job_state_string): a requeued job that
  // is still cleaning up shows COMPLETING, one held after a requeue REQUEUE_HOLD.
  static constexpr std::string_view kPending[] = {
      "PENDING",   "CONFIGURING",  "REQUEUED",      "REQUEUE_HOLD",  "REQUEUE_FED",
      "SUSPENDED", "SPECIAL_EXIT", "RESV_DEL_HOLD", "POWER_UP_NODE", "STOPPED",
  };
  static constexpr std::string_view kRunning[] = {
      "RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING",
  };
  const std::string s = BareState(state);
  for (std::string_view p : kPending)
    if (s == p) return SlurmPhase::kPending;
  for (std::string_view p : kRunning)
    if (s == p) return SlurmPhase::kRunning;
  return SlurmPhase::kEnded;
}

SlurmEnd ClassifySlurmEnd(const SlurmJobInfo& job, bool cancelled_by_agent) {
  SlurmEnd end;
  end.exit_code = job.exit_code;
  end.signal = job.signal;
  const std::string state = BareState(job.state);
  const bool informative_reason =
      !job.reason.empty() && job.reason != "None" && job.reason != "NonZeroExitCode";
  auto cluster = [&](std::string reason) {
    end.infra_failure = true;
    end.reason = std::move(reason);
    return end;
  };
  auto own = [&](std::string reason) {
    end.reason = std::move(reason);
    return end;
  };
  if (state == "COMPLETED") {
    end.succeeded = job.exit_code == 0 && job.signal == 0;
    return end;  // a nonzero code (not seen from Slurm) says itself, as below
  }
  if (state == "CANCELLED") {
    if (cancelled_by_agent) return own("cancelled");
    return cluster(
        "cancelled outside tunectl: Slurm CANCELLED (an operator's or the cluster's scancel)");
  }
  if (state == "FAILED") {
    // A batch job ended by `scancel --signal=TERM --full` is FAILED with ExitCode 0:15 (and, in
    // Slurm 22.05, Reason=JobLaunchFailure): after the agent's own cancel that is the cancel.
    if (cancelled_by_agent && (job.signal == 15 || job.signal == 9)) return own("cancelled");
    // Slurm could not start the script (its --chdir or --output directory is missing on the
    // node): FAILED, Reason=JobLaunchFailure, ExitCode 0:53, where 53 is no signal. Slurm 22.05
    // gives the same reason to a script killed by a signal (0:9, 0:15), so the number decides.
    const bool real_signal = job.signal >= 1 && job.signal <= 31;
    if (job.exit_code == 0 && !real_signal && (job.reason == "JobLaunchFailure" || job.signal)) {
      end.signal = 0;
      return cluster("launch_failed: Slurm could not start the job's script" +
                     (job.nodes.empty() ? std::string() : " on " + job.nodes) +
                     " (ExitCode 0:" + std::to_string(job.signal) +
                     "): its working directory or run directory is not reachable there");
    }
    // The exit code or signal says it, as a local run's does (the run's failure cause then comes
    // from them and the output's last lines, the same for every executor).
    if (job.exit_code != 0 || job.signal != 0) return own("");
    return own("failed: Slurm FAILED" +
               (informative_reason ? " (" + job.reason + ")" : std::string()) +
               " without an exit code");
  }
  if (state == "TIMEOUT") return own("timeout: Slurm's time limit (--time) was reached");
  if (state == "OUT_OF_MEMORY")
    return own("host OOM: Slurm OUT_OF_MEMORY, the job used more memory than --mem allows");
  if (state == "NODE_FAIL")
    return cluster("node failure: Slurm NODE_FAIL, a node of the job failed");
  if (state == "PREEMPTED") return cluster("preempted: Slurm PREEMPTED the job for another");
  if (state == "BOOT_FAIL") return cluster("boot failure: Slurm BOOT_FAIL, a node did not boot");
  if (state == "DEADLINE") return cluster("deadline: Slurm DEADLINE, the job's deadline passed");
  if (state == "REVOKED")
    return cluster("revoked: Slurm REVOKED, the federation ran the job on another cluster");
  // A state this code does not know (a newer Slurm), or one that is not an end: the run did not
  // fail on its own account, so it is retried.
  return cluster("ended in Slurm state " + (state.empty() ? std::string("(none)") : state) +
                 (informative_reason ? " (" + job.reason + ")" : std::string()));
}

bool IsTransientSlurmError(std::string_view stderr_text) {
  // The controller (or the munge daemon that authenticates to it) did not answer, or answered
  // that it is busy: the same request may succeed later. Real texts of Slurm 22.05:
  //   "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
  //   "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect
  //    failure)"
  //   "scancel: error: Kill job error on job id 10: Unable to contact slurm controller (connect
  //    failure)"
  return HasAny(stderr_text, {
                                 "Unable to contact slurm controller",
                                 "Slurm controller not responding",
                                 "Socket timed out on send/recv operation",
                                 "Zero Bytes were transmitted or received",
                                 "Communication connection failure",
                                 "Connection refused",
                                 "Connection reset by peer",
                                 "Connection timed out",
                                 "Resource temporarily unavailable",
                                 "temporarily unable to accept job",
                                 "Slurm backup controller in standby mode",
                                 "Slurmctld is in standby mode",
                                 "Munge encode failed",
                                 "Munged communication error",
                             });
}

std::string FirstNodeOf(std::string_view nodelist) {
  if (nodelist.empty() || nodelist == "(null)") return "";
  const size_t comma = nodelist.find(',');
  const size_t bracket = nodelist.find('[');
  if (bracket == std::string_view::npos || (comma != std::string_view::npos && comma < bracket))
    return std::string(nodelist.substr(0, comma));
  std::string_view range = nodelist.substr(bracket + 1);
  const size_t end = range.find_first_of("-,]");
  return std::string(nodelist.substr(0, bracket)) + std::string(range.substr(0, end));
}

}  // namespace tunectl

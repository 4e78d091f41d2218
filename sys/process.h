// Launching child processes. ProcessLauncher is the one seam for process creation: the real
// implementation uses posix_spawn with the child in its own process group (so a signal reaches
// the whole job tree); tests may substitute a recording fake. A Process is used by one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

// This machine's host name (gethostname).
std::string HostName();

struct ProcessSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env_overrides;  // added to (or replacing in) the parent's env
  std::string cwd;                                   // "" = the parent's
};

struct ExitStatus {
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;
  bool ok() const { return signal == 0 && exit_code == 0; }
  std::string ToString() const;
};

enum class Stream { kStdout, kStderr };

class Process {
 public:
  using LineFn = std::function<void(Stream, std::string_view)>;
  virtual ~Process() = default;
  virtual int pid() const = 0;
  // Waits up to `timeout` for output and calls `on_line` for each complete line (without the
  // newline; lines over 1 MiB are split). Returns false once both streams reached end of file
  // (a final unterminated line is delivered first).
  virtual bool Poll(std::chrono::milliseconds timeout, const LineFn& on_line) = 0;
  // Sends `sig` to the child's process group.
  virtual void Signal(int sig) = 0;
  // Blocks until the child exits; idempotent.
  virtual ExitStatus Wait() = 0;
  // The exit status if the child has exited, without blocking.
  virtual std::optional<ExitStatus> TryWait() = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  virtual Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) = 0;
};

std::unique_ptr<ProcessLauncher> NewPosixProcessLauncher();

struct CommandResult {
  ExitStatus status;
  std::string output;      // stdout and stderr, interleaved by line (the first 64 KiB)
  bool timed_out = false;  // killed (its whole process group) at the timeout or on `stop`
};

// Processes of this user whose environment holds an entry starting with `prefix` (e.g.
// "TUNECTL_RUN_DIR=/runs/7-1"): a job's whole tree, setsid and daemonised children included, as
// long as they keep the environment they inherited. The calling process is never listed.
std::vector<int> ProcessesWithEnv(const std::string& prefix);
// Sends `sig` to each of them; returns how many were signalled.
int SignalProcessesWithEnv(const std::string& prefix, int sig);

// Runs a command to completion, collecting its output. With a `timeout` (0 = none), or once
// `*stop` is set, its process group is killed and the result says timed_out.
Result<CommandResult> RunCommand(ProcessLauncher& launcher, const ProcessSpec& spec,
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                                 const std::atomic<bool>* stop = nullptr);

}  // namespace tunectl

#include "sys/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

extern char** environ;

namespace tunectl {

std::string HostName() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}
namespace {

constexpr size_t kMaxLine = 1 << 20;

class PosixProcess : public Process {
 public:
  PosixProcess(pid_t pid, int out_fd, int err_fd) : pid_(pid) {
    fds_[0] = out_fd;
    fds_[1] = err_fd;
  }
  ~PosixProcess() override {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
    if (!exit_) {
      Signal(SIGKILL);
      Wait();
    }
  }
  int pid() const override { return pid_; }

  bool Poll(std::chrono::milliseconds timeout, const LineFn& on_line) override {
    pollfd pfds[2];
    int n = 0;
    int idx[2];
    for (int i = 0; i < 2; ++i) {
      if (fds_[i] < 0) continue;
      pfds[n] = {fds_[i], POLLIN, 0};
      idx[n++] = i;
    }
    if (n == 0) return false;
    int r = ::poll(pfds, static_cast<nfds_t>(n), static_cast<int>(timeout.count()));
    if (r < 0 && errno != EINTR) return false;
    if (r <= 0) return true;
    char buf[65536];
    for (int k = 0; k < n; ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int i = idx[k];
      ssize_t got = ::read(fds_[i], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      Stream s = i == 0 ? Stream::kStdout : Stream::kStderr;
      if (got <= 0) {
        if (!partial_[i].empty()) on_line(s, partial_[i]);
        partial_[i].clear();
        close(fds_[i]);
        fds_[i] = -1;
        continue;
      }
      std::string& p = partial_[i];
      p.append(buf, static_cast<size_t>(got));
      size_t start = 0;
      for (;;) {
        size_t nl = p.find('\n', start);
        if (nl == std::string::npos) break;
        on_line(s, std::string_view(p).substr(start, nl - start));
        start = nl + 1;
      }
      p.erase(0, start);
      while (p.size() > kMaxLine) {
        on_line(s, std::string_view(p).substr(0, kMaxLine));
        p.erase(0, kMaxLine);
      }
    }
    return fds_[0] >= 0 || fds_[1] >= 0;
  }

  void Signal(int sig) override {
    if (exit_) return;
    ::kill(-pid_, sig);
  }

  ExitStatus Wait() override {
    if (exit_) return *exit_;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    return Record(status);
  }

  std::optional<ExitStatus> TryWait() override {
    if (exit_) return exit_;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
    return Record(status);
  }

 private:
  ExitStatus Record(int status) {
    ExitStatus e;
    if (WIFSIGNALED(status))
      e.signal = WTERMSIG(status);
    else
      e.exit_code = WEXITSTATUS(status);
    exit_ = e;
    return e;
  }

  pid_t pid_;
  int fds_[2];
  std::string partial_[2];
  std::optional<ExitStatus> exit_;
};

class PosixLauncher : public ProcessLauncher {
 public:
  Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) override {
    if (spec.argv.empty()) return Status::InvalidArgument("empty argv");
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
      return Status::Internal(std::string("pipe: ") + strerror(errno));
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      return Status::Internal(std::string("pipe: ") + strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_USEVFORK);

    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
      std::string_view kv(*e);
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    for (const auto& [k, v] : spec.env_overrides) env[k] = v;
    std::vector<std::string> env_strs;
    for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : env_strs) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = spec.argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    pid_t pid = 0;
    int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(out[1]);
    close(err[1]);
    if (rc != 0) {
      close(out[0]);
      close(err[0]);
      std::string where = spec.cwd.empty() ? "" : " (in " + spec.cwd + ")";
      return Status::InvalidArgument("cannot start " + spec.argv[0] + where + ": " + strerror(rc));
    }
    return std::unique_ptr<Process>(new PosixProcess(pid, out[0], err[0]));
  }
};

}  // namespace

std::string ExitStatus::ToString() const {
  if (signal)
    return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) +
           ")";
  return "exit code " + std::to_string(exit_code);
}

std::unique_ptr<ProcessLauncher> NewPosixProcessLauncher() {
  return std::make_unique<PosixLauncher>();
}

std::vector<int> ProcessesWithEnv(const std::string& prefix) {
  std::vector<int> out;
  const int self = getpid();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::atoi(name.c_str());
    if (pid == self) continue;
    std::ifstream f(e.path() / "environ", std::ios::binary);  // unreadable: not ours
    if (!f) continue;
    std::string entry;
    while (std::getline(f, entry, '\0'))
      if (entry.compare(0, prefix.size(), prefix) == 0) {
        out.push_back(pid);
        break;
      }
  }
  return out;
}

int SignalProcessesWithEnv(const std::string& prefix, int sig) {
  int n = 0;
  for (int pid : ProcessesWithEnv(prefix)) n += ::kill(pid, sig) == 0;
  return n;
}

Result<CommandResult> RunCommand(ProcessLauncher& launcher, const ProcessSpec& spec,
                                 std::chrono::milliseconds timeout, const std::atomic<bool>* stop) {
  auto p = launcher.Start(spec);
  if (!p.ok()) return p.status();
  CommandResult r;
  const auto deadline = timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout
                                            : std::chrono::steady_clock::time_point::max();
  auto on_line = [&](Stream, std::string_view line) {
    if (r.output.size() < 65536) r.output.append(line).push_back('\n');
  };
  bool open = true;
  for (;;) {
    if (open)
      open = (*p)->Poll(std::chrono::milliseconds(100), on_line);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!open && (*p)->TryWait()) break;
    if (std::chrono::steady_clock::now() >= deadline || (stop && stop->load())) {
      // The whole group: a shell and what it started.
      (*p)->Signal(SIGKILL);
      r.status = (*p)->Wait();
      r.timed_out = true;
      return r;
    }
  }
  r.status = (*p)->Wait();
  return r;
}

}  // namespace tunectl

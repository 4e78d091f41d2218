// tunectl-agent: parse flags, wire, run until SIGINT/SIGTERM.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <tuple>

#include "agent/agent.h"
#include "sys/signals.h"

int main(int argc, char** argv) {
  tunectl::AgentOptions opts;
  std::vector<std::string> labels;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  opts.name = host;
  CLI::App app{"tunectl-agent: runs jobs for tunectl-server on this node"};
  app.add_option("--server", opts.server, "server address HOST:PORT")->capture_default_str();
  app.add_option("--name", opts.name, "agent name, unique in the cluster")->capture_default_str();
  app.add_option("--slots", opts.slots, "runs executed at once")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--label", labels, "label KEY=VALUE (repeatable), matched by workload selectors");
  app.add_option("--workdir", opts.executor.workdir,
                 "working directory of launched jobs (default: the current directory)");
  app.add_option("--runs-dir", opts.executor.runs_dir,
                 "where run directories (generated files, output.log) go");
  app.add_option("--batch-samples", opts.executor.batch_max_samples,
                 "send a metric batch at this many samples")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--batch-ms", opts.executor.batch_max_ms,
                 "send a metric batch when its oldest sample is this old")
      ->capture_default_str()
      ->check(CLI::Range(10, 600000));
  app.add_option("--idle-probe", opts.idle_probe,
                 "shell command that exits 0 when the node is free of production work; while it "
                 "fails, no runs start here");
  app.add_option("--idle-probe-timeout", opts.idle_probe_timeout_ms,
                 "milliseconds the idle probe may run; a probe still running then is killed and "
                 "the node counts as busy")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  std::string gpus, cpus;
  app.add_option("--gpus", gpus,
                 "GPUs this agent may use, split evenly among its slots (e.g. --gpus 0,1,2,3 "
                 "--slots 2: slot 0 gets CUDA_VISIBLE_DEVICES=0,1, slot 1 gets 2,3)");
  app.add_option("--cpus", cpus,
                 "CPUs this agent may use, split evenly among its slots; each job is pinned to "
                 "its slot's share (taskset), e.g. --cpus 0-15");
  app.add_flag("--isolated-slots", opts.isolated_slots,
               "the slots do not disturb each other, so an experiment's control and variant may "
               "run here at the same time (default: one of an experiment's runs at a time)");
  std::string spool = "default";
  app.add_option("--spool-dir", spool,
                 "unacked results are kept here until the server acks them, across agent "
                 "restarts (default <runs-dir>/.spool; \"\" = memory only)");
  CLI11_PARSE(app, argc, argv);

  for (const auto& l : labels) {
    auto eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "--label: \"" << l << "\" is not KEY=VALUE (e.g. --label gpu=a100)\n";
      return 2;
    }
    opts.labels[l.substr(0, eq)] = l.substr(eq + 1);
  }
  for (auto [flag, text, out] : {std::tuple{"--gpus", &gpus, &opts.slot_gpus},
                                 std::tuple{"--cpus", &cpus, &opts.slot_cpus}}) {
    if (text->empty()) continue;
    auto ids = tunectl::ParseIdList(flag, *text);
    auto split = ids.ok() ? tunectl::SplitAmongSlots(flag, *ids, opts.slots)
                          : tunectl::Result<std::vector<std::string>>(ids.status());
    if (!split.ok()) {
      std::cerr << split.status().message() << "\n";
      return 2;
    }
    *out = *split;
  }
  if (opts.executor.workdir.empty()) opts.executor.workdir = std::filesystem::current_path();
  if (opts.executor.runs_dir.empty()) {
    const char* home = std::getenv("HOME");
    std::string base =
        geteuid() == 0 || !home ? "/var/lib/tunectl" : std::string(home) + "/.local/share/tunectl";
    opts.executor.runs_dir = base + "/agent-" + opts.name + "/runs";
  }
  opts.spool_dir = spool == "default" ? opts.executor.runs_dir + "/.spool" : spool;

  tunectl::TerminationSignals signals;

  auto launcher = tunectl::NewPosixProcessLauncher();
  auto log = [](tunectl::LogLevel l, const std::string& m) {
    if (l == tunectl::LogLevel::kWarn)
      spdlog::warn("{}", m);
    else if (l == tunectl::LogLevel::kError)
      spdlog::error("{}", m);
    else
      spdlog::info("{}", m);
  };
  // The tag that finds this agent's jobs (its name and runs dir, stable across restarts): the
  // executor marks jobs with it and the agent stops an earlier life's jobs by it, so both get it.
  if (opts.executor.job_tag.empty())
    opts.executor.job_tag = tunectl::DefaultJobTag(opts.name, opts.executor.runs_dir);
  tunectl::LocalExecutor executor(launcher.get(), opts.executor);
  tunectl::Agent agent(opts, launcher.get(), &executor, log);
  signals.OnSignal([&](int sig) {
    spdlog::info("signal {}: stopping", sig);
    agent.Stop();
  });
  spdlog::info("tunectl-agent {} -> {} ({} slots, runs in {})", opts.name, opts.server, opts.slots,
               opts.executor.runs_dir);
  agent.Run();
  return 0;
}

// tunectl-agent: parse flags, wire, run until SIGINT/SIGTERM.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "agent/agent.h"
#include "agent/kube_executor.h"
#include "agent/slurm_executor.h"
#include "core/names.h"
#include "core/spec.h"
#include "sys/endpoint.h"
#include "sys/signals.h"

int main(int argc, char** argv) {
  tunectl::AgentOptions opts;
  std::vector<std::string> labels;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  opts.name = host;
  CLI::App app{"tunectl-agent: runs jobs for tunectl-server on this node"};
  tunectl::EndpointRequest ep;
  ep.server = opts.endpoint.server;
  app.add_option("--server", ep.server, "server address HOST:PORT")->capture_default_str();
  app.add_option("--token-file", ep.token_file,
                 "file holding this agent's token (role agent, bound to --name; default "
                 "$TUNECTL_TOKEN, $TUNECTL_TOKEN_FILE, else the client config's context for "
                 "--server)");
  app.add_option("--ca", ep.ca,
                 "CA (PEM) the server's certificate must chain to (default $TUNECTL_CA, else the "
                 "context's; none = plaintext, for a server run with --insecure)");
  app.add_option("--tls-cert", ep.client_cert, "client certificate (PEM) for mutual TLS");
  app.add_option("--tls-key", ep.client_key, "its private key (PEM)");
  app.add_option("--context", ep.context, "context of the client config to use");
  app.add_option("--name", opts.name, "agent name, unique in the cluster")->capture_default_str();
  app.add_option("--slots", opts.slots, "runs executed at once")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--label", labels, "label KEY=VALUE (repeatable), matched by workload selectors");
  app.add_option("--workdir", opts.executor.workdir,
                 "working directory of launched jobs (default: the current directory)");
  app.add_option("--runs-dir", opts.executor.runs_dir,
                 "where run directories (generated files, output.log) go");
  std::string keep_runs_for = "7d";
  app.add_option("--keep-runs-for", keep_runs_for,
                 "how long a finished run's directory (its output for `tunectl run logs`) is kept "
                 "after its last write, e.g. 7d, 36h; 0 = forever")
      ->capture_default_str();
  app.add_option("--node-exporter", opts.executor.exporters["node"],
                 "what a workload's `prometheus: node` metrics scrape; {node} is the run's node")
      ->capture_default_str();
  app.add_option("--dcgm-exporter", opts.executor.exporters["dcgm"],
                 "what a workload's `prometheus: dcgm` metrics scrape; {node} is the run's node")
      ->capture_default_str();
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
  std::string executor_kind = "local";
  app.add_option("--executor", executor_kind,
                 "where jobs run: local (child processes on this node), slurm (batch jobs "
                 "submitted from this login node), kubernetes (Jobs applied with kubectl)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "slurm", "kubernetes"}));
  tunectl::SlurmExecutorOptions slurm;
  std::string slurm_bin_dir;
  bool no_pin = false;
  app.add_option("--partition", slurm.slurm.partition,
                 "slurm: the partition jobs are submitted to (default: the cluster's default)");
  app.add_option("--account", slurm.slurm.account, "slurm: --account of the jobs");
  app.add_option("--qos", slurm.slurm.qos, "slurm: --qos of the jobs");
  app.add_flag("--exclusive", slurm.slurm.exclusive,
               "slurm: jobs get their nodes to themselves (sbatch --exclusive)");
  app.add_option("--sbatch-option", slurm.slurm.extra,
                 "slurm: a further sbatch option for every job, written as an #SBATCH line "
                 "(repeatable), e.g. --sbatch-option=--constraint=a100");
  app.add_option("--slurm-poll-ms", slurm.poll_ms, "slurm: how often a job's state is asked for")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  app.add_option("--slurm-bin-dir", slurm_bin_dir,
                 "slurm: where sbatch, squeue, scontrol, scancel and sacct are (default: PATH)");
  app.add_flag("--no-pin-nodes", no_pin,
               "slurm: do not keep an experiment's runs on the nodes its first run ran on");
  tunectl::KubeExecutorOptions kube;
  std::vector<std::string> kube_selectors, kube_tolerations;
  app.add_option("--kube-image", kube.kube.image,
                 "kubernetes: the container image jobs run in (required with --executor "
                 "kubernetes)");
  app.add_option("--kube-namespace", kube.kube.ns,
                 "kubernetes: the namespace of the Jobs (default: the context's)");
  app.add_option("--kube-context", kube.context, "kubernetes: the kubeconfig context to use");
  app.add_option("--kubeconfig", kube.kubeconfig,
                 "kubernetes: the kubeconfig file (default: kubectl's choice, in-cluster too)");
  app.add_option("--kubectl", kube.kubectl, "kubernetes: the kubectl binary")
      ->capture_default_str();
  app.add_option("--kube-service-account", kube.kube.service_account,
                 "kubernetes: serviceAccountName of the jobs' pods");
  app.add_option("--kube-node-selector", kube_selectors,
                 "kubernetes: KEY=VALUE a node must carry (repeatable)");
  app.add_option("--kube-toleration", kube_tolerations,
                 "kubernetes: key=value:Effect the pods tolerate (repeatable)");
  app.add_option("--kube-image-pull-policy", kube.kube.image_pull_policy,
                 "kubernetes: Always, IfNotPresent or Never (default: the cluster's)");
  app.add_option("--kube-gpu-resource", kube.kube.gpu_resource,
                 "kubernetes: the extended resource GPUs are counted in")
      ->capture_default_str();
  app.add_option("--kube-ttl", kube.kube.ttl_seconds_after_finished,
                 "kubernetes: seconds an ended Job is kept (-1 = forever)")
      ->capture_default_str();
  app.add_option("--kube-run-dir", kube.pod_run_dir,
                 "kubernetes: the run directory inside the pod (TUNECTL_RUN_DIR)")
      ->capture_default_str();
  app.add_option("--kube-workdir", kube.pod_workdir,
                 "kubernetes: the job's working directory in the pod (default: the image's)");
  app.add_option("--kube-poll-ms", kube.poll_ms,
                 "kubernetes: how often a Job and its pod are asked for")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
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
    if (auto st = tunectl::CheckLabel("--label", l.substr(0, eq), l.substr(eq + 1)); !st.ok()) {
      std::cerr << st.message() << "\n";
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
  for (const auto& text : kube_selectors) {
    auto kv = tunectl::ParseKubeNodeSelector(text);
    if (!kv.ok()) {
      std::cerr << "--kube-node-selector: " << kv.status().message() << "\n";
      return 2;
    }
    kube.kube.node_selector[kv->first] = kv->second;
  }
  for (const auto& text : kube_tolerations) {
    auto t = tunectl::ParseKubeToleration(text);
    if (!t.ok()) {
      std::cerr << "--kube-toleration: " << t.status().message() << "\n";
      return 2;
    }
    kube.kube.tolerations.push_back(*t);
  }
  kube.kube.agent = opts.name;
  if (executor_kind == "kubernetes") {
    if (auto st = tunectl::CheckKubeOptions(kube.kube); !st.ok()) {
      std::cerr << st.message() << "\n";
      return 2;
    }
  }
  if (opts.executor.workdir.empty()) opts.executor.workdir = std::filesystem::current_path();
  if (opts.executor.runs_dir.empty()) {
    const char* home = std::getenv("HOME");
    std::string base =
        geteuid() == 0 || !home ? "/var/lib/tunectl" : std::string(home) + "/.local/share/tunectl";
    opts.executor.runs_dir = base + "/agent-" + opts.name + "/runs";
  }
  opts.spool_dir = spool == "default" ? opts.executor.runs_dir + "/.spool" : spool;
  if (keep_runs_for == "0") {
    opts.keep_run_dirs_s = 0;
  } else if (auto keep = tunectl::ParseDurationMs(keep_runs_for); !keep.ok() || *keep < 60'000) {
    std::cerr << "error: --keep-runs-for: \"" << keep_runs_for
              << "\" is not allowed; use a duration of at least 1m (e.g. 7d, 36h) or 0 for "
                 "forever\n";
    return 2;
  } else {
    opts.keep_run_dirs_s = *keep / 1000;
  }
  if (executor_kind == "slurm") {
    if (auto st = tunectl::CheckSlurmOptions(slurm.slurm); !st.ok()) {
      std::cerr << "--partition/--account/--qos/--sbatch-option: " << st.message() << "\n";
      return 2;
    }
  }

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
  slurm.pin_experiments = !no_pin;
  tunectl::SlurmCli slurm_cli(launcher.get(), slurm_bin_dir);
  std::unique_ptr<tunectl::Executor> executor;
  tunectl::Kubectl kubectl(launcher.get(), kube);
  if (executor_kind == "slurm")
    executor = std::make_unique<tunectl::SlurmExecutor>(&slurm_cli, opts.executor, slurm);
  else if (executor_kind == "kubernetes")
    executor = std::make_unique<tunectl::KubeExecutor>(&kubectl, opts.executor, kube);
  else
    executor = std::make_unique<tunectl::LocalExecutor>(launcher.get(), opts.executor);
  auto endpoint = tunectl::ResolveEndpoint(ep);
  if (!endpoint.ok()) {
    std::fprintf(stderr, "error: %s\n", endpoint.status().message().c_str());
    return 2;
  }
  opts.endpoint = *endpoint;
  if (opts.endpoint.token.empty())
    spdlog::warn(
        "no token for {}: the server will refuse this agent's session (--token-file, "
        "$TUNECTL_TOKEN or a context in the client config)",
        opts.endpoint.server);
  tunectl::Agent agent(opts, launcher.get(), executor.get(), log);
  signals.OnSignal([&](int sig) {
    spdlog::info("signal {}: stopping", sig);
    agent.Stop();
  });
  spdlog::info("tunectl-agent {} -> {} ({} executor, {} slots, runs in {})", opts.name,
               opts.endpoint.server, executor->Kind(), opts.slots, opts.executor.runs_dir);
  agent.Run();
  return 0;
}

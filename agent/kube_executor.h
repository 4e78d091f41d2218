// The Kubernetes executor: each run (one attempt) becomes a Job (and a ConfigMap with its
// generated files) in one namespace, rendered by core's RenderKubeJob and driven through kubectl:
// `apply -f` the manifest, `get job` / `get pods -l job-name=…` for its state, `logs -f` for its
// lines (metrics through RunOutput), `delete --cascade=foreground` on cancel. The agent runs
// anywhere kubectl reaches the API server (in the cluster with a service account, or outside
// with a kubeconfig); nothing is shared with the pods but the API.
//
// A Job outlives its agent: on a detach the Job is left running and the next agent process with
// the same runs directory adopts it (Adoptable) and follows it again from the last batch it handed
// over (the logs are read again from the start; the lines already sent are skipped). What the end
// means is core's rule (ClassifyKubeEnd). The run directory on the agent's host keeps the
// Assign, the manifest (job.yaml), the Job's name, the progress and the output (output.log).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/executor.h"
#include "core/kube.h"
#include "sys/process.h"

namespace tunectl {

// How the agent reaches the cluster and renders its runs (tunectl-agent --executor kubernetes).
struct KubeExecutorOptions {
  std::string kubectl = "kubectl";  // --kubectl: the binary, a path or a name on PATH
  std::string kubeconfig;  // --kubeconfig: "" = kubectl's own choice (KUBECONFIG, ~/.kube/config,
                           // in-cluster service account)
  std::string context;     // --kube-context: "" = the kubeconfig's current context
  // image (--kube-image, required), ns (--kube-namespace), service_account
  // (--kube-service-account), node_selector (--kube-node-selector KEY=VALUE, repeatable),
  // tolerations (--kube-toleration key=value:Effect, repeatable), image_pull_policy
  // (--kube-image-pull-policy), gpu_resource (--kube-gpu-resource, default nvidia.com/gpu),
  // agent (= --name, a label), ttl_seconds_after_finished (--kube-ttl, default 86400),
  // termination_grace_s (default 30: SIGTERM -> SIGKILL on cancel, timeout and eviction).
  KubeOptions kube;
  std::string pod_run_dir = "/tunectl/run";  // --kube-run-dir: TUNECTL_RUN_DIR in the pod
  std::string pod_workdir;                   // --kube-workdir: workingDir; "" = the image's
  int poll_ms = 2000;              // --kube-poll-ms: the Job and its pod are asked for this often
  int command_timeout_ms = 30000;  // each kubectl call but logs -f; and the logs' drain at the end
  int apply_tries = 3;             // kubectl apply tries while the API server does not answer
  int retry_ms = 2000;             // between them (doubling)
  int stuck_ms = 300000;    // a pod stuck in an image pull / config error this long: the cluster's
  int vanished_ms = 60000;  // a Job not found (not deleted by us) or not readable this long: lost
  int stop_wait_ms = 120000;  // after kubectl delete, how long to wait for the Job to go
};

// kubectl, as the executor needs it. One real implementation (Kubectl); tests may use others.
// Thread-safe: called from every run's thread.
class KubectlClient {
 public:
  virtual ~KubectlClient() = default;
  // kubectl apply -f PATH. Unavailable when the API server did not answer (worth retrying);
  // InvalidArgument with kubectl's words when the objects were refused; FailedPrecondition when a
  // ResourceQuota is exhausted.
  virtual Status Apply(const std::string& manifest_path) = 0;
  // kubectl get job NAME -o json --ignore-not-found: the JSON, "" when there is no such Job.
  virtual Result<std::string> GetJobJson(const std::string& name) = 0;
  // kubectl get pods -l job-name=NAME -o json: a List.
  virtual Result<std::string> GetPodsJson(const std::string& job_name) = 0;
  // kubectl logs -f --timestamps -c run POD [--since-time=T]: a running process whose stdout
  // lines are the container's lines (stdout and stderr as the runtime merged them), each prefixed
  // with its RFC 3339 timestamp and a space; it ends when the container ends. The caller owns it.
  virtual Result<std::unique_ptr<Process>> FollowLogs(const std::string& pod,
                                                      const std::string& since_time) = 0;
  // kubectl delete OBJECTS ("job/NAME", "configmap/NAME") --ignore-not-found --wait=false
  // --cascade=foreground|background.
  virtual Status Delete(const std::vector<std::string>& objects, bool foreground) = 0;
};

// kubectl as child processes, with --kubeconfig/--context/--namespace from the options and a
// timeout per call. `launcher` is not owned and outlives this.
class Kubectl : public KubectlClient {
 public:
  Kubectl(ProcessLauncher* launcher, const KubeExecutorOptions& opts)
      : launcher_(launcher),
        kubectl_(opts.kubectl),
        kubeconfig_(opts.kubeconfig),
        context_(opts.context),
        ns_(opts.kube.ns),
        timeout_ms_(opts.command_timeout_ms) {}
  Status Apply(const std::string& manifest_path) override;
  Result<std::string> GetJobJson(const std::string& name) override;
  Result<std::string> GetPodsJson(const std::string& job_name) override;
  Result<std::unique_ptr<Process>> FollowLogs(const std::string& pod,
                                              const std::string& since_time) override;
  Status Delete(const std::vector<std::string>& objects, bool foreground) override;

 private:
  std::vector<std::string> Base() const;
  Result<std::string> Get(const std::string& what, std::vector<std::string> args);

  ProcessLauncher* launcher_;
  std::string kubectl_, kubeconfig_, context_, ns_;
  int timeout_ms_;
};

class KubeExecutor : public Executor {
 public:
  // `client` is not owned and outlives the executor. From `opts`: runs_dir (the run directories on
  // the agent's host) and the batch limits; workdir and kill_grace_ms do not apply (the pod's are
  // kopts.pod_workdir and kopts.kube.termination_grace_s).
  KubeExecutor(KubectlClient* client, ExecutorOptions opts, KubeExecutorOptions kopts);
  const char* Kind() const override { return "kubernetes"; }
  void Run(const v1::Assign& a, const SlotGrant& slot, const RunControl& ctl,
           RunSink& sink) override;
  std::vector<v1::Assign> Adoptable() override;
  // A failed pod is the cluster's node's, not the agent's: the agent stays open for the retry.
  bool InfraFailureMarksAgent() const override { return false; }

 private:
  KubectlClient* client_;
  ExecutorOptions opts_;
  KubeExecutorOptions kopts_;
};

}  // namespace tunectl

// Kubernetes, as pure functions over text: one run (one attempt) as a ConfigMap (its generated
// files) and a batch/v1 Job, what `kubectl get job NAME -o json` and `kubectl get pods -l
// job-name=NAME -o json` say about it, and what its end means for the run. The Kubernetes
// executor (agent/kube_executor.h) runs kubectl and calls these; nothing here runs anything.
// Value types; every function is pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec.h"
#include "core/status.h"

namespace tunectl {

// A toleration of the run's pods (kubectl taint syntax: "key=value:Effect", "key:Effect", "key").
struct KubeToleration {
  std::string key;     // "" with op Exists: tolerates every taint
  std::string op;      // "Equal" (with a value) or "Exists"
  std::string value;   // Equal only
  std::string effect;  // "NoSchedule", "PreferNoSchedule", "NoExecute"; "" = every effect
  bool operator==(const KubeToleration&) const = default;
};

// How the agent renders its runs (tunectl-agent --executor kubernetes flags).
struct KubeOptions {
  std::string image;            // the job's container image (required)
  std::string ns;               // metadata.namespace; "" = left out (kubectl's context namespace)
  std::string service_account;  // serviceAccountName; "" = the namespace's default
  std::map<std::string, std::string> node_selector;  // label -> value the node must carry
  std::vector<KubeToleration> tolerations;
  std::string image_pull_policy;  // "Always", "IfNotPresent", "Never"; "" = the cluster's default
  std::string gpu_resource = "nvidia.com/gpu";  // the extended resource GPUs are counted in
  std::string agent;  // the agent's name: label tunectl.io/agent (made a label value)
  std::string name_prefix = "tunectl";  // object names are <prefix>-<run>-<attempt>
  int64_t ttl_seconds_after_finished =
      86400;  // the Job is deleted this long after it ended; -1 = never
  // activeDeadlineSeconds = the run's time (resources.time_ms, else its timeout) + this: the
  // deadline counts from the Job's start, scheduling and image pull included. The executor stops
  // the run at its exact timeout from when it started running; this deadline is the backstop
  // that holds while no agent watches.
  int64_t deadline_slack_s = 600;
  int64_t termination_grace_s = 30;  // terminationGracePeriodSeconds: SIGTERM -> SIGKILL
  bool operator==(const KubeOptions&) const = default;
};

// One run (one attempt) as a Job.
struct KubeJob {
  int64_t run_id = 0;
  int attempt = 0;
  std::string workload;                      // label tunectl.io/workload (made a label value)
  std::vector<std::string> argv;             // the container's command (non-empty)
  std::map<std::string, std::string> env;    // the run's env (TUNECTL_DURATION_S included)
  std::map<std::string, std::string> files;  // path relative to run_dir -> content
  std::string run_dir = "/tunectl/run";      // the run directory in the pod (absolute)
  std::string workdir;                       // workingDir; "" = the image's WORKDIR
  Resources resources;                       // run.resources
  int64_t timeout_ms = 0;                    // run.timeout
  std::string node_name;  // pin the pod to this node (required node affinity); "" = anywhere
};

// The name of the run's container in the pod (kubectl logs -c, containerStatuses).
inline constexpr const char* kKubeContainer = "run";

// "<prefix>-<run>-<attempt>": the Job's and the ConfigMap's name, and the pod's job-name label.
std::string KubeObjectName(const KubeOptions& opts, int64_t run_id, int attempt);

// The manifest, a multi-document YAML (documents separated by "---"):
//  - a v1 ConfigMap named like the Job holding the generated files, when there are any (UTF-8
//    text under data:, other bytes base64 under binaryData:; keys are the paths made key-safe);
//  - a batch/v1 Job: backoffLimit 0 (tunectl retries a run itself, as a new attempt),
//    restartPolicy Never, activeDeadlineSeconds (see KubeOptions::deadline_slack_s),
//    ttlSecondsAfterFinished, labels tunectl.io/{run,attempt,workload,agent} on the Job, the
//    ConfigMap and the pod; one container "run" with command = argv, the env sorted by name with
//    TUNECTL_RUN_ID, TUNECTL_ATTEMPT, TUNECTL_RUN_DIR set by tunectl; cpus_per_task -> cpu and
//    mem_mb -> memory "<N>Mi" as requests = limits (Guaranteed QoS when both are given),
//    gpus_per_node -> limits[gpu_resource]; an emptyDir at run_dir (writable) with each file
//    mounted read-only from the ConfigMap at run_dir/<path> (subPath); node_name as a required
//    node affinity on metadata.name (the scheduler still places it, so a busy node makes the pod
//    wait instead of failing as spec.nodeName would).
// resources.nodes > 1 is refused: a multi-node run needs all its pods at once and a way for
// them to find each other (a gang scheduler, JobSet, a headless Service), which this Job does not
// give. InvalidArgument naming the field, the value and what is allowed otherwise (no image, an
// empty argv, a name over 63 characters, a file path outside run_dir, text that is not UTF-8 …).
Result<std::string> RenderKubeJob(const KubeJob& job, const KubeOptions& opts);

// The options on their own (what the agent checks once at startup): image set, namespace and
// prefix DNS-1123 labels, node selector keys and values valid labels, tolerations well formed.
Status CheckKubeOptions(const KubeOptions& opts);
// "key=value:NoSchedule", "key:NoExecute", "key=value", "key", ":NoSchedule" (every key) ->
// a toleration (Equal with a value, Exists without). InvalidArgument otherwise.
Result<KubeToleration> ParseKubeToleration(std::string_view text);
// "KEY=VALUE" (a node label) -> {KEY, VALUE}, both checked as label key and value.
Result<std::pair<std::string, std::string>> ParseKubeNodeSelector(std::string_view text);

// A Job as `kubectl get job NAME -o json` shows it.
struct KubeJobInfo {
  std::string name;
  std::string uid;
  bool suspended = false;  // spec.suspend (a queue such as Kueue holds it)
  bool deleting = false;   // metadata.deletionTimestamp is set
  int active = 0, ready = 0, succeeded = 0, failed = 0;  // status counters
  std::string start_time, completion_time;               // as written ("" = not yet)
  bool complete = false;                                 // condition Complete=True
  bool failed_condition = false;                         // condition Failed=True
  std::string failed_reason;  // its reason: BackoffLimitExceeded, DeadlineExceeded, …
  std::string failed_message;
  std::string suspended_message;  // condition Suspended=True's message
};

// One container's state (the run's container "run", else the pod's first).
struct KubeContainerState {
  std::string state;            // "waiting", "running", "terminated" or "" (none reported)
  std::string reason, message;  // waiting: ContainerCreating, ImagePullBackOff, …; terminated:
                                // Completed, Error, OOMKilled, StartError, ContainerCannotRun, …
  int exit_code = 0, signal = 0;  // terminated only
  std::string started_at, finished_at;
};

// A pod as `kubectl get pods -l job-name=NAME -o json` lists it.
struct KubePodInfo {
  std::string name;
  std::string created;          // metadata.creationTimestamp
  bool deleting = false;        // metadata.deletionTimestamp is set
  std::string node;             // spec.nodeName ("" until scheduled)
  std::string phase;            // Pending, Running, Succeeded, Failed, Unknown
  std::string reason, message;  // status.reason/message: Evicted, NodeLost, Shutdown, OutOf…
  std::string unschedulable;  // PodScheduled=False: its reason and message ("Unschedulable: 0/3…")
  std::string disruption;     // DisruptionTarget=True: "PreemptionByScheduler: …" ("" = none)
  KubeContainerState container;
  int restarts = 0;
};

// The Job in `kubectl get job NAME -o json --ignore-not-found` output: nullopt for empty output
// (not found). InvalidArgument when the text is not a Job's JSON.
Result<std::optional<KubeJobInfo>> ParseKubeJob(std::string_view json);
// The pods of `kubectl get pods -o json` (a List), oldest first (by creationTimestamp, then name).
Result<std::vector<KubePodInfo>> ParseKubePods(std::string_view json);

enum class KubePhase {
  kPending,  // no pod yet, or its container has not started (scheduling, image pull, …)
  kRunning,  // the container runs
  kEnded,    // the Job has a Complete or Failed condition, or its pod succeeded or failed
};
// `pod` may be null (none listed).
KubePhase KubePhaseOf(const KubeJobInfo& job, const KubePodInfo* pod);

// Why a Job does not run yet, in the cluster's words: "Suspended: …", "Unschedulable: 0/3 nodes
// are available: 3 Insufficient nvidia.com/gpu.", "ImagePullBackOff: Back-off pulling image …",
// "ContainerCreating", "no pod yet".
std::string KubePendingReason(const KubeJobInfo& job, const KubePodInfo* pod);
// A waiting container that will not start by waiting longer: ErrImagePull, ImagePullBackOff,
// InvalidImageName, ErrImageNeverPull, CreateContainerConfigError, CreateContainerError —
// "reason: message"; "" otherwise. The executor gives such a pod a grace period, then ends it
// as the cluster's failure.
std::string KubeStuckReason(const KubePodInfo& pod);

// Everything the executor saw of a Job by the time it ended.
struct KubeObserved {
  std::optional<KubeJobInfo> job;   // the last `get job`; nullopt = the Job is gone
  std::optional<KubePodInfo> pod;   // the run's pod as last listed; nullopt = none was ever seen
  bool pod_gone = false;            // the pod listed before is no longer listed
  bool ran = false;                 // its container was seen running or terminated after starting
  bool cancelled_by_agent = false;  // the agent deleted the Job (cancel)
};

// What an ended Job means for its run.
struct KubeEnd {
  bool succeeded = false;
  bool infra_failure = false;  // the cluster's fault, not the run's: retried as a new attempt
  std::string reason;          // "" on success and on a plain non-zero exit
  int exit_code = 0;
  int signal = 0;
};
// First match wins:
//  cancelled_by_agent                          -> "cancelled" (the run's)
//  Job Complete, or the container Completed 0  -> success
//  Job Failed DeadlineExceeded, container ran  -> the run's: "timeout: …" (its own time limit)
//                              never ran       -> cluster's: not started within the deadline
//  pod DisruptionTarget (preemption, eviction API, taint manager, pod GC), status.reason Evicted,
//  NodeLost, Shutdown/Terminated (node shutdown), UnexpectedAdmissionError, OutOf<resource>
//                                              -> cluster's
//  container waiting stuck (image pull, config error)  -> cluster's: "image pull failed: …"
//  container terminated OOMKilled              -> the run's: "host OOM: …", exit 137, signal 9
//  container terminated StartError / ContainerCannotRun -> the run's: "launch_failed: …", 127
//  container terminated with a non-zero exit   -> the run's: exit code (signal when Kubernetes
//  says) Job Failed (other reasons) with its pod deleted or never seen -> cluster's: the pod was
//                                                 deleted or lost (someone else's delete, a node)
//  Job gone (deleted by someone else, or TTL)  -> cluster's: "lost: …"
//  Job Failed otherwise                        -> the run's: "failed: <reason>: <message>"
//  anything else                               -> cluster's: "ended without a known cause"
KubeEnd ClassifyKubeEnd(const KubeObserved& seen);

// kubectl's output says the API server did not answer (worth retrying), as opposed to a refusal
// (an invalid object, a denied request) that a retry would not change.
bool IsTransientKubectlError(std::string_view output);

}  // namespace tunectl

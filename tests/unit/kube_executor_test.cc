// KubeExecutor against a fake kubectl: a shell script written into a temp dir that records its
// argv and answers `get job` / `get pods` from the JSON fixtures in tests/fixtures/kube/ (one
// step per call, the last repeating), prints canned log lines for `logs`, and notes deletes. So the
// real Kubectl client, real processes and real parsing are used; only the cluster is scripted.
#include "agent/kube_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <set>

#include "sys/files.h"
#include "test_support.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RecordingSink;

const std::string kSource = TUNECTL_SOURCE_DIR;

std::string TempDir() {
  return testing::TempDir("tunectl-kube");
}

// The fake kubectl. `get job`/`get pods` answer with <dir>/job.<n>.json / pods.<n>.json on their
// n-th call (the highest present at or below n); once a Job was deleted, `get job` prints nothing
// (not found). `logs` prints <dir>/logs.txt, then hangs when <dir>/logs.follow exists (a running
// container). `apply` fails with <dir>/apply.err when it exists.
constexpr const char* kFakeKubectl = R"SH(#!/bin/sh
D="$(dirname "$0")"
echo "$*" >> "$D/calls"
sub=""
for a in "$@";
do
  case "$a" in --*) ;; *) sub="$a"; break ;; esac
done
case "$sub" in
apply)
  if [ -f "$D/apply.err" ]; then cat "$D/apply.err" >&2; exit 1; fi
  echo "configmap/x created"; echo "job.batch/x created"; exit 0 ;;
get)
  case " $* " in *" job "*) kind=job ;; *) kind=pods ;; esac
  if [ -f "$D/deleted" ]; then
    [ "$kind" = pods ] && cat "$D/pods-empty.json"
    exit 0
  fi
  n=$(cat "$D/$kind.n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$D/$kind.n"
  while [ ! -f "$D/$kind.$n.json" ] && [ $n -gt 1 ]; do n=$((n-1)); done
  echo "Warning: a deprecation warning kubectl prints on stderr" >&2
  cat "$D/$kind.$n.json"
  exit 0 ;;
logs)
  cat "$D/logs.txt"
  if [ -f "$D/logs.follow" ]; then exec sleep 30; fi
  exit 0 ;;
delete)
  echo "$*" >> "$D/deletes"
  case " $* " in *" job/"*) touch "$D/deleted" ;; esac
  exit 0 ;;
esac
echo "fake kubectl: unknown command $*" >&2
exit 2
)SH";

std::string Fixture(const std::string& name) {
  auto text = ReadFile(kSource + "/tests/fixtures/kube/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : "";
}  // namespace

// Five metric lines; the last two share a timestamp (a restarted stream must skip both).
const std::vector<std::string> kLogLines = {
    "2026-12-05T07:00:05.000000001Z step=1 loss=0.90",
    "2026-12-05T07:00:05.5Z starting epoch 1",
    "2026-12-05T07:00:06.000000001Z step=2 loss=0.80",
    "2026-12-05T07:00:07.000000001Z step=3 loss=0.70",
    "2026-12-05T07:00:08.123456789Z step=4 loss=0.60",
    "2026-12-05T07:00:08.123456789Z step=5 loss=0.50",
};

class KubeExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    runs_ = TempDir();
    const std::string kubectl = dir_ + "/kubectl";
    ASSERT_TRUE(WriteFileAtomic(kubectl, kFakeKubectl).ok());
    ::chmod(kubectl.c_str(), 0755);
    Put("pods-empty.json", Fixture("pods-empty.json"));
    std::string logs;
    for (const auto& l : kLogLines) logs += l + "\n";
    Put("logs.txt", logs);
    opts_.runs_dir = runs_;
    opts_.batch_max_ms = 50;
    opts_.kill_grace_ms = 5000;
    kopts_.kubectl = kubectl;
    kopts_.context = "lab";
    kopts_.kube.image = "registry.example/train:1.4";
    kopts_.kube.ns = "ml";
    kopts_.kube.agent = "k8s-a100";
    kopts_.poll_ms = 50;
    kopts_.retry_ms = 10;
    kopts_.apply_tries = 2;
    kopts_.stuck_ms = 300;
    kopts_.vanished_ms = 2000;
    kopts_.stop_wait_ms = 5000;
    kopts_.command_timeout_ms = 10000;
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    std::filesystem::remove_all(runs_);
  }

  void Put(const std::string& name, const std::string& text) {
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/" + name, text).ok());
  }
  // The cluster's answers, one poll each: {job fixture, pods fixture}.
  void Steps(const std::vector<std::pair<std::string, std::string>>& steps) {
    for (size_t i = 0; i < steps.size(); ++i) {
      Put("job." + std::to_string(i + 1) + ".json", Fixture(steps[i].first));
      Put("pods." + std::to_string(i + 1) + ".json", Fixture(steps[i].second));
    }
  }
  std::string Calls() {
    auto c = ReadFile(dir_ + "/calls");
    return c.ok() ? *c : "";
  }
  std::string Deletes() {
    auto c = ReadFile(dir_ + "/deletes");
    return c.ok() ? *c : "";
  }

  static v1::Assign Assign() {
    v1::Assign a;
    a.set_run_id(7);
    a.set_attempt(1);
    a.set_workload("train");
    a.add_argv("python");
    a.add_argv("train.py");
    (*a.mutable_env())["LR"] = "0.1";
    a.set_timeout_ms(3600 * 1000);
    auto* m = a.add_metrics();
    m->set_name("loss");
    m->set_pattern(R"(step=(?P<step>\d+) loss=(?P<value>[0-9.]+))");
    auto* f = a.add_files();
    f->set_path("conf/train.yaml");
    f->set_content("lr: 0.1\n");
    a.mutable_resources()->set_gpus_per_node(1);
    return a;
  }

  void Run(const v1::Assign& a, RecordingSink& sink) {
    Kubectl client(launcher_.get(), kopts_);
    KubeExecutor ex(&client, opts_, kopts_);
    ex.Run(a, SlotGrant(), ctl_, sink);
  }

  std::string dir_, runs_;
  std::unique_ptr<ProcessLauncher> launcher_ = NewPosixProcessLauncher();
  ExecutorOptions opts_;
  KubeExecutorOptions kopts_;
  RunControl ctl_;
};

TEST_F(KubeExecutorTest, SuccessReportsStartMetricsAndEnd) {
  Steps({{"job-running.json", "pods-running.json"}, {"job-complete.json", "pods-succeeded.json"}});
  RecordingSink sink;
  Run(Assign(), sink);

  ASSERT_EQ(sink.started.size(), 1u);
  EXPECT_EQ(sink.started[0].node(), "gpu-node-7");
  EXPECT_EQ(sink.started[0].external_id(), "tunectl-7-1");
  EXPECT_EQ(sink.started[0].slot(), -1);
  EXPECT_THAT(sink.started[0].placement(), HasSubstr("Kubernetes Job tunectl-7-1 in namespace ml"));
  EXPECT_EQ(sink.UniqueSamples(), 5);  // one per metric line, none twice after the log re-read
  ASSERT_EQ(sink.finished.size(), 1u);
  const v1::RunFinished& f = sink.finished[0];
  EXPECT_EQ(f.reason(), "");
  EXPECT_EQ(f.exit_code(), 0);
  EXPECT_FALSE(f.infra_failure());
  EXPECT_EQ(f.lines(), 6);
  EXPECT_EQ(f.seq(), f.batches() + 1);
  EXPECT_EQ(f.batches(), static_cast<int64_t>(sink.batches.size()));

  const std::string calls = Calls();
  EXPECT_THAT(calls, HasSubstr("--context=lab --namespace=ml apply -f " + runs_ + "/7-1/job.yaml"));
  EXPECT_THAT(calls, HasSubstr("get job tunectl-7-1 -o json --ignore-not-found"));
  EXPECT_THAT(calls, HasSubstr("get pods -l job-name=tunectl-7-1 -o json"));
  EXPECT_THAT(calls, HasSubstr("logs -f --timestamps -c run tunectl-42-1-x7k2p"));
  // The files' ConfigMap goes when the run ends; the Job stays for its TTL.
  EXPECT_EQ(Deletes(),
            "--context=lab --namespace=ml delete configmap/tunectl-7-1 --ignore-not-found "
            "--wait=false --cascade=background\n");
  auto manifest = ReadFile(runs_ + "/7-1/job.yaml");
  ASSERT_TRUE(manifest.ok());
  EXPECT_THAT(*manifest, HasSubstr("kind: ConfigMap"));
  EXPECT_THAT(*manifest, HasSubstr("\"nvidia.com/gpu\": \"1\""));
  EXPECT_THAT(*manifest, HasSubstr("namespace: \"ml\""));
  auto log = ReadFile(runs_ + "/7-1/output.log");
  ASSERT_TRUE(log.ok());
  EXPECT_THAT(*log, HasSubstr("step=5 loss=0.50"));
}

TEST_F(KubeExecutorTest, PendingReasonsAreReportedUntilItRuns) {
  Steps({{"job-pending.json", "pods-pending-unschedulable.json"},
         {"job-pending.json", "pods-pending-unschedulable.json"},
         {"job-pending.json", "pods-container-creating.json"},
         {"job-running.json", "pods-running.json"},
         {"job-complete.json", "pods-succeeded.json"}});
  RecordingSink sink;
  Run(Assign(), sink);
  ASSERT_EQ(sink.pending.size(), 2u);  // once per reason
  EXPECT_EQ(sink.pending[0].external_id(), "tunectl-7-1");
  EXPECT_THAT(sink.pending[0].reason(), HasSubstr("Unschedulable: 0/3 nodes are available"));
  EXPECT_EQ(sink.pending[1].reason(), "ContainerCreating");
  ASSERT_EQ(sink.started.size(), 1u);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "");
}

TEST_F(KubeExecutorTest, NonZeroExitIsTheRunsFailure) {
  Steps({{"job-running.json", "pods-running.json"},
         {"job-failed-backofflimit.json", "pods-failed-exit.json"}});
  RecordingSink sink;
  Run(Assign(), sink);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 3);
  EXPECT_FALSE(sink.finished[0].infra_failure());
  EXPECT_EQ(sink.UniqueSamples(), 5);
}

TEST_F(KubeExecutorTest, OomKilledIsTheRunsFailure) {
  Steps({{"job-running.json", "pods-running.json"},
         {"job-failed-backofflimit.json", "pods-oomkilled.json"}});
  RecordingSink sink;
  Run(Assign(), sink);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("host OOM"));
  EXPECT_EQ(sink.finished[0].signal(), 9);
  EXPECT_FALSE(sink.finished[0].infra_failure());
}

TEST_F(KubeExecutorTest, EvictedPodIsTheClustersFailure) {
  Steps({{"job-running.json", "pods-running.json"},
         {"job-failed-backofflimit.json", "pods-evicted.json"}});
  RecordingSink sink;
  Run(Assign(), sink);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.finished[0].infra_failure());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("Evicted"));
}

TEST_F(KubeExecutorTest, StuckImagePullEndsAsTheClustersFailure) {
  Steps({{"job-pending.json", "pods-image-pull-backoff.json"}});
  RecordingSink sink;
  Run(Assign(), sink);
  ASSERT_EQ(sink.pending.size(), 1u);
  EXPECT_THAT(sink.pending[0].reason(), HasSubstr("ImagePullBackOff"));
  EXPECT_TRUE(sink.started.empty());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.finished[0].infra_failure());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("image pull failed: ImagePullBackOff"));
  EXPECT_THAT(Deletes(), HasSubstr("delete job/tunectl-7-1 configmap/tunectl-7-1"));
}

TEST_F(KubeExecutorTest, CancelDeletesTheJobAndWaitsForIt) {
  Steps({{"job-running.json", "pods-running.json"}});
  Put("logs.follow", "");
  RecordingSink sink;
  sink.on_batch = [&] { ctl_.cancel = true; };  // once the job's output flows
  Run(Assign(), sink);
  EXPECT_EQ(Deletes(),
            "--context=lab --namespace=ml delete job/tunectl-7-1 configmap/tunectl-7-1 "
            "--ignore-not-found --wait=false --cascade=foreground\n");
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "cancelled");
  EXPECT_FALSE(sink.finished[0].infra_failure());
  EXPECT_GE(sink.UniqueSamples(), 1);
}

TEST_F(KubeExecutorTest, TimeoutFromTheStartDeletesTheJob) {
  Steps({{"job-pending.json", "pods-container-creating.json"},
         {"job-running.json", "pods-running.json"}});
  Put("logs.follow", "");
  v1::Assign a = Assign();
  a.set_timeout_ms(1000);  // counted from when the container runs, not from the apply
  RecordingSink sink;
  Run(a, sink);
  EXPECT_THAT(Deletes(), HasSubstr("delete job/tunectl-7-1 configmap/tunectl-7-1"));
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "timeout after 1s");
  EXPECT_FALSE(sink.finished[0].infra_failure());
  EXPECT_EQ(sink.UniqueSamples(), 5);
}

TEST_F(KubeExecutorTest, DetachLeavesTheJobAndTheNextAgentAdoptsIt) {
  Steps({{"job-running.json", "pods-running.json"}});
  Put("logs.follow", "");
  RecordingSink first;
  first.on_batch = [&] { ctl_.detach = true; };
  Run(Assign(), first);
  EXPECT_TRUE(first.finished.empty());
  EXPECT_EQ(Deletes(), "");  // the Job goes on without us
  ASSERT_EQ(first.started.size(), 1u);

  // The next agent process: the run is adoptable, and followed to its end without a new apply.
  ctl_.detach = false;
  Kubectl client(launcher_.get(), kopts_);
  KubeExecutor ex(&client, opts_, kopts_);
  auto adoptable = ex.Adoptable();
  ASSERT_EQ(adoptable.size(), 1u);
  EXPECT_EQ(adoptable[0].run_id(), 7);
  std::filesystem::remove(dir_ + "/logs.follow");
  Steps({{"job-complete.json", "pods-succeeded.json"}});
  std::filesystem::remove(dir_ + "/job.n");
  std::filesystem::remove(dir_ + "/pods.n");
  const std::string before = Calls();
  RecordingSink second;
  ex.Run(adoptable[0], SlotGrant(), ctl_, second);
  EXPECT_THAT(Calls().substr(before.size()), Not(HasSubstr(" apply ")));
  ASSERT_EQ(second.finished.size(), 1u);
  EXPECT_EQ(second.finished[0].reason(), "");
  // Every sample once across both processes (the first's last batch may be sent again).
  std::set<std::pair<int64_t, int64_t>> steps;
  for (const auto* s : {&first, &second})
    for (const auto& b : s->batches)
      for (const auto& x : b.samples()) steps.insert({b.seq(), x.step()});
  std::set<int64_t> distinct;
  for (const auto& [seq, step] : steps) EXPECT_TRUE(distinct.insert(step).second) << step;
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_TRUE(ex.Adoptable().empty());  // finished
}

TEST_F(KubeExecutorTest, RefusedApplyIsTheRunsTransientIsTheClusters) {
  Put("apply.err",
      "The Job \"tunectl-7-1\" is invalid: spec.template.spec.containers[0].resources.limits: "
      "Invalid value: \"1\": must be less than or equal to nvidia.com/gpu quota\n");
  RecordingSink refused;
  Run(Assign(), refused);
  ASSERT_EQ(refused.finished.size(), 1u);
  EXPECT_EQ(refused.finished[0].exit_code(), 127);
  EXPECT_FALSE(refused.finished[0].infra_failure());
  EXPECT_THAT(refused.finished[0].reason(), HasSubstr("launch_failed: kubectl apply: The Job"));

  Put("apply.err", "Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout\n");
  v1::Assign a = Assign();
  a.set_attempt(2);
  RecordingSink down;
  Run(a, down);
  ASSERT_EQ(down.finished.size(), 1u);
  EXPECT_TRUE(down.finished[0].infra_failure());
  // Tried apply_tries times.
  const std::string calls = Calls();
  size_t applies = 0;
  for (size_t at = 0; (at = calls.find(" apply ", at)) != std::string::npos; ++at) ++applies;
  EXPECT_EQ(applies, 1u + 2u);
}

TEST_F(KubeExecutorTest, MultiNodeRunIsRefusedBeforeAnyKubectl) {
  v1::Assign a = Assign();
  a.mutable_resources()->set_nodes(4);
  RecordingSink sink;
  Run(a, sink);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 127);
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("run.resources.nodes: 4"));
  EXPECT_EQ(Calls(), "");
}

}  // namespace
}  // namespace tunectl

// core/kube.h: the manifest against golden files (tests/golden/kube/<name>.yaml; rewritten with
// TUNECTL_UPDATE_GOLDEN=1), refusals, the kubectl JSON parsers and ClassifyKubeEnd.
//
// The JSON fixtures in tests/fixtures/kube/ are hand-written after the Kubernetes API reference,
// shaped like `kubectl get job NAME -o json` / `kubectl get pods -l job-name=NAME -o json` of
// kubectl 1.32 against a 1.31+ API server (sorted keys, four-space indent, the interim
// FailureTarget / SuccessCriteriaMet conditions). No cluster runs here: they were not captured
// from a live one.
//
// KubeRender.GoldenManifestsPassKubectlOffline checks each golden with a real kubectl when one is
// on PATH. `kubectl apply --dry-run=client` cannot run offline (it GETs the live object first and
// fails with "connection refused"), so the test uses what works without an API server:
// `kubectl create --dry-run=client --validate=false` with a kubeconfig pointing nowhere and a
// pre-written discovery cache (the kinds are known and each document is accepted), and
// `kubectl set env --local` (no cluster at all), which decodes the Job into the typed batch/v1 Job:
// a wrong type fails, and a field the API does not know is dropped, which the test detects.
#include "core/kube.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "sys/files.h"
#include "sys/process.h"
#include "test_support.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

const std::string kSource = TUNECTL_SOURCE_DIR;

std::string Fixture(const std::string& name) {
  auto text = ReadFile(kSource + "/tests/fixtures/kube/" + name);
  EXPECT_TRUE(text.ok()) << name << ": " << text.status().message();
  return text.ok() ? *text : "";
}

KubeOptions Options() {
  KubeOptions o;
  o.image = "registry.example/train:1.4";
  o.agent = "k8s-a100";
  return o;
}

KubeJob MinimalJob() {
  KubeJob j;
  j.run_id = 7;
  j.attempt = 1;
  j.workload = "demo";
  j.argv = {"python3", "train.py", "--lr", "0.1"};
  j.timeout_ms = 10 * 60 * 1000;
  return j;
}

// Everything a manifest can hold.
std::pair<KubeJob, KubeOptions> FullJob() {
  KubeOptions o = Options();
  o.ns = "ml";
  o.service_account = "tunectl-runner";
  o.node_selector = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}, {"pool", "train"}};
  o.tolerations = {{"nvidia.com/gpu", "Exists", "", "NoSchedule"},
                   {"dedicated", "Equal", "tuning", "NoExecute"}};
  o.image_pull_policy = "IfNotPresent";
  o.ttl_seconds_after_finished = 3600;
  KubeJob j;
  j.run_id = 42;
  j.attempt = 3;
  j.workload = "Megatron GPT/α";
  j.argv = {"torchrun",
            "--nproc-per-node=2",
            "pretrain.py",
            "--config",
            "conf/model.yaml",
            "--note",
            "a \"quoted\" word\nand a second line"};
  j.env = {{"NCCL_DEBUG", "WARN"}, {"yes", "on"}, {"EMPTY", ""}, {"TUNECTL_RUN_ID", "overridden"}};
  j.files = {{"conf/model.yaml", "layers: 24\nhidden: 2048\n\n# comment\nheads: 16\n"},
             {"ds config.json", "{\"zero\": 2}"},
             {"indented.txt", "  starts with spaces\n"}};
  j.workdir = "/workspace";
  j.resources.nodes = 1;
  j.resources.gpus_per_node = 2;
  j.resources.cpus_per_task = 16;
  j.resources.mem_mb = 131072;
  j.timeout_ms = 3600 * 1000;
  j.node_name = "gpu-node-7";
  return {j, o};
}

std::pair<KubeJob, KubeOptions> BinaryFileJob() {
  KubeOptions o = Options();
  o.gpu_resource = "amd.com/gpu";
  o.ttl_seconds_after_finished = -1;
  KubeJob j = MinimalJob();
  j.run_id = 9;
  j.attempt = 2;
  j.files = {{"weights.bin", std::string("\x00\x01\xfe\xff tail", 9)}, {"note", "no newline"}};
  j.resources.gpus_per_node = 1;
  j.resources.time_ms = 90 * 1000;  // the deadline follows run.resources.time when given
  return {j, o};
}

void ExpectGolden(const std::string& name, const std::string& text) {
  testing::ExpectGolden("kube/" + name + ".yaml", text);
}

std::vector<YAML::Node> Documents(const std::string& text) {
  return YAML::LoadAll(text);
}

TEST(KubeRender, MinimalMatchesGolden) {
  auto m = RenderKubeJob(MinimalJob(), Options());
  ASSERT_TRUE(m.ok()) << m.status().message();
  ExpectGolden("minimal", *m);
  auto docs = Documents(*m);
  ASSERT_EQ(docs.size(), 1u);  // no files: no ConfigMap
  const YAML::Node job = docs[0];
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  EXPECT_EQ(job["metadata"]["name"].as<std::string>(), "tunectl-7-1");
  EXPECT_FALSE(job["metadata"]["namespace"]);
  EXPECT_EQ(job["spec"]["backoffLimit"].as<int>(), 0);
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"].as<int>(), 600 + 600);  // timeout + slack
  EXPECT_EQ(job["spec"]["ttlSecondsAfterFinished"].as<int>(), 86400);
  const YAML::Node pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  EXPECT_FALSE(pod["containers"][0]["resources"]);  // nothing asked: the cluster's defaults
}

TEST(KubeRender, GpuLimitsNodeSelectorAndFilesMatchGolden) {
  auto [j, o] = FullJob();
  auto m = RenderKubeJob(j, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ExpectGolden("gpu_files", *m);
  auto docs = Documents(*m);
  ASSERT_EQ(docs.size(), 2u);
  const YAML::Node cm = docs[0], job = docs[1];
  EXPECT_EQ(cm["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(cm["metadata"]["name"].as<std::string>(), "tunectl-42-3");
  // Every file reads back byte for byte (block scalars where they fit, quoted otherwise).
  EXPECT_EQ(cm["data"]["conf_model.yaml"].as<std::string>(), j.files["conf/model.yaml"]);
  EXPECT_EQ(cm["data"]["ds_config.json"].as<std::string>(), j.files["ds config.json"]);
  EXPECT_EQ(cm["data"]["indented.txt"].as<std::string>(), j.files["indented.txt"]);
  EXPECT_EQ(job["metadata"]["namespace"].as<std::string>(), "ml");
  const YAML::Node labels = job["metadata"]["labels"];
  EXPECT_EQ(labels["tunectl.io/run"].as<std::string>(), "42");
  EXPECT_EQ(labels["tunectl.io/attempt"].as<std::string>(), "3");
  EXPECT_EQ(labels["tunectl.io/workload"].as<std::string>(), "Megatron-GPT");  // a label value
  EXPECT_EQ(labels["tunectl.io/agent"].as<std::string>(), "k8s-a100");
  const YAML::Node pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"]["tunectl.io/run"].as<std::string>(),
            "42");
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "tunectl-runner");
  EXPECT_EQ(pod["nodeSelector"]["nvidia.com/gpu.product"].as<std::string>(),
            "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(pod["tolerations"][1]["value"].as<std::string>(), "tuning");
  EXPECT_EQ(pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
                   .as<std::string>(),
            "gpu-node-7");
  const YAML::Node c = pod["containers"][0];
  EXPECT_EQ(c["name"].as<std::string>(), "run");
  ASSERT_EQ(c["command"].size(), j.argv.size());
  for (size_t i = 0; i < j.argv.size(); ++i)
    EXPECT_EQ(c["command"][i].as<std::string>(), j.argv[i]);
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<std::string>(), "2");
  EXPECT_FALSE(c["resources"]["requests"]["nvidia.com/gpu"]);  // extended: limits only
  EXPECT_EQ(c["resources"]["requests"]["cpu"].as<std::string>(), "16");
  EXPECT_EQ(c["resources"]["limits"]["cpu"].as<std::string>(), "16");
  EXPECT_EQ(c["resources"]["limits"]["memory"].as<std::string>(), "131072Mi");
  std::map<std::string, std::string> env;
  for (const auto& e : c["env"]) env[e["name"].as<std::string>()] = e["value"].as<std::string>();
  EXPECT_EQ(env["TUNECTL_RUN_ID"], "42");  // set by tunectl, whatever the run's env says
  EXPECT_EQ(env["TUNECTL_ATTEMPT"], "3");
  EXPECT_EQ(env["TUNECTL_RUN_DIR"], "/tunectl/run");
  EXPECT_EQ(env["yes"], "on");  // quoted: YAML 1.1 readers would make these booleans
  EXPECT_EQ(env["EMPTY"], "");
  // The run directory is writable (emptyDir); each file is mounted read-only inside it.
  std::map<std::string, std::string> mounts;
  for (const auto& v : c["volumeMounts"])
    mounts[v["mountPath"].as<std::string>()] = v["subPath"] ? v["subPath"].as<std::string>() : "";
  EXPECT_EQ(mounts["/tunectl/run"], "");
  EXPECT_EQ(mounts["/tunectl/run/conf/model.yaml"], "conf_model.yaml");
  EXPECT_EQ(mounts["/tunectl/run/ds config.json"], "ds_config.json");
}

TEST(KubeRender, BinaryFilesGoToBinaryDataMatchesGolden) {
  auto [j, o] = BinaryFileJob();
  auto m = RenderKubeJob(j, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ExpectGolden("binary_file", *m);
  auto docs = Documents(*m);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["binaryData"]["weights.bin"].as<std::string>(), "AAH+/yB0YWls");
  EXPECT_EQ(docs[0]["data"]["note"].as<std::string>(), "no newline");
  EXPECT_EQ(docs[1]["spec"]["activeDeadlineSeconds"].as<int>(), 90 + 600);
  EXPECT_FALSE(docs[1]["spec"]["ttlSecondsAfterFinished"]);  // -1: never deleted
  EXPECT_EQ(
      docs[1]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"]
          .as<std::string>(),
      "1");
}

TEST(KubeRender, SamePathsDifferentKeysAreKeptApart) {
  KubeJob j = MinimalJob();
  j.files = {{"a/b", "1\n"}, {"a_b", "2\n"}};
  auto m = RenderKubeJob(j, Options());
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto docs = Documents(*m);
  EXPECT_EQ(docs[0]["data"]["a_b"].as<std::string>(), "1\n");
  EXPECT_EQ(docs[0]["data"]["2-a_b"].as<std::string>(), "2\n");
}

TEST(KubeRender, MultiNodeIsRefusedWithTheReason) {
  KubeJob j = MinimalJob();
  j.resources.nodes = 2;
  auto m = RenderKubeJob(j, Options());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("run.resources.nodes: 2"));
  EXPECT_THAT(m.status().message(), HasSubstr("Slurm"));
}

TEST(KubeRender, RefusesWhatCannotBeAJob) {
  struct Case {
    std::string what;
    std::function<void(KubeJob&, KubeOptions&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"no image", [](KubeJob&, KubeOptions& o) { o.image.clear(); }, "image: empty"},
      {"empty argv", [](KubeJob& j, KubeOptions&) { j.argv.clear(); }, "command: empty"},
      {"parent path", [](KubeJob& j, KubeOptions&) { j.files["../etc/passwd"] = "x"; },
       "files: \"../etc/passwd\" is not a path inside the run directory"},
      {"absolute path", [](KubeJob& j, KubeOptions&) { j.files["/abs"] = "x"; }, "\"/abs\""},
      {"env name", [](KubeJob& j, KubeOptions&) { j.env["A=B"] = "x"; }, "env: \"A=B\""},
      {"env digit", [](KubeJob& j, KubeOptions&) { j.env["1X"] = "x"; }, "env: \"1X\""},
      {"argv bytes", [](KubeJob& j, KubeOptions&) { j.argv.push_back("\xff"); },
       "command[4]: \"\xEF\xBF\xBD\" is not UTF-8 text"},
      {"env value bytes", [](KubeJob& j, KubeOptions&) { j.env["X"] = std::string("a\0b", 3); },
       "env.X:"},
      {"too large", [](KubeJob& j, KubeOptions&) { j.files["big"] = std::string(1100000, 'x'); },
       "do not fit in one ConfigMap"},
      {"negative", [](KubeJob& j, KubeOptions&) { j.resources.mem_mb = -1; }, "mem_mb -1"},
      {"namespace", [](KubeJob&, KubeOptions& o) { o.ns = "ML_team"; },
       "namespace: \"ML_team\" is not a DNS-1123 label"},
      {"prefix", [](KubeJob&, KubeOptions& o) { o.name_prefix = std::string(31, 'a'); },
       "name prefix"},
      {"selector", [](KubeJob&, KubeOptions& o) { o.node_selector["pool"] = "a b"; },
       "node selector \"pool\": \"a b\" is not a label value"},
      {"pull policy", [](KubeJob&, KubeOptions& o) { o.image_pull_policy = "Sometimes"; },
       "Always, IfNotPresent or Never"},
      {"gpu resource", [](KubeJob&, KubeOptions& o) { o.gpu_resource = "gpu"; },
       "gpu resource: \"gpu\""},
      {"run dir", [](KubeJob& j, KubeOptions&) { j.run_dir = "relative/dir"; }, "run dir:"},
      {"node", [](KubeJob& j, KubeOptions&) { j.node_name = "Node_7"; }, "node: \"Node_7\""},
      {"attempt", [](KubeJob& j, KubeOptions&) { j.attempt = 0; }, "not positive"},
  };
  for (const auto& c : cases) {
    KubeJob j = MinimalJob();
    KubeOptions o = Options();
    c.change(j, o);
    auto m = RenderKubeJob(j, o);
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(m.status().code(), Status::Code::kInvalidArgument) << c.what;
    EXPECT_THAT(m.status().message(), HasSubstr(c.message)) << c.what;
  }
}

TEST(KubeRender, NamesAreDns1123Labels) {
  EXPECT_EQ(KubeObjectName(Options(), 123456, 2), "tunectl-123456-2");
  KubeOptions o = Options();
  o.name_prefix = std::string(30, 'p');
  KubeJob j = MinimalJob();
  j.run_id = INT64_MAX;
  j.attempt = INT32_MAX;
  auto m = RenderKubeJob(j, o);  // the longest name still fits in 63
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_LE(KubeObjectName(o, j.run_id, j.attempt).size(), 63u);
}

TEST(KubeFlags, ParsesTolerationsAndNodeSelectors) {
  auto t = ParseKubeToleration("nvidia.com/gpu=present:NoSchedule");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, (KubeToleration{"nvidia.com/gpu", "Equal", "present", "NoSchedule"}));
  t = ParseKubeToleration("dedicated:NoExecute");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (KubeToleration{"dedicated", "Exists", "", "NoExecute"}));
  t = ParseKubeToleration("spot");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (KubeToleration{"spot", "Exists", "", ""}));
  t = ParseKubeToleration(":NoSchedule");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (KubeToleration{"", "Exists", "", "NoSchedule"}));
  t = ParseKubeToleration("a=b:Sometimes");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("effect \"Sometimes\""));
  EXPECT_FALSE(ParseKubeToleration("").ok());
  EXPECT_FALSE(ParseKubeToleration("=v:NoSchedule").ok());

  auto s = ParseKubeNodeSelector("nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->first, "nvidia.com/gpu.product");
  EXPECT_EQ(s->second, "NVIDIA-H100-80GB-HBM3");
  EXPECT_TRUE(ParseKubeNodeSelector("pool=").ok());  // an empty value is a value
  auto bad = ParseKubeNodeSelector("pool");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("KEY=VALUE"));
  EXPECT_FALSE(ParseKubeNodeSelector("bad key=x").ok());
  EXPECT_FALSE(ParseKubeNodeSelector("k=-x").ok());
}

// ---- kubectl offline
// ---------------------------------------------------------------------------

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "");
  for (std::string dir; std::getline(in, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

// path -> scalar text of every leaf ("{}" / "[]" for empty collections).
void Flatten(const YAML::Node& n, const std::string& at, std::map<std::string, std::string>* out) {
  if (n.IsMap()) {
    if (n.size() == 0) (*out)[at] = "{}";
    for (const auto& kv : n) Flatten(kv.second, at + "." + kv.first.as<std::string>(), out);
  } else if (n.IsSequence()) {
    if (n.size() == 0) (*out)[at] = "[]";
    for (size_t i = 0; i < n.size(); ++i) Flatten(n[i], at + "[" + std::to_string(i) + "]", out);
  } else if (n.IsScalar()) {
    (*out)[at] = n.Scalar();
  } else {
    (*out)[at] = "~";
  }
}

std::string WriteTemp(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  EXPECT_TRUE(MakeDirs(std::filesystem::path(path).parent_path().string()).ok());
  EXPECT_TRUE(WriteFileAtomic(path, text).ok());
  return path;
}

TEST(KubeRender, GoldenManifestsPassKubectlOffline) {
  const std::string kubectl = FindOnPath("kubectl");
  if (kubectl.empty()) {
    // kubectl is not a Debian package, so a machine may lack it (scripts/test fails on a skipped
    // test): then each golden document is checked for what kubectl would need first.
    std::cout << "kubectl is not on PATH: the golden manifests were checked without it\n";
    for (const std::string name : {"minimal", "gpu_files", "binary_file"}) {
      auto text = ReadFile(kSource + "/tests/golden/kube/" + name + ".yaml");
      ASSERT_TRUE(text.ok()) << name;
      auto docs = Documents(*text);
      ASSERT_FALSE(docs.empty()) << name;
      for (const auto& d : docs) {
        EXPECT_TRUE(d["apiVersion"].IsScalar()) << name;
        EXPECT_TRUE(d["kind"].IsScalar()) << name;
        EXPECT_TRUE(d["metadata"]["name"].IsScalar()) << name;
      }
    }
    return;
  }
  const std::string dir =
      std::filesystem::temp_directory_path() / ("tunectl-kubectl-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  // A kubeconfig pointing at a port nothing listens on, and the discovery documents kubectl would
  // have fetched from it, in its cache (fresh for 6 hours): create --dry-run=client needs only
  // these.
  const std::string kubeconfig = WriteTemp(dir, "kubeconfig", R"(apiVersion: v1
kind: Config
clusters:
- name: offline
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: offline
  context:
    cluster: offline
    user: offline
current-context: offline
users:
- name: offline
  user:
    token: offline
)");
  const std::string cache = dir + "/cache";
  const std::string disco = cache + "/discovery/127.0.0.1_1";
  WriteTemp(disco, "servergroups.json", R"({"kind":"APIGroupList","apiVersion":"v1","groups":[
{"name":"","versions":[{"groupVersion":"v1","version":"v1"}],"preferredVersion":{"groupVersion":"v1","version":"v1"}},
{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],"preferredVersion":{"groupVersion":"batch/v1","version":"v1"}}]})");
  WriteTemp(disco, "v1/serverresources.json",
            R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[
{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["cm"]},
{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["po"]}]})");
  WriteTemp(disco, "batch/v1/serverresources.json",
            R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"batch/v1","resources":[
{"name":"jobs","singularName":"job","namespaced":true,"kind":"Job","verbs":["create","delete","get","list","patch","update","watch"]}]})");

  auto launcher = NewPosixProcessLauncher();
  auto run = [&](std::vector<std::string> argv) {
    ProcessSpec spec;
    spec.argv = std::move(argv);
    auto r = RunCommand(*launcher, spec, std::chrono::milliseconds(60000));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : CommandResult{};
  };
  for (const std::string name : {"minimal", "gpu_files", "binary_file"}) {
    SCOPED_TRACE(name);
    const std::string golden = kSource + "/tests/golden/kube/" + name + ".yaml";
    auto text = ReadFile(golden);
    ASSERT_TRUE(text.ok()) << golden;
    // 1. The whole manifest as kubectl would send it.
    CommandResult c = run({kubectl, "--kubeconfig=" + kubeconfig, "--cache-dir=" + cache, "create",
                           "--dry-run=client", "--validate=false", "-o", "name", "-f", golden});
    EXPECT_TRUE(c.status.ok()) << c.output;
    EXPECT_THAT(c.output, HasSubstr("job.batch/tunectl-"));
    // 2. Each document decoded into its typed object, with no cluster.
    auto docs = Documents(*text);
    std::vector<std::string> texts(1);  // the documents' own text, as written
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (line == "---")
        texts.emplace_back();
      else
        texts.back() += line + "\n";
    }
    ASSERT_EQ(texts.size(), docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
      const std::string kind = docs[i]["kind"].as<std::string>();
      const std::string doc = WriteTemp(dir, name + "-" + std::to_string(i) + ".yaml", texts[i]);
      CommandResult s = run({kubectl, "--kubeconfig=/dev/null", "set", "env", "--local", "-o",
                             "yaml", "-f", doc, "TUNECTL_KUBECTL_CHECK=1"});
      EXPECT_THAT(s.output, ::testing::Not(HasSubstr("unable to decode"))) << kind;
      if (kind == "ConfigMap") {  // decoded, then refused as not a pod template: as it should be
        EXPECT_THAT(s.output, HasSubstr("*v1.ConfigMap"));
        continue;
      }
      ASSERT_TRUE(s.status.ok()) << s.output;
      std::map<std::string, std::string> ours, theirs;
      Flatten(docs[i], "", &ours);
      Flatten(YAML::Load(s.output), "", &theirs);
      for (const auto& [path, value] : ours) {
        if (value.empty()) continue;  // "" is the default kubectl leaves out (omitempty)
        ASSERT_TRUE(theirs.count(path)) << path << " was dropped by kubectl: not a Job field";
        if (path.find(".resources.") == std::string::npos) {  // quantities are canonicalised
          EXPECT_EQ(theirs[path], value) << path;
        }
      }
    }
  }
  std::filesystem::remove_all(dir);
}

// ---- kubectl's JSON
// ----------------------------------------------------------------------------

KubeJobInfo JobFixture(const std::string& name) {
  auto j = ParseKubeJob(Fixture(name));
  EXPECT_TRUE(j.ok()) << name << ": " << j.status().message();
  return j.ok() && *j ? **j : KubeJobInfo{};
}

KubePodInfo PodFixture(const std::string& name) {
  auto p = ParseKubePods(Fixture(name));
  EXPECT_TRUE(p.ok()) << name << ": " << p.status().message();
  EXPECT_TRUE(p.ok() && p->size() == 1) << name;
  return p.ok() && !p->empty() ? p->front() : KubePodInfo{};
}

TEST(KubeParse, JobStates) {
  KubeJobInfo running = JobFixture("job-running.json");
  EXPECT_EQ(running.name, "tunectl-42-1");
  EXPECT_EQ(running.uid, "5f0c3a52-8d2e-4c4b-9a57-2c1c7b0e6f11");
  EXPECT_EQ(running.active, 1);
  EXPECT_FALSE(running.complete || running.failed_condition || running.suspended);

  KubeJobInfo done = JobFixture("job-complete.json");
  EXPECT_TRUE(done.complete);
  EXPECT_EQ(done.succeeded, 1);
  EXPECT_EQ(done.completion_time, "2026-12-05T07:20:31Z");

  KubeJobInfo backoff = JobFixture("job-failed-backofflimit.json");
  EXPECT_TRUE(backoff.failed_condition);
  EXPECT_EQ(backoff.failed_reason, "BackoffLimitExceeded");
  EXPECT_EQ(backoff.failed, 1);

  KubeJobInfo deadline = JobFixture("job-failed-deadline.json");
  EXPECT_EQ(deadline.failed_reason, "DeadlineExceeded");
  EXPECT_EQ(deadline.failed_message, "Job was active longer than specified deadline");

  KubeJobInfo suspended = JobFixture("job-suspended.json");
  EXPECT_TRUE(suspended.suspended);
  EXPECT_EQ(KubePendingReason(suspended, nullptr), "Suspended: Job suspended");
}

TEST(KubeParse, NotFoundAndGarbage) {
  auto none = ParseKubeJob("  \n");  // --ignore-not-found prints nothing
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  auto bad = ParseKubeJob("Error from server (Forbidden): jobs.batch is forbidden");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("not a JSON object: \"Error from server"));
  auto pod_as_job = ParseKubeJob(R"({"kind":"Pod","metadata":{"name":"x"}})");
  ASSERT_FALSE(pod_as_job.ok());
  EXPECT_THAT(pod_as_job.status().message(), HasSubstr("kind \"Pod\""));
  EXPECT_FALSE(ParseKubePods(R"({"kind":"Job"})").ok());
  auto empty = ParseKubePods(Fixture("pods-empty.json"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  // Wrong types are ignored, not fatal: a field kubectl does not fill stays at its default.
  auto odd = ParseKubeJob(R"({"kind":"Job","status":{"active":"one","conditions":{}}})");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ((*odd)->active, 0);
}

TEST(KubeParse, PendingReasonsInTheClustersWords) {
  const KubeJobInfo job = JobFixture("job-pending.json");
  EXPECT_EQ(KubePendingReason(job, nullptr), "no pod yet");
  KubePodInfo unsched = PodFixture("pods-pending-unschedulable.json");
  EXPECT_EQ(unsched.node, "");
  EXPECT_EQ(KubePhaseOf(job, &unsched), KubePhase::kPending);
  EXPECT_THAT(KubePendingReason(job, &unsched),
              HasSubstr("Unschedulable: 0/3 nodes are available: 1 node(s) had untolerated taint"));
  EXPECT_THAT(KubePendingReason(job, &unsched), HasSubstr("2 Insufficient nvidia.com/gpu."));
  EXPECT_EQ(KubeStuckReason(unsched), "");  // waiting for room is not stuck

  KubePodInfo pull = PodFixture("pods-image-pull-backoff.json");
  EXPECT_EQ(KubePhaseOf(job, &pull), KubePhase::kPending);
  EXPECT_THAT(KubePendingReason(job, &pull),
              HasSubstr("ImagePullBackOff: Back-off pulling image \"registry.example/train:1.4\""));
  EXPECT_THAT(KubeStuckReason(pull), HasSubstr("ImagePullBackOff"));

  KubePodInfo creating = PodFixture("pods-container-creating.json");
  EXPECT_EQ(KubePendingReason(job, &creating), "ContainerCreating");
  EXPECT_EQ(creating.node, "gpu-node-7");
}

TEST(KubeParse, PodStates) {
  const KubeJobInfo job = JobFixture("job-running.json");
  KubePodInfo running = PodFixture("pods-running.json");
  EXPECT_EQ(running.name, "tunectl-42-1-x7k2p");
  EXPECT_EQ(running.node, "gpu-node-7");
  EXPECT_EQ(running.phase, "Running");
  EXPECT_EQ(running.container.state, "running");
  EXPECT_EQ(running.container.started_at, "2026-12-05T07:00:04Z");
  EXPECT_EQ(KubePhaseOf(job, &running), KubePhase::kRunning);

  KubePodInfo oom = PodFixture("pods-oomkilled.json");
  EXPECT_EQ(oom.container.state, "terminated");
  EXPECT_EQ(oom.container.reason, "OOMKilled");
  EXPECT_EQ(oom.container.exit_code, 137);
  EXPECT_EQ(KubePhaseOf(job, &oom), KubePhase::kEnded);

  KubePodInfo evicted = PodFixture("pods-evicted.json");
  EXPECT_EQ(evicted.reason, "Evicted");
  EXPECT_THAT(evicted.message, HasSubstr("low on resource: ephemeral-storage"));
  EXPECT_THAT(evicted.disruption, HasSubstr("TerminationByKubelet: The node was low"));

  KubePodInfo preempted = PodFixture("pods-preempted.json");
  EXPECT_TRUE(preempted.deleting);
  EXPECT_THAT(preempted.disruption, HasSubstr("PreemptionByScheduler"));

  // Pods come oldest first.
  auto two = ParseKubePods(R"({"kind":"List","items":[
    {"metadata":{"name":"b","creationTimestamp":"2026-12-05T07:00:09Z"},"status":{"phase":"Pending"}},
    {"metadata":{"name":"a","creationTimestamp":"2026-12-05T07:00:01Z"},"status":{"phase":"Failed"}}]})");
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].name, "a");
}

// ---- ClassifyKubeEnd
// ---------------------------------------------------------------------------

KubeEnd Classify(const std::string& job, const std::string& pods, bool ran = true,
                 bool pod_gone = false, bool cancelled = false) {
  KubeObserved seen;
  if (!job.empty()) seen.job = JobFixture(job);
  if (!pods.empty()) seen.pod = PodFixture(pods);
  seen.ran = ran;
  seen.pod_gone = pod_gone;
  seen.cancelled_by_agent = cancelled;
  return ClassifyKubeEnd(seen);
}

TEST(KubeClassify, SuccessIsCompleteOrExitZero) {
  KubeEnd e = Classify("job-complete.json", "pods-succeeded.json");
  EXPECT_TRUE(e.succeeded);
  EXPECT_FALSE(e.infra_failure);
  EXPECT_EQ(e.reason, "");
  // The pod succeeded before the Job controller wrote Complete.
  EXPECT_TRUE(Classify("job-running.json", "pods-succeeded.json").succeeded);
}

TEST(KubeClassify, NonZeroExitIsTheRuns) {
  KubeEnd e = Classify("job-failed-backofflimit.json", "pods-failed-exit.json");
  EXPECT_FALSE(e.succeeded);
  EXPECT_FALSE(e.infra_failure);
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(e.reason, "");  // like a local run: "exit code 3" on the server
}

TEST(KubeClassify, OomKilledIsTheRuns) {
  KubeEnd e = Classify("job-failed-backofflimit.json", "pods-oomkilled.json");
  EXPECT_FALSE(e.infra_failure);
  EXPECT_THAT(e.reason, HasSubstr("host OOM: the container was OOMKilled"));
  EXPECT_EQ(e.exit_code, 137);
  EXPECT_EQ(e.signal, 9);
}

TEST(KubeClassify, DeadlineIsTheRunsTimeoutOnlyIfItRan) {
  KubeEnd ran = Classify("job-failed-deadline.json", "pods-running.json", /*ran=*/true);
  EXPECT_FALSE(ran.infra_failure);
  EXPECT_THAT(ran.reason, HasSubstr("timeout: the Job's activeDeadlineSeconds passed"));
  KubeEnd waited =
      Classify("job-failed-deadline.json", "pods-pending-unschedulable.json", /*ran=*/false);
  EXPECT_TRUE(waited.infra_failure);
  EXPECT_THAT(waited.reason, HasSubstr("not started within the Job's activeDeadlineSeconds"));
  EXPECT_THAT(waited.reason, HasSubstr("Insufficient nvidia.com/gpu"));
}

TEST(KubeClassify, EvictionPreemptionAndDeletionAreTheClusters) {
  KubeEnd evicted = Classify("job-failed-backofflimit.json", "pods-evicted.json");
  EXPECT_TRUE(evicted.infra_failure);
  EXPECT_THAT(evicted.reason, HasSubstr("DisruptionTarget TerminationByKubelet"));
  KubeObserved no_condition;  // an older kubelet: status.reason only
  no_condition.job = JobFixture("job-failed-backofflimit.json");
  no_condition.pod = PodFixture("pods-evicted.json");
  no_condition.pod->disruption.clear();
  KubeEnd e = ClassifyKubeEnd(no_condition);
  EXPECT_TRUE(e.infra_failure);
  EXPECT_THAT(e.reason, HasSubstr("(Evicted: The node was low on resource"));

  KubeEnd preempted = Classify("job-failed-backofflimit.json", "pods-preempted.json");
  EXPECT_TRUE(preempted.infra_failure);
  EXPECT_THAT(preempted.reason, HasSubstr("PreemptionByScheduler"));

  KubeEnd deleted = Classify("job-failed-backofflimit.json", "pods-deleted.json");
  EXPECT_TRUE(deleted.infra_failure);
  EXPECT_THAT(deleted.reason, HasSubstr("the pod was deleted before it ended"));

  KubeEnd gone = Classify("job-failed-backofflimit.json", "pods-running.json", true, true);
  EXPECT_TRUE(gone.infra_failure);
  EXPECT_THAT(gone.reason, HasSubstr("deleted or lost before it ended (Job BackoffLimitExceeded"));

  KubeEnd lost = Classify("", "pods-running.json");
  EXPECT_TRUE(lost.infra_failure);
  EXPECT_THAT(lost.reason, HasSubstr("lost: the Job was deleted"));
}

TEST(KubeClassify, ImagePullIsTheClustersStartErrorTheRuns) {
  KubeEnd pull = Classify("job-pending.json", "pods-image-pull-backoff.json", false);
  EXPECT_TRUE(pull.infra_failure);
  EXPECT_THAT(pull.reason, HasSubstr("image pull failed: ImagePullBackOff"));
  KubeEnd start = Classify("job-failed-backofflimit.json", "pods-start-error.json");
  EXPECT_FALSE(start.infra_failure);
  EXPECT_EQ(start.exit_code, 127);
  EXPECT_THAT(start.reason, HasSubstr("launch_failed: StartError: failed to create containerd"));
}

TEST(KubeClassify, CancelledByTheAgent) {
  KubeEnd e = Classify("job-running.json", "pods-preempted.json", true, false, true);
  EXPECT_FALSE(e.infra_failure);
  EXPECT_EQ(e.reason, "cancelled");
}

TEST(KubeClassify, TransientKubectlErrors) {
  EXPECT_TRUE(IsTransientKubectlError(
      "The connection to the server 10.0.0.1:6443 was refused - did you specify the right host "
      "or "
      "port?\nUnable to connect to the server: dial tcp 10.0.0.1:6443: connect: connection "
      "refused"));
  EXPECT_TRUE(
      IsTransientKubectlError("Error from server (InternalError): Internal error occurred: "
                              "etcdserver: request timed out"));
  EXPECT_FALSE(
      IsTransientKubectlError("The Job \"tunectl-1-1\" is invalid: "
                              "spec.template.spec.containers[0].image: Required value"));
  EXPECT_FALSE(
      IsTransientKubectlError("Error from server (Forbidden): jobs.batch is forbidden: User "
                              "\"x\" cannot create resource"));
}

}  // namespace
}  // namespace tunectl

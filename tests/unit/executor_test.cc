#include "agent/executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/text.h"
#include "sys/files.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

// Records everything the executor reports.
class RecordingSink : public RunSink {
 public:
  void OnStarted(const v1::RunStarted& m) override { started.push_back(m); }
  void OnBatch(const v1::MetricBatch& m) override { batches.push_back(m); }
  void OnFinished(const v1::RunFinished& m) override { finished.push_back(m); }
  int Samples() const {
    int n = 0;
    for (const auto& b : batches) n += b.samples_size();
    return n;
  }
  std::vector<v1::RunStarted> started;
  std::vector<v1::MetricBatch> batches;
  std::vector<v1::RunFinished> finished;
};

std::string TempDir() {
  std::string d = std::filesystem::temp_directory_path() /
                  ("tunectl-exec-" + std::to_string(::getpid()) + "-" + std::to_string(rand()));
  std::filesystem::create_directories(d);
  return d;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void Run(const v1::Assign& a, const SlotGrant& slot = SlotGrant()) {
    LocalExecutor ex(launcher.get(), opts);
    ex.Run(a, slot, ctl, sink);
  }
  std::unique_ptr<ProcessLauncher> launcher = NewPosixProcessLauncher();
  ExecutorOptions opts = [] {
    ExecutorOptions o;
    o.runs_dir = TempDir();
    o.kill_grace_ms = 500;
    return o;
  }();
  RecordingSink sink;
  RunControl ctl;
};

v1::Assign Job(const std::string& script) {
  v1::Assign a;
  a.set_run_id(7);
  a.set_attempt(1);
  a.add_argv("sh");
  a.add_argv("-c");
  a.add_argv(script);
  auto* m = a.add_metrics();
  m->set_name("v");
  m->set_pattern("v=(?P<value>[0-9.]+)");
  auto* j = a.add_metrics();
  j->set_name("loss");
  j->set_json_key("loss");
  a.set_timeout_ms(60000);
  return a;
}

TEST_F(ExecutorTest, ExtractsEverySampleInBatchesBySize) {
  opts.batch_max_samples = 10;
  Run(
      Job("i=1; while [ $i -le 25 ]; do echo \"v=$i\"; echo \"{\\\"loss\\\": $i, \\\"step\\\": "
          "$i}\" >&2; i=$((i+1)); done"));
  ASSERT_EQ(sink.started.size(), 1u);
  ASSERT_EQ(sink.finished.size(), 1u);
  const auto& f = sink.finished[0];
  EXPECT_EQ(f.exit_code(), 0);
  EXPECT_EQ(f.reason(), "");
  EXPECT_EQ(f.lines(), 50);
  EXPECT_EQ(sink.Samples(), 50);
  EXPECT_EQ(sink.batches.size(), 5u);
  for (size_t i = 0; i < sink.batches.size(); ++i)
    EXPECT_EQ(sink.batches[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_EQ(f.batches(), 5);
  EXPECT_EQ(f.seq(), 6);
  EXPECT_TRUE(std::filesystem::exists(opts.runs_dir + "/7-1/output.log"));
}

TEST_F(ExecutorTest, BindsFilesAndEnvironment) {
  v1::Assign a = Job("echo v=$(cat \"$TUNECTL_RUN_DIR/cfg/x.txt\"); echo v=$MYVAR");
  auto* file = a.add_files();
  file->set_path("cfg/x.txt");
  file->set_content("42");
  (*a.mutable_env())["MYVAR"] = "8";
  Run(a);
  ASSERT_EQ(sink.Samples(), 2);
  EXPECT_DOUBLE_EQ(sink.batches[0].samples(0).value(), 42);
  EXPECT_DOUBLE_EQ(sink.batches[0].samples(1).value(), 8);
}

TEST_F(ExecutorTest, FailureKeepsStderrTail) {
  Run(Job("echo 'CUDA out of memory' >&2; exit 3"));
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 3);
  EXPECT_THAT(sink.finished[0].stderr_tail(), HasSubstr("CUDA out of memory"));
}

TEST_F(ExecutorTest, TimeoutKillsTheProcessGroup) {
  opts.kill_grace_ms = 500;
  v1::Assign a = Job("echo v=1; sleep 60 & wait");
  a.set_timeout_ms(300);
  auto t0 = std::chrono::steady_clock::now();
  Run(a);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("timeout"));
  EXPECT_EQ(sink.finished[0].signal(), SIGTERM);
  EXPECT_EQ(sink.Samples(), 1);  // what was printed before the kill is kept
}

TEST_F(ExecutorTest, CancelFromAnotherThread) {
  opts.kill_grace_ms = 500;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ctl.cancel = true;
  });
  Run(Job("trap '' TERM; sleep 30"));  // ignores SIGTERM: needs SIGKILL
  t.join();
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "cancelled");
  EXPECT_EQ(sink.finished[0].signal(), SIGKILL);
}

TEST_F(ExecutorTest, LaunchFailureIsReportedNotThrown) {
  v1::Assign a = Job("");
  a.clear_argv();
  a.add_argv("/no/such/trainer");
  Run(a);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.started.empty());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("launch_failed: cannot start /no/such/trainer"));
}

TEST_F(ExecutorTest, AStabilityRunIsStoppedAtItsDurationAndSucceeds) {
  v1::Assign a = Job("echo \"v=$TUNECTL_DURATION_S\"; sleep 30");
  a.set_duration_ms(1000);  // the job would run 30 s; told 1 s (TUNECTL_DURATION_S rounds down)
  const auto t0 = std::chrono::steady_clock::now();
  Run(a);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, std::chrono::seconds(10));
  ASSERT_EQ(sink.finished.size(), 1u);
  const auto& f = sink.finished[0];
  EXPECT_TRUE(f.duration_reached());
  EXPECT_EQ(f.reason(), "");
  EXPECT_EQ(f.exit_code(), 0);
  EXPECT_EQ(f.signal(), 0);
  ASSERT_EQ(sink.Samples(), 1);
  EXPECT_EQ(sink.batches[0].samples(0).value(), 1);
}

TEST_F(ExecutorTest, AStabilityJobThatIgnoresSigtermFailsAtTheDuration) {
  v1::Assign a = Job("trap '' TERM; while :; do sleep 0.1; done");
  a.set_duration_ms(300);
  Run(a);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_FALSE(sink.finished[0].duration_reached());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("did not stop"));
  EXPECT_EQ(sink.finished[0].signal(), SIGKILL);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST_F(ExecutorTest, AJobThatClosesItsOutputStillMeetsItsTimeout) {
  // Closes stdout and stderr, ignores SIGTERM, then lives on: the pipes say nothing, the process
  // is what the executor supervises.
  opts.kill_grace_ms = 300;
  v1::Assign a = Job("echo v=1; exec >&- 2>&-; trap '' TERM; sleep 30");
  a.set_timeout_ms(500);
  const auto t0 = std::chrono::steady_clock::now();
  Run(a);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("timeout"));
  EXPECT_EQ(sink.finished[0].signal(), SIGKILL);
  EXPECT_EQ(sink.Samples(), 1);
}

TEST_F(ExecutorTest, BinaryAndLongUtf8StderrBecomesValidText) {
  // Bytes that are not UTF-8, a NUL, and a 600-byte line of 3-byte characters (a tqdm bar).
  Run(
      Job("printf 'bad \\377\\376 \\000 end\\n' >&2; "
          "i=0; while [ $i -lt 200 ]; do printf '\\342\\226\\210' >&2; i=$((i+1)); done; "
          "echo >&2; exit 1"));
  ASSERT_EQ(sink.finished.size(), 1u);
  const std::string& tail = sink.finished[0].stderr_tail();
  EXPECT_EQ(SanitizeUtf8(tail), tail);  // valid already: nothing left to replace
  EXPECT_THAT(tail, HasSubstr("bad \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD end"));
  EXPECT_THAT(tail, HasSubstr("\xE2\x96\x88"));
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

TEST_F(ExecutorTest, ASetsidChildIsStoppedWithItsJob) {
  // The job starts a child in a session of its own (out of the job's process group) and exits;
  // the child would outlive the run. It carries the job's tag, and the run's end stops it.
  const std::string pidfile = opts.runs_dir + "/child.pid";
  Run(Job("setsid sh -c 'echo $$ > " + pidfile +
          "; exec sleep 60' </dev/null >/dev/null 2>&1 & "
          "sleep 0.3; echo v=1"));
  ASSERT_EQ(sink.finished.size(), 1u);
  std::ifstream f(pidfile);
  int pid = 0;
  ASSERT_TRUE(f >> pid) << "the child never started";
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0 || std::filesystem::exists("/proc/" + std::to_string(pid)) == false;
    // a killed child of init may linger as a zombie for a moment
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string s;
    std::getline(stat, s);
    if (s.find(") Z ") != std::string::npos) gone = true;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "the setsid child " << pid << " outlived its run";
  if (!gone) ::kill(pid, SIGKILL);
  EXPECT_TRUE(ProcessesWithEnv(JobTagEntry(opts, 7, 1)).empty());
}

TEST_F(ExecutorTest, AJobRunsInItsSlotWithItsGpusAndCpus) {
  SlotGrant slot;
  slot.index = 1;
  slot.gpus = "2,3";
  slot.cpus = "0";
  Run(Job("echo \"v=$TUNECTL_SLOT\"; echo \"gpus=$CUDA_VISIBLE_DEVICES\"; "
          "grep Cpus_allowed_list /proc/self/status"),
      slot);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 0) << sink.finished[0].stderr_tail();
  ASSERT_EQ(sink.started.size(), 1u);
  EXPECT_EQ(sink.started[0].slot(), 1);
  EXPECT_EQ(sink.started[0].placement(), "slot 1, GPUs 2,3, CPUs 0");
  EXPECT_FALSE(sink.started[0].node().empty());
  ASSERT_EQ(sink.batches.size(), 1u);
  EXPECT_EQ(sink.batches[0].samples(0).value(), 1.0);  // TUNECTL_SLOT=1
  const std::string out = ReadFile(opts.runs_dir + "/7-1/output.log").value();
  EXPECT_NE(out.find("O gpus=2,3"), std::string::npos) << out;
  EXPECT_NE(out.find("Cpus_allowed_list:\t0\n"), std::string::npos) << out;  // taskset -c 0
}

TEST_F(ExecutorTest, ADetachedLocalJobIsStoppedLikeACancelledOne) {
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ctl.detach = true;
  });
  Run(Job("sleep 30"));
  stopper.join();
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "cancelled");
}

TEST(SlotSplit, GivesEachSlotAnEqualContiguousShare) {
  auto ids = ParseIdList("--gpus", "0-3,6,7");
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  auto split = SplitAmongSlots("--gpus", *ids, 3);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(*split, (std::vector<std::string>{"0,1", "2,3", "6,7"}));
}

TEST(SlotSplit, RefusesAnUnevenSplitNamingTheFlag) {
  auto split = SplitAmongSlots("--gpus", {0, 1, 2}, 2);
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("--gpus: 3 ids cannot be split evenly among 2 slots"),
            std::string::npos)
      << split.status().message();
}

TEST(SlotSplit, RefusesBadIdLists) {
  for (const char* bad : {"", "0,,1", "a", "3-1", "0,0", "1,", "-1", "0-"}) {
    auto ids = ParseIdList("--cpus", bad);
    EXPECT_FALSE(ids.ok()) << bad;
    if (!ids.ok()) {
      EXPECT_EQ(ids.status().message().rfind("--cpus: ", 0), 0u) << bad;
    }
  }
}

}  // namespace
}  // namespace tunectl

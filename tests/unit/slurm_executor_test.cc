#include "agent/slurm_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "sys/files.h"
#include "test_support.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RecordingSink;

SlurmJobInfo Job(const std::string& state, const std::string& reason = "None",
                 const std::string& nodes = "n1", int exit_code = 0, int restarts = 0) {
  SlurmJobInfo j;
  j.id = "100";
  j.state = state;
  j.reason = reason;
  j.nodes = nodes;
  j.start_time = state == "PENDING" ? "" : "2026-12-05T07:00:00";
  j.restarts = restarts;
  j.has_exit = exit_code >= 0;
  j.exit_code = exit_code;
  return j;
}

// Slurm as a script: each Query returns the next step (the last one repeats) after appending the
// step's lines to the job's output file, as a running job would. Records every command.
class FakeSlurm : public SlurmClient {
 public:
  struct Step {
    std::optional<SlurmJobInfo> job;
    std::vector<std::string> lines;
    std::function<void()> then;  // runs after the step (e.g. the agent stops)
  };
  Result<std::string> SubmitHeld(const std::string& script_path) override {
    auto text = ReadFile(script_path);
    scripts.push_back(text.ok() ? *text : "");
    output = std::filesystem::path(script_path).parent_path() / "output.log";
    if (!submit_errors.empty()) {
      Status s = submit_errors.front();
      submit_errors.erase(submit_errors.begin());
      return s;
    }
    return std::to_string(100 + scripts.size() - 1);
  }
  Status Release(const std::string& id) override {
    released.push_back(id);
    return Status::Ok();
  }
  Result<std::optional<SlurmJobInfo>> Query(const std::string& id) override {
    queried.insert(id);
    if (cancelled.count(id)) return std::optional<SlurmJobInfo>(Job("CANCELLED", "None", "n1", 0));
    if (steps.empty()) return std::optional<SlurmJobInfo>();
    const size_t i = std::min(next, steps.size() - 1);
    if (next < steps.size()) {
      std::ofstream out(output, std::ios::app);
      for (const auto& l : steps[i].lines) out << l << "\n";
    }
    ++next;
    auto job = steps[i].job;
    if (job) job->id = id;
    if (steps[i].then && next == i + 1) steps[i].then();
    return job;
  }
  Status Cancel(const std::string& id, const std::string& signal) override {
    cancels.push_back(id + (signal.empty() ? "" : " " + signal));
    if (cancel_failures > 0) {
      --cancel_failures;
      return Status::Unavailable("scancel: Unable to contact slurm controller");
    }
    if (signal.empty() || end_on_term) cancelled.insert(id);
    return Status::Ok();
  }

  std::vector<Step> steps;
  size_t next = 0;
  std::vector<Status> submit_errors;
  int cancel_failures = 0;
  bool end_on_term = false;  // a SIGTERM ends the job (it stops itself)  // so many scancels fail
                             // first (the controller does not answer)
  std::vector<std::string> scripts, released, cancels;
  std::set<std::string> queried;
  std::string output;
  std::set<std::string> cancelled;  // job ids: CANCELLED from then on
};

std::string TempDir() {
  return testing::TempDir("tunectl-slurm");
}

v1::Assign Assign(int64_t run = 7, int attempt = 1, int64_t experiment = 0) {
  v1::Assign a;
  a.set_run_id(run);
  a.set_attempt(attempt);
  a.set_workload("train");
  a.add_argv("python3");
  a.add_argv("train.py");
  (*a.mutable_env())["LR"] = "0.1";
  auto* m = a.add_metrics();
  m->set_name("tput");
  m->set_pattern("tput=(?P<value>[0-9.]+)");
  a.set_experiment_id(experiment);
  auto* f = a.add_files();
  f->set_path("conf/ds.json");
  f->set_content("{}");
  return a;
}

class SlurmExecutorTest : public ::testing::Test {
 protected:
  SlurmExecutorTest() {
    opts.runs_dir = TempDir();
    opts.workdir = "/work";
    opts.batch_max_ms = 10;
    opts.kill_grace_ms = 50;
    sopts.slurm.partition = "gpu";
    sopts.poll_ms = 5;
    sopts.tail_ms = 2;
    sopts.retry_ms = 1;
    sopts.stop_wait_ms = 2000;
    sopts.vanished_ms = 50;
  }
  void Run(const v1::Assign& a) {
    SlurmExecutor ex(&slurm, opts, sopts);
    ex.Run(a, SlotGrant(), ctl, sink);
  }
  std::vector<std::string> Lines(int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i <= to; ++i)
      out.push_back("step " + std::to_string(i) + " tput=" + std::to_string(100 + i));
    return out;
  }
  ExecutorOptions opts;
  SlurmExecutorOptions sopts;
  FakeSlurm slurm;
  RecordingSink sink;
  RunControl ctl;
};

TEST_F(SlurmExecutorTest, SubmitsHeldReleasesAndReportsPendingStartSamplesAndSuccess) {
  slurm.steps = {{Job("PENDING", "Priority", "")},
                 {Job("PENDING", "Resources", "")},
                 {Job("RUNNING"), Lines(1, 3)},
                 {Job("RUNNING"), Lines(4, 5)},
                 {Job("COMPLETED", "None", "n1", 0), {"done"}}};
  Run(Assign());
  ASSERT_EQ(slurm.scripts.size(), 1u);
  EXPECT_THAT(slurm.scripts[0], HasSubstr("--partition=gpu"));
  EXPECT_EQ(slurm.released, std::vector<std::string>{"100"});
  ASSERT_EQ(sink.pending.size(), 2u);
  EXPECT_EQ(sink.pending[0].reason(), "Priority");
  EXPECT_EQ(sink.pending[1].reason(), "Resources");
  EXPECT_EQ(sink.pending[0].external_id(), "100");
  ASSERT_EQ(sink.started.size(), 1u);
  EXPECT_EQ(sink.started[0].node(), "n1");
  EXPECT_EQ(sink.started[0].external_id(), "100");
  EXPECT_EQ(sink.UniqueSamples(), 5);
  ASSERT_EQ(sink.finished.size(), 1u);
  const auto& f = sink.finished[0];
  EXPECT_EQ(f.exit_code(), 0);
  EXPECT_EQ(f.reason(), "");
  EXPECT_FALSE(f.infra_failure());
  EXPECT_EQ(f.lines(), 6);
  EXPECT_EQ(f.seq(), f.batches() + 1);
  EXPECT_TRUE(std::filesystem::exists(opts.runs_dir + "/7-1/conf/ds.json"));
  EXPECT_TRUE(std::filesystem::exists(opts.runs_dir + "/7-1/finished"));
}

TEST_F(SlurmExecutorTest, AFailedJobIsTheRunsOwnFailureWithItsExitCodeAndLastLines) {
  slurm.steps = {{Job("RUNNING"), {"Traceback (most recent call last):", "RuntimeError: boom"}},
                 {Job("FAILED", "NonZeroExitCode", "n1", 3)}};
  Run(Assign());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 3);
  EXPECT_FALSE(sink.finished[0].infra_failure());
  EXPECT_THAT(sink.finished[0].stderr_tail(), HasSubstr("RuntimeError: boom"));
}

TEST_F(SlurmExecutorTest, ANodeFailureIsTheClustersAndRetried) {
  slurm.steps = {{Job("RUNNING"), Lines(1, 2)}, {Job("NODE_FAIL", "None", "n1", 0)}};
  Run(Assign());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.finished[0].infra_failure());
  EXPECT_EQ(sink.UniqueSamples(), 2);
}

TEST_F(SlurmExecutorTest, ARequeuedJobIsStoppedAndReportedAsTheClustersFailure) {
  slurm.steps = {{Job("RUNNING"), Lines(1, 2)},
                 {Job("PENDING", "BeginTime", "", -1, 1)},
                 {Job("RUNNING", "None", "n1", 0, 1), Lines(1, 2)}};
  Run(Assign());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.finished[0].infra_failure());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("requeued"));
  EXPECT_EQ(slurm.cancels,
            std::vector<std::string>{"100"});  // it must not run again in this attempt
}

TEST_F(SlurmExecutorTest, CancelCallsScancelAndReportsCancelled) {
  slurm.steps = {{Job("RUNNING"), Lines(1, 1), [&] { ctl.cancel.store(true); }}, {Job("RUNNING")}};
  Run(Assign());
  EXPECT_EQ(slurm.cancels, std::vector<std::string>{"100"});
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "cancelled");
  EXPECT_FALSE(sink.finished[0].infra_failure());
}

TEST_F(SlurmExecutorTest, ACancelWhilePendingNeverReportsAStart) {
  slurm.steps = {{Job("PENDING", "Priority", ""), {}, [&] { ctl.cancel.store(true); }}};
  Run(Assign());
  EXPECT_TRUE(sink.started.empty());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "cancelled");
}

TEST_F(SlurmExecutorTest, ARefusedSubmissionIsTheRunsAndAnUnreachableControllerTheClusters) {
  slurm.submit_errors = {Status::InvalidArgument("sbatch: error: invalid partition specified")};
  Run(Assign());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 127);
  EXPECT_FALSE(sink.finished[0].infra_failure());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("invalid partition"));

  RecordingSink second;
  FakeSlurm down;
  down.submit_errors = {Status::Unavailable("a"), Status::Unavailable("b"),
                        Status::Unavailable("c")};
  SlurmExecutor ex(&down, opts, sopts);
  ex.Run(Assign(8), SlotGrant(), ctl, second);
  EXPECT_EQ(down.scripts.size(), 3u);  // tried submit_tries times
  ASSERT_EQ(second.finished.size(), 1u);
  EXPECT_TRUE(second.finished[0].infra_failure());
}

TEST_F(SlurmExecutorTest, AJobThatVanishesFromEverySourceIsLost) {
  slurm.steps = {{Job("RUNNING"), Lines(1, 1)}, {std::nullopt}};
  Run(Assign());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.finished[0].infra_failure());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("lost"));
}

TEST_F(SlurmExecutorTest, ADetachedJobIsAdoptedAndFollowedWithoutLosingOrDoublingSamples) {
  // The first agent process reads 3 lines, then stops (detach) while the job goes on.
  slurm.steps = {{Job("RUNNING"), Lines(1, 3)},
                 {Job("RUNNING"), Lines(4, 6), [&] { ctl.detach.store(true); }},
                 {Job("RUNNING")}};
  Run(Assign());
  EXPECT_TRUE(sink.finished.empty());
  EXPECT_TRUE(slurm.cancels.empty());  // the job was left to Slurm
  const int before = sink.UniqueSamples();
  EXPECT_GE(before, 3);

  // The next agent process finds it, and follows it to its end from where the last one stopped.
  RunControl ctl2;
  FakeSlurm later;
  later.output = slurm.output;
  later.steps = {{Job("RUNNING"), Lines(7, 9)}, {Job("COMPLETED", "None", "n1", 0)}};
  SlurmExecutor ex(&later, opts, sopts);
  auto adoptable = ex.Adoptable();
  ASSERT_EQ(adoptable.size(), 1u);
  EXPECT_EQ(adoptable[0].run_id(), 7);
  ex.Run(adoptable[0], SlotGrant(), ctl2, sink);
  EXPECT_TRUE(later.scripts.empty());  // not submitted again
  EXPECT_EQ(later.queried, std::set<std::string>{"100"});
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 0);
  EXPECT_EQ(sink.UniqueSamples(), 9);  // every line once, across both agent processes
  // Sequence numbers go on: no two different batches share one.
  std::map<int64_t, std::string> by_seq;
  for (const auto& b : sink.batches) {
    auto [it, fresh] = by_seq.emplace(b.seq(), b.SerializeAsString());
    EXPECT_TRUE(fresh || it->second == b.SerializeAsString()) << "seq " << b.seq();
  }
  EXPECT_TRUE(SlurmExecutor(&later, opts, sopts).Adoptable().empty());  // finished: not again
}

TEST_F(SlurmExecutorTest, AnExperimentsLaterRunsArePinnedToItsFirstRunsNodes) {
  slurm.steps = {{Job("RUNNING", "None", "gpu[03-04]")}, {Job("COMPLETED", "None", "gpu[03-04]")}};
  Run(Assign(7, 1, 42));
  EXPECT_THAT(slurm.scripts[0], Not(HasSubstr("--nodelist")));
  FakeSlurm second;
  second.steps = {{Job("RUNNING", "None", "gpu[03-04]")}, {Job("COMPLETED", "None", "gpu[03-04]")}};
  RecordingSink s2;
  SlurmExecutor ex(&second, opts, sopts);
  ex.Run(Assign(8, 1, 42), SlotGrant(), ctl, s2);
  ASSERT_EQ(second.scripts.size(), 1u);
  EXPECT_THAT(second.scripts[0], HasSubstr("--nodelist=gpu[03-04]"));
  ASSERT_EQ(s2.started.size(), 1u);
  EXPECT_THAT(s2.started[0].placement(), HasSubstr("experiment 42's first run"));
}

TEST_F(SlurmExecutorTest, APinnedRunWhoseNodesCannotTakeItIsPlacedBySlurmAndSaysSo) {
  std::filesystem::create_directories(opts.runs_dir + "/.slurm-nodes");
  std::ofstream(opts.runs_dir + "/.slurm-nodes/42") << "gpu07\n";
  slurm.steps = {{Job("PENDING", "ReqNodeNotAvail, UnavailableNodes:gpu07", "")},
                 {Job("RUNNING", "None", "gpu09")},
                 {Job("COMPLETED", "None", "gpu09")}};
  Run(Assign(9, 1, 42));
  ASSERT_EQ(slurm.scripts.size(), 2u);
  EXPECT_THAT(slurm.scripts[0], HasSubstr("--nodelist=gpu07"));
  EXPECT_THAT(slurm.scripts[1], Not(HasSubstr("--nodelist")));
  EXPECT_EQ(slurm.cancels, std::vector<std::string>{"100"});
  ASSERT_EQ(sink.started.size(), 1u);
  EXPECT_THAT(sink.started[0].placement(), HasSubstr("could not take it"));
  EXPECT_EQ(sink.finished.at(0).exit_code(), 0);
}

TEST_F(SlurmExecutorTest, AnAdoptedJobStillHeldIsReleased) {
  // The earlier agent died after recording the id and before releasing the job.
  const v1::Assign a = Assign();
  const std::string dir = opts.runs_dir + "/7-1";
  std::filesystem::create_directories(dir);
  std::string bytes = a.SerializeAsString();
  std::ofstream(dir + "/assign.pb", std::ios::binary) << bytes;
  std::ofstream(dir + "/slurm-job") << "100\n";
  slurm.output = dir + "/output.log";
  slurm.steps = {{Job("PENDING", "JobHeldUser", "")},
                 {Job("RUNNING"), Lines(1, 2)},
                 {Job("COMPLETED", "None", "n1", 0)}};
  SlurmExecutor ex(&slurm, opts, sopts);
  auto adopt = ex.Adoptable();
  ASSERT_EQ(adopt.size(), 1u);
  ex.Run(adopt[0], SlotGrant(), ctl, sink);
  EXPECT_EQ(slurm.released, std::vector<std::string>{"100"});
  EXPECT_TRUE(slurm.scripts.empty());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].exit_code(), 0);
  EXPECT_EQ(sink.UniqueSamples(), 2);
}

TEST_F(SlurmExecutorTest, AJobRequeuedWhileNoAgentWatchedIsCaughtByItsNewStartTime) {
  slurm.steps = {{Job("RUNNING"), Lines(1, 2), [&] { ctl.detach.store(true); }}, {Job("RUNNING")}};
  Run(Assign());
  ASSERT_TRUE(sink.finished.empty());
  // While no agent ran, Slurm requeued it and started it again: another StartTime.
  FakeSlurm later;
  later.output = slurm.output;
  SlurmJobInfo again = Job("RUNNING");
  again.start_time = "2026-12-05T09:30:00";
  later.steps = {{again, Lines(1, 1)}};
  SlurmExecutor ex(&later, opts, sopts);
  auto adopt = ex.Adoptable();
  ASSERT_EQ(adopt.size(), 1u);
  RunControl ctl2;
  ex.Run(adopt[0], SlotGrant(), ctl2, sink);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.finished[0].infra_failure());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("requeued"));
  EXPECT_EQ(later.cancels, std::vector<std::string>{"100"});
}

TEST_F(SlurmExecutorTest, ASuspendedJobIsNotARestart) {
  slurm.steps = {{Job("RUNNING"), Lines(1, 1)},
                 {Job("SUSPENDED", "None", "n1", -1)},
                 {Job("RUNNING"), Lines(2, 2)},
                 {Job("COMPLETED", "None", "n1", 0)}};
  Run(Assign());
  EXPECT_TRUE(slurm.cancels.empty());
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_FALSE(sink.finished[0].infra_failure());
  EXPECT_EQ(sink.UniqueSamples(), 2);
}

TEST_F(SlurmExecutorTest, AScancelThatIsLostIsSentAgainUntilTheJobEnds) {
  slurm.cancel_failures = 2;
  slurm.steps = {{Job("RUNNING"), Lines(1, 1), [&] { ctl.cancel.store(true); }}, {Job("RUNNING")}};
  // The fake ends a job only on a scancel that succeeds.
  Run(Assign());
  ASSERT_GE(slurm.cancels.size(), 3u);
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_EQ(sink.finished[0].reason(), "cancelled");
}

TEST_F(SlurmExecutorTest, AStabilityRunThatIgnoresSigtermFailsAndSaysSo) {
  auto a = Assign();
  a.set_duration_ms(30);
  slurm.steps = {{Job("RUNNING"), Lines(1, 1)}, {Job("RUNNING")}};
  Run(a);
  ASSERT_GE(slurm.cancels.size(), 2u);
  EXPECT_EQ(slurm.cancels[0], "100 TERM");
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_FALSE(sink.finished[0].duration_reached());
  EXPECT_THAT(sink.finished[0].reason(), HasSubstr("did not stop"));
}

TEST_F(SlurmExecutorTest, AStabilityRunStoppedAtItsDurationSucceeds) {
  auto a = Assign();
  a.set_duration_ms(30);
  slurm.steps = {{Job("RUNNING"), Lines(1, 1)}, {Job("RUNNING")}};
  slurm.end_on_term = true;
  Run(a);
  EXPECT_EQ(slurm.cancels, std::vector<std::string>{"100 TERM"});
  ASSERT_EQ(sink.finished.size(), 1u);
  EXPECT_TRUE(sink.finished[0].duration_reached());
  EXPECT_EQ(sink.finished[0].reason(), "");
}

}  // namespace
}  // namespace tunectl

// core/slurm.h: the sbatch script against golden files (tests/golden/slurm/<name>.sbatch; run with
// TUNECTL_UPDATE_GOLDEN=1 and the test rewrites them instead of comparing), refusals, the parsers
// of squeue / scontrol / jobcomp / sacct / sbatch / scontrol show config, PhaseOf,
// ClassifySlurmEnd and IsTransientSlurmError.
//
// The outputs in tests/fixtures/slurm/ are REAL, captured from Slurm 22.05.8 on a private
// single-node cluster (shared/recipes/slurm.sh); its README.md says which command and job made
// each. What that cluster cannot produce (NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE,
// OUT_OF_MEMORY; all of sacct, which needs slurmdbd) is written here by hand, shaped after the real
// lines (most are a real fixture line with JobState/Reason/ExitCode substituted), and each says so.
//
// one_node_minimal.sbatch and awkward_quoting.sbatch were submitted as they are to the real sbatch
// (--test-only, then for real): awkward_quoting's output (awkward_quoting_output.log) holds every
// env value and argument verbatim. The GPU goldens are refused there only for their gres (the
// test cluster has no GPUs); a script with the same --exclusive, --account, --qos, --mem,
// --cpus-per-task, --time, --nodelist and a quoted extra option was accepted and ran. The
// several_nodes form (`exec srun --nodes=N --ntasks=N
// --ntasks-per-node=1 --cpus-per-task=C -- argv`) ran one task on each node of a real two-node
// cluster (two slurmd on one machine), each task with the same argv and env.
#include "core/slurm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "test_support.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A real Slurm output from tests/fixtures/slurm/.
std::string Fixture(const std::string& name) {
  return testing::Fixture("slurm", name);
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

void ExpectGolden(const std::string& name, const std::string& text) {
  testing::ExpectGolden("slurm/" + name + ".sbatch", text);
}

SbatchJob MinimalJob() {
  SbatchJob j;
  j.run_id = 7;
  j.attempt = 1;
  j.workload = "train";
  j.argv = {"python3", "train.py", "--lr", "0.1"};
  j.env = {{"TUNECTL_RUN_ID", "7"}, {"TUNECTL_ATTEMPT", "1"}};
  j.run_dir = "/var/lib/tunectl/runs/7-1";
  j.timeout_ms = 60LL * 60 * 1000;
  return j;
}

std::string Render(const SbatchJob& job, const SlurmOptions& opts = {}) {
  auto s = RenderSbatch(job, opts);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : "";
}

// ---- RenderSbatch: golden scripts --------------------------------------------------------------

TEST(SlurmRender, OneNodeExecsTheArgvWithQuotedEnv) {
  const std::string s = Render(MinimalJob());
  ExpectGolden("one_node_minimal", s);
  EXPECT_THAT(s, HasSubstr("\nexec 'python3' 'train.py' '--lr' '0.1'\n"));
  EXPECT_THAT(s, Not(HasSubstr("srun")));
  EXPECT_THAT(s, Not(HasSubstr("--error")));  // stderr joins stdout in output.log
}

TEST(SlurmRender, EveryOptionInTheContractsOrderThenExtra) {
  SbatchJob j = MinimalJob();
  j.run_id = 42;
  j.attempt = 3;
  j.workdir = "/home/ml/project";
  j.run_dir = "/var/lib/tunectl/runs/42-3";
  j.resources.gpus_per_node = 4;
  j.resources.cpus_per_task = 16;
  j.resources.mem_mb = 64 * 1024;
  j.resources.time_ms = 2LL * 3600 * 1000;
  j.nodelist = "gpu03";
  SlurmOptions o;
  o.partition = "gpu";
  o.account = "ml-team";
  o.qos = "high";
  o.exclusive = true;
  o.extra = {"--constraint=a100", "--signal=B:USR1@60"};
  const std::string s = Render(j, o);
  ExpectGolden("gpus_options_extra", s);
  EXPECT_THAT(s, HasSubstr("#SBATCH --time=0-02:00:00\n"));  // resources.time_ms, not the timeout
}

TEST(SlurmRender, SeveralNodesRunSrunWithOneTaskPerNode) {
  SbatchJob j = MinimalJob();
  j.resources.nodes = 4;
  j.resources.gpus_per_node = 8;
  j.resources.cpus_per_task = 12;
  j.nodelist = "gpu[01-04]";
  const std::string s = Render(j);
  ExpectGolden("several_nodes_srun", s);
  EXPECT_THAT(s, HasSubstr("\nexec srun --nodes=4 --ntasks=4 --ntasks-per-node=1 "
                           "--cpus-per-task=12 -- 'python3' 'train.py' '--lr' '0.1'\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH --nodelist=gpu[01-04]\n"));  // bare: sbatch reads it as is
}

// The awkward values: the job prints each env value and argument in brackets, one a line.
SbatchJob AwkwardJob() {
  SbatchJob j;
  j.run_id = 7;
  j.attempt = 2;
  j.workload = "train \"big\" #1 it's";
  j.run_dir = "/tmp/runs/run dir %j #x";
  j.workdir = "/tmp/work dir";
  j.timeout_ms = 90000;
  j.argv = {"/bin/sh", "-c",    "printf '[%s]\\n' \"$AWK1\" \"$AWK2\" \"$AWK3\" \"$@\"",
            "sh",      "a b",   "it's",
            "\"dq\"",  "$HOME", "back\\slash",
            "`id`",    "#hash", "100%",
            "",        "x\ny",  "-n"};
  j.env = {{"AWK1", "sp ace 'single' \"double\" $HOME `id` \\n #"},
           {"AWK2", "line1\nline2"},
           {"AWK3", ""}};
  return j;
}

TEST(SlurmRender, AwkwardEnvArgvAndPathsArriveVerbatim) {
  const SbatchJob j = AwkwardJob();
  SlurmOptions o;
  o.extra = {"--comment=extra # with 'space' \"q\" \\ back"};
  const std::string s = Render(j, o);
  ExpectGolden("awkward_quoting", s);
  // sbatch's #SBATCH parser: quoted, '\' and '"' escaped, '%' doubled in the output path.
  EXPECT_THAT(s, HasSubstr("#SBATCH --output=\"/tmp/runs/run dir %%j #x/output.log\"\n"));
  EXPECT_THAT(s, HasSubstr("#SBATCH \"--comment=extra # with 'space' \\\"q\\\" \\\\ back\"\n"));
  EXPECT_THAT(s, HasSubstr("export AWK1='sp ace '\\''single'\\'' \"double\" $HOME `id` \\n #'\n"));
  EXPECT_THAT(s, HasSubstr("export AWK2='line1\nline2'\n"));
  // Real: this golden script, submitted as it is with the real sbatch (run_dir and workdir made
  // first), wrote this output.log into "/tmp/runs/run dir %j #x/"; scontrol showed
  // Comment=extra # with 'space' "q" \ back and TimeLimit=00:03:00.
  std::string expected;
  for (const auto& [name, value] : j.env) expected += "[" + value + "]\n";
  for (size_t i = 4; i < j.argv.size(); ++i) expected += "[" + j.argv[i] + "]\n";
  EXPECT_EQ(Fixture("awkward_quoting_output.log"), expected);
}

// ---- RenderSbatch: options -----------------------------------------------------------------

TEST(SlurmRender, TimeIsTheTimeoutPlusAMinuteUnlessResourcesAskOne) {
  SbatchJob j = MinimalJob();
  j.timeout_ms = 90 * 1000;  // + 60 s = 150 s -> 3 minutes
  EXPECT_THAT(Render(j), HasSubstr("#SBATCH --time=0-00:03:00\n"));
  j.resources.time_ms = 10 * 60 * 1000;
  EXPECT_THAT(Render(j), HasSubstr("#SBATCH --time=0-00:10:00\n"));
  j.resources.time_ms = 0;
  j.timeout_ms = 0;
  EXPECT_THAT(Render(j), Not(HasSubstr("--time")));
}

TEST(SlurmRender, NoResourcesAskedWritesNoResourceOptions) {
  const std::string s = Render(MinimalJob());
  for (const char* opt : {"--nodes", "--gres", "--cpus-per-task", "--mem", "--nodelist",
                          "--partition", "--account", "--qos", "--exclusive", "--chdir"})
    EXPECT_THAT(s, Not(HasSubstr(opt))) << opt;
}

TEST(SlurmRender, OutputIsAppendedSoARequeueDoesNotTruncateIt) {
  // Real: a requeued job's output file once it ran again — the default open mode kept only the
  // second run's line, --open-mode=append kept both runs and slurmstepd's requeue notice.
  EXPECT_EQ(Fixture("requeue_output_truncate.txt"), "start restarts=1\n");
  EXPECT_THAT(Fixture("requeue_output_append.txt"), HasSubstr("DUE TO JOB REQUEUE"));
  EXPECT_THAT(Render(MinimalJob()), HasSubstr("#SBATCH --output=/var/lib/tunectl/runs/7-1/"
                                              "output.log\n#SBATCH --open-mode=append\n"));
}

// ---- RenderSbatch: refusals ----------------------------------------------------------------

void ExpectRefused(const Result<std::string>& r, const std::string& field) {
  ASSERT_FALSE(r.ok()) << "accepted:\n" << *r;
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(field));
}

TEST(SlurmRender, ANewlineInAnSbatchValueIsRefusedNamingTheField) {
  struct Case {
    const char* field;
    std::function<void(SbatchJob&, SlurmOptions&)> set;
  };
  const std::vector<Case> cases = {
      {"run_dir", [](SbatchJob& j, SlurmOptions&) { j.run_dir = "/runs/a\nb"; }},
      {"workdir", [](SbatchJob& j, SlurmOptions&) { j.workdir = "/w\n"; }},
      {"workload", [](SbatchJob& j, SlurmOptions&) { j.workload = "a\nb"; }},
      {"nodelist", [](SbatchJob& j, SlurmOptions&) { j.nodelist = "gpu01\n"; }},
      {"slurm.partition", [](SbatchJob&, SlurmOptions& o) { o.partition = "gpu\n#SBATCH -A x"; }},
      {"slurm.account", [](SbatchJob&, SlurmOptions& o) { o.account = "a\nb"; }},
      {"slurm.qos", [](SbatchJob&, SlurmOptions& o) { o.qos = "q\n"; }},
      {"slurm.extra[1]",
       [](SbatchJob&, SlurmOptions& o) {
         o.extra = {"--constraint=a100", "--begin=now\n"};
       }},
  };
  for (const auto& c : cases) {
    SbatchJob j = MinimalJob();
    SlurmOptions o;
    c.set(j, o);
    auto r = RenderSbatch(j, o);
    ExpectRefused(r, c.field);
    if (!r.ok()) {
      EXPECT_THAT(r.status().message(), HasSubstr("\\n")) << c.field;  // shown escaped
    }
  }
}

TEST(SlurmRender, AnEnvNameThatIsNotAShellNameIsRefused) {
  for (const char* name : {"1ABC", "A-B", "A B", "", "A=B", "PATH;rm"}) {
    SbatchJob j = MinimalJob();
    j.env[name] = "x";
    ExpectRefused(RenderSbatch(j, {}), "env name");
  }
  SbatchJob ok = MinimalJob();
  ok.env["_x9"] = "line\nbreak";  // a line break in a value is fine: it is quoted
  EXPECT_TRUE(RenderSbatch(ok, {}).ok());
}

TEST(SlurmRender, AnEmptyArgvIsRefused) {
  SbatchJob j = MinimalJob();
  j.argv.clear();
  ExpectRefused(RenderSbatch(j, {}), "argv");
  j.argv = {""};
  ExpectRefused(RenderSbatch(j, {}), "argv[0]");
}

TEST(SlurmRender, ANulByteIsRefusedWhereverItIs) {
  SbatchJob j = MinimalJob();
  j.argv.push_back(std::string("a\0b", 3));
  ExpectRefused(RenderSbatch(j, {}), "argv[4]");
  j = MinimalJob();
  j.env["X"] = std::string("a\0b", 3);
  ExpectRefused(RenderSbatch(j, {}), "env X");
}

TEST(SlurmRender, AnExtraThatIsNotAnOptionIsRefused) {
  SlurmOptions o;
  o.extra = {"constraint=a100"};
  ExpectRefused(RenderSbatch(MinimalJob(), o), "slurm.extra[0]");
}

TEST(SlurmRender, AnEmptyRunDirOrANegativeResourceIsRefused) {
  SbatchJob j = MinimalJob();
  j.run_dir.clear();
  ExpectRefused(RenderSbatch(j, {}), "run_dir");
  j = MinimalJob();
  j.resources.gpus_per_node = -1;
  ExpectRefused(RenderSbatch(j, {}), "resources");
}

TEST(SlurmShellQuote, SingleQuotesWithAnInnerQuoteEscaped) {
  EXPECT_EQ(ShellQuote("plain"), "'plain'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME `id` \"x\" \\"), "'$HOME `id` \"x\" \\'");
}

// ---- FormatSlurmTime -----------------------------------------------------------------------

TEST(SlurmTime, RoundsUpToAWholeMinuteOfAtLeastOne) {
  // 0 would read as "no limit" to Slurm: the shortest limit written is one minute.
  EXPECT_EQ(FormatSlurmTime(0), "0-00:01:00");
  EXPECT_EQ(FormatSlurmTime(-5), "0-00:01:00");
  EXPECT_EQ(FormatSlurmTime(1), "0-00:01:00");
  EXPECT_EQ(FormatSlurmTime(60 * 1000), "0-00:01:00");
  EXPECT_EQ(FormatSlurmTime(60 * 1000 + 1), "0-00:02:00");
  EXPECT_EQ(FormatSlurmTime(90 * 1000), "0-00:02:00");
  EXPECT_EQ(FormatSlurmTime(3600LL * 1000), "0-01:00:00");
  EXPECT_EQ(FormatSlurmTime(25 * 3600LL * 1000), "1-01:00:00");
  EXPECT_EQ(FormatSlurmTime((100 * 24 * 60 - 1) * 60LL * 1000 + 1), "100-00:00:00");
}

// ---- ParseSqueue ---------------------------------------------------------------------------

SlurmJobInfo Squeue(const std::string& out, const std::string& id) {
  auto r = ParseSqueue(out, id);
  EXPECT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r.ok() && r->has_value()) << "job " << id << " not found in:\n" << out;
  return r.ok() && r->has_value() ? **r : SlurmJobInfo{};
}

TEST(SlurmSqueue, ReadsARunningJob) {
  const SlurmJobInfo j = Squeue(Fixture("squeue_running.out"), "1");
  EXPECT_EQ(j.id, "1");
  EXPECT_EQ(j.state, "RUNNING");
  EXPECT_EQ(j.reason, "None");
  EXPECT_EQ(j.nodes, "localhost");
  EXPECT_EQ(j.start_time, "2026-12-05T06:52:38");
  EXPECT_FALSE(j.has_exit);  // squeue's format has no exit code
}

TEST(SlurmSqueue, APendingJobHasItsReasonAndNoNodesOrStart) {
  SlurmJobInfo j = Squeue(Fixture("squeue_pending_resources.out"), "2");
  EXPECT_EQ(j.state, "PENDING");
  EXPECT_EQ(j.reason, "Resources");
  EXPECT_EQ(j.nodes, "");
  EXPECT_EQ(j.start_time, "");  // "N/A"
  EXPECT_EQ(Squeue(Fixture("squeue_pending_priority.out"), "3").reason, "Priority");
  EXPECT_EQ(Squeue(Fixture("squeue_held.out"), "17").reason, "JobHeldUser");
  EXPECT_EQ(Squeue(Fixture("squeue_nodes5.out"), "21").reason, "PartitionConfig");
}

TEST(SlurmSqueue, OtherJobsLinesAreIgnored) {
  const std::string all = Fixture("squeue_all.out");
  EXPECT_EQ(Squeue(all, "3").reason, "Priority");
  EXPECT_EQ(Squeue(all, "1").state, "RUNNING");
  auto none = ParseSqueue(all, "31");  // not "3", not "1"
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto empty = ParseSqueue("", "1");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
}

TEST(SlurmSqueue, EndedJobsWhileTheControllerHoldsThem) {
  EXPECT_EQ(Squeue(Fixture("squeue_completed.out"), "2").state, "COMPLETED");
  EXPECT_EQ(Squeue(Fixture("squeue_failed.out"), "3").reason, "NonZeroExitCode");
  EXPECT_EQ(Squeue(Fixture("squeue_cancelled.out"), "1").state, "CANCELLED");
  EXPECT_EQ(Squeue(Fixture("squeue_timeout.out"), "8").reason, "TimeLimit");
  const SlurmJobInfo term = Squeue(Fixture("squeue_term_full.out"), "5");
  EXPECT_EQ(term.state, "FAILED");
  EXPECT_EQ(term.reason, "JobLaunchFailure");
}

TEST(SlurmSqueue, ARequeuedJobCompletesThenPendsWithAFutureStartThenRunsAgain) {
  // Real, in this order after `scontrol requeue 4` / `18` (started at 06:52:44 / 07:02:12).
  const SlurmJobInfo completing = Squeue(Fixture("squeue_requeue_completing.out"), "4");
  EXPECT_EQ(completing.state, "COMPLETING");
  EXPECT_EQ(completing.start_time, "2026-12-05T06:52:46");  // the requeue's time, a new value
  const SlurmJobInfo pending = Squeue(Fixture("squeue_requeued_pending.out"), "4");
  EXPECT_EQ(pending.state, "PENDING");
  EXPECT_EQ(pending.reason, "BeginTime");
  EXPECT_EQ(pending.start_time, "2026-12-05T06:54:47");  // the BeginTime, two minutes ahead
  const SlurmJobInfo again = Squeue(Fixture("squeue_requeued_running.out"), "18");
  EXPECT_EQ(again.state, "RUNNING");
  EXPECT_EQ(again.start_time, "2026-12-05T07:05:06");
}

TEST(SlurmSqueue, AReasonWithSpacesOrAPipeKeepsTheFieldsAroundIt) {
  EXPECT_EQ(Squeue(Fixture("squeue_requeue_hold.out"), "20").reason, "job requeued in held state");
  // Hand-written: a free-text reason holding '|'; the node list and start stay last.
  const SlurmJobInfo j = Squeue("9|PENDING|burst_buffer|stage in||N/A\n", "9");
  EXPECT_EQ(j.reason, "burst_buffer|stage in");
  EXPECT_EQ(j.nodes, "");
  EXPECT_EQ(j.start_time, "");
}

TEST(SlurmSqueue, ALineWithoutFiveFieldsIsRefusedQuotingIt) {
  auto r = ParseSqueue("1|RUNNING|None|localhost|2026-12-05T06:52:38\n2|PENDING|Resources\n", "1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'2|PENDING|Resources'"));
  // The real error text of an unknown job is not squeue's format either (the executor reads the
  // exit status first).
  EXPECT_FALSE(ParseSqueue(Fixture("squeue_unknown.err"), "999999").ok());
}

// ---- ParseScontrolJob ----------------------------------------------------------------------

SlurmJobInfo Scontrol(const std::string& out, const std::string& id) {
  auto r = ParseScontrolJob(out, id);
  EXPECT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r.ok() && r->has_value()) << "job " << id << " not found in:\n" << out;
  return r.ok() && r->has_value() ? **r : SlurmJobInfo{};
}

TEST(SlurmScontrol, ReadsEachStateOfARealJob) {
  struct Case {
    const char* file;
    const char* id;
    const char* state;
    const char* reason;
    const char* nodes;
    int exit_code, signal, restarts;
  };
  const Case cases[] = {
      {"scontrol_running.out", "1", "RUNNING", "None", "localhost", 0, 0, 0},
      {"scontrol_pending_resources.out", "2", "PENDING", "Resources", "", 0, 0, 0},
      {"scontrol_pending_priority.out", "3", "PENDING", "Priority", "", 0, 0, 0},
      {"scontrol_held.out", "17", "PENDING", "JobHeldUser", "", 0, 0, 0},
      {"scontrol_completed.out", "2", "COMPLETED", "None", "localhost", 0, 0, 0},
      {"scontrol_failed.out", "3", "FAILED", "NonZeroExitCode", "localhost", 3, 0, 0},
      {"scontrol_cancelled.out", "1", "CANCELLED", "None", "localhost", 0, 15, 0},
      {"scontrol_timeout.out", "8", "TIMEOUT", "TimeLimit", "localhost", 0, 15, 0},
      {"scontrol_term_full.out", "5", "FAILED", "JobLaunchFailure", "localhost", 0, 15, 0},
      {"scontrol_sigkill.out", "26", "FAILED", "JobLaunchFailure", "localhost", 0, 9, 0},
      {"scontrol_bad_chdir.out", "24", "FAILED", "JobLaunchFailure", "localhost", 0, 53, 0},
      {"scontrol_requeued_pending.out", "4", "PENDING", "BeginTime", "", 0, 0, 1},
      {"scontrol_requeued_running.out", "18", "RUNNING", "None", "localhost", 0, 0, 1},
      {"scontrol_requeue_hold.out", "20", "PENDING", "job_requeued_in_held_state", "", 0, 0, 1},
      {"scontrol_cancelled_pending.out", "20", "CANCELLED", "job_requeued_in_held_state", "", 0, 0,
       1},
      {"scontrol_nodes5.out", "21", "PENDING", "PartitionConfig", "", 0, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const SlurmJobInfo j = Scontrol(Fixture(c.file), c.id);
    EXPECT_EQ(j.id, c.id);
    EXPECT_EQ(j.state, c.state);
    EXPECT_EQ(j.reason, c.reason);
    EXPECT_EQ(j.nodes, c.nodes);
    EXPECT_TRUE(j.has_exit);
    EXPECT_EQ(j.exit_code, c.exit_code);
    EXPECT_EQ(j.signal, c.signal);
    EXPECT_EQ(j.restarts, c.restarts);
  }
}

TEST(SlurmScontrol, StartTimeIsEmptyWhenUnknownAndNewAfterARequeue) {
  EXPECT_EQ(Scontrol(Fixture("scontrol_pending_resources.out"), "2").start_time, "");  // Unknown
  EXPECT_EQ(Scontrol(Fixture("scontrol_running.out"), "1").start_time, "2026-12-05T06:52:38");
  // Requeued and pending: StartTime= is the BeginTime ahead.
  EXPECT_EQ(Scontrol(Fixture("scontrol_requeued_pending.out"), "4").start_time,
            "2026-12-05T06:54:47");
}

TEST(SlurmScontrol, UnknownJobIdIsNotFound) {
  auto r = ParseScontrolJob(Fixture("scontrol_unknown.err"), "999999");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->has_value());
}

TEST(SlurmScontrol, ValuesWithSpacesAndEqualsSignsStayInTheirField) {
  // Real: Command=, WorkDir=, StdOut= with spaces; Comment= with "workload=train", "run=7".
  const std::string line = Fixture("scontrol_rendered_running.out");
  EXPECT_THAT(line, HasSubstr("Command=/tmp/helper-slurm/out/dir with space/job.sbatch "));
  const SlurmJobInfo j = Scontrol(line, "29");
  EXPECT_EQ(j.state, "RUNNING");
  EXPECT_EQ(j.nodes, "localhost");
  EXPECT_EQ(j.exit_code, 0);
  // Hand-written after it: a command whose arguments look like keys, and one that repeats keys
  // read here — the first occurrence (the real field, earlier in the line) wins.
  const std::string tricky =
      Replace(line, "Command=/tmp/helper-slurm/out/dir with space/job.sbatch",
              "Command=/a b/c JobState=COMPLETED ExitCode=9:0 NodeList=evil TRES=cpu=1,node=1");
  const SlurmJobInfo t = Scontrol(tricky, "29");
  EXPECT_EQ(t.state, "RUNNING");
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_EQ(t.nodes, "localhost");
}

TEST(SlurmScontrol, TheMultiLineFormatReadsTheSame) {
  const SlurmJobInfo one = Scontrol(Fixture("scontrol_rendered_running.out"), "29");
  const SlurmJobInfo multi = Scontrol(Fixture("scontrol_rendered_running_multiline.out"), "29");
  EXPECT_EQ(multi.state, one.state);
  EXPECT_EQ(multi.reason, one.reason);
  EXPECT_EQ(multi.nodes, one.nodes);
  EXPECT_EQ(multi.start_time, one.start_time);
  EXPECT_EQ(multi.exit_code, one.exit_code);
}

TEST(SlurmScontrol, OtherJobsRecordsAreIgnored) {
  const std::string two = Fixture("scontrol_running.out") + Fixture("scontrol_failed.out");
  EXPECT_EQ(Scontrol(two, "3").state, "FAILED");
  EXPECT_EQ(Scontrol(two, "1").state, "RUNNING");
  auto none = ParseScontrolJob(two, "13");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(SlurmScontrol, TextThatIsNoRecordIsRefused) {
  auto r = ParseScontrolJob("something else entirely\n", "1");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("'something else entirely'"));
  auto e = ParseScontrolJob("JobId=1 JobName=x Reason=None\n", "1");  // no JobState=
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("JobState"));
}

TEST(SlurmScontrol, ExitCodeWithASignal) {
  // Hand-written after scontrol_cancelled.out: a job killed by SIGSEGV with exec (0:11).
  const std::string line =
      Replace(Fixture("scontrol_cancelled.out"), "JobState=CANCELLED", "JobState=FAILED");
  const SlurmJobInfo j = Scontrol(Replace(line, "ExitCode=0:15", "ExitCode=0:11"), "1");
  EXPECT_EQ(j.exit_code, 0);
  EXPECT_EQ(j.signal, 11);
}

// ---- ParseJobcomp --------------------------------------------------------------------------

TEST(SlurmJobcomp, TheLastLineOfTheJobWins) {
  const std::string log = Fixture("jobcomp.log");
  // Job 4 was requeued (a JobState=PENDING line), then cancelled while it pended.
  auto j = ParseJobcomp(log, "4");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->state, "CANCELLED");
  EXPECT_EQ(j->nodes, "");  // NodeList=(null)
  EXPECT_EQ(j->start_time, "2026-12-05T06:55:11");
  EXPECT_TRUE(j->has_exit);
  EXPECT_EQ(j->exit_code, 0);
  EXPECT_EQ(j->reason, "");
  // The requeue's own line, alone, says PENDING: a job that is not over.
  const std::string first = log.substr(
      log.find("JobId=4 "), log.find('\n', log.find("JobId=4 ")) - log.find("JobId=4 ") + 1);
  auto requeued = ParseJobcomp(first, "4");
  ASSERT_TRUE(requeued.has_value());
  EXPECT_EQ(requeued->state, "PENDING");
  EXPECT_EQ(PhaseOf(requeued->state), SlurmPhase::kPending);
}

TEST(SlurmJobcomp, IdsAreMatchedWhole) {
  const std::string log = Fixture("jobcomp.log");
  auto one = ParseJobcomp(log, "1");  // not 10, 15–19
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->id, "1");
  EXPECT_EQ(one->state, "CANCELLED");
  auto three = ParseJobcomp(log, "3");
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(three->state, "FAILED");
  EXPECT_EQ(three->exit_code, 3);
  EXPECT_FALSE(ParseJobcomp(log, "30").has_value());
  EXPECT_FALSE(ParseJobcomp("", "1").has_value());
}

TEST(SlurmJobcomp, CancelAndTimeoutHaveNoSignalThereAndALaunchFailureHas53) {
  const std::string log = Fixture("jobcomp.log");
  auto timeout = ParseJobcomp(log, "8");
  ASSERT_TRUE(timeout.has_value());
  EXPECT_EQ(timeout->state, "TIMEOUT");
  EXPECT_EQ(timeout->signal, 0);  // scontrol said 0:15 for the same job
  auto term = ParseJobcomp(log, "5");
  ASSERT_TRUE(term.has_value());
  EXPECT_EQ(term->state, "FAILED");
  EXPECT_EQ(term->signal, 15);
  auto chdir = ParseJobcomp(log, "24");
  ASSERT_TRUE(chdir.has_value());
  EXPECT_EQ(chdir->signal, 53);
  auto mine = ParseJobcomp(log, "29");  // a RenderSbatch job: Name=tunectl-7-2, WorkDir with ' '
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(mine->state, "CANCELLED");
  EXPECT_EQ(mine->nodes, "localhost");
}

TEST(SlurmJobcomp, MalformedLinesAreSkipped) {
  const std::string log =
      "JobId=7 garbage\nnot a line\nJobId=7 UserId=root(0) JobState=FAILED "
      "NodeList=n1 ExitCode=2:0 \n";
  auto j = ParseJobcomp(log, "7");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->state, "FAILED");
  EXPECT_EQ(j->exit_code, 2);
}

// ---- ParseSacct (hand-written: sacct needs slurmdbd, which the test cluster has not) ----------

TEST(SlurmSacct, ReadsTheFieldsAndStripsTheStatesDecoration) {
  // Shaped after `sacct -n -P -X -j ID -o JobID,State,ExitCode,NodeList,Reason,Start`.
  auto r = ParseSacct("123|CANCELLED by 1000|0:15|gpu07|None|2026-12-05T07:00:00\n", "123");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->has_value());
  const SlurmJobInfo& j = **r;
  EXPECT_EQ(j.state, "CANCELLED");
  EXPECT_EQ(j.signal, 15);
  EXPECT_EQ(j.nodes, "gpu07");
  EXPECT_EQ(j.reason, "None");
  EXPECT_EQ(j.start_time, "2026-12-05T07:00:00");
  EXPECT_EQ(PhaseOf("CANCELLED by 1000"), SlurmPhase::kEnded);
}

TEST(SlurmSacct, APendingJobHasNoNodesNorStart) {
  auto r = ParseSacct("124|PENDING|0:0|None assigned|Priority|Unknown\n", "124");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->nodes, "");
  EXPECT_EQ((*r)->start_time, "");
  EXPECT_EQ((*r)->reason, "Priority");
}

TEST(SlurmSacct, OtherJobsAreIgnoredAndTheLastLineWins) {
  const std::string out =
      "12|COMPLETED|0:0|n1|None|2026-12-05T07:00:00\n"
      "123|NODE_FAIL|0:0|n2|None|2026-12-05T07:00:00\n"   // -D: the run before the requeue
      "123|COMPLETED|0:0|n3|None|2026-12-05T07:10:00\n";  // the last run
  auto r = ParseSacct(out, "123");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->state, "COMPLETED");
  EXPECT_EQ((*r)->nodes, "n3");
  auto none = ParseSacct(out, "1");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(SlurmSacct, AMalformedLineIsRefused) {
  auto few = ParseSacct("123|FAILED|1:0\n", "123");
  ASSERT_FALSE(few.ok());
  EXPECT_THAT(few.status().message(), HasSubstr("'123|FAILED|1:0'"));
  auto code = ParseSacct("123|FAILED|x|n1|None|Unknown\n", "123");
  ASSERT_FALSE(code.ok());
  EXPECT_THAT(code.status().message(), HasSubstr("ExitCode"));
}

// ---- ParseSbatchJobId, ParseSlurmConfig ----------------------------------------------------

TEST(SlurmSbatch, ReadsTheJobIdOfParsable) {
  auto real = ParseSbatchJobId(Fixture("sbatch_parsable.out"));  // "1\n"
  ASSERT_TRUE(real.ok());
  EXPECT_EQ(*real, "1");
  EXPECT_EQ(*ParseSbatchJobId("123;cluster\n"), "123");
  EXPECT_EQ(*ParseSbatchJobId("  42 \n"), "42");
  EXPECT_EQ(*ParseSbatchJobId(Fixture("sbatch_nodes5.out")), "21");  // accepted, then pends
}

TEST(SlurmSbatch, AnythingElseIsRefusedQuotingIt) {
  for (const std::string& out : {std::string(""), std::string("abc"), std::string("12a"),
                                 Fixture("sbatch_unknown_partition.err")}) {
    auto r = ParseSbatchJobId(out);
    ASSERT_FALSE(r.ok()) << out;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("sbatch --parsable printed"));
  }
}

TEST(SlurmConfig, ReadsAKeysValue) {
  const std::string cfg = Fixture("scontrol_show_config.out");
  EXPECT_EQ(ParseSlurmConfig(cfg, "JobCompType"), "jobcomp/filetxt");
  EXPECT_EQ(ParseSlurmConfig(cfg, "JobCompLoc"), "/tmp/helper-slurm/log/jobcomp.log");
  EXPECT_EQ(ParseSlurmConfig(cfg, "SlurmctldHost[0]"), "vm(localhost)");
  EXPECT_EQ(ParseSlurmConfig(cfg, "KillWait"), "30 sec");
  EXPECT_EQ(ParseSlurmConfig(cfg, "JobComp"), std::nullopt);      // no prefix match
  EXPECT_EQ(ParseSlurmConfig(cfg, "PowerPlugin"), std::nullopt);  // "PowerPlugin             = "
  EXPECT_EQ(ParseSlurmConfig(cfg, "JobCompParams"), std::nullopt);
  EXPECT_EQ(ParseSlurmConfig("JobCompLoc              = (null)\n", "JobCompLoc"), std::nullopt);
}

// ---- PhaseOf -------------------------------------------------------------------------------

TEST(SlurmPhase, EveryStateFamily) {
  for (const char* s : {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                        "SUSPENDED", "SPECIAL_EXIT", "RESV_DEL_HOLD", "POWER_UP_NODE", "STOPPED"})
    EXPECT_EQ(PhaseOf(s), SlurmPhase::kPending) << s;
  for (const char* s : {"RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING"})
    EXPECT_EQ(PhaseOf(s), SlurmPhase::kRunning) << s;
  for (const char* s :
       {"COMPLETED", "FAILED", "CANCELLED", "CANCELLED by 0", "TIMEOUT", "OUT_OF_MEMORY",
        "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED", "SOMETHING_NEW"})
    EXPECT_EQ(PhaseOf(s), SlurmPhase::kEnded) << s;
}

TEST(SlurmPhase, OfTheRealSqueueStates) {
  struct Case {
    const char* file;
    const char* id;
    SlurmPhase phase;
  };
  const Case cases[] = {
      {"squeue_pending_resources.out", "2", SlurmPhase::kPending},
      {"squeue_requeued_pending.out", "4", SlurmPhase::kPending},
      {"squeue_requeue_hold.out", "20", SlurmPhase::kPending},
      {"squeue_running.out", "1", SlurmPhase::kRunning},
      {"squeue_requeue_completing.out", "4", SlurmPhase::kRunning},
      {"squeue_completed.out", "2", SlurmPhase::kEnded},
      {"squeue_timeout.out", "8", SlurmPhase::kEnded},
      {"squeue_cancelled_pending.out", "20", SlurmPhase::kEnded},
  };
  for (const Case& c : cases) EXPECT_EQ(PhaseOf(Squeue(Fixture(c.file), c.id).state), c.phase);
}

// ---- ClassifySlurmEnd ----------------------------------------------------------------------

SlurmEnd ClassifyFixture(const std::string& file, const std::string& id, bool by_agent) {
  return ClassifySlurmEnd(Scontrol(Fixture(file), id), by_agent);
}

// A real scontrol line with its state, reason and exit code replaced: the shape of the states
// this cluster cannot produce.
SlurmJobInfo ShapedAfterReal(const std::string& state, const std::string& reason,
                             const std::string& exit) {
  std::string line = Replace(Fixture("scontrol_running.out"), "JobState=RUNNING Reason=None",
                             "JobState=" + state + " Reason=" + reason);
  return Scontrol(Replace(line, "ExitCode=0:0", "ExitCode=" + exit), "1");
}

TEST(SlurmClassify, CompletedWithExitZeroSucceeds) {
  const SlurmEnd e = ClassifyFixture("scontrol_completed.out", "2", false);
  EXPECT_TRUE(e.succeeded);
  EXPECT_FALSE(e.infra_failure);
  EXPECT_EQ(e.reason, "");
  // Seen from squeue (no exit code) it succeeds too.
  EXPECT_TRUE(ClassifySlurmEnd(Squeue(Fixture("squeue_completed.out"), "2"), false).succeeded);
}

TEST(SlurmClassify, FailedIsTheRunsOwnWithItsExitCodeOrSignal) {
  const SlurmEnd e = ClassifyFixture("scontrol_failed.out", "3", false);
  EXPECT_FALSE(e.succeeded);
  EXPECT_FALSE(e.infra_failure);
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(e.reason, "");  // the exit code says it, as for a local run
  const SlurmEnd k = ClassifyFixture("scontrol_sigkill.out", "26", false);  // JobLaunchFailure 0:9
  EXPECT_FALSE(k.infra_failure);
  EXPECT_EQ(k.signal, 9);
  EXPECT_EQ(k.reason, "");
  // Hand-written: FAILED with no code at all still says why.
  const SlurmEnd none = ClassifySlurmEnd(ShapedAfterReal("FAILED", "None", "0:0"), false);
  EXPECT_FALSE(none.succeeded);
  EXPECT_THAT(none.reason, HasSubstr("FAILED"));
}

TEST(SlurmClassify, TheAgentsTermCancelEndsFailedWithSignal15AndIsTheCancel) {
  // Real: `scancel --signal=TERM --full` of a running batch job -> FAILED, 0:15.
  const SlurmEnd mine = ClassifyFixture("scontrol_term_full.out", "5", true);
  EXPECT_EQ(mine.reason, "cancelled");
  EXPECT_FALSE(mine.infra_failure);
  const SlurmEnd theirs = ClassifyFixture("scontrol_term_full.out", "5", false);
  EXPECT_FALSE(theirs.infra_failure);
  EXPECT_EQ(theirs.signal, 15);
}

TEST(SlurmClassify, CancelledIsTheRunsCancelOnlyWhenTheAgentAskedForIt) {
  const SlurmEnd mine = ClassifyFixture("scontrol_cancelled.out", "1", true);
  EXPECT_EQ(mine.reason, "cancelled");
  EXPECT_FALSE(mine.infra_failure);
  const SlurmEnd operators = ClassifyFixture("scontrol_cancelled.out", "1", false);
  EXPECT_TRUE(operators.infra_failure);
  EXPECT_NE(operators.reason, "cancelled");
  EXPECT_THAT(operators.reason, HasSubstr("cancelled outside tunectl"));
  // From the job-completion log (ExitCode=0:0 there) the same.
  EXPECT_TRUE(ClassifySlurmEnd(*ParseJobcomp(Fixture("jobcomp.log"), "1"), false).infra_failure);
}

TEST(SlurmClassify, TimeoutIsTheRunsOwn) {
  const SlurmEnd e = ClassifyFixture("scontrol_timeout.out", "8", false);
  EXPECT_FALSE(e.infra_failure);
  EXPECT_FALSE(e.succeeded);
  EXPECT_EQ(e.reason, "timeout: Slurm's time limit (--time) was reached");
  const SlurmEnd log = ClassifySlurmEnd(*ParseJobcomp(Fixture("jobcomp.log"), "8"), false);
  EXPECT_EQ(log.reason, e.reason);
}

TEST(SlurmClassify, AFailedLaunchIsTheClustersNotASignal) {
  // Real: --chdir that does not exist on the node -> FAILED, JobLaunchFailure, ExitCode 0:53.
  const SlurmEnd e = ClassifyFixture("scontrol_bad_chdir.out", "24", false);
  EXPECT_TRUE(e.infra_failure);
  EXPECT_EQ(e.signal, 0);
  EXPECT_THAT(e.reason, HasSubstr("launch_failed"));
  EXPECT_THAT(e.reason, HasSubstr("localhost"));
  // The job-completion log has no Reason=, only 0:53: the same.
  EXPECT_TRUE(ClassifySlurmEnd(*ParseJobcomp(Fixture("jobcomp.log"), "24"), false).infra_failure);
}

TEST(SlurmClassify, OutOfMemoryIsTheRunsOwn) {
  // Hand-written, shaped after the real scontrol line (0:125 as sacct commonly shows for a
  // cgroup OOM kill).
  const SlurmEnd e =
      ClassifySlurmEnd(ShapedAfterReal("OUT_OF_MEMORY", "OutOfMemory", "0:125"), false);
  EXPECT_FALSE(e.infra_failure);
  EXPECT_THAT(e.reason, HasSubstr("OOM"));
}

TEST(SlurmClassify, TheClustersFailuresAreRetried) {
  // Hand-written, shaped after the real scontrol line.
  for (const char* state : {"NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED"}) {
    const SlurmEnd e = ClassifySlurmEnd(ShapedAfterReal(state, "None", "0:0"), false);
    EXPECT_TRUE(e.infra_failure) << state;
    EXPECT_FALSE(e.succeeded) << state;
    EXPECT_THAT(e.reason, HasSubstr(state));
  }
  const SlurmEnd node = ClassifySlurmEnd(ShapedAfterReal("NODE_FAIL", "NodeDown", "0:0"), true);
  EXPECT_TRUE(node.infra_failure);  // even while the agent was cancelling it
  const SlurmEnd odd = ClassifySlurmEnd(ShapedAfterReal("SOMETHING_NEW", "None", "0:0"), false);
  EXPECT_TRUE(odd.infra_failure);
  EXPECT_THAT(odd.reason, HasSubstr("SOMETHING_NEW"));
}

// ---- IsTransientSlurmError -----------------------------------------------------------------

TEST(SlurmTransient, TheControllerOrMungeDownIsTransient) {
  for (const char* f :
       {"controller_down_squeue.err", "controller_down_scontrol.err", "controller_down_sbatch.err",
        "controller_down_scancel.err", "munge_down_squeue.err", "munge_down_sbatch.err"})
    EXPECT_TRUE(IsTransientSlurmError(Fixture(f))) << f;
  // Hand-written: a controller too busy to answer in time.
  EXPECT_TRUE(IsTransientSlurmError(
      "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"));
}

TEST(SlurmTransient, ARefusalIsNot) {
  for (const char* f :
       {"sbatch_unknown_partition.err", "sbatch_gres.err", "sbatch_mem.err", "sbatch_time.err",
        "scontrol_unknown.err", "squeue_unknown.err", "sacct_disabled.err"})
    EXPECT_FALSE(IsTransientSlurmError(Fixture(f))) << f;
  EXPECT_FALSE(IsTransientSlurmError(""));
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

SlurmJobInfo Seen(const std::string& state, const std::string& start, int restarts = 0) {
  SlurmJobInfo j;
  j.id = "9";
  j.state = state;
  j.start_time = start;
  j.restarts = restarts;
  return j;
}

TEST(SlurmExecution, ARequeueIsAnotherExecutionAndASuspensionIsNot) {
  const std::string t = "2026-12-05T07:00:00";
  EXPECT_FALSE(IsAnotherExecution(Seen("RUNNING", t), t));
  EXPECT_FALSE(IsAnotherExecution(Seen("COMPLETED", t), t));
  EXPECT_FALSE(IsAnotherExecution(Seen("SUSPENDED", t), t));
  EXPECT_TRUE(IsAnotherExecution(Seen("PENDING", ""), t));  // requeued, waiting again
  EXPECT_TRUE(IsAnotherExecution(Seen("RUNNING", t, 1), t));
  // Real Slurm 22.05 right after `scontrol requeue`: COMPLETING with a new StartTime.
  EXPECT_TRUE(IsAnotherExecution(Seen("COMPLETING", "2026-12-05T07:03:10"), t));
  EXPECT_FALSE(IsAnotherExecution(Seen("RUNNING", t), ""));  // nothing seen yet to compare
}

TEST(SlurmExecution, PinnedNodesThatCannotTakeTheJobAreRecognisedByItsReason) {
  EXPECT_TRUE(PinnedNodesRefused("ReqNodeNotAvail, UnavailableNodes:gpu07"));
  EXPECT_TRUE(PinnedNodesRefused("NodeDown"));
  EXPECT_FALSE(PinnedNodesRefused("Resources"));  // busy: waiting for them is the point
  EXPECT_FALSE(PinnedNodesRefused("Priority"));
}

TEST(SlurmExecution, TheAgentsOptionsAreCheckedOnTheirOwn) {
  EXPECT_TRUE(CheckSlurmOptions({}).ok());
  SlurmOptions bad;
  bad.extra = {"constraint=a100"};  // not an option
  EXPECT_FALSE(CheckSlurmOptions(bad).ok());
  SlurmOptions nl;
  nl.partition = "gpu\nx";
  EXPECT_FALSE(CheckSlurmOptions(nl).ok());
}

TEST(SlurmNodes, FirstNodeOfAHostlistKeepsItsPadding) {
  EXPECT_EQ(FirstNodeOf("gpu[07-09,12],cpu1"), "gpu07");
  EXPECT_EQ(FirstNodeOf("node1,node2"), "node1");
  EXPECT_EQ(FirstNodeOf("node1"), "node1");
  EXPECT_EQ(FirstNodeOf("a[3],b[1-2]"), "a3");
  EXPECT_EQ(FirstNodeOf("(null)"), "");
  EXPECT_EQ(FirstNodeOf(""), "");
}

}  // namespace
}  // namespace tunectl

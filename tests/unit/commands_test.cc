// The CLI's commands (cli/commands.cc's table) against a client that answers what the test says:
// exit codes for every kind of error, refusals before any call, and the local commands.
#include "cli/commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/tool_commands.h"
#include "cli/views.h"
#include "tests/unit/mock_client.h"

namespace tunectl {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Not;
using ::testing::Return;

TEST(Commands, EveryKindOfErrorHasItsExitCode) {
  const std::vector<std::pair<Status, int>> cases = {
      {Status::InvalidArgument("bad"), 2},   {Status::FailedPrecondition("state"), 2},
      {Status::AlreadyExists("dup"), 2},     {Status::NotFound("no experiment 7"), 3},
      {Status::Unavailable("down"), 4},      {Status::Unauthenticated("no token"), 5},
      {Status::PermissionDenied("role"), 5}, {Status::Internal("boom"), 1}};
  for (const auto& [status, code] : cases) {
    SCOPED_TRACE(status.message());
    NiceMock<MockClient> c;
    EXPECT_CALL(c, GetExperiment(7)).WillOnce(Return(Result<v1::Experiment>(status)));
    CliOptions o;
    o.id = 7;
    const Ran r = RunCommand(c, "experiment", "show", o);
    EXPECT_EQ(r.code, code);
    EXPECT_EQ(r.err, "error: " + status.message() + "\n");
    EXPECT_EQ(r.out, "");
  }
}

TEST(Commands, CtrlCDuringWaitSaysTheExperimentKeepsRunningAndHowToFollowIt) {
  // As from a terminal: SIGINT's default action (a background job of a script has it ignored).
  const auto before = std::signal(SIGINT, SIG_DFL);
  NiceMock<MockClient> c;
  v1::Experiment running;
  running.set_id(9);
  running.set_state("running");
  running.mutable_control_arm()->set_succeeded(1);
  running.mutable_variant_arm()->set_active(1);
  int calls = 0;
  EXPECT_CALL(c, GetExperiment(9)).WillRepeatedly([&](int64_t) {
    if (++calls == 2) std::raise(SIGINT);  // the user presses Ctrl-C while it waits
    return Result<v1::Experiment>(running);
  });
  CliOptions o;
  o.id = 9;
  o.wait = true;
  const Ran r = RunCommand(c, "experiment", "show", o);
  EXPECT_EQ(r.code, 130);
  EXPECT_THAT(r.err, HasSubstr("experiment 9: control 1 done; variant 1 running"));
  EXPECT_THAT(r.err, HasSubstr("experiment 9 keeps running on the server"));
  EXPECT_THAT(r.err, HasSubstr("tunectl experiment show 9 --wait"));
  EXPECT_THAT(r.err, HasSubstr("tunectl experiment cancel 9"));
  EXPECT_EQ(r.out, "");
  // the handler is put back: a later SIGINT is not swallowed by a wait that has ended
  EXPECT_EQ(std::signal(SIGINT, before), SIG_DFL);
}

TEST(Commands, ShowWaitsForARunningExperimentThenShowsTheVerdict) {
  NiceMock<MockClient> c;
  v1::Experiment running, decided;
  running.set_id(4);
  running.set_state("running");
  decided.set_id(4);
  decided.set_state("decided");
  decided.set_decision("improved");
  EXPECT_CALL(c, GetExperiment(4))
      .WillOnce(Return(Result<v1::Experiment>(running)))
      .WillOnce(Return(Result<v1::Experiment>(running)))
      .WillOnce(Return(Result<v1::Experiment>(decided)));
  CliOptions o;
  o.id = 4;
  o.wait = true;
  const Ran r = RunCommand(c, "experiment", "show", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("decided — improved"));
}

TEST(Commands, AnUnknownOutputFormatIsRefusedBeforeAnyCall) {
  NiceMock<MockClient> c;
  EXPECT_CALL(c, ListWorkloads(_)).Times(0);
  CliOptions o;
  o.output = "xml";
  const Ran r = RunCommand(c, "workload", "list", o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("xml"));
  EXPECT_THAT(r.err, HasSubstr("table"));
}

TEST(Commands, AListPassesItsPageAndFiltersToTheServer) {
  NiceMock<MockClient> c;
  v1::ListExperimentsRequest seen;
  EXPECT_CALL(c, ListExperiments(_)).WillOnce([&](const v1::ListExperimentsRequest& r) {
    seen = r;
    return Result<v1::ListExperimentsResponse>(v1::ListExperimentsResponse{});
  });
  CliOptions o;
  o.workload = "demo";
  o.limit = 7;
  o.limit_given = true;
  o.since = "2d";
  const Ran r = RunCommand(c, "experiment", "list", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(seen.workload(), "demo");
  EXPECT_EQ(seen.limit(), 7);
  EXPECT_EQ(seen.since(), "2d");
}

TEST(Commands, VersionPrintsTheClientsEvenWhenTheServerIsDown) {
  NiceMock<MockClient> up;
  v1::WhoAmIResponse w;
  w.set_version("9.9.9");
  EXPECT_CALL(up, WhoAmI()).WillOnce(Return(Result<v1::WhoAmIResponse>(w)));
  CliOptions o;
  o.server = "h:1";
  Ran r = RunCommand(up, "version", "", o);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, std::string("client: tunectl ") + ClientVersion() +
                       "\nserver: tunectl-server 9.9.9 (h:1)\n");

  NiceMock<MockClient> down;
  EXPECT_CALL(down, WhoAmI())
      .WillOnce(Return(Result<v1::WhoAmIResponse>(Status::Unavailable("cannot reach"))));
  r = RunCommand(down, "version", "", o);
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(r.out, std::string("client: tunectl ") + ClientVersion() + "\n");
  EXPECT_THAT(r.err, HasSubstr("cannot reach"));

  o.output = "json";
  NiceMock<MockClient> down2;
  EXPECT_CALL(down2, WhoAmI())
      .WillOnce(Return(Result<v1::WhoAmIResponse>(Status::Unavailable("cannot reach"))));
  r = RunCommand(down2, "version", "", o);
  EXPECT_THAT(r.out, HasSubstr("\"server\": null"));
}

// The contexts file of one test, named by TUNECTL_CONFIG for its duration.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    char dir[] = "/tmp/tunectl-cfg-XXXXXX";
    path_ = std::string(mkdtemp(dir)) + "/config";
    std::ofstream(path_) << text;
    setenv("TUNECTL_CONFIG", path_.c_str(), 1);
  }
  ~ConfigFile() {
    unsetenv("TUNECTL_CONFIG");
    std::remove(path_.c_str());
  }
  std::string Read() const {
    std::ifstream in(path_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string path_;
};

TEST(Commands, ContextUseSwitchesTheCurrentContextAndRefusesAnUnknownOne) {
  ConfigFile f(
      "current-context: a\ncontexts:\n- name: a\n  server: h1:1\n  token: tct_x\n- name: b\n"
      "  server: h2:2\n");
  NiceMock<MockClient> c;
  CliOptions o;
  o.name = "c";
  Ran r = RunCommand(c, "context", "use", o);
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("contexts: a b"));
  EXPECT_THAT(f.Read(), HasSubstr("current-context: a"));
  o.name = "b";
  r = RunCommand(c, "context", "use", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(f.Read(), HasSubstr("current-context: b"));
  o.output = "json";
  r = RunCommand(c, "context", "list", o);
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("\"current\": true"));
  EXPECT_THAT(r.out, HasSubstr("\"token\": true"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("tct_x")));  // never the secret
}

TEST(Commands, CompletionScriptsForBashAndZshOnly) {
  const std::vector<CompletionCommand> tree = {{"experiment", "show", {"--output"}, "id"},
                                               {"log", "", {"--workload", "--param"}, ""}};
  auto bash = RenderCompletion("bash", tree);
  ASSERT_TRUE(bash.ok());
  EXPECT_THAT(*bash, HasSubstr("complete -F _tunectl tunectl"));
  EXPECT_THAT(*bash, HasSubstr("compgen -W \"show\""));
  EXPECT_THAT(*bash, HasSubstr("\"\") words=\"--workload --param\""));
  auto zsh = RenderCompletion("zsh", tree);
  ASSERT_TRUE(zsh.ok());
  EXPECT_THAT(*zsh, HasSubstr("bashcompinit"));
  EXPECT_EQ(RenderCompletion("fish", tree).status().code(), Status::Code::kInvalidArgument);
}

TEST(Commands, CompleteListsWorkloadNamesAndIsSilentWhenTheServerIsNot) {
  NiceMock<MockClient> c;
  v1::ListWorkloadsResponse w;
  w.add_workloads()->set_name("demo");
  w.add_workloads()->set_name("gpt");
  EXPECT_CALL(c, ListWorkloads(_)).WillOnce(Return(Result<v1::ListWorkloadsResponse>(w)));
  CliOptions o;
  o.name = "workloads";
  Ran r = RunCommand(c, "__complete", "", o);
  EXPECT_EQ(r.out, "demo\ngpt\n");
  NiceMock<MockClient> down;
  EXPECT_CALL(down, ListWorkloads(_))
      .WillOnce(Return(Result<v1::ListWorkloadsResponse>(Status::Unavailable("x"))));
  r = RunCommand(down, "__complete", "", o);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out + r.err, "");
}

// --- issue 16: workload show|delete|archive|unarchive, agent remove, the new filters -----------

v1::WorkloadDetail Detail() {
  v1::WorkloadDetail d;
  d.mutable_workload()->set_name("demo");
  d.mutable_workload()->set_config_version(2);
  auto* p = d.add_params();
  p->set_name("num_workers");
  p->set_type("int");
  p->set_default_value("1");
  p->set_range("0..64");
  p->set_current("8");
  auto* m = d.add_metrics();
  m->set_name("samples_per_s");
  m->set_role("primary");
  m->set_better("higher");
  m->set_source("json samples_per_s");
  m->set_min_effect(0.03);
  d.set_run_policy("repeats 5, timeout 10m");
  d.set_baselines(2);
  d.set_experiments(1);
  d.set_runs(14);
  d.set_log_entries(1);
  return d;
}

TEST(Commands, WorkloadShowPrintsTheSpecConfigAndHistoryAsTableJsonAndCsv) {
  NiceMock<MockClient> c;
  EXPECT_CALL(c, GetWorkload("demo"))
      .Times(3)
      .WillRepeatedly(Return(Result<v1::WorkloadDetail>(Detail())));
  CliOptions o;
  o.workload = "demo";
  Ran r = RunCommand(c, "workload", "show", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("config: v2"));
  EXPECT_THAT(r.out, HasSubstr("run policy: repeats 5, timeout 10m"));
  EXPECT_THAT(r.out, HasSubstr("2 baseline(s), 1 experiment(s), 14 run(s), 1 log entry"));
  EXPECT_THAT(r.out, HasSubstr("num_workers  int   1        0..64  8 *"));
  EXPECT_THAT(r.out, HasSubstr("samples_per_s  primary"));
  o.output = "json";
  r = RunCommand(c, "workload", "show", o);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = ojson::parse(r.out);
  EXPECT_EQ(j["params"][0]["range"], "0..64");
  EXPECT_EQ(j["metrics"][0]["role"], "primary");
  EXPECT_EQ(j["history"]["runs"], 14);
  EXPECT_EQ(j["archived"], false);
  o.output = "csv";
  r = RunCommand(c, "workload", "show", o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("param,num_workers,int,1,0..64,8,"));
  EXPECT_THAT(r.out, HasSubstr("metric,samples_per_s,,,,,primary,higher,"));
}

TEST(Commands, WorkloadVerbsNeedANameAndMapTheServersAnswersToExitCodes) {
  NiceMock<MockClient> c;
  EXPECT_CALL(c, DeleteWorkload(_)).Times(0);
  Ran r = RunCommand(c, "workload", "delete");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("workload: missing"));

  CliOptions o;
  o.workload = "demo";
  EXPECT_CALL(c, DeleteWorkload("demo"))
      .WillOnce(Return(Result<v1::Workload>(Status::FailedPrecondition(
          "workload demo has history (1 baseline); … tunectl workload archive demo"))))
      .WillOnce(Return(Result<v1::Workload>(Status::NotFound("workload \"demo\" not found"))));
  r = RunCommand(c, "workload", "delete", o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("tunectl workload archive demo"));
  r = RunCommand(c, "workload", "delete", o);
  EXPECT_EQ(r.code, 3);

  v1::Workload archived;
  archived.set_name("demo");
  archived.set_archived(true);
  archived.set_archived_at("2026-01-02T03:04:05.000Z");
  EXPECT_CALL(c, ArchiveWorkload("demo")).WillOnce(Return(Result<v1::Workload>(archived)));
  r = RunCommand(c, "workload", "archive", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("workload demo archived"));
  EXPECT_THAT(r.out, HasSubstr("tunectl workload unarchive demo"));
  archived.set_archived(false);
  EXPECT_CALL(c, UnarchiveWorkload("demo")).WillOnce(Return(Result<v1::Workload>(archived)));
  r = RunCommand(c, "workload", "unarchive", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("workload demo unarchived"));
}

TEST(Commands, WorkloadListAllAsksForArchivedOnesAndShowsWhichAre) {
  NiceMock<MockClient> c;
  v1::ListWorkloadsResponse resp;
  resp.add_workloads()->set_name("demo");
  auto* old = resp.add_workloads();
  old->set_name("old");
  old->set_archived(true);
  old->set_archived_at("2026-01-02T03:04:05.000Z");
  v1::ListWorkloadsRequest seen;
  EXPECT_CALL(c, ListWorkloads(_)).WillOnce([&](const v1::ListWorkloadsRequest& r) {
    seen = r;
    return Result<v1::ListWorkloadsResponse>(resp);
  });
  CliOptions o;
  o.all = true;
  const Ran r = RunCommand(c, "workload", "list", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(seen.include_archived());
  EXPECT_THAT(r.out, HasSubstr("ARCHIVED"));
  EXPECT_THAT(r.out, HasSubstr("old   2026-01-02T03:04:05.000Z"));
}

TEST(Commands, AgentRemoveSaysWhatWasRequeuedAndRefusalsExit2) {
  NiceMock<MockClient> c;
  v1::RemoveAgentResponse resp;
  resp.mutable_agent()->set_name("node-1");
  resp.set_requeued(2);
  EXPECT_CALL(c, RemoveAgent("node-1"))
      .WillOnce(Return(Result<v1::RemoveAgentResponse>(resp)))
      .WillOnce(Return(Result<v1::RemoveAgentResponse>(
          Status::FailedPrecondition("agent node-1 is connected; stop it first"))))
      .WillOnce(Return(Result<v1::RemoveAgentResponse>(Status::NotFound("agent \"node-1\"…"))));
  CliOptions o;
  o.name = "node-1";
  Ran r = RunCommand(c, "agent", "remove", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("agent node-1 removed from agent list; 2 unfinished run(s)"));
  r = RunCommand(c, "agent", "remove", o);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: agent node-1 is connected; stop it first\n");
  r = RunCommand(c, "agent", "remove", o);
  EXPECT_EQ(r.code, 3);
}

TEST(Commands, RunListByExperimentAndExperimentListByStateReachTheServerBadOnesDoNot) {
  NiceMock<MockClient> c;
  v1::ListRunsRequest runs;
  EXPECT_CALL(c, ListRuns(_)).WillOnce([&](const v1::ListRunsRequest& r) {
    runs = r;
    return Result<v1::ListRunsResponse>(v1::ListRunsResponse{});
  });
  CliOptions o;
  o.experiment = 12;
  Ran r = RunCommand(c, "run", "list", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(runs.experiment_id(), 12);
  o.baseline = 3;
  r = RunCommand(c, "run", "list", o);  // both: refused before any call
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--baseline and --experiment: give one"));

  v1::ListExperimentsRequest seen;
  EXPECT_CALL(c, ListExperiments(_)).WillOnce([&](const v1::ListExperimentsRequest& req) {
    seen = req;
    return Result<v1::ListExperimentsResponse>(v1::ListExperimentsResponse{});
  });
  CliOptions e;
  e.state = "decided";
  e.workload = "demo";
  r = RunCommand(c, "experiment", "list", e);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(seen.state(), "decided");
  EXPECT_EQ(seen.workload(), "demo");
  e.state = "done";
  r = RunCommand(c, "experiment", "list", e);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("allowed: running, measured, decided, frozen, closed, cancelled"));
}

TEST(Commands, ConfigExportVersionExportsThatVersionAndAMissingOneExits3) {
  NiceMock<MockClient> c;
  v1::Config cfg;
  cfg.set_workload("demo");
  cfg.set_spec_json(
      R"j({"name":"demo","command":["t","{nw}"],"params":{"nw":{"type":"int",)j"
      R"j("default":1}},"metrics":{"sps":{"pattern":"sps: ([0-9]+)","better":"higher"}}})j");
  cfg.mutable_current()->set_version(2);
  (*cfg.mutable_current()->mutable_params())["nw"] = "8";
  cfg.mutable_selected()->set_version(1);
  (*cfg.mutable_selected()->mutable_params())["nw"] = "1";
  v1::GetConfigRequest seen;
  EXPECT_CALL(c, GetConfig(_))
      .WillOnce([&](const v1::GetConfigRequest& r) {
        seen = r;
        return Result<v1::Config>(cfg);
      })
      .WillOnce(
          Return(Result<v1::Config>(Status::NotFound("workload demo has no config version 9"))));
  CliOptions o;
  o.workload = "demo";
  o.version = 1;
  o.format = "env";
  Ran r = RunCommand(c, "config", "export", o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(seen.version(), 1);
  EXPECT_THAT(r.out, HasSubstr("NW="));
  EXPECT_THAT(r.out, HasSubstr("1"));
  EXPECT_THAT(r.out, Not(HasSubstr("8")));
  o.version = 9;
  r = RunCommand(c, "config", "export", o);
  EXPECT_EQ(r.code, 3);
}

}  // namespace
}  // namespace tunectl

namespace tunectl {
namespace {

using ::testing::Invoke;

v1::RunLogChunk Chunk(const std::string& data, int attempt = 1, const std::string& note = "") {
  v1::RunLogChunk c;
  c.set_data(data);
  c.set_attempt(attempt);
  c.set_agent("n1");
  c.set_note(note);
  return c;
}

TEST(RunLogsCommand, WritesTheBytesAsTheJobWroteThemAndNotesToStderr) {
  MockClient c;
  EXPECT_CALL(c, StreamRunLogs(_, _))
      .WillOnce(Invoke([](const v1::StreamRunLogsRequest& r,
                          const std::function<bool(const v1::RunLogChunk&)>& on) {
        EXPECT_EQ(r.run_id(), 7);
        EXPECT_TRUE(r.follow());
        EXPECT_EQ(r.tail_lines(), 20);
        on(Chunk("", 1, "run 7 is queued; waiting for it to start"));
        on(Chunk("step 1 loss 2.0\nstep 2 "));
        on(Chunk("loss 1.5\n"));
        return Status::Ok();
      }));
  CliOptions o;
  o.id = 7;
  o.follow = true;
  o.tail = 20;
  const Ran r = RunCommand(c, "run", "logs", o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "step 1 loss 2.0\nstep 2 loss 1.5\n");
  EXPECT_THAT(r.err, HasSubstr("run 7 is queued; waiting for it to start"));
}

TEST(RunLogsCommand, JsonIsOneTypedDocumentPerLineAcrossChunks) {
  MockClient c;
  EXPECT_CALL(c, StreamRunLogs(_, _))
      .WillOnce(Invoke([](const v1::StreamRunLogsRequest&,
                          const std::function<bool(const v1::RunLogChunk&)>& on) {
        on(Chunk("a\nb"));
        on(Chunk("c\n\xff\n"));
        on(Chunk("last without newline", 2));
        return Status::Ok();
      }));
  CliOptions o;
  o.id = 3;
  o.output = "json";
  const Ran r = RunCommand(c, "run", "logs", o);
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream in(r.out);
  std::vector<ojson> docs;
  for (std::string line; std::getline(in, line);) docs.push_back(ojson::parse(line));
  ASSERT_EQ(docs.size(), 4u) << r.out;
  EXPECT_EQ(docs[0]["kind"], "RunLogLine");
  EXPECT_EQ(docs[0]["run"], 3);
  EXPECT_EQ(docs[0]["line"], "a");
  EXPECT_EQ(docs[1]["line"], "bc");
  EXPECT_EQ(docs[2]["line"], "\xEF\xBF\xBD");  // not UTF-8: U+FFFD, and the JSON still parses
  EXPECT_EQ(docs[3]["line"], "last without newline");
  EXPECT_EQ(docs[3]["attempt"], 2);
}

TEST(RunLogsCommand, CsvIsRefusedBeforeAnyCall) {
  MockClient c;
  EXPECT_CALL(c, StreamRunLogs(_, _)).Times(0);
  CliOptions o;
  o.id = 3;
  o.output = "csv";
  const Ran r = RunCommand(c, "run", "logs", o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("allowed: table"));
}

TEST(RunLogsCommand, AnAgentThatIsGoneIsAnErrorWithItsExitCode) {
  MockClient c;
  EXPECT_CALL(c, StreamRunLogs(_, _))
      .WillOnce(Return(Status::Unavailable("run 3's output is on agent n1, which is not "
                                           "connected to this server")));
  CliOptions o;
  o.id = 3;
  const Ran r = RunCommand(c, "run", "logs", o);
  EXPECT_EQ(r.code, ExitCode(Status::Unavailable("")));
  EXPECT_THAT(r.err, HasSubstr("agent n1"));
}

}  // namespace
}  // namespace tunectl

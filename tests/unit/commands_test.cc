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
#include "tests/unit/mock_client.h"

namespace tunectl {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Return;

struct Ran {
  int code;
  std::string out, err;
};

Ran RunCommand(Client& c, const std::string& noun, const std::string& verb, CliOptions o = {}) {
  for (const auto& cmd : Commands()) {
    if (cmd.noun != noun || cmd.verb != verb) continue;
    std::ostringstream out, err;
    const int code = Execute(cmd, c, o, out, err);
    return {code, out.str(), err.str()};
  }
  ADD_FAILURE() << "no command " << noun << " " << verb;
  return {-1, "", ""};
}

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

}  // namespace
}  // namespace tunectl

#include "sys/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(PosixProcess, CapturesBothStreamsLineByLine) {
  auto l = NewPosixProcessLauncher();
  auto r =
      RunCommand(*l, {{"sh", "-c", "echo out1; echo err1 >&2; printf 'tail-no-newline'"}, {}, ""});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->status.ok());
  EXPECT_THAT(r->output, HasSubstr("out1\n"));
  EXPECT_THAT(r->output, HasSubstr("err1\n"));
  EXPECT_THAT(r->output, HasSubstr("tail-no-newline\n"));
}

TEST(PosixProcess, PassesEnvAndCwd) {
  auto l = NewPosixProcessLauncher();
  auto r = RunCommand(*l, {{"sh", "-c", "echo $TUNECTL_X; pwd"}, {{"TUNECTL_X", "hello"}}, "/tmp"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->output, "hello\n/tmp\n");
}

TEST(PosixProcess, ReportsExitCodeAndMissingProgram) {
  auto l = NewPosixProcessLauncher();
  auto r = RunCommand(*l, {{"sh", "-c", "exit 3"}, {}, ""});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status.exit_code, 3);
  auto missing = l->Start({{"/nonexistent/prog"}, {}, ""});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("cannot start /nonexistent/prog"));
}

TEST(PosixProcess, SignalReachesTheWholeProcessGroup) {
  auto l = NewPosixProcessLauncher();
  // The child starts a grandchild that would hold the pipe open for 60 s.
  auto p = l->Start({{"sh", "-c", "sleep 60 & echo started; wait"}, {}, ""});
  ASSERT_TRUE(p.ok());
  bool started = false;
  auto t0 = std::chrono::steady_clock::now();
  while (!started && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    (*p)->Poll(std::chrono::milliseconds(100),
               [&](Stream, std::string_view s) { started = s == "started"; });
  ASSERT_TRUE(started);
  (*p)->Signal(SIGTERM);
  while ((*p)->Poll(std::chrono::milliseconds(100), [](Stream, std::string_view) {})) {
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10))
        << "grandchild kept the pipe open";
  }
  EXPECT_EQ((*p)->Wait().signal, SIGTERM);
}

}  // namespace
}  // namespace tunectl

// The agent's side of `tunectl run logs`: reading a run's output.log by offset or tail, and the
// retention that removes old run directories, on real files.
#include "agent/run_dirs.h"

#include <gtest/gtest.h>
#include <utime.h>

#include <filesystem>
#include <fstream>

#include "core/run_logs.h"
#include "tests/unit/test_support.h"

namespace tunectl {
namespace {

std::string RunDir(const std::string& runs, const std::string& name, const std::string& output) {
  const std::string d = runs + "/" + name;
  std::filesystem::create_directories(d);
  std::ofstream(d + "/output.log", std::ios::binary) << output;
  return d;
}

v1::LogRequest Ask(int64_t run, int attempt, int64_t offset, int tail = 0, int max = 0) {
  v1::LogRequest r;
  r.set_request_id(9);
  r.set_run_id(run);
  r.set_attempt(attempt);
  r.set_offset(offset);
  r.set_tail_lines(tail);
  r.set_max_bytes(max);
  return r;
}

void SetMtime(const std::string& path, int64_t t) {
  struct utimbuf u {
    static_cast<time_t>(t), static_cast<time_t>(t)
  };
  ASSERT_EQ(utime(path.c_str(), &u), 0) << path;
}

TEST(ReadRunLog, ReadsFromAnOffsetUpToTheLimit) {
  const std::string runs = testing::TempDir("run_dirs");
  RunDir(runs, "5-2", "0123456789");
  auto c = ReadRunLog(runs, Ask(5, 2, 3, 0, 4), false);
  EXPECT_EQ(c.error(), "");
  EXPECT_EQ(c.request_id(), 9);
  EXPECT_EQ(c.offset(), 3);
  EXPECT_EQ(c.data(), "3456");
  EXPECT_EQ(c.size(), 10);
  EXPECT_EQ(c.next_offset(), 7);
  auto end = ReadRunLog(runs, Ask(5, 2, 10), false);
  EXPECT_EQ(end.data(), "");
  EXPECT_EQ(end.offset(), 10);
}

TEST(ReadRunLog, TailStartsAtTheLastLines) {
  const std::string runs = testing::TempDir("run_dirs");
  std::string big;
  for (int i = 1; i <= 20000; ++i) big += "line " + std::to_string(i) + "\n";  // > 64 KiB
  RunDir(runs, "1-1", big);
  auto c = ReadRunLog(runs, Ask(1, 1, -1, 3), false);
  EXPECT_EQ(c.data(), "line 19998\nline 19999\nline 20000\n");
  auto far =
      ReadRunLog(runs, Ask(1, 1, -1, 15000, kMaxLogChunkBytes), false);  // past the first block
  EXPECT_EQ(far.data().substr(0, 10), "line 5001\n");
}

TEST(ReadRunLog, TakesTheStreamMarksOffWholeLinesAndWaitsForAPartialOne) {
  const std::string runs = testing::TempDir("run_dirs");
  RunDir(runs, "2-1", "O step 1\nE warn: slow\nO step 2\nO half");
  auto c = ReadRunLog(runs, Ask(2, 1, 0), true);
  EXPECT_EQ(c.data(), "step 1\nwarn: slow\nstep 2\n");
  EXPECT_EQ(c.next_offset(), 31);  // "O half" is not ended yet: read again from there
  auto rest = ReadRunLog(runs, Ask(2, 1, 31), true);
  EXPECT_EQ(rest.data(), "");
  EXPECT_EQ(rest.next_offset(), 31);
  auto tail = ReadRunLog(runs, Ask(2, 1, -1, 2), true);  // "O half" counts as a line
  EXPECT_EQ(tail.data(), "step 2\n");
}

TEST(ReadRunLog, SaysWhyThereIsNothing) {
  const std::string runs = testing::TempDir("run_dirs");
  EXPECT_NE(ReadRunLog(runs, Ask(8, 1, 0), true).error().find("--keep-runs-for"),
            std::string::npos);
  std::filesystem::create_directories(runs + "/8-1");
  EXPECT_NE(ReadRunLog(runs, Ask(8, 1, 0), true).error().find("no output yet"), std::string::npos);
}

TEST(PruneRunDirs, RemovesOldFinishedRunsAndKeepsHeldAndRecentOnes) {
  const std::string runs = testing::TempDir("run_dirs");
  const int64_t now = 2'000'000'000, day = 86400;
  for (const auto& [name, age] : std::vector<std::pair<std::string, int64_t>>{
           {"1-1", 10 * day}, {"2-1", 10 * day}, {"3-1", 1 * day}}) {
    const std::string d = RunDir(runs, name, "x\n");
    SetMtime(d + "/output.log", now - age);
    SetMtime(d, now - age);
  }
  std::filesystem::create_directories(runs + "/.spool");
  SetMtime(runs + "/.spool", now - 99 * day);
  const auto removed = PruneRunDirs(runs, /*held_runs=*/{2}, now, 7 * day);
  EXPECT_EQ(removed, (std::vector<std::string>{"1-1"}));
  EXPECT_FALSE(std::filesystem::exists(runs + "/1-1"));
  EXPECT_TRUE(std::filesystem::exists(runs + "/2-1"));  // held: a job still running
  EXPECT_TRUE(std::filesystem::exists(runs + "/3-1"));
  EXPECT_TRUE(std::filesystem::exists(runs + "/.spool"));
}

}  // namespace
}  // namespace tunectl

#include "core/run_logs.h"

#include <gtest/gtest.h>

namespace tunectl {
namespace {

TEST(TailStart, FindsTheLastLinesOfAWholeFile) {
  const std::string f = "one\ntwo\nthree\n";
  EXPECT_EQ(TailStart(f, 0, 1), 8);  // "three\n"
  EXPECT_EQ(TailStart(f, 0, 2), 4);  // "two\nthree\n"
  EXPECT_EQ(TailStart(f, 0, 3), 0);
  EXPECT_EQ(TailStart(f, 0, 10), 0);  // fewer lines than asked: all of them
}

TEST(TailStart, CountsALastLineWithoutItsNewline) {
  const std::string f = "one\ntwo\npartial";
  EXPECT_EQ(TailStart(f, 0, 1), 8);
  EXPECT_EQ(TailStart(f, 0, 2), 4);
}

TEST(TailStart, OffsetsAreInTheFileNotTheTail) {
  // The tail of a longer file, read from byte 100: "x\ny\nz\n".
  EXPECT_EQ(TailStart("x\ny\nz\n", 100, 2), 102);
}

TEST(TailStart, AsksToReadFurtherBackWhenTheTailIsShort) {
  EXPECT_FALSE(TailStart("tail of a long line\nz\n", 100, 3).has_value());
  EXPECT_FALSE(TailStart("no newline at all", 5, 1).has_value());
}

TEST(TailStart, ZeroLinesStartsAtTheEnd) {
  EXPECT_EQ(TailStart("a\nb\n", 10, 0), 14);
}

TEST(TakeMarkedLines, TakesMarksOffEachLineStart) {
  auto t = TakeMarkedLines("O a\nE b\nO \nO c\n", true, 1024);
  EXPECT_EQ(t.text, "a\nb\n\nc\n");
  EXPECT_EQ(t.consumed, 15);
}

TEST(TakeMarkedLines, LeavesAPartialLastLineForLater) {
  auto t = TakeMarkedLines("O a\nO b", true, 1024);
  EXPECT_EQ(t.text, "a\n");
  EXPECT_EQ(t.consumed, 4);
  EXPECT_EQ(TakeMarkedLines("O partial", true, 1024).consumed, 0);
}

TEST(TakeMarkedLines, ALineLongerThanAChunkGoesInPiecesMarkedOnlyAtItsStart) {
  auto first = TakeMarkedLines("O 0123456789", true, 12);
  EXPECT_EQ(first.text, "0123456789");
  EXPECT_EQ(first.consumed, 12);
  auto next = TakeMarkedLines("O still the same line\nE x\n", false, 1024);
  EXPECT_EQ(next.text, "O still the same line\nx\n");  // mid-line: "O " is the job's text
}

TEST(NextLogStep, ReadsOnWhileBytesRemain) {
  const LogCursor c{1, 0, false};
  EXPECT_EQ(NextLogStep(false, c, RunState::kSucceeded, RunState::kSucceeded, false),
            LogNext::kReadMore);
  EXPECT_EQ(NextLogStep(true, c, RunState::kRunning, RunState::kRunning, false),
            LogNext::kReadMore);
}

TEST(NextLogStep, WaitsOnlyWhenFollowingAnActiveRun) {
  const LogCursor c{1, 0, false};
  EXPECT_EQ(NextLogStep(true, c, RunState::kRunning, RunState::kRunning, true), LogNext::kWait);
  EXPECT_EQ(NextLogStep(true, c, RunState::kAssigned, RunState::kAssigned, true), LogNext::kWait);
  EXPECT_EQ(NextLogStep(false, c, RunState::kRunning, RunState::kRunning, true), LogNext::kDone);
  EXPECT_EQ(NextLogStep(true, c, RunState::kFailed, RunState::kFailed, true), LogNext::kDone);
  EXPECT_EQ(NextLogStep(true, c, RunState::kSucceeded, RunState::kSucceeded, true), LogNext::kDone);
}

TEST(NextLogStep, WaitsForTheRetryOnlyWhenNotPinned) {
  // Attempt 1 is over (failed) and the run was requeued as attempt 2.
  const LogCursor followed{1, 120, false}, pinned{1, 120, true};
  EXPECT_EQ(NextLogStep(true, followed, RunState::kFailed, RunState::kQueued, true),
            LogNext::kWait);
  EXPECT_EQ(NextLogStep(true, pinned, RunState::kFailed, RunState::kQueued, true), LogNext::kDone);
  EXPECT_EQ(NextLogStep(false, followed, RunState::kFailed, RunState::kQueued, true),
            LogNext::kDone);
}

TEST(ResolveAttempt, ZeroIsTheCurrentAndOthersMustExist) {
  EXPECT_EQ(*ResolveAttempt(7, 0, 3), 3);
  EXPECT_EQ(*ResolveAttempt(7, 2, 3), 2);
  EXPECT_EQ(*ResolveAttempt(7, 0, 0), 1);  // never started: attempt 1
  const auto bad = ResolveAttempt(7, 4, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "attempt: 4 is not an attempt of run 7; allowed: 1..3");
  EXPECT_FALSE(ResolveAttempt(7, -1, 3).ok());
}

TEST(FollowRetry, MovesAnUnpinnedReaderToTheNewAttemptFromItsStart) {
  LogCursor c{1, 4096, false};
  EXPECT_FALSE(FollowRetry(&c, 1));
  EXPECT_TRUE(FollowRetry(&c, 2));
  EXPECT_EQ(c.attempt, 2);
  EXPECT_EQ(c.offset, 0);
  EXPECT_EQ(AttemptState(c, 2, RunState::kRunning), RunState::kRunning);
}

TEST(FollowRetry, KeepsAPinnedAttemptWhichIsThenOver) {
  LogCursor c{1, 4096, true};
  EXPECT_FALSE(FollowRetry(&c, 3));
  EXPECT_EQ(c.attempt, 1);
  EXPECT_EQ(c.offset, 4096);
  EXPECT_EQ(AttemptState(c, 3, RunState::kRunning), RunState::kFailed);
}

TEST(FollowRetry, AQueuedRunsFirstAttemptKeepsTheTailStart) {
  LogCursor c{0, -1, false};  // run logs -f --tail 5 on a queued run
  EXPECT_FALSE(FollowRetry(&c, 0));
  EXPECT_TRUE(FollowRetry(&c, 1));
  EXPECT_EQ(c.attempt, 1);
  EXPECT_EQ(c.offset, -1);
}

TEST(FollowRetry, AnAttemptNotReadYetIsNotLeft) {
  LogCursor c{1, -1, false};  // the tail of attempt 1 was never fetched
  EXPECT_FALSE(FollowRetry(&c, 2));
  EXPECT_EQ(c.attempt, 1);
}

TEST(TakeLines, KeepsAPartialLineForTheNextChunk) {
  std::string carry;
  EXPECT_EQ(TakeLines(&carry, "a\nb"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(carry, "b");
  EXPECT_EQ(TakeLines(&carry, "c\n\nd\n"), (std::vector<std::string>{"bc", "", "d"}));
  EXPECT_EQ(carry, "");
  EXPECT_TRUE(TakeLines(&carry, "no newline").empty());
  EXPECT_EQ(carry, "no newline");
}

TEST(ParseRunDirName, AcceptsRunDashAttemptOnly) {
  EXPECT_EQ(ParseRunDirName("12-3"), std::make_pair(int64_t{12}, 3));
  EXPECT_FALSE(ParseRunDirName("12").has_value());
  EXPECT_FALSE(ParseRunDirName("-3").has_value());
  EXPECT_FALSE(ParseRunDirName("12-").has_value());
  EXPECT_FALSE(ParseRunDirName("12-3x").has_value());
  EXPECT_FALSE(ParseRunDirName(".health-77").has_value());
  EXPECT_FALSE(ParseRunDirName("0-1").has_value());
  EXPECT_FALSE(ParseRunDirName("4-0").has_value());
}

TEST(RunDirsToPrune, RemovesOnlyOldDirectoriesOfRunsNoLongerHeld) {
  const int64_t now = 1'000'000, day = 86400;
  std::vector<RunDirEntry> dirs = {{"1-1", now - 9 * day},    {"2-1", now - 8 * day},
                                   {"3-1", now - 1 * day},    {"4-2", now - 30 * day},
                                   {"spool", now - 99 * day}, {"5-1", now - 7 * day}};
  // Run 4 is held (a job an earlier agent left running): never removed, however old.
  auto out = RunDirsToPrune(dirs, {4}, now, 7 * day);
  EXPECT_EQ(out, (std::vector<std::string>{"1-1", "2-1"}));
}

TEST(RunDirsToPrune, ZeroKeepsEverything) {
  EXPECT_TRUE(RunDirsToPrune({{"1-1", 0}}, {}, 1'000'000, 0).empty());
}

}  // namespace
}  // namespace tunectl

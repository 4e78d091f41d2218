// The decisions behind `tunectl run logs`, as pure functions: where the last N lines of a run's
// output start, what a follow does after each read, and which run directories an agent's
// retention setting removes. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/states.h"
#include "core/status.h"

namespace tunectl {

// The most bytes one LogChunk carries (the agent caps what it is asked for to this).
inline constexpr int32_t kMaxLogChunkBytes = 256 << 10;
// --tail: the most lines asked for, and the most bytes read back from a file's end to find them.
inline constexpr int kMaxTailLines = 100000;
inline constexpr int64_t kMaxTailBytes = 16 << 20;

// Where the last `lines` lines of a file start, given `tail`: the file's bytes from `tail_start`
// to its end. A last line without its '\n' counts as a line. nullopt: `tail` holds fewer than
// `lines` lines and there is more before it (tail_start > 0): read further back.
std::optional<int64_t> TailStart(std::string_view tail, int64_t tail_start, int lines);

// What of `raw` (bytes of an output file from an offset; `at_line_start` whether a line starts
// there) a reader takes when the file marks each line with its stream ("O " stdout, "E " stderr,
// "K " kubectl's own words, as the local and Kubernetes executors write output.log): whole lines
// only — a partial last line waits for its end, unless `raw` is one line longer than `full` bytes
// —, the marks taken off. `consumed` is how many bytes of `raw` that covers.
struct MarkedText {
  std::string text;
  int64_t consumed = 0;
};
MarkedText TakeMarkedLines(std::string_view raw, bool at_line_start, size_t full);

// The attempt a request for run `run_id` asks for: 0 = the current one, else 1..current (a run
// never started counts as having attempt 1). InvalidArgument naming the field and the range.
Result<int> ResolveAttempt(int64_t run_id, int requested, int current);

// Which attempt of a run a log reader reads, and from where. A pinned attempt (--attempt) stays;
// otherwise the reader starts at the run's current attempt and moves to a retry's new attempt
// once it has read the one it followed.
struct LogCursor {
  int attempt = 0;     // 0: the run has not been assigned yet
  int64_t offset = 0;  // -1: not read yet, start at the tail
  bool pinned = false;
};
// The run's rows as loaded before a read: an unpinned cursor of a run that was queued takes its
// first attempt (keeping a tail start); on a retry, one that has read its attempt moves to the new
// one from offset 0. True when it moved.
bool FollowRetry(LogCursor* cursor, int run_attempt);
// The state of the cursor's attempt: the run's state, or over (failed) for an earlier attempt.
RunState AttemptState(const LogCursor& cursor, int run_attempt, RunState run_state);

// After one read of an attempt's output: read on at once (more is there), wait and read again (it
// is still active and may print more, or, followed unpinned, the run was retried and the next
// attempt is to be read), or stop. States are the ones loaded before the read, so a run that ended
// just after it gets one more read: nothing it printed is missed.
enum class LogNext { kReadMore, kWait, kDone };
LogNext NextLogStep(bool follow, const LogCursor& cursor, RunState attempt_state,
                    RunState run_state, bool at_eof);

// The complete lines in `*carry` + `data` (without their '\n'); what follows the last newline
// stays in `*carry` for the next call. Flush the rest at the end with `*carry` itself.
std::vector<std::string> TakeLines(std::string* carry, std::string_view data);

// "<run>-<attempt>", the name of a run directory; nullopt for anything else.
std::optional<std::pair<int64_t, int>> ParseRunDirName(std::string_view name);

struct RunDirEntry {
  std::string name;     // "<run>-<attempt>"
  int64_t mtime_s = 0;  // the newest of the directory's and its output.log's modification times
};
// The directories to remove: those older than `keep_s` whose run this agent no longer holds
// (`held_runs`), oldest first. keep_s <= 0 keeps everything; names that are not run directories
// are never chosen.
std::vector<std::string> RunDirsToPrune(const std::vector<RunDirEntry>& dirs,
                                        const std::set<int64_t>& held_runs, int64_t now_s,
                                        int64_t keep_s);

}  // namespace tunectl

#include "core/run_logs.h"

#include <algorithm>
#include <charconv>

namespace tunectl {

std::optional<int64_t> TailStart(std::string_view tail, int64_t tail_start, int lines) {
  if (lines <= 0) return tail_start + static_cast<int64_t>(tail.size());
  size_t end = tail.size();
  if (end > 0 && tail[end - 1] == '\n') --end;  // the last line's own newline ends no line
  int seen = 0;
  while (end > 0) {
    const size_t nl = tail.rfind('\n', end - 1);
    if (nl == std::string_view::npos) break;
    if (++seen == lines) return tail_start + static_cast<int64_t>(nl) + 1;
    end = nl;
  }
  // Fewer newlines than lines: the whole tail is the answer only if it starts the file.
  if (tail_start == 0) return 0;
  return std::nullopt;
}

MarkedText TakeMarkedLines(std::string_view raw, bool at_line_start, size_t full) {
  MarkedText out;
  const size_t last_nl = raw.rfind('\n');
  size_t take = 0;
  if (last_nl != std::string_view::npos)
    take = last_nl + 1;
  else if (raw.size() >= full)
    take = raw.size();  // one line longer than a chunk: it goes in pieces
  out.consumed = static_cast<int64_t>(take);
  out.text.reserve(take);
  bool line_start = at_line_start;
  for (size_t i = 0; i < take;) {
    if (line_start && i + 1 < take && (raw[i] == 'O' || raw[i] == 'E' || raw[i] == 'K') &&
        raw[i + 1] == ' ') {
      i += 2;
      line_start = false;
      continue;
    }
    const size_t nl = raw.find('\n', i);
    const size_t end = nl == std::string_view::npos || nl >= take ? take : nl + 1;
    out.text.append(raw.substr(i, end - i));
    line_start = end > i && raw[end - 1] == '\n';
    i = end;
  }
  return out;
}

Result<int> ResolveAttempt(int64_t run_id, int requested, int current) {
  current = std::max(current, 1);
  if (requested < 0 || requested > current)
    return Status::InvalidArgument("attempt: " + std::to_string(requested) +
                                   " is not an attempt of run " + std::to_string(run_id) +
                                   "; allowed: 1.." + std::to_string(current));
  return requested == 0 ? current : requested;
}

bool FollowRetry(LogCursor* cursor, int run_attempt) {
  if (cursor->pinned || run_attempt <= cursor->attempt) return false;
  if (cursor->attempt == 0) {  // the run was queued: its first attempt, from where it was asked
    cursor->attempt = run_attempt;
    return true;
  }
  if (cursor->offset < 0) return false;  // the followed attempt has not been read yet
  cursor->attempt = run_attempt;
  cursor->offset = 0;
  return true;
}

RunState AttemptState(const LogCursor& cursor, int run_attempt, RunState run_state) {
  return run_attempt > cursor.attempt ? RunState::kFailed : run_state;
}

LogNext NextLogStep(bool follow, const LogCursor& cursor, RunState attempt_state,
                    RunState run_state, bool at_eof) {
  if (!at_eof) return LogNext::kReadMore;
  if (follow && IsActive(attempt_state)) return LogNext::kWait;
  if (follow && !cursor.pinned && IsActive(run_state)) return LogNext::kWait;  // retried
  return LogNext::kDone;
}

std::vector<std::string> TakeLines(std::string* carry, std::string_view data) {
  std::vector<std::string> out;
  carry->append(data);
  size_t start = 0;
  for (size_t nl; (nl = carry->find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(carry->substr(start, nl - start));
  carry->erase(0, start);
  return out;
}

std::optional<std::pair<int64_t, int>> ParseRunDirName(std::string_view name) {
  const size_t dash = name.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash + 1 >= name.size()) return std::nullopt;
  int64_t run = 0;
  int attempt = 0;
  const char* b = name.data();
  auto r1 = std::from_chars(b, b + dash, run);
  if (r1.ec != std::errc() || r1.ptr != b + dash || run <= 0) return std::nullopt;
  auto r2 = std::from_chars(b + dash + 1, b + name.size(), attempt);
  if (r2.ec != std::errc() || r2.ptr != b + name.size() || attempt <= 0) return std::nullopt;
  return std::make_pair(run, attempt);
}

std::vector<std::string> RunDirsToPrune(const std::vector<RunDirEntry>& dirs,
                                        const std::set<int64_t>& held_runs, int64_t now_s,
                                        int64_t keep_s) {
  std::vector<const RunDirEntry*> old;
  if (keep_s <= 0) return {};
  for (const auto& d : dirs) {
    const auto id = ParseRunDirName(d.name);
    if (!id || held_runs.count(id->first)) continue;
    if (now_s - d.mtime_s > keep_s) old.push_back(&d);
  }
  std::sort(old.begin(), old.end(),
            [](const RunDirEntry* a, const RunDirEntry* b) { return a->mtime_s < b->mtime_s; });
  std::vector<std::string> out;
  for (const auto* d : old) out.push_back(d->name);
  return out;
}

}  // namespace tunectl

#include "agent/run_dirs.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/run_logs.h"

namespace tunectl {
namespace fs = std::filesystem;

namespace {

// Bytes [offset, offset + n) of an open file (fewer at its end).
std::string ReadAt(std::ifstream& f, int64_t offset, int64_t n) {
  std::string out(static_cast<size_t>(std::max<int64_t>(0, n)), '\0');
  f.clear();
  f.seekg(offset);
  f.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(std::max<std::streamsize>(0, f.gcount())));
  return out;
}

int64_t MtimeS(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_mtime) : 0;
}

}  // namespace

v1::LogChunk ReadRunLog(const std::string& runs_dir, const v1::LogRequest& req, bool marked) {
  v1::LogChunk c;
  c.set_request_id(req.request_id());
  c.set_run_id(req.run_id());
  c.set_attempt(req.attempt());
  const std::string dir =
      runs_dir + "/" + std::to_string(req.run_id()) + "-" + std::to_string(req.attempt());
  const std::string path = dir + "/output.log";
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    c.set_error("no run directory " + dir +
                " on this agent (never run here, or removed after "
                "the agent's --keep-runs-for)");
    return c;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    c.set_error("no output yet: " + path + " does not exist");
    return c;
  }
  f.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(f.tellg());
  c.set_size(size);
  int64_t offset = req.offset();
  if (offset < 0) {  // from where the last tail_lines lines start
    const int lines = std::clamp(req.tail_lines(), 0, kMaxTailLines);
    offset = 0;
    for (int64_t back = 64 << 10;; back *= 4) {
      const int64_t start = std::max<int64_t>(0, size - std::min(back, kMaxTailBytes));
      if (auto at = TailStart(ReadAt(f, start, size - start), start, lines)) {
        offset = *at;
        break;
      }
      if (start == 0 || back >= kMaxTailBytes) {
        offset = start;  // as far back as the cap allows
        break;
      }
    }
  }
  offset = std::min(offset, size);
  const int32_t want =
      req.max_bytes() > 0 ? std::min(req.max_bytes(), kMaxLogChunkBytes) : kMaxLogChunkBytes;
  c.set_offset(offset);
  std::string raw = ReadAt(f, offset, std::min<int64_t>(want, size - offset));
  if (!marked) {
    c.set_next_offset(offset + static_cast<int64_t>(raw.size()));
    c.set_data(std::move(raw));
    return c;
  }
  const bool at_line_start = offset == 0 || ReadAt(f, offset - 1, 1) == "\n";
  MarkedText t = TakeMarkedLines(raw, at_line_start, static_cast<size_t>(want));
  c.set_next_offset(offset + t.consumed);
  c.set_data(std::move(t.text));
  return c;
}

std::vector<std::string> PruneRunDirs(const std::string& runs_dir,
                                      const std::set<int64_t>& held_runs, int64_t now_s,
                                      int64_t keep_s) {
  if (keep_s <= 0 || runs_dir.empty()) return {};
  std::vector<RunDirEntry> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(runs_dir, ec)) {
    if (!e.is_directory(ec)) continue;
    const std::string name = e.path().filename().string();
    if (!ParseRunDirName(name)) continue;
    const std::string p = e.path().string();
    dirs.push_back({name, std::max(MtimeS(p), MtimeS(p + "/output.log"))});
  }
  std::vector<std::string> removed;
  for (const auto& name : RunDirsToPrune(dirs, held_runs, now_s, keep_s)) {
    std::error_code rm;
    fs::remove_all(runs_dir + "/" + name, rm);
    if (!rm) removed.push_back(name);
  }
  return removed;
}

}  // namespace tunectl

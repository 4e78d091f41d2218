// What an agent keeps of its runs after they end: each run directory (generated files,
// output.log) stays for `tunectl run logs` until it is older than the retention setting, then
// it is removed. File effects only; the decisions are core/run_logs.h's. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

// Answers a LogRequest from `<runs_dir>/<run>-<attempt>/output.log`: the bytes asked for (at most
// core's kMaxLogChunkBytes), or `error` saying why there are none (never run here, pruned).
// `marked`: each line of the file starts with its stream's mark ("O "/"E ": the local and
// Kubernetes executors), which the answer takes off, so the user sees what the job printed.
v1::LogChunk ReadRunLog(const std::string& runs_dir, const v1::LogRequest& req, bool marked);

// Removes the run directories under `runs_dir` that core's RunDirsToPrune picks; returns the
// names removed. A directory that cannot be removed is left and tried again next time.
std::vector<std::string> PruneRunDirs(const std::string& runs_dir,
                                      const std::set<int64_t>& held_runs, int64_t now_s,
                                      int64_t keep_s);

}  // namespace tunectl

// The lifecycles of runs, baselines and experiments, decisions and tuning-log kinds as typed enums,
// with the one text form each has in the database, the wire and the CLI. Pure; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tunectl {

// queued → assigned → running → succeeded | failed | cancelled | lost
enum class RunState { kQueued, kAssigned, kRunning, kSucceeded, kFailed, kCancelled, kLost };
enum class BaselineState { kRunning, kCompleted, kFailed, kCancelled };
// running → (measured: a batch member waiting for its batch's correction) → decided → frozen
enum class ExperimentState { kRunning, kMeasured, kDecided, kFrozen, kClosed, kCancelled };
enum class Decision { kImproved, kRegressed, kUnchanged, kInconclusive };
enum class LogKind { kDecided, kFrozen, kCorrection, kRegression, kResolved };

const char* Name(RunState s);
const char* Name(BaselineState s);
const char* Name(ExperimentState s);
const char* Name(Decision d);
const char* Name(LogKind k);

std::optional<RunState> ParseRunState(std::string_view s);
std::optional<BaselineState> ParseBaselineState(std::string_view s);
std::optional<ExperimentState> ParseExperimentState(std::string_view s);
std::optional<Decision> ParseDecision(std::string_view s);

// A run that still holds (or waits for) a slot.
inline constexpr RunState kActiveRunStates[] = {RunState::kQueued, RunState::kAssigned,
                                                RunState::kRunning};
// A run an agent holds: assigned or running.
inline constexpr RunState kHeldRunStates[] = {RunState::kAssigned, RunState::kRunning};
// A run that ended with no usable result and counts against its arm (crash, OOM, lost node).
inline constexpr RunState kFailedRunStates[] = {RunState::kFailed, RunState::kLost};
bool IsActive(RunState s);
bool IsTerminal(RunState s);

// "('queued','assigned','running')": the SQL list the store builds its queries from.
std::string SqlList(std::span<const RunState> states);

}  // namespace tunectl

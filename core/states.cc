#include "core/states.h"

#include <algorithm>

namespace tunectl {
namespace {

template <typename E, size_t N>
std::optional<E> ParseName(std::string_view s, const char* const (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

const char* const kRunNames[] = {"queued", "assigned",  "running", "succeeded",
                                 "failed", "cancelled", "lost"};
const char* const kBaselineNames[] = {"running", "completed", "failed", "cancelled"};
const char* const kExperimentNames[] = {"running", "measured", "decided",
                                        "frozen",  "closed",   "cancelled"};
const char* const kDecisionNames[] = {"improved", "regressed", "unchanged", "inconclusive"};
const char* const kLogNames[] = {"decided", "frozen", "correction", "regression", "resolved"};

}  // namespace

const char* Name(RunState s) {
  return kRunNames[static_cast<int>(s)];
}
const char* Name(BaselineState s) {
  return kBaselineNames[static_cast<int>(s)];
}
const char* Name(ExperimentState s) {
  return kExperimentNames[static_cast<int>(s)];
}
const char* Name(Decision d) {
  return kDecisionNames[static_cast<int>(d)];
}
const char* Name(LogKind k) {
  return kLogNames[static_cast<int>(k)];
}

std::optional<RunState> ParseRunState(std::string_view s) {
  return ParseName<RunState>(s, kRunNames);
}
std::optional<BaselineState> ParseBaselineState(std::string_view s) {
  return ParseName<BaselineState>(s, kBaselineNames);
}
std::optional<ExperimentState> ParseExperimentState(std::string_view s) {
  return ParseName<ExperimentState>(s, kExperimentNames);
}
std::optional<Decision> ParseDecision(std::string_view s) {
  return ParseName<Decision>(s, kDecisionNames);
}

bool IsActive(RunState s) {
  return std::find(std::begin(kActiveRunStates), std::end(kActiveRunStates), s) !=
         std::end(kActiveRunStates);
}
bool IsTerminal(RunState s) {
  return !IsActive(s);
}

std::string SqlList(std::span<const RunState> states) {
  std::string out = "(";
  for (RunState s : states) out += (out.size() > 1 ? ",'" : "'") + std::string(Name(s)) + "'";
  return out + ")";
}

}  // namespace tunectl

// Dispatch planning: which queued run goes to which agent, for every agent with free slots at
// once. Pure; the store loads the candidates (locked), calls PlanClaims, and writes the claims in
// one statement. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/selector.h"

namespace tunectl {

// An agent that may take runs now: connected through a live session, not busy, not unhealthy.
struct ClaimSlot {
  int64_t agent_id = 0;
  LabelMap labels;
  int free = 0;  // slots minus the runs it holds
  // Its slots do not disturb each other; otherwise it runs one run of an experiment at a time,
  // so a control and a variant never share the node at once.
  bool isolated = false;
  std::set<int64_t> experiments;  // experiments it holds a run of now
};

// A queued run that could be claimed (its schedule's window, if any, is open long enough).
struct ClaimCandidate {
  int64_t run_id = 0;
  LabelMap selector;
  int64_t experiment_id = 0;  // 0 = not an experiment's run
  int64_t pinned_agent = 0;   // its experiment is kept on this connected agent (0 = none)
  int64_t schedule_id = 0;    // 0 = no schedule
};

// A schedule with `--max-agents`: at most `max_agents` distinct agents run its runs at once.
struct ScheduleCap {
  int max_agents = 0;
  std::set<int64_t> agents;  // agents holding a run of the schedule now
};

struct ClaimPick {
  int64_t run_id = 0;
  int64_t agent_id = 0;
  bool operator==(const ClaimPick&) const = default;
};

// Runs in `candidates` order (oldest first) go to an agent whose labels contain the run's
// selector and that has a free slot, the agent with the most free slots first (ties: the lowest
// id), so a burst spreads over the nodes. A run pinned to an agent goes only there; the first run
// of an unpinned experiment pins the experiment's other runs in this plan to the same agent
// (control and variant on one node). An agent whose slots are not isolated never gets a run of
// an experiment it already holds a run of (in `experiments` or earlier in this plan): the pair
// runs one after the other. A capped schedule never gets more distinct agents than its cap. Runs
// that fit nowhere are left out.
std::vector<ClaimPick> PlanClaims(const std::vector<ClaimSlot>& agents,
                                  const std::vector<ClaimCandidate>& candidates,
                                  const std::map<int64_t, ScheduleCap>& caps = {});

}  // namespace tunectl

// How an experiment's runs were placed: on which nodes, and whether its control and variant ever
// ran at the same time on one node (they contaminate each other unless the slots are isolated).
// Pure; the store loads the runs' nodes and times and shows the result in `experiment show`.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tunectl {

struct PlacedRun {
  std::string arm;          // control | variant
  std::string agent;        // the agent that ran it
  std::string node;         // where it ran ("" = the agent's own host)
  int64_t started_ms = 0;   // 0 = never started
  int64_t finished_ms = 0;  // 0 = still running (counts as running until `now_ms`)
};

struct Placement {
  int runs = 0;                      // runs that started
  std::map<std::string, int> nodes;  // node -> runs started there
  int overlaps = 0;                  // control/variant pairs that ran at the same time on one node
  bool isolated = false;             // every agent involved declared isolated slots
  std::string summary;               // one line for `experiment show`
};

// `isolated`: the agents (by name) that declared isolated slots.
Placement DescribePlacement(const std::vector<PlacedRun>& runs,
                            const std::set<std::string>& isolated, int64_t now_ms);

}  // namespace tunectl

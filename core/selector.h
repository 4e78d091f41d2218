// Agent selection: which agents may run a job, and, when none can now, why (for `run list`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tunectl {

using LabelMap = std::map<std::string, std::string>;

struct AgentView {
  std::string name;
  LabelMap labels;
  int slots = 0;
  int running = 0;
  bool connected = false;
  bool busy = false;  // its idle probe fails (production work on the node)
};

// Every selector key must be present in `labels` with the same value.
bool SelectorMatches(const LabelMap& selector, const LabelMap& labels);

// Why a queued run with `selector` is not running: no agents, none matching (naming the selector
// and what agents offer), matching agents disconnected, or all matching slots busy.
std::string WaitReason(const LabelMap& selector, const std::vector<AgentView>& agents);

// An assigned run its agent's cluster keeps pending, in the cluster's words:
// "pending in slurm (job 17): Priority".
std::string ClusterPendingReason(const std::string& executor, const std::string& external_id,
                                 const std::string& reason);
// A queued run of `experiment` held back because another of its runs holds `agent`, whose slots
// are not isolated (the rule is core/dispatch.h's PlanClaims).
std::string OneAtATimeReason(int64_t experiment, const std::string& agent);

std::string FormatLabels(const LabelMap& labels);

}  // namespace tunectl

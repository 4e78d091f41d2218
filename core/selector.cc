#include "core/selector.h"

namespace tunectl {

bool SelectorMatches(const LabelMap& selector, const LabelMap& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

std::string FormatLabels(const LabelMap& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ",";
    out += k + "=" + v;
  }
  return out.empty() ? "(none)" : out;
}

std::string WaitReason(const LabelMap& selector, const std::vector<AgentView>& agents) {
  const std::string sel = selector.empty() ? "any agent" : "selector " + FormatLabels(selector);
  std::vector<const AgentView*> matching;
  for (const auto& a : agents)
    if (SelectorMatches(selector, a.labels)) matching.push_back(&a);
  if (matching.empty()) {
    std::string offered;
    for (const auto& a : agents) {
      if (!a.connected) continue;
      if (!offered.empty()) offered += "; ";
      offered += a.name + " {" + FormatLabels(a.labels) + "}";
    }
    if (offered.empty()) return "waiting: no agent is connected (" + sel + ")";
    return "waiting: no connected agent matches " + sel + "; connected: " + offered;
  }
  bool any_connected = false;
  std::string busy;
  for (const auto* a : matching) {
    if (!a->connected) continue;
    any_connected = true;
    if (a->busy) {
      busy += (busy.empty() ? "" : ", ") + a->name;
      continue;
    }
    if (a->running < a->slots) return "waiting: dispatch to " + a->name + " pending";
  }
  if (!busy.empty())
    return "waiting: agents matching " + sel +
           " report production work (idle probe fails): " + busy;
  if (!any_connected) {
    std::string names;
    for (const auto* a : matching) names += (names.empty() ? "" : ", ") + a->name;
    return "waiting: agents matching " + sel + " are disconnected (" + names + ")";
  }
  return "waiting: all slots busy on agents matching " + sel;
}

std::string ClusterPendingReason(const std::string& executor, const std::string& external_id,
                                 const std::string& reason) {
  return "pending in " + (executor.empty() ? std::string("the cluster") : executor) +
         (external_id.empty() ? "" : " (job " + external_id + ")") + ": " + reason;
}

std::string OneAtATimeReason(int64_t experiment, const std::string& agent) {
  return "waiting: experiment " + std::to_string(experiment) + " runs one run at a time on " +
         agent +
         " (its slots are not isolated, so control and variant must not share it; start the agent "
         "with --isolated-slots if its slots do not disturb each other)";
}

}  // namespace tunectl

#include "core/placement.h"

namespace tunectl {

Placement DescribePlacement(const std::vector<PlacedRun>& runs,
                            const std::set<std::string>& isolated, int64_t now_ms) {
  Placement p;
  std::vector<const PlacedRun*> started;
  bool all_isolated = true;
  for (const auto& r : runs) {
    if (r.started_ms <= 0) continue;
    started.push_back(&r);
    ++p.runs;
    p.nodes[r.node.empty() ? r.agent : r.node]++;
    if (!isolated.count(r.agent)) all_isolated = false;
  }
  if (p.runs == 0) {
    p.summary = "no run has started yet";
    return p;
  }
  p.isolated = all_isolated;
  auto end_of = [&](const PlacedRun& r) { return r.finished_ms > 0 ? r.finished_ms : now_ms; };
  for (size_t i = 0; i < started.size(); ++i)
    for (size_t j = i + 1; j < started.size(); ++j) {
      const PlacedRun& a = *started[i];
      const PlacedRun& b = *started[j];
      if (a.arm == b.arm) continue;
      const std::string na = a.node.empty() ? a.agent : a.node;
      const std::string nb = b.node.empty() ? b.agent : b.node;
      if (na != nb) continue;
      if (a.started_ms < end_of(b) && b.started_ms < end_of(a)) ++p.overlaps;
    }
  std::string where;
  for (const auto& [node, n] : p.nodes)
    where += (where.empty() ? "" : ", ") + node + " (" + std::to_string(n) + ")";
  p.summary = std::to_string(p.runs) + (p.runs == 1 ? " run" : " runs") + " on " +
              (p.nodes.size() == 1 ? "node " : std::to_string(p.nodes.size()) + " nodes: ") +
              where + "; ";
  if (p.overlaps == 0)
    p.summary += "control and variant never ran at the same time on one node";
  else
    p.summary += "control and variant ran at the same time on one node " +
                 std::to_string(p.overlaps) + (p.overlaps == 1 ? " time" : " times") +
                 (all_isolated ? " (isolated slots)"
                               : " (slots not isolated: they may have disturbed each other)");
  return p;
}

}  // namespace tunectl

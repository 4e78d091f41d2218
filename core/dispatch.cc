#include "core/dispatch.h"

#include <optional>
#include <utility>

namespace tunectl {
namespace {

// Agents with the same labels form one group; within it the one with the most free slots (then
// the lowest id) comes first.
struct Group {
  const LabelMap* labels = nullptr;
  std::set<std::pair<int, int64_t>> by_free;  // (-free, agent id)
};

}  // namespace

std::vector<ClaimPick> PlanClaims(const std::vector<ClaimSlot>& agents,
                                  const std::vector<ClaimCandidate>& candidates,
                                  const std::map<int64_t, ScheduleCap>& caps_in) {
  std::vector<ClaimPick> out;
  std::map<LabelMap, Group> groups;
  std::map<int64_t, std::pair<Group*, int>> free;      // agent id -> (its group, free slots)
  std::map<int64_t, std::set<int64_t>> one_at_a_time;  // not isolated: experiments it holds
  for (const auto& a : agents) {
    if (a.free <= 0 || free.count(a.agent_id)) continue;
    Group& g = groups[a.labels];
    g.by_free.insert({-a.free, a.agent_id});
    free[a.agent_id] = {&g, a.free};
    if (!a.isolated) one_at_a_time[a.agent_id] = a.experiments;
  }
  for (auto& [labels, g] : groups) g.labels = &labels;
  std::map<int64_t, ScheduleCap> caps = caps_in;
  std::map<int64_t, int64_t> pinned;                 // experiment -> agent, in this plan
  std::map<LabelMap, std::vector<Group*>> matching;  // selector -> groups that satisfy it

  auto take = [&](int64_t agent) {
    auto& [g, n] = free[agent];
    g->by_free.erase({-n, agent});
    if (--n > 0) g->by_free.insert({-n, agent});
  };
  auto usable = [&](int64_t agent, const ClaimCandidate& c) {
    auto it = free.find(agent);
    if (it == free.end() || it->second.second <= 0) return false;
    if (!SelectorMatches(c.selector, *it->second.first->labels)) return false;
    if (c.experiment_id) {
      auto held = one_at_a_time.find(agent);
      if (held != one_at_a_time.end() && held->second.count(c.experiment_id)) return false;
    }
    if (c.schedule_id == 0) return true;
    auto cap = caps.find(c.schedule_id);
    return cap == caps.end() || cap->second.max_agents <= 0 || cap->second.agents.count(agent) ||
           static_cast<int>(cap->second.agents.size()) < cap->second.max_agents;
  };

  for (const auto& c : candidates) {
    std::optional<int64_t> chosen;
    int64_t pin = c.pinned_agent;
    if (!pin && c.experiment_id) {
      if (auto p = pinned.find(c.experiment_id); p != pinned.end()) pin = p->second;
    }
    if (pin) {
      if (usable(pin, c)) chosen = pin;
    } else {
      auto m = matching.find(c.selector);
      if (m == matching.end()) {
        std::vector<Group*> gs;
        for (auto& [labels, g] : groups)
          if (SelectorMatches(c.selector, labels)) gs.push_back(&g);
        m = matching.emplace(c.selector, std::move(gs)).first;
      }
      auto cap = c.schedule_id ? caps.find(c.schedule_id) : caps.end();
      const bool full = cap != caps.end() && cap->second.max_agents > 0 &&
                        static_cast<int>(cap->second.agents.size()) >= cap->second.max_agents;
      std::pair<int, int64_t> best{1, 0};
      if (full) {  // only the agents already running the schedule's runs
        for (int64_t a : cap->second.agents)
          if (usable(a, c) && std::pair{-free[a].second, a} < best) best = {-free[a].second, a};
      } else {
        for (Group* g : m->second) {
          // The most free agent of the group that may take it (an agent running this
          // experiment's other arm with slots not isolated may not).
          for (const auto& cand : g->by_free) {
            if (!(cand < best)) break;
            if (!c.experiment_id || usable(cand.second, c)) {
              best = cand;
              break;
            }
          }
        }
      }
      if (best.second) chosen = best.second;
    }
    if (!chosen) continue;
    take(*chosen);
    out.push_back({c.run_id, *chosen});
    if (c.experiment_id) {
      if (auto held = one_at_a_time.find(*chosen); held != one_at_a_time.end())
        held->second.insert(c.experiment_id);
    }
    if (c.experiment_id) pinned.emplace(c.experiment_id, *chosen);
    if (c.schedule_id) {
      if (auto cap = caps.find(c.schedule_id); cap != caps.end())
        cap->second.agents.insert(*chosen);
    }
  }
  return out;
}

}  // namespace tunectl

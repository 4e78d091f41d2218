#include "server/http/metrics.h"

namespace tunectl {

std::vector<PromFamily> ServerMetrics(const StoreSnapshot& s, bool leader) {
  std::vector<PromFamily> out;
  out.push_back({"tunectl_up", "1 while the server can read its database", "gauge", {{{}, 1}}});
  out.push_back({"tunectl_scheduler_leader",
                 "1 if this server holds the scheduler's advisory lock",
                 "gauge",
                 {{{}, leader ? 1.0 : 0.0}}});
  out.push_back({"tunectl_agents_connected",
                 "agents with a live session",
                 "gauge",
                 {{{}, static_cast<double>(s.agents_connected)}}});
  PromFamily runs{"tunectl_runs", "runs by state", "gauge", {}};
  for (const char* st :
       {"queued", "assigned", "running", "succeeded", "failed", "cancelled", "lost"}) {
    auto it = s.runs_by_state.find(st);
    runs.samples.push_back(
        {{{"state", st}}, it == s.runs_by_state.end() ? 0.0 : static_cast<double>(it->second)});
  }
  out.push_back(runs);
  PromFamily exps{"tunectl_experiments", "experiments by state", "gauge", {}};
  for (const auto& [st, n] : s.experiments_by_state)
    exps.samples.push_back({{{"state", st}}, static_cast<double>(n)});
  out.push_back(exps);
  PromFamily alerts{"tunectl_regression_alerts",
                    "confirmed regressions of the workload's current config (alert while > 0)",
                    "gauge",
                    {}};
  PromFamily total{
      "tunectl_regressions_total", "confirmed regressions, every config", "counter", {}};
  for (const auto& r : s.regressions) {
    std::map<std::string, std::string> l = {
        {"workload", r.workload}, {"metric", r.metric}, {"kind", r.kind}};
    alerts.samples.push_back({l, static_cast<double>(r.current_config)});
    total.samples.push_back({l, static_cast<double>(r.total)});
  }
  out.push_back(alerts);
  out.push_back(total);
  return out;
}

}  // namespace tunectl

// The server's /metrics: what the store holds now, as Prometheus families. Pure.
#pragma once

#include <vector>

#include "core/prometheus.h"
#include "server/store/store.h"

namespace tunectl {

// tunectl_up, tunectl_scheduler_leader, tunectl_agents_connected, tunectl_runs{state},
// tunectl_experiments{state}, tunectl_regression_alerts{workload,metric,kind} (confirmed
// regressions of the current config: an alert is firing while > 0) and
// tunectl_regressions_total{workload,metric,kind} (every config, ever).
std::vector<PromFamily> ServerMetrics(const StoreSnapshot& s, bool leader);

}  // namespace tunectl

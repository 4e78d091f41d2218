#include "core/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>

#include "server/http/metrics.h"

namespace tunectl {
namespace {

TEST(RenderPrometheus, WritesHelpTypeAndEscapedLabels) {
  PromFamily f{"tunectl_regression_alerts",
               "alerts\nnow",
               "gauge",
               {{{{"workload", "de\"mo"}, {"metric", "a\\b"}}, 2}, {{}, NAN}}};
  EXPECT_EQ(RenderPrometheus({f}),
            "# HELP tunectl_regression_alerts alerts\\nnow\n"
            "# TYPE tunectl_regression_alerts gauge\n"
            "tunectl_regression_alerts{metric=\"a\\\\b\",workload=\"de\\\"mo\"} 2\n"
            "tunectl_regression_alerts NaN\n");
}

TEST(ServerMetrics, ExposesAlertsOfTheCurrentConfigAndTotals) {
  StoreSnapshot s;
  s.runs_by_state = {{"queued", 3}, {"succeeded", 10}};
  s.agents_connected = 2;
  s.regressions.push_back({"demo", "samples_per_s", "change_point", 1, 2});
  const std::string text = RenderPrometheus(ServerMetrics(s, true));
  for (
      const char* line :
      {"tunectl_up 1\n", "tunectl_scheduler_leader 1\n", "tunectl_agents_connected 2\n",
       "tunectl_runs{state=\"queued\"} 3\n", "tunectl_runs{state=\"lost\"} 0\n",
       "tunectl_regression_alerts{kind=\"change_point\",metric=\"samples_per_s\",workload=\"demo\"}"
       " 1\n",
       "tunectl_regressions_total{kind=\"change_point\",metric=\"samples_per_s\",workload=\"demo\"}"
       " 2\n",
       "# TYPE tunectl_regressions_total counter\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin\n" << text;
}

}  // namespace
}  // namespace tunectl

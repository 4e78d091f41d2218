// What each read command shows: tunectl.v1 messages -> tables, JSON documents and detail text.
// Pure functions; JSON keys are snake_case and stable.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cli/render.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

using ojson = nlohmann::ordered_json;

ojson WorkloadJson(const v1::Workload& w);
Table WorkloadsTable(const v1::ListWorkloadsResponse& r);

ojson BaselineJson(const v1::Baseline& b);
Table BaselinesTable(const v1::ListBaselinesResponse& r);
Table BaselineSummaryTable(const v1::Baseline& b);  // one row per metric
std::string BaselineDetail(const v1::Baseline& b);  // header lines + summary table
// One progress line for `baseline create --wait`.
std::string BaselineProgress(const v1::Baseline& b, const v1::ListRunsResponse& runs,
                             double elapsed_s);

ojson RunJson(const v1::Run& r);
Table RunsTable(const v1::ListRunsResponse& r);
std::string RunDetail(const v1::Run& r);

ojson AgentJson(const v1::Agent& a);
Table AgentsTable(const v1::ListAgentsResponse& r);

std::string FormatParams(const google::protobuf::Map<std::string, std::string>& p);

}  // namespace tunectl

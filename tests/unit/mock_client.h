// A Client whose every call is a gmock method, and RunCommand: the CLI's commands without a server.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli/client.h"
#include "cli/commands.h"

namespace tunectl {

class MockClient : public Client {
 public:
  MOCK_METHOD((Result<v1::ApplyWorkloadResponse>), ApplyWorkload,
              (const v1::ApplyWorkloadRequest& r), (override));
  MOCK_METHOD((Result<v1::ListWorkloadsResponse>), ListWorkloads,
              (const v1::ListWorkloadsRequest& r), (override));
  MOCK_METHOD((Result<v1::Baseline>), CreateBaseline, (const v1::CreateBaselineRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Baseline>), GetBaseline, (int64_t id), (override));
  MOCK_METHOD((Result<v1::ListBaselinesResponse>), ListBaselines,
              (const v1::ListBaselinesRequest& r), (override));
  MOCK_METHOD((Result<v1::ListRunsResponse>), ListRuns, (const v1::ListRunsRequest& r), (override));
  MOCK_METHOD((Result<v1::Run>), GetRun, (int64_t id), (override));
  MOCK_METHOD((Result<v1::RunSamples>), GetRunSamples, (const v1::GetRunSamplesRequest& r),
              (override));
  MOCK_METHOD((Result<v1::ListAgentsResponse>), ListAgents, (), (override));
  MOCK_METHOD((Result<v1::RemoveAgentResponse>), RemoveAgent, (const std::string& name),
              (override));
  MOCK_METHOD((Result<v1::WorkloadDetail>), GetWorkload, (const std::string& name), (override));
  MOCK_METHOD((Result<v1::Workload>), DeleteWorkload, (const std::string& name), (override));
  MOCK_METHOD((Result<v1::Workload>), ArchiveWorkload, (const std::string& name), (override));
  MOCK_METHOD((Result<v1::Workload>), UnarchiveWorkload, (const std::string& name), (override));
  MOCK_METHOD((Result<v1::Hypothesis>), CreateHypothesis, (const v1::CreateHypothesisRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Hypothesis>), GetHypothesis, (int64_t id), (override));
  MOCK_METHOD((Result<v1::ListHypothesesResponse>), ListHypotheses,
              (const v1::ListHypothesesRequest& r), (override));
  MOCK_METHOD((Result<v1::Experiment>), RunExperiment, (const v1::RunExperimentRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Experiment>), GetExperiment, (int64_t id), (override));
  MOCK_METHOD((Result<v1::ListExperimentsResponse>), ListExperiments,
              (const v1::ListExperimentsRequest& r), (override));
  MOCK_METHOD((Result<v1::Experiment>), CancelExperiment, (int64_t id), (override));
  MOCK_METHOD((Result<v1::Baseline>), CancelBaseline, (int64_t id), (override));
  MOCK_METHOD((Result<v1::AdvisorReport>), AdviseBaseline, (int64_t id), (override));
  MOCK_METHOD((Result<v1::Goal>), SetGoal, (const v1::SetGoalRequest& r), (override));
  MOCK_METHOD((Result<v1::Goal>), GetGoal, (const std::string& workload), (override));
  MOCK_METHOD((Result<v1::AuditReport>), VerifyAudit, (const v1::VerifyAuditRequest& r),
              (override));
  MOCK_METHOD((Result<v1::ExportAuditResponse>), ExportAudit, (const v1::ExportAuditRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Experiment>), FreezeExperiment, (const v1::FreezeExperimentRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Config>), GetConfig, (const v1::GetConfigRequest& r), (override));
  MOCK_METHOD((Result<v1::ListLogResponse>), ListLog, (const v1::ListLogRequest& r), (override));
  MOCK_METHOD((Result<v1::Schedule>), CreateSchedule, (const v1::CreateScheduleRequest& r),
              (override));
  MOCK_METHOD((Result<v1::ListSchedulesResponse>), ListSchedules, (), (override));
  MOCK_METHOD((Result<v1::Batch>), CreateBatch, (const v1::CreateBatchRequest& r), (override));
  MOCK_METHOD((Result<v1::Batch>), GetBatch, (int64_t id), (override));
  MOCK_METHOD((Result<v1::ListBatchesResponse>), ListBatches, (const v1::ListBatchesRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Batch>), CancelBatch, (int64_t id), (override));
  MOCK_METHOD((Result<v1::Regression>), GetRegression, (const v1::GetRegressionRequest& r),
              (override));
  MOCK_METHOD((Result<v1::StabilityRun>), RegressRun, (const v1::RegressRunRequest& r), (override));
  MOCK_METHOD((Result<v1::Watch>), RegressSchedule, (const v1::RegressScheduleRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Watch>), RegressStop, (const std::string& workload), (override));
  MOCK_METHOD((Result<v1::RecordedRegression>), ResolveRegression,
              (int64_t id, const std::string& reason), (override));
  MOCK_METHOD((Result<v1::Token>), CreateToken, (const v1::CreateTokenRequest& r), (override));
  MOCK_METHOD((Result<v1::ListTokensResponse>), ListTokens, (const v1::ListTokensRequest& r),
              (override));
  MOCK_METHOD((Result<v1::Token>), RevokeToken, (const std::string& name), (override));
  MOCK_METHOD((Result<v1::WhoAmIResponse>), WhoAmI, (), (override));
  MOCK_METHOD(Status, StreamRunLogs,
              (const v1::StreamRunLogsRequest& r,
               const std::function<bool(const v1::RunLogChunk&)>& on_chunk),
              (override));
};

// What a command of the CLI's table printed and returned, run through Execute as main.cc does.
struct Ran {
  int code;
  std::string out, err;
};

inline Ran RunCommand(Client& c, const std::string& noun, const std::string& verb,
                      CliOptions o = {}) {
  for (const auto& cmd : Commands()) {
    if (cmd.noun != noun || cmd.verb != verb) continue;
    std::ostringstream out, err;
    const int code = Execute(cmd, c, o, out, err);
    return {code, out.str(), err.str()};
  }
  ADD_FAILURE() << "no command " << noun << " " << verb;
  return {-1, "", ""};
}

}  // namespace tunectl

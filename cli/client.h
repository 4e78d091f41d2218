// TuningService client. gRPC errors come back as Status with the server's message. The only CLI
// translation unit that includes grpcpp. Not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "sys/endpoint.h"
#include "tunectl/v1/tunectl.pb.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace tunectl {

// A fresh key for a create request (24 hex digits); the server stores what it created under it.
std::string NewRequestId();

class Client {
 public:
  // TLS when the endpoint has a CA; every call carries its bearer token. The server records the
  // token's identity as the actor of whatever the call changes.
  static std::unique_ptr<Client> Connect(const Endpoint& endpoint);
  // Over a channel the caller made (the server's web view: its own in-process channel), with
  // `token` as every call's bearer token; `server` names it in error messages. Shares `channel`.
  static std::unique_ptr<Client> OverChannel(std::shared_ptr<grpc::Channel> channel,
                                             const std::string& token, const std::string& server);
  virtual ~Client() = default;
  virtual Result<v1::ApplyWorkloadResponse> ApplyWorkload(const v1::ApplyWorkloadRequest& r) = 0;
  // Lists take their request: filters and the page (limit, page_token, since, all).
  virtual Result<v1::ListWorkloadsResponse> ListWorkloads(const v1::ListWorkloadsRequest& r) = 0;
  virtual Result<v1::Baseline> CreateBaseline(const v1::CreateBaselineRequest& r) = 0;
  virtual Result<v1::Baseline> GetBaseline(int64_t id) = 0;
  virtual Result<v1::ListBaselinesResponse> ListBaselines(const v1::ListBaselinesRequest& r) = 0;
  virtual Result<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& r) = 0;
  virtual Result<v1::Run> GetRun(int64_t id) = 0;
  virtual Result<v1::RunSamples> GetRunSamples(const v1::GetRunSamplesRequest& r) = 0;
  virtual Result<v1::ListAgentsResponse> ListAgents() = 0;
  virtual Result<v1::RemoveAgentResponse> RemoveAgent(const std::string& name) = 0;
  virtual Result<v1::WorkloadDetail> GetWorkload(const std::string& name) = 0;
  virtual Result<v1::Workload> DeleteWorkload(const std::string& name) = 0;
  virtual Result<v1::Workload> ArchiveWorkload(const std::string& name) = 0;
  virtual Result<v1::Workload> UnarchiveWorkload(const std::string& name) = 0;
  virtual Result<v1::Hypothesis> CreateHypothesis(const v1::CreateHypothesisRequest& r) = 0;
  virtual Result<v1::Hypothesis> GetHypothesis(int64_t id) = 0;
  virtual Result<v1::ListHypothesesResponse> ListHypotheses(const v1::ListHypothesesRequest& r) = 0;
  virtual Result<v1::Experiment> RunExperiment(const v1::RunExperimentRequest& r) = 0;
  virtual Result<v1::Experiment> GetExperiment(int64_t id) = 0;
  virtual Result<v1::ListExperimentsResponse> ListExperiments(
      const v1::ListExperimentsRequest& r) = 0;
  virtual Result<v1::Experiment> CancelExperiment(int64_t id) = 0;
  virtual Result<v1::Baseline> CancelBaseline(int64_t id) = 0;
  virtual Result<v1::AdvisorReport> AdviseBaseline(int64_t id) = 0;
  virtual Result<v1::Goal> SetGoal(const v1::SetGoalRequest& r) = 0;
  virtual Result<v1::Goal> GetGoal(const std::string& workload) = 0;
  virtual Result<v1::AuditReport> VerifyAudit(const v1::VerifyAuditRequest& r) = 0;
  // One page of `audit export`; the command pages through them all.
  virtual Result<v1::ExportAuditResponse> ExportAudit(const v1::ExportAuditRequest& r) = 0;
  virtual Result<v1::Experiment> FreezeExperiment(const v1::FreezeExperimentRequest& r) = 0;
  // `version` 0 = the current config; the response's `selected` is the version asked for.
  virtual Result<v1::Config> GetConfig(const v1::GetConfigRequest& r) = 0;
  virtual Result<v1::ListLogResponse> ListLog(const v1::ListLogRequest& r) = 0;
  virtual Result<v1::Schedule> CreateSchedule(const v1::CreateScheduleRequest& r) = 0;
  virtual Result<v1::ListSchedulesResponse> ListSchedules() = 0;
  virtual Result<v1::Batch> CreateBatch(const v1::CreateBatchRequest& r) = 0;
  virtual Result<v1::Batch> GetBatch(int64_t id) = 0;
  virtual Result<v1::ListBatchesResponse> ListBatches(const v1::ListBatchesRequest& r) = 0;
  virtual Result<v1::Batch> CancelBatch(int64_t id) = 0;
  virtual Result<v1::Regression> GetRegression(const v1::GetRegressionRequest& r) = 0;
  virtual Result<v1::StabilityRun> RegressRun(const v1::RegressRunRequest& r) = 0;
  virtual Result<v1::Watch> RegressSchedule(const v1::RegressScheduleRequest& r) = 0;
  virtual Result<v1::Watch> RegressStop(const std::string& workload) = 0;
  virtual Result<v1::RecordedRegression> ResolveRegression(int64_t id,
                                                           const std::string& reason) = 0;
  virtual Result<v1::Token> CreateToken(const v1::CreateTokenRequest& r) = 0;
  virtual Result<v1::ListTokensResponse> ListTokens(const v1::ListTokensRequest& r) = 0;
  virtual Result<v1::Token> RevokeToken(const std::string& name) = 0;
  virtual Result<v1::WhoAmIResponse> WhoAmI() = 0;
  // A run's output as the server relays it: `on_chunk` gets each chunk as it arrives and returns
  // false to stop. Returns once the stream ends (a finished run's output sent, or stopped).
  virtual Status StreamRunLogs(const v1::StreamRunLogsRequest& r,
                               const std::function<bool(const v1::RunLogChunk&)>& on_chunk) = 0;
};

}  // namespace tunectl

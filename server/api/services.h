// gRPC handlers: convert proto <-> store rows and map errors once (convert.h). No SQL here.
// Thread-safe: gRPC calls these from its thread pool.
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/log.h"
#include "server/api/auth.h"
#include "server/dispatch/dispatcher.h"
#include "server/store/store.h"
#include "sys/ed25519.h"
#include "tunectl/v1/tunectl.grpc.pb.h"

namespace tunectl {

class TuningServiceImpl final : public v1::TuningService::Service {
 public:
  // Not owned; all outlive the service. `clock` tells schedules' windows and wait reasons;
  // `auth` checks every call; `audit_key` (may be null: heads unsigned) signs the audit chain's
  // head.
  TuningServiceImpl(Store* store, Dispatcher* dispatcher, const Clock* clock, Authorizer* auth,
                    const Ed25519Key* audit_key = nullptr)
      : store_(store), dispatcher_(dispatcher), clock_(clock), auth_(auth), audit_key_(audit_key) {}

  grpc::Status ApplyWorkload(grpc::ServerContext*, const v1::ApplyWorkloadRequest*,
                             v1::ApplyWorkloadResponse*) override;
  grpc::Status ListWorkloads(grpc::ServerContext*, const v1::ListWorkloadsRequest*,
                             v1::ListWorkloadsResponse*) override;
  grpc::Status CreateBaseline(grpc::ServerContext*, const v1::CreateBaselineRequest*,
                              v1::Baseline*) override;
  grpc::Status GetBaseline(grpc::ServerContext*, const v1::GetBaselineRequest*,
                           v1::Baseline*) override;
  grpc::Status AdviseBaseline(grpc::ServerContext*, const v1::AdviseBaselineRequest*,
                              v1::AdvisorReport*) override;
  grpc::Status SetGoal(grpc::ServerContext*, const v1::SetGoalRequest*, v1::Goal*) override;
  grpc::Status VerifyAudit(grpc::ServerContext*, const v1::VerifyAuditRequest*,
                           v1::AuditReport*) override;
  grpc::Status ExportAudit(grpc::ServerContext*, const v1::ExportAuditRequest*,
                           v1::ExportAuditResponse*) override;
  grpc::Status GetGoal(grpc::ServerContext*, const v1::GetGoalRequest*, v1::Goal*) override;
  grpc::Status CancelBaseline(grpc::ServerContext*, const v1::CancelBaselineRequest*,
                              v1::Baseline*) override;
  grpc::Status ListBaselines(grpc::ServerContext*, const v1::ListBaselinesRequest*,
                             v1::ListBaselinesResponse*) override;
  grpc::Status ListRuns(grpc::ServerContext*, const v1::ListRunsRequest*,
                        v1::ListRunsResponse*) override;
  grpc::Status GetRun(grpc::ServerContext*, const v1::GetRunRequest*, v1::Run*) override;
  grpc::Status GetRunSamples(grpc::ServerContext*, const v1::GetRunSamplesRequest*,
                             v1::RunSamples*) override;
  // Relays the run's output from the agent that holds it (Dispatcher::logs()), following it
  // while the run runs when asked; holds a gRPC thread for as long as the client reads.
  grpc::Status StreamRunLogs(grpc::ServerContext*, const v1::StreamRunLogsRequest*,
                             grpc::ServerWriter<v1::RunLogChunk>*) override;
  grpc::Status ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest*,
                          v1::ListAgentsResponse*) override;
  grpc::Status RemoveAgent(grpc::ServerContext*, const v1::RemoveAgentRequest*,
                           v1::RemoveAgentResponse*) override;
  grpc::Status GetWorkload(grpc::ServerContext*, const v1::GetWorkloadRequest*,
                           v1::WorkloadDetail*) override;
  grpc::Status DeleteWorkload(grpc::ServerContext*, const v1::DeleteWorkloadRequest*,
                              v1::Workload*) override;
  grpc::Status ArchiveWorkload(grpc::ServerContext*, const v1::ArchiveWorkloadRequest*,
                               v1::Workload*) override;
  grpc::Status UnarchiveWorkload(grpc::ServerContext*, const v1::UnarchiveWorkloadRequest*,
                                 v1::Workload*) override;
  grpc::Status CreateHypothesis(grpc::ServerContext*, const v1::CreateHypothesisRequest*,
                                v1::Hypothesis*) override;
  grpc::Status GetHypothesis(grpc::ServerContext*, const v1::GetHypothesisRequest*,
                             v1::Hypothesis*) override;
  grpc::Status ListHypotheses(grpc::ServerContext*, const v1::ListHypothesesRequest*,
                              v1::ListHypothesesResponse*) override;
  grpc::Status RunExperiment(grpc::ServerContext*, const v1::RunExperimentRequest*,
                             v1::Experiment*) override;
  grpc::Status GetExperiment(grpc::ServerContext*, const v1::GetExperimentRequest*,
                             v1::Experiment*) override;
  grpc::Status ListExperiments(grpc::ServerContext*, const v1::ListExperimentsRequest*,
                               v1::ListExperimentsResponse*) override;
  grpc::Status CancelExperiment(grpc::ServerContext*, const v1::CancelExperimentRequest*,
                                v1::Experiment*) override;
  grpc::Status FreezeExperiment(grpc::ServerContext*, const v1::FreezeExperimentRequest*,
                                v1::Experiment*) override;
  grpc::Status GetConfig(grpc::ServerContext*, const v1::GetConfigRequest*, v1::Config*) override;
  grpc::Status ListLog(grpc::ServerContext*, const v1::ListLogRequest*,
                       v1::ListLogResponse*) override;
  grpc::Status CreateSchedule(grpc::ServerContext*, const v1::CreateScheduleRequest*,
                              v1::Schedule*) override;
  grpc::Status ListSchedules(grpc::ServerContext*, const v1::ListSchedulesRequest*,
                             v1::ListSchedulesResponse*) override;
  grpc::Status CreateBatch(grpc::ServerContext*, const v1::CreateBatchRequest*,
                           v1::Batch*) override;
  grpc::Status GetBatch(grpc::ServerContext*, const v1::GetBatchRequest*, v1::Batch*) override;
  grpc::Status ListBatches(grpc::ServerContext*, const v1::ListBatchesRequest*,
                           v1::ListBatchesResponse*) override;
  grpc::Status CancelBatch(grpc::ServerContext*, const v1::CancelBatchRequest*,
                           v1::Batch*) override;
  grpc::Status GetRegression(grpc::ServerContext*, const v1::GetRegressionRequest*,
                             v1::Regression*) override;
  grpc::Status RegressRun(grpc::ServerContext*, const v1::RegressRunRequest*,
                          v1::StabilityRun*) override;
  grpc::Status RegressSchedule(grpc::ServerContext*, const v1::RegressScheduleRequest*,
                               v1::Watch*) override;
  grpc::Status RegressStop(grpc::ServerContext*, const v1::RegressStopRequest*,
                           v1::Watch*) override;
  grpc::Status ResolveRegression(grpc::ServerContext*, const v1::ResolveRegressionRequest*,
                                 v1::RecordedRegression*) override;
  grpc::Status CreateToken(grpc::ServerContext*, const v1::CreateTokenRequest*,
                           v1::Token*) override;
  grpc::Status ListTokens(grpc::ServerContext*, const v1::ListTokensRequest*,
                          v1::ListTokensResponse*) override;
  grpc::Status RevokeToken(grpc::ServerContext*, const v1::RevokeTokenRequest*,
                           v1::Token*) override;
  grpc::Status WhoAmI(grpc::ServerContext*, const v1::WhoAmIRequest*, v1::WhoAmIResponse*) override;

 private:
  // `schedules`: the schedules when the caller has them (a list), else loaded when needed.
  Status FillBatch(const BatchRow& b, v1::Batch* out,
                   const std::vector<ScheduleRow>* schedules = nullptr);
  void FillWatch(const WatchRow& w, v1::Watch* out);
  int64_t NowS() const { return clock_->NowS(); }
  Store* store_;
  Dispatcher* dispatcher_;
  const Clock* clock_;
  Authorizer* auth_;
  const Ed25519Key* audit_key_;
  ScheduleBook schedules_;
};

struct AgentServiceOptions {
  int heartbeat_interval_ms = 2000;
  std::string server_id;  // distinguishes sessions of this server process
  // A name seen this recently by another agent process is held (AlreadyExists); a session of
  // this server process is live only while its stream is open.
  int64_t agent_timeout_ms = 15000;
  int workers = 8;          // threads that store what agents send (each session one at a time)
  size_t max_queue = 4096;  // messages waiting for one agent; a peer that lets it fill is dropped
};

// AgentService on gRPC's callback API: no thread per stream. Each session reads one message at a
// time; heartbeats are taken in memory on gRPC's threads, everything that touches the database
// (Hello, batches, results) on a fixed pool of workers, and what goes out waits in the session's
// bounded queue for its own writer, so a slow agent never blocks anyone else. The destructor
// finishes the queued work (the store must still be alive).
class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // `auth` (not owned) checks each session's token at its Hello.
  AgentServiceImpl(Store* store, Dispatcher* dispatcher, Authorizer* auth, AgentServiceOptions opts,
                   LogFn log);
  ~AgentServiceImpl() override;

  grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage>* Session(
      grpc::CallbackServerContext* ctx) override;

  struct Shared;  // what every session uses (agent_service.cc)

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace tunectl

#include "cli/client.h"

#include <grpcpp/grpcpp.h>

#include <random>

#include "core/paging.h"
#include "sys/endpoint_grpc.h"
#include "tunectl/v1/tunectl.grpc.pb.h"

namespace tunectl {
namespace {

// The most bytes a message may carry, both ways (as the server's): a safety margin; every list
// pages, so no response comes near it.
grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  return args;
}

class GrpcClient : public Client {
 public:
  explicit GrpcClient(const Endpoint& e)
      : server_(e.server),
        token_(e.token),
        tls_(!e.ca_pem.empty()),
        stub_(v1::TuningService::NewStub(
            grpc::CreateCustomChannel(e.server, ChannelCredentialsOf(e), ChannelArgs()))) {}
  GrpcClient(std::shared_ptr<grpc::Channel> channel, const std::string& token,
             const std::string& server)
      : server_(server), token_(token), tls_(true), stub_(v1::TuningService::NewStub(channel)) {}

  Result<v1::Token> CreateToken(const v1::CreateTokenRequest& r) override {
    return Call<v1::Token>(&v1::TuningService::Stub::CreateToken, r);
  }
  Result<v1::ListTokensResponse> ListTokens(const v1::ListTokensRequest& r) override {
    return Call<v1::ListTokensResponse>(&v1::TuningService::Stub::ListTokens, r);
  }
  Result<v1::Token> RevokeToken(const std::string& name) override {
    v1::RevokeTokenRequest r;
    r.set_name(name);
    return Call<v1::Token>(&v1::TuningService::Stub::RevokeToken, r);
  }
  Result<v1::WhoAmIResponse> WhoAmI() override {
    return Call<v1::WhoAmIResponse>(&v1::TuningService::Stub::WhoAmI, v1::WhoAmIRequest());
  }

  Result<v1::ApplyWorkloadResponse> ApplyWorkload(const v1::ApplyWorkloadRequest& r) override {
    return Call<v1::ApplyWorkloadResponse>(&v1::TuningService::Stub::ApplyWorkload, r);
  }
  Result<v1::ListWorkloadsResponse> ListWorkloads(const v1::ListWorkloadsRequest& r) override {
    return Call<v1::ListWorkloadsResponse>(&v1::TuningService::Stub::ListWorkloads, r);
  }
  Result<v1::Baseline> CreateBaseline(const v1::CreateBaselineRequest& r) override {
    return Call<v1::Baseline>(&v1::TuningService::Stub::CreateBaseline, r);
  }
  Result<v1::Baseline> GetBaseline(int64_t id) override {
    v1::GetBaselineRequest r;
    r.set_id(id);
    return Call<v1::Baseline>(&v1::TuningService::Stub::GetBaseline, r);
  }
  Result<v1::ListBaselinesResponse> ListBaselines(const v1::ListBaselinesRequest& r) override {
    return Call<v1::ListBaselinesResponse>(&v1::TuningService::Stub::ListBaselines, r);
  }
  Result<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& r) override {
    return Call<v1::ListRunsResponse>(&v1::TuningService::Stub::ListRuns, r);
  }
  Result<v1::Run> GetRun(int64_t id) override {
    v1::GetRunRequest r;
    r.set_id(id);
    return Call<v1::Run>(&v1::TuningService::Stub::GetRun, r);
  }
  Result<v1::RunSamples> GetRunSamples(const v1::GetRunSamplesRequest& r) override {
    return Call<v1::RunSamples>(&v1::TuningService::Stub::GetRunSamples, r);
  }
  Result<v1::ListAgentsResponse> ListAgents() override {
    return Call<v1::ListAgentsResponse>(&v1::TuningService::Stub::ListAgents,
                                        v1::ListAgentsRequest());
  }
  Result<v1::RemoveAgentResponse> RemoveAgent(const std::string& name) override {
    v1::RemoveAgentRequest r;
    r.set_name(name);
    return Call<v1::RemoveAgentResponse>(&v1::TuningService::Stub::RemoveAgent, r);
  }
  Result<v1::WorkloadDetail> GetWorkload(const std::string& name) override {
    v1::GetWorkloadRequest r;
    r.set_name(name);
    return Call<v1::WorkloadDetail>(&v1::TuningService::Stub::GetWorkload, r);
  }
  Result<v1::Workload> DeleteWorkload(const std::string& name) override {
    v1::DeleteWorkloadRequest r;
    r.set_name(name);
    return Call<v1::Workload>(&v1::TuningService::Stub::DeleteWorkload, r);
  }
  Result<v1::Workload> ArchiveWorkload(const std::string& name) override {
    v1::ArchiveWorkloadRequest r;
    r.set_name(name);
    return Call<v1::Workload>(&v1::TuningService::Stub::ArchiveWorkload, r);
  }
  Result<v1::Workload> UnarchiveWorkload(const std::string& name) override {
    v1::UnarchiveWorkloadRequest r;
    r.set_name(name);
    return Call<v1::Workload>(&v1::TuningService::Stub::UnarchiveWorkload, r);
  }

  Result<v1::Hypothesis> CreateHypothesis(const v1::CreateHypothesisRequest& r) override {
    return Call<v1::Hypothesis>(&v1::TuningService::Stub::CreateHypothesis, r);
  }
  Result<v1::Hypothesis> GetHypothesis(int64_t id) override {
    v1::GetHypothesisRequest r;
    r.set_id(id);
    return Call<v1::Hypothesis>(&v1::TuningService::Stub::GetHypothesis, r);
  }
  Result<v1::ListHypothesesResponse> ListHypotheses(const v1::ListHypothesesRequest& r) override {
    return Call<v1::ListHypothesesResponse>(&v1::TuningService::Stub::ListHypotheses, r);
  }
  Result<v1::Experiment> RunExperiment(const v1::RunExperimentRequest& r) override {
    return Call<v1::Experiment>(&v1::TuningService::Stub::RunExperiment, r);
  }
  Result<v1::Experiment> GetExperiment(int64_t id) override {
    v1::GetExperimentRequest r;
    r.set_id(id);
    return Call<v1::Experiment>(&v1::TuningService::Stub::GetExperiment, r);
  }
  Result<v1::ListExperimentsResponse> ListExperiments(
      const v1::ListExperimentsRequest& r) override {
    return Call<v1::ListExperimentsResponse>(&v1::TuningService::Stub::ListExperiments, r);
  }
  Result<v1::AdvisorReport> AdviseBaseline(int64_t id) override {
    v1::AdviseBaselineRequest r;
    r.set_id(id);
    return Call<v1::AdvisorReport>(&v1::TuningService::Stub::AdviseBaseline, r);
  }
  Result<v1::Goal> SetGoal(const v1::SetGoalRequest& r) override {
    return Call<v1::Goal>(&v1::TuningService::Stub::SetGoal, r);
  }
  Result<v1::AuditReport> VerifyAudit(const v1::VerifyAuditRequest& r) override {
    return Call<v1::AuditReport>(&v1::TuningService::Stub::VerifyAudit, r);
  }
  Result<v1::ExportAuditResponse> ExportAudit(const v1::ExportAuditRequest& r) override {
    return Call<v1::ExportAuditResponse>(&v1::TuningService::Stub::ExportAudit, r);
  }
  Result<v1::Goal> GetGoal(const std::string& workload) override {
    v1::GetGoalRequest r;
    r.set_workload(workload);
    return Call<v1::Goal>(&v1::TuningService::Stub::GetGoal, r);
  }
  Result<v1::Baseline> CancelBaseline(int64_t id) override {
    v1::CancelBaselineRequest r;
    r.set_id(id);
    return Call<v1::Baseline>(&v1::TuningService::Stub::CancelBaseline, r);
  }
  Result<v1::Experiment> CancelExperiment(int64_t id) override {
    v1::CancelExperimentRequest r;
    r.set_id(id);
    return Call<v1::Experiment>(&v1::TuningService::Stub::CancelExperiment, r);
  }
  Result<v1::Experiment> FreezeExperiment(const v1::FreezeExperimentRequest& r) override {
    return Call<v1::Experiment>(&v1::TuningService::Stub::FreezeExperiment, r);
  }
  Result<v1::Config> GetConfig(const v1::GetConfigRequest& r) override {
    return Call<v1::Config>(&v1::TuningService::Stub::GetConfig, r);
  }
  Result<v1::ListLogResponse> ListLog(const v1::ListLogRequest& r) override {
    return Call<v1::ListLogResponse>(&v1::TuningService::Stub::ListLog, r);
  }

  Result<v1::Schedule> CreateSchedule(const v1::CreateScheduleRequest& r) override {
    return Call<v1::Schedule>(&v1::TuningService::Stub::CreateSchedule, r);
  }
  Result<v1::ListSchedulesResponse> ListSchedules() override {
    return Call<v1::ListSchedulesResponse>(&v1::TuningService::Stub::ListSchedules,
                                           v1::ListSchedulesRequest());
  }
  Result<v1::Batch> CreateBatch(const v1::CreateBatchRequest& r) override {
    return Call<v1::Batch>(&v1::TuningService::Stub::CreateBatch, r);
  }
  Result<v1::Batch> GetBatch(int64_t id) override {
    v1::GetBatchRequest r;
    r.set_id(id);
    return Call<v1::Batch>(&v1::TuningService::Stub::GetBatch, r);
  }
  Result<v1::ListBatchesResponse> ListBatches(const v1::ListBatchesRequest& r) override {
    return Call<v1::ListBatchesResponse>(&v1::TuningService::Stub::ListBatches, r);
  }
  Result<v1::Batch> CancelBatch(int64_t id) override {
    v1::CancelBatchRequest r;
    r.set_id(id);
    return Call<v1::Batch>(&v1::TuningService::Stub::CancelBatch, r);
  }

  Result<v1::Regression> GetRegression(const v1::GetRegressionRequest& r) override {
    return Call<v1::Regression>(&v1::TuningService::Stub::GetRegression, r);
  }
  Result<v1::StabilityRun> RegressRun(const v1::RegressRunRequest& r) override {
    return Call<v1::StabilityRun>(&v1::TuningService::Stub::RegressRun, r);
  }
  Result<v1::Watch> RegressSchedule(const v1::RegressScheduleRequest& r) override {
    return Call<v1::Watch>(&v1::TuningService::Stub::RegressSchedule, r);
  }
  Result<v1::RecordedRegression> ResolveRegression(int64_t id, const std::string& reason) override {
    v1::ResolveRegressionRequest r;
    r.set_id(id);
    r.set_reason(reason);
    return Call<v1::RecordedRegression>(&v1::TuningService::Stub::ResolveRegression, r);
  }
  Status StreamRunLogs(const v1::StreamRunLogsRequest& r,
                       const std::function<bool(const v1::RunLogChunk&)>& on_chunk) override {
    grpc::ClientContext ctx;
    if (!r.follow())  // a finished run's output comes at once; a follow lasts as long as the run
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
    AddToken(ctx, token_);
    auto reader = stub_->StreamRunLogs(&ctx, r);
    v1::RunLogChunk c;
    while (reader->Read(&c)) {
      if (!on_chunk(c)) {
        ctx.TryCancel();
        while (reader->Read(&c)) {
        }
        reader->Finish();
        return Status::Ok();
      }
    }
    grpc::Status st = reader->Finish();
    return st.ok() ? Status::Ok() : ErrorOf(st, "");
  }
  Result<v1::Watch> RegressStop(const std::string& workload) override {
    v1::RegressStopRequest r;
    r.set_workload(workload);
    return Call<v1::Watch>(&v1::TuningService::Stub::RegressStop, r);
  }

 private:
  template <typename Resp, typename Req, typename Method>
  Result<Resp> Call(Method m, const Req& in) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    AddToken(ctx, token_);
    Req req = in;
    std::string retry_hint;  // a create that timed out may still complete: how to retry safely
    if constexpr (requires { req.request_id(); }) {
      if (req.request_id().empty()) req.set_request_id(NewRequestId());
      retry_hint =
          "; it may still complete: to retry it without creating twice, run the same "
          "command with --request-id " +
          req.request_id();
    }
    Resp resp;
    grpc::Status st = (stub_.get()->*m)(&ctx, req, &resp);
    if (st.ok()) return resp;
    return ErrorOf(st, retry_hint);
  }

  // A gRPC error as the CLI says it: the server's message, and what to do about it.
  Status ErrorOf(const grpc::Status& st, const std::string& retry_hint) const {
    switch (st.error_code()) {
      case grpc::StatusCode::INVALID_ARGUMENT: return Status::InvalidArgument(st.error_message());
      case grpc::StatusCode::NOT_FOUND: return Status::NotFound(st.error_message());
      case grpc::StatusCode::ALREADY_EXISTS: return Status::AlreadyExists(st.error_message());
      case grpc::StatusCode::FAILED_PRECONDITION:
        return Status::FailedPrecondition(st.error_message());
      case grpc::StatusCode::UNAUTHENTICATED:
        return Status::Unauthenticated(
            st.error_message() +
            (token_.empty() ? " [this client sent none: no token in $TUNECTL_TOKEN or a context "
                              "for " +
                                  server_ + " in the client config]"
                            : ""));
      case grpc::StatusCode::PERMISSION_DENIED: return Status::PermissionDenied(st.error_message());
      case grpc::StatusCode::UNAVAILABLE:
        if (st.error_message().rfind("database unavailable", 0) == 0)
          return Status::Unavailable("tunectl-server at " + server_ + " is up, but its " +
                                     st.error_message() +
                                     "; it reconnects by itself: retry once PostgreSQL is back");
        return Status::Unavailable("cannot reach tunectl-server at " + server_ + " (" +
                                   st.error_message() +
                                   "); is it running? set --server or TUNECTL_SERVER" +
                                   (tls_ ? ""
                                         : "; if it uses TLS, name its CA (ca in the client "
                                           "config's context, or $TUNECTL_CA)") +
                                   retry_hint);
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return Status::Unavailable("tunectl-server at " + server_ + " did not answer in 30s" +
                                   retry_hint);
      default: return Status::Internal(st.error_message());
    }
  }

  std::string server_;
  std::string token_;
  bool tls_;
  std::unique_ptr<v1::TuningService::Stub> stub_;
};

}  // namespace

std::string NewRequestId() {
  static const char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string id;
  for (int i = 0; i < 24; ++i) id += kHex[rd() % 16];
  return id;
}

std::unique_ptr<Client> Client::Connect(const Endpoint& endpoint) {
  return std::make_unique<GrpcClient>(endpoint);
}

std::unique_ptr<Client> Client::OverChannel(std::shared_ptr<grpc::Channel> channel,
                                            const std::string& token, const std::string& server) {
  return std::make_unique<GrpcClient>(std::move(channel), token, server);
}

}  // namespace tunectl

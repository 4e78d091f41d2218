#include "server/api/convert.h"
#include "server/api/services.h"

namespace tunectl {
namespace {

std::string Actor(grpc::ServerContext* ctx) {
  auto it = ctx->client_metadata().find("tunectl-actor");
  if (it == ctx->client_metadata().end()) return "user:unknown";
  return "user:" + std::string(it->second.data(), it->second.size());
}

// Fills in why each queued run waits, from the agents' labels, slots and connection state.
Status ExplainWaits(Store& store, std::vector<RunRow*> runs) {
  bool any_queued = false;
  for (auto* r : runs) any_queued |= r->state == "queued";
  if (!any_queued) return Status::Ok();
  auto agents = store.ListAgents();
  if (!agents.ok()) return agents.status();
  std::vector<AgentView> views;
  for (const auto& a : *agents)
    views.push_back({a.name, a.labels, a.slots, a.running, a.connected});
  for (auto* r : runs)
    if (r->state == "queued") r->wait_reason = WaitReason(r->selector, views);
  return Status::Ok();
}

}  // namespace

grpc::Status TuningServiceImpl::ApplyWorkload(grpc::ServerContext* ctx,
                                              const v1::ApplyWorkloadRequest* req,
                                              v1::ApplyWorkloadResponse* resp) {
  auto spec = ParseWorkloadSpec(req->spec(), req->source().empty() ? "workload" : req->source());
  if (!spec.ok()) return ToGrpc(spec.status());
  auto r = store_->ApplyWorkload(*spec, req->spec(), Actor(ctx));
  if (!r.ok()) return ToGrpc(r.status());
  ToProto(r->workload, resp->mutable_workload());
  resp->set_action(r->action);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListWorkloads(grpc::ServerContext*, const v1::ListWorkloadsRequest*,
                                              v1::ListWorkloadsResponse* resp) {
  auto r = store_->ListWorkloads();
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& w : *r) ToProto(w, resp->add_workloads());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CreateBaseline(grpc::ServerContext* ctx,
                                               const v1::CreateBaselineRequest* req,
                                               v1::Baseline* resp) {
  auto id = store_->CreateBaseline(req->workload(), req->repeats(), Actor(ctx));
  if (!id.ok()) return ToGrpc(id.status());
  dispatcher_->Notify();
  auto b = store_->GetBaseline(*id);
  if (!b.ok()) return ToGrpc(b.status());
  ToProto(*b, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetBaseline(grpc::ServerContext*, const v1::GetBaselineRequest* req,
                                            v1::Baseline* resp) {
  auto b = store_->GetBaseline(req->id());
  if (!b.ok()) return ToGrpc(b.status());
  ToProto(*b, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListBaselines(grpc::ServerContext*,
                                              const v1::ListBaselinesRequest* req,
                                              v1::ListBaselinesResponse* resp) {
  auto r = store_->ListBaselines(req->workload());
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& b : *r) ToProto(b, resp->add_baselines());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListRuns(grpc::ServerContext*, const v1::ListRunsRequest* req,
                                         v1::ListRunsResponse* resp) {
  auto runs = store_->ListRuns(req->baseline_id(), req->limit());
  if (!runs.ok()) return ToGrpc(runs.status());
  std::vector<RunRow*> ptrs;
  for (auto& r : *runs) ptrs.push_back(&r);
  if (auto st = ExplainWaits(*store_, ptrs); !st.ok()) return ToGrpc(st);
  for (const auto& r : *runs) ToProto(r, resp->add_runs());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetRun(grpc::ServerContext*, const v1::GetRunRequest* req,
                                       v1::Run* resp) {
  auto r = store_->GetRun(req->id());
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = ExplainWaits(*store_, {&*r}); !st.ok()) return ToGrpc(st);
  ToProto(*r, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest*,
                                           v1::ListAgentsResponse* resp) {
  auto r = store_->ListAgents();
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& a : *r) ToProto(a, resp->add_agents());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CreateHypothesis(grpc::ServerContext* ctx,
                                                 const v1::CreateHypothesisRequest* req,
                                                 v1::Hypothesis* resp) {
  HypothesisIn in;
  in.workload = req->workload();
  in.baseline_id = req->baseline_id();
  in.vary.assign(req->vary().begin(), req->vary().end());
  in.expect = req->expect();
  in.evidence = req->evidence();
  in.statement = req->statement();
  auto id = store_->CreateHypothesis(in, Actor(ctx));
  if (!id.ok()) return ToGrpc(id.status());
  auto h = store_->GetHypothesis(*id);
  if (!h.ok()) return ToGrpc(h.status());
  ToProto(*h, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetHypothesis(grpc::ServerContext*,
                                              const v1::GetHypothesisRequest* req,
                                              v1::Hypothesis* resp) {
  auto h = store_->GetHypothesis(req->id());
  if (!h.ok()) return ToGrpc(h.status());
  ToProto(*h, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListHypotheses(grpc::ServerContext*,
                                               const v1::ListHypothesesRequest* req,
                                               v1::ListHypothesesResponse* resp) {
  auto r = store_->ListHypotheses(req->workload());
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& h : *r) ToProto(h, resp->add_hypotheses());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::RunExperiment(grpc::ServerContext* ctx,
                                              const v1::RunExperimentRequest* req,
                                              v1::Experiment* resp) {
  ExperimentIn in;
  in.workload = req->workload();
  in.baseline_id = req->baseline_id();
  in.vary.assign(req->vary().begin(), req->vary().end());
  in.hypothesis_id = req->hypothesis_id();
  in.repeats = req->repeats();
  auto id = store_->CreateExperiment(in, Actor(ctx));
  if (!id.ok()) return ToGrpc(id.status());
  dispatcher_->Notify();
  auto e = store_->GetExperiment(*id);
  if (!e.ok()) return ToGrpc(e.status());
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetExperiment(grpc::ServerContext*,
                                              const v1::GetExperimentRequest* req,
                                              v1::Experiment* resp) {
  auto e = store_->GetExperiment(req->id());
  if (!e.ok()) return ToGrpc(e.status());
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListExperiments(grpc::ServerContext*,
                                                const v1::ListExperimentsRequest* req,
                                                v1::ListExperimentsResponse* resp) {
  auto r = store_->ListExperiments(req->workload());
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& e : *r) ToProto(e, resp->add_experiments());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CancelExperiment(grpc::ServerContext* ctx,
                                                 const v1::CancelExperimentRequest* req,
                                                 v1::Experiment* resp) {
  auto e = store_->CancelExperiment(req->id(), Actor(ctx));
  if (!e.ok()) return ToGrpc(e.status());
  dispatcher_->Notify();
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::FreezeExperiment(grpc::ServerContext* ctx,
                                                 const v1::FreezeExperimentRequest* req,
                                                 v1::Experiment* resp) {
  auto e = store_->FreezeExperiment(req->id(), req->force(), req->reason(), Actor(ctx));
  if (!e.ok()) return ToGrpc(e.status());
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetConfig(grpc::ServerContext*, const v1::GetConfigRequest* req,
                                          v1::Config* resp) {
  auto c = store_->GetConfig(req->workload());
  if (!c.ok()) return ToGrpc(c.status());
  ToProto(*c, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListLog(grpc::ServerContext*, const v1::ListLogRequest* req,
                                        v1::ListLogResponse* resp) {
  auto r = store_->ListLog(req->workload(), req->param());
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& l : *r) ToProto(l, resp->add_entries());
  return grpc::Status::OK;
}

}  // namespace tunectl

#include <chrono>
#include <thread>

#include "core/experiment.h"
#include "core/lifecycle.h"
#include "core/names.h"
#include "core/paging.h"
#include "core/regression.h"
#include "core/run_logs.h"
#include "core/run_series.h"
#include "core/text.h"
#include "server/api/convert.h"
#include "server/api/request_limits.h"
#include "server/api/services.h"
#include "sys/files.h"

namespace tunectl {
namespace {

// The first line of every handler: the one check (server/api/auth.h) against core/auth.h's table.
// `who` is the caller's identity; a refusal is returned as it is.
// Then every field of the request within its size (server/api/request_limits.h).
#define TUNECTL_AUTHORIZE(rpc)                                     \
  auto who = auth_->Check(ctx, "/tunectl.v1.TuningService/" #rpc); \
  if (!who.ok()) return ToGrpc(who.status());                      \
  if (Status limits = CheckRequestLimits(*req); !limits.ok()) return ToGrpc(limits)

// Fills in why each queued run waits: its schedule's window, or the agents' labels, slots and
// connection state.
Status ExplainWaits(Store& store, ScheduleBook& book, int64_t now, std::vector<RunRow*> runs) {
  bool any_queued = false;
  for (auto* r : runs) {
    any_queued |= r->state == "queued";
    if (r->state == "assigned" && !r->pending_reason.empty())
      r->wait_reason = ClusterPendingReason(r->executor, r->external_id, r->pending_reason);
  }
  if (!any_queued) return Status::Ok();
  auto agents = store.ListAgents();
  if (!agents.ok()) return agents.status();
  std::vector<AgentView> views;
  for (const auto& a : *agents)
    views.push_back({a.name, a.labels, a.slots, a.running, a.connected, a.busy});
  std::map<std::string, const AgentRow*> by_name;
  for (const auto& a : *agents) by_name[a.name] = &a;
  // Experiments held on a node whose slots are not isolated: their next run waits for it.
  std::map<int64_t, std::string> one_at_a_time;
  for (const auto* r : runs) {
    if (!r->experiment_id || (r->state != "assigned" && r->state != "running")) continue;
    auto a = by_name.find(r->agent);
    if (a != by_name.end() && !a->second->isolated_slots)
      one_at_a_time.emplace(r->experiment_id, r->agent);
  }
  std::vector<ScheduleRow> schedules;
  for (auto* r : runs) {
    if (r->state != "queued") continue;
    r->wait_reason = WaitReason(r->selector, views);
    if (auto held = one_at_a_time.find(r->experiment_id);
        r->experiment_id && held != one_at_a_time.end())
      r->wait_reason = OneAtATimeReason(r->experiment_id, held->second);
    if (r->schedule_id == 0) continue;
    if (schedules.empty()) {
      auto rows = store.ListSchedules();
      if (!rows.ok()) return rows.status();
      schedules = *rows;
    }
    for (const auto& sr : schedules)
      if (sr.id == r->schedule_id)
        r->wait_reason = "waiting for schedule " + sr.name + ": " + book.Describe(sr, now) +
                         " (a run starts only with its expected duration left in the window" +
                         (sr.max_agents > 0 ? ", on at most " + std::to_string(sr.max_agents) +
                                                  " agent(s) at once)"
                                            : ")");
  }
  return Status::Ok();
}

// Every list pages (core/paging.h): its name in tokens and messages, its default and cap.
const PageRules kLogPages{"log"};
const PageRules kExperimentPages{"experiments"};
const PageRules kBatchPages{"batches"};
const PageRules kBaselinePages{"baselines"};
const PageRules kRunPages{"runs"};
const PageRules kHypothesisPages{"hypotheses"};
const PageRules kWorkloadPages{"workloads", kDefaultPageSize, kMaxPageSize, /*keyed_by_name=*/true,
                               /*has_since=*/false};

// The page a list request asks for, against the server's clock (which --since counts back from).
template <typename Req>
Result<Page> PageOf(const PageRules& rules, const Req& req, int64_t now_ms) {
  PageRequest in;
  in.limit = req.limit();
  in.all = req.all();
  in.token = req.page_token();
  if constexpr (requires { req.since(); }) in.since = req.since();
  return ResolvePage(rules, in, now_ms);
}

// After the store's page: the token for the next one, or the refusal of "all" past the cap.
template <typename Row>
Status NextPage(const PageRules& rules, const Page& page, const Paged<Row>& rows,
                std::string* token) {
  if (!rows.more) return Status::Ok();
  if (page.all) return TooManyForOnePage(rules);
  *token = rules.keyed_by_name ? PageToken(rules.list, rows.next_after)
                               : PageToken(rules.list, rows.next_before);
  return Status::Ok();
}

}  // namespace

grpc::Status TuningServiceImpl::ApplyWorkload(grpc::ServerContext* ctx,
                                              const v1::ApplyWorkloadRequest* req,
                                              v1::ApplyWorkloadResponse* resp) {
  TUNECTL_AUTHORIZE(ApplyWorkload);
  const std::string source = req->source().empty() ? "workload" : req->source();
  auto spec = ParseWorkloadSpec(req->spec(), source);
  if (!spec.ok()) return ToGrpc(spec.status());
  if (Status st = CheckSpecToApply(*spec, source); !st.ok()) return ToGrpc(st);
  auto r = store_->ApplyWorkload(*spec, req->spec(), ActorOf(*who));
  if (!r.ok()) return ToGrpc(r.status());
  ToProto(r->workload, resp->mutable_workload());
  resp->set_action(r->action);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListWorkloads(grpc::ServerContext* ctx,
                                              const v1::ListWorkloadsRequest* req,
                                              v1::ListWorkloadsResponse* resp) {
  TUNECTL_AUTHORIZE(ListWorkloads);
  auto page = PageOf(kWorkloadPages, *req, clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  auto r = store_->ListWorkloads(*page, req->include_archived());
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = NextPage(kWorkloadPages, *page, *r, resp->mutable_next_page_token()); !st.ok())
    return ToGrpc(st);
  for (const auto& w : r->rows) ToProto(w, resp->add_workloads());
  return grpc::Status::OK;
}

namespace {

// The workload a request names: required (no "the only one" here: these verbs change or show
// one workload by name).
Status NeedWorkloadName(const std::string& name) {
  if (name.empty())
    return Status::InvalidArgument("name: missing; name the workload (tunectl workload list)");
  return Status::Ok();
}

}  // namespace

grpc::Status TuningServiceImpl::GetWorkload(grpc::ServerContext* ctx,
                                            const v1::GetWorkloadRequest* req,
                                            v1::WorkloadDetail* resp) {
  TUNECTL_AUTHORIZE(GetWorkload);
  if (Status st = NeedWorkloadName(req->name()); !st.ok()) return ToGrpc(st);
  auto d = store_->DescribeWorkload(req->name());
  if (!d.ok()) return ToGrpc(d.status());
  ToProto(*d, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::DeleteWorkload(grpc::ServerContext* ctx,
                                               const v1::DeleteWorkloadRequest* req,
                                               v1::Workload* resp) {
  TUNECTL_AUTHORIZE(DeleteWorkload);
  if (Status st = NeedWorkloadName(req->name()); !st.ok()) return ToGrpc(st);
  auto w = store_->DeleteWorkload(req->name(), ActorOf(*who));
  if (!w.ok()) return ToGrpc(w.status());
  ToProto(*w, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ArchiveWorkload(grpc::ServerContext* ctx,
                                                const v1::ArchiveWorkloadRequest* req,
                                                v1::Workload* resp) {
  TUNECTL_AUTHORIZE(ArchiveWorkload);
  if (Status st = NeedWorkloadName(req->name()); !st.ok()) return ToGrpc(st);
  auto w = store_->SetWorkloadArchived(req->name(), true, ActorOf(*who));
  if (!w.ok()) return ToGrpc(w.status());
  ToProto(*w, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::UnarchiveWorkload(grpc::ServerContext* ctx,
                                                  const v1::UnarchiveWorkloadRequest* req,
                                                  v1::Workload* resp) {
  TUNECTL_AUTHORIZE(UnarchiveWorkload);
  if (Status st = NeedWorkloadName(req->name()); !st.ok()) return ToGrpc(st);
  auto w = store_->SetWorkloadArchived(req->name(), false, ActorOf(*who));
  if (!w.ok()) return ToGrpc(w.status());
  ToProto(*w, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CreateBaseline(grpc::ServerContext* ctx,
                                               const v1::CreateBaselineRequest* req,
                                               v1::Baseline* resp) {
  TUNECTL_AUTHORIZE(CreateBaseline);
  auto id =
      store_->CreateBaseline(req->workload(), req->repeats(), ActorOf(*who), req->request_id());
  if (!id.ok()) return ToGrpc(id.status());
  dispatcher_->Notify();
  auto b = store_->GetBaseline(*id);
  if (!b.ok()) return ToGrpc(b.status());
  ToProto(*b, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetBaseline(grpc::ServerContext* ctx,
                                            const v1::GetBaselineRequest* req, v1::Baseline* resp) {
  TUNECTL_AUTHORIZE(GetBaseline);
  auto b = store_->GetBaseline(req->id());
  if (!b.ok()) return ToGrpc(b.status());
  ToProto(*b, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListBaselines(grpc::ServerContext* ctx,
                                              const v1::ListBaselinesRequest* req,
                                              v1::ListBaselinesResponse* resp) {
  TUNECTL_AUTHORIZE(ListBaselines);
  auto page = PageOf(kBaselinePages, *req, clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  auto r = store_->ListBaselines(req->workload(), *page);
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = NextPage(kBaselinePages, *page, *r, resp->mutable_next_page_token()); !st.ok())
    return ToGrpc(st);
  for (const auto& b : r->rows) ToProto(b, resp->add_baselines());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListRuns(grpc::ServerContext* ctx, const v1::ListRunsRequest* req,
                                         v1::ListRunsResponse* resp) {
  TUNECTL_AUTHORIZE(ListRuns);
  auto page = PageOf(kRunPages, *req, clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  if (req->baseline_id() < 0 || req->experiment_id() < 0)
    return ToGrpc(Status::InvalidArgument(
        std::string(req->baseline_id() < 0
                        ? "--baseline: " + std::to_string(req->baseline_id())
                        : "--experiment: " + std::to_string(req->experiment_id())) +
        " is not an id; allowed: a positive id"));
  auto runs = store_->ListRuns(req->baseline_id(), *page, req->experiment_id());
  if (!runs.ok()) return ToGrpc(runs.status());
  if (auto st = NextPage(kRunPages, *page, *runs, resp->mutable_next_page_token()); !st.ok())
    return ToGrpc(st);
  std::vector<RunRow*> ptrs;
  for (auto& r : runs->rows) ptrs.push_back(&r);
  if (auto st = ExplainWaits(*store_, schedules_, NowS(), ptrs); !st.ok()) return ToGrpc(st);
  for (const auto& r : runs->rows) ToProto(r, resp->add_runs());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetRun(grpc::ServerContext* ctx, const v1::GetRunRequest* req,
                                       v1::Run* resp) {
  TUNECTL_AUTHORIZE(GetRun);
  auto r = store_->GetRun(req->id());
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = ExplainWaits(*store_, schedules_, NowS(), {&*r}); !st.ok()) return ToGrpc(st);
  ToProto(*r, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetRunSamples(grpc::ServerContext* ctx,
                                              const v1::GetRunSamplesRequest* req,
                                              v1::RunSamples* resp) {
  TUNECTL_AUTHORIZE(GetRunSamples);
  auto max_points = ResolveMaxPoints(req->max_points());
  if (!max_points.ok()) return ToGrpc(max_points.status());
  auto r = store_->GetRunSamples(req->run_id(), req->attempt(), req->metric(), *max_points);
  if (!r.ok()) return ToGrpc(r.status());
  ToProto(*r, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::StreamRunLogs(grpc::ServerContext* ctx,
                                              const v1::StreamRunLogsRequest* req,
                                              grpc::ServerWriter<v1::RunLogChunk>* writer) {
  TUNECTL_AUTHORIZE(StreamRunLogs);
  const std::string rid = "run " + std::to_string(req->run_id());
  if (req->run_id() <= 0)
    return ToGrpc(Status::InvalidArgument("run: " + std::to_string(req->run_id()) +
                                          " is not a run id; allowed: a run id from tunectl run "
                                          "list"));
  if (req->tail_lines() < 0 || req->tail_lines() > kMaxTailLines)
    return ToGrpc(Status::InvalidArgument("tail: " + std::to_string(req->tail_lines()) +
                                          " lines is not allowed; allowed: 1.." +
                                          std::to_string(kMaxTailLines)));
  auto run = store_->GetRunHeader(req->run_id());
  if (!run.ok()) return ToGrpc(run.status());
  if (auto a = ResolveAttempt(req->run_id(), req->attempt(), run->attempt); !a.ok())
    return ToGrpc(a.status());
  const bool follow = req->follow();
  LogCursor cur;
  cur.pinned = req->attempt() != 0;
  cur.attempt = cur.pinned ? req->attempt() : run->attempt;
  cur.offset = req->tail_lines() > 0 ? -1 : 0;
  std::string last_note;
  auto note = [&](const std::string& n) {  // each distinct note once
    if (n == last_note) return true;
    last_note = n;
    v1::RunLogChunk c;
    c.set_note(n);
    c.set_attempt(cur.attempt);
    c.set_agent(run->agent);
    return writer->Write(c);
  };
  auto pause = [&](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  for (bool first = true;; first = false) {
    if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
    if (!first) {
      run = store_->GetRunHeader(req->run_id());
      if (!run.ok()) return ToGrpc(run.status());
    }
    const auto state = ParseRunState(run->state).value_or(RunState::kLost);
    if (FollowRetry(&cur, run->attempt) &&
        !note("attempt " + std::to_string(cur.attempt) + " of " + rid + " starts"))
      break;
    const RunState mine = AttemptState(cur, run->attempt, state);
    const bool started = cur.attempt > 0 && !run->agent.empty() && mine != RunState::kQueued;
    if (!started) {
      if (!IsActive(mine))
        return ToGrpc(Status::FailedPrecondition(rid + " never started (" + run->state +
                                                 "); it has no output"));
      if (!follow)
        return ToGrpc(
            Status::FailedPrecondition(rid + " is " + run->state +
                                       " and has no output yet; follow it until it starts: "
                                       "tunectl run logs " +
                                       std::to_string(req->run_id()) + " -f"));
      if (!note(rid + " is " + run->state + "; waiting for it to start")) break;
      pause(500);
      continue;
    }
    auto session = dispatcher_->SessionOf(run->agent);
    if (!session) {
      const std::string where =
          rid + "'s output is on agent " + run->agent + ", which is not connected to this server";
      if (follow && IsActive(mine)) {
        if (!note(where + "; waiting for it")) break;
        pause(1000);
        continue;
      }
      return ToGrpc(Status::Unavailable(where + "; its last stderr lines: tunectl run show " +
                                        std::to_string(req->run_id())));
    }
    v1::LogRequest lr;
    lr.set_run_id(req->run_id());
    lr.set_attempt(cur.attempt);
    lr.set_offset(cur.offset);
    lr.set_tail_lines(req->tail_lines());
    lr.set_max_bytes(kMaxLogChunkBytes);
    auto chunk = dispatcher_->logs().Fetch(*session, lr, std::chrono::seconds(10));
    if (!chunk.ok()) {
      if (follow && IsActive(mine)) {
        if (!note(chunk.status().message() + "; retrying")) break;
        pause(1000);
        continue;
      }
      return ToGrpc(chunk.status());
    }
    if (!chunk->error().empty()) {
      if (follow && IsActive(mine)) {  // e.g. a job whose output file is not created yet
        if (!note(chunk->error() + "; waiting")) break;
        pause(500);
        continue;
      }
      return ToGrpc(Status::FailedPrecondition(rid + " attempt " + std::to_string(cur.attempt) +
                                               " on agent " + run->agent + ": " +
                                               SanitizeUtf8(chunk->error(), 1024)));
    }
    if (!chunk->data().empty()) {
      v1::RunLogChunk out;
      out.set_attempt(cur.attempt);
      out.set_agent(run->agent);
      out.set_data(chunk->data());
      if (!writer->Write(out)) break;  // the client went away
    }
    // No progress (a line not ended yet) counts as the end for now: wait, or stop.
    const bool at_eof =
        chunk->next_offset() <= chunk->offset() || chunk->next_offset() >= chunk->size();
    cur.offset = std::max(chunk->next_offset(), chunk->offset());
    switch (NextLogStep(follow, cur, mine, state, at_eof)) {
      case LogNext::kReadMore: continue;
      case LogNext::kWait: pause(250); continue;
      case LogNext::kDone: return grpc::Status::OK;
    }
  }
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListAgents(grpc::ServerContext* ctx,
                                           const v1::ListAgentsRequest* req,
                                           v1::ListAgentsResponse* resp) {
  TUNECTL_AUTHORIZE(ListAgents);
  auto r = store_->ListAgents();
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& a : *r) ToProto(a, resp->add_agents());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::RemoveAgent(grpc::ServerContext* ctx,
                                            const v1::RemoveAgentRequest* req,
                                            v1::RemoveAgentResponse* resp) {
  TUNECTL_AUTHORIZE(RemoveAgent);
  if (req->name().empty())
    return ToGrpc(Status::InvalidArgument("name: missing; name the agent (tunectl agent list)"));
  auto r = store_->RemoveAgent(req->name(), ActorOf(*who));
  if (!r.ok()) return ToGrpc(r.status());
  if (r->requeued > 0) dispatcher_->Notify();
  ToProto(r->agent, resp->mutable_agent());
  resp->set_requeued(r->requeued);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CreateHypothesis(grpc::ServerContext* ctx,
                                                 const v1::CreateHypothesisRequest* req,
                                                 v1::Hypothesis* resp) {
  TUNECTL_AUTHORIZE(CreateHypothesis);
  HypothesisIn in;
  in.workload = req->workload();
  in.baseline_id = req->baseline_id();
  in.vary.assign(req->vary().begin(), req->vary().end());
  in.expect = req->expect();
  in.evidence = req->evidence();
  in.statement = req->statement();
  in.request_id = req->request_id();
  auto id = store_->CreateHypothesis(in, ActorOf(*who));
  if (!id.ok()) return ToGrpc(id.status());
  auto h = store_->GetHypothesis(*id);
  if (!h.ok()) return ToGrpc(h.status());
  ToProto(*h, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetHypothesis(grpc::ServerContext* ctx,
                                              const v1::GetHypothesisRequest* req,
                                              v1::Hypothesis* resp) {
  TUNECTL_AUTHORIZE(GetHypothesis);
  auto h = store_->GetHypothesis(req->id());
  if (!h.ok()) return ToGrpc(h.status());
  ToProto(*h, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListHypotheses(grpc::ServerContext* ctx,
                                               const v1::ListHypothesesRequest* req,
                                               v1::ListHypothesesResponse* resp) {
  TUNECTL_AUTHORIZE(ListHypotheses);
  auto page = PageOf(kHypothesisPages, *req, clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  auto r = store_->ListHypotheses(req->workload(), *page);
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = NextPage(kHypothesisPages, *page, *r, resp->mutable_next_page_token()); !st.ok())
    return ToGrpc(st);
  for (const auto& h : r->rows) ToProto(h, resp->add_hypotheses());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::RunExperiment(grpc::ServerContext* ctx,
                                              const v1::RunExperimentRequest* req,
                                              v1::Experiment* resp) {
  TUNECTL_AUTHORIZE(RunExperiment);
  ExperimentIn in;
  in.workload = req->workload();
  in.baseline_id = req->baseline_id();
  in.vary.assign(req->vary().begin(), req->vary().end());
  in.hypothesis_id = req->hypothesis_id();
  in.repeats = req->repeats();
  in.request_id = req->request_id();
  in.again = req->again();
  in.again_reason = req->again_reason();
  auto id = store_->CreateExperiment(in, ActorOf(*who));
  if (!id.ok()) return ToGrpc(id.status());
  dispatcher_->Notify();
  auto e = store_->GetExperiment(*id);
  if (!e.ok()) return ToGrpc(e.status());
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetExperiment(grpc::ServerContext* ctx,
                                              const v1::GetExperimentRequest* req,
                                              v1::Experiment* resp) {
  TUNECTL_AUTHORIZE(GetExperiment);
  auto e = store_->GetExperiment(req->id());
  if (!e.ok()) return ToGrpc(e.status());
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListExperiments(grpc::ServerContext* ctx,
                                                const v1::ListExperimentsRequest* req,
                                                v1::ListExperimentsResponse* resp) {
  TUNECTL_AUTHORIZE(ListExperiments);
  auto page = PageOf(kExperimentPages, *req, clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  auto state = ParseExperimentStateFilter(req->state());
  if (!state.ok()) return ToGrpc(state.status());
  auto r = store_->ListExperiments(req->workload(), *page, *state);
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = NextPage(kExperimentPages, *page, *r, resp->mutable_next_page_token()); !st.ok())
    return ToGrpc(st);
  for (const auto& e : r->rows) ToProto(e, resp->add_experiments());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::AdviseBaseline(grpc::ServerContext* ctx,
                                               const v1::AdviseBaselineRequest* req,
                                               v1::AdvisorReport* resp) {
  TUNECTL_AUTHORIZE(AdviseBaseline);
  auto in = store_->AdvisorInputOf(req->id());
  if (!in.ok()) return ToGrpc(in.status());
  in->workload_flag = "--workload " + in->spec.name;
  resp->set_baseline_id(req->id());
  resp->set_workload(in->spec.name);
  ToProto(Advise(*in), resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CancelBaseline(grpc::ServerContext* ctx,
                                               const v1::CancelBaselineRequest* req,
                                               v1::Baseline* resp) {
  TUNECTL_AUTHORIZE(CancelBaseline);
  auto b = store_->CancelBaseline(req->id(), ActorOf(*who));
  if (!b.ok()) return ToGrpc(b.status());
  dispatcher_->Notify();
  ToProto(*b, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CancelExperiment(grpc::ServerContext* ctx,
                                                 const v1::CancelExperimentRequest* req,
                                                 v1::Experiment* resp) {
  TUNECTL_AUTHORIZE(CancelExperiment);
  auto e = store_->CancelExperiment(req->id(), ActorOf(*who));
  if (!e.ok()) return ToGrpc(e.status());
  dispatcher_->Notify();
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::FreezeExperiment(grpc::ServerContext* ctx,
                                                 const v1::FreezeExperimentRequest* req,
                                                 v1::Experiment* resp) {
  TUNECTL_AUTHORIZE(FreezeExperiment);
  auto e = store_->FreezeExperiment(req->id(), req->force(), req->reason(), ActorOf(*who));
  if (!e.ok()) return ToGrpc(e.status());
  ToProto(*e, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetConfig(grpc::ServerContext* ctx, const v1::GetConfigRequest* req,
                                          v1::Config* resp) {
  TUNECTL_AUTHORIZE(GetConfig);
  auto c = store_->GetConfig(req->workload());
  if (!c.ok()) return ToGrpc(c.status());
  auto version = CheckConfigVersion(c->workload, req->version(),
                                    c->lineage.empty() ? 0 : c->lineage.back().version);
  if (!version.ok()) return ToGrpc(version.status());
  ToProto(*c, resp);
  if (*version)
    for (const auto& v : resp->lineage())
      if (v.version() == **version) *resp->mutable_selected() = v;
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListLog(grpc::ServerContext* ctx, const v1::ListLogRequest* req,
                                        v1::ListLogResponse* resp) {
  TUNECTL_AUTHORIZE(ListLog);
  auto page = PageOf(kLogPages, *req, clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  auto r = store_->ListLog(req->workload(), req->param(), *page);
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = NextPage(kLogPages, *page, *r, resp->mutable_next_page_token()); !st.ok())
    return ToGrpc(st);
  for (const auto& l : r->rows) ToProto(l, resp->add_entries());
  // Progress toward the workload's goal heads its log (none named and several: no goal line).
  if (auto goal = store_->GetGoal(req->workload()); goal.ok())
    resp->set_goal(goal->progress.summary);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::SetGoal(grpc::ServerContext* ctx, const v1::SetGoalRequest* req,
                                        v1::Goal* resp) {
  TUNECTL_AUTHORIZE(SetGoal);
  auto g = store_->SetGoal(req->workload(), req->metric(), req->target(),
                           {req->guardrails().begin(), req->guardrails().end()}, ActorOf(*who));
  if (!g.ok()) return ToGrpc(g.status());
  ToProto(*g, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::VerifyAudit(grpc::ServerContext* ctx,
                                            const v1::VerifyAuditRequest* req,
                                            v1::AuditReport* resp) {
  TUNECTL_AUTHORIZE(VerifyAudit);
  auto v = store_->VerifyAudit(req->against_seq(), req->against_hash());
  if (!v.ok()) return ToGrpc(v.status());
  ToProto(*v, resp);
  if (audit_key_) {
    resp->set_head_signature(
        audit_key_->SignHex(AuditHeadMessage(v->report.head_seq, v->report.head_hash)));
    resp->set_public_key(audit_key_->PublicKeyHex());
  }
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ExportAudit(grpc::ServerContext* ctx,
                                            const v1::ExportAuditRequest* req,
                                            v1::ExportAuditResponse* resp) {
  TUNECTL_AUTHORIZE(ExportAudit);
  auto page = ResolveChainPage({req->since(), req->until(), req->limit(), req->page_token()},
                               clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  auto r = store_->ExportAudit(*page);
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& row : r->rows) ToProto(row, resp->add_entries());
  if (r->more) resp->set_next_page_token(ChainPageToken(r->next));
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetGoal(grpc::ServerContext* ctx, const v1::GetGoalRequest* req,
                                        v1::Goal* resp) {
  TUNECTL_AUTHORIZE(GetGoal);
  auto g = store_->GetGoal(req->workload());
  if (!g.ok()) return ToGrpc(g.status());
  ToProto(*g, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CreateSchedule(grpc::ServerContext* ctx,
                                               const v1::CreateScheduleRequest* req,
                                               v1::Schedule* resp) {
  TUNECTL_AUTHORIZE(CreateSchedule);
  ScheduleRow row;
  row.name = req->name();
  row.window = req->window();
  row.cron = req->cron();
  row.tz = req->tz().empty() ? "UTC" : req->tz();
  row.max_agents = req->max_agents();
  row.on_window_end = req->on_window_end().empty() ? "finish" : req->on_window_end();
  if (Status st = CheckScheduleName(row.name); !st.ok()) return ToGrpc(st);
  if (req->max_agents() < 0)
    return ToGrpc(Status::InvalidArgument("--max-agents: " + std::to_string(req->max_agents()) +
                                          " is negative; 0 = no limit"));
  if (!req->duration().empty()) {
    if (!row.window.empty())
      return ToGrpc(
          Status::InvalidArgument("--duration goes with --cron; a --window has its own end"));
    auto d = ParseDurationMs(req->duration());
    if (!d.ok()) return ToGrpc(Status::InvalidArgument("--duration: " + d.status().message()));
    row.duration_s = *d / 1000;
  }
  auto built = BuildSchedule(row);  // validates window/cron/duration/tz; nothing stored on error
  if (!built.ok()) return ToGrpc(built.status());
  auto id = store_->CreateSchedule(row, ActorOf(*who));
  if (!id.ok()) return ToGrpc(id.status());
  row.id = *id;
  resp->set_id(row.id);
  resp->set_name(row.name);
  resp->set_window(row.window);
  resp->set_cron(row.cron);
  resp->set_duration_s(row.duration_s);
  resp->set_tz(row.tz);
  resp->set_max_agents(row.max_agents);
  resp->set_on_window_end(row.on_window_end);
  resp->set_status(schedules_.Describe(row, NowS()));
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListSchedules(grpc::ServerContext* ctx,
                                              const v1::ListSchedulesRequest* req,
                                              v1::ListSchedulesResponse* resp) {
  TUNECTL_AUTHORIZE(ListSchedules);
  auto rows = store_->ListSchedules();
  if (!rows.ok()) return ToGrpc(rows.status());
  for (const auto& r : *rows) {
    auto* s = resp->add_schedules();
    s->set_id(r.id);
    s->set_name(r.name);
    s->set_window(r.window);
    s->set_cron(r.cron);
    s->set_duration_s(r.duration_s);
    s->set_tz(r.tz);
    s->set_max_agents(r.max_agents);
    s->set_on_window_end(r.on_window_end);
    s->set_status(schedules_.Describe(r, NowS()));
    s->set_created_at(r.created_at);
    s->set_actor(r.actor);
  }
  return grpc::Status::OK;
}

Status TuningServiceImpl::FillBatch(const BatchRow& b, v1::Batch* out,
                                    const std::vector<ScheduleRow>* schedules) {
  out->set_id(b.id);
  out->set_workload(b.workload);
  out->set_baseline_id(b.baseline_id);
  out->set_schedule(b.schedule);
  out->set_state(b.state);
  out->set_correction(b.correction);
  out->set_actor(b.actor);
  out->set_created_at(b.created_at);
  out->set_members(b.members);
  for (const auto& [k, n] : b.members_by_state) (*out->mutable_members_by_state())[k] = n;
  for (const auto& [k, n] : b.members_by_decision) (*out->mutable_members_by_decision())[k] = n;
  // The batch's correction is made once, by the store, when the batch completes
  // (core::DecideBatch); this only shows it. Members still running or measured have none yet.
  for (const auto& e : b.experiments) {
    ToProto(e, out->add_experiments());
    const bool corrected = e.verdict && !e.verdict->correction.empty();
    out->add_adjusted_p(corrected ? e.verdict->adjusted_p.value_or(1.0)
                                  : (e.verdict ? e.verdict->PrimaryP() : 1.0));
    out->add_adjusted_decision(corrected ? e.decision : "");
  }
  if (b.state == "running" && b.schedule_id) {
    std::vector<ScheduleRow> loaded;
    if (!schedules) {
      auto rows = store_->ListSchedules();
      if (!rows.ok()) return rows.status();
      loaded = std::move(*rows);
      schedules = &loaded;
    }
    const auto running = b.members_by_state.find("running");
    const int waiting = running == b.members_by_state.end() ? 0 : running->second;
    for (const auto& r : *schedules)
      if (r.id == b.schedule_id)
        out->set_waiting(std::to_string(waiting) + " experiment(s) run only inside schedule " +
                         r.name + " (" + r.tz + "): " + schedules_.Describe(r, NowS()));
  }
  return Status::Ok();
}

grpc::Status TuningServiceImpl::CreateBatch(grpc::ServerContext* ctx,
                                            const v1::CreateBatchRequest* req, v1::Batch* resp) {
  TUNECTL_AUTHORIZE(CreateBatch);
  BatchIn in;
  in.workload = req->workload();
  in.baseline_id = req->baseline_id();
  in.vary.assign(req->vary().begin(), req->vary().end());
  in.schedule = req->schedule();
  in.repeats = req->repeats();
  in.correction = req->correction().empty() ? "holm" : req->correction();
  in.request_id = req->request_id();
  in.again = req->again();
  in.again_reason = req->again_reason();
  auto id = store_->CreateBatch(in, ActorOf(*who));
  if (!id.ok()) return ToGrpc(id.status());
  dispatcher_->Notify();
  auto b = store_->GetBatch(*id);
  if (!b.ok()) return ToGrpc(b.status());
  return ToGrpc(FillBatch(*b, resp));
}

grpc::Status TuningServiceImpl::GetBatch(grpc::ServerContext* ctx, const v1::GetBatchRequest* req,
                                         v1::Batch* resp) {
  TUNECTL_AUTHORIZE(GetBatch);
  auto b = store_->GetBatch(req->id());
  if (!b.ok()) return ToGrpc(b.status());
  return ToGrpc(FillBatch(*b, resp));
}

grpc::Status TuningServiceImpl::ListBatches(grpc::ServerContext* ctx,
                                            const v1::ListBatchesRequest* req,
                                            v1::ListBatchesResponse* resp) {
  TUNECTL_AUTHORIZE(ListBatches);
  auto page = PageOf(kBatchPages, *req, clock_->NowMs());
  if (!page.ok()) return ToGrpc(page.status());
  auto r = store_->ListBatches(*page);
  if (!r.ok()) return ToGrpc(r.status());
  if (auto st = NextPage(kBatchPages, *page, *r, resp->mutable_next_page_token()); !st.ok())
    return ToGrpc(st);
  auto schedules = store_->ListSchedules();  // once for the page, not once per batch
  if (!schedules.ok()) return ToGrpc(schedules.status());
  for (const auto& b : r->rows)
    if (auto st = FillBatch(b, resp->add_batches(), &*schedules); !st.ok()) return ToGrpc(st);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CancelBatch(grpc::ServerContext* ctx,
                                            const v1::CancelBatchRequest* req, v1::Batch* resp) {
  TUNECTL_AUTHORIZE(CancelBatch);
  auto b = store_->CancelBatch(req->id(), ActorOf(*who));
  if (!b.ok()) return ToGrpc(b.status());
  dispatcher_->Notify();
  return ToGrpc(FillBatch(*b, resp));
}

grpc::Status TuningServiceImpl::GetRegression(grpc::ServerContext* ctx,
                                              const v1::GetRegressionRequest* req,
                                              v1::Regression* resp) {
  TUNECTL_AUTHORIZE(GetRegression);
  auto points = ResolveSeriesPoints(req->limit(), req->all());
  if (!points.ok()) return ToGrpc(points.status());
  auto s = store_->GetRegressionSeries(req->workload(), *points);
  if (!s.ok()) return ToGrpc(s.status());
  if (req->all() && s->more_points) return ToGrpc(TooManyPoints());
  resp->set_more_points(s->more_points);
  resp->set_workload(s->workload);
  resp->set_config_version(s->config_version);
  resp->set_metric(s->metric.name);
  resp->set_unit(s->metric.unit);
  resp->set_better(BetterName(s->metric.better));
  std::vector<double> values;
  std::vector<std::string> labels;
  for (const auto& p : s->points) {
    auto* x = resp->add_points();
    x->set_run_id(p.run_id);
    x->set_at(p.at);
    x->set_value(p.value);
    values.push_back(p.value);
    labels.push_back("run " + std::to_string(p.run_id) + " at " + p.at);
  }
  const RegressionReport report = AnalyzeRegression(values, labels, s->metric);
  for (const auto& c : report.changes) {
    auto* x = resp->add_changes();
    const SeriesPoint& first = s->points[c.point.index];
    x->set_first_run_id(first.run_id);
    x->set_at(first.at);
    x->set_before(c.point.before);
    x->set_after(c.point.after);
    x->set_p(c.point.p);
    x->set_regression(c.regression);
  }
  resp->set_latest_regression(report.latest.regression);
  resp->set_latest_level(report.latest.level);
  resp->set_latest_bound(report.latest.bound);
  resp->set_latest_history(report.latest.history);
  for (const auto& a : report.alerts) resp->add_alerts(a);
  for (const auto& g : s->recorded) ToProto(g, resp->add_recorded());
  for (const auto& st : s->stability) ToProto(st, resp->add_stability());
  if (s->watch) FillWatch(*s->watch, resp->mutable_watch());
  return grpc::Status::OK;
}

void TuningServiceImpl::FillWatch(const WatchRow& w, v1::Watch* out) {
  out->set_id(w.id);
  out->set_workload(w.workload);
  out->set_schedule(w.schedule);
  out->set_repeats(w.repeats);
  out->set_state(w.state);
  out->set_checks(w.checks);
  out->set_actor(w.actor);
  out->set_created_at(w.created_at);
  if (w.state != "active") return;
  if (auto rows = store_->ListSchedules(); rows.ok())
    for (const auto& r : *rows)
      if (r.id == w.schedule_id) out->set_status(schedules_.Describe(r, NowS()));
}

grpc::Status TuningServiceImpl::RegressRun(grpc::ServerContext* ctx,
                                           const v1::RegressRunRequest* req,
                                           v1::StabilityRun* resp) {
  TUNECTL_AUTHORIZE(RegressRun);
  if (req->duration().empty())
    return ToGrpc(Status::InvalidArgument(
        "--duration: missing; how long the stability run lasts, e.g. --duration 2h"));
  auto d = ParseDurationMs(req->duration());
  if (!d.ok()) return ToGrpc(Status::InvalidArgument("--duration: " + d.status().message()));
  auto r = store_->CreateStabilityRun(req->workload(), *d / 1000, req->schedule(), ActorOf(*who),
                                      req->request_id());
  if (!r.ok()) return ToGrpc(r.status());
  dispatcher_->Notify();
  ToProto(*r, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::RegressSchedule(grpc::ServerContext* ctx,
                                                const v1::RegressScheduleRequest* req,
                                                v1::Watch* resp) {
  TUNECTL_AUTHORIZE(RegressSchedule);
  auto w = store_->CreateWatch(req->workload(), req->schedule(), req->repeats(), ActorOf(*who));
  if (!w.ok()) return ToGrpc(w.status());
  dispatcher_->Notify();
  FillWatch(*w, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::RegressStop(grpc::ServerContext* ctx,
                                            const v1::RegressStopRequest* req, v1::Watch* resp) {
  TUNECTL_AUTHORIZE(RegressStop);
  auto w = store_->StopWatch(req->workload(), ActorOf(*who));
  if (!w.ok()) return ToGrpc(w.status());
  FillWatch(*w, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ResolveRegression(grpc::ServerContext* ctx,
                                                  const v1::ResolveRegressionRequest* req,
                                                  v1::RecordedRegression* resp) {
  TUNECTL_AUTHORIZE(ResolveRegression);
  auto g = store_->ResolveRegression(req->id(), req->reason(), ActorOf(*who));
  if (!g.ok()) return ToGrpc(g.status());
  ToProto(*g, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::CreateToken(grpc::ServerContext* ctx,
                                            const v1::CreateTokenRequest* req, v1::Token* resp) {
  TUNECTL_AUTHORIZE(CreateToken);
  auto spec = ParseTokenSpec(req->name(), req->role(), req->agent());
  if (!spec.ok()) return ToGrpc(spec.status());
  auto bytes = RandomBytes(32);
  if (!bytes.ok()) return ToGrpc(bytes.status());
  const std::string secret = FormatToken(*bytes);
  auto t = store_->CreateToken(*spec, TokenHash(secret), ActorOf(*who));
  if (!t.ok()) return ToGrpc(t.status());
  ToProto(*t, resp);
  resp->set_secret(secret);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListTokens(grpc::ServerContext* ctx,
                                           const v1::ListTokensRequest* req,
                                           v1::ListTokensResponse* resp) {
  TUNECTL_AUTHORIZE(ListTokens);
  auto r = store_->ListTokens(req->include_revoked());
  if (!r.ok()) return ToGrpc(r.status());
  for (const auto& t : *r) ToProto(t, resp->add_tokens());
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::RevokeToken(grpc::ServerContext* ctx,
                                            const v1::RevokeTokenRequest* req, v1::Token* resp) {
  TUNECTL_AUTHORIZE(RevokeToken);
  auto t = store_->RevokeToken(req->name(), ActorOf(*who));
  if (!t.ok()) return ToGrpc(t.status());
  ToProto(*t, resp);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::WhoAmI(grpc::ServerContext* ctx, const v1::WhoAmIRequest* req,
                                       v1::WhoAmIResponse* resp) {
  TUNECTL_AUTHORIZE(WhoAmI);
  resp->set_name(who->name);
  resp->set_role(std::string(RoleName(who->role)));
  resp->set_actor(ActorOf(*who));
  resp->set_agent(who->agent);
  resp->set_tls(CallIsTls(ctx));
  resp->set_version(TUNECTL_VERSION);
  return grpc::Status::OK;
}

}  // namespace tunectl

// AgentService.Session on gRPC's callback API (see services.h for the threading model).
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "core/agent_messages.h"
#include "core/text.h"
#include "server/api/convert.h"
#include "server/api/services.h"

namespace tunectl {
namespace {

// A fixed set of threads running posted tasks in order. Stop() runs what is queued, then joins.
class Workers {
 public:
  explicit Workers(int n) {
    for (int i = 0; i < std::max(1, n); ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~Workers() { Stop(); }
  void Post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stop_) return;
      tasks_.push_back(std::move(f));
    }
    cv_.notify_one();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopped and drained
      auto f = std::move(tasks_.front());
      tasks_.pop_front();
      l.unlock();
      f();
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

std::vector<SampleIn> Samples(const v1::MetricBatch& b) {
  std::vector<SampleIn> out;
  out.reserve(static_cast<size_t>(b.samples_size()));
  for (const auto& s : b.samples()) out.push_back({s.metric(), s.step(), s.value(), s.line_no()});
  return out;
}

v1::ServerMessage AckOf(int64_t run_id, int attempt, int64_t seq) {
  v1::ServerMessage m;
  m.mutable_ack()->set_run_id(run_id);
  m.mutable_ack()->set_attempt(attempt);
  m.mutable_ack()->set_seq(seq);
  return m;
}

}  // namespace

struct AgentServiceImpl::Shared {
  Shared(Store* s, Dispatcher* d, Authorizer* a, AgentServiceOptions o, LogFn l)
      : store(s),
        dispatcher(d),
        auth(a),
        opts(std::move(o)),
        log(std::move(l)),
        workers(opts.workers) {}
  Store* store;
  Dispatcher* dispatcher;
  Authorizer* auth;
  const AgentServiceOptions opts;
  LogFn log;
  std::atomic<int64_t> next_session{1};
  std::mutex live_mu;
  std::set<std::string> live_sessions;  // of this server process, streams open
  Workers workers;                      // last: stopped (drained) first
};

namespace {

class SessionReactor final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage>,
                             public AgentSession,
                             public std::enable_shared_from_this<SessionReactor> {
 public:
  SessionReactor(std::shared_ptr<AgentServiceImpl::Shared> sh, grpc::CallbackServerContext* ctx)
      : sh_(std::move(sh)), ctx_(ctx) {}

  void Begin() {
    self_ = shared_from_this();  // until OnDone
    std::lock_guard<std::mutex> g(mu_);
    StartRead(&in_);
  }

  bool Send(const v1::ServerMessage& m) override {
    std::lock_guard<std::mutex> g(mu_);
    if (finishing_) return false;
    if (out_.size() >= sh_->opts.max_queue) {
      CloseLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                               "the agent does not read what the server sends (" +
                                   std::to_string(out_.size()) + " messages waiting); reconnect"));
      return false;
    }
    out_.push_back(m);
    if (!writing_) {
      writing_ = true;
      StartWrite(&out_.front());
    }
    return true;
  }

  void Close(const std::string& why) override {
    silent_ = why.rfind("no heartbeat", 0) == 0;
    std::lock_guard<std::mutex> g(mu_);
    CloseLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent closed its side, or the stream broke
      std::lock_guard<std::mutex> g(mu_);
      CloseLocked(grpc::Status::OK);
      return;
    }
    Touch();
    if (registered_ && in_.has_heartbeat()) {  // memory only: no database, no worker
      const bool was_busy = busy;
      const bool was_unhealthy = !unhealthy().empty();
      Beat(in_.heartbeat().busy(), SanitizeUtf8(in_.heartbeat().unhealthy(), kMaxUnhealthyBytes));
      // Fewer runs than slots while the dispatcher thinks it full: a slot freed in a way the
      // server did not see (a run given up on); the next pass asks for it again.
      if (in_.heartbeat().running() < slots && !MayHaveRoom()) {
        SlotMayBeFree();
        sh_->dispatcher->Notify();
      }
      if (was_busy != busy || was_unhealthy != !unhealthy().empty()) {
        sh_->log(LogLevel::kInfo, "agent " + name +
                                      (busy                   ? " is busy (idle probe fails)"
                                       : !unhealthy().empty() ? " is unhealthy: " + unhealthy()
                                                              : " is idle and healthy again"));
        if (!busy && unhealthy().empty()) sh_->dispatcher->Notify();
      }
      ReadNext();
      return;
    }
    if (registered_ && in_.has_log_chunk()) {  // an answer for `run logs`: never stored
      sh_->dispatcher->logs().Deliver(this, std::move(*in_.mutable_log_chunk()));
      ReadNext();
      return;
    }
    auto self = shared_from_this();
    awaiting_store = true;  // its heartbeats are not read until this is handled
    sh_->workers.Post([self, msg = std::move(in_)]() mutable {
      const bool next = self->Handle(msg);
      self->Touch();
      self->awaiting_store = false;
      if (next) self->ReadNext();
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    out_.pop_front();
    if (!ok || finishing_) {
      writing_ = false;
      if (!finishing_) {  // the stream broke under the write
        finishing_ = true;
        final_ = grpc::Status::OK;
      }
      if (!finished_) {
        finished_ = true;
        Finish(final_);
      }
      return;
    }
    if (out_.empty()) {
      writing_ = false;
    } else {
      StartWrite(&out_.front());
    }
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> g(mu_);
    CloseLocked(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    // Forget the session at once, then record the disconnect off gRPC's thread.
    auto self = std::move(self_);
    if (registered_) {
      sh_->dispatcher->Unregister(this);
      std::lock_guard<std::mutex> g(sh_->live_mu);
      sh_->live_sessions.erase(session_id);
    }
    if (!registered_) return;
    sh_->workers.Post([self] {
      auto& sh = *self->sh_;
      // A session closed because the agent went silent keeps its last beat: its runs are
      // requeued a timeout after it, not after this close.
      if (auto st = sh.store->DisconnectAgent(self->agent_id, self->session_id, !self->silent_);
          !st.ok())
        sh.log(LogLevel::kWarn, "agent " + self->name +
                                    ": cannot record the disconnect (it expires after "
                                    "--agent-timeout instead): " +
                                    st.ToString());
      sh.log(LogLevel::kInfo, "agent " + self->name + " disconnected");
    });
  }

 private:
  // Ends the stream once: at once, or after the write in flight (cancelled so it cannot hang
  // on a peer that does not read). Under mu_.
  void CloseLocked(grpc::Status st) {
    if (finishing_) return;
    finishing_ = true;
    final_ = std::move(st);
    if (registered_) sh_->dispatcher->Unregister(this);  // no new work from now on
    if (writing_) {
      ctx_->TryCancel();  // OnWriteDone(false) finishes
      return;
    }
    finished_ = true;
    Finish(final_);
  }

  void ReadNext() {
    std::lock_guard<std::mutex> g(mu_);
    if (!finishing_) StartRead(&in_);
  }

  void Fail(const grpc::Status& st) {
    std::lock_guard<std::mutex> g(mu_);
    CloseLocked(st);
  }

  // On a worker. Returns whether to read the next message.
  bool Handle(const v1::AgentMessage& in) {
    if (!registered_) return Hello(in);
    Status st;
    switch (in.msg_case()) {
      case v1::AgentMessage::kHeartbeat:  // taken in OnReadDone; here only before the Welcome
        Beat(in.heartbeat().busy(), SanitizeUtf8(in.heartbeat().unhealthy(), kMaxUnhealthyBytes));
        return true;
      case v1::AgentMessage::kRunStarted: {
        const auto& m = in.run_started();
        RunStartInfo info;
        info.node = SanitizeUtf8(m.node(), kMaxAgentNameBytes);
        info.slot = m.slot() < 0 ? -1 : m.slot();
        info.external_id = SanitizeUtf8(m.external_id(), kMaxAgentNameBytes);
        info.placement = SanitizeUtf8(m.placement(), kMaxUnhealthyBytes);
        st = sh_->store->MarkRunStarted(m.run_id(), m.attempt(), agent_id, info);
        break;
      }
      case v1::AgentMessage::kRunPending: {
        const auto& m = in.run_pending();
        st = sh_->store->MarkRunPending(m.run_id(), m.attempt(), agent_id,
                                        SanitizeUtf8(m.external_id(), kMaxAgentNameBytes),
                                        SanitizeUtf8(m.reason(), kMaxUnhealthyBytes));
        break;
      }
      case v1::AgentMessage::kMetricBatch: {
        const auto& b = in.metric_batch();
        auto stored =
            sh_->store->StoreMetricBatch(b.run_id(), b.attempt(), b.seq(), Samples(b), agent_id);
        if (!stored.ok() && (stored.status().code() == Status::Code::kInvalidArgument ||
                             stored.status().code() == Status::Code::kFailedPrecondition)) {
          // Refused, never stored; acked so that a stale agent drops it from its outbox.
          sh_->log(LogLevel::kWarn, "agent " + name + ": " + stored.status().message());
        } else if (!stored.ok()) {
          st = stored.status();
          break;
        }
        Send(AckOf(b.run_id(), b.attempt(), b.seq()));
        break;
      }
      case v1::AgentMessage::kRunFinished: {
        const auto& f = in.run_finished();
        // The job's bytes become valid text here, once: PostgreSQL refuses invalid UTF-8 and NUL.
        RunResult res{f.exit_code(),
                      f.signal(),
                      SanitizeUtf8(f.reason(), kMaxRunReasonBytes),
                      SanitizeUtf8(f.stderr_tail(), kMaxStderrTailBytes),
                      f.batches(),
                      f.lines(),
                      f.duration_reached(),
                      f.infra_failure(),
                      {}};
        for (const auto& [metric, note] : f.metric_notes()) {
          if (res.metric_notes.size() >= kMaxAgentLabels) break;
          res.metric_notes[SanitizeUtf8(metric, kMaxAgentTextBytes)] =
              SanitizeUtf8(note, kMaxRunReasonBytes);
        }
        if (f.infra_failure())
          // Not here again before the agent says it is healthy: set before the store requeues the
          // run, whose NOTIFY may start a dispatch pass before this thread goes on.
          Beat(busy.load(),
               "run " + std::to_string(f.run_id()) + " could not run here: " + res.reason);
        st = sh_->store->FinishRun(f.run_id(), f.attempt(), res, "agent:" + name, agent_id);
        if (!st.ok() && st.code() == Status::Code::kFailedPrecondition)
          sh_->log(LogLevel::kWarn, "agent " + name + ": " + st.message());
        if (!st.ok() && (st.code() == Status::Code::kNotFound ||
                         st.code() == Status::Code::kFailedPrecondition))
          st = Status::Ok();
        if (st.ok()) {
          if (f.infra_failure()) {
            sh_->log(LogLevel::kWarn, "agent " + name + " could not run run " +
                                          std::to_string(f.run_id()) + ": " + res.reason +
                                          "; it is retried elsewhere");
          }
          Send(AckOf(f.run_id(), f.attempt(), f.seq()));
          // A slot is free: its next run is claimed now, not at the dispatcher's next pass.
          sh_->dispatcher->ClaimFreedSlot(shared_from_this());
        }
        break;
      }
      case v1::AgentMessage::kHello:
        Fail({grpc::StatusCode::INVALID_ARGUMENT, "a second Hello on one session"});
        return false;
      default: break;  // newer agent message kinds are ignored by this server
    }
    if (!st.ok()) {
      // Not acknowledged: end the session so the agent reconnects and resends what is unacked.
      sh_->log(LogLevel::kError, "agent " + name + ": " + st.ToString());
      Fail(ToGrpc(Status::Unavailable("server could not store agent data: " + st.message())));
      return false;
    }
    return true;
  }

  bool Hello(const v1::AgentMessage& in) {
    if (!in.has_hello()) {
      Fail({grpc::StatusCode::INVALID_ARGUMENT, "the first message of a session must be Hello"});
      return false;
    }
    const v1::Hello& h = in.hello();
    LabelMap hello_labels(h.labels().begin(), h.labels().end());
    if (Status st = CheckAgentHello(h.name(), h.slots(), hello_labels); !st.ok()) {
      Fail(ToGrpc(st));
      return false;
    }
    // Nobody receives an Assign without a token that may open a session under this name.
    auto who = sh_->auth->Check(ctx_, kAgentSessionMethod);
    if (!who.ok()) {
      Fail(ToGrpc(who.status()));
      return false;
    }
    if (Status st = CheckAgentBinding(*who, h.name()); !st.ok()) {
      Fail(ToGrpc(sh_->auth->Refuse(st, ActorOf(*who), kAgentSessionMethod, ctx_->peer())));
      return false;
    }
    const std::string sid = sh_->opts.server_id + "/" + std::to_string(sh_->next_session++);
    AgentNameClaim claim;
    claim.instance = h.instance();
    claim.host = h.host();
    claim.live_ms = sh_->opts.agent_timeout_ms;
    const std::string mine = sh_->opts.server_id + "/";
    claim.session_live = [&](const std::string& other) {
      if (other.rfind(mine, 0) != 0) return true;  // another server's: live while seen recently
      std::lock_guard<std::mutex> g(sh_->live_mu);
      return sh_->live_sessions.count(other) > 0;
    };
    AgentNodeState node;
    node.busy = h.busy();
    node.unhealthy = SanitizeUtf8(h.unhealthy(), kMaxUnhealthyBytes);
    node.isolated_slots = h.isolated_slots();
    node.executor = SanitizeUtf8(h.executor(), kMaxAgentNameBytes);
    auto id =
        sh_->store->RegisterAgent(h.name(), hello_labels, h.slots(), h.version(), sid, claim, node);
    if (!id.ok()) {
      sh_->log(LogLevel::kWarn, "agent " + SanitizeUtf8(h.name(), kMaxAgentNameBytes) + " on " +
                                    SanitizeUtf8(h.host(), kMaxAgentNameBytes) +
                                    " refused: " + id.status().message());
      Fail(ToGrpc(id.status()));
      return false;
    }
    std::vector<RunRef> active;
    for (const auto& r : h.active_runs()) active.push_back({r.run_id(), r.attempt()});
    auto rec = sh_->store->ReconcileAgentRuns(*id, active);
    if (!rec.ok()) {
      Fail(ToGrpc(rec.status()));
      return false;
    }
    agent_id = *id;
    name = h.name();
    session_id = sid;
    labels = hello_labels;
    slots = h.slots();
    Beat(node.busy, node.unhealthy);
    {
      std::lock_guard<std::mutex> g(sh_->live_mu);
      sh_->live_sessions.insert(sid);
    }
    v1::ServerMessage welcome;
    welcome.mutable_welcome()->set_agent_id(*id);
    welcome.mutable_welcome()->set_heartbeat_interval_ms(sh_->opts.heartbeat_interval_ms);
    for (const auto& r : rec->stop) {  // attempts the server gave up on while it was away
      auto* ref = welcome.mutable_welcome()->add_cancel_runs();
      ref->set_run_id(r.run_id);
      ref->set_attempt(r.attempt);
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      if (finishing_) return false;  // the stream ended meanwhile: OnDone does not know it
      registered_ = true;
    }
    if (!Send(welcome)) return false;
    sh_->log(
        LogLevel::kInfo,
        "agent " + name + " connected (" + FormatLabels(labels) + ", " + std::to_string(slots) +
            " slots, " + std::to_string(active.size()) + " active runs" +
            (rec->stop.empty() ? "" : ", " + std::to_string(rec->stop.size()) + " to stop") + ")");
    sh_->dispatcher->Register(shared_from_this());
    std::lock_guard<std::mutex> g(mu_);
    if (finishing_) sh_->dispatcher->Unregister(this);  // closed while registering
    return true;
  }

  std::shared_ptr<AgentServiceImpl::Shared> sh_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<SessionReactor> self_;
  v1::AgentMessage in_;
  std::atomic<bool> registered_{false};
  std::atomic<bool> silent_{false};
  std::mutex mu_;  // guards the stream's operations and what follows
  std::deque<v1::ServerMessage> out_;
  bool writing_ = false, finishing_ = false, finished_ = false;
  grpc::Status final_;
};

}  // namespace

AgentServiceImpl::AgentServiceImpl(Store* store, Dispatcher* dispatcher, Authorizer* auth,
                                   AgentServiceOptions opts, LogFn log)
    : shared_(std::make_shared<Shared>(store, dispatcher, auth, std::move(opts), std::move(log))) {}

AgentServiceImpl::~AgentServiceImpl() {
  shared_->workers.Stop();
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage>* AgentServiceImpl::Session(
    grpc::CallbackServerContext* ctx) {
  auto r = std::make_shared<SessionReactor>(shared_, ctx);
  r->Begin();
  return r.get();
}

}  // namespace tunectl

#include <mutex>

#include "core/text.h"
#include "server/api/convert.h"
#include "server/api/services.h"

namespace tunectl {
namespace {

class GrpcSession : public AgentSession {
 public:
  explicit GrpcSession(grpc::ServerReaderWriter<v1::ServerMessage, v1::AgentMessage>* s)
      : stream_(s) {}
  bool Send(const v1::ServerMessage& m) override {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_) return false;
    if (!stream_->Write(m)) closed_ = true;
    return !closed_;
  }
  void Close() {
    std::lock_guard<std::mutex> g(mu_);
    closed_ = true;
  }

 private:
  std::mutex mu_;
  bool closed_ = false;
  grpc::ServerReaderWriter<v1::ServerMessage, v1::AgentMessage>* stream_;
};

std::vector<SampleIn> Samples(const v1::MetricBatch& b) {
  std::vector<SampleIn> out;
  out.reserve(static_cast<size_t>(b.samples_size()));
  for (const auto& s : b.samples()) out.push_back({s.metric(), s.step(), s.value(), s.line_no()});
  return out;
}

}  // namespace

grpc::Status AgentServiceImpl::Session(
    grpc::ServerContext*, grpc::ServerReaderWriter<v1::ServerMessage, v1::AgentMessage>* stream) {
  v1::AgentMessage in;
  if (!stream->Read(&in)) return grpc::Status::OK;
  if (!in.has_hello())
    return {grpc::StatusCode::INVALID_ARGUMENT, "the first message of a session must be Hello"};
  const v1::Hello h = in.hello();  // a copy: `in` is reused by the read loop below
  if (h.name().empty())
    return {grpc::StatusCode::INVALID_ARGUMENT, "Hello.name: empty; every agent needs a name"};
  if (h.slots() < 0 || h.slots() > 4096)
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "Hello.slots: " + std::to_string(h.slots()) + " is out of range; allowed 0..4096"};
  LabelMap labels(h.labels().begin(), h.labels().end());
  const std::string session_id = opts_.server_id + "/" + std::to_string(next_session_++);
  AgentNameClaim claim;
  claim.instance = h.instance();
  claim.host = h.host();
  claim.live_ms = opts_.agent_timeout_ms;
  const std::string mine = opts_.server_id + "/";
  claim.session_live = [&](const std::string& sid) {
    if (sid.rfind(mine, 0) != 0) return true;  // another server's: live while seen recently
    std::lock_guard<std::mutex> g(live_mu_);
    return live_sessions_.count(sid) > 0;
  };
  auto id = store_->RegisterAgent(h.name(), labels, h.slots(), h.version(), session_id, claim);
  if (!id.ok()) {
    log_(LogLevel::kWarn,
         "agent " + h.name() + " on " + h.host() + " refused: " + id.status().message());
    return ToGrpc(id.status());
  }
  {
    std::lock_guard<std::mutex> g(live_mu_);
    live_sessions_.insert(session_id);
  }
  struct Forget {  // the session is dead for name claims the moment its stream ends
    AgentServiceImpl* self;
    std::string sid;
    ~Forget() {
      std::lock_guard<std::mutex> g(self->live_mu_);
      self->live_sessions_.erase(sid);
    }
  } forget{this, session_id};
  std::vector<RunRef> active;
  for (const auto& r : h.active_runs()) active.push_back({r.run_id(), r.attempt()});
  auto requeued = store_->ReconcileAgentRuns(*id, active);
  if (!requeued.ok()) return ToGrpc(requeued.status());

  auto session = std::make_shared<GrpcSession>(stream);
  session->agent_id = *id;
  session->name = h.name();
  session->labels = labels;
  session->slots = h.slots();
  session->busy = h.busy();
  if (auto st = store_->TouchAgent(*id, h.busy()); !st.ok())
    log_(LogLevel::kWarn, "agent " + h.name() + ": cannot record its heartbeat: " + st.ToString());
  v1::ServerMessage welcome;
  welcome.mutable_welcome()->set_agent_id(*id);
  welcome.mutable_welcome()->set_heartbeat_interval_ms(opts_.heartbeat_interval_ms);
  if (!session->Send(welcome)) return grpc::Status::OK;
  log_(LogLevel::kInfo, "agent " + h.name() + " connected (" + FormatLabels(labels) + ", " +
                            std::to_string(h.slots()) + " slots, " + std::to_string(active.size()) +
                            " active runs)");
  dispatcher_->Register(session);

  grpc::Status result = grpc::Status::OK;
  while (stream->Read(&in)) {
    Status st;
    v1::ServerMessage ack;
    switch (in.msg_case()) {
      case v1::AgentMessage::kHeartbeat:
        if (session->busy != in.heartbeat().busy()) {
          log_(LogLevel::kInfo,
               "agent " + h.name() +
                   (in.heartbeat().busy() ? " is busy (idle probe fails)" : " is idle again"));
          session->busy = in.heartbeat().busy();
          if (!session->busy) dispatcher_->Notify();
        }
        st = store_->TouchAgent(*id, in.heartbeat().busy());
        break;
      case v1::AgentMessage::kRunStarted:
        st = store_->MarkRunStarted(in.run_started().run_id(), in.run_started().attempt(), *id);
        break;
      case v1::AgentMessage::kMetricBatch: {
        const auto& b = in.metric_batch();
        auto stored = store_->StoreMetricBatch(b.run_id(), b.attempt(), b.seq(), Samples(b), *id);
        if (!stored.ok() && (stored.status().code() == Status::Code::kInvalidArgument ||
                             stored.status().code() == Status::Code::kFailedPrecondition)) {
          // Refused, never stored; acked so that a stale agent drops it from its outbox.
          log_(LogLevel::kWarn, "agent " + h.name() + ": " + stored.status().message());
        } else if (!stored.ok()) {
          st = stored.status();
          break;
        }
        ack.mutable_ack()->set_run_id(b.run_id());
        ack.mutable_ack()->set_attempt(b.attempt());
        ack.mutable_ack()->set_seq(b.seq());
        break;
      }
      case v1::AgentMessage::kRunFinished: {
        const auto& f = in.run_finished();
        // The job's bytes become valid text here, once: PostgreSQL refuses invalid UTF-8 and NUL.
        RunResult res{f.exit_code(),
                      f.signal(),
                      SanitizeUtf8(f.reason(), 4096),
                      SanitizeUtf8(f.stderr_tail(), 8192),
                      f.batches(),
                      f.lines(),
                      f.duration_reached()};
        st = store_->FinishRun(f.run_id(), f.attempt(), res, "agent:" + h.name(), *id);
        if (!st.ok() && st.code() == Status::Code::kFailedPrecondition)
          log_(LogLevel::kWarn, "agent " + h.name() + ": " + st.message());
        if (!st.ok() && (st.code() == Status::Code::kNotFound ||
                         st.code() == Status::Code::kFailedPrecondition))
          st = Status::Ok();
        if (st.ok()) {
          ack.mutable_ack()->set_run_id(f.run_id());
          ack.mutable_ack()->set_attempt(f.attempt());
          ack.mutable_ack()->set_seq(f.seq());
          dispatcher_->Notify();
        }
        break;
      }
      default: break;  // newer agent message kinds are ignored by this server
    }
    if (!st.ok()) {
      // Not acknowledged: end the session so the agent reconnects and resends what is unacked.
      log_(LogLevel::kError, "agent " + h.name() + ": " + st.ToString());
      result = ToGrpc(Status::Unavailable("server could not store agent data: " + st.message()));
      break;
    }
    if (ack.has_ack() && !session->Send(ack)) break;
  }
  session->Close();
  dispatcher_->Unregister(session.get());
  if (auto st = store_->DisconnectAgent(*id, session_id); !st.ok())
    log_(LogLevel::kWarn, "agent " + h.name() +
                              ": cannot record the disconnect (it expires after "
                              "--agent-timeout instead): " +
                              st.ToString());
  log_(LogLevel::kInfo, "agent " + h.name() + " disconnected");
  return result;
}

}  // namespace tunectl

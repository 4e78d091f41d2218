#include "bench/loadgen/fleet.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include "bench/loadgen/harness.h"
#include "sys/endpoint_grpc.h"

namespace tunectl::loadgen {

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

SampleRow SampleAt(int64_t seq, int i, int samples, int metrics) {
  SampleRow r;
  metrics = std::max(1, metrics);
  r.metric = i % metrics;
  const int64_t per_metric = (samples + metrics - 1) / metrics;
  r.step = (seq - 1) * per_metric + i / metrics + 1;
  // A steady level with a little deterministic wobble: the run's analysis finds a steady state.
  r.value = 1000.0 + 10.0 * std::sin(static_cast<double>(r.step) * 0.7 + r.metric);
  r.line_no = (seq - 1) * samples + i + 1;
  return r;
}

// One simulated agent: its channel, its stream and its runs. Its state is guarded by the fleet's
// mutex; gRPC never runs a reaction inline from a Start* call (can_inline = false), so Start*
// may be called with that mutex held.
class SimAgent : public grpc::ClientBidiReactor<v1::AgentMessage, v1::ServerMessage> {
 public:
  SimAgent(Fleet* fleet, int index, AgentSpec spec, const std::string& server)
      : fleet_(fleet), index_(index), spec_(std::move(spec)), rng_(std::random_device{}()) {
    grpc::ChannelArguments args;
    // Its own subchannel, so its own TCP connection, as a real agent on its own node has.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("tunectl.loadgen.agent", index);
    channel_ = grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::AgentService::NewStub(channel_);
  }

  const AgentSpec& spec() const { return spec_; }

  // Under the fleet's lock.
  void Start() {
    v1::AgentMessage m;
    auto* h = m.mutable_hello();
    h->set_name(spec_.name);
    for (const auto& [k, v] : spec_.labels) (*h->mutable_labels())[k] = v;
    h->set_slots(spec_.slots);
    h->set_version("loadgen");
    h->set_instance("loadgen:" + std::to_string(getpid()) + ":" + spec_.name);
    h->set_host("loadgen");
    AddToken(ctx_, BenchToken());
    stub_->async()->Session(&ctx_, this);
    AddHold();  // writes come from the timer thread too: the stream lives until Close
    StartRead(&in_);
    Write(std::move(m));
    StartCall();
  }

  // Under the fleet's lock: no more writes; the server ends the stream when it reads the end.
  void Close() {
    if (closing_) return;
    closing_ = true;
    if (!dead_) {
      if (writing_)
        writes_done_pending_ = true;
      else
        StartWritesDone();
    }
    ReleaseHold();
  }
  void Cancel() { ctx_.TryCancel(); }
  bool done() const { return done_; }

  void OnReadDone(bool ok) override {
    std::lock_guard<std::mutex> g(fleet_->mu_);
    if (!ok) {
      dead_ = true;
      ReleaseHold();
      fleet_->cv_.notify_all();
      return;
    }
    const Time now = Clock::now();
    switch (in_.msg_case()) {
      case v1::ServerMessage::kWelcome: OnWelcome(in_.welcome(), now); break;
      case v1::ServerMessage::kAssign: OnAssign(in_.assign(), now); break;
      case v1::ServerMessage::kCancel: OnCancel(in_.cancel()); break;
      case v1::ServerMessage::kAck: OnAck(in_.ack(), now); break;
      default: break;
    }
    StartRead(&in_);
    fleet_->cv_.notify_all();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(fleet_->mu_);
    out_.pop_front();
    writing_ = false;
    if (!ok) dead_ = true;
    if (dead_) {
      out_.clear();
      return;
    }
    if (!out_.empty()) {
      writing_ = true;
      StartWrite(&out_.front());
    } else if (writes_done_pending_) {
      writes_done_pending_ = false;
      StartWritesDone();
    }
  }

  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> g(fleet_->mu_);
    done_ = true;
    dead_ = true;
    ++fleet_->view_.done;
    if (!closing_)
      fleet_->view_.errors.push_back(spec_.name + ": stream ended (" +
                                     std::to_string(static_cast<int>(s.error_code())) + " " +
                                     s.error_message() + ")");
    fleet_->cv_.notify_all();
  }

  // Timer callbacks, under the fleet's lock.
  void Heartbeat() {
    if (dead_ || closing_) return;
    v1::AgentMessage m;
    m.mutable_heartbeat()->set_running(static_cast<int>(active_.size()));
    Write(std::move(m));
    ++fleet_->view_.heartbeats;
    fleet_->At(Clock::now() + std::chrono::milliseconds(heartbeat_ms_), [this] {
      std::lock_guard<std::mutex> g(fleet_->mu_);
      Heartbeat();
    });
  }
  void FinishDue(int64_t run_id, int attempt) {
    auto it = active_.find(run_id);
    if (it == active_.end() || it->second.attempt != attempt) return;
    MaybeFinish(run_id, Clock::now());
  }
  void ReleaseStart(Time now) {
    std::vector<int64_t> ids;
    for (auto& [id, a] : active_)
      if (a.at_start_gate) ids.push_back(id);
    for (int64_t id : ids) {
      active_[id].at_start_gate = false;
      Record(id).at_start_gate = false;
      Begin(id, now);
    }
  }
  void ReleaseFinish(Time now) {
    std::vector<int64_t> ids;
    for (auto& [id, a] : active_) {
      a.finish_released = true;
      ids.push_back(id);
    }
    for (int64_t id : ids) MaybeFinish(id, now);
  }

 private:
  struct Active {
    int attempt = 0;
    JobShape shape;
    Time finish_due{};
    bool at_start_gate = false;
    bool finish_released = false;
    bool finish_timer = false;
    int64_t finish_seq = 0;  // set once RunFinished is sent
    int sent = 0, acked = 0;
    int metrics = 1;
  };

  RunRecord& Record(int64_t run_id) {
    return fleet_->view_.runs[{run_id, active_[run_id].attempt}];
  }

  void ReleaseHold() {
    if (hold_released_) return;
    hold_released_ = true;
    RemoveHold();
  }

  void Write(v1::AgentMessage m) {
    if (dead_ || closing_) return;
    out_.push_back(std::move(m));  // a deque keeps the front's address while it grows
    if (!writing_) {
      writing_ = true;
      StartWrite(&out_.front());
    }
  }

  void OnWelcome(const v1::Welcome& w, Time) {
    if (welcomed_) return;
    welcomed_ = true;
    ++fleet_->view_.welcomed;
    if (w.heartbeat_interval_ms() > 0) heartbeat_ms_ = w.heartbeat_interval_ms();
    // A random phase, as agents started at different moments have.
    std::uniform_int_distribution<int> phase(1, heartbeat_ms_);
    fleet_->At(Clock::now() + std::chrono::milliseconds(phase(rng_)), [this] {
      std::lock_guard<std::mutex> g(fleet_->mu_);
      Heartbeat();
    });
  }

  void OnAssign(const v1::Assign& a, Time now) {
    FleetView& v = fleet_->view_;
    if (auto held = active_.find(a.run_id()); held != active_.end()) {
      if (held->second.attempt >= a.attempt()) {
        ++v.duplicate_assigns;  // a repeated Assign of an attempt held here
        return;
      }
      Record(a.run_id()).superseded = true;
      active_.erase(held);
    }
    ++v.assigns;
    ++v.assigns_of[static_cast<size_t>(index_)];
    if (auto& last = v.last_finish[static_cast<size_t>(index_)]; last) {
      v.gaps.push_back({index_, last_finish_run_, *last, now});
      last.reset();
    }
    Active act;
    act.attempt = a.attempt();
    auto shape = fleet_->shapes_.find(spec_.group);
    if (shape != fleet_->shapes_.end()) act.shape = shape->second;
    double ms = act.shape.duration_ms;
    if (act.shape.jitter > 0 && ms > 0)
      ms *=
          std::uniform_real_distribution<double>(1 - act.shape.jitter, 1 + act.shape.jitter)(rng_);
    act.finish_due = now + std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
    RunRecord rec;
    rec.agent = index_;
    rec.run_id = a.run_id();
    rec.attempt = a.attempt();
    rec.workload = a.workload();
    for (const auto& m : a.metrics())
      if (m.name().rfind("skip:", 0) != 0) rec.metrics.push_back(m.name());
    if (rec.metrics.empty()) rec.metrics.push_back("samples_per_s");
    act.metrics = static_cast<int>(rec.metrics.size());
    rec.assigned = now;
    act.at_start_gate = act.shape.hold_start;
    rec.at_start_gate = act.at_start_gate;
    active_[a.run_id()] = act;
    const std::pair<int64_t, int> key{a.run_id(), a.attempt()};
    if (v.runs.count(key)) ++v.double_assigns;
    v.runs[key] = std::move(rec);
    v.last_assign_of[static_cast<size_t>(index_)] = key;
    if (!act.at_start_gate) Begin(a.run_id(), now);
  }

  void Begin(int64_t run_id, Time now) {
    Active& act = active_[run_id];
    v1::AgentMessage m;
    m.mutable_run_started()->set_run_id(run_id);
    m.mutable_run_started()->set_attempt(act.attempt);
    m.mutable_run_started()->set_pid(100000 + index_);
    Write(std::move(m));
    Record(run_id).started = now;
    Pump(run_id);
    MaybeFinish(run_id, now);
  }

  void Pump(int64_t run_id) {
    Active& act = active_[run_id];
    RunRecord& rec = Record(run_id);
    while (act.sent < act.shape.batches && act.sent - act.acked < act.shape.window) {
      v1::AgentMessage m;
      auto* b = m.mutable_metric_batch();
      b->set_run_id(run_id);
      b->set_attempt(act.attempt);
      b->set_seq(++act.sent);
      for (int i = 0; i < act.shape.samples; ++i) {
        const SampleRow r = SampleAt(act.sent, i, act.shape.samples, act.metrics);
        auto* s = b->add_samples();
        s->set_metric(rec.metrics[static_cast<size_t>(r.metric)]);
        s->set_step(r.step);
        s->set_value(r.value);
        s->set_line_no(r.line_no);
      }
      Write(std::move(m));
      rec.batches_sent = act.sent;
      rec.samples_sent += act.shape.samples;
    }
  }

  void MaybeFinish(int64_t run_id, Time now) {
    Active& act = active_[run_id];
    if (act.finish_seq > 0 || act.at_start_gate || act.sent < act.shape.batches) return;
    if (act.shape.hold_finish && !act.finish_released) return;
    if (now < act.finish_due) {
      if (!act.finish_timer) {
        act.finish_timer = true;
        const int attempt = act.attempt;
        fleet_->At(act.finish_due, [this, run_id, attempt] {
          std::lock_guard<std::mutex> g(fleet_->mu_);
          FinishDue(run_id, attempt);
          fleet_->cv_.notify_all();
        });
      }
      return;
    }
    SendFinish(run_id, "", 0, now);
  }

  void SendFinish(int64_t run_id, const std::string& reason, int signal, Time now) {
    Active& act = active_[run_id];
    act.finish_seq = act.sent + 1;  // one past the last batch, as the agent's executor does
    v1::AgentMessage m;
    auto* f = m.mutable_run_finished();
    f->set_run_id(run_id);
    f->set_attempt(act.attempt);
    f->set_seq(act.finish_seq);
    f->set_exit_code(0);
    f->set_signal(signal);
    f->set_reason(reason);
    f->set_batches(act.sent);
    f->set_lines(static_cast<int64_t>(act.sent) * act.shape.samples);
    Write(std::move(m));
    RunRecord& rec = Record(run_id);
    rec.finished = true;
    rec.finish_sent = now;
    if (reason.empty()) {
      fleet_->view_.last_finish[static_cast<size_t>(index_)] = now;
      last_finish_run_ = {run_id, act.attempt};
    }
  }

  void OnCancel(const v1::Cancel& c) {
    auto it = active_.find(c.run_id());
    if (it == active_.end() || it->second.attempt != c.attempt() || it->second.finish_seq > 0)
      return;
    Record(c.run_id()).cancelled = true;
    it->second.at_start_gate = false;
    SendFinish(c.run_id(), "cancelled", 15, Clock::now());
  }

  void OnAck(const v1::Ack& a, Time now) {
    auto it = active_.find(a.run_id());
    if (it == active_.end() || it->second.attempt != a.attempt()) {
      ++fleet_->view_.stray_acks;
      return;
    }
    Active& act = it->second;
    RunRecord& rec = Record(a.run_id());
    if (act.finish_seq > 0 && a.seq() == act.finish_seq) {
      rec.acked = true;
      rec.finish_acked = now;
      ++fleet_->view_.finish_acks;
      active_.erase(it);
      return;
    }
    if (a.seq() < 1 || a.seq() > act.sent) {
      ++fleet_->view_.stray_acks;
      return;
    }
    ++act.acked;
    rec.batches_acked = act.acked;
    rec.last_ack = now;
    Pump(a.run_id());
    MaybeFinish(a.run_id(), now);
  }

  Fleet* fleet_;
  const int index_;
  const AgentSpec spec_;
  std::mt19937_64 rng_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
  grpc::ClientContext ctx_;
  v1::ServerMessage in_;
  std::deque<v1::AgentMessage> out_;  // out_.front() is being written while writing_
  bool writing_ = false, writes_done_pending_ = false;
  bool welcomed_ = false, closing_ = false, dead_ = false, done_ = false;
  bool hold_released_ = false;
  int heartbeat_ms_ = 2000;
  std::map<int64_t, Active> active_;         // by run id
  std::pair<int64_t, int> last_finish_run_;  // the run of view_.last_finish[index_]
};

Fleet::Fleet(std::string server) : server_(std::move(server)) {
  timer_thread_ = std::thread([this] { TimerLoop(); });
}

Fleet::~Fleet() {
  CloseAll(30);
  {
    std::lock_guard<std::mutex> g(timer_mu_);
    timer_stop_ = true;
  }
  timer_cv_.notify_all();
  timer_thread_.join();
  std::lock_guard<std::mutex> g(mu_);
  // A stream gRPC never ended would call into its agent later: keep such agents alive.
  for (auto& a : agents_)
    if (!a->done()) a.release();  // NOLINT(bugprone-unused-return-value): deliberately leaked
}

int Fleet::Add(AgentSpec spec) {
  std::lock_guard<std::mutex> g(mu_);
  const int index = static_cast<int>(agents_.size());
  agents_.push_back(std::make_unique<SimAgent>(this, index, std::move(spec), server_));
  view_.assigns_of.push_back(0);
  view_.last_finish.emplace_back();
  view_.last_assign_of.emplace_back(0, 0);
  ++view_.started;
  agents_.back()->Start();
  return index;
}

void Fleet::SetShape(int group, JobShape shape) {
  std::lock_guard<std::mutex> g(mu_);
  shapes_[group] = shape;
}

const AgentSpec& Fleet::spec(int agent) const {
  std::lock_guard<std::mutex> g(mu_);
  return agents_.at(static_cast<size_t>(agent))->spec();
}

int Fleet::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return static_cast<int>(agents_.size());
}

bool Fleet::Wait(const std::function<bool(const FleetView&)>& pred, double timeout_s) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, std::chrono::duration<double>(timeout_s), [&] { return pred(view_); });
}

void Fleet::ReleaseStarts() {
  std::lock_guard<std::mutex> g(mu_);
  const Time now = Clock::now();
  for (auto& a : agents_) a->ReleaseStart(now);
}

void Fleet::ReleaseFinishes() {
  std::lock_guard<std::mutex> g(mu_);
  const Time now = Clock::now();
  for (auto& a : agents_) a->ReleaseFinish(now);
}

int Fleet::CloseAll(double timeout_s) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_) return 0;
    closed_ = true;
    for (auto& a : agents_) a->Close();
  }
  const int n = size();
  if (Wait([n](const FleetView& v) { return v.done >= n; }, timeout_s)) return 0;
  int cancelled = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& a : agents_)
      if (!a->done()) {
        a->Cancel();
        ++cancelled;
      }
  }
  Wait([n](const FleetView& v) { return v.done >= n; }, 10);
  return cancelled;
}

void Fleet::At(Time at, std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(timer_mu_);
    timers_.push({at, timer_seq_++, std::move(fn)});
  }
  timer_cv_.notify_one();
}

void Fleet::TimerLoop() {
  std::unique_lock<std::mutex> l(timer_mu_);
  while (!timer_stop_) {
    if (timers_.empty()) {
      timer_cv_.wait(l);
      continue;
    }
    const Time next = timers_.top().at;
    if (Clock::now() < next) {
      timer_cv_.wait_until(l, next);
      continue;
    }
    auto fn = timers_.top().fn;
    timers_.pop();
    l.unlock();
    fn();  // takes the fleet's lock itself
    l.lock();
  }
}

}  // namespace tunectl::loadgen

#include "agent/agent.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "agent/run_dirs.h"
#include "sys/endpoint_grpc.h"
#include "sys/files.h"
#include "sys/process.h"
#include "tunectl/v1/tunectl.grpc.pb.h"

namespace tunectl {

#ifndef TUNECTL_VERSION
#define TUNECTL_VERSION "0.1.0"
#endif

using Steady = std::chrono::steady_clock;

class Agent::Stream {
 public:
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerMessage>> rw;
};

Agent::Agent(AgentOptions opts, ProcessLauncher* launcher, Executor* executor, LogFn log)
    : opts_(std::move(opts)), launcher_(launcher), executor_(executor), log_(std::move(log)) {
  host_ = HostName();
  std::random_device rd;
  instance_ = host_ + ":" + std::to_string(getpid()) + ":" + std::to_string(rd());
  // The tag that finds this agent's jobs: its name and runs dir, stable across its restarts.
  if (opts_.executor.job_tag.empty())
    opts_.executor.job_tag = DefaultJobTag(opts_.name, opts_.executor.runs_dir);
  LoadSpool();
  // Jobs an earlier process of this agent left to the cluster: reported as active in Hello, and
  // followed again once the server has said which of them it still wants.
  for (auto& a : executor_->Adoptable()) {
    if (runs_.count(a.run_id())) continue;  // its end is already in the spool
    Active r;
    r.attempt = a.attempt();
    r.ctl = std::make_shared<RunControl>();
    r.slot = FreeSlot().index;
    runs_.emplace(a.run_id(), std::move(r));
    adopted_.push_back(std::move(a));
  }
  if (!adopted_.empty())
    log_(LogLevel::kInfo, std::to_string(adopted_.size()) + " " + executor_->Kind() +
                              " job(s) of an earlier run of this agent to follow again");
}

void Agent::FollowAdopted() {
  std::vector<v1::Assign> adopted;
  std::lock_guard<std::mutex> g(mu_);
  adopted.swap(adopted_);
  for (const auto& a : adopted) {
    auto it = runs_.find(a.run_id());
    if (it == runs_.end() || it->second.attempt != a.attempt() || it->second.thread.joinable())
      continue;
    auto ctl = it->second.ctl;
    SlotGrant slot;
    slot.index = it->second.slot;
    log_(LogLevel::kInfo, "run " + std::to_string(a.run_id()) + " attempt " +
                              std::to_string(a.attempt()) + ": following its " + executor_->Kind() +
                              " job again");
    it->second.thread = std::thread([this, a, ctl, slot] { executor_->Run(a, slot, *ctl, *this); });
  }
}

void Agent::OnLeftovers(int64_t run_id, int processes) {
  log_(LogLevel::kWarn, "run " + std::to_string(run_id) + ": killed " + std::to_string(processes) +
                            " process(es) it left running (daemonised or setsid children)");
}

void Agent::StopEarlierLifesJobs() {
  // Runs this process executes carry the same prefix: only the first welcome, before any Assign
  // can arrive, may look. The server has requeued the earlier life's unfinished runs.
  const std::string prefix = JobTagPrefix(opts_.executor);
  int killed = SignalProcessesWithEnv(prefix, SIGKILL);
  for (int i = 0; i < 50 && !ProcessesWithEnv(prefix).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (killed > 0)
    log_(LogLevel::kWarn, "killed " + std::to_string(killed) +
                              " process(es) of jobs that an earlier run of this agent left "
                              "running; the server retries their runs, so no job runs twice");
}

Agent::~Agent() {
  Stop();
  shutting_down_ = true;
  std::map<int64_t, Active> runs;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [_, r] : runs_)
      if (r.ctl) r.ctl->detach.store(true);
    runs.swap(runs_);
  }
  for (auto& [_, r] : runs)
    if (r.thread.joinable()) r.thread.join();
}

void Agent::Stop() {
  stop_ = true;
  std::lock_guard<std::mutex> g(mu_);
  if (stream_) stream_->ctx.TryCancel();
  cv_.notify_all();
}

void Agent::Run() {
  CheckNode();  // Hello already says whether the node can take work
  std::thread probe([this] { ProbeLoop(); });
  std::thread sender([this] { SenderLoop(); });
  std::thread hb([this] { HeartbeatLoop(); });
  int backoff = opts_.backoff_initial_ms;
  while (!stop_) {
    if (Session()) backoff = opts_.backoff_initial_ms;
    if (stop_) break;
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::milliseconds(backoff), [&] { return stop_.load(); });
    backoff = std::min(backoff * 2, opts_.backoff_max_ms);
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    cv_.notify_all();
  }
  hb.join();
  sender.join();
  probe.join();
}

bool Agent::Session() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, opts_.keepalive_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  auto channel =
      grpc::CreateCustomChannel(opts_.endpoint.server, ChannelCredentialsOf(opts_.endpoint), args);
  auto stub = v1::AgentService::NewStub(channel);
  auto s = std::make_shared<Stream>();
  AddToken(s->ctx, opts_.endpoint.token);
  s->rw = stub->Session(&s->ctx);
  {
    std::lock_guard<std::mutex> g(mu_);
    v1::AgentMessage hello;
    auto* h = hello.mutable_hello();
    h->set_name(opts_.name);
    for (const auto& [k, v] : opts_.labels) (*h->mutable_labels())[k] = v;
    h->set_slots(opts_.slots);
    h->set_version(TUNECTL_VERSION);
    h->set_busy(busy_);
    h->set_unhealthy(unhealthy_);
    h->set_isolated_slots(opts_.isolated_slots);
    h->set_executor(executor_->Kind());
    h->set_instance(instance_);
    h->set_host(host_);
    for (const auto& [id, r] : runs_) {
      auto* ref = h->add_active_runs();
      ref->set_run_id(id);
      ref->set_attempt(r.attempt);
    }
    if (stop_ || !s->rw->Write(hello)) {
      s->ctx.TryCancel();
      auto st = s->rw->Finish();
      if (!stop_)
        log_(LogLevel::kWarn,
             "cannot reach server " + opts_.endpoint.server + ": " + st.error_message());
      return false;
    }
    // Everything unacked goes out again on this stream, in order, from the sender thread.
    stream_ = s;
    ++generation_;
    unsent_ = 0;
    control_.clear();
    cv_.notify_all();
  }
  bool welcomed = false;
  v1::ServerMessage in;
  while (s->rw->Read(&in)) {
    switch (in.msg_case()) {
      case v1::ServerMessage::kWelcome: {
        welcomed = true;
        std::vector<std::pair<int64_t, int>> stop;
        {
          std::lock_guard<std::mutex> g(mu_);
          if (!cleaned_up_) StopEarlierLifesJobs();
          cleaned_up_ = true;
          if (in.welcome().heartbeat_interval_ms() > 0)
            heartbeat_ms_ = in.welcome().heartbeat_interval_ms();
          log_(LogLevel::kInfo, "connected to " + opts_.endpoint.server + " as " + opts_.name +
                                    " (" + std::to_string(outbox_.size()) +
                                    " unacked messages resent)");
        }
        for (const auto& r : in.welcome().cancel_runs()) {
          log_(LogLevel::kWarn, "run " + std::to_string(r.run_id()) + " attempt " +
                                    std::to_string(r.attempt()) +
                                    ": the server gave up on it while this agent was away; "
                                    "stopping it");
          CancelRun(r.run_id(), r.attempt());
        }
        FollowAdopted();  // those the server gave up on are cancelled first, so they stop
        break;
      }
      case v1::ServerMessage::kAssign: StartRun(in.assign()); break;
      case v1::ServerMessage::kCancel:
        CancelRun(in.cancel().run_id(), in.cancel().attempt());
        break;
      case v1::ServerMessage::kAck: OnAck(in.ack()); break;
      case v1::ServerMessage::kLogRequest: {  // `tunectl run logs`: a bounded read, answered now
        v1::AgentMessage m;
        // The local and Kubernetes executors mark each line of output.log with its stream; a
        // Slurm job writes its own output.log.
        *m.mutable_log_chunk() = ReadRunLog(opts_.executor.runs_dir, in.log_request(),
                                            std::string(executor_->Kind()) != "slurm");
        SendBestEffort(std::move(m));
        break;
      }
      default: break;
    }
    ReapFinished();
  }
  {
    // The sender may be inside a Write on this stream: a finished call fails it at once; one
    // blocked on a dead peer is cancelled (which would hide the server's status, so only then).
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, std::chrono::seconds(2), [&] { return !sender_writing_; })) {
      s->ctx.TryCancel();
      cv_.wait(l, [&] { return !sender_writing_; });
    }
    stream_.reset();
  }
  grpc::Status st = s->rw->Finish();
  if (!stop_ && (st.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
                 st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                 st.error_code() == grpc::StatusCode::PERMISSION_DENIED))
    log_(LogLevel::kError, "server " + opts_.endpoint.server +
                               " refused this agent: " + st.error_message() + "; retrying");
  else if (!stop_)
    log_(LogLevel::kWarn, "session with " + opts_.endpoint.server + " ended: " +
                              (st.ok() ? std::string("server closed it") : st.error_message()) +
                              "; reconnecting");
  return welcomed;
}

void Agent::SenderLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l,
             [&] { return stop_ || (stream_ && (!control_.empty() || unsent_ < outbox_.size())); });
    if (stop_) return;
    auto s = stream_;
    const uint64_t gen = generation_;
    v1::AgentMessage m;
    if (!control_.empty()) {
      m = std::move(control_.front());
      control_.pop_front();
    } else {
      const Pending& p = outbox_[unsent_++];
      if (p.on_disk_only) {
        auto bytes = ReadFile(SpoolPath(p));
        if (!bytes.ok() || !m.ParseFromString(*bytes)) {
          log_(LogLevel::kWarn, "spool: cannot read " + SpoolPath(p) + "; message skipped");
          continue;
        }
      } else {
        m = p.msg;
      }
    }
    sender_writing_ = true;
    l.unlock();
    const bool ok = s->rw->Write(m);  // may block on flow control: only this thread waits
    l.lock();
    sender_writing_ = false;
    cv_.notify_all();
    if (!ok && stream_ == s && generation_ == gen) {
      // The stream broke; the reader ends the session and a new one resends everything.
      s->ctx.TryCancel();
      cv_.wait(l, [&] { return stop_ || stream_ != s; });
    }
  }
}

void Agent::SendBestEffort(v1::AgentMessage m) {
  std::lock_guard<std::mutex> g(mu_);
  if (!stream_) return;
  if (m.has_heartbeat()) {  // one pending heartbeat is enough
    for (auto& c : control_)
      if (c.has_heartbeat()) {
        c = std::move(m);
        return;
      }
  }
  control_.push_back(std::move(m));
  cv_.notify_all();
}

std::string Agent::SpoolPath(const Pending& p) const {
  return opts_.spool_dir + "/" + std::to_string(p.run_id) + "-" + std::to_string(p.attempt) + "-" +
         std::to_string(p.seq) + ".msg";
}

void Agent::LoadSpool() {
  if (opts_.spool_dir.empty()) return;
  if (auto st = MakeDirs(opts_.spool_dir); !st.ok()) {
    log_(LogLevel::kWarn, "spool " + opts_.spool_dir + ": " + st.message() + "; memory only");
    opts_.spool_dir.clear();
    return;
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(opts_.spool_dir, ec)) {
    if (e.path().extension() != ".msg") continue;
    auto bytes = ReadFile(e.path().string());
    Pending p;
    if (!bytes.ok() || !p.msg.ParseFromString(*bytes)) {
      log_(LogLevel::kWarn, "spool: cannot read " + e.path().string() + "; skipped");
      continue;
    }
    if (p.msg.has_metric_batch()) {
      p.run_id = p.msg.metric_batch().run_id();
      p.attempt = p.msg.metric_batch().attempt();
      p.seq = p.msg.metric_batch().seq();
    } else if (p.msg.has_run_finished()) {
      p.run_id = p.msg.run_finished().run_id();
      p.attempt = p.msg.run_finished().attempt();
      p.seq = p.msg.run_finished().seq();
      p.is_finish = true;
      // Reported as active in Hello, so the server waits for this result instead of requeueing.
      Active r;
      r.attempt = p.attempt;
      runs_.emplace(p.run_id, std::move(r));
    } else {
      continue;
    }
    p.bytes = static_cast<int64_t>(bytes->size());
    if (outbox_memory_ + p.bytes > opts_.outbox_memory_bytes) {
      p.msg.Clear();
      p.on_disk_only = true;
    } else {
      outbox_memory_ += p.bytes;
    }
    outbox_.push_back(std::move(p));
  }
  std::sort(outbox_.begin(), outbox_.end(), [](const Pending& a, const Pending& b) {
    return std::tie(a.run_id, a.attempt, a.seq) < std::tie(b.run_id, b.attempt, b.seq);
  });
  if (!outbox_.empty())
    log_(LogLevel::kInfo, "spool: " + std::to_string(outbox_.size()) +
                              " unacked message(s) of an earlier run of this agent to resend");
}

void Agent::SendReliable(Pending p) {
  const std::string bytes = p.msg.SerializeAsString();
  p.bytes = static_cast<int64_t>(bytes.size());
  bool spooled = false;
  if (!opts_.spool_dir.empty()) {  // outside the lock: the sender and the reader go on meanwhile
    if (auto st = WriteFileAtomic(SpoolPath(p), bytes); !st.ok())
      log_(LogLevel::kWarn, "spool: " + st.message() + "; this message is kept in memory only");
    else
      spooled = true;
  }
  std::lock_guard<std::mutex> g(mu_);
  if (spooled && outbox_memory_ + p.bytes > opts_.outbox_memory_bytes) {
    p.msg.Clear();  // under pressure the spool holds it; memory stays bounded
    p.on_disk_only = true;
  } else {
    outbox_memory_ += p.bytes;
  }
  outbox_.push_back(std::move(p));
  cv_.notify_all();
}

void Agent::OnAck(const v1::Ack& a) {
  std::lock_guard<std::mutex> g(mu_);
  for (size_t i = 0; i < outbox_.size(); ++i) {
    Pending& p = outbox_[i];
    if (p.run_id != a.run_id() || p.attempt != a.attempt() || p.seq != a.seq()) continue;
    const bool finished = p.is_finish;
    if (!opts_.spool_dir.empty()) std::filesystem::remove(SpoolPath(p));
    if (!p.on_disk_only) outbox_memory_ -= p.bytes;
    outbox_.erase(outbox_.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < unsent_) --unsent_;
    auto r = runs_.find(a.run_id());
    if (finished && r != runs_.end() && r->second.attempt == a.attempt()) r->second.done = true;
    break;
  }
}

void Agent::ReapFinished() {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = runs_.begin(); it != runs_.end();) {
      if (it->second.done) {
        done.push_back(std::move(it->second.thread));
        it = runs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& t : done)
    if (t.joinable()) t.join();
  std::vector<v1::Assign> ready;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = deferred_.begin(); it != deferred_.end();) {
      if (runs_.count(it->first)) {
        ++it;
        continue;
      }
      ready.push_back(std::move(it->second));
      it = deferred_.erase(it);
    }
  }
  for (const auto& a : ready) StartRun(a);
}

void Agent::StartRun(const v1::Assign& a) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto held = runs_.find(a.run_id()); held != runs_.end()) {
    if (held->second.attempt >= a.attempt()) return;  // a duplicate assign after a reconnect
    // The server gave up on the attempt held here (a lease lost during a pause): stop it, and
    // start the new attempt once it is gone, so the job never runs twice at once.
    log_(LogLevel::kWarn, "run " + std::to_string(a.run_id()) + ": attempt " +
                              std::to_string(a.attempt()) + " replaces attempt " +
                              std::to_string(held->second.attempt) + " held here; stopping it");
    if (held->second.ctl) held->second.ctl->cancel.store(true);
    deferred_[a.run_id()] = a;
    return;
  }
  Active r;
  r.attempt = a.attempt();
  r.ctl = std::make_shared<RunControl>();
  auto ctl = r.ctl;
  const SlotGrant slot = FreeSlot();
  r.slot = slot.index;
  log_(LogLevel::kInfo, "run " + std::to_string(a.run_id()) + " attempt " +
                            std::to_string(a.attempt()) + ": " + a.workload() +
                            (slot.index >= 0 ? " in slot " + std::to_string(slot.index) : ""));
  r.thread = std::thread([this, a, ctl, slot] { executor_->Run(a, slot, *ctl, *this); });
  runs_.emplace(a.run_id(), std::move(r));
}

SlotGrant Agent::FreeSlot() const {
  SlotGrant g;
  std::set<int> used;
  for (const auto& [_, r] : runs_)
    if (!r.done) used.insert(r.slot);
  int i = 0;
  while (used.count(i)) ++i;
  g.index = i;
  if (static_cast<size_t>(i) < opts_.slot_gpus.size()) g.gpus = opts_.slot_gpus[i];
  if (static_cast<size_t>(i) < opts_.slot_cpus.size()) g.cpus = opts_.slot_cpus[i];
  return g;
}

void Agent::CancelRun(int64_t run_id, int attempt) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = runs_.find(run_id);
  if (it != runs_.end() && it->second.attempt == attempt && it->second.ctl) {
    it->second.server_cancelled = true;
    it->second.ctl->cancel.store(true);
  }
}

void Agent::CheckNode() {
  bool busy = false;
  if (!opts_.idle_probe.empty()) {
    auto r = RunCommand(*launcher_, {{"sh", "-c", opts_.idle_probe}, {}, opts_.executor.workdir},
                        std::chrono::milliseconds(opts_.idle_probe_timeout_ms), &stop_);
    busy = !r.ok() || !r->status.ok();
    if (r.ok() && r->timed_out && !stop_)
      log_(LogLevel::kWarn, "idle probe did not finish within " +
                                std::to_string(opts_.idle_probe_timeout_ms / 1000) +
                                " s; killed, and the node counts as busy");
  }
  // Can this node run a job at all? Its runs directory must take a file, with room to spare.
  std::string unhealthy;
  const std::string dir = opts_.executor.runs_dir;
  if (!dir.empty()) {
    const std::string probe = dir + "/.health-" + std::to_string(getpid());
    if (auto st = MakeDirs(dir); !st.ok()) {
      unhealthy = "runs directory " + dir + ": " + st.message();
    } else if (auto w = WriteFileAtomic(probe, "ok\n"); !w.ok()) {
      unhealthy = "runs directory " + dir + " is not writable: " + w.message();
    } else {
      std::filesystem::remove(probe);
      struct statvfs fs {};
      if (statvfs(dir.c_str(), &fs) == 0) {
        const int64_t free = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
        if (free < opts_.min_free_disk_bytes)
          unhealthy =
              "disk nearly full under " + dir + ": " + std::to_string(free >> 20) + " MiB free";
      }
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  if (unhealthy.empty() && !infra_failure_.empty() && Steady::now() < infra_failure_until_)
    unhealthy = infra_failure_;
  if (unhealthy != unhealthy_)
    log_(
        unhealthy.empty() ? LogLevel::kInfo : LogLevel::kWarn,
        unhealthy.empty() ? "the node is healthy again" : "the node cannot run jobs: " + unhealthy);
  busy_ = busy;
  unhealthy_ = unhealthy;
}

void Agent::PruneRunDirsIfDue() {
  if (opts_.keep_run_dirs_s <= 0 || opts_.executor.runs_dir.empty()) return;
  std::set<int64_t> held;
  {
    std::lock_guard<std::mutex> g(mu_);
    // Not before the first Welcome: jobs an earlier agent process left are adopted by then.
    if (!cleaned_up_ || !adopted_.empty()) return;
    if (pruned_at_ != Steady::time_point{} &&
        Steady::now() - pruned_at_ < std::chrono::seconds(opts_.prune_interval_s))
      return;
    pruned_at_ = Steady::now();
    for (const auto& [id, _] : runs_) held.insert(id);
    for (const auto& [id, _] : deferred_) held.insert(id);
  }
  const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const auto removed = PruneRunDirs(opts_.executor.runs_dir, held, now_s, opts_.keep_run_dirs_s);
  if (!removed.empty())
    log_(LogLevel::kInfo,
         "removed " + std::to_string(removed.size()) +
             " run directories older than --keep-runs-for (oldest: " + removed.front() + ")");
}

void Agent::ProbeLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::milliseconds(heartbeat_ms_),
                 [&] { return stop_.load() || check_now_; });
    if (stop_) return;
    check_now_ = false;
    l.unlock();
    CheckNode();  // may take up to the probe's timeout: its own thread
    PruneRunDirsIfDue();
    l.lock();
  }
}

void Agent::HeartbeatLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::milliseconds(heartbeat_ms_), [&] { return stop_.load(); });
    if (stop_ || !stream_) continue;
    v1::AgentMessage m;
    m.mutable_heartbeat()->set_busy(busy_);
    m.mutable_heartbeat()->set_unhealthy(unhealthy_);
    int running = 0;
    for (const auto& [_, r] : runs_) running += r.done ? 0 : 1;
    m.mutable_heartbeat()->set_running(running);
    l.unlock();
    SendBestEffort(std::move(m));
    l.lock();
  }
}

void Agent::OnPending(const v1::RunPending& m) {
  v1::AgentMessage msg;
  *msg.mutable_run_pending() = m;
  SendBestEffort(std::move(msg));
}

void Agent::OnStarted(const v1::RunStarted& m) {
  v1::AgentMessage msg;
  *msg.mutable_run_started() = m;
  SendBestEffort(std::move(msg));
}

void Agent::OnBatch(const v1::MetricBatch& m) {
  Pending p{m.run_id(), m.attempt(), m.seq(), {}, false, 0, false};
  *p.msg.mutable_metric_batch() = m;
  SendReliable(std::move(p));
}

void Agent::OnFinished(const v1::RunFinished& m) {
  log_(LogLevel::kInfo, "run " + std::to_string(m.run_id()) + " finished: " +
                            (m.signal() ? "signal " + std::to_string(m.signal())
                                        : "exit " + std::to_string(m.exit_code())) +
                            (m.reason().empty() ? "" : " (" + m.reason() + ")") + ", " +
                            std::to_string(m.batches()) + " batches");
  if (m.infra_failure() && executor_->InfraFailureMarksAgent()) {
    // This node could not run it: no new work here for a while, whatever the next check says.
    std::lock_guard<std::mutex> g(mu_);
    infra_failure_ = "run " + std::to_string(m.run_id()) + " could not run here: " + m.reason();
    infra_failure_until_ = Steady::now() + std::chrono::seconds(60);
    unhealthy_ = infra_failure_;
    check_now_ = true;
    cv_.notify_all();
  }
  if (shutting_down_) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = runs_.find(m.run_id());
    const bool asked = it != runs_.end() && it->second.server_cancelled;
    if (m.reason() == "cancelled" && !asked) {
      // Killed by this agent's own shutdown: not a result. Drop what is spooled for it; the
      // server requeues the run when it learns the agent no longer runs it.
      for (size_t i = 0; i < outbox_.size();) {
        Pending& o = outbox_[i];
        if (o.run_id == m.run_id() && o.attempt == m.attempt()) {
          if (!opts_.spool_dir.empty()) std::filesystem::remove(SpoolPath(o));
          if (!o.on_disk_only) outbox_memory_ -= o.bytes;
          outbox_.erase(outbox_.begin() + static_cast<std::ptrdiff_t>(i));
          if (i < unsent_) --unsent_;
        } else {
          ++i;
        }
      }
      return;
    }
  }
  Pending p{m.run_id(), m.attempt(), m.seq(), {}, false, 0, true};
  *p.msg.mutable_run_finished() = m;
  SendReliable(std::move(p));
}

}  // namespace tunectl

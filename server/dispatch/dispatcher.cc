#include "server/dispatch/dispatcher.h"

#include <algorithm>
#include <set>
#include <vector>

#include "server/api/convert.h"
#include "sys/clock.h"

namespace tunectl {

using Steady = std::chrono::steady_clock;

int64_t AgentSession::NowSteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now().time_since_epoch())
      .count();
}

void AgentSession::Beat(bool b, const std::string& unhealthy) {
  Touch();
  busy = b;
  std::lock_guard<std::mutex> g(mu_);
  unhealthy_ = unhealthy;
}

std::string AgentSession::unhealthy() const {
  std::lock_guard<std::mutex> g(mu_);
  return unhealthy_;
}

Dispatcher::Dispatcher(Store* store, DispatcherOptions opts, LogFn log)
    : store_(store), opts_(std::move(opts)), log_(std::move(log)) {
  if (!opts_.clock) opts_.clock = &RealClock();
}

Dispatcher::~Dispatcher() {
  Stop();
}

void Dispatcher::Start() {
  thread_ = std::thread([this] { Loop(); });
  tick_thread_ = std::thread([this] { TickLoop(); });
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  tick_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (tick_thread_.joinable()) tick_thread_.join();
}

void Dispatcher::Register(std::shared_ptr<AgentSession> s) {
  {
    std::lock_guard<std::mutex> g(mu_);
    sessions_[s.get()] = std::move(s);
  }
  Notify();
}

void Dispatcher::Unregister(const AgentSession* s) {
  std::lock_guard<std::mutex> g(mu_);
  sessions_.erase(s);
}

void Dispatcher::Notify() {
  {
    std::lock_guard<std::mutex> g(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

std::shared_ptr<AgentSession> Dispatcher::SessionOf(const std::string& name) const {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& [_, s] : sessions_)
    if (s->name == name) return s;
  return nullptr;
}

Result<v1::LogChunk> LogRelay::Fetch(AgentSession& s, v1::LogRequest req,
                                     std::chrono::milliseconds timeout) {
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    id = next_id_++;
    waiting_[id].asked = &s;
  }
  req.set_request_id(id);
  v1::ServerMessage m;
  *m.mutable_log_request() = std::move(req);
  const bool sent = s.Send(m);
  std::unique_lock<std::mutex> l(mu_);
  const bool answered =
      sent && cv_.wait_for(l, timeout, [&] { return waiting_[id].answer.has_value(); });
  auto answer = std::move(waiting_[id].answer);
  waiting_.erase(id);
  if (!answered || !answer)
    return Status::Unavailable(sent ? "agent " + s.name + " did not answer within " +
                                          std::to_string(timeout.count()) + " ms"
                                    : "agent " + s.name + " disconnected");
  return std::move(*answer);
}

void LogRelay::Deliver(const AgentSession* from, v1::LogChunk c) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = waiting_.find(c.request_id());
  if (it == waiting_.end() || it->second.asked != from) return;
  it->second.answer = std::move(c);
  cv_.notify_all();
}

size_t Dispatcher::sessions() const {
  std::lock_guard<std::mutex> g(mu_);
  return sessions_.size();
}

std::vector<std::shared_ptr<AgentSession>> Dispatcher::Sessions() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::shared_ptr<AgentSession>> out;
  out.reserve(sessions_.size());
  for (const auto& [_, s] : sessions_) out.push_back(s);
  return out;
}

int Dispatcher::DispatchOnce() {
  const auto sessions = Sessions();
  if (sessions.empty()) return 0;
  std::map<int64_t, AgentSession*> by_agent;
  std::vector<int64_t> ids;
  for (const auto& s : sessions) {
    by_agent[s->agent_id] = s.get();
    ids.push_back(s->agent_id);
  }

  // Cancels: one query for every agent; each (run, attempt) is sent again only after 5 s.
  const auto now = Steady::now();
  if (auto cancels = store_->PendingCancelsFor(ids); !cancels.ok()) {
    log_(LogLevel::kWarn, "dispatch: cannot read pending cancels: " + cancels.status().ToString());
  } else {
    std::map<std::pair<int64_t, int>, Steady::time_point> sent;
    for (const auto& [agent, runs] : *cancels) {
      for (const auto& c : runs) {
        const auto key = std::make_pair(c.run_id, c.attempt);
        auto was = cancels_sent_.find(key);
        if (was != cancels_sent_.end() && now - was->second < std::chrono::seconds(5)) {
          sent[key] = was->second;
          continue;
        }
        v1::ServerMessage m;
        m.mutable_cancel()->set_run_id(c.run_id);
        m.mutable_cancel()->set_attempt(c.attempt);
        m.mutable_cancel()->set_reason("cancelled by the server");
        by_agent[agent]->Send(m);
        sent[key] = now;
      }
    }
    cancels_sent_.swap(sent);  // forget what is no longer pending
  }

  // Claims: every live session that may take work, in one transaction. Those whose slots a
  // claim found full and that have not freed one since are left out, except once a second.
  const int64_t now_ms = AgentSession::NowSteadyMs();
  const bool full_pass = now - full_pass_ >= std::chrono::seconds(1);
  if (full_pass) full_pass_ = now;
  std::vector<AgentSession*> targets;
  for (const auto& s : sessions)
    if (CanTakeWork(*s, now_ms) && (full_pass || s->MayHaveRoom())) targets.push_back(s.get());
  return ClaimAndSend(std::move(targets));
}

int Dispatcher::ClaimFreedSlot(const std::shared_ptr<AgentSession>& s) {
  s->SlotMayBeFree();
  {
    // A session that is closing (unregistered) or a dispatcher that stopped gets nothing: its
    // Assign could be lost with the stream while the database still shows the agent connected.
    std::lock_guard<std::mutex> g(mu_);
    if (stop_ || !sessions_.count(s.get())) return 0;
  }
  int assigned = 0;
  if (CanTakeWork(*s, AgentSession::NowSteadyMs())) assigned = ClaimAndSend({s.get()});
  // Left to a pass: a claim of the dispatcher's own for this agent was under way (it may not have
  // seen the slot), the agent could not take work, or a slot is still free (runs it could take
  // were locked by other claims).
  if (s->MayHaveRoom()) Notify();
  return assigned;
}

bool Dispatcher::CanTakeWork(const AgentSession& s, int64_t now_ms) const {
  const int64_t fresh_ms = 3LL * opts_.heartbeat_interval_ms + 1000;
  return !s.busy && s.slots > 0 && s.unhealthy().empty() &&
         now_ms - s.last_beat_ms <= fresh_ms;  // paused or gone: no new work
}

std::string Dispatcher::OpenWindowsNow() {
  std::lock_guard<std::mutex> g(windows_mu_);
  const auto now = Steady::now();
  if (now - schedules_read_ >= std::chrono::seconds(1)) {  // schedules change rarely
    if (auto rows = store_->ListSchedules(); !rows.ok()) {
      log_(LogLevel::kWarn,
           "dispatch: cannot read schedules (scheduled runs wait): " + rows.status().ToString());
    } else {
      schedule_rows_ = std::move(*rows);
      schedules_read_ = now;
    }
  }
  return schedule_rows_.empty() ? std::string("{}")
                                : schedules_.OpenWindowsJson(schedule_rows_, opts_.clock->NowS());
}

int Dispatcher::ClaimAndSend(std::vector<AgentSession*> targets) {
  {
    std::lock_guard<std::mutex> g(claiming_mu_);
    targets.erase(
        std::remove_if(targets.begin(), targets.end(),
                       [&](AgentSession* s) { return !claiming_.insert(s->agent_id).second; }),
        targets.end());
  }
  if (targets.empty()) return 0;
  struct Release {
    Dispatcher* d;
    const std::vector<AgentSession*>& t;
    ~Release() {
      std::lock_guard<std::mutex> g(d->claiming_mu_);
      for (AgentSession* s : t) d->claiming_.erase(s->agent_id);
    }
  } release{this, targets};

  std::map<int64_t, AgentSession*> by_agent;
  std::vector<ClaimRequest> asks;
  std::map<int64_t, uint64_t> events_seen;  // agent -> its room events when asked
  for (AgentSession* s : targets) {
    by_agent[s->agent_id] = s;
    events_seen[s->agent_id] = s->RoomEvents();
    asks.push_back({s->agent_id, s->session_id, s->labels, s->slots});
  }
  const std::string open = OpenWindowsNow();
  std::map<int64_t, int> free_after;
  auto plans = store_->ClaimRunsFor(asks, open, &free_after);
  if (!plans.ok()) {
    log_(LogLevel::kWarn, "dispatch: " + plans.status().ToString());
    return 0;
  }
  for (const auto& [agent, free] : free_after)
    if (free == 0 && by_agent.count(agent)) by_agent[agent]->FullAsOf(events_seen[agent]);
  int assigned = 0;
  for (const auto& [agent, runs] : *plans) {
    AgentSession* s = by_agent[agent];
    std::vector<RunRef> undelivered;
    for (const auto& p : runs) {
      v1::ServerMessage m;
      ToProto(p, m.mutable_assign());
      if (!undelivered.empty() || !s->Send(m)) {
        undelivered.push_back({p.run_id, p.attempt});
        continue;
      }
      log_(LogLevel::kInfo, "run " + std::to_string(p.run_id) + " attempt " +
                                std::to_string(p.attempt) + " -> " + s->name);
      ++assigned;
    }
    if (undelivered.empty()) continue;
    // The stream ended during the claim: the runs go back at once, as the same attempt.
    auto n = store_->ReleaseClaims(agent, undelivered);
    if (!n.ok())
      log_(LogLevel::kWarn, "agent " + s->name + " went away while " +
                                std::to_string(undelivered.size()) +
                                " run(s) were being assigned; they are requeued when it expires: " +
                                n.status().ToString());
    else
      log_(LogLevel::kWarn, "agent " + s->name + " went away while " + std::to_string(*n) +
                                " run(s) were being assigned; queued again");
  }
  return assigned;
}

void Dispatcher::LivenessOnce() {
  const auto sessions = Sessions();
  const int64_t now_ms = AgentSession::NowSteadyMs();
  const int64_t timeout_ms = static_cast<int64_t>(opts_.agent_timeout_s) * 1000;
  std::vector<AgentBeat> beats;
  for (const auto& s : sessions) {
    const int64_t silent = now_ms - s->last_beat_ms;
    if (silent > timeout_ms && !s->awaiting_store) {
      log_(LogLevel::kWarn, "agent " + s->name + " sent nothing for " +
                                std::to_string(silent / 1000) + " s; closing its session");
      s->Close("no heartbeat for " + std::to_string(silent / 1000) + " s (--agent-timeout " +
               std::to_string(opts_.agent_timeout_s) + " s)");
      continue;
    }
    beats.push_back({s->agent_id, s->session_id, s->busy, s->unhealthy()});
  }
  const auto now = Steady::now();
  if (now - last_flush_ >= std::chrono::milliseconds(opts_.heartbeat_interval_ms)) {
    last_flush_ = now;
    if (auto st = store_->TouchAgents(beats); !st.ok()) {
      if (!flush_failed_)
        log_(LogLevel::kWarn, "cannot record agents' heartbeats: " + st.ToString() +
                                  "; silent agents are not expired until it works again for " +
                                  std::to_string(opts_.agent_timeout_s) + " s");
      flush_failed_ = true;
    } else if (flush_failed_) {
      flush_failed_ = false;
      healthy_since_ = now;  // agents elsewhere get a whole timeout to show up again
    }
  }
  if (flush_failed_ || now - healthy_since_ < std::chrono::seconds(opts_.agent_timeout_s)) return;
  auto n = store_->ExpireAgents(opts_.agent_timeout_s);
  if (!n.ok())
    log_(LogLevel::kWarn, "cannot expire silent agents: " + n.status().ToString());
  else if (*n > 0)
    log_(LogLevel::kWarn, std::to_string(*n) + " run(s) of silent agents requeued or lost");
}

int Dispatcher::ScheduleOnce() {
  leader_ = !opts_.try_lead || opts_.try_lead();
  if (!leader_) return 0;
  // The audit trail's hash chain: what committed since the last pass is sealed.
  if (auto sealed = store_->SealAudit(); !sealed.ok())
    log_(LogLevel::kWarn, "cannot seal the audit trail: " + sealed.status().ToString());
  auto rows = store_->ListSchedules();
  if (!rows.ok()) {
    log_(LogLevel::kWarn, "scheduler: cannot read schedules: " + rows.status().ToString());
    return 0;
  }
  if (rows->empty()) return 0;
  std::map<int64_t, int64_t> starts;
  for (const auto& [id, w] : tick_schedules_.OpenWindows(*rows, opts_.clock->NowS()))
    starts[id] = w.start;
  int n = 0;
  if (auto q = store_->QueueDueChecks(starts, "scheduler"); !q.ok()) {
    log_(LogLevel::kWarn, "scheduler: cannot queue periodic checks: " + q.status().ToString());
  } else if (*q > 0) {
    log_(LogLevel::kInfo, std::to_string(*q) + " periodic regression check(s) queued");
    n += *q;
  }
  if (auto r = store_->RequeueAtWindowEnd(starts); !r.ok()) {
    log_(LogLevel::kWarn,
         "scheduler: cannot apply the window-end policy: " + r.status().ToString());
  } else if (*r > 0) {
    log_(LogLevel::kInfo, std::to_string(*r) +
                              " run(s) stopped at the end of their window; they run again in the "
                              "next one");
    n += *r;
  }
  return n;
}

void Dispatcher::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, std::chrono::milliseconds(std::min(opts_.interval_ms, 1000)),
                   [&] { return wake_ || stop_; });
      if (stop_) return;
      wake_ = false;
    }
    DispatchOnce();
  }
}

void Dispatcher::TickLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      tick_cv_.wait_for(l, std::chrono::seconds(1), [&] { return stop_; });
      if (stop_) return;
    }
    LivenessOnce();
    const bool was = leader_;
    if (ScheduleOnce() > 0) Notify();  // checks queued, runs requeued: a pass takes them now
    if (leader_ != was)
      log_(LogLevel::kInfo, leader_ ? "this server now runs the scheduler (advisory-lock leader)"
                                    : "another server runs the scheduler");
  }
}

}  // namespace tunectl

#include "server/dispatch/dispatcher.h"

#include <vector>

#include "server/api/convert.h"
#include "sys/clock.h"

namespace tunectl {

Dispatcher::Dispatcher(Store* store, DispatcherOptions opts, LogFn log)
    : store_(store), opts_(std::move(opts)), log_(std::move(log)) {
  if (!opts_.clock) opts_.clock = &RealClock();
}

Dispatcher::~Dispatcher() {
  Stop();
}

void Dispatcher::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
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

int Dispatcher::DispatchOnce() {
  std::vector<std::shared_ptr<AgentSession>> sessions;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [_, s] : sessions_) sessions.push_back(s);
  }
  int assigned = 0;
  std::string open = "{}";
  if (!sessions.empty()) {
    if (auto rows = store_->ListSchedules(); !rows.ok())
      log_(LogLevel::kWarn,
           "dispatch: cannot read schedules (scheduled runs wait): " + rows.status().ToString());
    else if (!rows->empty())
      open = schedules_.OpenWindowsJson(*rows, opts_.clock->NowS());
  }
  for (auto& s : sessions) {
    if (auto cancels = store_->PendingCancels(s->agent_id); !cancels.ok()) {
      log_(LogLevel::kWarn, "dispatch to " + s->name +
                                ": cannot read pending cancels: " + cancels.status().ToString());
    } else {
      for (const auto& c : *cancels) {
        v1::ServerMessage m;
        m.mutable_cancel()->set_run_id(c.run_id);
        m.mutable_cancel()->set_attempt(c.attempt);
        m.mutable_cancel()->set_reason("cancelled by the server");
        s->Send(m);
      }
    }
    if (s->busy) continue;
    auto plans = store_->ClaimRuns(s->agent_id, s->labels, s->slots, open);
    if (!plans.ok()) {
      log_(LogLevel::kWarn, "dispatch to " + s->name + ": " + plans.status().ToString());
      continue;
    }
    for (const auto& p : *plans) {
      v1::ServerMessage m;
      ToProto(p, m.mutable_assign());
      if (!s->Send(m)) {
        // The stream is gone; the run stays assigned until the agent reconnects (and reports
        // what it runs) or expires, then it is requeued as a new attempt.
        log_(LogLevel::kWarn, "agent " + s->name + " went away while run " +
                                  std::to_string(p.run_id) + " was being assigned");
        break;
      }
      log_(LogLevel::kInfo, "run " + std::to_string(p.run_id) + " attempt " +
                                std::to_string(p.attempt) + " -> " + s->name);
      ++assigned;
    }
  }
  return assigned;
}

int Dispatcher::ScheduleOnce() {
  leader_ = !opts_.try_lead || opts_.try_lead();
  if (!leader_) return 0;
  auto rows = store_->ListSchedules();
  if (!rows.ok()) {
    log_(LogLevel::kWarn, "scheduler: cannot read schedules: " + rows.status().ToString());
    return 0;
  }
  if (rows->empty()) return 0;
  std::map<int64_t, int64_t> starts;
  for (const auto& [id, w] : schedules_.OpenWindows(*rows, opts_.clock->NowS()))
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
  auto last_expire = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, std::chrono::milliseconds(opts_.interval_ms), [&] { return wake_ || stop_; });
      if (stop_) return;
      wake_ = false;
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_expire > std::chrono::seconds(1)) {
      last_expire = now;
      auto n = store_->ExpireAgents(opts_.agent_timeout_s);
      if (!n.ok())
        log_(LogLevel::kWarn, "cannot expire silent agents: " + n.status().ToString());
      else if (*n > 0)
        log_(LogLevel::kWarn, std::to_string(*n) + " run(s) of silent agents requeued or lost");
      const bool was = leader_;
      ScheduleOnce();
      if (leader_ != was)
        log_(LogLevel::kInfo, leader_ ? "this server now runs the scheduler (advisory-lock leader)"
                                      : "another server runs the scheduler");
    }
    DispatchOnce();
  }
}

}  // namespace tunectl

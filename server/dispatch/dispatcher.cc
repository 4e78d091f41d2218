#include "server/dispatch/dispatcher.h"

#include <vector>

#include "server/api/convert.h"

namespace tunectl {

Dispatcher::Dispatcher(Store* store, DispatcherOptions opts, LogFn log)
    : store_(store), opts_(std::move(opts)), log_(std::move(log)) {
  if (!opts_.now_s)
    opts_.now_s = [] {
      return std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
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
    if (auto rows = store_->ListSchedules(); rows.ok() && !rows->empty())
      open = schedules_.OpenWindowsJson(*rows, opts_.now_s());
  }
  for (auto& s : sessions) {
    if (auto cancels = store_->PendingCancels(s->agent_id); cancels.ok()) {
      for (const auto& c : *cancels) {
        v1::ServerMessage m;
        m.mutable_cancel()->set_run_id(c.run_id);
        m.mutable_cancel()->set_attempt(c.attempt);
        m.mutable_cancel()->set_reason("experiment cancelled");
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
      if (n.ok() && *n > 0)
        log_(LogLevel::kWarn, std::to_string(*n) + " run(s) of silent agents requeued or lost");
    }
    DispatchOnce();
  }
}

}  // namespace tunectl

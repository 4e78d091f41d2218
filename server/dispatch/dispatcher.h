// Dispatcher: moves queued runs to connected agents with free slots and matching labels, and
// expires silent agents (their runs are requeued as new attempts). While this server holds the
// scheduler lock it also runs the scheduler: one periodic check per watch per window, and the
// window-end policy. One background thread; Register/Unregister/Notify/leader are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "server/dispatch/windows.h"
#include "server/store/store.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

// One connected agent stream. Send is thread-safe and returns false once the stream is gone.
class AgentSession {
 public:
  virtual ~AgentSession() = default;
  virtual bool Send(const v1::ServerMessage& m) = 0;
  int64_t agent_id = 0;
  std::string name;
  LabelMap labels;
  int slots = 0;
  std::atomic<bool> busy{false};  // idle probe failed: start nothing here
};

struct DispatcherOptions {
  int interval_ms = 500;         // poll period when nothing notifies
  int agent_timeout_s = 15;      // silent agents are expired after this
  const Clock* clock = nullptr;  // the clock of windows and schedules; null = the system clock
  // Whether this server may run the scheduler now (the advisory-lock leader); called from the
  // dispatcher thread about once a second. Default: always (a single server).
  std::function<bool()> try_lead;
};

class Dispatcher {
 public:
  Dispatcher(Store* store, DispatcherOptions opts, LogFn log);
  ~Dispatcher();
  void Start();
  void Stop();
  void Register(std::shared_ptr<AgentSession> s);
  void Unregister(const AgentSession* s);
  void Notify();
  // One dispatch pass (also used by tests); returns the number of runs assigned.
  int DispatchOnce();
  // One scheduler pass if this server leads (also used by tests): queues due periodic checks and
  // applies the window-end policy. Returns the number of checks queued plus runs stopped.
  int ScheduleOnce();
  bool leader() const { return leader_.load(); }

 private:
  void Loop();

  Store* store_;
  DispatcherOptions opts_;
  LogFn log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false;
  bool stop_ = false;
  std::map<const AgentSession*, std::shared_ptr<AgentSession>> sessions_;
  std::thread thread_;
  ScheduleBook schedules_;
  std::atomic<bool> leader_{false};
};

}  // namespace tunectl

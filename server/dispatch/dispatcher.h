// Dispatcher: moves queued runs to connected agents with free slots and matching labels, event
// driven: a pass runs when something changed (a run queued or asked to stop — on any server, via
// LISTEN/NOTIFY —, an agent connected or idle again) and at least once a second (windows open and
// close). One pass claims for every agent at once (Store::ClaimRunsFor, one transaction), so its
// cost does not grow with the number of sessions walked one by one. A slot freed by a stored
// result is claimed for at once by the thread that stored it (ClaimFreedSlot), so a busy agent's
// next run does not wait for a pass; one claim per agent at a time.
// It also keeps agents' liveness: heartbeats are counted in memory by the sessions and flushed
// to the database in one statement per heartbeat interval; a session silent for --agent-timeout
// is closed, and agents silent in the database (other servers' too) are expired — but only once
// this server has been up, with its database answering, for a whole --agent-timeout, so agents
// get the time to reconnect after a restart or an outage before their runs are taken away.
// While this server holds the scheduler lock it also runs the scheduler: one periodic check per
// watch per window, and the window-end policy. Two background threads: one runs the dispatch
// passes, the other once a second the liveness flush and the scheduler (which also seals the
// audit trail), so a pass never waits behind them. Every public method is thread-safe; the
// *Once methods are for tests, each called from one thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "server/dispatch/windows.h"
#include "server/store/store.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

// One connected agent stream, as the dispatcher sees it. Send and Close are thread-safe; the
// liveness fields are updated by the session as messages arrive.
class AgentSession {
 public:
  virtual ~AgentSession() = default;
  // Queues `m` for the agent without blocking. False once the session is closed, or when its
  // outgoing queue is full (the session is then closed: a peer that does not read is dropped).
  virtual bool Send(const v1::ServerMessage& m) = 0;
  // Ends the stream with UNAVAILABLE and `why` (the agent reconnects). Idempotent.
  virtual void Close(const std::string& why) = 0;

  // Liveness: a heartbeat (or any message) from the agent.
  void Beat(bool busy, const std::string& unhealthy);
  void Touch() { last_beat_ms = NowSteadyMs(); }
  std::string unhealthy() const;
  static int64_t NowSteadyMs();

  int64_t agent_id = 0;
  std::string name;
  std::string session_id;  // the agents row's `session` while this stream holds the name
  LabelMap labels;
  int slots = 0;
  std::atomic<bool> busy{false};  // idle probe failed: start nothing here
  std::atomic<int64_t> last_beat_ms{NowSteadyMs()};
  // The server itself holds the agent's next message back (its last one waits for the store, e.g.
  // a finish queued behind another finish's baseline completion): the agent is not silent while
  // this is set.
  std::atomic<bool> awaiting_store{false};

  // Whether a dispatch pass should ask for this agent: it may have a free slot. A hint that keeps
  // passes small at cluster scale (a pass asks only for agents that may take work, plus all of
  // them once a second): SlotMayBeFree() when it connects or a run of it ends (or its heartbeat
  // counts fewer runs than slots while the hint says full); a claim that leaves it no free slot
  // marks it full as of the events it had seen when it began, so none is lost to a race.
  void SlotMayBeFree() { room_events_.fetch_add(1); }
  bool MayHaveRoom() const { return room_events_.load() != full_as_of_.load(); }
  uint64_t RoomEvents() const { return room_events_.load(); }
  void FullAsOf(uint64_t events) { full_as_of_.store(events); }

 private:
  mutable std::mutex mu_;
  std::string unhealthy_;  // the node cannot run jobs now, and why
  std::atomic<uint64_t> room_events_{1};
  std::atomic<uint64_t> full_as_of_{0};
};

// Asks agents for bytes of a run's output (`tunectl run logs`) and hands each answer to the one
// caller waiting for it. Nothing is stored. Thread-safe.
class LogRelay {
 public:
  // Sends `req` (its request_id is set here) to `s` and waits up to `timeout` for the answer.
  // Unavailable when the session is closed or does not answer in time.
  Result<v1::LogChunk> Fetch(AgentSession& s, v1::LogRequest req,
                             std::chrono::milliseconds timeout);
  // An agent's answer, from session `from`; one nobody waits for (or from another session than
  // the one asked) is dropped.
  void Deliver(const AgentSession* from, v1::LogChunk c);

 private:
  struct Waiting {
    const AgentSession* asked = nullptr;
    std::optional<v1::LogChunk> answer;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_id_ = 1;
  std::map<int64_t, Waiting> waiting_;
};

struct DispatcherOptions {
  int interval_ms = 1000;            // a pass at least this often, even when nothing notifies
  int agent_timeout_s = 15;          // silent agents are dropped and their runs requeued after this
  int heartbeat_interval_ms = 2000;  // agents beat this often; liveness is flushed as often
  const Clock* clock = nullptr;      // the clock of windows and schedules; null = the system clock
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
  // One dispatch pass (also used by tests): cancels sent, runs claimed for every live session
  // with free slots and sent. Returns the number of runs assigned.
  int DispatchOnce();
  // A slot of `s` was just freed by a result stored on the calling thread: claims for `s` at once,
  // in a transaction of its own on this thread, instead of waiting for the next pass. A pass that
  // is claiming for the same agent at this moment, an agent that cannot take work now, or a claim
  // that leaves a slot free wakes the dispatcher instead; a session no longer registered (closing)
  // gets nothing. Returns the number of runs assigned.
  int ClaimFreedSlot(const std::shared_ptr<AgentSession>& s);
  // Liveness (also used by tests): closes sessions silent for the agent timeout, flushes the
  // others' heartbeats, and expires silent agents once the grace period has passed.
  void LivenessOnce();
  // One scheduler pass if this server leads (also used by tests): queues due periodic checks and
  // applies the window-end policy. Returns the number of checks queued plus runs stopped.
  int ScheduleOnce();
  bool leader() const { return leader_.load(); }
  size_t sessions() const;
  // The live session of the agent named `name` on this server, or null.
  std::shared_ptr<AgentSession> SessionOf(const std::string& name) const;
  LogRelay& logs() { return logs_; }

 private:
  void Loop();      // dispatch passes, on thread_
  void TickLoop();  // LivenessOnce and ScheduleOnce once a second, on tick_thread_
  std::vector<std::shared_ptr<AgentSession>> Sessions() const;
  // Whether `s` may be given work now (not busy, healthy, heard from recently).
  bool CanTakeWork(const AgentSession& s, int64_t now_ms) const;
  // Claims for `targets` in one transaction and sends what was claimed; on either thread. An
  // agent another claim of this server is working on is left out (two claims for one agent at
  // once could both see its slot free). The caller keeps the sessions alive.
  int ClaimAndSend(std::vector<AgentSession*> targets);
  // {"<schedule id>": seconds left} of the open windows; schedules read at most once a second.
  std::string OpenWindowsNow();

  Store* store_;
  DispatcherOptions opts_;
  LogFn log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable tick_cv_;  // wakes the tick thread at Stop
  bool wake_ = false;
  bool stop_ = false;
  std::map<const AgentSession*, std::shared_ptr<AgentSession>> sessions_;
  ScheduleBook schedules_;                  // the claims' (thread-safe)
  ScheduleBook tick_schedules_;             // ScheduleOnce's (the tick thread)
  std::mutex windows_mu_;                   // guards the next two
  std::vector<ScheduleRow> schedule_rows_;  // read at most once a second by OpenWindowsNow
  std::chrono::steady_clock::time_point schedules_read_{};
  std::mutex claiming_mu_;
  std::set<int64_t> claiming_;  // agents a claim of this server is working on now
  std::chrono::steady_clock::time_point full_pass_{};  // the last pass that asked for every agent
  std::atomic<bool> leader_{false};
  // Liveness: since when this server has flushed heartbeats without a database error.
  std::chrono::steady_clock::time_point healthy_since_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_flush_{};
  bool flush_failed_ = false;
  // Cancels already sent (run, attempt) -> when, so a pass does not repeat them every time.
  std::map<std::pair<int64_t, int>, std::chrono::steady_clock::time_point> cancels_sent_;
  LogRelay logs_;
  std::thread thread_;  // last two
  std::thread tick_thread_;
};

}  // namespace tunectl

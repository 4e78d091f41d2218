// A fleet of simulated tunectl agents for the load generator. Each agent holds one
// AgentService.Session over its own channel (its own TCP connection, as real agents do) through
// gRPC's callback API, so a few threads serve thousands of streams. It speaks the protocol as
// agent/agent.cc does: Hello → Welcome, heartbeats at Welcome's interval, Assign → RunStarted,
// MetricBatch seq 1..n (acked), RunFinished seq n + 1 (acked); Cancel ends the run as "cancelled".
// Every event is timestamped (steady clock) for the benchmarks. All methods are thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tunectl/v1/tunectl.grpc.pb.h"

namespace tunectl::loadgen {

using Clock = std::chrono::steady_clock;
using Time = Clock::time_point;

double Seconds(Clock::duration d);

// What a simulated job does once assigned. Applies to runs assigned after Fleet::SetShape.
struct JobShape {
  int batches = 1;           // MetricBatch messages per run
  int samples = 10;          // samples per batch
  int window = 64;           // unacked batches in flight at most
  int duration_ms = 0;       // RunFinished no earlier than this after the Assign …
  double jitter = 0;         // … ± this fraction of it, uniformly
  bool hold_start = false;   // wait at the start gate (Fleet::ReleaseStarts) before RunStarted
  bool hold_finish = false;  // wait at the finish gate (Fleet::ReleaseFinishes) before RunFinished
};

// The samples of batch `seq` (1-based), sample i: the same rows for the server path and for the
// raw COPY it is compared with. Metric i % metrics, steps counting up per metric.
struct SampleRow {
  int metric = 0;  // index into the run's metric names
  int64_t step = 0;
  double value = 0;
  int64_t line_no = 0;
};
SampleRow SampleAt(int64_t seq, int i, int samples, int metrics);

struct AgentSpec {
  std::string name;
  std::map<std::string, std::string> labels;
  int slots = 1;
  int group = 0;  // selects the JobShape
};

// One attempt of one run as this fleet saw it.
struct RunRecord {
  int agent = -1;
  int64_t run_id = 0;
  int attempt = 0;
  std::string workload;
  std::vector<std::string> metrics;  // the Assign's metric rule names (skip: marks left out)
  Time assigned{}, started{}, last_ack{}, finish_sent{}, finish_acked{};
  int batches_sent = 0;
  int batches_acked = 0;
  int64_t samples_sent = 0;
  bool at_start_gate = false;
  bool cancelled = false;   // the server sent Cancel
  bool superseded = false;  // a newer attempt of the run was assigned to this agent
  bool finished = false;    // RunFinished sent
  bool acked = false;       // RunFinished acked
};

// An agent's RunFinished sent and its next Assign (slots = 1: the agent was free in between).
struct Gap {
  int agent = -1;
  std::pair<int64_t, int> run;  // the finished (run id, attempt)
  Time finished{};
  Time assigned{};
};

// What the driver waits on and reads; consistent under the fleet's lock.
struct FleetView {
  int started = 0, welcomed = 0, done = 0;
  int64_t assigns = 0, finish_acks = 0, heartbeats = 0, stray_acks = 0;
  int64_t duplicate_assigns = 0;  // an Assign repeated to the agent that holds that attempt
  int64_t double_assigns = 0;     // one (run, attempt) assigned twice: a dispatch error
  std::vector<int> assigns_of;    // per agent
  std::vector<std::pair<int64_t, int>> last_assign_of;  // per agent: (run id, attempt)
  std::vector<std::optional<Time>> last_finish;         // per agent: awaiting its next Assign
  std::map<std::pair<int64_t, int>, RunRecord> runs;    // by (run id, attempt)
  std::vector<Gap> gaps;
  std::vector<std::string> errors;  // streams that ended while not closing, and why
};

class SimAgent;

class Fleet {
 public:
  explicit Fleet(std::string server);
  ~Fleet();  // closes every session (as CloseAll with 30 s)
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  int Add(AgentSpec spec);  // opens the session at once; returns the agent's index
  void SetShape(int group, JobShape shape);
  const AgentSpec& spec(int agent) const;
  int size() const;

  // Waits until pred(view) holds (checked after every event) or the timeout passes.
  bool Wait(const std::function<bool(const FleetView&)>& pred, double timeout_s);
  // Reads the view under the lock.
  template <class F>
  auto Read(F f) {
    std::lock_guard<std::mutex> g(mu_);
    return f(static_cast<const FleetView&>(view_));
  }

  void ReleaseStarts();    // every run at the start gate sends RunStarted and its batches now
  void ReleaseFinishes();  // every held run may send RunFinished (once its batches are sent)
  // WritesDone on every stream, then waits for the server to end them; cancels stragglers.
  // Returns the number of streams that had to be cancelled.
  int CloseAll(double timeout_s);

 private:
  friend class SimAgent;
  // Runs fn at `at` on the timer thread.
  void At(Time at, std::function<void()> fn);
  void TimerLoop();

  std::string server_;
  mutable std::mutex mu_;  // guards view_, every agent's state and shapes_
  std::condition_variable cv_;
  FleetView view_;
  std::map<int, JobShape> shapes_;
  std::vector<std::unique_ptr<SimAgent>> agents_;
  bool closed_ = false;

  struct Timer {
    Time at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Timer& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
  };
  std::mutex timer_mu_;
  std::condition_variable timer_cv_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t timer_seq_ = 0;
  bool timer_stop_ = false;
  std::thread timer_thread_;
};

}  // namespace tunectl::loadgen

// The node agent's session loop: keeps one AgentService.Session stream to the server, reconnects
// with exponential backoff, runs assignments on their own threads (Executor), and keeps every
// MetricBatch and RunFinished in an outbox until the server acks it; on reconnect the outbox is
// resent, so nothing is lost when the server restarts. With a spool directory the outbox is also
// on disk, so results of runs that finished while the server was unreachable survive an agent
// restart too (runs killed by the agent's own shutdown are not reported: the server requeues
// them). Run() blocks; Stop() is thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/executor.h"
#include "core/log.h"
#include "core/selector.h"
#include "sys/process.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

struct AgentOptions {
  std::string server = "127.0.0.1:7443";
  std::string name;  // required; unique per agent
  LabelMap labels;
  int slots = 1;  // runs executed at once
  ExecutorOptions executor;
  int backoff_initial_ms = 250;  // reconnect backoff, doubling …
  int backoff_max_ms = 5000;     // … up to this
  std::string idle_probe;        // shell command; exit 0 = node free of production work
  std::string spool_dir;         // unacked messages on disk ("" = in memory only)
};

class Agent : private RunSink {
 public:
  Agent(AgentOptions opts, ProcessLauncher* launcher, LogFn log);
  ~Agent() override;
  void Run();
  void Stop();

 private:
  struct Active {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> cancel;
    int attempt = 0;
    bool done = false;
    bool server_cancelled = false;  // a Cancel from the server, not the agent's shutdown
  };
  struct Pending {
    int64_t run_id = 0;
    int attempt = 0;
    int64_t seq = 0;
    v1::AgentMessage msg;
  };
  class Stream;

  bool Session();                        // one connection; returns true if it got as far as Welcome
  void Send(const v1::AgentMessage& m);  // best effort
  void SendReliable(Pending p);          // kept until acked
  void OnAck(const v1::Ack& a);
  void StartRun(const v1::Assign& a);
  void CancelRun(const v1::Cancel& c);
  void ReapFinished();
  void HeartbeatLoop();
  void LoadSpool();  // unacked messages of an earlier agent process back into the outbox
  std::string SpoolPath(const Pending& p) const;
  bool Busy();  // runs the idle probe (false when there is none)

  void OnStarted(const v1::RunStarted& m) override;
  void OnBatch(const v1::MetricBatch& m) override;
  void OnFinished(const v1::RunFinished& m) override;
  void OnLeftovers(int64_t run_id, int processes) override;
  // Once, when the server first accepts this agent's name: kills processes of jobs that an
  // earlier life of this agent (same name, same runs dir) left running, before any new Assign.
  void StopEarlierLifesJobs();

  AgentOptions opts_;
  ProcessLauncher* launcher_;
  LogFn log_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> shutting_down_{false};

  std::string host_, instance_;  // this process, for name claims (fixed at construction)
  std::mutex mu_;                // guards everything below
  std::condition_variable cv_;
  Stream* stream_ = nullptr;  // set while connected
  std::deque<Pending> outbox_;
  std::map<int64_t, Active> runs_;  // by run id; removed once RunFinished is acked and joined
  int heartbeat_ms_ = 2000;
  bool cleaned_up_ = false;  // StopEarlierLifesJobs ran
  // New attempts of runs whose older attempt is still being stopped: started once it is gone.
  std::map<int64_t, v1::Assign> deferred_;
};

}  // namespace tunectl

// The node agent's session loop: keeps one AgentService.Session stream to the server (gRPC
// keepalive on, so a half-open connection is noticed in seconds), reconnects with exponential
// backoff, runs assignments on their own threads (Executor), and keeps every MetricBatch and
// RunFinished in an outbox until the server acks it; on reconnect the outbox is resent, so nothing
// is lost when the server restarts. With a spool directory the outbox is also on disk, so results
// of runs that finished while the server was unreachable survive an agent restart too (runs
// killed by the agent's own shutdown are not reported: the server requeues them), and past
// `outbox_memory_bytes` the outbox keeps only the files, so memory stays bounded.
//
// Nothing blocks a job or the heartbeat: executors hand batches to the outbox (a lock and, with a
// spool, one file write) and only the sender thread writes to the stream; the idle probe and the
// node's health check run on their own thread with a timeout, and the heartbeat reports their
// last result. Run() blocks; Stop() is thread-safe and Run() returns within the executors' kill
// grace period of it.
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
#include "sys/endpoint.h"
#include "sys/process.h"
#include "tunectl/v1/tunectl.pb.h"

namespace tunectl {

struct AgentOptions {
  // The server and the session's credentials (sys/endpoint.h): a bearer token (role agent bound
  // to `name`, or admin), TLS when it has a CA, a client certificate for mutual TLS.
  Endpoint endpoint{"127.0.0.1:7443"};
  std::string name;  // required; unique per agent
  LabelMap labels;
  int slots = 1;  // runs executed at once
  // Local executor: what each slot owns (one entry per slot, e.g. {"0,1", "2,3"}; empty = no GPU
  // or CPU isolation), from --gpus/--cpus split evenly among the slots.
  std::vector<std::string> slot_gpus, slot_cpus;
  // The slots do not disturb each other: an experiment's control and variant may run at once
  // here. Off by default, so the server runs one of an experiment's runs at a time on this node.
  bool isolated_slots = false;
  ExecutorOptions executor;
  int backoff_initial_ms = 250;       // reconnect backoff, doubling …
  int backoff_max_ms = 5000;          // … up to this
  std::string idle_probe;             // shell command; exit 0 = node free of production work
  int idle_probe_timeout_ms = 10000;  // a probe still running then is killed and counts as busy
  std::string spool_dir;              // unacked messages on disk ("" = in memory only)
  int64_t outbox_memory_bytes = 64 << 20;  // beyond this, spooled messages stay on disk only
  int64_t min_free_disk_bytes = 64 << 20;  // less free in the runs dir: the node is unhealthy
  int keepalive_ms = 10000;  // gRPC keepalive ping interval (the peer has 5 s to answer)
  // A run directory (generated files, output.log for `tunectl run logs`) is removed this long
  // after its run last wrote to it; checked every `prune_interval_s`. <= 0 keeps them all.
  int64_t keep_run_dirs_s = 7 * 86400;
  int64_t prune_interval_s = 600;
};

class Agent : private RunSink {
 public:
  // `launcher` (the idle probe's commands) and `executor` are not owned and outlive the Agent.
  Agent(AgentOptions opts, ProcessLauncher* launcher, Executor* executor, LogFn log);
  ~Agent() override;
  void Run();
  void Stop();

 private:
  struct Active {
    std::thread thread;
    std::shared_ptr<RunControl> ctl;
    int attempt = 0;
    int slot = -1;
    bool done = false;
    bool server_cancelled = false;  // a Cancel from the server, not the agent's shutdown
  };
  struct Pending {
    int64_t run_id = 0;
    int attempt = 0;
    int64_t seq = 0;
    v1::AgentMessage msg;  // empty while only on disk
    bool on_disk_only = false;
    int64_t bytes = 0;
    bool is_finish = false;  // a RunFinished: its ack ends the run here
  };
  class Stream;

  bool Session();  // one connection; returns true if it got as far as Welcome
  void SenderLoop();
  void HeartbeatLoop();
  void ProbeLoop();
  void SendBestEffort(v1::AgentMessage m);  // dropped while disconnected
  void SendReliable(Pending p);             // kept until acked
  void OnAck(const v1::Ack& a);
  void StartRun(const v1::Assign& a);
  SlotGrant FreeSlot() const;  // the lowest slot no run holds; under mu_
  void CancelRun(int64_t run_id, int attempt);
  void ReapFinished();
  void LoadSpool();  // unacked messages of an earlier agent process back into the outbox
  std::string SpoolPath(const Pending& p) const;
  void CheckNode();          // idle probe and health check; on the probe thread
  void PruneRunDirsIfDue();  // the retention of run directories; on the probe thread

  void OnPending(const v1::RunPending& m) override;
  void OnStarted(const v1::RunStarted& m) override;
  void OnBatch(const v1::MetricBatch& m) override;
  void OnFinished(const v1::RunFinished& m) override;
  void OnLeftovers(int64_t run_id, int processes) override;
  // Once, when the server first accepts this agent's name: kills processes of jobs that an
  // earlier life of this agent (same name, same runs dir) left running, before any new Assign.
  void StopEarlierLifesJobs();
  // Starts following the jobs an earlier agent process left to the cluster (after a Welcome).
  void FollowAdopted();

  AgentOptions opts_;
  ProcessLauncher* launcher_;
  Executor* executor_;
  LogFn log_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> shutting_down_{false};

  std::string host_, instance_;  // this process, for name claims (fixed at construction)
  std::mutex mu_;                // guards everything below
  std::condition_variable cv_;
  std::shared_ptr<Stream> stream_;  // set while connected (after Hello was written)
  uint64_t generation_ = 0;         // of the stream: what was sent on an earlier one is resent
  bool sender_writing_ = false;     // the sender is inside a Write on stream_
  std::deque<v1::AgentMessage> control_;  // heartbeats and RunStarted, ahead of the outbox
  std::deque<Pending> outbox_;
  size_t unsent_ = 0;               // outbox_[unsent_..] not yet written on this stream
  int64_t outbox_memory_ = 0;       // bytes of messages held in memory
  std::map<int64_t, Active> runs_;  // by run id; removed once RunFinished is acked and joined
  int heartbeat_ms_ = 2000;
  bool cleaned_up_ = false;  // StopEarlierLifesJobs ran
  // New attempts of runs whose older attempt is still being stopped: started once it is gone.
  std::map<int64_t, v1::Assign> deferred_;
  std::vector<v1::Assign> adopted_;  // Executor::Adoptable() at start, until FollowAdopted
  // The node, as the probe thread last saw it.
  bool busy_ = false;
  std::string unhealthy_;      // "" = healthy
  std::string infra_failure_;  // the last run this node could not run, and why
  std::chrono::steady_clock::time_point infra_failure_until_{};
  bool check_now_ = false;                             // wakes the probe thread
  std::chrono::steady_clock::time_point pruned_at_{};  // the last PruneRunDirsIfDue that ran
};

}  // namespace tunectl

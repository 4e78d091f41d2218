// Wakes this server's dispatcher when any server queues a run or asks for one to stop: LISTENs on
// PostgreSQL's tunectl_dispatch channel (a trigger on runs notifies it, migration 0010) over a
// connection of its own, reconnecting with backoff while the database is away; `on_wake` is also
// called after each (re)connect, since notifications sent meanwhile are lost. One thread; the
// destructor stops it within about a second (or the connect timeout while connecting).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace tunectl {

class DispatchListener {
 public:
  // `on_wake` runs on the listener's thread and must be quick; `on_error` gets what went wrong
  // (for the server's log).
  DispatchListener(std::string dsn, std::function<void()> on_wake,
                   std::function<void(const std::string&)> on_error);
  ~DispatchListener();

 private:
  void Loop();
  const std::string dsn_;
  std::function<void()> on_wake_;
  std::function<void(const std::string&)> on_error_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last
};

}  // namespace tunectl

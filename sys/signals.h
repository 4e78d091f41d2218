// Termination signals for the daemons: block SIGINT/SIGTERM in every thread (call first, before
// any thread starts) and wait for one on a dedicated thread. SIGPIPE is ignored.
#pragma once

#include <functional>
#include <thread>

namespace tunectl {

class TerminationSignals {
 public:
  TerminationSignals();  // blocks SIGINT and SIGTERM in the calling (main) thread
  ~TerminationSignals();
  // Starts a thread that calls `on_signal(signo)` once when SIGINT or SIGTERM arrives.
  void OnSignal(std::function<void(int)> on_signal);

 private:
  std::thread waiter_;
};

}  // namespace tunectl

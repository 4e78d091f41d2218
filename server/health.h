// The database's health as the server sees it, from memory. A probe thread pings PostgreSQL over
// its own connection every `interval_ms` and refreshes the /metrics snapshot; a watchdog marks
// the server's connection pool down while a ping fails or has not come back within `stall_ms`
// (a frozen or stopped database), so every request fails fast with "database unavailable"
// instead of hanging, and up again once a ping answers. /healthz and /metrics read Get() only,
// so they answer within a bound whatever the database does. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "server/store/pool.h"
#include "server/store/store.h"

namespace tunectl {

struct HealthOptions {
  int interval_ms = 1000;  // between pings
  int stall_ms = 3000;     // a ping out this long means the database does not answer
};

class HealthProbe {
 public:
  // `gate` (not owned, outlives the probe) is marked down/up; `dsn` gets a connection of its own.
  static Result<std::unique_ptr<HealthProbe>> Start(const std::string& dsn, const Clock* clock,
                                                    ConnectionPool* gate, HealthOptions opts = {});
  ~HealthProbe();

  struct View {
    bool healthy = false;                   // the last ping answered, recently
    std::string error;                      // why not
    std::optional<StoreSnapshot> snapshot;  // for /metrics; only while healthy
  };
  View Get() const;

 private:
  struct State;  // shared with the probe thread, which may outlive a destructor it cannot join
  HealthProbe(std::shared_ptr<State> s, ConnectionPool* gate);
  static void ProbeLoop(std::shared_ptr<State> s);
  void WatchLoop();

  std::shared_ptr<State> s_;
  ConnectionPool* gate_;
  std::thread probe_, watch_;  // last: they start after everything they use
};

}  // namespace tunectl

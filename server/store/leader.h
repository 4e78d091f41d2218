// Leadership among servers sharing one database: a session-level PostgreSQL advisory lock held
// on a connection of its own. Whoever holds it runs the scheduler (periodic checks, window ends);
// losing the connection loses the lock, and another server takes over on its next Check().
// Not thread-safe: one owner thread calls Check().
#pragma once

#include <cstdint>
#include <memory>
#include <pqxx/connection>
#include <string>

namespace tunectl {

class LeaderLock {
 public:
  static constexpr int64_t kSchedulerKey = 7325000;
  explicit LeaderLock(std::string dsn, int64_t key = kSchedulerKey);
  ~LeaderLock();
  // Takes the lock if free, or confirms the connection holding it is alive. Returns held().
  bool Check();
  bool held() const { return held_; }

 private:
  std::string dsn_;
  int64_t key_;
  std::unique_ptr<pqxx::connection> conn_;
  bool held_ = false;
};

}  // namespace tunectl

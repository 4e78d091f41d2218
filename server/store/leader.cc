#include "server/store/leader.h"

#include <pqxx/pqxx>

namespace tunectl {

LeaderLock::LeaderLock(std::string dsn, int64_t key) : dsn_(std::move(dsn)), key_(key) {}

LeaderLock::~LeaderLock() {
  // Closing the connection releases the lock too, but only once the backend has exited; unlock
  // first so another server can take over at once.
  if (!held_ || !conn_) return;
  try {
    pqxx::nontransaction n(*conn_);
    n.exec_params("SELECT pg_advisory_unlock($1)", key_);
  } catch (const std::exception&) {
  }
}

bool LeaderLock::Check() {
  try {
    if (!conn_ || !conn_->is_open()) {
      held_ = false;
      conn_ = std::make_unique<pqxx::connection>(dsn_);
    }
    pqxx::nontransaction n(*conn_);
    if (held_) {
      n.exec("SELECT 1");
    } else {
      held_ = n.exec_params1("SELECT pg_try_advisory_lock($1)", key_)[0].as<bool>();
    }
  } catch (const std::exception&) {
    held_ = false;
    conn_.reset();
  }
  return held_;
}

}  // namespace tunectl

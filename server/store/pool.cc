#include "server/store/pool.h"

#include <pqxx/pqxx>

namespace tunectl {

ConnectionPool::Lease::Lease(ConnectionPool* pool, std::unique_ptr<pqxx::connection> c)
    : pool_(pool), conn_(std::move(c)) {}
ConnectionPool::Lease::Lease(Lease&& o) noexcept : pool_(o.pool_), conn_(std::move(o.conn_)) {}
ConnectionPool::Lease::~Lease() {
  if (conn_) pool_->Release(std::move(conn_));
}

Result<std::unique_ptr<ConnectionPool>> ConnectionPool::Open(const std::string& dsn, int max_size) {
  std::unique_ptr<ConnectionPool> p(new ConnectionPool(dsn, max_size));
  try {
    auto c = std::make_unique<pqxx::connection>(dsn);
    p->idle_.push_back(std::move(c));
    p->open_ = 1;
  } catch (const std::exception& e) {
    return Status::Unavailable(std::string("database unavailable: cannot connect to PostgreSQL: ") +
                               e.what());
  }
  return p;
}

ConnectionPool::~ConnectionPool() = default;

std::string ConnectionPool::WithConnectTimeout(std::string dsn) {
  if (dsn.find("connect_timeout") != std::string::npos) return dsn;
  if (dsn.rfind("postgresql://", 0) == 0 || dsn.rfind("postgres://", 0) == 0)
    return dsn + (dsn.find('?') == std::string::npos ? "?" : "&") + "connect_timeout=5";
  return dsn + (dsn.empty() ? "" : " ") + "connect_timeout=5";
}

void ConnectionPool::MarkDown(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  down_ = why.empty() ? "it does not answer" : why;
  cv_.notify_all();
}

void ConnectionPool::MarkUp() {
  std::lock_guard<std::mutex> g(mu_);
  down_.clear();
}

Result<ConnectionPool::Lease> ConnectionPool::Acquire() {
  std::unique_lock<std::mutex> l(mu_);
  const bool got = cv_.wait_for(l, std::chrono::milliseconds(wait_ms),
                                [&] { return !down_.empty() || !idle_.empty() || open_ < max_; });
  if (!down_.empty()) return Status::Unavailable("database unavailable: " + down_);
  if (!got)
    return Status::Unavailable("database unavailable: all " + std::to_string(max_) +
                               " connections stayed busy for " + std::to_string(wait_ms / 1000) +
                               " s");
  if (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(c));
  }
  ++open_;
  l.unlock();
  try {
    return Lease(this, std::make_unique<pqxx::connection>(dsn_));
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> g(mu_);
    --open_;
    cv_.notify_one();
    return Status::Unavailable(std::string("database unavailable: cannot connect to PostgreSQL: ") +
                               e.what());
  }
}

void ConnectionPool::Release(std::unique_ptr<pqxx::connection> c) {
  std::lock_guard<std::mutex> g(mu_);
  if (c->is_open()) {
    idle_.push_back(std::move(c));
  } else {
    --open_;
  }
  cv_.notify_one();
}

}  // namespace tunectl

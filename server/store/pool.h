// A small pool of libpqxx connections. Thread-safe; a Lease returns its connection on
// destruction (a broken connection is dropped and reopened on the next Acquire). A pool marked
// down (by the server's health probe: the database stopped answering) refuses at once with
// Unavailable, so requests fail fast instead of hanging on a frozen database; an Acquire that
// finds every connection busy gives up after `wait_ms`.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <pqxx/connection>
#include <string>
#include <vector>

#include "core/status.h"

namespace tunectl {

class ConnectionPool {
 public:
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<pqxx::connection> c);
    Lease(Lease&&) noexcept;
    ~Lease();
    pqxx::connection& operator*() { return *conn_; }
    pqxx::connection* operator->() { return conn_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
  };

  // Opens one connection to check `dsn`; Unavailable with the server's message when it fails.
  static Result<std::unique_ptr<ConnectionPool>> Open(const std::string& dsn, int max_size = 8);
  ~ConnectionPool();

  Result<Lease> Acquire();
  const std::string& dsn() const { return dsn_; }
  void MarkDown(const std::string& why);  // Acquire fails with "database unavailable: <why>"
  void MarkUp();
  int wait_ms = 10000;  // longest wait for a free connection

 private:
  ConnectionPool(std::string dsn, int max_size)
      : dsn_(WithConnectTimeout(std::move(dsn))), max_(max_size) {}
  // A database that does not answer fails a connection in 5 s instead of hanging: the DSN gets
  // connect_timeout=5 unless it sets one (keyword or URI form).
  static std::string WithConnectTimeout(std::string dsn);
  void Release(std::unique_ptr<pqxx::connection> c);

  std::string dsn_;
  int max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  int open_ = 0;
  std::string down_;  // why the database is considered unavailable; "" = up
};

}  // namespace tunectl

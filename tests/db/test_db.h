// A fresh, migrated database per test on the PostgreSQL named by TUNECTL_TEST_DSN (an admin DSN;
// scripts/test starts a private server and sets it). Without it the test is skipped, unless
// TUNECTL_REQUIRE_DB=1 (as in scripts/test), where a missing database is a failure.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/store/pool.h"
#include "server/store/store.h"

namespace tunectl {

class TestDb {
 public:
  // Creates database tunectl_test_<n>; drops it on destruction.
  static std::unique_ptr<TestDb> Create();
  // The same without applying any migration (no schema_migrations yet): for migration tests.
  static std::unique_ptr<TestDb> CreateEmpty();
  ~TestDb();
  const std::string& dsn() const { return dsn_; }
  ConnectionPool& pool() { return *pool_; }
  Store& store() { return *store_; }
  // Runs one SQL statement and returns the first column of the first row as text.
  std::string Scalar(const std::string& sql);

 private:
  static std::unique_ptr<TestDb> Make(bool migrate);
  std::string admin_dsn_, name_, dsn_;
  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<Store> store_;
};

}  // namespace tunectl

// Use first in a DB test body: skips or fails when no database is configured.
#define TUNECTL_TEST_DB(var) TUNECTL_TEST_DB_FROM(var, ::tunectl::TestDb::Create())
#define TUNECTL_TEST_EMPTY_DB(var) TUNECTL_TEST_DB_FROM(var, ::tunectl::TestDb::CreateEmpty())
#define TUNECTL_TEST_DB_FROM(var, create)                                              \
  auto var = (create);                                                                 \
  if (!var) {                                                                          \
    if (std::getenv("TUNECTL_REQUIRE_DB")) FAIL() << "TUNECTL_TEST_DSN is not usable"; \
    GTEST_SKIP() << "TUNECTL_TEST_DSN not set";                                        \
  }

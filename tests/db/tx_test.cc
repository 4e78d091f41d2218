// The store's one transaction wrapper: conflicts retried, every exception mapped once, the
// transaction's clock visible to SQL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "server/store/store_internal.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

using internal::InTx;
using ::testing::HasSubstr;

TEST(Transaction, DeadlockIsRetriedAndTheRetryCommits) {
  TUNECTL_TEST_DB(db);
  int attempts = 0;
  auto r = InTx<int>(&db->pool(), nullptr, [&](pqxx::work& w) -> Result<int> {
    w.exec("CREATE TABLE IF NOT EXISTS tx_probe (n int)");
    w.exec("INSERT INTO tx_probe VALUES (1)");
    if (++attempts == 1) throw pqxx::deadlock_detected("deadlock detected (injected)");
    return attempts;
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, 2);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM tx_probe"), "1");  // the failed try rolled back
}

TEST(Transaction, SerializationFailuresGiveUpAfterThreeAttempts) {
  TUNECTL_TEST_DB(db);
  int attempts = 0;
  auto r = InTx<int>(&db->pool(), nullptr, [&](pqxx::work&) -> Result<int> {
    ++attempts;
    throw pqxx::serialization_failure("could not serialize access (injected)");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(attempts, internal::kTxAttempts);
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("could not serialize"));
}

TEST(Transaction, ANonDatabaseExceptionIsInternalAndSaysWhatItWas) {
  TUNECTL_TEST_DB(db);
  auto r = InTx<int>(&db->pool(), nullptr,
                     [&](pqxx::work&) -> Result<int> { throw std::out_of_range("map::at"); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInternal);
  EXPECT_THAT(r.status().message(), HasSubstr("internal error in the store"));
  EXPECT_THAT(r.status().message(), HasSubstr("out_of_range"));
  EXPECT_THAT(r.status().message(), HasSubstr("map::at"));
  EXPECT_THAT(r.status().message(), testing::Not(HasSubstr("database error")));
}

TEST(Transaction, TheClockIsTheTransactionsNow) {
  TUNECTL_TEST_DB(db);
  ManualClock clock(1796603400LL * 1000);  // 2026-12-07 00:30 UTC
  auto r = InTx<std::string>(&db->pool(), &clock, [&](pqxx::work& w) -> Result<std::string> {
    return w.exec1("SELECT to_char(tunectl_now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')")[0]
        .as<std::string>();
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "2026-12-07 00:30");
}

}  // namespace
}  // namespace tunectl

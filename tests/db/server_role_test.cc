// The server's own database role (GrantServerRole): what it may do, and what it may not do to the
// tuning log and the audit trail even when it tries with its own connection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "core/auth.h"
#include "core/spec.h"
#include "server/store/migrations.h"
#include "tests/db/test_db.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

// A login role for one test, dropped (with what it was granted) at the end.
class TestRole {
 public:
  explicit TestRole(TestDb& db) : db_(db) {
    static std::atomic<int> n{0};
    name_ = "tunectl_role_" + std::to_string(getpid()) + "_" + std::to_string(n++);
    pqxx::connection c(db_.dsn());
    pqxx::nontransaction t(c);
    t.exec0("CREATE ROLE " + name_ + " LOGIN NOSUPERUSER");
  }
  ~TestRole() {
    try {
      pqxx::connection c(db_.dsn());
      pqxx::nontransaction t(c);
      t.exec0("DROP OWNED BY " + name_);
      t.exec0("DROP ROLE " + name_);
    } catch (...) {
    }
  }
  const std::string& name() const { return name_; }
  // The test database as this role (a later key of a libpq DSN wins).
  std::string dsn() const { return db_.dsn() + " user=" + name_; }

 private:
  TestDb& db_;
  std::string name_;
};

// The error of one statement run as `dsn` ("" when it succeeded).
std::string ErrorOf(const std::string& dsn, const std::string& sql) {
  try {
    pqxx::connection c(dsn);
    pqxx::work w(c);
    w.exec(sql);
    w.commit();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

WorkloadSpec Spec() {
  auto s = ParseWorkloadSpec(R"(name: demo
command: ["python3", "train.py"]
params:
  num_workers: {type: int, default: 1, min: 0, max: 64}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(ServerRole, RunsTheStoreButCannotRewriteTheLogOrTheAuditTrail) {
  TUNECTL_TEST_DB(db);
  TestRole role(*db);
  ASSERT_TRUE(GrantServerRole(db->pool(), role.name()).ok());
  auto pool = ConnectionPool::Open(role.dsn(), 2);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  Store store(pool->get());
  // What the server does: a workload (log entry + audit event), a token made and revoked, sealing.
  auto applied = store.ApplyWorkload(Spec(), "text", "user:t");
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  ASSERT_TRUE(store.CreateToken({"alice", Role::kViewer, ""}, TokenHash("tct_x"), "user:t").ok());
  ASSERT_TRUE(store.RevokeToken("alice", "user:t").ok());
  auto sealed = store.SealAudit();
  ASSERT_TRUE(sealed.ok()) << sealed.status().message();
  EXPECT_GT(*sealed, 0);
  EXPECT_EQ(ErrorOf(role.dsn(), "UPDATE runs SET state = state"), "");

  // What it may not: every way around the append-only rule, with its own connection.
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"tuning_log", "actor"},
      {"audit_events", "actor"},
      {"audit_chain", "seq"},
      {"workload_revisions", "revision"}};
  for (const auto& [t, column] : tables) {
    SCOPED_TRACE(t);
    EXPECT_THAT(ErrorOf(role.dsn(), "UPDATE " + t + " SET " + column + " = " + column),
                HasSubstr("permission denied"));
    EXPECT_THAT(ErrorOf(role.dsn(), "DELETE FROM " + t), HasSubstr("permission denied"));
    EXPECT_THAT(ErrorOf(role.dsn(), "TRUNCATE " + t), HasSubstr("permission denied"));
    EXPECT_THAT(ErrorOf(role.dsn(), "ALTER TABLE " + t + " DISABLE TRIGGER USER"),
                HasSubstr("must be owner"));
  }
  EXPECT_THAT(ErrorOf(role.dsn(), "DELETE FROM tokens"), HasSubstr("permission denied"));
  EXPECT_THAT(ErrorOf(role.dsn(), "DELETE FROM schema_migrations"), HasSubstr("permission denied"));
  EXPECT_THAT(ErrorOf(role.dsn(), "SET session_replication_role = replica"),
              HasSubstr("permission denied"));
  EXPECT_THAT(ErrorOf(role.dsn(), "CREATE TABLE sneaky(x int)"), HasSubstr("permission denied"));
  EXPECT_NE(db->Scalar("SELECT count(*) FROM audit_events"), "0");
}

TEST(ServerRole, PrepareDatabaseMigratesAsTheOwnerThenGrantsTheServer) {
  TUNECTL_TEST_EMPTY_DB(db);
  TestRole role(*db);
  auto server = ConnectionPool::Open(role.dsn(), 1);
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto applied = PrepareDatabase(**server, &db->pool());
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  EXPECT_EQ(*applied, static_cast<int>(EmbeddedMigrations().size()));
  EXPECT_EQ(db->Scalar("SELECT count(DISTINCT pg_get_userbyid(relowner)) FROM pg_class WHERE "
                       "relnamespace = 'public'::regnamespace AND relkind = 'r' AND "
                       "pg_get_userbyid(relowner) = '" +
                       role.name() + "'"),
            "0");  // the server role owns nothing
  EXPECT_EQ(ErrorOf(role.dsn(), "SELECT count(*) FROM tokens"), "");
  EXPECT_THAT(ErrorOf(role.dsn(), "UPDATE tuning_log SET actor = actor"),
              HasSubstr("permission denied"));
  auto again = PrepareDatabase(**server, &db->pool());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
}

TEST(ServerRole, GrantingTwiceChangesNothing) {
  TUNECTL_TEST_DB(db);
  TestRole role(*db);
  ASSERT_TRUE(GrantServerRole(db->pool(), role.name()).ok());
  const std::string acl =
      "SELECT string_agg(relname || '=' || COALESCE(relacl::text, ''), ',' "
      "ORDER BY relname) FROM pg_class WHERE relnamespace = "
      "'public'::regnamespace AND relkind IN ('r', 'S')";
  const std::string before = db->Scalar(acl);
  ASSERT_TRUE(GrantServerRole(db->pool(), role.name()).ok());
  EXPECT_EQ(db->Scalar(acl), before);
}

TEST(ServerRole, WarnsAboutASuperuserAndAnOwnerOfTheLog) {
  TUNECTL_TEST_DB(db);
  auto super = ServerRoleWarnings(db->pool());  // the test database's admin
  ASSERT_TRUE(super.ok());
  ASSERT_EQ(super->size(), 1u);
  EXPECT_THAT((*super)[0], HasSubstr("is a superuser"));

  TestRole role(*db);
  ASSERT_TRUE(GrantServerRole(db->pool(), role.name()).ok());
  auto granted = ConnectionPool::Open(role.dsn(), 1);
  ASSERT_TRUE(granted.ok());
  auto none = ServerRoleWarnings(**granted);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty()) << (*none)[0];

  ASSERT_EQ(ErrorOf(db->dsn(), "ALTER TABLE tuning_log OWNER TO " + role.name()), "");
  auto owner = ServerRoleWarnings(**granted);
  ASSERT_TRUE(owner.ok());
  ASSERT_EQ(owner->size(), 1u);
  EXPECT_THAT((*owner)[0], HasSubstr("owns tuning_log"));
}

}  // namespace
}  // namespace tunectl

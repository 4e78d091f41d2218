#include "tests/db/test_db.h"

#include <unistd.h>

#include <atomic>
#include <pqxx/pqxx>

#include "server/store/migrations.h"

namespace tunectl {

std::unique_ptr<TestDb> TestDb::Create() {
  return Make(true);
}

std::unique_ptr<TestDb> TestDb::CreateEmpty() {
  return Make(false);
}

std::unique_ptr<TestDb> TestDb::Make(bool migrate) {
  const char* admin = std::getenv("TUNECTL_TEST_DSN");
  if (!admin || !*admin) return nullptr;
  static std::atomic<int> counter{0};
  auto db = std::unique_ptr<TestDb>(new TestDb());
  db->admin_dsn_ = admin;
  db->name_ = "tunectl_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  try {
    pqxx::connection c(db->admin_dsn_);
    pqxx::nontransaction n(c);
    n.exec0("DROP DATABASE IF EXISTS " + db->name_);
    n.exec0("CREATE DATABASE " + db->name_);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "cannot create test database: " << e.what();
    return nullptr;
  }
  db->dsn_ = db->admin_dsn_ + " dbname=" + db->name_;
  auto pool = ConnectionPool::Open(db->dsn_, 8);
  if (!pool.ok()) {
    ADD_FAILURE() << pool.status().message();
    return nullptr;
  }
  db->pool_ = std::move(*pool);
  if (migrate) {
    auto applied = ApplyMigrations(*db->pool_, EmbeddedMigrations());
    if (!applied.ok()) {
      ADD_FAILURE() << applied.status().message();
      return nullptr;
    }
  }
  db->store_ = std::make_unique<Store>(db->pool_.get());
  return db;
}

TestDb::~TestDb() {
  store_.reset();
  pool_.reset();
  try {
    pqxx::connection c(admin_dsn_);
    pqxx::nontransaction n(c);
    n.exec0("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (...) {
  }
}

std::string TestDb::Scalar(const std::string& sql) {
  pqxx::connection c(dsn_);
  pqxx::nontransaction n(c);
  auto r = n.exec(sql);
  if (r.empty() || r[0][0].is_null()) return "";
  return r[0][0].as<std::string>();
}

}  // namespace tunectl

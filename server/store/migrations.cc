#include "server/store/migrations.h"

#include <pqxx/pqxx>

namespace tunectl {

extern const std::vector<std::pair<std::string, std::string>> kEmbeddedMigrations;

const MigrationList& EmbeddedMigrations() {
  return kEmbeddedMigrations;
}

namespace {
constexpr long long kMigrationLock = 0x74756e6563746c01;  // "tunectl" + 1
}

Result<int> ApplyMigrations(ConnectionPool& pool, const MigrationList& migrations) {
  auto lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  pqxx::connection& c = **lease;
  int applied = 0;
  try {
    {
      pqxx::nontransaction n(c);
      n.exec("SELECT pg_advisory_lock(" + std::to_string(kMigrationLock) + ")");
    }
    {
      pqxx::work w(c);
      w.exec0(
          "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, "
          "applied_at timestamptz NOT NULL DEFAULT now())");
      w.commit();
    }
    for (const auto& [name, sql] : migrations) {
      pqxx::work w(c);
      auto r = w.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", name);
      if (!r.empty()) continue;
      w.exec(sql);
      w.exec_params0("INSERT INTO schema_migrations(version) VALUES ($1)", name);
      w.commit();
      ++applied;
    }
    pqxx::nontransaction n(c);
    n.exec("SELECT pg_advisory_unlock(" + std::to_string(kMigrationLock) + ")");
  } catch (const std::exception& e) {
    try {
      pqxx::nontransaction n(c);
      n.exec("SELECT pg_advisory_unlock_all()");
    } catch (...) {
    }
    return Status::Internal(std::string("migration failed: ") + e.what());
  }
  return applied;
}

}  // namespace tunectl

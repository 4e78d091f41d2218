#include "server/store/migrations.h"

#include <algorithm>
#include <map>
#include <pqxx/pqxx>

namespace tunectl {

extern const std::vector<std::pair<std::string, std::string>> kEmbeddedMigrations;

const MigrationList& EmbeddedMigrations() {
  return kEmbeddedMigrations;
}

namespace {

constexpr long long kMigrationLock = 0x74756e6563746c01;  // "tunectl" + 1

// Holds the migration advisory lock on `c` and releases it on every way out (a lock left on a
// pooled connection would block every later server until the connection closes).
class MigrationLock {
 public:
  explicit MigrationLock(pqxx::connection& c) : c_(c) {
    pqxx::nontransaction n(c_);
    n.exec("SELECT pg_advisory_lock(" + std::to_string(kMigrationLock) + ")");
  }
  ~MigrationLock() {
    try {
      pqxx::nontransaction n(c_);
      n.exec("SELECT pg_advisory_unlock(" + std::to_string(kMigrationLock) + ")");
    } catch (...) {
      // A broken connection: its session, and so the lock, ends with it.
    }
  }
  MigrationLock(const MigrationLock&) = delete;
  MigrationLock& operator=(const MigrationLock&) = delete;

 private:
  pqxx::connection& c_;
};

// Creates or upgrades schema_migrations, backfills checksums of rows written before they were
// recorded, and checks the recorded history against `migrations` (their checksums in `sums`).
// The caller commits only when the returned Status is ok.
Status PrepareHistory(pqxx::work& w, const MigrationList& migrations,
                      const std::map<std::string, std::string>& sums) {
  w.exec0(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, "
      "applied_at timestamptz NOT NULL DEFAULT now(), checksum text)");
  w.exec0("ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text");
  for (const auto& [name, sum] : sums)
    w.exec_params0(
        "UPDATE schema_migrations SET checksum = $2 WHERE version = $1 AND checksum IS NULL", name,
        sum);
  std::string newest;
  for (const auto& m : migrations) newest = std::max(newest, m.first);
  const pqxx::result recorded =
      w.exec("SELECT version, COALESCE(checksum, '') FROM schema_migrations ORDER BY version");
  std::string newer;  // the newest recorded migration this binary does not know, if later
  for (const auto& r : recorded)
    if (const std::string name = r[0].as<std::string>(); sums.count(name) == 0 && name > newest)
      newer = name;
  if (!newer.empty())
    return Status::FailedPrecondition(
        "database schema is newer than this binary: migration " + newer +
        " is applied but this tunectl-server knows " +
        (newest.empty() ? std::string("no migrations") : "up to " + newest) +
        "; upgrade tunectl-server");
  for (const auto& r : recorded) {
    auto it = sums.find(r[0].as<std::string>());
    if (it == sums.end() || it->second == r[1].as<std::string>()) continue;
    return Status::FailedPrecondition(
        "migration " + it->first + " was changed after it was applied (checksum " +
        r[1].as<std::string>() + " in the database vs " + it->second +
        " in this binary); migrations are forward-only: add a new one");
  }
  return Status::Ok();
}

}  // namespace

Result<int> ApplyMigrations(ConnectionPool& pool, const MigrationList& migrations) {
  auto lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  pqxx::connection& c = **lease;
  std::string current;  // the migration being applied, for the error message
  int applied = 0;
  try {
    MigrationLock lock(c);
    std::map<std::string, std::string> sums;  // name -> md5 of its text (as PostgreSQL hashes it)
    {
      pqxx::work w(c);
      for (const auto& [name, sql] : migrations)
        sums[name] = w.exec_params1("SELECT md5($1)", sql)[0].as<std::string>();
      Status history = PrepareHistory(w, migrations, sums);
      if (!history.ok()) return history;  // rolled back: a refusal changes nothing
      w.commit();
    }
    for (const auto& [name, sql] : migrations) {
      pqxx::work w(c);
      auto r = w.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", name);
      if (!r.empty()) continue;
      current = name;
      w.exec(sql);
      w.exec_params0("INSERT INTO schema_migrations(version, checksum) VALUES ($1, $2)", name,
                     sums[name]);
      w.commit();
      current.clear();
      ++applied;
    }
  } catch (const std::exception& e) {
    return Status::Internal(current.empty() ? std::string("migration failed: ") + e.what()
                                            : "migration " + current + " failed: " + e.what());
  }
  return applied;
}

}  // namespace tunectl

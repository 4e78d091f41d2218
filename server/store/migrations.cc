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

namespace {

// The append-only tables, from the schema's own triggers: (table, UPDATE refused, DELETE refused).
// tgtype bits: 8 = DELETE, 16 = UPDATE.
constexpr const char* kAppendOnlySql =
    "SELECT c.relname, bool_or(t.tgtype & 16 <> 0), bool_or(t.tgtype & 8 <> 0) "
    "FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_namespace ns ON ns.oid = c.relnamespace JOIN pg_proc p ON p.oid = t.tgfoid "
    "WHERE p.proname = 'tunectl_append_only' AND ns.nspname = current_schema() "
    "GROUP BY c.relname ORDER BY c.relname";

}  // namespace

Status GrantServerRole(ConnectionPool& owner, const std::string& role) {
  auto lease = owner.Acquire();
  if (!lease.ok()) return lease.status();
  try {
    MigrationLock lock(**lease);  // one granting (or migrating) server at a time
    pqxx::work w(**lease);
    const std::string r = w.quote_name(role);
    const std::string schema =
        w.quote_name(w.exec1("SELECT current_schema()")[0].as<std::string>());
    w.exec0("GRANT USAGE ON SCHEMA " + schema + " TO " + r);
    w.exec0("REVOKE ALL ON ALL TABLES IN SCHEMA " + schema + " FROM " + r);
    w.exec0("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + r);
    w.exec0("GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + r);
    w.exec0("REVOKE INSERT, UPDATE, DELETE ON schema_migrations FROM " + r);
    for (const auto& row : w.exec(kAppendOnlySql)) {
      const std::string table = w.quote_name(row[0].as<std::string>());
      if (row[1].as<bool>()) w.exec0("REVOKE UPDATE ON " + table + " FROM " + r);
      if (row[2].as<bool>()) w.exec0("REVOKE DELETE ON " + table + " FROM " + r);
    }
    w.commit();
  } catch (const std::exception& e) {
    return Status::Internal("cannot grant the server role " + role +
                            " its privileges: " + e.what());
  }
  return Status::Ok();
}

Result<int> PrepareDatabase(ConnectionPool& server, ConnectionPool* owner) {
  auto applied = ApplyMigrations(owner ? *owner : server, EmbeddedMigrations());
  if (!applied.ok() || !owner) return applied;
  auto role = ServerRoleName(server);
  if (!role.ok()) return role.status();
  if (Status st = GrantServerRole(*owner, *role); !st.ok()) return st;
  return applied;
}

Result<std::string> ServerRoleName(ConnectionPool& pool) {
  auto lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  try {
    pqxx::nontransaction n(**lease);
    return n.exec1("SELECT current_user")[0].as<std::string>();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot read the server's database role: ") + e.what());
  }
}

Result<std::vector<std::string>> ServerRoleWarnings(ConnectionPool& pool) {
  auto lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  std::vector<std::string> out;
  try {
    pqxx::work w(**lease);
    auto me = w.exec1("SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user");
    const std::string user = me[0].as<std::string>();
    if (me[1].as<bool>()) {
      out.push_back("the server's database role " + user +
                    " is a superuser: it could disable the audit trail's triggers and rewrite it "
                    "(audit verify would still find the change); give the server a role of its "
                    "own and pass the owner's URL as --db-admin");
      return out;
    }
    std::string owned;
    for (const auto& row : w.exec(kAppendOnlySql)) {
      auto t = w.exec_params1(
          "SELECT pg_get_userbyid(relowner) = current_user FROM pg_class "
          "WHERE relname = $1 AND relnamespace = current_schema()::regnamespace",
          row[0].as<std::string>());
      if (t[0].as<bool>()) owned += (owned.empty() ? "" : ", ") + row[0].as<std::string>();
    }
    if (!owned.empty())
      out.push_back("the server's database role " + user + " owns " + owned +
                    ": it could disable their append-only triggers; pass the owner's URL as "
                    "--db-admin and give --db a role of its own (docs/security.md)");
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot read the server's database role: ") + e.what());
  }
  return out;
}

}  // namespace tunectl

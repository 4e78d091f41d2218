#include "server/token_tool.h"

#include <nlohmann/json.hpp>

#include "core/auth.h"
#include "server/server.h"
#include "server/store/embedded_pg.h"
#include "server/store/migrations.h"
#include "server/store/pool.h"
#include "server/store/store.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/process.h"

namespace tunectl {
namespace {

std::string Actor() {
  const char* user = std::getenv("USER");
  return std::string("local:") + (user && *user ? user : "unknown");
}

Result<TokenToolOutput> Act(Store& store, const TokenToolOptions& o) {
  TokenToolOutput r;
  if (o.verb == "create") {
    auto spec = ParseTokenSpec(o.name, o.role, o.agent);
    if (!spec.ok()) return spec.status();
    auto bytes = RandomBytes(32);
    if (!bytes.ok()) return bytes.status();
    const std::string secret = FormatToken(*bytes);
    auto row = store.CreateToken(*spec, TokenHash(secret), Actor());
    if (!row.ok()) return row.status();
    r.out = secret + "\n";
    r.note = "token \"" + row->name + "\" (role " + row->role +
             (row->agent.empty() ? "" : ", agent " + row->agent) +
             ") created; the secret above is shown once: give it to its holder as TUNECTL_TOKEN "
             "or a context's token";
    return r;
  }
  if (o.verb == "revoke") {
    auto row = store.RevokeToken(o.name, Actor());
    if (!row.ok()) return row.status();
    r.note = "token \"" + row->name + "\" revoked";
    return r;
  }
  if (o.verb == "list") {
    auto rows = store.ListTokens(o.all);
    if (!rows.ok()) return rows.status();
    if (o.json) {  // the CLI's TokenList shape (docs/output.md)
      auto null_if_empty = [](const std::string& s) {
        return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
      };
      nlohmann::ordered_json items = nlohmann::ordered_json::array();
      for (const auto& t : *rows)
        items.push_back({{"name", t.name},
                         {"role", t.role},
                         {"agent", null_if_empty(t.agent)},
                         {"created_at", t.created_at},
                         {"created_by", t.created_by},
                         {"revoked_at", null_if_empty(t.revoked_at)},
                         {"revoked_by", null_if_empty(t.revoked_by)}});
      nlohmann::ordered_json doc = {{"apiVersion", "tunectl/v1"},
                                    {"kind", "TokenList"},
                                    {"items", std::move(items)},
                                    {"next_page_token", nullptr}};
      r.out = doc.dump(2) + "\n";
      return r;
    }
    r.out = "NAME\tROLE\tAGENT\tCREATED\tBY\tREVOKED\n";
    for (const auto& t : *rows)
      r.out += t.name + "\t" + t.role + "\t" + (t.agent.empty() ? "-" : t.agent) + "\t" +
               t.created_at + "\t" + t.created_by + "\t" +
               (t.revoked_at.empty() ? "-" : t.revoked_at) + "\n";
    return r;
  }
  return Status::InvalidArgument("token: unknown verb \"" + o.verb +
                                 "\"; allowed: create, list, revoke");
}

}  // namespace

Result<TokenToolOutput> RunTokenTool(const TokenToolOptions& o,
                                     const std::function<void(const std::string&)>& progress) {
  if ((o.verb == "create" || o.verb == "revoke") && o.name.empty())
    return Status::InvalidArgument("--name: required for token " + o.verb);
  SystemClock clock;
  auto launcher = NewPosixProcessLauncher();
  std::unique_ptr<EmbeddedPostgres> pg;
  std::string dsn = o.db, admin = o.db_admin;
  bool beside_server = false;  // a running server has migrated: its role may not, and need not
  if (dsn.empty()) {
    EmbeddedPgOptions e;
    e.data_dir = o.data_dir.empty() ? DefaultDataDir() : o.data_dir;
    e.pg_bin = o.pg_bin;
    bool running = false;
    {
      auto lock = FileLock::Acquire(e.data_dir + "/server.lock");
      // Held: a server runs there. Not even openable (no data dir yet): nothing runs there.
      running = !lock.ok() && lock.status().code() == Status::Code::kFailedPrecondition;
    }
    if (running) {  // beside the running server: its PostgreSQL, its schema
      auto d = EmbeddedPostgres::DsnOfRunning(e);
      if (!d.ok()) return d.status();
      dsn = *d;
      beside_server = true;
    } else {
      progress("no server runs on " + e.data_dir + ": starting its PostgreSQL for this call");
      auto started = EmbeddedPostgres::Start(e, *launcher, progress);
      if (!started.ok()) return started.status();
      pg = std::move(*started);
      dsn = pg->dsn();
      admin = pg->admin_dsn();
    }
  }
  auto pool = ConnectionPool::Open(dsn, 1);
  if (!pool.ok()) return pool.status();
  if (!beside_server) {  // a database no running server has prepared: as the server would
    std::unique_ptr<ConnectionPool> owner;
    if (!admin.empty()) {
      auto opened = ConnectionPool::Open(admin, 1);
      if (!opened.ok()) return Status::Unavailable("--db-admin: " + opened.status().message());
      owner = std::move(*opened);
    }
    auto applied = PrepareDatabase(**pool, owner.get());
    if (!applied.ok()) return applied.status();
  }
  Store store(pool->get(), &clock);
  auto r = Act(store, o);
  if (pg) static_cast<void>(pg->Stop());
  return r;
}

}  // namespace tunectl

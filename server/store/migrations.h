// Forward-only schema migrations (migrations/NNNN_name.sql, embedded at build time). Applying is
// idempotent and serialised across servers by a PostgreSQL advisory lock.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/store/pool.h"

namespace tunectl {

using MigrationList = std::vector<std::pair<std::string, std::string>>;  // (file name, SQL)
const MigrationList& EmbeddedMigrations();

// Applies each migration not yet recorded in schema_migrations, each in its own transaction,
// and records it with the md5 of its text. Returns the number applied. FailedPrecondition, with
// nothing changed, when the database records a migration named after the newest in `migrations`
// that `migrations` lacks (a newer binary ran) or one whose text differs from the recorded
// checksum. Rows recorded before checksums existed get theirs from `migrations`. Safe to call
// concurrently, from any number of servers: the advisory lock is held only during the call.
Result<int> ApplyMigrations(ConnectionPool& pool, const MigrationList& migrations);

// Gives `role` (the server's own login) what the server needs and no more, run by the owner of the
// schema after ApplyMigrations: SELECT/INSERT/UPDATE/DELETE on the tables and the sequences, minus
// what the schema's own append-only triggers forbid — a table whose UPDATE is refused by
// tunectl_append_only() (the tuning log, the audit trail, its chain, spec revisions) gets SELECT
// and INSERT only, one whose DELETE is refused (tokens) no DELETE — and no TRUNCATE, no DDL and
// no write to schema_migrations anywhere. Idempotent; applied at every start, so a migration's
// new table is covered.
Status GrantServerRole(ConnectionPool& owner, const std::string& role);

// What is wrong with the role `pool` connects as, for the server to say at start: a superuser,
// or a role that owns the append-only tables, could rewrite the audit trail without a trace in
// the database (only `audit verify` would find it). Empty when nothing is.
// The schema brought up to date and the server's role to its privileges, as the server and
// `tunectl-server token` both do at start: with `owner` (the schema owner's pool) the migrations
// run as the owner and the role `server` connects as gets GrantServerRole; without, they run as
// `server`. Returns the number of migrations applied.
Result<int> PrepareDatabase(ConnectionPool& server, ConnectionPool* owner);

// The role `pool` connects as (current_user).
Result<std::string> ServerRoleName(ConnectionPool& pool);
Result<std::vector<std::string>> ServerRoleWarnings(ConnectionPool& pool);

}  // namespace tunectl

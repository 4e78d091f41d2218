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

}  // namespace tunectl

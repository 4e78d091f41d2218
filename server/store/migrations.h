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

// Applies each migration not yet recorded in schema_migrations, each in its own transaction.
// Returns the number applied.
Result<int> ApplyMigrations(ConnectionPool& pool, const MigrationList& migrations);

}  // namespace tunectl

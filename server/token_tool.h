// `tunectl-server token create|list|revoke`: tokens made on the server's host, straight in the
// database, for when no admin token exists yet (a fresh --db deployment, a lost admin context).
// Works beside a running server (the embedded PostgreSQL's socket from its postmaster.pid) or on
// a stopped data directory (started for the call, migrated, stopped).
#pragma once

#include <functional>
#include <string>

#include "core/status.h"

namespace tunectl {

struct TokenToolOptions {
  std::string verb;      // create | list | revoke
  std::string name;      // create, revoke
  std::string role;      // create: viewer | operator | admin | agent
  std::string agent;     // create with role agent: the bound agent name ("" = the token's name)
  bool all = false;      // list: revoked tokens too
  bool json = false;     // list: -o json
  std::string db;        // the server's --db; "" = the embedded PostgreSQL of data_dir
  std::string db_admin;  // the server's --db-admin (migrations on a stopped --db database)
  std::string data_dir;  // "" = DefaultDataDir()
  std::string pg_bin = "/usr/lib/postgresql/15/bin";
};

// What the command prints on stdout (create: the secret alone on its line, then where it was
// recorded on stderr's behalf in `note`); errors as Status.
struct TokenToolOutput {
  std::string out;
  std::string note;  // for stderr
};
// `progress` hears each slow step (starting the embedded PostgreSQL of a stopped data dir).
Result<TokenToolOutput> RunTokenTool(const TokenToolOptions& opts,
                                     const std::function<void(const std::string&)>& progress);

}  // namespace tunectl

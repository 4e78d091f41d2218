// A private PostgreSQL started from the machine's own binaries in <data_dir>/pg, so the server
// works with no --db on a fresh machine. Holds <data_dir>/server.lock while alive (a second server
// on the same data dir is refused). When the server runs as root, PostgreSQL runs as `run_as`.
//
// Hardening: no TCP listener; the socket lives in <data_dir>/pg/sock (0700, a symlink or a foreign
// owner refused) or, when that path is too long for a socket, in a fresh mkdtemp directory under
// /tmp (never a predictable name); every login needs a password (SCRAM), kept in <data_dir>/pgpass
// (0600, libpq's passfile format, never on a command line). Two roles: `postgres` (superuser: the
// migrations and grants only) and `server_role` (not a superuser: what the server runs with). A
// data directory made with `trust` by an older tunectl is switched to passwords at its next start.
// Stops PostgreSQL on destruction. Not copyable.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "sys/files.h"
#include "sys/process.h"

namespace tunectl {

struct EmbeddedPgOptions {
  std::string data_dir;  // required
  std::string pg_bin = "/usr/lib/postgresql/15/bin";
  std::string run_as = "postgres";  // OS user for PostgreSQL when we are root
  int port = 5432;                  // only names the Unix socket; no TCP listener
  std::string database = "tunectl";
  std::string server_role = "tunectl_server";  // the server's login: not a superuser
};

class EmbeddedPostgres {
 public:
  using Progress = std::function<void(const std::string&)>;
  static Result<std::unique_ptr<EmbeddedPostgres>> Start(const EmbeddedPgOptions& opts,
                                                         ProcessLauncher& launcher,
                                                         const Progress& progress);
  // The server role's DSN of the PostgreSQL another process (a running tunectl-server) keeps in
  // `opts.data_dir`: its socket directory and port read from postmaster.pid. For tools that work
  // beside a running server (`tunectl-server token`).
  static Result<std::string> DsnOfRunning(const EmbeddedPgOptions& opts);
  ~EmbeddedPostgres();
  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  std::string dsn() const;        // as `server_role`
  std::string admin_dsn() const;  // as the superuser: migrations and grants only
  Status Stop();

 private:
  EmbeddedPostgres(EmbeddedPgOptions o, ProcessLauncher& l, FileLock lock)
      : opts_(std::move(o)), launcher_(l), lock_(std::move(lock)) {}
  Result<CommandResult> Pg(const std::vector<std::string>& argv);
  Status Chown(const std::string& path);
  // Writes (or appends to) `file` in the data directory as PostgreSQL's user.
  Status WriteAsPg(const std::string& file, const std::string& text, bool append);

  EmbeddedPgOptions opts_;
  ProcessLauncher& launcher_;
  FileLock lock_;
  std::string pgdata_, sock_;
  bool temp_sock_ = false;  // sock_ was made under /tmp for this start: removed at Stop
  bool as_root_ = false;
  long pg_uid_ = -1, pg_gid_ = -1;  // run_as's, when root
  bool running_ = false;
};

// libpq's passfile lines `*:*:*:user:password` for each (user, password); and the password of
// `user` in such a text ("" when absent).
std::string RenderPgPass(const std::vector<std::pair<std::string, std::string>>& entries);
std::string PgPassPassword(const std::string& text, const std::string& user);

}  // namespace tunectl

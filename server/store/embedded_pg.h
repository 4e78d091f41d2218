// A private PostgreSQL started from the machine's own binaries in <data_dir>/pg, so the server
// works with no --db on a fresh machine. Holds <data_dir>/server.lock while alive (a second server
// on the same data dir is refused). When the server runs as root, PostgreSQL runs as `run_as`.
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
};

class EmbeddedPostgres {
 public:
  using Progress = std::function<void(const std::string&)>;
  static Result<std::unique_ptr<EmbeddedPostgres>> Start(const EmbeddedPgOptions& opts,
                                                         ProcessLauncher& launcher,
                                                         const Progress& progress);
  ~EmbeddedPostgres();
  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  std::string dsn() const;
  Status Stop();

 private:
  EmbeddedPostgres(EmbeddedPgOptions o, ProcessLauncher& l, FileLock lock)
      : opts_(std::move(o)), launcher_(l), lock_(std::move(lock)) {}
  Result<CommandResult> Pg(const std::vector<std::string>& argv);

  EmbeddedPgOptions opts_;
  ProcessLauncher& launcher_;
  FileLock lock_;
  std::string pgdata_, sock_;
  bool as_root_ = false;
  bool running_ = false;
};

}  // namespace tunectl

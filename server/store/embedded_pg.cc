#include "server/store/embedded_pg.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <pqxx/pqxx>

namespace tunectl {

Result<CommandResult> EmbeddedPostgres::Pg(const std::vector<std::string>& argv) {
  ProcessSpec s;
  if (as_root_) s.argv = {"runuser", "-u", opts_.run_as, "--"};
  s.argv.insert(s.argv.end(), argv.begin(), argv.end());
  s.cwd = opts_.data_dir;
  s.env_overrides["LC_ALL"] = "C.UTF-8";
  return RunCommand(launcher_, s);
}

Result<std::unique_ptr<EmbeddedPostgres>> EmbeddedPostgres::Start(const EmbeddedPgOptions& o,
                                                                  ProcessLauncher& launcher,
                                                                  const Progress& progress) {
  namespace fs = std::filesystem;
  if (o.data_dir.empty()) return Status::InvalidArgument("--data-dir: empty path");
  if (!fs::exists(o.pg_bin + "/initdb"))
    return Status::FailedPrecondition("PostgreSQL binaries not found in " + o.pg_bin +
                                      "; install postgresql-15 (scripts/bootstrap) or pass --db");
  if (auto s = MakeDirs(o.data_dir, 0755); !s.ok()) return s;
  auto lock = FileLock::Acquire(o.data_dir + "/server.lock");
  if (!lock.ok())
    return Status::FailedPrecondition(
        "data dir " + o.data_dir + " is in use by another tunectl-server: " +
        lock.status().message() + "; stop that server or pass a different --data-dir");
  std::unique_ptr<EmbeddedPostgres> pg(new EmbeddedPostgres(o, launcher, std::move(*lock)));
  pg->as_root_ = geteuid() == 0;
  const std::string root = o.data_dir + "/pg";
  pg->pgdata_ = root + "/data";
  pg->sock_ = root + "/sock";
  if (pg->sock_.size() > 90) {  // sun_path is 108 bytes including ".s.PGSQL.NNNN"
    pg->sock_ = "/tmp/tunectl-" + std::to_string(std::hash<std::string>{}(o.data_dir) % 100000000);
  }
  if (auto s = MakeDirs(root, 0700); !s.ok()) return s;
  if (auto s = MakeDirs(pg->sock_, 0700); !s.ok()) return s;
  if (pg->as_root_) {
    passwd* pw = getpwnam(o.run_as.c_str());
    if (!pw)
      return Status::FailedPrecondition("running as root, PostgreSQL needs the unprivileged user " +
                                        o.run_as +
                                        ", which does not exist (install postgresql-15)");
    for (const auto& d : {root, pg->sock_}) {
      if (chown(d.c_str(), pw->pw_uid, pw->pw_gid) != 0)
        return Status::Internal("cannot chown " + d + " to " + o.run_as);
    }
    auto t = pg->Pg({"test", "-x", root});
    if (!t.ok() || !t->status.ok())
      return Status::FailedPrecondition(
          "user " + o.run_as + " cannot reach " + root +
          "; every parent directory of --data-dir must be searchable (chmod o+x), e.g. use "
          "/var/lib/tunectl");
  }
  if (!fs::exists(pg->pgdata_ + "/PG_VERSION")) {
    progress("initialising PostgreSQL in " + pg->pgdata_);
    auto r = pg->Pg({o.pg_bin + "/initdb", "-D", pg->pgdata_, "-U", "postgres", "-E", "UTF8",
                     "--locale=C.UTF-8", "-A", "trust"});
    if (!r.ok()) return r.status();
    if (!r->status.ok())
      return Status::Internal("initdb failed (" + r->status.ToString() + "):\n" + r->output);
    std::string conf =
        "\n# tunectl embedded settings\nlisten_addresses = ''\nport = " + std::to_string(o.port) +
        "\nunix_socket_directories = '" + pg->sock_ +
        "'\nmax_connections = 60\nshared_buffers = 128MB\n";
    auto existing = ReadFile(pg->pgdata_ + "/postgresql.conf");
    if (!existing.ok()) return existing.status();
    // Written by the owner (postgres) so file ownership stays right.
    auto w = pg->Pg(
        {"sh", "-c", "cat >> \"$0\" <<'EOF'\n" + conf + "EOF\n", pg->pgdata_ + "/postgresql.conf"});
    if (!w.ok() || !w->status.ok()) return Status::Internal("cannot write postgresql.conf");
  }
  if (fs::exists(pg->pgdata_ + "/postmaster.pid")) {
    // We hold the data-dir lock, so this PostgreSQL was left by a server that died.
    progress("stopping PostgreSQL left running by a previous server");
    auto stopped =
        pg->Pg({o.pg_bin + "/pg_ctl", "-D", pg->pgdata_, "-m", "fast", "-w", "-t", "60", "stop"});
    if (!stopped.ok()) return stopped.status();
    if (!stopped->status.ok() && fs::exists(pg->pgdata_ + "/postmaster.pid"))
      return Status::Internal("cannot stop the PostgreSQL left running in " + pg->pgdata_ + ": " +
                              stopped->output);
  }
  progress("starting PostgreSQL (socket " + pg->sock_ + ")");
  auto r = pg->Pg({o.pg_bin + "/pg_ctl", "-D", pg->pgdata_, "-l", root + "/server.log", "-w", "-t",
                   "60", "-o", "-k " + pg->sock_, "start"});
  if (!r.ok()) return r.status();
  if (!r->status.ok()) {
    auto log = ReadFile(root + "/server.log");
    return Status::Internal("PostgreSQL did not start (" + r->status.ToString() + "):\n" +
                            r->output + (log.ok() ? *log : ""));
  }
  pg->running_ = true;
  try {
    pqxx::connection c("host=" + pg->sock_ + " port=" + std::to_string(o.port) +
                       " user=postgres dbname=postgres");
    pqxx::nontransaction n(c);
    auto exists = n.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", o.database);
    if (exists.empty()) n.exec0("CREATE DATABASE " + n.quote_name(o.database));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot create database: ") + e.what());
  }
  return pg;
}

std::string EmbeddedPostgres::dsn() const {
  return "host=" + sock_ + " port=" + std::to_string(opts_.port) +
         " user=postgres dbname=" + opts_.database;
}

Status EmbeddedPostgres::Stop() {
  if (!running_) return Status::Ok();
  running_ = false;
  auto r = Pg({opts_.pg_bin + "/pg_ctl", "-D", pgdata_, "-m", "fast", "-w", "-t", "60", "stop"});
  if (!r.ok()) return r.status();
  if (!r->status.ok()) return Status::Internal("pg_ctl stop failed: " + r->output);
  return Status::Ok();
}

EmbeddedPostgres::~EmbeddedPostgres() {
  // Best effort: an owner that wants to know whether the stop worked calls Stop() first.
  static_cast<void>(Stop());
}

}  // namespace tunectl

#include "server/store/embedded_pg.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <pqxx/pqxx>
#include <sstream>

namespace tunectl {
namespace {

// sun_path is 108 bytes including "/.s.PGSQL.NNNNN".
constexpr size_t kMaxSocketDirBytes = 90;

// A libpq key=value value, quoted so paths with blanks or quotes stay one value.
std::string DsnValue(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string MakeDsn(const std::string& sock, int port, const std::string& user,
                    const std::string& db, const std::string& passfile) {
  return "host=" + DsnValue(sock) + " port=" + std::to_string(port) + " user=" + DsnValue(user) +
         " dbname=" + DsnValue(db) + " passfile=" + DsnValue(passfile);
}

std::string PassFileOf(const EmbeddedPgOptions& o) {
  return o.data_dir + "/pgpass";
}

Result<std::string> NewPassword() {
  auto bytes = RandomBytes(24);
  if (!bytes.ok()) return bytes.status();
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : *bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

constexpr const char* kHba =
    "# tunectl: every login authenticates with a password (SCRAM); PostgreSQL listens on its\n"
    "# Unix socket only (listen_addresses = '').\n"
    "local all all scram-sha-256\n";

}  // namespace

std::string RenderPgPass(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out =
      "# written by tunectl-server: the embedded PostgreSQL's logins (libpq passfile)\n";
  for (const auto& [user, password] : entries) out += "*:*:*:" + user + ":" + password + "\n";
  return out;
}

std::string PgPassPassword(const std::string& text, const std::string& user) {
  std::istringstream in(text);
  std::string line;
  const std::string prefix = "*:*:*:" + user + ":";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  return "";
}

Result<CommandResult> EmbeddedPostgres::Pg(const std::vector<std::string>& argv) {
  ProcessSpec s;
  if (as_root_) s.argv = {"runuser", "-u", opts_.run_as, "--"};
  s.argv.insert(s.argv.end(), argv.begin(), argv.end());
  s.cwd = opts_.data_dir;
  s.env_overrides["LC_ALL"] = "C.UTF-8";
  return RunCommand(launcher_, s);
}

Status EmbeddedPostgres::WriteAsPg(const std::string& file, const std::string& text, bool append) {
  // Written by PostgreSQL's own user, so the file's owner stays right; the text is an argument,
  // never part of the shell's script.
  auto w = Pg({"sh", "-c", append ? "printf '%s' \"$1\" >> \"$0\"" : "printf '%s' \"$1\" > \"$0\"",
               pgdata_ + "/" + file, text});
  if (!w.ok()) return w.status();
  if (!w->status.ok())
    return Status::Internal("cannot write " + pgdata_ + "/" + file + ": " + w->output);
  return Status::Ok();
}

Status EmbeddedPostgres::Chown(const std::string& path) {
  if (!as_root_) return Status::Ok();
  if (chown(path.c_str(), static_cast<uid_t>(pg_uid_), static_cast<gid_t>(pg_gid_)) != 0)
    return Status::Internal("cannot chown " + path + " to " + opts_.run_as);
  return Status::Ok();
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
  if (pg->as_root_) {
    passwd* pw = getpwnam(o.run_as.c_str());
    if (!pw)
      return Status::FailedPrecondition("running as root, PostgreSQL needs the unprivileged user " +
                                        o.run_as +
                                        ", which does not exist (install postgresql-15)");
    pg->pg_uid_ = pw->pw_uid;
    pg->pg_gid_ = pw->pw_gid;
  }
  const std::string root = o.data_dir + "/pg";
  pg->pgdata_ = root + "/data";
  if (auto s = EnsurePrivateDir(root, pg->pg_uid_); !s.ok()) return s;
  if (auto s = pg->Chown(root); !s.ok()) return s;
  pg->sock_ = root + "/sock";
  if (pg->sock_.size() > kMaxSocketDirBytes) {
    // Too long for a socket path: a fresh random directory, never a name someone could plant.
    auto tmp = MakeTempDir("/tmp/tunectl-pg-");
    if (!tmp.ok()) return tmp.status();
    pg->sock_ = *tmp;
    pg->temp_sock_ = true;
  } else if (auto s = EnsurePrivateDir(pg->sock_, pg->pg_uid_); !s.ok()) {
    return s;
  }
  if (auto s = pg->Chown(pg->sock_); !s.ok()) return s;
  if (pg->as_root_) {
    auto t = pg->Pg({"test", "-x", root});
    if (!t.ok() || !t->status.ok())
      return Status::FailedPrecondition(
          "user " + o.run_as + " cannot reach " + root +
          "; every parent directory of --data-dir must be searchable (chmod o+x), e.g. use "
          "/var/lib/tunectl");
  }

  // The logins' passwords: read from the passfile, made (and written first) when missing.
  const std::string passfile = PassFileOf(o);
  std::string pass_text;
  if (fs::exists(passfile)) {
    auto text = ReadFile(passfile);
    if (!text.ok()) return text.status();
    pass_text = *text;
  }
  std::string su_pw = PgPassPassword(pass_text, "postgres");
  std::string server_pw = PgPassPassword(pass_text, o.server_role);
  const bool fresh = !fs::exists(pg->pgdata_ + "/PG_VERSION");
  bool legacy_trust = false;
  if (!fresh) {
    auto hba = ReadFile(pg->pgdata_ + "/pg_hba.conf");
    legacy_trust = hba.ok() && hba->find(" trust") != std::string::npos;
    if (!legacy_trust && su_pw.empty())
      return Status::FailedPrecondition(
          "cannot log in to the embedded PostgreSQL in " + pg->pgdata_ + ": " + passfile +
          " holds no password for postgres (it is written when the database is made); restore it");
  }
  for (std::string* pw : {&su_pw, &server_pw}) {
    if (!pw->empty()) continue;
    auto made = NewPassword();
    if (!made.ok()) return made.status();
    *pw = *made;
  }
  if (auto s = WriteSecretFile(passfile,
                               RenderPgPass({{"postgres", su_pw}, {o.server_role, server_pw}}));
      !s.ok())
    return s;

  if (fresh) {
    progress("initialising PostgreSQL in " + pg->pgdata_);
    const std::string pwfile = root + "/initdb-password";
    if (auto s = WriteSecretFile(pwfile, su_pw + "\n"); !s.ok()) return s;
    if (auto s = pg->Chown(pwfile); !s.ok()) return s;
    auto r = pg->Pg({o.pg_bin + "/initdb", "-D", pg->pgdata_, "-U", "postgres", "-E", "UTF8",
                     "--locale=C.UTF-8", "--auth=scram-sha-256", "--pwfile=" + pwfile});
    ::unlink(pwfile.c_str());
    if (!r.ok()) return r.status();
    if (!r->status.ok())
      return Status::Internal("initdb failed (" + r->status.ToString() + "):\n" + r->output);
    std::string conf =
        "\n# tunectl embedded settings\nlisten_addresses = ''\nport = " + std::to_string(o.port) +
        "\nunix_socket_permissions = 0700\nmax_connections = 60\nshared_buffers = 128MB\n";
    if (auto s = pg->WriteAsPg("postgresql.conf", conf, /*append=*/true); !s.ok()) return s;
  }
  if (!legacy_trust)
    if (auto s = pg->WriteAsPg("pg_hba.conf", kHba, /*append=*/false); !s.ok()) return s;
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
    if (legacy_trust) {
      // A data directory from before passwords: set them while trust still lets us in, then
      // switch every login to SCRAM.
      progress("switching the embedded PostgreSQL from trust to password logins");
      {
        pqxx::connection c(MakeDsn(pg->sock_, o.port, "postgres", "postgres", passfile));
        pqxx::nontransaction n(c);
        n.exec0("ALTER ROLE postgres PASSWORD " + n.quote(su_pw));
      }
      if (auto s = pg->WriteAsPg("pg_hba.conf", kHba, /*append=*/false); !s.ok()) return s;
      pqxx::connection c(MakeDsn(pg->sock_, o.port, "postgres", "postgres", passfile));
      pqxx::nontransaction n(c);
      n.exec("SELECT pg_reload_conf()");
    }
    pqxx::connection c(MakeDsn(pg->sock_, o.port, "postgres", "postgres", passfile));
    pqxx::nontransaction n(c);
    auto exists = n.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", o.database);
    if (exists.empty()) n.exec0("CREATE DATABASE " + n.quote_name(o.database));
    const std::string role = n.quote_name(o.server_role);
    if (n.exec_params("SELECT 1 FROM pg_roles WHERE rolname = $1", o.server_role).empty())
      n.exec0("CREATE ROLE " + role);
    n.exec0("ALTER ROLE " + role +
            " WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD " +
            n.quote(server_pw));
    n.exec0("GRANT CONNECT, TEMPORARY ON DATABASE " + n.quote_name(o.database) + " TO " + role);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot prepare the embedded database: ") + e.what());
  }
  return pg;
}

Result<std::string> EmbeddedPostgres::DsnOfRunning(const EmbeddedPgOptions& o) {
  const std::string pid_file = o.data_dir + "/pg/data/postmaster.pid";
  auto text = ReadFile(pid_file);
  if (!text.ok())
    return Status::FailedPrecondition("no PostgreSQL is running in " + o.data_dir +
                                      "/pg/data (no postmaster.pid)");
  // postmaster.pid: pid, data directory, start time, port, socket directory, listen address, ...
  std::istringstream in(*text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (lines.size() < 5 || lines[4].empty())
    return Status::FailedPrecondition(pid_file + " names no socket directory");
  int port = 0;
  try {
    port = std::stoi(lines[3]);
  } catch (const std::exception&) {
    return Status::FailedPrecondition(pid_file + " names no port");
  }
  return MakeDsn(lines[4], port, o.server_role, o.database, PassFileOf(o));
}

std::string EmbeddedPostgres::dsn() const {
  return MakeDsn(sock_, opts_.port, opts_.server_role, opts_.database, PassFileOf(opts_));
}

std::string EmbeddedPostgres::admin_dsn() const {
  return MakeDsn(sock_, opts_.port, "postgres", opts_.database, PassFileOf(opts_));
}

Status EmbeddedPostgres::Stop() {
  if (!running_) return Status::Ok();
  running_ = false;
  auto r = Pg({opts_.pg_bin + "/pg_ctl", "-D", pgdata_, "-m", "fast", "-w", "-t", "60", "stop"});
  if (temp_sock_) ::rmdir(sock_.c_str());
  if (!r.ok()) return r.status();
  if (!r->status.ok()) return Status::Internal("pg_ctl stop failed: " + r->output);
  return Status::Ok();
}

EmbeddedPostgres::~EmbeddedPostgres() {
  // Best effort: an owner that wants to know whether the stop worked calls Stop() first.
  static_cast<void>(Stop());
}

}  // namespace tunectl

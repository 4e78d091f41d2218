// tunectl-server wiring: storage (embedded or external PostgreSQL), migrations, dispatcher and
// the gRPC services on one port. Start() returns once serving; Shutdown() is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/log.h"
#include "core/status.h"

namespace tunectl {

struct ServerOptions {
  std::string listen = "127.0.0.1:7443";  // host:port; port 0 picks a free one
  std::string db;                         // libpq DSN or URI; "" = embedded PostgreSQL
  // With `db`: the schema owner's DSN. Given, migrations run with it and the role of `db` gets
  // only what the server needs (GrantServerRole: no UPDATE/DELETE/TRUNCATE on the audit trail);
  // "" = migrations run with `db`, and the server warns when that role could rewrite the trail.
  // The embedded PostgreSQL always works this way (superuser for migrations, its own role).
  std::string db_admin;
  std::string data_dir;  // embedded PostgreSQL lives in <data_dir>/pg
  std::string pg_bin = "/usr/lib/postgresql/15/bin";
  std::string port_file;                // if set, the bound port is written here
  std::string http = "127.0.0.1:7444";  // web view, /metrics, /healthz; "" = off; 0 = any free
  std::string http_port_file;           // if set, the bound HTTP port is written here
  // The web view's chart library (dygraph.min.js, dygraph.min.css); "" = Debian's
  // libjs-dygraphs in /usr/share/javascript/dygraphs.
  std::string chart_dir;
  // Agents beat (and liveness is flushed) this often; 0 = a third of agent_timeout_s, between
  // 1 and 5 s (15 s -> 5 s: 2,000 idle agents send 400 beats/s, three missed beats are a timeout).
  int heartbeat_interval_ms = 0;
  int agent_timeout_s = 15;         // silent agents' runs are requeued after this
  int dispatch_interval_ms = 1000;  // a dispatch pass at least this often (events wake it sooner)
  // Shifts the server's clock (every decision, record and schedule window) by this much; for
  // tests that need tomorrow night's window now. 0 in production.
  int64_t clock_offset_ms = 0;
  // The Ed25519 key the audit chain's head is signed with (PEM; created mode 0600 when missing).
  // "" = <data_dir>/audit-ed25519.pem with the embedded PostgreSQL, none (unsigned) with --db.
  std::string audit_key;
  // Transport. TLS with `tls_cert`/`tls_key` (PEM files; both or neither); `client_ca` (PEM) asks
  // every client for a certificate signed by it (mutual TLS). Neither: the embedded default makes
  // a private CA and a certificate in <data_dir>/tls (clients trust <data_dir>/tls/ca.pem, and the
  // local admin context names it); with --db the server refuses to start. `insecure` = plaintext,
  // only when asked for; the server says so at start and on /metrics.
  std::string tls_cert, tls_key, client_ca;
  bool insecure = false;
  // Where the local admin's context (server, CA, token) is written: "" = $TUNECTL_CONFIG or
  // ~/.config/tunectl/config. With the embedded database the server keeps a live admin token
  // there; with --db it makes one only while no live admin token exists.
  std::string admin_config;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& opts, LogFn log);
  virtual ~Server() = default;
  virtual int port() const = 0;
  virtual int http_port() const = 0;  // 0 when HTTP is off
  virtual void Wait() = 0;            // until Shutdown
  virtual void Shutdown() = 0;        // stops serving, the dispatcher and embedded PostgreSQL
};

// ~/.local/share/tunectl (or $XDG_DATA_HOME/tunectl); /var/lib/tunectl for root.
std::string DefaultDataDir();

}  // namespace tunectl

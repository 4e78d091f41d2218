// tunectl-server: parse flags, wire, run until SIGINT/SIGTERM.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/auth.h"
#include "core/spec.h"
#include "server/server.h"
#include "server/token_tool.h"
#include "sys/signals.h"

int main(int argc, char** argv) {
  tunectl::ServerOptions opts;
  CLI::App app{"tunectl-server: keeps baselines, runs and metrics; dispatches runs to agents"};
  app.add_option("--listen", opts.listen, "gRPC address HOST:PORT (port 0 = any free port)")
      ->capture_default_str();
  app.add_option("--db", opts.db,
                 "PostgreSQL DSN or URI (postgresql://…); omit to run an embedded PostgreSQL. "
                 "Keep the password out of it (ps shows arguments): ~/.pgpass, PGPASSFILE, or "
                 "the whole URL in $TUNECTL_DB")
      ->envname("TUNECTL_DB");
  app.add_option("--db-admin", opts.db_admin,
                 "with --db: the schema owner's DSN; migrations run with it and the --db role "
                 "gets only what the server needs (no UPDATE/DELETE/TRUNCATE on the audit trail)")
      ->envname("TUNECTL_DB_ADMIN");
  app.add_option(
      "--data-dir", opts.data_dir,
      "data directory for the embedded PostgreSQL (default " + tunectl::DefaultDataDir() + ")");
  app.add_option("--pg-bin", opts.pg_bin, "PostgreSQL binaries for the embedded database")
      ->capture_default_str();
  app.add_option("--port-file", opts.port_file, "write the bound port to this file");
  app.add_option("--http", opts.http,
                 "address HOST:PORT for /metrics and /healthz, HTTPS with the gRPC port's "
                 "certificate (plain HTTP with --insecure); \"\" = off, port 0 = any")
      ->capture_default_str();
  app.add_option("--http-port-file", opts.http_port_file, "write the bound HTTP port to this file");
  app.add_option("--agent-timeout", opts.agent_timeout_s,
                 "seconds without heartbeat before an agent's runs are requeued")
      ->capture_default_str()
      ->check(CLI::Range(2, 3600));
  app.add_option("--audit-key", opts.audit_key,
                 "Ed25519 key (PEM) the audit chain's head is signed with; created mode 0600 if "
                 "missing (default: <data-dir>/audit-ed25519.pem with the embedded database, "
                 "none with --db)");
  app.add_option("--tls-cert", opts.tls_cert, "server certificate (PEM) for TLS on the gRPC port");
  app.add_option("--tls-key", opts.tls_key, "its private key (PEM)");
  app.add_option("--client-ca", opts.client_ca,
                 "CA (PEM) every client and agent must present a certificate from (mutual TLS)");
  app.add_flag("--insecure", opts.insecure,
               "plaintext gRPC (tokens and jobs' argv/env unencrypted); without TLS flags the "
               "embedded default makes its own CA in <data-dir>/tls, --db refuses to start");
  app.add_option("--admin-config", opts.admin_config,
                 "client config the local admin context is written to (default $TUNECTL_CONFIG "
                 "or ~/.config/tunectl/config)");
  std::string clock_offset;
  app.add_option("--clock-offset", clock_offset,
                 "shift the server's clock, e.g. 6h or -90m (tests: reach a window without "
                 "waiting); default 0");
  // tunectl-server token …: tokens straight in the database, on the server's host.
  tunectl::TokenToolOptions token;
  app.fallthrough();  // --db/--data-dir may come after `token create`
  auto* token_cmd = app.add_subcommand(
      "token", "make, list or revoke tokens in the database directly (no admin token needed)");
  token_cmd->require_subcommand(1);
  auto* token_create = token_cmd->add_subcommand("create", "make a token; prints its secret once");
  token_create->add_option("--name", token.name, "the token's name (who holds it)")->required();
  token_create->add_option("--role", token.role, "viewer | operator | admin | agent")->required();
  token_create->add_option("--agent", token.agent,
                           "role agent: the agent name it is bound to (default: --name)");
  auto* token_list = token_cmd->add_subcommand("list", "list tokens (never their secrets)");
  token_list->add_flag("--all", token.all, "revoked tokens too");
  std::string token_output = "table";
  token_list->add_option("-o,--output", token_output, "table | json")
      ->check(CLI::IsMember({"table", "json"}));
  auto* token_revoke = token_cmd->add_subcommand("revoke", "revoke a token from its next call on");
  token_revoke->add_option("--name,name", token.name, "the token's name")->required();
  CLI11_PARSE(app, argc, argv);
  if (token_cmd->parsed()) {
    token.verb = token_create->parsed() ? "create" : token_list->parsed() ? "list" : "revoke";
    token.json = token_output == "json";
    token.db = opts.db;
    token.db_admin = opts.db_admin;
    token.data_dir = opts.data_dir;
    token.pg_bin = opts.pg_bin;
    auto r = tunectl::RunTokenTool(
        token, [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); });
    if (!r.ok()) {
      std::fprintf(stderr, "error: %s\n", r.status().message().c_str());
      return r.status().code() == tunectl::Status::Code::kInvalidArgument ? 2 : 1;
    }
    std::fputs(r->out.c_str(), stdout);
    if (!r->note.empty()) std::fprintf(stderr, "%s\n", r->note.c_str());
    return 0;
  }
  for (int i = 1; i < argc; ++i) {  // a password on the command line: ps shows it to everyone
    const std::string arg = argv[i];
    for (const std::string flag : {"--db", "--db-admin"}) {
      const bool joined = arg.rfind(flag + "=", 0) == 0;
      if (!joined && !(arg == flag && i + 1 < argc)) continue;
      if (tunectl::DsnHasPassword(joined ? arg.substr(flag.size() + 1) : argv[i + 1]))
        spdlog::warn(
            "{} carries a password, which ps shows to every user of this host; put it "
            "in ~/.pgpass or PGPASSFILE, or the whole URL in ${}",
            flag, flag == "--db" ? "TUNECTL_DB" : "TUNECTL_DB_ADMIN");
    }
  }
  if (!clock_offset.empty()) {
    const bool negative = clock_offset[0] == '-';
    auto ms = tunectl::ParseDurationMs(negative || clock_offset[0] == '+' ? clock_offset.substr(1)
                                                                          : clock_offset);
    if (!ms.ok()) {
      std::fprintf(stderr, "error: --clock-offset: %s\n", ms.status().message().c_str());
      return 2;
    }
    opts.clock_offset_ms = negative ? -*ms : *ms;
  }

  tunectl::TerminationSignals signals;

  auto log = [](tunectl::LogLevel l, const std::string& m) {
    switch (l) {
      case tunectl::LogLevel::kDebug: spdlog::debug("{}", m); break;
      case tunectl::LogLevel::kInfo: spdlog::info("{}", m); break;
      case tunectl::LogLevel::kWarn: spdlog::warn("{}", m); break;
      case tunectl::LogLevel::kError: spdlog::error("{}", m); break;
    }
  };
  auto server = tunectl::Server::Start(opts, log);
  if (!server.ok()) {  // on stderr: spdlog's default logger writes to stdout
    std::fprintf(stderr, "error: %s\n", server.status().message().c_str());
    // Flags that do not go together are bad input (2), as for the CLI; anything else 1.
    return server.status().code() == tunectl::Status::Code::kInvalidArgument ? 2 : 1;
  }
  spdlog::info("tunectl-server listening on {} (port {}, {}); /metrics and /healthz on {} port {}",
               opts.listen, (*server)->port(), opts.insecure ? "PLAINTEXT: --insecure" : "TLS",
               opts.insecure ? "HTTP" : "HTTPS", (*server)->http_port());
  signals.OnSignal([&](int sig) {
    spdlog::info("signal {}: shutting down", sig);
    (*server)->Shutdown();
  });
  (*server)->Wait();
  server->reset();
  spdlog::info("stopped");
  return 0;
}

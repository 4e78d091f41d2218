#include "server/server.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "core/client_config.h"
#include "core/paging.h"
#include "server/api/services.h"
#include "server/dispatch/dispatcher.h"
#include "server/health.h"
#include "server/http/http_server.h"
#include "server/http/metrics.h"
#include "server/store/embedded_pg.h"
#include "server/store/leader.h"
#include "server/store/listener.h"
#include "server/store/migrations.h"
#include "server/store/pool.h"
#include "server/store/store.h"
#include "server/web/web.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/tls_cert.h"

namespace tunectl {
namespace {

class ServerImpl : public Server {
 public:
  int port() const override { return port_; }
  int http_port() const override { return http_ ? http_->port() : 0; }
  void Wait() override {
    if (grpc_) grpc_->Wait();
  }
  void Shutdown() override {
    std::lock_guard<std::mutex> g(mu_);
    if (down_) return;
    down_ = true;
    if (http_) http_->Stop();
    if (grpc_) grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    if (dispatcher_) dispatcher_->Stop();
  }
  ~ServerImpl() override {
    Shutdown();
    http_.reset();  // first: its web view holds an in-process channel to grpc_
    grpc_.reset();
    listener_.reset();
    tuning_.reset();
    agents_.reset();
    auth_.reset();
    dispatcher_.reset();
    leader_.reset();
    health_.reset();
    store_.reset();
    pool_.reset();
    if (pg_) {
      if (auto st = pg_->Stop(); !st.ok() && log_) log_(LogLevel::kError, st.ToString());
    }
  }

  std::unique_ptr<ProcessLauncher> launcher_;
  std::unique_ptr<EmbeddedPostgres> pg_;
  std::unique_ptr<SystemClock> clock_;
  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<LeaderLock> leader_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Ed25519Key> audit_key_;
  std::unique_ptr<Authorizer> auth_;
  std::unique_ptr<TuningServiceImpl> tuning_;
  std::unique_ptr<AgentServiceImpl> agents_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<HealthProbe> health_;
  std::unique_ptr<DispatchListener> listener_;
  std::unique_ptr<HttpServer> http_;
  LogFn log_;
  int port_ = 0;
  std::mutex mu_;
  bool down_ = false;
};

// The host part of HOST:PORT, and whether it means every interface.
std::string HostOf(const std::string& listen) {
  return listen.substr(0, listen.rfind(':'));
}
bool IsWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::";
}

// The address a local client dials for `listen` and the bound port: a wildcard or loopback host
// becomes 127.0.0.1.
std::string LocalAddress(const std::string& listen, int port) {
  std::string host = HostOf(listen);
  if (IsWildcard(host) || host == "localhost") host = "127.0.0.1";
  return host + ":" + std::to_string(port);
}

// The transport flags on their own, before anything starts: a refused combination changes
// nothing.
Status CheckTransportFlags(const ServerOptions& opts) {
  if (opts.insecure && (!opts.tls_cert.empty() || !opts.tls_key.empty() || !opts.client_ca.empty()))
    return Status::InvalidArgument(
        "--insecure: plaintext was asked for together with --tls-cert/--tls-key/--client-ca; "
        "choose one");
  if (opts.tls_cert.empty() != opts.tls_key.empty())
    return Status::InvalidArgument("--tls-cert and --tls-key: give both (PEM files) or neither");
  if (!opts.insecure && opts.tls_cert.empty() && !opts.db.empty())
    return Status::InvalidArgument(
        "TLS: with --db, give --tls-cert and --tls-key (PEM files; --client-ca for mutual TLS "
        "with agents), or --insecure for plaintext");
  return Status::Ok();
}

struct Transport {
  std::shared_ptr<grpc::ServerCredentials> creds;
  std::string ca;  // what local clients trust ("" for plaintext or a CA we were not given)
  HttpTls http;    // the same certificate on the HTTP endpoint (empty: plaintext)
};

// The gRPC port's credentials from flags checked by CheckTransportFlags: plaintext, the given
// certificate, or (embedded default) a private CA made in <data_dir>/tls.
Result<Transport> MakeTransport(const ServerOptions& opts, const std::string& data_dir,
                                const LogFn& log) {
  Transport t;
  if (opts.insecure) {
    log(LogLevel::kWarn,
        "--insecure: gRPC is plaintext; tokens and every job's argv/env cross the network "
        "unencrypted");
    t.creds = grpc::InsecureServerCredentials();
    return t;
  }
  std::string cert_path = opts.tls_cert, key_path = opts.tls_key;
  if (cert_path.empty()) {
    std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0 && host[0]) hosts.emplace_back(host);
    const std::string listen_host = HostOf(opts.listen);
    if (!IsWildcard(listen_host) &&
        std::find(hosts.begin(), hosts.end(), listen_host) == hosts.end())
      hosts.push_back(listen_host);
    auto files = EnsureSelfSignedTls(data_dir + "/tls", hosts);
    if (!files.ok()) return files.status();
    cert_path = files->server_cert;
    key_path = files->server_key;
    t.ca = files->ca_cert;
    log(LogLevel::kInfo,
        "TLS with a private CA made for this data directory: clients trust " + t.ca);
  }
  auto cert = ReadPemFile(cert_path);
  if (!cert.ok()) return cert.status();
  auto key = ReadPemFile(key_path);
  if (!key.ok()) return key.status();
  t.http = {*cert, *key};
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!opts.client_ca.empty()) {
    auto ca = ReadPemFile(opts.client_ca);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  t.creds = grpc::SslServerCredentials(ssl);
  return t;
}

// Keeps the local admin's context (this server, its CA, an admin token) in the client config, as
// core's NeedsLocalAdminToken decides. A config that cannot be read or written is said in the log
// and the server serves on.
Status EnsureLocalAdmin(Store& store, const ServerOptions& opts, const std::string& address,
                        const std::string& ca, const LogFn& log) {
  const std::string path = opts.admin_config.empty() ? ClientConfigPath() : opts.admin_config;
  ClientConfig config;
  if (auto text = ReadFile(path); text.ok()) {
    auto parsed = ParseClientConfig(*text, path);
    if (!parsed.ok()) {
      log(LogLevel::kWarn, parsed.status().message() + "; the local admin context is not written");
      return Status::Ok();
    }
    config = *parsed;
  }
  const std::string name = LocalAdminContext(address);
  ClientContext ctx;
  for (const auto& c : config.contexts)
    if (c.name == name) ctx = c;
  std::optional<Identity> current;
  if (!ctx.token.empty()) {
    auto found = store.FindToken(TokenHash(ctx.token));
    if (!found.ok()) return found.status();
    current = *found;
  }
  auto any_admin = store.HasLiveAdmin();
  if (!any_admin.ok()) return any_admin.status();
  if (!NeedsLocalAdminToken(opts.db.empty(), current, ctx.ca == ca, *any_admin))
    return Status::Ok();
  const char* user = std::getenv("USER");
  const TokenSpec spec{LocalAdminTokenName(user ? user : ""), Role::kAdmin, ""};
  // The earlier local token was lost with its config: revoke it before making the next one.
  (void)store.RevokeToken(spec.name, "server");
  auto bytes = RandomBytes(32);
  if (!bytes.ok()) return bytes.status();
  const std::string secret = FormatToken(*bytes);
  auto t = store.CreateToken(spec, TokenHash(secret), "server");
  if (!t.ok()) return t.status();
  UpsertContext(config, {name, address, ca, secret, ctx.client_cert, ctx.client_key},
                /*make_current=*/true);
  if (auto st = WriteSecretFile(path, RenderClientConfig(config)); !st.ok()) {
    // The server serves on; an admin makes the next token with the one they hold.
    (void)store.RevokeToken(spec.name, "server");
    log(LogLevel::kWarn, "the local admin token could not be written (" + st.message() +
                             "); revoked it again. Pass --admin-config PATH to a writable file");
    return Status::Ok();
  }
  log(LogLevel::kInfo, "admin token \"" + spec.name + "\" for this server written to " + path +
                           " (context " + name + ", mode 0600)");
  return Status::Ok();
}

}  // namespace

std::string DefaultDataDir() {
  if (geteuid() == 0) return "/var/lib/tunectl";
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/tunectl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/tunectl";
  return "/tmp/tunectl-" + std::to_string(geteuid());
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& opts, LogFn log) {
  if (auto st = CheckTransportFlags(opts); !st.ok()) return st;
  auto s = std::make_unique<ServerImpl>();
  s->log_ = log;
  s->launcher_ = NewPosixProcessLauncher();
  std::string dsn = opts.db, admin_dsn = opts.db_admin;
  const std::string data_dir = opts.data_dir.empty() ? DefaultDataDir() : opts.data_dir;
  if (dsn.empty()) {
    EmbeddedPgOptions pg;
    pg.data_dir = data_dir;
    pg.pg_bin = opts.pg_bin;
    auto started = EmbeddedPostgres::Start(pg, *s->launcher_,
                                           [&](const std::string& m) { log(LogLevel::kInfo, m); });
    if (!started.ok()) return started.status();
    s->pg_ = std::move(*started);
    dsn = s->pg_->dsn();
    admin_dsn = s->pg_->admin_dsn();
  }
  std::unique_ptr<ConnectionPool> owner;  // the schema's owner: migrates and grants
  if (!admin_dsn.empty()) {
    auto opened = ConnectionPool::Open(admin_dsn, 1);
    if (!opened.ok()) return Status::Unavailable("--db-admin: " + opened.status().message());
    owner = std::move(*opened);
  }
  auto pool = ConnectionPool::Open(dsn, 16);
  if (!pool.ok()) return pool.status();
  s->pool_ = std::move(*pool);
  auto applied = PrepareDatabase(*s->pool_, owner.get());
  if (!applied.ok()) return applied.status();
  if (*applied > 0) log(LogLevel::kInfo, "applied " + std::to_string(*applied) + " migration(s)");
  auto warnings = ServerRoleWarnings(*s->pool_);
  if (!warnings.ok()) return warnings.status();
  for (const auto& w : *warnings) log(LogLevel::kWarn, w);
  s->clock_ = std::make_unique<SystemClock>(opts.clock_offset_ms);
  if (opts.clock_offset_ms != 0)
    log(LogLevel::kWarn, "clock offset " + std::to_string(opts.clock_offset_ms / 1000) +
                             " s: every decision, record and window uses the shifted time");
  s->store_ = std::make_unique<Store>(s->pool_.get(), s->clock_.get());
  // Requests fail fast with "database unavailable" while the database does not answer.
  auto probe = HealthProbe::Start(dsn, s->clock_.get(), s->pool_.get());
  if (!probe.ok()) return probe.status();
  s->health_ = std::move(*probe);

  const int beat_ms = opts.heartbeat_interval_ms > 0
                          ? opts.heartbeat_interval_ms
                          : std::clamp(opts.agent_timeout_s * 1000 / 3, 1000, 5000);
  DispatcherOptions dopts;
  dopts.interval_ms = opts.dispatch_interval_ms;
  dopts.agent_timeout_s = opts.agent_timeout_s;
  dopts.heartbeat_interval_ms = beat_ms;
  dopts.clock = s->clock_.get();
  s->leader_ = std::make_unique<LeaderLock>(dsn);
  dopts.try_lead = [lock = s->leader_.get()] { return lock->Check(); };
  s->dispatcher_ = std::make_unique<Dispatcher>(s->store_.get(), dopts, log);
  // The audit chain's head is signed with this server's Ed25519 key (kept with the embedded data).
  std::string key_path = opts.audit_key;
  if (key_path.empty() && opts.db.empty())
    key_path = (opts.data_dir.empty() ? DefaultDataDir() : opts.data_dir) + "/audit-ed25519.pem";
  if (!key_path.empty()) {
    auto key = Ed25519Key::LoadOrCreate(key_path);
    if (!key.ok()) return key.status();
    s->audit_key_ = std::move(*key);
    log(LogLevel::kInfo, "audit heads are signed with " + key_path + " (public key " +
                             s->audit_key_->PublicKeyHex() + ")");
  }
  auto transport = MakeTransport(opts, data_dir, log);
  if (!transport.ok()) return transport.status();
  s->auth_ = std::make_unique<Authorizer>(s->store_.get(), s->clock_.get());
  s->tuning_ = std::make_unique<TuningServiceImpl>(
      s->store_.get(), s->dispatcher_.get(), s->clock_.get(), s->auth_.get(), s->audit_key_.get());
  AgentServiceOptions aopts;
  aopts.heartbeat_interval_ms = beat_ms;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  aopts.server_id = std::string(host) + ":" + std::to_string(getpid());
  aopts.agent_timeout_ms = static_cast<int64_t>(opts.agent_timeout_s) * 1000;
  s->agents_ = std::make_unique<AgentServiceImpl>(s->store_.get(), s->dispatcher_.get(),
                                                  s->auth_.get(), aopts, log);

  grpc::ServerBuilder b;
  b.AddListeningPort(opts.listen, transport->creds, &s->port_);
  b.RegisterService(s->tuning_.get());
  b.RegisterService(s->agents_.get());
  b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 4);
  // Keepalive: a node that vanished without closing TCP (a half-open connection) is found within
  // about 15 s, and agents may ping every 5 s without being told off.
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // 16 MiB both ways (gRPC's default receive limit is 4 MiB), as the CLI's: a margin only, since
  // every list pages (core/paging.h).
  b.SetMaxReceiveMessageSize(kMaxMessageBytes);
  b.SetMaxSendMessageSize(kMaxMessageBytes);
  s->grpc_ = b.BuildAndStart();
  if (!s->grpc_ || s->port_ == 0)
    return Status::Unavailable("cannot listen on " + opts.listen +
                               " (address in use or invalid); pass --listen HOST:PORT");
  if (auto st = EnsureLocalAdmin(*s->store_, opts, LocalAddress(opts.listen, s->port_),
                                 transport->ca, log);
      !st.ok())
    return st;
  if (!opts.http.empty()) {
    HealthProbe* health = s->health_.get();
    Dispatcher* dispatcher = s->dispatcher_.get();
    const bool insecure = opts.insecure;
    // The web view calls this server's own TuningService in-process with the request's token, so
    // that the token check, the roles and the audit of refusals stay in one place.
    std::shared_ptr<grpc::Channel> channel = s->grpc_->InProcessChannel(grpc::ChannelArguments());
    WebOptions wopts;
    wopts.tls = !transport->http.cert_pem.empty();
    if (!opts.chart_dir.empty()) wopts.chart_dir = opts.chart_dir;
    auto web = std::make_shared<WebView>(
        [channel](const std::string& token) {
          return Client::OverChannel(channel, token, "this server");
        },
        wopts);
    auto http = HttpServer::Start(
        opts.http,
        [health, dispatcher, insecure, web](const HttpRequest& request) {
          if (auto page = web->Handle(request)) return *page;
          const std::string& path = request.path;
          HttpResponse r;
          if (request.method == "POST") {
            r.status = 405;
            r.headers.emplace_back("Allow", "GET, HEAD");
            r.body = "only GET\n";
            return r;
          }
          const HealthProbe::View h = health->Get();  // memory only: answers within a bound
          if (path == "/healthz") {
            r.status = h.healthy ? 200 : 503;
            r.body = h.healthy ? "ok\n" : "database unreachable: " + h.error + "\n";
          } else if (path == "/metrics") {
            r.content_type = "text/plain; version=0.0.4; charset=utf-8";
            if (h.snapshot) {
              auto families = ServerMetrics(*h.snapshot, dispatcher->leader());
              families.push_back(
                  {"tunectl_insecure_transport",
                   "1 when gRPC is plaintext (--insecure): tokens and jobs' argv/env "
                   "cross the network unencrypted",
                   "gauge",
                   {{{}, insecure ? 1.0 : 0.0}}});
              r.body = RenderPrometheus(families);
            } else {
              r.status = 503;
              r.body = RenderPrometheus(
                  {{"tunectl_up", "1 while the server can read its database", "gauge", {{{}, 0}}}});
            }
          } else {
            r.status = 404;
            r.body = "not found; try / (the web view), /metrics or /healthz\n";
          }
          return r;
        },
        transport->http);
    if (!http.ok()) return http.status();
    s->http_ = std::move(*http);
    if (!opts.http_port_file.empty()) {
      if (auto st = WriteFileAtomic(opts.http_port_file, std::to_string(s->http_->port()) + "\n");
          !st.ok())
        return st;
    }
  }
  s->dispatcher_->Start();
  Dispatcher* dispatcher = s->dispatcher_.get();
  s->listener_ = std::make_unique<DispatchListener>(
      s->pool_->dsn(), [dispatcher] { dispatcher->Notify(); },
      [log](const std::string& m) { log(LogLevel::kWarn, m); });
  if (!opts.port_file.empty()) {
    if (auto st = WriteFileAtomic(opts.port_file, std::to_string(s->port_) + "\n"); !st.ok())
      return st;
  }
  return std::unique_ptr<Server>(std::move(s));
}

}  // namespace tunectl

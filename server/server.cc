#include "server/server.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>

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
#include "sys/clock.h"
#include "sys/files.h"

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
    grpc_.reset();
    http_.reset();
    listener_.reset();
    tuning_.reset();
    agents_.reset();
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

}  // namespace

std::string DefaultDataDir() {
  if (geteuid() == 0) return "/var/lib/tunectl";
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/tunectl";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/tunectl";
  return "/tmp/tunectl-" + std::to_string(geteuid());
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& opts, LogFn log) {
  auto s = std::make_unique<ServerImpl>();
  s->log_ = log;
  s->launcher_ = NewPosixProcessLauncher();
  std::string dsn = opts.db;
  if (dsn.empty()) {
    EmbeddedPgOptions pg;
    pg.data_dir = opts.data_dir.empty() ? DefaultDataDir() : opts.data_dir;
    pg.pg_bin = opts.pg_bin;
    auto started = EmbeddedPostgres::Start(pg, *s->launcher_,
                                           [&](const std::string& m) { log(LogLevel::kInfo, m); });
    if (!started.ok()) return started.status();
    s->pg_ = std::move(*started);
    dsn = s->pg_->dsn();
  }
  auto pool = ConnectionPool::Open(dsn, 16);
  if (!pool.ok()) return pool.status();
  s->pool_ = std::move(*pool);
  auto applied = ApplyMigrations(*s->pool_, EmbeddedMigrations());
  if (!applied.ok()) return applied.status();
  if (*applied > 0) log(LogLevel::kInfo, "applied " + std::to_string(*applied) + " migration(s)");
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
  s->tuning_ = std::make_unique<TuningServiceImpl>(s->store_.get(), s->dispatcher_.get(),
                                                   s->clock_.get(), s->audit_key_.get());
  AgentServiceOptions aopts;
  aopts.heartbeat_interval_ms = beat_ms;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  aopts.server_id = std::string(host) + ":" + std::to_string(getpid());
  aopts.agent_timeout_ms = static_cast<int64_t>(opts.agent_timeout_s) * 1000;
  s->agents_ =
      std::make_unique<AgentServiceImpl>(s->store_.get(), s->dispatcher_.get(), aopts, log);

  grpc::ServerBuilder b;
  b.AddListeningPort(opts.listen, grpc::InsecureServerCredentials(), &s->port_);
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
  if (!opts.http.empty()) {
    HealthProbe* health = s->health_.get();
    Dispatcher* dispatcher = s->dispatcher_.get();
    auto http = HttpServer::Start(opts.http, [health, dispatcher](const std::string& path) {
      HttpResponse r;
      const HealthProbe::View h = health->Get();  // memory only: answers within a bound
      if (path == "/healthz") {
        r.status = h.healthy ? 200 : 503;
        r.body = h.healthy ? "ok\n" : "database unreachable: " + h.error + "\n";
      } else if (path == "/metrics") {
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        if (h.snapshot) {
          r.body = RenderPrometheus(ServerMetrics(*h.snapshot, dispatcher->leader()));
        } else {
          r.status = 503;
          r.body = RenderPrometheus(
              {{"tunectl_up", "1 while the server can read its database", "gauge", {{{}, 0}}}});
        }
      } else {
        r.status = 404;
        r.body = "not found; try /metrics or /healthz\n";
      }
      return r;
    });
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

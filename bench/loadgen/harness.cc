#include "bench/loadgen/harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/client_config.h"
#include "sys/endpoint_grpc.h"

extern char** environ;

namespace tunectl::loadgen {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Fields of /proc/<pid>/stat after the command's closing parenthesis (field 3 is index 0).
std::vector<std::string> StatFields(pid_t pid) {
  const std::string s = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  const auto close = s.rfind(')');
  std::vector<std::string> out;
  if (close == std::string::npos) return out;
  std::istringstream in(s.substr(close + 2));
  std::string f;
  while (in >> f) out.push_back(f);
  return out;
}

std::string StatusField(pid_t pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

void Check(const grpc::Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + s.error_message());
}

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto c = std::make_unique<grpc::ClientContext>();
  AddToken(*c, BenchToken());
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return c;
}

}  // namespace

// --- database -----------------------------------------------------------------------------------

BenchDb::BenchDb(std::string admin_dsn, std::string name, bool keep)
    : admin_dsn_(std::move(admin_dsn)), name_(std::move(name)), keep_(keep) {
  pqxx::connection c(admin_dsn_);
  pqxx::nontransaction n(c);
  n.exec0("DROP DATABASE IF EXISTS " + name_);
  n.exec0("CREATE DATABASE " + name_);
  dsn_ = admin_dsn_ + " dbname=" + name_;
}

BenchDb::~BenchDb() {
  if (keep_) return;
  try {
    pqxx::connection c(admin_dsn_);
    pqxx::nontransaction n(c);
    n.exec0("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception&) {  // a leftover database is not worth a failed benchmark
  }
}

void BenchDb::SetDurability(bool durable) {
  const std::string v = durable ? "on" : "off";
  {
    pqxx::connection c(admin_dsn_);
    pqxx::nontransaction n(c);
    for (const char* s : {"fsync", "synchronous_commit", "full_page_writes"})
      n.exec0(std::string("ALTER SYSTEM SET ") + s + " = " + v);
    n.exec("SELECT pg_reload_conf()");
  }
  for (int i = 0; i < 100; ++i) {
    if (Show("fsync") == v && Show("synchronous_commit") == v) {
      // Idle sessions (the server's pool) take the reload at their next command.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("PostgreSQL did not take fsync = " + v + " after a reload");
}

void BenchDb::ResetDurability() {
  pqxx::connection c(admin_dsn_);
  pqxx::nontransaction n(c);
  for (const char* s : {"fsync", "synchronous_commit", "full_page_writes"})
    n.exec0(std::string("ALTER SYSTEM RESET ") + s);
  n.exec("SELECT pg_reload_conf()");
}

std::string BenchDb::Show(const std::string& setting) {
  pqxx::connection c(admin_dsn_);
  pqxx::nontransaction n(c);
  return n.exec1("SHOW " + setting)[0].as<std::string>();
}

int64_t BenchDb::Count(const std::string& sql) {
  pqxx::connection c(dsn_);
  pqxx::nontransaction n(c);
  auto r = n.exec1(sql);
  return r[0].is_null() ? 0 : r[0].as<int64_t>();
}

std::vector<std::vector<int64_t>> BenchDb::Ints(const std::string& sql) {
  pqxx::connection c(dsn_);
  pqxx::nontransaction n(c);
  std::vector<std::vector<int64_t>> out;
  for (const auto& row : n.exec(sql)) {
    std::vector<int64_t> r;
    for (const auto& f : row) r.push_back(f.is_null() ? 0 : f.as<int64_t>());
    out.push_back(std::move(r));
  }
  return out;
}

pid_t BenchDb::Postmaster() {
  pqxx::connection c(admin_dsn_);
  pqxx::nontransaction n(c);
  const auto backend = n.exec1("SELECT pg_backend_pid()")[0].as<pid_t>();
  auto f = StatFields(backend);
  if (f.size() < 2)
    throw std::runtime_error("cannot read /proc/" + std::to_string(backend) +
                             "/stat: is PostgreSQL on this machine?");
  return static_cast<pid_t>(std::stol(f[1]));
}

// --- server -------------------------------------------------------------------------------------

namespace {
std::string g_token;  // set once a server has written it, before any session or call starts
}  // namespace

const std::string& BenchToken() {
  return g_token;
}

ServerProcess::ServerProcess(const std::string& bin, const std::string& db,
                             const std::string& dir) {
  static int counter = 0;
  const std::string tag = std::to_string(++counter);
  log_ = dir + "/server-" + tag + ".log";
  const std::string port_file = dir + "/port-" + tag;
  // Each server its own file: a server on a fresh database writes a new admin token there.
  const std::string config = dir + "/client-config-" + tag;
  config_ = config;
  std::vector<std::string> args = {bin,          "--db",           db,
                                   "--listen",   "127.0.0.1:0",    "--port-file",
                                   port_file,    "--http",         "127.0.0.1:0",
                                   "--insecure", "--admin-config", config};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const int rc = posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + bin + ": " + std::strerror(rc));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    const std::string port = ReadAll(port_file);
    if (!port.empty() && port.back() == '\n') {
      address_ = "127.0.0.1:" + port.substr(0, port.size() - 1);
      // A server on a fresh database writes its admin context (before its port file).
      if (auto parsed = ParseClientConfig(ReadAll(config), config); parsed.ok())
        if (auto ctx = ChooseContext(*parsed, "", address_); ctx.ok() && *ctx)
          g_token = (*ctx)->token;
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("tunectl-server exited at its start:\n" + LogTail(3000));
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("tunectl-server did not start within 120 s:\n" + LogTail(3000));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 300; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

std::string ServerProcess::LogTail(size_t bytes) const {
  const std::string s = ReadAll(log_);
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

// --- /proc --------------------------------------------------------------------------------------

int64_t CpuTicks(pid_t pid) {
  auto f = StatFields(pid);
  if (f.size() < 13) return 0;
  return std::stoll(f[11]) + std::stoll(f[12]);  // utime (14), stime (15)
}

int64_t RssKb(pid_t pid) {
  const std::string v = StatusField(pid, "VmRSS");
  return v.empty() ? 0 : std::stoll(v);
}

int Threads(pid_t pid) {
  const std::string v = StatusField(pid, "Threads");
  return v.empty() ? 0 : std::stoi(v);
}

int OpenFds(pid_t pid) {
  int n = 0;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

int64_t NofileLimit(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream in(line.substr(std::string("Max open files").size()));
    std::string soft;
    in >> soft;
    return soft == "unlimited" ? std::numeric_limits<int64_t>::max() : std::stoll(soft);
  }
  return -1;
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const pid_t pid = static_cast<pid_t>(std::stol(e->d_name));
      auto f = StatFields(pid);
      if (f.size() > 1 && std::stol(f[1]) == parent) out.push_back(pid);
    }
    closedir(d);
  }
  return out;
}

double TicksPerSecond() {
  return static_cast<double>(sysconf(_SC_CLK_TCK));
}

CpuMeter::CpuMeter(pid_t server, pid_t postmaster)
    : server_(server),
      postmaster_(postmaster),
      server0_(CpuTicks(server)),
      pg0_(PgTicks()),
      self0_(SelfSeconds()),
      t0_(std::chrono::steady_clock::now()) {}

std::vector<std::pair<pid_t, int64_t>> CpuMeter::PgTicks() const {
  std::vector<std::pair<pid_t, int64_t>> out = {{postmaster_, CpuTicks(postmaster_)}};
  for (pid_t c : ChildrenOf(postmaster_)) out.emplace_back(c, CpuTicks(c));
  return out;
}

double CpuMeter::SelfSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

CpuMeter::Use CpuMeter::Stop() const {
  Use u;
  u.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double tps = TicksPerSecond();
  u.server = 100.0 * static_cast<double>(CpuTicks(server_) - server0_) / tps / u.seconds;
  int64_t pg = 0;
  const auto pg1 = PgTicks();
  for (const auto& [pid, t] : pg1) {
    int64_t before = 0;  // a backend that started in the window: all of its CPU is in it
    for (const auto& [pid0, t0] : pg0_)
      if (pid0 == pid) before = t0;
    pg += t - before;
  }
  u.postgres = 100.0 * static_cast<double>(pg) / tps / u.seconds;
  u.postgres_processes = pg1.size();
  u.self = 100.0 * (SelfSeconds() - self0_) / u.seconds;
  return u;
}

int64_t RaiseNofile(int64_t want) {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  if (static_cast<int64_t>(r.rlim_max) < want) {
    rlimit up = r;
    up.rlim_max = static_cast<rlim_t>(want);
    up.rlim_cur = static_cast<rlim_t>(want);
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) return want;  // root may raise the hard limit
  }
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  getrlimit(RLIMIT_NOFILE, &r);
  return static_cast<int64_t>(r.rlim_cur);
}

// --- TuningService ------------------------------------------------------------------------------

Tuning::Tuning(const std::string& address)
    : stub_(v1::TuningService::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

void Tuning::ApplyWorkload(const std::string& spec_json) {
  v1::ApplyWorkloadRequest req;
  req.set_spec(spec_json);
  req.set_source("loadgen.json");
  v1::ApplyWorkloadResponse resp;
  Check(stub_->ApplyWorkload(Ctx().get(), req, &resp), "ApplyWorkload");
}

int64_t Tuning::CreateBaseline(const std::string& workload, int repeats) {
  v1::CreateBaselineRequest req;
  req.set_workload(workload);
  req.set_repeats(repeats);
  req.set_actor("loadgen");
  v1::Baseline resp;
  Check(stub_->CreateBaseline(Ctx().get(), req, &resp), "CreateBaseline " + workload);
  return resp.id();
}

void Tuning::CancelBaseline(int64_t id) {
  v1::CancelBaselineRequest req;
  req.set_id(id);
  v1::Baseline resp;
  const grpc::Status st = stub_->CancelBaseline(Ctx().get(), req, &resp);
  if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION) return;  // already finished
  Check(st, "CancelBaseline");
}

std::string Tuning::BaselineState(int64_t id) {
  v1::GetBaselineRequest req;
  req.set_id(id);
  v1::Baseline resp;
  Check(stub_->GetBaseline(Ctx().get(), req, &resp), "GetBaseline");
  return resp.state();
}

std::string WorkloadJson(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& selector) {
  nlohmann::json sel = nlohmann::json::object();
  for (const auto& [k, v] : selector) sel[k] = v;
  nlohmann::json spec = {
      {"name", name},
      {"description", "tunectl-loadgen: simulated agents never run this command"},
      {"command", {"true"}},
      {"metrics",
       {{"samples_per_s",
         {{"pattern", "samples/s: ([0-9.]+)"},
          {"better", "higher"},
          {"role", "primary"},
          {"min_effect", 0.03}}},
        {"step_time_ms", {{"pattern", "step_time_ms: ([0-9.]+)"}, {"better", "lower"}}}}},
      {"run", {{"repeats", 1}, {"warmup_steps", 0}, {"timeout", "10m"}, {"selector", sel}}}};
  return spec.dump();
}

// --- statistics ---------------------------------------------------------------------------------

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

std::string BenchAdminDsn(const std::string& flag) {
  if (!flag.empty()) return flag;
  for (const char* env : {"TUNECTL_BENCH_DSN", "TUNECTL_TEST_DSN"})
    if (const char* v = std::getenv(env); v && *v) return v;
  return "";
}

int NoBenchDb(const std::string& bench, bool smoke) {
  if (smoke && !std::getenv("TUNECTL_REQUIRE_DB")) {
    std::fprintf(stderr, "%s: skipped: no TUNECTL_TEST_DSN\n", bench.c_str());
    return 77;
  }
  std::fprintf(stderr,
               "error: --db: no database; pass a superuser DSN of a PostgreSQL on this machine "
               "(or set TUNECTL_BENCH_DSN; scripts/bench-agents starts one)\n");
  return 2;
}

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace tunectl::loadgen

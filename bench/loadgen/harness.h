// The load generator's surroundings: a real tunectl-server process on a private database, the
// database itself (a fresh one per mode, durability settings, direct reads for the checks),
// CPU and memory of processes from /proc, the TuningService client that creates the work, and
// small statistics. Errors throw std::runtime_error with what failed and why.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tunectl/v1/tunectl.grpc.pb.h"

namespace tunectl::loadgen {

// A database of its own in the PostgreSQL that `admin_dsn` (key=value, a superuser) reaches;
// dropped again by the destructor unless kept.
class BenchDb {
 public:
  BenchDb(std::string admin_dsn, std::string name, bool keep);
  ~BenchDb();
  const std::string& dsn() const { return dsn_; }
  const std::string& name() const { return name_; }
  // fsync, synchronous_commit and full_page_writes on (durable) or off, via ALTER SYSTEM and a
  // reload; returns once a new session sees the new fsync. ResetDurability restores the files'.
  void SetDurability(bool durable);
  void ResetDurability();
  std::string Show(const std::string& setting);
  int64_t Count(const std::string& sql);                           // a query returning one number
  std::vector<std::vector<int64_t>> Ints(const std::string& sql);  // rows of integers
  pid_t Postmaster();  // the postmaster's pid (PostgreSQL on this machine)

 private:
  std::string admin_dsn_, name_, dsn_;
  bool keep_;
};

// tunectl-server started on 127.0.0.1 (any free port) against `db`, its output in `log_path`;
// stopped (SIGTERM, then SIGKILL after 30 s) by the destructor.
// The admin token the servers of this process wrote to their client config (they run with
// --insecure and --admin-config <dir>/client-config-<n>); "" before the first server started. Every
// call and session of the load generator carries it.
const std::string& BenchToken();

class ServerProcess {
 public:
  ServerProcess(const std::string& bin, const std::string& db, const std::string& dir);
  ~ServerProcess();
  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }
  const std::string& log_path() const { return log_; }
  // The client config it writes its admin context to (when it makes an admin token).
  const std::string& config_path() const { return config_; }
  std::string LogTail(size_t bytes) const;

 private:
  pid_t pid_ = -1;
  std::string address_, log_, config_;
};

// /proc readings. CPU in clock ticks (utime + stime); 0 when the process is gone.
int64_t CpuTicks(pid_t pid);
int64_t RssKb(pid_t pid);
int Threads(pid_t pid);
int OpenFds(pid_t pid);
int64_t NofileLimit(pid_t pid);  // soft "Max open files"; -1 when unknown
std::vector<pid_t> ChildrenOf(pid_t parent);
double TicksPerSecond();
// CPU used over a window, in % of one core: a process (the server), a process and its children
// (PostgreSQL's postmaster and backends; one that started in the window counts whole) and this one.
class CpuMeter {
 public:
  CpuMeter(pid_t server, pid_t postmaster);  // starts the window
  struct Use {
    double seconds = 0, server = 0, postgres = 0, self = 0;
    size_t postgres_processes = 0;
  };
  Use Stop() const;  // the window so far

 private:
  std::vector<std::pair<pid_t, int64_t>> PgTicks() const;
  static double SelfSeconds();
  pid_t server_, postmaster_;
  int64_t server0_;
  std::vector<std::pair<pid_t, int64_t>> pg0_;
  double self0_;
  std::chrono::steady_clock::time_point t0_;
};

// Raises this process's open-files limit to at least `want` (soft = hard, hard raised as root);
// returns the soft limit now in force. Children (the server) inherit it.
int64_t RaiseNofile(int64_t want);

// The TuningService, as the CLI uses it.
class Tuning {
 public:
  explicit Tuning(const std::string& address);
  void ApplyWorkload(const std::string& spec_json);
  int64_t CreateBaseline(const std::string& workload, int repeats);  // its id
  void CancelBaseline(int64_t id);  // a finished one is left as it is
  std::string BaselineState(int64_t id);

 private:
  std::unique_ptr<v1::TuningService::Stub> stub_;
};

// The workload the simulated agents serve: a command never run, two metrics, `selector`.
std::string WorkloadJson(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& selector);

// The admin DSN a bench runs against: `flag` when given, else $TUNECTL_BENCH_DSN, else
// $TUNECTL_TEST_DSN; "" when none is set.
std::string BenchAdminDsn(const std::string& flag);
// What a bench without a database does: a smoke run (ctest) without TUNECTL_REQUIRE_DB is skipped
// (prints why, returns 77, ctest's SKIP_RETURN_CODE); otherwise it is an error of --db (prints
// it, returns 2).
int NoBenchDb(const std::string& bench, bool smoke);

// Nearest-rank percentile of unsorted values (q in [0, 1]); NaN for none.
double Percentile(std::vector<double> v, double q);
double Median(std::vector<double> v);

}  // namespace tunectl::loadgen

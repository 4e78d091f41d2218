// bench_finish: do finishes of one baseline's runs wait for each other? On a fresh database of the
// PostgreSQL that --db reaches, --threads threads finish --runs started runs (each with a batch of
// samples) through the store's FinishRun, in two arrangements side by side, alternating, --rounds
// times each:
//   one baseline   all --runs runs belong to one baseline (a burst, as `baseline create -n 1000`)
//   own baselines  each thread finishes the runs of a baseline of its own (nothing shared)
// The ratio of their wall times is what the shared baseline costs: 1.0 when its finishes never
// wait for each other. Checks that every baseline ended exactly once and no run is left active.
//
//   build/bench/bench_finish --db 'host=127.0.0.1 port=5432 user=postgres' [--durable]
//
// Prints Markdown (medians of the rounds); exit 1 when a check fails, 2 on bad flags.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/loadgen/harness.h"
#include "core/spec.h"
#include "server/store/migrations.h"
#include "server/store/pool.h"
#include "server/store/store.h"

namespace tunectl {
namespace {

const char* const kSpec = R"(
name: fin
command: [train, "--workers={num_workers}"]
params:
  num_workers: {type: int, default: 4, min: 0, max: 64}
metrics:
  samples_per_s: {pattern: 'samples/s: ([0-9.]+)', better: higher, role: primary}
  step_time_ms:  {pattern: 'step_time_ms: ([0-9.]+)', better: lower}
run: {repeats: 3, warmup_steps: 0}
)";

struct Options {
  std::string db;
  int runs = 480;    // finished per arrangement and round
  int threads = 8;   // finishing at once
  int rounds = 3;    // of each arrangement, alternating
  int samples = 40;  // per run and metric, in one batch
  bool durable = false;
  bool smoke = false;
};

void Check(const Status& st, const char* what) {
  if (!st.ok()) throw std::runtime_error(std::string(what) + ": " + st.message());
}
template <typename T>
T Get(Result<T> r, const char* what) {
  if (!r.ok()) throw std::runtime_error(std::string(what) + ": " + r.status().message());
  return std::move(*r);
}

// Creates `baselines` baselines of runs/baselines runs each, claims and starts them all on one
// agent with a batch of samples each; returns the runs, grouped per thread: with one baseline
// the runs are dealt round-robin, so every thread finishes runs of it.
std::vector<std::vector<int64_t>> Prepare(Store& store, const Options& o, int baselines,
                                          const std::string& agent_name,
                                          std::vector<int64_t>* baseline_ids) {
  for (int b = 0; b < baselines; ++b)
    baseline_ids->push_back(
        Get(store.CreateBaseline("fin", o.runs / baselines, "user:bench"), "create baseline"));
  const int64_t agent =
      Get(store.RegisterAgent(agent_name, {}, o.runs, "bench", "s1"), "register agent");
  std::vector<LaunchPlan> plans = Get(store.ClaimRuns(agent, {}, o.runs), "claim");
  if (static_cast<int>(plans.size()) != o.runs)
    throw std::runtime_error("claimed " + std::to_string(plans.size()) + " runs, not " +
                             std::to_string(o.runs));
  std::sort(plans.begin(), plans.end(),
            [](const LaunchPlan& a, const LaunchPlan& b) { return a.run_id < b.run_id; });
  std::vector<std::vector<int64_t>> per_thread(o.threads);
  const int per_baseline = o.runs / baselines;
  for (int i = 0; i < o.runs; ++i) {
    const LaunchPlan& p = plans[i];
    Check(store.MarkRunStarted(p.run_id, p.attempt, agent), "start");
    std::vector<SampleIn> samples;
    for (int s = 1; s <= o.samples; ++s) {
      samples.push_back({"samples_per_s", s, 1000.0 + (s * 7 + i) % 13, s});
      samples.push_back({"step_time_ms", s, 50.0 + (s * 3 + i) % 5, s});
    }
    Get(store.StoreMetricBatch(p.run_id, p.attempt, 1, samples), "samples");
    // Runs are created baseline by baseline, so ids in order are baseline by baseline.
    const int thread = baselines == 1 ? i % o.threads : i / per_baseline;
    per_thread[thread].push_back(p.run_id);
  }
  return per_thread;
}

// What the finishing backends waited for, sampled from pg_locks every 10 ms while they ran: the
// mean number of them waiting on a row (a tuple or another transaction, i.e. a row lock) and on
// an advisory lock (the baseline's completion lock, the workload's watch lock).
struct Waits {
  double row = 0, advisory = 0;
};

class WaitSampler {
 public:
  explicit WaitSampler(const std::string& dsn) : conn_(dsn), thread_([this] { Loop(); }) {}
  ~WaitSampler() { Stop(); }
  Waits Stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
    }
    if (!error_.empty()) throw std::runtime_error("lock sampler: " + error_);
    return samples_ ? Waits{row_ / samples_, advisory_ / samples_} : Waits{};
  }

 private:
  void Loop() {
    try {
      while (!stop_) {
        pqxx::nontransaction n(conn_);
        for (const auto& r : n.exec(
                 "SELECT l.locktype, count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = "
                 "l.pid WHERE NOT l.granted AND a.datname = current_database() AND l.locktype "
                 "IN ('tuple', 'transactionid', 'advisory') GROUP BY 1")) {
          const std::string type = r[0].as<std::string>();
          (type == "advisory" ? advisory_ : row_) += r[1].as<double>();
        }
        ++samples_;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }
  pqxx::connection conn_;
  std::atomic<bool> stop_{false};
  double row_ = 0, advisory_ = 0;
  int samples_ = 0;
  std::string error_;
  std::thread thread_;
};

// Finishes every thread's runs, the threads at once; returns the wall time in ms and what they
// waited for.
double FinishAll(Store& store, const std::string& dsn,
                 const std::vector<std::vector<int64_t>>& per_thread, Waits* waits) {
  std::vector<std::string> errors(per_thread.size());
  WaitSampler sampler(dsn);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (size_t t = 0; t < per_thread.size(); ++t)
    ts.emplace_back([&, t] {
      for (int64_t run : per_thread[t]) {
        const Status st = store.FinishRun(run, 1, {0, 0, "", "", 1, 40}, "agent:bench");
        if (!st.ok() && errors[t].empty()) errors[t] = st.message();
      }
    });
  for (auto& t : ts) t.join();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  *waits = sampler.Stop();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error("finish: " + e);
  return ms;
}

}  // namespace
}  // namespace tunectl

int main(int argc, char** argv) {
  using namespace tunectl;  // NOLINT
  Options o;
  CLI::App app{"bench_finish: finishes of one baseline's runs at once (docs/benchmarks.md)"};
  app.add_option("--db", o.db,
                 "admin DSN of a PostgreSQL (key=value); a fresh database is made in it "
                 "(default $TUNECTL_BENCH_DSN or $TUNECTL_TEST_DSN)");
  app.add_option("--runs", o.runs, "runs finished per arrangement and round")
      ->check(CLI::Range(2, 1000));  // a baseline's runs: at most 1000
  app.add_option("--threads", o.threads, "threads finishing at once")->check(CLI::Range(2, 64));
  app.add_option("--rounds", o.rounds, "rounds of each arrangement")->check(CLI::Range(1, 20));
  app.add_option("--samples", o.samples, "samples per run and metric")
      ->check(CLI::Range(1, 100000));
  app.add_flag("--durable", o.durable,
               "fsync and synchronous_commit on for the run (ALTER SYSTEM on that PostgreSQL, "
               "reset after)");
  app.add_flag("--smoke", o.smoke, "small sizes: what ctest runs");
  CLI11_PARSE(app, argc, argv);
  if (o.smoke) o.runs = 24, o.threads = 4, o.rounds = 1, o.samples = 5;
  if (o.runs % o.threads != 0) {
    std::fprintf(stderr, "error: --runs %d must be a multiple of --threads %d\n", o.runs,
                 o.threads);
    return 2;
  }
  if (o.durable && o.db.empty()) {
    std::fprintf(stderr,
                 "error: --durable: needs --db (it changes that PostgreSQL's settings for the run; "
                 "not taken from the environment)\n");
    return 2;
  }
  o.db = loadgen::BenchAdminDsn(o.db);
  if (o.db.empty()) return loadgen::NoBenchDb("bench_finish", o.smoke);
  int failed = 0;
  try {
    loadgen::BenchDb db(o.db, "tunectl_bench_finish_" + std::to_string(getpid()), false);
    if (o.durable) db.SetDurability(true);
    struct Reset {
      loadgen::BenchDb& db;
      bool on;
      ~Reset() {
        if (on) db.ResetDurability();
      }
    } reset{db, o.durable};
    auto pool = ConnectionPool::Open(db.dsn(), o.threads + 2);
    if (!pool.ok()) throw std::runtime_error(pool.status().message());
    Check(ApplyMigrations(**pool, EmbeddedMigrations()).status(), "migrations");
    Store store(pool->get());
    auto spec = ParseWorkloadSpec(kSpec);
    if (!spec.ok()) throw std::runtime_error(spec.status().message());
    Check(store.ApplyWorkload(*spec, kSpec, "user:bench").status(), "apply");

    std::vector<double> one_ms, own_ms;
    std::vector<Waits> one_waits, own_waits;
    std::vector<int64_t> baselines;
    for (int r = 0; r < o.rounds; ++r)
      for (const bool shared : {r % 2 == 0, r % 2 != 0}) {
        const std::string agent = "a" + std::to_string(r) + (shared ? "one" : "own");
        auto per_thread = Prepare(store, o, shared ? 1 : o.threads, agent, &baselines);
        Waits waits;
        (shared ? one_ms : own_ms).push_back(FinishAll(store, db.dsn(), per_thread, &waits));
        (shared ? one_waits : own_waits).push_back(waits);
        std::fprintf(stderr, "round %d/%d, %s: %d runs finished in %.0f ms\n", r + 1, o.rounds,
                     shared ? "one baseline" : "own baselines", o.runs,
                     (shared ? one_ms : own_ms).back());
      }
    const int64_t active =
        db.Count("SELECT count(*) FROM runs WHERE state IN ('queued', 'assigned', 'running')");
    const int64_t open = db.Count("SELECT count(*) FROM baselines WHERE state = 'running'");
    const int64_t ends = db.Count(
        "SELECT count(*) FROM audit_events WHERE entity = 'baseline' AND kind LIKE 'baseline.%' "
        "AND kind <> 'baseline.created'");
    const int64_t completed = db.Count("SELECT count(*) FROM baselines WHERE state = 'completed'");
    std::printf("# bench_finish\n\n");
    std::printf(
        "%d runs finished per arrangement by %d threads (FinishRun, a batch of %d samples × 2 "
        "metrics per run), %d round(s) each, alternating; PostgreSQL fsync=%s "
        "synchronous_commit=%s.\n\n",
        o.runs, o.threads, o.samples, o.rounds, db.Show("fsync").c_str(),
        db.Show("synchronous_commit").c_str());
    std::printf(
        "| arrangement | wall ms (median) | finishes/s | rounds (ms) | waiting on a row lock | "
        "waiting on an advisory lock |\n|---|---|---|---|---|---|\n");
    auto row = [&](const char* label, const std::vector<double>& ms, const std::vector<Waits>& w) {
      std::string all;
      for (double x : ms) all += (all.empty() ? "" : ", ") + std::to_string(static_cast<int>(x));
      std::vector<double> rows, advisory;
      for (const Waits& x : w) rows.push_back(x.row), advisory.push_back(x.advisory);
      std::printf("| %s | %.0f | %.0f | %s | %.2f | %.2f |\n", label, loadgen::Median(ms),
                  o.runs * 1000.0 / loadgen::Median(ms), all.c_str(), loadgen::Median(rows),
                  loadgen::Median(advisory));
    };
    row("one baseline", one_ms, one_waits);
    row("own baselines", own_ms, own_waits);
    std::printf(
        "\n(waiting: the mean number of the %d finishing backends waiting on such a lock, "
        "sampled every 10 ms; median of the rounds)\n",
        o.threads);
    std::printf(
        "\none baseline / own baselines: **%.2f×** (1.00 = its finishes never wait for "
        "each other)\n",
        loadgen::Median(one_ms) / loadgen::Median(own_ms));
    std::printf(
        "\nchecks: %lld of %zu baselines ended once each (%lld completed), %lld runs "
        "active, %lld baselines running\n",
        static_cast<long long>(ends), baselines.size(), static_cast<long long>(completed),
        static_cast<long long>(active), static_cast<long long>(open));
    if (active != 0 || open != 0 || ends != static_cast<int64_t>(baselines.size()) ||
        completed != ends) {
      std::fprintf(stderr,
                   "check failed: a baseline did not end exactly once, or a run is "
                   "still active\n");
      ++failed;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_finish: %s\n", e.what());
    return 1;
  }
  return failed ? 1 : 0;
}

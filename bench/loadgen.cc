// tunectl-loadgen: many simulated agents over AgentService.Session against a real tunectl-server
// (started here on a fresh database of the PostgreSQL that --db reaches), measuring the session
// layer at cluster scale. Three modes:
//
//   ingest    K streams send batches of B samples for runs assigned to them: committed rows/s,
//             beside raw COPY of the same rows into metric_samples from this process (over K
//             connections, and over as many as cores); fsync on and off; median of --reps.
//             Checks every row stored once.
//   dispatch  --agents connected agents (1 slot each): (a) a run finished → the agent's next
//             Assign, under a steady stream of queued runs; (b) queued → assigned for a run whose
//             selector matches one agent only; (c) a burst of --burst-runs runs on idle agents.
//   scale     --scale-agents idle sessions heartbeating: the server's and PostgreSQL's CPU over
//             the window (/proc), the server's RSS.
//
//   tunectl-loadgen --db 'host=127.0.0.1 port=5432 user=postgres' --mode ingest,dispatch,scale
//
// Prints Markdown tables, the targets (PASS/FAIL) and the correctness checks. Exit 1 when a check
// fails, or a target fails at full size (ingest: --rows >= 100000 and --reps >= 3; dispatch:
// --agents >= 1000 and --flow-seconds >= 30; scale: --scale-agents >= 2000 and
// --scale-seconds >= 60); 2 on bad flags. scripts/bench-agents builds, starts PostgreSQL, runs it.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/loadgen/fleet.h"
#include "bench/loadgen/harness.h"

namespace tunectl::loadgen {
namespace {

struct Options {
  std::string db;
  std::string server_bin;
  std::string dir;
  std::vector<std::string> modes = {"ingest", "dispatch", "scale"};
  bool keep = false;
  // ingest
  std::vector<int> streams = {8, 32};
  int batch = 500;
  int64_t rows = 320000;  // per repetition, over all streams
  int reps = 3;
  int window = 64;
  std::string fsync = "both";  // both | on | off | keep
  // dispatch
  int agents = 1000;
  int probes = 10;
  int bursts = 3;
  int burst_runs = 1000;
  int flow_seconds = 60;
  int run_ms = 20000;
  int flow_batches = 1;
  int flow_samples = 20;
  int flow_workloads = 50;
  int flow_repeats = 10;
  // scale
  int scale_agents = 2000;
  int scale_seconds = 60;
  int settle_seconds = 10;
};

// What the modes found: failed checks always fail the run; failed targets only at full size.
struct Outcome {
  bool failed = false;
  void Check(bool ok, const std::string& what) {
    std::printf("- %s: %s\n", ok ? "ok" : "FAILED", what.c_str());
    failed |= !ok;
  }
  void Target(bool ok, bool enforced, const std::string& what) {
    std::printf("- %s: %s%s\n", ok ? "PASS" : "FAIL", what.c_str(),
                enforced ? "" : " (not enforced below full size)");
    failed |= !ok && enforced;
  }
};

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string Ms(double s) {
  return std::isnan(s) ? "-" : Fmt("%.1f ms", s * 1000);
}

std::string Prefix() {
  return "lg" + std::to_string(getpid()) + "-";
}

std::string Now() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return b;
}

std::string Load() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return "load average " + a + " " + b + " " + c;
}

// Connects agents and waits for every Welcome; returns the seconds it took.
double Connect(Fleet& fleet, const std::vector<AgentSpec>& specs, double timeout_s) {
  const Time t0 = Clock::now();
  for (const auto& s : specs) fleet.Add(s);
  const int n = fleet.size();
  if (!fleet.Wait([n](const FleetView& v) { return v.welcomed >= n || v.done > 0; }, timeout_s) ||
      fleet.Read([](const FleetView& v) { return v.done; }) > 0) {
    const auto [welcomed, errors] =
        fleet.Read([](const FleetView& v) { return std::make_pair(v.welcomed, v.errors); });
    throw std::runtime_error(std::to_string(welcomed) + " of " + std::to_string(n) +
                             " agents welcomed within " + Fmt("%.0f", timeout_s) + " s" +
                             (errors.empty() ? "" : "; first error: " + errors.front()));
  }
  return Seconds(Clock::now() - t0);
}

void PrintServerLimits(const ServerProcess& server, int streams) {
  const int64_t lim = NofileLimit(server.pid());
  std::printf("server pid %d: open-files limit %lld (needs > %d for the streams)\n", server.pid(),
              static_cast<long long>(lim), streams);
}

// --- ingest
// ---------------------------------------------------------------------------------------

struct SentRun {
  int64_t run_id = 0;
  int attempt = 0;
  int64_t samples = 0;
  int batches = 0;
};

// The runs' rows copied over `conns` connections (run i on connection i % conns, one after the
// other), one transaction per batch as the server stores them; returns rows/s.
double RawCopy(const std::string& dsn, const std::vector<int64_t>& ids, int batches, int samples,
               const std::vector<std::string>& metrics, size_t conns_wanted) {
  const size_t k = std::min(ids.size(), std::max<size_t>(1, conns_wanted));
  std::vector<std::unique_ptr<pqxx::connection>> conns;
  for (size_t i = 0; i < k; ++i) conns.push_back(std::make_unique<pqxx::connection>(dsn));
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  std::vector<std::string> errors(k);
  for (size_t i = 0; i < k; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      try {
        for (size_t run = i; run < ids.size(); run += k)
          for (int seq = 1; seq <= batches; ++seq) {
            pqxx::work w(*conns[i]);
            pqxx::stream_to s(w, "metric_samples",
                              std::vector<std::string>{"run_id", "attempt", "metric", "step",
                                                       "value", "line_no"});
            for (int j = 0; j < samples; ++j) {
              const SampleRow r = SampleAt(seq, j, samples, static_cast<int>(metrics.size()));
              s << std::make_tuple(ids[run], 1, metrics[static_cast<size_t>(r.metric)], r.step,
                                   r.value, r.line_no);
            }
            s.complete();
            w.commit();
          }
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  const Time t0 = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  const double s = Seconds(Clock::now() - t0);
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error("raw COPY: " + e);
  return static_cast<double>(ids.size()) * batches * samples / s;
}

void Ingest(const Options& o, Outcome& out) {
  const bool full = o.rows >= 100000 && o.reps >= 3;
  std::printf("\n## ingest\n\n%s at the start\n", Load().c_str());
  BenchDb db(o.db, "tunectl_loadgen_ingest_" + std::to_string(getpid()), o.keep);
  ServerProcess server(o.server_bin, db.dsn(), o.dir);
  const int max_streams = *std::max_element(o.streams.begin(), o.streams.end());
  PrintServerLimits(server, max_streams);
  Tuning tuning(server.address());
  tuning.ApplyWorkload(WorkloadJson("lg-ingest", {{"pool", "cpu"}}));
  const std::vector<std::string> metrics = {"samples_per_s", "step_time_ms"};  // its rules
  // Raw COPY is measured twice: over as many connections as streams (the same concurrency) and
  // over as many as cores, which a 2-core machine serves faster (less contention).
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());

  std::vector<std::string> settings;
  if (o.fsync == "both")
    settings = {"on", "off"};
  else
    settings = {o.fsync};
  struct Row {
    std::string fsync;
    int streams = 0, batches = 0;
    std::vector<double> server, raw, raw_few;  // raw: K connections; raw_few: as many as cores
  };
  std::vector<Row> rows;
  std::vector<SentRun> sent;
  std::vector<std::pair<int64_t, int64_t>> raw_sent;  // (negative run id, rows)
  int64_t raw_id = 0;
  for (const auto& setting : settings) {
    if (setting != "keep") db.SetDurability(setting == "on");
    const std::string fsync_now = db.Show("fsync");
    for (int k : o.streams) {
      Row row;
      row.fsync = fsync_now + (setting == "keep" ? " (as configured)" : "");
      row.streams = k;
      row.batches = static_cast<int>((o.rows + int64_t{k} * o.batch - 1) / (int64_t{k} * o.batch));
      Fleet fleet(server.address());
      JobShape shape;
      shape.batches = row.batches;
      shape.samples = o.batch;
      shape.window = o.window;
      shape.hold_start = shape.hold_finish = true;
      fleet.SetShape(0, shape);
      std::vector<AgentSpec> specs;
      for (int i = 0; i < k; ++i)
        specs.push_back({Prefix() + "ingest-" + std::to_string(k) + "-" + std::to_string(i),
                         {{"pool", "cpu"}},
                         1,
                         0});
      Connect(fleet, specs, 120);
      for (int rep = 0; rep < o.reps; ++rep) {
        auto server_path = [&] {
          std::vector<std::pair<int64_t, int>> keys;
          const int64_t bid = tuning.CreateBaseline("lg-ingest", k);
          if (!fleet.Wait(
                  [&](const FleetView& v) {
                    keys.clear();
                    for (const auto& [key, r] : v.runs)
                      if (r.at_start_gate) keys.push_back(key);
                    return static_cast<int>(keys.size()) >= k;
                  },
                  300))
            throw std::runtime_error("baseline " + std::to_string(bid) + ": " +
                                     std::to_string(keys.size()) + " of " + std::to_string(k) +
                                     " runs assigned within 300 s");
          const Time t0 = Clock::now();
          fleet.ReleaseStarts();
          auto all_acked = [&](const FleetView& v) {
            for (const auto& key : keys)
              if (v.runs.at(key).batches_acked < row.batches) return false;
            return true;
          };
          if (!fleet.Wait(all_acked, 900))
            throw std::runtime_error("batches not all acked within 900 s");
          Time last = t0;
          fleet.Read([&](const FleetView& v) {
            for (const auto& key : keys) last = std::max(last, v.runs.at(key).last_ack);
            return 0;
          });
          fleet.ReleaseFinishes();
          if (!fleet.Wait(
                  [&](const FleetView& v) {
                    for (const auto& key : keys)
                      if (!v.runs.at(key).acked) return false;
                    return true;
                  },
                  300))
            throw std::runtime_error("RunFinished not all acked within 300 s");
          fleet.Read([&](const FleetView& v) {
            for (const auto& key : keys) {
              const RunRecord& r = v.runs.at(key);
              sent.push_back({r.run_id, r.attempt, r.samples_sent, r.batches_sent});
            }
            return 0;
          });
          row.server.push_back(static_cast<double>(k) * row.batches * o.batch / Seconds(last - t0));
        };
        auto raw_path = [&] {
          // (When streams == cores both are measured all the same: each column has its value.)
          for (auto [conns, into] :
               {std::pair{size_t(k), &row.raw}, std::pair{cores, &row.raw_few}}) {
            std::vector<int64_t> ids;
            for (int i = 0; i < k; ++i) {
              ids.push_back(-(++raw_id));
              raw_sent.emplace_back(ids.back(), int64_t{row.batches} * o.batch);
            }
            into->push_back(RawCopy(db.dsn(), ids, row.batches, o.batch, metrics, conns));
          }
        };
        // Alternate the order so that a drift (the table growing, a checkpoint) hits both.
        if (rep % 2 == 0) {
          server_path();
          raw_path();
        } else {
          raw_path();
          server_path();
        }
        std::printf(
            "fsync %s, %d streams, rep %d: server %.0f rows/s, raw COPY %.0f rows/s (%d "
            "connections), %.0f rows/s (%zu)\n",
            fsync_now.c_str(), k, rep + 1, row.server.back(), row.raw.back(), k, row.raw_few.back(),
            cores);
        std::fflush(stdout);
      }
      fleet.CloseAll(60);
      rows.push_back(row);
    }
  }
  if (o.fsync != "keep") db.ResetDurability();

  std::printf(
      "\n| fsync | streams | batch | batches per stream | server rows/s (median; min–max) "
      "| raw COPY rows/s, as many connections (median; min–max) | raw COPY rows/s, %zu "
      "connections | server / best COPY |\n|---|---|---|---|---|---|---|---|\n",
      cores);
  std::vector<std::string> targets;
  std::vector<double> ratios;
  for (const auto& r : rows) {
    auto span = [](const std::vector<double>& v) {
      return Fmt("%.0f", Median(v)) + " (" + Fmt("%.0f", *std::min_element(v.begin(), v.end())) +
             "–" + Fmt("%.0f", *std::max_element(v.begin(), v.end())) + ")";
    };
    const double ratio = Median(r.server) / std::max(Median(r.raw), Median(r.raw_few));
    std::printf("| %s | %d | %d | %d | %s | %s | %s | %.2f |\n", r.fsync.c_str(), r.streams,
                o.batch, r.batches, span(r.server).c_str(), span(r.raw).c_str(),
                span(r.raw_few).c_str(), ratio);
    ratios.push_back(ratio);
    targets.push_back("fsync " + r.fsync + ", " + std::to_string(r.streams) +
                      " streams: server / the faster raw COPY = " + Fmt("%.2f", ratio) +
                      " (>= 0.6)");
  }
  std::printf("\nTargets:\n");
  for (size_t i = 0; i < rows.size(); ++i) out.Target(ratios[i] >= 0.6, full, targets[i]);

  std::printf("\nChecks:\n");
  std::map<std::pair<int64_t, int64_t>, int64_t> stored, batches_stored;
  for (const auto& r :
       db.Ints("SELECT run_id, attempt, count(*) FROM metric_samples GROUP BY 1, 2"))
    stored[{r[0], r[1]}] = r[2];
  for (const auto& r :
       db.Ints("SELECT run_id, attempt, count(*) FROM metric_batches GROUP BY 1, 2"))
    batches_stored[{r[0], r[1]}] = r[2];
  int64_t total_sent = 0, total_stored = 0;
  int mismatched = 0;
  for (const auto& s : sent) {
    total_sent += s.samples;
    const int64_t got = stored[{s.run_id, s.attempt}];
    total_stored += got;
    if (got != s.samples || batches_stored[{s.run_id, s.attempt}] != s.batches) ++mismatched;
  }
  out.Check(mismatched == 0 && total_sent == total_stored,
            "server path: " + std::to_string(total_stored) + " rows stored of " +
                std::to_string(total_sent) + " sent, in " + std::to_string(sent.size()) +
                " runs; runs with rows or batches lost or doubled: " + std::to_string(mismatched));
  int raw_bad = 0;
  for (const auto& [id, n] : raw_sent) raw_bad += stored[{id, 1}] != n ? 1 : 0;
  out.Check(raw_bad == 0, "raw COPY: every run's rows stored once (" +
                              std::to_string(raw_sent.size()) +
                              " runs; wrong: " + std::to_string(raw_bad) + ")");
  const int64_t not_ok = db.Count("SELECT count(*) FROM runs WHERE state <> 'succeeded'");
  out.Check(not_ok == 0, "every run succeeded (" + std::to_string(not_ok) + " did not)");
}

// --- dispatch
// -------------------------------------------------------------------------------------

void Dispatch(const Options& o, Outcome& out) {
  const bool full = o.agents >= 1000 && o.flow_seconds >= 30 && o.burst_runs >= 1000;
  std::printf("\n## dispatch\n\n%s at the start\n", Load().c_str());
  const int workers = o.agents;
  const int total = o.agents + o.probes;
  BenchDb db(o.db, "tunectl_loadgen_dispatch_" + std::to_string(getpid()), o.keep);
  ServerProcess server(o.server_bin, db.dsn(), o.dir);
  PrintServerLimits(server, total);
  Tuning tuning(server.address());
  // The stream's runs are spread over workloads in small baselines, as a cluster's are: a finished
  // run takes its baseline's completion lock, and its workload's regression-watch lock when it
  // confirms a regression.
  for (int w = 0; w < o.flow_workloads; ++w)
    tuning.ApplyWorkload(WorkloadJson("lg-flow-" + std::to_string(w), {{"pool", "cpu"}}));
  for (int b = 0; b < o.bursts; ++b)
    tuning.ApplyWorkload(WorkloadJson("lg-burst-" + std::to_string(b), {{"pool", "cpu"}}));
  std::vector<AgentSpec> specs;
  for (int i = 0; i < workers; ++i)
    specs.push_back({Prefix() + "w" + std::to_string(i), {{"pool", "cpu"}}, 1, 0});
  for (int p = 0; p < o.probes; ++p) {
    const std::string name = Prefix() + "probe" + std::to_string(p);
    tuning.ApplyWorkload(
        WorkloadJson("lg-pin-" + std::to_string(p), {{"pool", "probe"}, {"node", name}}));
    specs.push_back({name, {{"pool", "probe"}, {"node", name}}, 1, 1});
  }
  Fleet fleet(server.address());
  JobShape burst;
  burst.batches = o.flow_batches;
  burst.samples = o.flow_samples;
  burst.hold_finish = true;  // every run stays on its agent until the whole burst is assigned
  fleet.SetShape(0, burst);
  JobShape probe;
  probe.batches = 1;
  probe.samples = o.flow_samples;
  fleet.SetShape(1, probe);
  const double connect_s = Connect(fleet, specs, 900);
  std::printf("%d agents (%d workers, %d probes) connected in %.1f s\n", total, workers, o.probes,
              connect_s);
  std::fflush(stdout);

  // (c) bursts on idle agents.
  struct BurstResult {
    double create_s, p50_s, all_s;
  };
  std::vector<BurstResult> bursts;
  int burst_bad = 0;
  for (int b = 0; b < o.bursts; ++b) {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // idle: the dispatcher has nothing
    const int64_t before = fleet.Read([](const FleetView& v) { return v.assigns; });
    const Time t_req = Clock::now();
    const int64_t bid = tuning.CreateBaseline("lg-burst-" + std::to_string(b), o.burst_runs);
    const Time t0 = Clock::now();
    if (!fleet.Wait([&](const FleetView& v) { return v.assigns >= before + o.burst_runs; }, 600))
      throw std::runtime_error("burst " + std::to_string(b + 1) + ": not all " +
                               std::to_string(o.burst_runs) + " runs assigned within 600 s");
    std::set<int64_t> ids;
    for (const auto& r : db.Ints("SELECT id FROM runs WHERE baseline_id = " + std::to_string(bid)))
      ids.insert(r[0]);
    std::vector<double> at;
    fleet.Read([&](const FleetView& v) {
      for (const auto& [key, r] : v.runs)
        if (ids.count(key.first)) at.push_back(Seconds(r.assigned - t0));
      return 0;
    });
    bursts.push_back({Seconds(t0 - t_req), Median(at), *std::max_element(at.begin(), at.end())});
    burst_bad += static_cast<int>(ids.size() != at.size() || at.size() != size_t(o.burst_runs));
    std::printf("burst %d: %d runs created in %s, all assigned %.2f s later (median %.2f s)\n",
                b + 1, o.burst_runs, Ms(bursts.back().create_s).c_str(), bursts.back().all_s,
                bursts.back().p50_s);
    std::fflush(stdout);
    fleet.ReleaseFinishes();
    const auto deadline = Clock::now() + std::chrono::seconds(300);
    while (tuning.BaselineState(bid) == "running" && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const int64_t ok = db.Count(
        "SELECT count(*) FROM runs WHERE state = 'succeeded' AND "
        "baseline_id = " +
        std::to_string(bid));
    burst_bad += static_cast<int>(ok != o.burst_runs);
  }

  // (a) finished → next under a steady stream of runs, (b) pinned runs, together.
  JobShape flow;
  flow.batches = o.flow_batches;
  flow.samples = o.flow_samples;
  flow.duration_ms = o.run_ms;
  flow.jitter = 0.5;
  fleet.SetShape(0, flow);
  const Time t_flow = Clock::now();
  const int64_t assigns_at_start = fleet.Read([](const FleetView& v) { return v.assigns; });
  const std::vector<int> start_counts = fleet.Read([](const FleetView& v) { return v.assigns_of; });
  std::atomic<int64_t> probe_assigns{0};
  std::atomic<bool> stop_refill{false};
  std::vector<int64_t> flow_baselines;
  std::mutex flow_mu;
  int64_t created = 0;
  auto refill_once = [&] {
    const int64_t assigned = fleet.Read([](const FleetView& v) { return v.assigns; }) -
                             assigns_at_start - probe_assigns.load();
    const int64_t want = workers + std::max(100, workers / 2);
    while (created - assigned < want) {
      const int64_t bid = tuning.CreateBaseline(
          "lg-flow-" + std::to_string(flow_baselines.size() % size_t(o.flow_workloads)),
          o.flow_repeats);
      std::lock_guard<std::mutex> g(flow_mu);
      flow_baselines.push_back(bid);
      created += o.flow_repeats;
    }
  };
  refill_once();
  std::string refill_error;
  std::thread refill([&] {
    try {
      while (!stop_refill) {
        refill_once();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    } catch (const std::exception& e) {
      refill_error = e.what();
    }
  });
  // Warm-up: every worker has taken its first run of the stream.
  if (!fleet.Wait(
          [&](const FleetView& v) {
            for (int i = 0; i < workers; ++i)
              if (v.assigns_of[size_t(i)] <= start_counts[size_t(i)]) return false;
            return true;
          },
          600))
    throw std::runtime_error("not every worker got a run of the stream within 600 s");
  const Time ws = Clock::now();
  const Time we = ws + std::chrono::seconds(o.flow_seconds);
  const CpuMeter meter(server.pid(), db.Postmaster());
  std::printf("stream of runs: every worker busy after %.1f s; measuring %d s\n",
              Seconds(ws - t_flow), o.flow_seconds);
  std::fflush(stdout);

  std::vector<double> pinned, pinned_req;
  int pinned_lost = 0, pinned_wrong = 0, probe_errors = 0;
  std::mutex pin_mu;
  std::vector<std::thread> probes;
  for (int p = 0; p < o.probes; ++p) {
    probes.emplace_back([&, p] {
      const int agent = workers + p;
      std::mt19937 rng(static_cast<unsigned>(p) * 7919u + 1);
      try {
        while (Clock::now() < we) {
          const int before =
              fleet.Read([&](const FleetView& v) { return v.assigns_of[size_t(agent)]; });
          const Time t_req = Clock::now();
          tuning.CreateBaseline("lg-pin-" + std::to_string(p), 1);
          const Time t_created = Clock::now();
          if (!fleet.Wait([&](const FleetView& v) { return v.assigns_of[size_t(agent)] > before; },
                          120)) {
            std::lock_guard<std::mutex> g(pin_mu);
            ++pinned_lost;
            continue;
          }
          ++probe_assigns;
          std::pair<int64_t, int> key;
          const Time at = fleet.Read([&](const FleetView& v) {
            key = v.last_assign_of[size_t(agent)];
            return v.runs.at(key).assigned;
          });
          {
            std::lock_guard<std::mutex> g(pin_mu);
            pinned.push_back(Seconds(at - t_created));
            pinned_req.push_back(Seconds(at - t_req));
          }
          fleet.Wait([&](const FleetView& v) { return v.runs.at(key).acked; }, 60);
          std::this_thread::sleep_for(
              std::chrono::milliseconds(std::uniform_int_distribution<int>(200, 800)(rng)));
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(pin_mu);
        ++probe_errors;
        std::fprintf(stderr, "probe %d: %s\n", p, e.what());
      }
    });
  }
  for (auto& t : probes) t.join();
  std::this_thread::sleep_until(we);
  const CpuMeter::Use window_cpu = meter.Stop();
  // Every worker whose run finished in the window gets its next run (queued runs remain).
  auto pending = [&](const FleetView& v) {
    int n = 0;
    for (int i = 0; i < workers; ++i)
      if (const auto& f = v.last_finish[size_t(i)]; f && *f >= ws && *f <= we) ++n;
    return n;
  };
  fleet.Wait([&](const FleetView& v) { return pending(v) == 0; }, 120);
  stop_refill = true;
  refill.join();
  const int censored = fleet.Read(pending);
  std::vector<double> gaps, finish_acks;
  int64_t finished_in_window = 0;
  int64_t double_assigns = 0, duplicates = 0;
  std::vector<std::string> errors;
  fleet.Read([&](const FleetView& v) {
    for (const auto& g : v.gaps)
      if (g.agent < workers && g.finished >= ws && g.finished <= we)
        gaps.push_back(Seconds(g.assigned - g.finished));
    for (const auto& [key, r] : v.runs) {
      if (r.agent < workers && r.finished && !r.cancelled && r.finish_sent >= ws &&
          r.finish_sent <= we) {
        ++finished_in_window;
        if (r.acked) finish_acks.push_back(Seconds(r.finish_acked - r.finish_sent));
      }
      const bool probe_agent = r.agent >= workers;
      if (probe_agent
              ? r.workload != "lg-pin-" + std::to_string(r.agent - workers)
              : r.workload.rfind("lg-flow-", 0) != 0 && r.workload.rfind("lg-burst-", 0) != 0)
        ++pinned_wrong;
    }
    double_assigns = v.double_assigns;
    duplicates = v.duplicate_assigns;
    errors = v.errors;
    return 0;
  });
  for (int64_t bid : flow_baselines) tuning.CancelBaseline(bid);
  fleet.Wait(
      [](const FleetView& v) {
        for (const auto& [key, r] : v.runs)
          if (!r.acked && !r.superseded) return false;
        return true;
      },
      60);
  const int cancelled_streams = fleet.CloseAll(60);

  std::printf("\n| measure | n | p50 | p99 | max | target |\n|---|---|---|---|---|---|\n");
  auto row = [](const char* what, const std::vector<double>& v, const char* target) {
    std::printf("| %s | %zu | %s | %s | %s | %s |\n", what, v.size(),
                Ms(Percentile(v, 0.5)).c_str(), Ms(Percentile(v, 0.99)).c_str(),
                Ms(Percentile(v, 1)).c_str(), target);
  };
  row("(a) RunFinished sent → next Assign, busy agents", gaps, "p99 < 100 ms");
  row("(a') RunFinished sent → its Ack (the run's result stored)", finish_acks, "");
  row("(b) pinned run: queued (CreateBaseline returned) → Assign", pinned, "p99 < 50 ms");
  row("(b') pinned run: CreateBaseline sent → Assign", pinned_req, "");
  std::printf(
      "\nIn the window: %.1f runs finished/s (%d workers, runs of %d ms ± 50 %% in baselines "
      "of %d over %d workloads: at most %.0f/s with no gap); CPU: server %.0f %%, PostgreSQL "
      "%.0f %%, loadgen %.0f %% of a core.\n",
      static_cast<double>(finished_in_window) / window_cpu.seconds, workers, o.run_ms,
      o.flow_repeats, o.flow_workloads, o.run_ms > 0 ? workers * 1000.0 / o.run_ms : 0.0,
      window_cpu.server, window_cpu.postgres, window_cpu.self);
  std::vector<double> all_s, p50_s, create_s;
  for (const auto& b : bursts) {
    all_s.push_back(b.all_s);
    p50_s.push_back(b.p50_s);
    create_s.push_back(b.create_s);
  }
  std::printf("\n| burst of %d runs on %d idle agents | median of %zu | each |\n|---|---|---|\n",
              o.burst_runs, workers, bursts.size());
  auto each = [](const std::vector<double>& v, double scale, const char* f) {
    std::string s;
    for (double x : v) s += (s.empty() ? "" : ", ") + Fmt(f, x * scale);
    return s;
  };
  std::printf("| CreateBaseline (1 transaction) | %s | %s |\n", Ms(Median(create_s)).c_str(),
              each(create_s, 1000, "%.0f ms").c_str());
  std::printf("| half of the runs assigned | %.2f s | %s |\n", Median(p50_s),
              each(p50_s, 1, "%.2f s").c_str());
  std::printf("| all runs assigned (target < 2 s) | %.2f s | %s |\n", Median(all_s),
              each(all_s, 1, "%.2f s").c_str());

  std::printf("\nTargets:\n");
  const double gap99 = Percentile(gaps, 0.99), pin99 = Percentile(pinned, 0.99);
  out.Target(!gaps.empty() && gap99 < 0.1 && censored == 0, full,
             "finished → next run p99 " + Ms(gap99) + " < 100 ms");
  out.Target(!pinned.empty() && pin99 < 0.05, full,
             "pinned run queued → assigned p99 " + Ms(pin99) + " < 50 ms");
  out.Target(!all_s.empty() && Median(all_s) < 2, full,
             "burst of " + std::to_string(o.burst_runs) + " runs all assigned in " +
                 Fmt("%.2f s", Median(all_s)) + " < 2 s");
  std::printf("\nChecks:\n");
  out.Check(burst_bad == 0, "every burst run assigned once and succeeded (" +
                                std::to_string(o.bursts) + " bursts)");
  out.Check(censored == 0, "every worker whose run finished in the window got its next run (" +
                               std::to_string(censored) + " still waiting after 120 s)");
  out.Check(pinned_lost == 0 && probe_errors == 0 && !pinned.empty(),
            std::to_string(pinned.size()) + " pinned runs assigned; not assigned within 120 s: " +
                std::to_string(pinned_lost) + "; probe errors: " + std::to_string(probe_errors));
  out.Check(pinned_wrong == 0, "every run went to an agent its selector matches (wrong: " +
                                   std::to_string(pinned_wrong) + ")");
  out.Check(double_assigns == 0,
            "no (run, attempt) assigned twice (" + std::to_string(double_assigns) +
                "; repeated to its holder: " + std::to_string(duplicates) + ")");
  out.Check(errors.empty(), "no stream ended while open (" + std::to_string(errors.size()) +
                                (errors.empty() ? "" : "; first: " + errors.front()) + ")");
  out.Check(refill_error.empty(), "the stream of runs was kept queued" +
                                      (refill_error.empty() ? "" : ": " + refill_error));
  if (cancelled_streams > 0)
    std::printf("(%d streams did not end after WritesDone within 60 s and were cancelled)\n",
                cancelled_streams);
}

// --- scale
// ----------------------------------------------------------------------------------------

void Scale(const Options& o, Outcome& out) {
  const bool full = o.scale_agents >= 2000 && o.scale_seconds >= 60;
  std::printf("\n## scale\n\n%s at the start\n", Load().c_str());
  BenchDb db(o.db, "tunectl_loadgen_scale_" + std::to_string(getpid()), o.keep);
  ServerProcess server(o.server_bin, db.dsn(), o.dir);
  PrintServerLimits(server, o.scale_agents);
  Fleet fleet(server.address());
  std::vector<AgentSpec> specs;
  for (int i = 0; i < o.scale_agents; ++i)
    specs.push_back({Prefix() + "idle" + std::to_string(i), {{"pool", "cpu"}}, 1, 0});
  const double connect_s = Connect(fleet, specs, 900);
  std::printf("%d idle agents connected in %.1f s; settling %d s, then measuring %d s\n",
              o.scale_agents, connect_s, o.settle_seconds, o.scale_seconds);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(o.settle_seconds));

  const CpuMeter meter(server.pid(), db.Postmaster());
  const int64_t hb0 = fleet.Read([](const FleetView& v) { return v.heartbeats; });
  int64_t rss_max = 0;
  for (;;) {
    rss_max = std::max(rss_max, RssKb(server.pid()));
    if (meter.Stop().seconds >= o.scale_seconds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const CpuMeter::Use cpu = meter.Stop();
  const double secs = cpu.seconds;
  const int64_t hb1 = fleet.Read([](const FleetView& v) { return v.heartbeats; });
  const int64_t rss_end = RssKb(server.pid());
  rss_max = std::max(rss_max, rss_end);
  const double srv_pct = cpu.server, pg_pct = cpu.postgres, self_pct = cpu.self;
  const int threads = Threads(server.pid()), fds = OpenFds(server.pid());
  const int64_t connected = db.Count("SELECT count(*) FROM agents WHERE connected");
  const int64_t stale = db.Count(
      "SELECT count(*) FROM agents WHERE connected AND last_seen < now() - interval '10 seconds'");
  const std::vector<std::string> errors = fleet.Read([](const FleetView& v) { return v.errors; });
  fleet.CloseAll(120);

  std::printf(
      "\n| idle sessions | window | server CPU (%% of a core) | PostgreSQL CPU (%% of a "
      "core, %zu processes) | server RSS end (max) | server threads | server fds | "
      "heartbeats/s | loadgen CPU |\n|---|---|---|---|---|---|---|---|---|\n",
      cpu.postgres_processes);
  std::printf(
      "| %d | %.0f s | %.1f %% | %.1f %% | %.0f MB (%.0f MB) | %d | %d | %.0f | %.1f %% |\n",
      o.scale_agents, secs, srv_pct, pg_pct, rss_end / 1024.0, rss_max / 1024.0, threads, fds,
      static_cast<double>(hb1 - hb0) / secs, self_pct);
  std::printf("\nTargets:\n");
  out.Target(srv_pct < 10, full, "server CPU " + Fmt("%.1f", srv_pct) + " % < 10 % of a core");
  out.Target(pg_pct < 10, full, "PostgreSQL CPU " + Fmt("%.1f", pg_pct) + " % < 10 % of a core");
  out.Target(rss_max < 300 * 1024, full,
             "server RSS " + Fmt("%.0f", rss_max / 1024.0) + " MB < 300 MB");
  std::printf("\nChecks:\n");
  out.Check(connected == o.scale_agents, std::to_string(connected) + " of " +
                                             std::to_string(o.scale_agents) +
                                             " agents connected in the database");
  out.Check(stale == 0, "every connected agent's heartbeat recorded within 10 s (" +
                            std::to_string(stale) + " older)");
  out.Check(errors.empty(), "no stream ended while open (" + std::to_string(errors.size()) +
                                (errors.empty() ? "" : "; first: " + errors.front()) + ")");
}

}  // namespace
}  // namespace tunectl::loadgen

int main(int argc, char** argv) {
  using namespace tunectl::loadgen;  // NOLINT(google-build-using-namespace)
  Options o;
  bool smoke = false;
  CLI::App app{"tunectl-loadgen: simulated agents against a real tunectl-server"};
  app.add_option("--db", o.db,
                 "admin DSN (key=value, a superuser) of a PostgreSQL on this machine; each mode "
                 "makes a fresh database in it (default $TUNECTL_BENCH_DSN or $TUNECTL_TEST_DSN)");
  app.add_option("--server-bin", o.server_bin, "tunectl-server (default: beside this binary)");
  app.add_option("--dir", o.dir, "folder for the server's logs (default: a new temp folder)");
  app.add_option("--mode", o.modes, "ingest, dispatch, scale (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"ingest", "dispatch", "scale"}))
      ->capture_default_str();
  app.add_flag("--keep", o.keep, "keep the databases and the log folder");
  app.add_flag("--smoke", smoke, "small sizes for a correctness run (flags given still apply)");
  app.add_option("--streams", o.streams, "ingest: streams per measurement")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--batch", o.batch, "ingest: samples per batch")->capture_default_str();
  app.add_option("--rows", o.rows, "ingest: rows per repetition (all streams)")
      ->capture_default_str();
  app.add_option("--reps", o.reps, "ingest: repetitions (median)")->capture_default_str();
  app.add_option("--window", o.window, "ingest: unacked batches per stream")->capture_default_str();
  app.add_option("--fsync", o.fsync, "ingest: on, off, both, or keep the database's setting")
      ->check(CLI::IsMember({"on", "off", "both", "keep"}))
      ->capture_default_str();
  app.add_option("--agents", o.agents, "dispatch: connected agents (1 slot; besides the probes)")
      ->capture_default_str();
  app.add_option("--probes", o.probes, "dispatch: more agents, each the only match of its runs")
      ->capture_default_str();
  app.add_option("--bursts", o.bursts, "dispatch: bursts (median)")->capture_default_str();
  app.add_option("--burst-runs", o.burst_runs, "dispatch: runs per burst (<= 1000)")
      ->capture_default_str();
  app.add_option("--flow-seconds", o.flow_seconds, "dispatch: measuring window of (a) and (b)")
      ->capture_default_str();
  app.add_option("--run-ms", o.run_ms, "dispatch: a stream run's duration (±50 %)")
      ->capture_default_str();
  app.add_option("--flow-batches", o.flow_batches, "dispatch: batches per run")
      ->capture_default_str();
  app.add_option("--flow-samples", o.flow_samples, "dispatch: samples per batch")
      ->capture_default_str();
  app.add_option("--flow-workloads", o.flow_workloads,
                 "dispatch: workloads the stream's runs are spread over")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--flow-repeats", o.flow_repeats,
                 "dispatch: runs per baseline of the stream (1..1000)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--scale-agents", o.scale_agents, "scale: idle sessions")->capture_default_str();
  app.add_option("--scale-seconds", o.scale_seconds, "scale: measuring window")
      ->capture_default_str();
  app.add_option("--settle", o.settle_seconds, "scale: seconds after connecting before measuring")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto unset = [&](const char* flag) { return app.count(flag) == 0; };
  if (smoke) {
    if (unset("--streams")) o.streams = {2, 3};
    if (unset("--batch")) o.batch = 50;
    if (unset("--rows")) o.rows = 600;
    if (unset("--reps")) o.reps = 2;
    if (unset("--fsync")) o.fsync = "keep";
    if (unset("--agents")) o.agents = 20;
    if (unset("--probes")) o.probes = 2;
    if (unset("--bursts")) o.bursts = 1;
    if (unset("--burst-runs")) o.burst_runs = 20;
    if (unset("--flow-seconds")) o.flow_seconds = 4;
    if (unset("--run-ms")) o.run_ms = 300;
    if (unset("--flow-workloads")) o.flow_workloads = 3;
    if (unset("--flow-repeats")) o.flow_repeats = 5;
    if (unset("--scale-agents")) o.scale_agents = 20;
    if (unset("--scale-seconds")) o.scale_seconds = 3;
    if (unset("--settle")) o.settle_seconds = 1;
  }
  o.db = tunectl::loadgen::BenchAdminDsn(o.db);
  if (o.db.empty()) return tunectl::loadgen::NoBenchDb("tunectl-loadgen", false);
  if (o.server_bin.empty())
    o.server_bin = (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() /
                    "tunectl-server")
                       .string();
  if (o.burst_runs < 1 || o.burst_runs > 1000 || o.burst_runs > o.agents || o.probes < 0) {
    std::fprintf(stderr, "error: --burst-runs: 1..1000 and at most --agents\n");
    return 2;
  }
  bool own_dir = false;
  if (o.dir.empty()) {
    char tmpl[] = "/tmp/tunectl-loadgen.XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::perror("mkdtemp");
      return 1;
    }
    o.dir = tmpl;
    own_dir = true;
  }
  const int most = std::max({o.agents + o.probes, o.scale_agents, 64});
  const int64_t nofile = RaiseNofile(2 * int64_t{most} + 1024);
  std::printf("# tunectl-loadgen %s\n\nserver %s; open-files limit %lld; logs in %s\n",
              Now().c_str(), o.server_bin.c_str(), static_cast<long long>(nofile), o.dir.c_str());
  std::fflush(stdout);
  Outcome out;
  try {
    for (const auto& m : o.modes) {
      if (m == "ingest") Ingest(o, out);
      if (m == "dispatch") Dispatch(o, out);
      if (m == "scale") Scale(o, out);
      std::printf("\n%s at the end\n", Load().c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s (server logs in %s)\n", e.what(), o.dir.c_str());
    return 1;
  }
  if (own_dir && !o.keep && !out.failed)
    std::filesystem::remove_all(o.dir);
  else
    std::printf("\nserver logs kept in %s\n", o.dir.c_str());
  return out.failed ? 1 : 0;
}

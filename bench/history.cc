// bench_history: history at cluster scale. On a fresh database of the PostgreSQL that --db reaches,
// makes a long history in SQL (generate_series, seconds): --experiments decided experiments (4
// runs each, on the workload's previous config; some in batches of 4), a periodic check of
// --series runs on the current config (the regression watch's series), one earlier baseline making
// up --runs runs in all, --samples metric samples and --log tuning-log entries. Then, against the
// real tunectl-server, times the real CLI (`log`, `log --since 30d --param num_workers`,
// `experiment list`, `batch list`, `regress show`), and through the store, finishing one run of
// the current config (claim, start, samples, then FinishRun, which runs the regression watch).
//
//   build/bench/bench_history --db 'host=127.0.0.1 port=5432 user=postgres'
//       --server-bin build/tunectl-server --cli-bin build/tunectl   (one line)
//
// Medians of --reps. Prints Markdown; exit 1 when a check fails (a command fails, a page is not
// what it should be), or a target fails at full size (the defaults); 2 on bad flags.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <vector>

#include "bench/loadgen/harness.h"
#include "core/spec.h"
#include "server/store/migrations.h"
#include "server/store/pool.h"
#include "server/store/store.h"

namespace tunectl {
namespace {

struct Options {
  std::string db, server_bin, cli_bin, dir;
  int experiments = 5000;
  int series = 24000;
  int runs = 50000;
  int64_t samples = 1000000;
  int log = 100000;
  int batches = 250;
  int reps = 3;
  bool keep = false;
  bool smoke = false;
};

const char* const kSpec = R"(
name: hist
description: bench_history
command: [train, "--workers={num_workers}", "--prefetch={prefetch}"]
params:
  num_workers: {type: int, default: 4, min: 0, max: 64}
  prefetch:    {type: int, default: 2, min: 1, max: 16}
metrics:
  samples_per_s: {pattern: 'samples/s: ([0-9.]+)', better: higher, role: primary, min_effect: 0.03}
  step_time_ms:  {pattern: 'step_time_ms: ([0-9.]+)', better: lower}
run: {repeats: 3, warmup_steps: 0}
)";

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Runs `argv` with stdout to `out_path` and stderr to `err_path`; returns its exit status.
int Spawn(const std::vector<std::string>& args, const std::string& out_path,
          const std::string& err_path) {
  std::vector<std::string> a = args;
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, a[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return 127;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The history, in SQL. The experiments, their runs and the earlier baseline are on config v1; the
// check's runs (the series the watch reads) on v2, the current config.
void MakeHistory(pqxx::connection& c, const Options& o) {
  pqxx::work w(c);
  const std::string E = std::to_string(o.experiments), S = std::to_string(o.series),
                    B = std::to_string(std::max(1, o.runs - o.series - 4 * o.experiments)),
                    N = std::to_string(o.batches), L = std::to_string(o.log),
                    per_run = std::to_string(std::max<int64_t>(1, o.samples / o.runs));
  // Config v2, current, as a freeze would leave it.
  w.exec0(
      "UPDATE config_versions SET is_current = false WHERE workload_id = (SELECT id FROM "
      "workloads WHERE name = 'hist')");
  w.exec0(
      "INSERT INTO config_versions(workload_id, version, params, parent_id, change, is_current) "
      "SELECT workload_id, 2, jsonb_set(params, '{num_workers}', '\"8\"'), id, "
      "'{\"num_workers\": \"8\"}', true FROM config_versions WHERE version = 1");
  const std::string wl = "(SELECT id FROM workloads WHERE name = 'hist')";
  const std::string v1 = "(SELECT id FROM config_versions WHERE version = 1)";
  const std::string v2 = "(SELECT id FROM config_versions WHERE version = 2)";
  const std::string rev = "(SELECT spec_revision FROM workloads WHERE name = 'hist')";
  // The baseline the experiments compare against, 61 days ago, and the periodic check.
  w.exec0(
      "INSERT INTO baselines(workload_id, config_id, repeats, state, actor, created_at, "
      "finished_at, purpose, spec_revision) VALUES (" +
      wl + ", " + v1 + ", " + B +
      ", 'completed', 'user:bench', now() - interval '61 days', now() - interval '61 days', "
      "'baseline', " +
      rev + "), (" + wl + ", " + v2 + ", " + S +
      ", 'completed', 'watch', now() - interval '60 days', now(), 'check', " + rev + ")");
  const std::string b0 = "(SELECT min(id) FROM baselines)", b1 = "(SELECT max(id) FROM baselines)";
  // Batches of 4 experiments (the first 4 × --batches experiments), over the 60 days.
  w.exec0("INSERT INTO batches(workload_id, baseline_id, state, actor, created_at) SELECT " + wl +
          ", " + b0 + ", 'done', 'user:bench', now() - (" + N +
          " - g + 1) * interval '60 days' / " + N + " FROM generate_series(1, " + N + ") g");
  // Experiments, one every 60 days / E, decided: every third changes num_workers.
  w.exec0(
      "INSERT INTO experiments(workload_id, baseline_id, control_config_id, change, "
      "variant_params, repeats, state, decision, actor, created_at, decided_at, spec_revision, "
      "batch_id) SELECT " +
      wl + ", " + b0 + ", " + v1 +
      ", json_build_object('from', json_build_object(p, '4'), 'to', json_build_object(p, "
      "(g % 7 + 5)::text)), jsonb_build_object('num_workers', '4', 'prefetch', '2') || "
      "jsonb_build_object(p, (g % 7 + 5)::text), 2, 'decided', (ARRAY['improved', 'unchanged', "
      "'regressed', 'inconclusive'])[g % 4 + 1], 'user:bench', t, t + interval '20 minutes', " +
      rev + ", CASE WHEN g <= 4 * " + N + " THEN (SELECT min(id) FROM batches) + (g - 1) / 4 END " +
      "FROM generate_series(1, " + E +
      ") g, LATERAL (SELECT CASE WHEN g % 3 = 0 THEN "
      "'num_workers' ELSE 'prefetch' END AS p, now() - (" +
      E + " - g + 1) * interval '60 days' / " + E + " AS t) x");
  // Runs: the baseline's, 4 per experiment (control, variant, variant, control), the check's.
  const std::string run_cols =
      "INSERT INTO runs(workload_id, baseline_id, experiment_id, arm, config_id, idx, params, "
      "launch, state, created_at, started_at, finished_at) ";
  w.exec0(run_cols + "SELECT " + wl + ", " + b0 + ", NULL, NULL, " + v1 +
          ", g, '{}', '{}', 'succeeded', now() - interval '61 days', now() - interval '61 days', "
          "now() - interval '61 days' + g * interval '1 second' FROM generate_series(1, " +
          B + ") g");
  w.exec0(run_cols +
          "SELECT e.workload_id, NULL, e.id, CASE WHEN k IN (1, 4) THEN 'control' "
          "ELSE 'variant' END, e.control_config_id, k, e.variant_params, '{}', "
          "'succeeded', e.created_at, e.created_at + k * interval '4 minutes', "
          "e.created_at + (k + 1) * interval '4 minutes' FROM experiments e, "
          "generate_series(1, 4) k ORDER BY e.id, k");
  w.exec0(run_cols + "SELECT " + wl + ", " + b1 + ", NULL, NULL, " + v2 +
          ", g, '{}', '{}', 'succeeded', now() - (" + S + " - g + 2) * interval '60 days' / " + S +
          ", now() - (" + S + " - g + 2) * interval '60 days' / " + S + ", now() - (" + S +
          " - g + 1) * interval '60 days' / " + S + " FROM generate_series(1, " + S + ") g");
  // Summaries (what the watch and the verdicts read) and the samples behind them.
  w.exec0(
      "INSERT INTO run_summaries(run_id, metric, samples, steady, median, min, max, usable) "
      "SELECT r.id, m.metric, " +
      per_run + ", " + per_run +
      ", m.level * (1 + 0.01 * sin(2.3 * r.id)), m.level * 0.97, m.level * 1.03, true FROM runs "
      "r, (VALUES ('samples_per_s', 1000.0), ('step_time_ms', 50.0)) m(metric, level)");
  w.exec0(
      "INSERT INTO metric_samples(run_id, attempt, metric, step, value, line_no) SELECT r.id, "
      "1, 'samples_per_s', s, 1000 * (1 + 0.02 * sin(r.id + s)), s FROM runs r, "
      "generate_series(1, " +
      per_run + ") s");
  // The tuning log: each experiment's decision, and regression entries between them (entries of
  // the watch, as a busy cluster writes them) up to --log entries, in time order.
  w.exec0(
      "INSERT INTO tuning_log(at, workload_id, experiment_id, kind, actor, entry) SELECT at, " +
      wl +
      ", experiment_id, kind, actor, entry FROM ((SELECT e.decided_at AS at, e.id AS "
      "experiment_id, 'decided' AS kind, 'user:bench' AS actor, json_build_object('change', "
      "(SELECT string_agg(key || ' 4 -> ' || value, ', ') FROM json_each_text(e.change -> 'to')), "
      "'to', e.change -> 'to', 'params', e.variant_params::text, 'decision', e.decision, "
      "'primary', json_build_object('metric', 'samples_per_s', 'ratio', 1.01, 'ci_low', 0.99, "
      "'ci_high', 1.03, 'p_value', 0.2)) AS entry FROM experiments e) UNION ALL (SELECT now() - "
      "(" +
      L + " - g + 1) * interval '60 days' / " + L +
      ", NULL, 'regression', 'watch', json_build_object('message', 'v1: samples_per_s -4 % "
      "from run ' || g) FROM generate_series(1, greatest(0, " +
      L + " - " + E + ")) g)) x ORDER BY at");
  w.commit();
  pqxx::nontransaction n(c);
  n.exec0("ANALYZE");
}

struct Timing {
  std::string label, command;
  bool more = true;  // the list has more than a page: its table ends with the next-page hint
  double target_ms = 300;
  double median_ms = 0;
  bool ok = true;
  std::string why;
};

}  // namespace
}  // namespace tunectl

int main(int argc, char** argv) {
  using namespace tunectl;  // NOLINT
  Options o;
  CLI::App app{"bench_history: history at cluster scale (docs/benchmarks.md)"};
  app.add_option("--db", o.db,
                 "admin DSN of a PostgreSQL (key=value); a fresh database is made in it "
                 "(default $TUNECTL_BENCH_DSN or $TUNECTL_TEST_DSN)");
  app.add_option("--server-bin", o.server_bin, "tunectl-server to start")->required();
  app.add_option("--cli-bin", o.cli_bin, "the tunectl CLI to time")->required();
  app.add_option("--experiments", o.experiments, "decided experiments (4 runs each)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--series", o.series, "runs of the current config (the watch's series)")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--runs", o.runs, "runs in all (the rest are an earlier baseline's)")
      ->check(CLI::Range(2, 100000000));
  app.add_option("--samples", o.samples, "metric samples in all")->check(CLI::Range(1, 1 << 30));
  app.add_option("--log", o.log, "tuning log entries in all")->check(CLI::Range(1, 100000000));
  app.add_option("--batches", o.batches, "batches of 4 experiments")->check(CLI::Range(1, 1000000));
  app.add_option("--reps", o.reps, "repetitions per timing (median)")->check(CLI::Range(1, 100));
  app.add_option("--dir", o.dir, "scratch folder (default a fresh one in /tmp)");
  app.add_flag("--keep", o.keep, "keep the database and the scratch folder");
  app.add_flag("--smoke", o.smoke, "small sizes, no targets: what ctest runs");
  CLI11_PARSE(app, argc, argv);
  if (o.smoke) {
    o.experiments = 300, o.series = 300, o.runs = 1600, o.samples = 16000, o.log = 2000;
    o.batches = 60;
  }
  o.db = loadgen::BenchAdminDsn(o.db);
  if (o.db.empty()) return loadgen::NoBenchDb("bench_history", o.smoke);
  if (o.batches * 4 > o.experiments || o.series + 4 * o.experiments >= o.runs) {
    std::fprintf(stderr,
                 "error: --runs %d must exceed --series + 4 × --experiments (%d), and --batches "
                 "× 4 (%d) be at most --experiments (%d)\n",
                 o.runs, o.series + 4 * o.experiments, o.batches * 4, o.experiments);
    return 2;
  }
  if (o.dir.empty()) {
    char tmpl[] = "/tmp/bench-history-XXXXXX";
    if (!mkdtemp(tmpl)) return 2;
    o.dir = tmpl;
  }
  const bool full = !o.smoke && o.experiments >= 5000 && o.runs >= 50000 && o.series >= 24000 &&
                    o.samples >= 1000000 && o.reps >= 3;
  int failed = 0;
  try {
    loadgen::BenchDb db(o.db, "tunectl_bench_history_" + std::to_string(getpid()), o.keep);
    auto pool = ConnectionPool::Open(db.dsn(), 4);
    if (!pool.ok()) throw std::runtime_error(pool.status().message());
    if (auto st = ApplyMigrations(**pool, EmbeddedMigrations()); !st.ok())
      throw std::runtime_error(st.status().message());
    Store store(pool->get());
    auto spec = ParseWorkloadSpec(kSpec);
    if (!spec.ok()) throw std::runtime_error(spec.status().message());
    if (auto st = store.ApplyWorkload(*spec, kSpec, "user:bench"); !st.ok())
      throw std::runtime_error(st.status().message());

    const auto t0 = std::chrono::steady_clock::now();
    {
      pqxx::connection c(db.dsn());
      MakeHistory(c, o);
    }
    const double made_s = Ms(std::chrono::steady_clock::now() - t0) / 1000;
    std::printf("# bench_history\n\n");
    std::printf(
        "History made in SQL in %.1f s: %lld experiments, %lld runs (%lld of the current "
        "config: the watch's series), %lld metric samples, %lld tuning log entries, %lld "
        "batches.\n\n",
        made_s, static_cast<long long>(db.Count("SELECT count(*) FROM experiments")),
        static_cast<long long>(db.Count("SELECT count(*) FROM runs")),
        static_cast<long long>(
            db.Count("SELECT count(*) FROM runs r JOIN config_versions c ON c.id = r.config_id AND "
                     "c.is_current")),
        static_cast<long long>(db.Count("SELECT count(*) FROM metric_samples")),
        static_cast<long long>(db.Count("SELECT count(*) FROM tuning_log")),
        static_cast<long long>(db.Count("SELECT count(*) FROM batches")));

    // The CLI against the real server: wall time of the whole command (process start included).
    std::vector<Timing> timings = {
        {"log", "log"},
        {"log, one param, last 30 days", "log --since 30d --param num_workers", false},
        {"log, one param, JSON", "log --param num_workers -o json"},
        {"experiment list", "experiment list"},
        {"batch list", "batch list"},
        {"regress show", "regress show hist", false},
        {"run list", "run list"},
    };
    {
      loadgen::ServerProcess server(o.server_bin, db.dsn(), o.dir);
      // The server wrote its admin context there (--admin-config); the CLI reads it.
      setenv("TUNECTL_CONFIG", server.config_path().c_str(), 1);
      const std::string out = o.dir + "/out", err = o.dir + "/err";
      for (auto& t : timings) {
        std::vector<std::string> args = {o.cli_bin, "--server", server.address()};
        std::istringstream words(t.command);
        for (std::string word; words >> word;) args.push_back(word);
        std::vector<double> ms;
        for (int r = 0; r < o.reps && t.ok; ++r) {
          const auto s = std::chrono::steady_clock::now();
          const int rc = Spawn(args, out, err);
          ms.push_back(Ms(std::chrono::steady_clock::now() - s));
          if (rc != 0) {
            t.ok = false;
            t.why = "exit " + std::to_string(rc) + ": " + ReadFile(err).substr(0, 400);
          }
        }
        t.median_ms = MedianOf(ms);
        // What came back is one full page (the newest 50) with the way to the next one.
        if (t.ok && t.command.find("-o json") != std::string::npos) {
          auto j = nlohmann::json::parse(ReadFile(out), nullptr, false);
          if (!j.is_object() || !j.contains("items") || j["items"].size() != 50 ||
              !j["next_page_token"].is_string()) {
            t.ok = false;
            t.why = "not a full page with a next_page_token";
          }
        } else if (t.ok && t.more && ReadFile(err).find("--page-token") == std::string::npos) {
          t.ok = false;
          t.why = "no next-page hint under the table";
        }
      }
    }

    // Finishing runs of the current config at --series runs of history: the store's FinishRun
    // (summaries, the baseline's completion, the regression watch over the newest points).
    std::vector<double> finish_ms;
    std::string finish_why;
    {
      auto agent = store.RegisterAgent("bench", {}, 100, "bench", "s1");
      if (!agent.ok()) throw std::runtime_error(agent.status().message());
      auto b = store.CreateBaseline("hist", o.reps, "user:bench");
      if (!b.ok()) throw std::runtime_error(b.status().message());
      auto plans = store.ClaimRuns(*agent, {}, 100);
      if (!plans.ok()) throw std::runtime_error(plans.status().message());
      for (const auto& p : *plans) {
        if (auto st = store.MarkRunStarted(p.run_id, p.attempt, *agent); !st.ok())
          throw std::runtime_error(st.message());
        std::vector<SampleIn> samples;
        for (int s = 1; s <= 20; ++s) samples.push_back({"samples_per_s", s, 1000.0 + (s % 5), s});
        if (auto st = store.StoreMetricBatch(p.run_id, p.attempt, 1, samples); !st.ok())
          throw std::runtime_error(st.status().message());
        const auto s = std::chrono::steady_clock::now();
        if (auto st = store.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 20}, "agent:bench");
            !st.ok())
          throw std::runtime_error(st.message());
        finish_ms.push_back(Ms(std::chrono::steady_clock::now() - s));
      }
      auto series = store.GetRegressionSeries("hist", 5);
      if (!series.ok()) throw std::runtime_error(series.status().message());
      if (series->points.empty() || series->points.back().run_id != plans->back().run_id ||
          !series->more_points)
        finish_why = "the finished run is not the newest point of the series";
    }

    std::printf("| what | command | median ms (of %d) | target | |\n|---|---|---|---|---|\n",
                o.reps);
    for (const auto& t : timings) {
      const bool met = t.ok && t.median_ms < t.target_ms;
      std::printf("| %s | `tunectl %s` | %.1f | < %.0f ms | %s |\n", t.label.c_str(),
                  t.command.c_str(), t.median_ms, t.target_ms,
                  !t.ok  ? "FAIL (check)"
                  : met  ? "PASS"
                  : full ? "FAIL"
                         : "(not at full size)");
      if (!t.ok) {
        std::fprintf(stderr, "check failed: tunectl %s: %s\n", t.command.c_str(), t.why.c_str());
        ++failed;
      } else if (full && !met) {
        ++failed;
      }
    }
    const double finish = MedianOf(finish_ms);
    const bool met = finish < 50;
    std::printf(
        "| finishing a run at %d runs of its series | Store::FinishRun | %.1f | < 50 ms | "
        "%s |\n",
        o.series, finish,
        met    ? "PASS"
        : full ? "FAIL"
               : "(not at full size)");
    if (full && !met) ++failed;
    if (!finish_why.empty()) {
      std::fprintf(stderr, "check failed: %s\n", finish_why.c_str());
      ++failed;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_history: %s\n", e.what());
    return 1;
  }
  if (!o.keep) std::filesystem::remove_all(o.dir);
  return failed ? 1 : 0;
}

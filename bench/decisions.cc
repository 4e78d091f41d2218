// bench_decisions: how often each validation design reaches the right decision, and at what cost
// in runs, on simulated but realistic run series. tunectl's engine (steady-state detection per
// run, interleaved ABBA pairs, sequential boundary, minimum effect, guardrails) against the naive
// design (10 baseline runs first, then 10 variant runs, whole-run means, Welch, "no change" when
// p >= 0.05), on the same scenarios, in one run.
//
//   build/bench/bench_decisions [--experiments N] [--seed S] [--margin M]
//
// Prints a Markdown table per design and the targets of docs/benchmarks.md with PASS/FAIL.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/changepoint.h"
#include "core/experiment.h"
#include "core/sequential.h"
#include "core/statistics.h"

namespace tunectl {
namespace {

constexpr double kDelta = 0.03;      // the primary metric's min_effect
constexpr double kTolerance = 0.01;  // the guardrail's tolerance
constexpr int kSteps = 150;          // steps per run
constexpr int kDeclaredWarmup = 5;   // what the workload declares (the real warm-up is longer)

enum class Drift { kNone, kLinear, kStep };
const char* DriftName(Drift d) {
  return d == Drift::kNone ? "none" : d == Drift::kLinear ? "linear" : "step";
}

struct Scenario {
  Drift drift;
  double effect;     // true relative effect on the primary (higher is better)
  bool guard_break;  // the variant worsens the guardrail by 3x its tolerance
  std::string label;
};

// One run's per-step series of the primary (throughput) and the guardrail (loss).
struct RunSeries {
  std::vector<StepValue> tput, loss;
};

RunSeries SimulateRun(SimRng& rng, double level, double loss_level) {
  RunSeries r;
  const int warm = 5 + static_cast<int>(rng.Uniform() * 36);  // 5..40 steps
  const bool slow_node = rng.Uniform() < 0.10;
  const bool unsettled = rng.Uniform() < 0.05;
  double run_level = level * std::exp(0.01 * rng.Normal()) * (slow_node ? 0.85 : 1.0);
  const double phi = 0.6, sd = 0.03 * std::sqrt(1 - phi * phi);
  double u = 0.03 * rng.Normal();
  for (int t = 1; t <= kSteps; ++t) {
    u = phi * u + sd * rng.Normal();
    double v = run_level * std::exp(u);
    if (t <= warm) v *= 0.5 + 0.5 * t / warm;
    if (unsettled) v *= 1.0 - 0.15 * t / kSteps;
    if (rng.Uniform() < 0.02) v *= 0.2 + 0.4 * rng.Uniform();  // a stall: heavy-tailed spike
    r.tput.push_back({t, v});
    r.loss.push_back({t, loss_level * std::exp(0.005 * rng.Normal())});
  }
  return r;
}

double DriftAt(Drift d, int run_index) {
  switch (d) {
    case Drift::kNone: return 1;
    case Drift::kLinear: return 1 - 0.004 * run_index;
    case Drift::kStep: return run_index >= 10 ? 0.96 : 1;
  }
  return 1;
}

WorkloadSpec Spec() {
  WorkloadSpec s;
  s.name = "bench";
  MetricSpec p;
  p.name = "tput";
  p.pattern = "(x)";
  p.role = MetricRole::kPrimary;
  p.min_effect = kDelta;
  MetricSpec g;
  g.name = "loss";
  g.json_key = "loss";
  g.better = Better::kLower;
  g.role = MetricRole::kGuardrail;
  g.tolerance = kTolerance;
  s.metrics = {p, g};
  return s;
}

struct Outcome {
  std::string decision;
  int runs = 0;
};

double g_margin = 0.5;  // --margin: VerdictOptions::margin

Outcome Engine(const Scenario& sc, SimRng& rng, const WorkloadSpec& spec) {
  VerdictOptions vo;
  vo.margin = g_margin;
  vo.cross_checks = false;   // reported only; they never change a decision
  SequentialOptions design;  // 4..10 pairs
  ArmData arm[2];
  int run_index = 0;
  for (int k = 1; k <= design.max_pairs; ++k) {
    const bool control_first = (k - 1) % 2 == 0;
    for (int j = 0; j < 2; ++j) {
      const int a = (j == 0) == control_first ? 0 : 1;
      const double level = 1000 * (a ? 1 + sc.effect : 1) * DriftAt(sc.drift, run_index++);
      const double loss = 2.0 * (a && sc.guard_break ? 1 + 3 * kTolerance : 1);
      RunSeries r = SimulateRun(rng, level, loss);
      SteadyState t = AnalyzeRun(r.tput, kDeclaredWarmup, Better::kHigher);
      SteadyState l = AnalyzeRun(r.loss, kDeclaredWarmup, Better::kLower);
      ++arm[a].runs;
      if (!t.usable()) {
        arm[a].excluded.push_back("unsettled");
        continue;
      }
      arm[a].values["tput"].push_back(t.stats.median);
      arm[a].values["loss"].push_back(l.stats.median);
      arm[a].pairs["tput"].push_back(k);
      arm[a].pairs["loss"].push_back(k);
    }
    SequentialStep step = EvaluateSequential(spec, arm[0], arm[1], std::nullopt, design, vo);
    if (step.stop) return {step.verdict.decision, 2 * k};
  }
  return {"inconclusive", 2 * design.max_pairs};
}

Outcome Naive(const Scenario& sc, SimRng& rng) {
  std::vector<double> x, y;
  for (int i = 0; i < 20; ++i) {
    const bool variant = i >= 10;  // all baseline runs first
    const double level = 1000 * (variant ? 1 + sc.effect : 1) * DriftAt(sc.drift, i);
    RunSeries r = SimulateRun(rng, level, 2.0);
    double mean = 0;
    for (const auto& s : r.tput) mean += s.value;
    (variant ? y : x).push_back(mean / kSteps);
  }
  WelchResult w = Welch(x, y);
  if (w.p >= 0.05) return {"unchanged", 20};
  return {w.diff > 0 ? "improved" : "regressed", 20};
}

struct Tally {
  int n = 0, improved = 0, regressed = 0, unchanged = 0, inconclusive = 0;
  long runs = 0;
  void Add(const Outcome& o) {
    ++n;
    runs += o.runs;
    if (o.decision == "improved")
      ++improved;
    else if (o.decision == "regressed")
      ++regressed;
    else if (o.decision == "unchanged")
      ++unchanged;
    else
      ++inconclusive;
  }
  double Rate(int k) const { return n ? static_cast<double>(k) / n : 0; }
  double MeanRuns() const { return n ? static_cast<double>(runs) / n : 0; }
  // The right call: improved for a real gain, regressed for a real loss (or a broken guardrail),
  // unchanged when there is no effect; effects below the minimum are right when not called.
  double Correct(const Scenario& s) const {
    if (s.guard_break) return Rate(regressed);
    if (s.effect == 0) return Rate(unchanged);
    if (std::fabs(s.effect) < kDelta) return Rate(unchanged + inconclusive);
    return Rate(s.effect > 0 ? improved : regressed);
  }
  double WrongSign(const Scenario& s) const {
    if (s.effect > 0) return Rate(regressed);
    if (s.effect < 0) return Rate(improved);
    return 0;
  }
};

void PrintTable(const char* title, const std::vector<Scenario>& sc, const std::vector<Tally>& t) {
  std::printf("\n### %s\n\n", title);
  std::printf(
      "| drift | true effect | improved | regressed | unchanged | inconclusive | wrong sign | "
      "right call | runs/exp | runs/right call |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < sc.size(); ++i) {
    const Tally& x = t[i];
    const double right = x.Correct(sc[i]);
    std::printf("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f | %s |\n",
                DriftName(sc[i].drift), sc[i].label.c_str(), x.Rate(x.improved),
                x.Rate(x.regressed), x.Rate(x.unchanged), x.Rate(x.inconclusive),
                x.WrongSign(sc[i]), right, x.MeanRuns(),
                right > 0 ? std::to_string(x.MeanRuns() / right).substr(0, 5).c_str() : "inf");
  }
}

}  // namespace
}  // namespace tunectl

int main(int argc, char** argv) {
  using namespace tunectl;  // NOLINT
  int n = 2000;
  uint64_t seed = 42;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--experiments") && i + 1 < argc)
      n = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--margin") && i + 1 < argc)
      g_margin = std::atof(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: bench_decisions [--experiments N (default 2000)] [--seed S] [--margin M "
                   "(0.5)]\n");
      return 2;
    }
  }
  if (n < 1) {
    std::fprintf(stderr, "--experiments: %d is out of range; allowed >= 1\n", n);
    return 2;
  }
  std::vector<Scenario> scenarios;
  for (Drift d : {Drift::kNone, Drift::kLinear, Drift::kStep})
    for (double e : {0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0}) {
      char label[32];
      if (e == 0)
        std::snprintf(label, sizeof label, "0");
      else
        std::snprintf(label, sizeof label, "%+gδ", e);
      scenarios.push_back({d, e * kDelta, false, label});
    }
  scenarios.push_back({Drift::kNone, 2 * kDelta, true, "+2δ, guardrail broken"});

  const WorkloadSpec spec = Spec();
  std::vector<Tally> engine(scenarios.size()), naive(scenarios.size());
  SimRng rng(seed);
  for (size_t i = 0; i < scenarios.size(); ++i) {
    for (int k = 0; k < n; ++k) {
      engine[i].Add(Engine(scenarios[i], rng, spec));
      naive[i].Add(Naive(scenarios[i], rng));
    }
    std::fprintf(stderr, "\rscenario %zu/%zu", i + 1, scenarios.size());
  }
  std::fprintf(stderr, "\n");
  std::printf("## bench_decisions: %d experiments per scenario, seed %llu, min effect δ = %.0f%%\n",
              n, static_cast<unsigned long long>(seed), kDelta * 100);
  PrintTable("tunectl engine (sequential, 4..10 pairs, ABBA, steady-state medians)", scenarios,
             engine);
  PrintTable(
      "naive design (10 + 10 runs, baseline first, whole-run mean, Welch, p >= 0.05 = no change)",
      scenarios, naive);

  // Targets.
  const double alpha = 0.05, mc = 3 * std::sqrt(alpha * (1 - alpha) / n);
  bool ok = true;
  auto check = [&](bool pass, const std::string& what) {
    std::printf("- %s: %s\n", pass ? "PASS" : "FAIL", what.c_str());
    ok = ok && pass;
  };
  std::printf("\n### Targets\n\n");
  double worst_fpr = 0, worst_wrong = 0, worst_small = 0, power2 = 1, runs2 = 0, naive_runs = 20;
  int n2 = 0;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    const Scenario& s = scenarios[i];
    const Tally& t = engine[i];
    if (s.guard_break) continue;
    if (s.effect == 0) worst_fpr = std::max(worst_fpr, t.Rate(t.improved + t.regressed));
    worst_wrong = std::max(worst_wrong, t.WrongSign(s));
    if (s.effect != 0 && std::fabs(s.effect) < kDelta)
      worst_small = std::max(worst_small, t.Rate(t.improved + t.regressed));
    if (std::fabs(s.effect) == 2 * kDelta) {
      power2 = std::min(power2, t.Correct(s));
      runs2 += t.MeanRuns();
      ++n2;
    }
  }
  runs2 /= std::max(1, n2);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "false-positive rate <= alpha + MC error (%.4f) in every scenario: worst %.4f",
                alpha + mc, worst_fpr);
  check(worst_fpr <= alpha + mc, buf);
  std::snprintf(buf, sizeof buf, "wrong-sign rate < 0.5%%: worst %.4f", worst_wrong);
  check(worst_wrong < 0.005, buf);
  std::snprintf(buf, sizeof buf, ">= 90%% power at 2δ: worst %.3f", power2);
  check(power2 >= 0.90, buf);
  std::snprintf(buf, sizeof buf,
                "... using <= 70%% of the naive design's runs: %.1f of %.0f (%.0f%%)", runs2,
                naive_runs, 100 * runs2 / naive_runs);
  check(runs2 <= 0.7 * naive_runs, buf);
  std::snprintf(buf, sizeof buf,
                "effects below δ called improved/regressed at most alpha (+ MC error): worst %.4f",
                worst_small);
  check(worst_small <= alpha + mc, buf);
  const Tally& g = engine.back();
  std::snprintf(buf, sizeof buf, "a broken guardrail is never called improved: %.4f",
                g.Rate(g.improved));
  check(g.Rate(g.improved) <= alpha, buf);
  if (n < 500) {
    std::printf(
        "\n(targets are not enforced below 500 experiments per scenario: too much Monte-Carlo "
        "error)\n");
    return 0;
  }
  return ok ? 0 : 1;
}

// bench_decisions: how often each validation design reaches the right decision, and at what cost
// in runs, on simulated but realistic run series. tunectl's engine (steady-state detection per
// run, interleaved ABBA pairs, sequential boundary, minimum effect, guardrails) against the naive
// design (10 baseline runs first, then 10 variant runs, whole-run means, Welch, "no change" when
// p >= 0.05), on the same scenarios, in one run. The engine goes through the real code path:
// AnalyzeRun per run, BuildArms (which runs count), EvaluateSequential (looks by usable pairs).
// Fault scenarios (issue 10): variant runs excluded more often, a throttling subset, a slow last
// step, a quantised metric, an early OOM crash, NaN lines; and the estimate after early stopping.
//
//   build/bench/bench_decisions [--experiments N] [--seed S] [--margin M]
//
// Prints a Markdown table per design and the targets of docs/benchmarks.md with PASS/FAIL.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/changepoint.h"
#include "core/experiment.h"
#include "core/runs.h"
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

enum class Fault {
  kNone,
  kVariantUnsettled,  // 40 % of the variant's runs never settle (5 % of the control's)
  kThrottle,          // half the variant's runs throttle to -25 % from a random point
  kLastStepStall,     // every run's last step at 50 % speed (a checkpoint), 115-135 steps
  kQuantised,         // the metric printed in steps of 5 % of its level
  kEarlyCrash,        // every variant run dies of CUDA OOM
  kNanLines,          // 3 % of all samples are NaN
  // Noise of both arms (no fault of the variant's):
  kT3,             // t3 innovations instead of Gaussian
  kAr09,           // AR(1) with phi = 0.9
  kStalls,         // 2 % of steps stall at 20-60 % speed (3.5 % of the time lost on average)
  kStallsLight,    // 1 % of steps stall at 20-60 % speed
  kTwoLevel,       // every run switches between its level and 80 % of it, in stretches
  kLongWarmup,     // warm-up of 40-60 steps (declared: 5)
  kBothUnsettled,  // 40 % of both arms' runs never settle
  kHeavyTailed,    // t3 innovations, AR 0.6, 2 % stalls
  kHeavyLight,     // t3 innovations, AR 0.6, 1 % stalls
  // The variant's own faults and trade-offs:
  kNoisierBetter,    // the variant's step noise doubled
  kThrottleControl,  // half the control's runs throttle (the variant removes it)
  kRareStalls,       // the variant's runs stall 0.5 % of steps for 20 step-times (-9.5 %)
};
const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kNone: return "";
    case Fault::kVariantUnsettled: return "variant excluded more often";
    case Fault::kThrottle: return "throttling subset";
    case Fault::kLastStepStall: return "slow last step";
    case Fault::kQuantised: return "quantised metric";
    case Fault::kEarlyCrash: return "early OOM crash";
    case Fault::kNanLines: return "NaN lines";
    case Fault::kT3: return "t3 noise";
    case Fault::kAr09: return "AR(1) 0.9";
    case Fault::kStalls: return "stalls (2 % of steps)";
    case Fault::kStallsLight: return "stalls (1 % of steps)";
    case Fault::kTwoLevel: return "runs switch between two levels";
    case Fault::kLongWarmup: return "warm-up 40-60 steps, 5 declared";
    case Fault::kBothUnsettled: return "both arms unsteady (40 % of runs)";
    case Fault::kHeavyTailed: return "heavy-tailed: t3, AR 0.6, 2 % stalls";
    case Fault::kHeavyLight: return "heavy-tailed: t3, AR 0.6, 1 % stalls";
    case Fault::kNoisierBetter: return "variant noisier";
    case Fault::kThrottleControl: return "control throttles in half its runs";
    case Fault::kRareStalls: return "variant: rare long stalls";
  }
  return "";
}

struct Scenario {
  Drift drift;
  double effect;     // true relative effect on the primary (higher is better)
  bool guard_break;  // the variant worsens the guardrail by 3x its tolerance
  std::string label;
  Fault fault = Fault::kNone;
  bool estimate = false;  // report the estimate at the stop, raw and adjusted
};

// One run's per-step series of the primary (throughput) and the guardrail (loss).
struct RunSeries {
  std::vector<StepValue> tput, loss;
};

struct RunShape {
  int steps = kSteps;
  double unsettled = 0.05;  // probability that the run never settles
  bool throttle = false;    // drops to -25 % from a random point in 30..70 % of the run
  bool last_step_stall = false;
  double quantum = 0;  // printed resolution of the primary (0 = full precision)
  double nan_rate = 0;
  bool t3 = false;         // t3 innovations
  double phi = 0.6;        // AR(1) coefficient of the steps
  double noise = 0.03;     // the steps' stationary sd (log scale)
  double stall_rate = 0;   // share of steps that stall at 20-60 % speed
  double long_stall = 0;   // share of steps that take 20 step-times
  bool two_level = false;  // switches between the level and 80 % of it
  int warm_min = 5, warm_max = 40;
};

RunSeries SimulateRun(SimRng& rng, double level, double loss_level, const RunShape& shape = {}) {
  RunSeries r;
  const int steps = shape.steps;
  const int warm =
      shape.warm_min + static_cast<int>(rng.Uniform() * (shape.warm_max - shape.warm_min + 1));
  const bool slow_node = rng.Uniform() < 0.10;
  const bool unsettled = rng.Uniform() < shape.unsettled;
  const int throttle_at =
      shape.throttle ? static_cast<int>(steps * (0.3 + 0.4 * rng.Uniform())) : steps + 1;
  double run_level = level * std::exp(0.01 * rng.Normal()) * (slow_node ? 0.85 : 1.0);
  const double phi = shape.phi, sd = shape.noise * std::sqrt(1 - phi * phi);
  // t3 innovations scaled to unit variance (t3's variance is 3).
  auto innovation = [&] { return shape.t3 ? rng.StudentT3() / std::sqrt(3.0) : rng.Normal(); };
  double u = shape.noise * rng.Normal();
  bool low = rng.Uniform() < 0.5;  // two-level runs: which level the run is at
  for (int t = 1; t <= steps; ++t) {
    u = phi * u + sd * innovation();
    double v = run_level * std::exp(u);
    if (t <= warm) v *= 0.5 + 0.5 * t / warm;
    if (unsettled) v *= 1.0 - 0.15 * t / steps;
    if (t >= throttle_at) v *= 0.75;
    if (shape.two_level) {
      if (rng.Uniform() < 0.08) low = !low;  // stretches of ~12 steps
      if (low) v *= 0.8;
    }
    if (rng.Uniform() < shape.stall_rate) v *= 0.2 + 0.4 * rng.Uniform();  // a stall
    if (rng.Uniform() < shape.long_stall) v /= 20;                         // a long stall
    if (shape.last_step_stall && t == steps) v *= 0.5;
    if (shape.quantum > 0) v = std::round(v / shape.quantum) * shape.quantum;
    if (shape.nan_rate > 0 && rng.Uniform() < shape.nan_rate) v = std::nan("");
    r.tput.push_back({t, v});
    r.loss.push_back({t, loss_level * std::exp(0.005 * rng.Normal())});
  }
  return r;
}

RunShape ShapeOf(const Scenario& sc, bool variant, SimRng& rng) {
  RunShape s;
  switch (sc.fault) {
    case Fault::kNone: break;
    case Fault::kVariantUnsettled:
      if (variant) s.unsettled = 0.40;
      break;
    case Fault::kThrottle: s.throttle = variant && rng.Uniform() < 0.5; break;
    case Fault::kLastStepStall:
      s.last_step_stall = true;
      s.steps = 115 + static_cast<int>(rng.Uniform() * 21);
      break;
    case Fault::kQuantised: s.quantum = 50; break;  // 5 % of the level 1000
    case Fault::kEarlyCrash: break;
    case Fault::kNanLines: s.nan_rate = 0.03; break;
    case Fault::kT3: s.t3 = true; break;
    case Fault::kAr09: s.phi = 0.9; break;
    case Fault::kStalls: s.stall_rate = 0.02; break;
    case Fault::kStallsLight: s.stall_rate = 0.01; break;
    case Fault::kTwoLevel: s.two_level = true; break;
    case Fault::kLongWarmup: s.warm_min = 40, s.warm_max = 60; break;
    case Fault::kBothUnsettled: s.unsettled = 0.40; break;
    case Fault::kHeavyTailed: s.t3 = true, s.stall_rate = 0.02; break;
    case Fault::kHeavyLight: s.t3 = true, s.stall_rate = 0.01; break;
    case Fault::kNoisierBetter:
      if (variant) s.noise = 0.06;
      break;
    case Fault::kThrottleControl: s.throttle = !variant && rng.Uniform() < 0.5; break;
    case Fault::kRareStalls:
      if (variant) s.long_stall = 0.005;
      break;
  }
  return s;
}

RunMetricFacts FactsOf(const std::string& metric, const std::vector<StepValue>& samples,
                       Better better) {
  const SteadyState st = AnalyzeRun(samples, kDeclaredWarmup, better);
  RunMetricFacts f;
  f.metric = metric;
  if (st.stats.n > 0) f.median = st.stats.median;
  f.delivered = st.delivered;
  f.pace = st.pace;
  f.aggregate = st.aggregate;
  f.measured_from_step = st.measured_from_step;
  f.usable = st.usable();
  f.slowdown = st.slowdown;
  f.nonfinite = st.nonfinite;
  f.samples = st.samples;
  f.steady_from_step = st.steady_from_step;
  f.last_step = samples.empty() ? 0 : samples.back().step;
  f.resolution = st.resolution;
  f.levels = st.levels;
  return f;
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
  double estimate = 0, adjusted = 0;  // primary ratio - 1 at the stop (raw, adjusted)
  bool has_adjusted = false;
};

double g_margin = 0.5;  // --margin: VerdictOptions::margin

Outcome Engine(const Scenario& sc, SimRng& rng, const WorkloadSpec& spec) {
  VerdictOptions vo;
  vo.margin = g_margin;
  vo.cross_checks = false;  // reported only; they never change a decision
  vo.adjust_estimate = sc.estimate;
  SequentialOptions design;  // 4..10 usable pairs
  std::vector<RunFacts> runs;
  int run_index = 0;
  for (int k = 1; k <= design.max_pairs; ++k) {
    const bool control_first = (k - 1) % 2 == 0;
    for (int j = 0; j < 2; ++j) {
      const int a = (j == 0) == control_first ? 0 : 1;
      const double level = 1000 * (a ? 1 + sc.effect : 1) * DriftAt(sc.drift, run_index++);
      const double loss = 2.0 * (a && sc.guard_break ? 1 + 3 * kTolerance : 1);
      RunFacts r;
      r.id = static_cast<int64_t>(runs.size() + 1);
      r.idx = 2 * (k - 1) + j + 1;
      r.arm = a ? "variant" : "control";
      r.state = RunState::kSucceeded;
      if (a && sc.fault == Fault::kEarlyCrash) {
        r.state = RunState::kFailed;
        r.cause = "OOM";
        r.reason = "exit code 1 — OOM: torch.OutOfMemoryError: CUDA out of memory.";
        runs.push_back(r);
        continue;
      }
      RunSeries s = SimulateRun(rng, level, loss, ShapeOf(sc, a == 1, rng));
      r.metrics = {FactsOf("tput", s.tput, Better::kHigher),
                   FactsOf("loss", s.loss, Better::kLower)};
      runs.push_back(r);
    }
    const Arms arms = BuildArms(spec, runs);
    SequentialStep step =
        EvaluateSequential(spec, arms.control, arms.variant, std::nullopt, design, vo);
    if (!step.stop && k < design.max_pairs) continue;
    Outcome o{step.verdict.decision, 2 * k};
    const MetricVerdict& m = step.verdict.metrics[0];
    o.estimate = m.ratio - 1;
    o.has_adjusted = m.adjusted;
    o.adjusted = m.adjusted ? m.adj_ratio - 1 : o.estimate;
    return o;
  }
  return {"inconclusive", 2 * design.max_pairs};
}

Outcome Naive(const Scenario& sc, SimRng& rng) {
  std::vector<double> x, y;
  for (int i = 0; i < 20; ++i) {
    const bool variant = i >= 10;                             // all baseline runs first
    if (variant && sc.fault == Fault::kEarlyCrash) continue;  // crashed: no value
    const double level = 1000 * (variant ? 1 + sc.effect : 1) * DriftAt(sc.drift, i);
    RunSeries r = SimulateRun(rng, level, 2.0, ShapeOf(sc, variant, rng));
    double mean = 0;
    int n = 0;
    for (const auto& s : r.tput)
      if (std::isfinite(s.value)) mean += s.value, ++n;
    (variant ? y : x).push_back(mean / std::max(1, n));
  }
  if (y.size() < 2) return {"regressed", 20};  // every variant run crashed
  WelchResult w = Welch(x, y);
  if (w.p >= 0.05) return {"unchanged", 20};
  return {w.diff > 0 ? "improved" : "regressed", 20};
}

struct Tally {
  int n = 0, improved = 0, regressed = 0, unchanged = 0, inconclusive = 0;
  long runs = 0;
  // The primary's estimate at the stop: over all experiments and among improved calls.
  double est_all = 0, adj_all = 0, est_improved = 0, adj_improved = 0;
  void Add(const Outcome& o) {
    ++n;
    runs += o.runs;
    est_all += o.estimate;
    adj_all += o.adjusted;
    if (o.decision == "improved") est_improved += o.estimate, adj_improved += o.adjusted;
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
    switch (Truth(s)) {
      case +1: return Rate(improved);
      case -1: return Rate(regressed);
      case 2: return 1 - Rate(improved + regressed);  // below the resolution
      case 3: return 1 - Rate(improved);              // a net loss below the minimum effect
      case 5: return 1;                               // no right answer to score
      default: break;
    }
    if (s.effect == 0) return Rate(unchanged);
    return Rate(unchanged + inconclusive);  // below the minimum effect
  }
  // +1 truly better by more than δ, -1 worse by more than δ, 0 no effect or one below δ,
  // 2 below the metric's resolution, 3 a net loss below δ (anything but improved is right).
  static int Truth(const Scenario& s) {
    switch (s.fault) {
      case Fault::kQuantised: return 2;
      case Fault::kEarlyCrash:
      case Fault::kRareStalls: return -1;
      case Fault::kVariantUnsettled: return s.effect > 0 ? 5 : -1;  // +2δ: a net +3 %, ~δ
      case Fault::kThrottle: return s.effect > 0 ? 3 : -1;
      case Fault::kThrottleControl: return +1;
      default: break;
    }
    if (s.guard_break) return -1;
    if (std::fabs(s.effect) >= kDelta) return s.effect > 0 ? +1 : -1;
    return 0;
  }
  // Improved/regressed calls that are false in this scenario.
  double FalseCalls(const Scenario& s) const {
    const int t = Truth(s);
    if (t == 5) return 0;  // no right answer to score
    if (t == 0 || t == 2) return Rate(improved + regressed);
    return WrongSign(s);
  }
  double WrongSign(const Scenario& s) const {
    const int t = Truth(s);
    if (t == -1 || t == 3) return Rate(improved);
    if (t == +1) return Rate(regressed);
    return 0;
  }
  // "unchanged" for a true change beyond the minimum effect.
  double FalseUnchanged(const Scenario& s) const {
    const int t = Truth(s);
    return t == +1 || t == -1 ? Rate(unchanged) : 0;
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
    const std::string label =
        sc[i].fault == Fault::kNone ? sc[i].label : sc[i].label + ", " + FaultName(sc[i].fault);
    std::printf("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f | %s |\n",
                DriftName(sc[i].drift), label.c_str(), x.Rate(x.improved), x.Rate(x.regressed),
                x.Rate(x.unchanged), x.Rate(x.inconclusive), x.WrongSign(sc[i]), right,
                x.MeanRuns(),
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
  const size_t first_noise = scenarios.size();
  for (Fault f :
       {Fault::kT3, Fault::kAr09, Fault::kStalls, Fault::kStallsLight, Fault::kTwoLevel,
        Fault::kLongWarmup, Fault::kBothUnsettled, Fault::kHeavyTailed, Fault::kHeavyLight}) {
    scenarios.push_back({Drift::kNone, 0, false, "0", f});
    scenarios.push_back({Drift::kNone, 2 * kDelta, false, "+2δ", f});
  }
  scenarios.push_back({Drift::kNone, 0.8, false, "+80%", Fault::kTwoLevel});
  const size_t first_fault = scenarios.size();
  for (Fault f :
       {Fault::kVariantUnsettled, Fault::kLastStepStall, Fault::kQuantised, Fault::kNanLines}) {
    scenarios.push_back({Drift::kNone, 0, false, "0", f});
    scenarios.push_back({Drift::kNone, 2 * kDelta, false, "+2δ", f});
  }
  scenarios.push_back({Drift::kNone, 2 * kDelta, false, "+2δ", Fault::kNoisierBetter});
  // Unthrottled variant runs gain 6.5 %, throttled ones lose 25 % from a random point: net loss.
  scenarios.push_back({Drift::kNone, 0.065, false, "+6.5% / -25% in half", Fault::kThrottle});
  scenarios.push_back({Drift::kNone, 0, false, "0 / -25% in half", Fault::kThrottle});
  scenarios.push_back({Drift::kNone, 0, false, "control -25% in half", Fault::kThrottleControl});
  scenarios.push_back({Drift::kNone, 0, false, "-9.5% in rare long stalls", Fault::kRareStalls});
  scenarios.push_back({Drift::kNone, 0, false, "0", Fault::kEarlyCrash});
  const size_t first_estimate = scenarios.size();
  scenarios.push_back({Drift::kNone, 0, false, "0", Fault::kNone, true});
  scenarios.push_back({Drift::kNone, 2 * kDelta, false, "+2δ", Fault::kNone, true});

  const WorkloadSpec spec = Spec();
  std::vector<Tally> engine(scenarios.size()), naive(scenarios.size());
  SimRng rng(seed);
  const int n_estimate = std::min(n, 500);  // the adjustment simulates: ~30 ms an experiment
  for (size_t i = 0; i < scenarios.size(); ++i) {
    for (int k = 0; k < (scenarios[i].estimate ? n_estimate : n); ++k) {
      engine[i].Add(Engine(scenarios[i], rng, spec));
      naive[i].Add(Naive(scenarios[i], rng));
    }
    if (isatty(2)) std::fprintf(stderr, "\rscenario %zu/%zu", i + 1, scenarios.size());
  }
  if (isatty(2)) std::fprintf(stderr, "\n");
  std::printf("## bench_decisions: %d experiments per scenario, seed %llu, min effect δ = %.0f%%\n",
              n, static_cast<unsigned long long>(seed), kDelta * 100);
  auto part = [](const auto& v, size_t a, size_t b) {
    return std::vector<typename std::decay_t<decltype(v)>::value_type>(v.begin() + a,
                                                                       v.begin() + b);
  };
  PrintTable(
      "tunectl engine (sequential, 4..10 pairs, ABBA, every run's delivered value, split paired)",
      part(scenarios, 0, first_noise), part(engine, 0, first_noise));
  PrintTable(
      "naive design (10 + 10 runs, baseline first, whole-run mean, Welch, p >= 0.05 = no change)",
      part(scenarios, 0, first_noise), part(naive, 0, first_noise));
  PrintTable("noise of both arms: tunectl engine", part(scenarios, first_noise, first_fault),
             part(engine, first_noise, first_fault));
  PrintTable("noise of both arms: naive design", part(scenarios, first_noise, first_fault),
             part(naive, first_noise, first_fault));
  PrintTable("the variant's faults and trade-offs: tunectl engine",
             part(scenarios, first_fault, first_estimate),
             part(engine, first_fault, first_estimate));
  PrintTable("the variant's faults and trade-offs: naive design",
             part(scenarios, first_fault, first_estimate),
             part(naive, first_fault, first_estimate));
  std::printf("\n### Estimates after early stopping (%d experiments each)\n\n", n_estimate);
  std::printf(
      "| true effect | improved | mean estimate, all | mean adjusted, all | mean estimate, "
      "improved | mean adjusted, improved |\n|---|---|---|---|---|---|\n");
  for (size_t i = first_estimate; i < scenarios.size(); ++i) {
    const Tally& t = engine[i];
    const double ni = std::max(1, t.improved);
    std::printf("| %s | %.3f | %+.2f%% | %+.2f%% | %+.2f%% | %+.2f%% |\n",
                scenarios[i].label.c_str(), t.Rate(t.improved), 100 * t.est_all / t.n,
                100 * t.adj_all / t.n, 100 * t.est_improved / ni, 100 * t.adj_improved / ni);
  }

  // Targets.
  const double alpha = 0.05, mc = 3 * std::sqrt(alpha * (1 - alpha) / n);
  bool ok = true;
  auto check = [&](bool pass, const std::string& what) {
    std::printf("- %s: %s\n", pass ? "PASS" : "FAIL", what.c_str());
    ok = ok && pass;
  };
  auto name = [&](size_t i) {
    const Scenario& s = scenarios[i];
    return s.fault == Fault::kNone ? std::string(DriftName(s.drift)) + " drift, " + s.label
                                   : s.label + ", " + FaultName(s.fault);
  };
  std::printf("\n### Targets\n\n");
  double worst_fpr = 0, worst_wrong = 0, worst_small = 0, power2 = 1, runs2 = 0, naive_runs = 20;
  double worst_unchanged = 0, worst_noise_power = 1;
  std::string fpr_at, unchanged_at, noise_power_at;
  int n2 = 0;
  for (size_t i = 0; i < first_estimate; ++i) {
    const Scenario& s = scenarios[i];
    const Tally& t = engine[i];
    const int truth = Tally::Truth(s);
    if (truth == 0 && t.Rate(t.improved + t.regressed) > worst_fpr)
      worst_fpr = t.Rate(t.improved + t.regressed), fpr_at = name(i);
    worst_wrong = std::max(worst_wrong, t.WrongSign(s) * (s.fault == Fault::kThrottle ? 0 : 1));
    if (t.FalseUnchanged(s) > worst_unchanged)
      worst_unchanged = t.FalseUnchanged(s), unchanged_at = name(i);
    if (i < first_noise && !s.guard_break && s.effect != 0 && std::fabs(s.effect) < kDelta)
      worst_small = std::max(worst_small, t.Rate(t.improved + t.regressed));
    if (i < first_noise && !s.guard_break && std::fabs(s.effect) == 2 * kDelta) {
      power2 = std::min(power2, t.Correct(s));
      runs2 += t.MeanRuns();
      ++n2;
    }
    if (i >= first_noise && i < first_fault && s.effect == 2 * kDelta &&
        t.Correct(s) < worst_noise_power)
      worst_noise_power = t.Correct(s), noise_power_at = name(i);
  }
  runs2 /= std::max(1, n2);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "false improved/regressed <= alpha + MC error (%.4f) with no true effect, in every "
                "scenario: worst %.4f (%s)",
                alpha + mc, worst_fpr, fpr_at.c_str());
  check(worst_fpr <= alpha + mc, buf);
  std::snprintf(buf, sizeof buf,
                "unchanged for a true change beyond δ <= alpha + MC error: worst %.4f (%s)",
                worst_unchanged, unchanged_at.c_str());
  check(worst_unchanged <= alpha + mc, buf);
  std::snprintf(buf, sizeof buf, "wrong-sign rate < 0.5%%: worst %.4f", worst_wrong);
  check(worst_wrong < 0.005, buf);
  std::snprintf(buf, sizeof buf, ">= 90%% power at 2δ (drift scenarios): worst %.3f", power2);
  check(power2 >= 0.90, buf);
  std::snprintf(buf, sizeof buf,
                "... using <= 70%% of the naive design's runs: %.1f of %.0f (%.0f%%)", runs2,
                naive_runs, 100 * runs2 / naive_runs);
  check(runs2 <= 0.7 * naive_runs, buf);
  std::snprintf(buf, sizeof buf,
                "(reported) power at 2δ under each noise of both arms: worst %.3f (%s)",
                worst_noise_power, noise_power_at.c_str());
  std::printf("- %s\n", buf);
  std::snprintf(buf, sizeof buf,
                "effects below δ called improved/regressed at most alpha (+ MC error): worst %.4f",
                worst_small);
  check(worst_small <= alpha + mc, buf);
  auto find = [&](Fault f, double effect) -> const Tally& {
    for (size_t i = 0; i < first_estimate; ++i)
      if (scenarios[i].fault == f && scenarios[i].effect == effect) return engine[i];
    return engine[0];
  };
  const Tally& g = engine[first_noise - 1];
  std::snprintf(buf, sizeof buf, "a broken guardrail is never called improved: %.4f",
                g.Rate(g.improved));
  check(g.Rate(g.improved) <= alpha, buf);
  const Tally& two = find(Fault::kTwoLevel, 0.8);
  std::snprintf(buf, sizeof buf, ">= 95%% power for +80%% whose runs switch levels: %.3f",
                two.Rate(two.improved));
  check(two.Rate(two.improved) >= 0.95, buf);
  const Tally& throttle = find(Fault::kThrottle, 0.065);
  std::snprintf(buf, sizeof buf, "a throttling net-loss variant called improved <= 5%%: %.4f",
                throttle.Rate(throttle.improved));
  check(throttle.Rate(throttle.improved) <= 0.05 + mc, buf);
  const Tally& pure = find(Fault::kThrottle, 0);
  std::snprintf(buf, sizeof buf, "(reported) a pure throttler called regressed: %.3f",
                pure.Rate(pure.regressed));
  std::printf("- %s\n", buf);
  for (Fault f : {Fault::kHeavyTailed, Fault::kHeavyLight}) {
    const Tally& h = find(f, 0);
    std::snprintf(buf, sizeof buf, "no-effect %s: unchanged in >= 60%%: %.3f", FaultName(f),
                  h.Rate(h.unchanged));
    check(h.Rate(h.unchanged) >= 0.60, buf);
  }
  double quantised = 0, crash_right = 0, crash_runs = 0;
  for (size_t i = first_fault; i < first_estimate; ++i) {
    const Scenario& s = scenarios[i];
    const Tally& t = engine[i];
    if (s.fault == Fault::kQuantised) quantised = std::max(quantised, t.FalseCalls(s));
    if (s.fault == Fault::kEarlyCrash) crash_right = t.Rate(t.regressed), crash_runs = t.MeanRuns();
  }
  std::snprintf(buf, sizeof buf,
                "a metric printed coarser than its min effect is never called: %.4f", quantised);
  check(quantised <= mc, buf);
  std::snprintf(buf, sizeof buf,
                "an OOM-crashing variant: regressed %.3f, after %.1f runs (stops at its 2nd "
                "failure: 4)",
                crash_right, crash_runs);
  check(crash_right >= 0.99 && crash_runs <= 4.0, buf);
  if (n < 500) {
    std::printf(
        "\n(targets are not enforced below 500 experiments per scenario: too much Monte-Carlo "
        "error)\n");
    return 0;
  }
  return ok ? 0 : 1;
}

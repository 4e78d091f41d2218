// Group-sequential design for experiments: decide after each interleaved control/variant pair,
// from `min_pairs` up to the cap `max_pairs`. At look k (pairs so far) the critical value is an
// O'Brien-Fleming-shaped boundary b_k = c·sqrt(max_pairs / k); c is calibrated by seeded
// simulation of the statistic the verdict uses, so that the probability of crossing at any look
// when there is no effect is at most alpha (two-sided). For the split paired statistic
// (SplitPaired) c is the largest over several null distributions of the pairs: Gaussian,
// heavy-tailed (t3), a fifth of the pairs on slow nodes, lost time dominating, so the error rate
// holds whatever the noise looks like. Pure and deterministic; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tunectl {

// No decision rests on fewer pairs than this, whatever the design says (the README's promise).
inline constexpr int kFirstLookPairs = 4;

struct SequentialOptions {
  double alpha = 0.05;  // overall two-sided false-positive rate of the boundary
  // The first look, in complete pairs: no decision rests on fewer, at any look, the cap
  // included. A verdict raises it to kFirstLookPairs; the boundary is calibrated from here.
  int min_pairs = kFirstLookPairs;
  int max_pairs = 10;  // the run cap per arm
  bool paired = true;  // paired (ABBA pairs), else Welch t on logs
  bool split = true;   // paired: the split statistic (SplitPaired), else a plain paired t
};

// The calibrated constant c (cached per options). `sims` and `seed` fix the simulation.
double BoundaryConstant(const SequentialOptions& o, int sims = 40000, uint64_t seed = 20261202);
// b_k for k pairs (k is clamped to [min_pairs, max_pairs]).
double Boundary(const SequentialOptions& o, int k);
// The boundary of the equivalence test ("unchanged", two one-sided tests at alpha each): b_k of
// the design calibrated at two-sided 2·alpha.
double EquivalenceBoundary(const SequentialOptions& o, int k);

// Rejection rate of H0 (no effect) of the boundary over `sims` simulated experiments whose
// run values are drawn by `draw(arm, pair)` (arm 0 control, 1 variant) — for tests/benchmarks.
struct SimRng {
  explicit SimRng(uint64_t seed) : s(seed ? seed : 1) {}
  uint64_t Next();
  double Uniform();  // (0, 1)
  double Normal();
  double StudentT3();  // Student t with 3 degrees of freedom (heavy tails)
  uint64_t s;
};

}  // namespace tunectl

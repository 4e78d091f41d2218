// Group-sequential design for experiments: decide after each interleaved control/variant pair,
// from `min_pairs` up to the cap `max_pairs`. At look k (pairs so far) the critical value is an
// O'Brien-Fleming-shaped boundary b_k = c·sqrt(max_pairs / k); c is calibrated by seeded
// simulation (normal data, Welch t on k values per arm) so that the probability of crossing at
// any look when there is no effect is alpha (two-sided). Pure and deterministic; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tunectl {

struct SequentialOptions {
  double alpha = 0.05;  // overall two-sided false-positive rate of the boundary
  int min_pairs = 4;    // first look
  // An early stop also needs this many pairs whose both runs are usable (compared); runs left
  // out would otherwise let a decision rest on one or two pairs. At the cap the look decides.
  int min_usable_pairs = 3;
  int max_pairs = 10;  // the run cap per arm
  bool paired = true;  // paired t on within-pair differences (ABBA pairs), else Welch
};

// The calibrated constant c (cached per options). `sims` and `seed` fix the simulation.
double BoundaryConstant(const SequentialOptions& o, int sims = 40000, uint64_t seed = 20261202);
// b_k for k pairs (k is clamped to [min_pairs, max_pairs]).
double Boundary(const SequentialOptions& o, int k);

// Rejection rate of H0 (no effect) of the boundary over `sims` simulated experiments whose
// run values are drawn by `draw(arm, pair)` (arm 0 control, 1 variant) — for tests/benchmarks.
struct SimRng {
  explicit SimRng(uint64_t seed) : s(seed ? seed : 1) {}
  uint64_t Next();
  double Uniform();  // (0, 1)
  double Normal();
  uint64_t s;
};

}  // namespace tunectl

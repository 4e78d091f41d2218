// The tuning log's entries, built in one place: what changed, what was expected, what happened,
// what it did to the other metrics, who decided. Entries are JSON (stored verbatim, append-only);
// the CLI reads these keys. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/experiment.h"

namespace tunectl {

struct HypothesisRef {
  int64_t id = 0;
  std::string statement, evidence, expected;
};

struct DecidedEntryIn {
  int64_t experiment = 0;
  std::string workload;
  int64_t baseline = 0;
  int config_version = 0;
  int spec_revision = 0;
  Change change;
  std::optional<HypothesisRef> hypothesis;
  Verdict verdict;  // final: after a batch's correction
  std::string started_by;
  int control_runs = 0, variant_runs = 0, failed_runs = 0;
  int64_t batch = 0;
  std::string again_reason;  // the same change was decided before and tested again, for this
};
std::string DecidedEntry(const DecidedEntryIn& in);

struct FrozenEntryIn {
  int64_t experiment = 0;
  int version = 0;
  int64_t baseline = 0;
  bool forced = false;
  std::string reason, decision;
};
std::string FrozenEntry(const FrozenEntryIn& in);

struct RegressionEntryIn {
  int64_t regression = 0;
  std::string detector;  // change_point | stability
  std::string workload, metric, message;
  int config_version = 0;
  int64_t first_bad_run = 0;
  std::optional<double> before, after, p;
};
std::string RegressionEntry(const RegressionEntryIn& in);

struct ResolvedEntryIn {
  int64_t regression = 0;
  std::string metric, reason;
  int64_t first_bad_run = 0;
  int config_version = 0;
};
std::string ResolvedEntry(const ResolvedEntryIn& in);

}  // namespace tunectl

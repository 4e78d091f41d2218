#include "core/tuning_log.h"

#include <nlohmann/json.hpp>

namespace tunectl {

using json = nlohmann::json;

namespace {

// The actual effect: for a sequential design's primary, the estimate adjusted for early
// stopping (and it says so), with the estimate at the stopping look beside it.
json MetricEntry(const MetricVerdict& m) {
  // No figure without an estimate: null and "—", never a placeholder ratio of 1.
  auto est = [&m](double x) { return m.estimated ? json(x) : json(nullptr); };
  json e = {{"metric", m.metric},
            {"role", m.role},
            {"ratio", est(m.ratio)},
            {"effect", m.estimated ? FormatEffect(m.ratio) : "—"},
            {"ci_low", est(m.ci_low)},
            {"ci_high", est(m.ci_high)},
            {"p_value", m.tested ? json(m.p_value) : json(nullptr)},
            {"decision", m.decision},
            {"guardrail", m.guardrail},
            {"n_control", m.n_control},
            {"n_variant", m.n_variant}};
  if (m.adjusted && m.estimated) {
    e["raw"] = {{"ratio", m.ratio}, {"ci_low", m.ci_low}, {"ci_high", m.ci_high}};
    e["ratio"] = m.adj_ratio;
    e["effect"] = FormatEffect(m.adj_ratio);
    e["ci_low"] = m.adj_low;
    e["ci_high"] = m.adj_high;
    e["adjusted"] = "median-unbiased for early stopping (sample-mean ordering)";
  }
  return e;
}

}  // namespace

std::string DecidedEntry(const DecidedEntryIn& in) {
  const Verdict& v = in.verdict;
  json entry;
  entry["experiment"] = in.experiment;
  entry["workload"] = in.workload;
  entry["baseline"] = in.baseline;
  entry["config_version"] = in.config_version;
  entry["spec_revision"] = in.spec_revision;
  entry["params"] = in.change.Params();
  entry["change"] = in.change.Describe();
  entry["from"] = in.change.from;
  entry["to"] = in.change.to;
  entry["coupled"] = in.change.coupled;
  if (in.hypothesis) {
    entry["hypothesis"] = {{"id", in.hypothesis->id},
                           {"statement", in.hypothesis->statement},
                           {"evidence", in.hypothesis->evidence},
                           {"expected", in.hypothesis->expected},
                           {"result", v.hypothesis},
                           {"note", v.hypothesis_note}};
  } else {
    entry["hypothesis"] = nullptr;
  }
  json others = json::array(), guards = json::array();
  for (const auto& m : v.metrics) {
    if (m.metric == v.primary)
      entry["primary"] = MetricEntry(m);
    else
      others.push_back(MetricEntry(m));
    if (m.role == "guardrail")
      guards.push_back({{"metric", m.metric}, {"status", m.guardrail}, {"note", m.note}});
  }
  entry["others"] = others;
  entry["guardrails"] = guards;
  entry["decision"] = v.decision;
  entry["reasons"] = v.reasons;
  if (!v.correction.empty()) {
    entry["batch"] = in.batch;
    entry["correction"] = {{"method", v.correction},
                           {"unadjusted_decision", v.unadjusted_decision},
                           {"adjusted_p", v.adjusted_p.value_or(1.0)}};
  }
  entry["started_by"] = in.started_by;
  if (!in.again_reason.empty()) entry["again_reason"] = in.again_reason;
  entry["decided_by"] = "tunectl validator";
  entry["runs"] = {
      {"control", in.control_runs}, {"variant", in.variant_runs}, {"failed", in.failed_runs}};
  return entry.dump();
}

std::string FrozenEntry(const FrozenEntryIn& in) {
  return json({{"experiment", in.experiment},
               {"version", in.version},
               {"baseline", in.baseline},
               {"forced", in.forced},
               {"reason", in.reason},
               {"decision", in.decision}})
      .dump();
}

std::string RegressionEntry(const RegressionEntryIn& in) {
  json entry = {
      {"kind", "regression"},
      {"regression_id", in.regression},
      {"detector", in.detector},
      {"workload", in.workload},
      {"config_version", in.config_version},
      {"change", "none (v" + std::to_string(in.config_version) + " unchanged): " + in.message},
      {"metric", in.metric},
      {"first_bad_run", in.first_bad_run},
      {"message", in.message},
      {"decision", "regressed"}};
  if (in.before && in.after && *in.before != 0) {
    entry["before"] = *in.before;
    entry["after"] = *in.after;
    entry["primary"] = {
        {"metric", in.metric}, {"ratio", *in.after / *in.before}, {"p_value", in.p.value_or(1.0)}};
  } else {
    entry["primary"] = {{"metric", in.metric}};
  }
  return entry.dump();
}

std::string ResolvedEntry(const ResolvedEntryIn& in) {
  return json(
             {{"kind", "resolved"},
              {"regression_id", in.regression},
              {"metric", in.metric},
              {"first_bad_run", in.first_bad_run},
              {"config_version", in.config_version},
              {"change", "regression " + std::to_string(in.regression) + " resolved: " + in.reason},
              {"reason", in.reason},
              {"decision", "resolved"}})
      .dump();
}

}  // namespace tunectl

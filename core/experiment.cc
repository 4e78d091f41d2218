#include "core/experiment.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "core/sequential.h"
#include "core/statistics.h"
#include "core/stats.h"

namespace tunectl {
namespace {

std::string Join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

const std::vector<std::string>* GroupOf(const WorkloadSpec& spec, const std::string& param) {
  for (const auto& g : spec.coupled)
    if (std::find(g.begin(), g.end(), param) != g.end()) return &g;
  return nullptr;
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

}  // namespace

std::string Change::Describe() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : to) parts.push_back(k + " " + from.at(k) + "→" + v);
  return Join(parts) + (coupled ? " (coupled)" : "");
}

std::string Change::Params() const {
  std::vector<std::string> names;
  for (const auto& [k, _] : to) names.push_back(k);
  return Join(names, "+");
}

Result<Change> ParseVary(const WorkloadSpec& spec, const ParamValues& base,
                         const std::vector<std::string>& varies) {
  if (varies.empty())
    return Status::InvalidArgument(
        "--vary: missing; name the one parameter to change, e.g. --vary num_workers=8");
  std::vector<std::string> names;
  for (const auto& p : spec.params) names.push_back(p.name);
  Change c;
  std::vector<std::string> order;
  for (const auto& v : varies) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("--vary: \"" + v +
                                     "\" is not NAME=VALUE (e.g. --vary num_workers=8)");
    if (v.find('=', eq + 1) != std::string::npos)
      return Status::InvalidArgument("--vary: \"" + v +
                                     "\" has two '='; give one NAME=VALUE per --vary");
    const std::string name = v.substr(0, eq), value = v.substr(eq + 1);
    const ParamSpec* p = spec.FindParam(name);
    if (!p) {
      std::string msg = "--vary: \"" + name + "\" is not a parameter of workload " + spec.name;
      std::string near = NearestName(name, names);
      if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
      return Status::InvalidArgument(msg + " (parameters: " + Join(names) + ")");
    }
    if (c.to.count(name))
      return Status::InvalidArgument("--vary: " + name +
                                     " is given twice; an experiment tries one value");
    auto canon = CanonicalParamValue(*p, value);
    if (!canon.ok()) return Status::InvalidArgument("--vary: " + canon.status().message());
    auto b = base.find(name);
    const std::string from = b == base.end() ? p->default_value : b->second;
    if (*canon == from)
      return Status::InvalidArgument(
          "--vary: " + name + "=" + *canon +
          " is the baseline's value already; vary it to a different value");
    c.from[name] = from;
    c.to[name] = *canon;
    order.push_back(name);
  }
  if (order.size() > 1) {
    const auto* group = GroupOf(spec, order[0]);
    bool one_group = group != nullptr;
    for (const auto& n : order) one_group = one_group && GroupOf(spec, n) == group;
    if (!one_group)
      return Status::InvalidArgument(
          "--vary: " + Join(order, " and ") +
          " are separate variables. An experiment changes exactly one variable, so that its "
          "effect can be attributed to it (single-variable rule). Run one experiment per "
          "parameter, or several at once as a batch against the same baseline (tunectl batch "
          "create --vary " +
          order[0] + "=… --vary " + order[1] +
          "=…, one experiment per value). Parameters that must move together (e.g. "
          "micro_batch_size with grad_accum_steps) are declared in the workload as "
          "coupled: [[a, b]] and then count as one variable.");
    c.coupled = true;
  }
  return c;
}

Result<Expectation> ParseExpectation(const WorkloadSpec& spec, const std::string& raw) {
  std::string text = Trim(raw);
  auto bad = [&]() {
    return Status::InvalidArgument("--expect: \"" + raw +
                                   "\" is not understood; write METRIC +N% or METRIC -N% (e.g. "
                                   "\"samples_per_s +10%\"), METRIC up|down, or METRIC unchanged");
  };
  const size_t sp = text.find_first_of(" \t");
  if (sp == std::string::npos) return bad();
  Expectation e;
  e.text = text;
  e.metric = text.substr(0, sp);
  std::string rest = Trim(text.substr(sp));
  if (!spec.FindMetric(e.metric)) {
    std::vector<std::string> names;
    for (const auto& m : spec.metrics) names.push_back(m.name);
    std::string msg = "--expect: \"" + e.metric + "\" is not a metric of workload " + spec.name;
    std::string near = NearestName(e.metric, names);
    if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
    return Status::InvalidArgument(msg + " (metrics: " + Join(names) + ")");
  }
  if (rest == "up" || rest == "+") {
    e.direction = 1;
  } else if (rest == "down" || rest == "-") {
    e.direction = -1;
  } else if (rest == "unchanged" || rest == "same" || rest == "0%") {
    e.direction = 0;
  } else {
    if (rest.empty() || (rest[0] != '+' && rest[0] != '-')) return bad();
    e.direction = rest[0] == '+' ? 1 : -1;
    std::string num = rest.substr(1);
    if (!num.empty() && num.back() == '%') num.pop_back();
    double v = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc() || end != num.data() + num.size() || v <= 0 || v > 10000) return bad();
    e.size = v / 100;
  }
  return e;
}

std::string FormatEffect(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (ratio - 1) * 100);
  return buf;
}

namespace {

// Runs far from the rest of their arm (a slow node, a noisy neighbour): more than
// max(4 scaled MADs, 2·min_effect) from the arm's median, in log terms. A real effect moves every
// run of an arm, never one, so dropping these costs no power and removes most of their noise.
std::vector<double> WithoutOutlierRuns(const std::vector<double>& x, double min_effect,
                                       int* dropped) {
  if (x.size() < 6 || !std::all_of(x.begin(), x.end(), [](double v) { return v > 0; })) return x;
  std::vector<double> logs;
  for (double v : x) logs.push_back(std::log(v));
  const double med = Median(logs);
  std::vector<double> dev;
  for (double l : logs) dev.push_back(std::fabs(l - med));
  const double limit = std::max(4 * 1.4826 * Median(dev), 2 * std::log1p(min_effect));
  std::vector<double> kept;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::fabs(logs[i] - med) > limit)
      ++*dropped;
    else
      kept.push_back(x[i]);
  }
  return kept;
}

}  // namespace

std::vector<double> ComparedRunValues(const MetricSpec& m, const std::vector<double>& values) {
  int dropped = 0;
  return WithoutOutlierRuns(values, m.min_effect, &dropped);
}

namespace {

MetricVerdict CompareMetric(const MetricSpec& m, const std::vector<double>& c_all,
                            const std::vector<double>& v_all, const std::vector<int>& c_pairs,
                            const std::vector<int>& v_pairs, const VerdictOptions& o) {
  const std::vector<double> c = ComparedRunValues(m, c_all);
  const std::vector<double> v = ComparedRunValues(m, v_all);
  int dropped = static_cast<int>(c_all.size() - c.size() + v_all.size() - v.size());
  MetricVerdict r;
  r.metric = m.name;
  r.unit = m.unit;
  r.better = BetterName(m.better);
  r.role = RoleName(m.role);
  r.n_control = static_cast<int>(c.size());
  r.n_variant = static_cast<int>(v.size());
  r.control_median = Median(c);
  r.variant_median = Median(v);
  if (r.n_control < o.min_runs || r.n_variant < o.min_runs) {
    r.decision = "inconclusive";
    if (m.role == MetricRole::kGuardrail) r.guardrail = "inconclusive";
    r.note = "too few runs with a value (control " + std::to_string(r.n_control) + ", variant " +
             std::to_string(r.n_variant) + "; need " + std::to_string(o.min_runs) + " per side)";
    return r;
  }
  // Paired: log differences within complete pairs, outlier pairs dropped.
  std::vector<double> diffs;
  const bool all_positive =
      std::all_of(c_all.begin(), c_all.end(), [](double x) { return x > 0; }) &&
      std::all_of(v_all.begin(), v_all.end(), [](double x) { return x > 0; });
  if (o.paired && all_positive && c_pairs.size() == c_all.size() &&
      v_pairs.size() == v_all.size() && !c_pairs.empty()) {
    std::map<int, double> cv;
    for (size_t i = 0; i < c_all.size(); ++i) cv[c_pairs[i]] = std::log(c_all[i]);
    std::vector<double> ratios;
    for (size_t i = 0; i < v_all.size(); ++i)
      if (auto it = cv.find(v_pairs[i]); it != cv.end())
        ratios.push_back(std::exp(std::log(v_all[i]) - it->second));
    int dropped_pairs = 0;
    for (double x : WithoutOutlierRuns(ratios, m.min_effect, &dropped_pairs))
      diffs.push_back(std::log(x));
    if (diffs.size() >= static_cast<size_t>(std::max(2, o.min_runs))) {
      dropped = dropped_pairs;
    } else {
      diffs.clear();
    }
  }
  const bool positive = std::all_of(c.begin(), c.end(), [](double x) { return x > 0; }) &&
                        std::all_of(v.begin(), v.end(), [](double x) { return x > 0; });
  // Work on a scale where 0 is "no change": logs of run values, or (values <= 0) the raw
  // difference relative to the control mean.
  WelchResult w;
  double scale = 1, margin_unit = std::log1p(m.min_effect), tol_unit = std::log1p(m.tolerance);
  if (!diffs.empty()) {
    // one-sample t on the within-pair log differences
    const double n = static_cast<double>(diffs.size());
    double mean = 0;
    for (double d : diffs) mean += d;
    mean /= n;
    double ss = 0;
    for (double d : diffs) ss += (d - mean) * (d - mean);
    w.valid = true;
    w.diff = mean;
    w.se = std::sqrt(ss / (n - 1) / n);
    w.df = n - 1;
    w.t = w.se > 0 ? mean / w.se : (mean == 0 ? 0 : std::copysign(1e300, mean));
    w.p =
        w.se > 0 ? RegularizedBeta(w.df / (w.df + w.t * w.t), w.df / 2, 0.5) : (mean == 0 ? 1 : 0);
    r.note = "paired: " + std::to_string(diffs.size()) + " control/variant pairs";
  } else if (positive) {
    std::vector<double> lc, lv;
    for (double x : c) lc.push_back(std::log(x));
    for (double x : v) lv.push_back(std::log(x));
    w = Welch(lc, lv);
  } else {
    w = Welch(c, v);
    double base = 0;
    for (double x : c) base += x;
    base = std::fabs(base / static_cast<double>(c.size()));
    scale = base == 0 ? 1 : base;
    margin_unit = m.min_effect;
    tol_unit = m.tolerance;
    r.note = "values <= 0: compared on the raw scale";
  }
  const double d = w.diff / scale, se = w.se / scale;
  const double b = o.critical > 0 ? o.critical : StudentTQuantile(1 - o.alpha / 2, w.df);
  const double b90 = StudentTQuantile(1 - o.alpha, w.df);
  auto to_ratio = [&](double x) { return positive ? std::exp(x) : 1 + x; };
  r.p_value = w.p;
  if (o.cross_checks) r.mw_p = MannWhitney(c, v).p;
  if (o.cross_checks && r.n_control >= 10 && r.n_variant >= 10 && positive) {
    Interval boot = BootstrapRatioOfMediansBca(c, v, 0.05, 4000, 1);
    r.boot_low = boot.lo;
    r.boot_high = boot.hi;
  }
  r.ratio = to_ratio(d);
  r.ci_low = to_ratio(d - b * se);
  r.ci_high = to_ratio(d + b * se);
  r.ci90_low = to_ratio(d - b90 * se);
  r.ci90_high = to_ratio(d + b90 * se);
  const bool higher = m.better == Better::kHigher;
  const double dg = higher ? d : -d;  // > 0 = better
  const double lo_g = dg - b * se, hi_g = dg + b * se;
  if (lo_g >= o.margin * margin_unit && dg >= margin_unit) {
    r.decision = "improved";
  } else if (hi_g <= -o.margin * margin_unit && -dg >= margin_unit) {
    r.decision = "regressed";
  } else if (d - b * se >= -margin_unit && d + b * se <= margin_unit) {
    r.decision = "unchanged";
  } else {
    r.decision = "inconclusive";
    if (lo_g > 0 || hi_g < 0)
      r.note =
          "a real change, not shown to reach the minimum effect " + FormatEffect(1 + m.min_effect);
  }
  if (dropped > 0)
    r.note = std::to_string(dropped) +
             " outlier run(s) not compared (far from their arm: slow node?)" +
             (r.note.empty() ? "" : "; " + r.note);
  if (m.role == MetricRole::kGuardrail) {
    // Non-inferiority: the worsening's upper bound must stay within the tolerance
    // (the minimum effect when no tolerance is set).
    const double allowed = m.tolerance > 0 ? tol_unit : margin_unit;
    const double worst = -dg + b * se, least = -dg - b * se;
    if (worst < allowed)
      r.guardrail = "pass";
    else if (least > allowed)
      r.guardrail = "fail";
    else
      r.guardrail = "inconclusive";
    if (r.guardrail != "pass")
      r.note = "worse by up to " + FormatEffect(to_ratio(worst)) + " (allowed " +
               FormatEffect(to_ratio(allowed)) + ")";
  }
  return r;
}

}  // namespace

Verdict ComputeVerdict(const WorkloadSpec& spec, const ArmData& control, const ArmData& variant,
                       const std::optional<Expectation>& expectation, const VerdictOptions& o) {
  Verdict out;
  out.critical = o.critical;
  static const std::vector<double> kEmpty;
  for (const auto& m : spec.metrics) {
    auto c = control.values.find(m.name), v = variant.values.find(m.name);
    static const std::vector<int> kNoPairs;
    auto cp = control.pairs.find(m.name), vp = variant.pairs.find(m.name);
    out.metrics.push_back(CompareMetric(m, c == control.values.end() ? kEmpty : c->second,
                                        v == variant.values.end() ? kEmpty : v->second,
                                        cp == control.pairs.end() ? kNoPairs : cp->second,
                                        vp == variant.pairs.end() ? kNoPairs : vp->second, o));
  }
  const MetricVerdict* primary = nullptr;
  for (const auto& mv : out.metrics)
    if (mv.role == "primary") primary = &mv;
  if (!primary && !out.metrics.empty()) {
    primary = &out.metrics[0];
    out.reasons.push_back("no primary metric declared; decided on " + primary->metric);
  }
  out.primary = primary ? primary->metric : "";
  out.decision = primary ? primary->decision : "inconclusive";

  for (const auto* arm : {&control, &variant})
    for (const auto& x : arm->excluded) out.reasons.push_back("not compared: " + x);
  if (variant.failed_runs > 0) {
    out.reasons.push_back(std::to_string(variant.failed_runs) +
                          " variant run(s) failed: " + Join(variant.failures, "; "));
    if (control.failed_runs == 0)
      out.decision = "regressed";
    else if (out.decision == "improved")
      out.decision = "inconclusive";
  }
  for (const auto& mv : out.metrics) {
    if (mv.role != "guardrail" || mv.guardrail == "pass") continue;
    if (mv.guardrail == "fail") {
      out.reasons.push_back("guardrail " + mv.metric + " failed: " + mv.note);
      out.decision = "regressed";
    } else if (out.decision == "improved") {
      out.reasons.push_back("guardrail " + mv.metric + " not shown non-inferior (" + mv.note +
                            "); add runs");
      out.decision = "inconclusive";
    }
  }

  if (expectation) {
    const MetricVerdict* mv = nullptr;
    for (const auto& x : out.metrics)
      if (x.metric == expectation->metric) mv = &x;
    if (!mv || mv->n_control < o.min_runs || mv->n_variant < o.min_runs) {
      out.hypothesis = "inconclusive";
      out.hypothesis_note = "too few runs with a value of " + expectation->metric;
    } else if (expectation->direction == 0) {
      out.hypothesis = mv->decision == "unchanged" ? "confirmed"
                       : (mv->decision == "improved" || mv->decision == "regressed")
                           ? "refuted"
                           : "inconclusive";
      out.hypothesis_note = "expected no change; observed " + FormatEffect(mv->ratio);
    } else {
      const bool up = mv->ci_low > 1, down = mv->ci_high < 1;
      const bool expected_up = expectation->direction > 0;
      std::string observed = FormatEffect(mv->ratio) + " [" + FormatEffect(mv->ci_low) + ", " +
                             FormatEffect(mv->ci_high) + "]";
      if ((expected_up && up) || (!expected_up && down)) {
        out.hypothesis = "confirmed";
        out.hypothesis_note = "expected " +
                              expectation->text.substr(expectation->metric.size() + 1) +
                              ", observed " + observed;
        if (expectation->size) {
          const double want = expected_up ? 1 + *expectation->size : 1 - *expectation->size;
          if (want < mv->ci_low)
            out.hypothesis_note += "; larger than expected";
          else if (want > mv->ci_high)
            out.hypothesis_note += "; smaller than expected";
          else
            out.hypothesis_note += "; the expected size is within the CI";
        }
      } else if ((expected_up && down) || (!expected_up && up) || mv->decision == "unchanged") {
        out.hypothesis = "refuted";
        out.hypothesis_note = "expected " +
                              expectation->text.substr(expectation->metric.size() + 1) +
                              ", observed " + observed;
      } else {
        out.hypothesis = "inconclusive";
        out.hypothesis_note = "observed " + observed + ": the CI includes no change";
      }
    }
  }
  return out;
}

int UsablePairs(const WorkloadSpec& spec, const ArmData& control, const ArmData& variant) {
  const MetricSpec* primary = spec.PrimaryMetric();
  if (!primary) return 0;
  auto values = [&](const ArmData& a) {
    auto it = a.values.find(primary->name);
    return it == a.values.end() ? 0 : static_cast<int>(it->second.size());
  };
  auto cp = control.pairs.find(primary->name), vp = variant.pairs.find(primary->name);
  if (cp == control.pairs.end() || vp == variant.pairs.end())
    return std::min(values(control), values(variant));
  std::set<int> c(cp->second.begin(), cp->second.end());
  int n = 0;
  for (int pair : std::set<int>(vp->second.begin(), vp->second.end())) n += c.count(pair);
  return n;
}

SequentialStep EvaluateSequential(const WorkloadSpec& spec, const ArmData& control,
                                  const ArmData& variant,
                                  const std::optional<Expectation>& expectation,
                                  const SequentialOptions& design, const VerdictOptions& opts) {
  SequentialStep step;
  const int k = std::min(control.runs, variant.runs);
  VerdictOptions o = opts;
  SequentialOptions d = design;
  d.paired = opts.paired && !control.pairs.empty() && !variant.pairs.empty();
  o.critical = Boundary(d, k);
  step.verdict = ComputeVerdict(spec, control, variant, expectation, o);
  step.verdict.pairs = k;
  step.verdict.max_pairs = design.max_pairs;
  if (k >= design.max_pairs) {
    step.stop = true;
  } else if (variant.failed_runs > 0) {
    step.stop = true;  // a crashing variant is answer enough
  } else if (k >= design.min_pairs &&
             UsablePairs(spec, control, variant) >= design.min_usable_pairs) {
    step.stop = step.verdict.decision != "inconclusive";
  }
  return step;
}

BatchAdjustment AdjustBatch(const std::vector<std::string>& decisions,
                            const std::vector<double>& p_values, const std::string& method,
                            double alpha) {
  std::vector<double> p = p_values;
  for (size_t i = 0; i < p.size(); ++i)
    if (i >= decisions.size() || decisions[i].empty()) p[i] = 1;
  BatchAdjustment out;
  out.adjusted_p = method == "bh" ? BenjaminiHochbergAdjust(p) : HolmAdjust(p);
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string& d = i < decisions.size() ? decisions[i] : "";
    const bool called = d == "improved" || d == "regressed";
    out.decisions.push_back(called && out.adjusted_p[i] >= alpha
                                ? "inconclusive (after " +
                                      std::string(method == "bh" ? "BH" : "Holm") + ")"
                                : d);
  }
  return out;
}

std::string ChangeToJson(const Change& c) {
  nlohmann::ordered_json j;
  j["from"] = c.from;
  j["to"] = c.to;
  j["coupled"] = c.coupled;
  return j.dump();
}

Result<Change> ChangeFromJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return Status::Internal("stored change is not JSON: " + text);
  Change c;
  c.from = j.value("from", ParamValues{});
  c.to = j.value("to", ParamValues{});
  c.coupled = j.value("coupled", false);
  return c;
}

double Verdict::PrimaryP() const {
  for (const auto& m : metrics)
    if (m.metric == primary) return m.p_value;
  return 1;
}

std::string VerdictToJson(const Verdict& v) {
  nlohmann::ordered_json j;
  j["decision"] = v.decision;
  j["primary"] = v.primary;
  j["reasons"] = v.reasons;
  j["hypothesis"] = v.hypothesis;
  j["hypothesis_note"] = v.hypothesis_note;
  j["pairs"] = v.pairs;
  j["max_pairs"] = v.max_pairs;
  j["critical"] = v.critical;
  j["drift"] = v.drift;
  if (!v.correction.empty()) {
    j["correction"] = v.correction;
    j["unadjusted_decision"] = v.unadjusted_decision;
    if (v.adjusted_p) j["adjusted_p"] = *v.adjusted_p;
  }
  auto& ms = j["metrics"] = nlohmann::ordered_json::array();
  for (const auto& m : v.metrics) {
    ms.push_back({{"metric", m.metric},
                  {"unit", m.unit},
                  {"better", m.better},
                  {"role", m.role},
                  {"n_control", m.n_control},
                  {"n_variant", m.n_variant},
                  {"control_median", m.control_median},
                  {"variant_median", m.variant_median},
                  {"ratio", m.ratio},
                  {"ci_low", m.ci_low},
                  {"ci_high", m.ci_high},
                  {"ci90_low", m.ci90_low},
                  {"ci90_high", m.ci90_high},
                  {"p_value", m.p_value},
                  {"mw_p", m.mw_p},
                  {"boot_low", m.boot_low},
                  {"boot_high", m.boot_high},
                  {"decision", m.decision},
                  {"guardrail", m.guardrail},
                  {"note", m.note}});
  }
  return j.dump();
}

Result<Verdict> VerdictFromJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return Status::Internal("stored verdict is not JSON");
  Verdict v;
  v.decision = j.value("decision", "");
  v.primary = j.value("primary", "");
  v.reasons = j.value("reasons", std::vector<std::string>{});
  v.hypothesis = j.value("hypothesis", "");
  v.hypothesis_note = j.value("hypothesis_note", "");
  v.pairs = j.value("pairs", 0);
  v.max_pairs = j.value("max_pairs", 0);
  v.critical = j.value("critical", 0.0);
  v.drift = j.value("drift", "");
  v.correction = j.value("correction", "");
  v.unadjusted_decision = j.value("unadjusted_decision", "");
  if (j.contains("adjusted_p") && j["adjusted_p"].is_number())
    v.adjusted_p = j["adjusted_p"].get<double>();
  for (const auto& m : j.value("metrics", nlohmann::json::array())) {
    MetricVerdict x;
    x.metric = m.value("metric", "");
    x.unit = m.value("unit", "");
    x.better = m.value("better", "");
    x.role = m.value("role", "");
    x.n_control = m.value("n_control", 0);
    x.n_variant = m.value("n_variant", 0);
    x.control_median = m.value("control_median", 0.0);
    x.variant_median = m.value("variant_median", 0.0);
    x.ratio = m.value("ratio", 1.0);
    x.ci_low = m.value("ci_low", 1.0);
    x.ci_high = m.value("ci_high", 1.0);
    x.ci90_low = m.value("ci90_low", 1.0);
    x.ci90_high = m.value("ci90_high", 1.0);
    x.p_value = m.value("p_value", 1.0);
    x.mw_p = m.value("mw_p", 1.0);
    x.boot_low = m.value("boot_low", 0.0);
    x.boot_high = m.value("boot_high", 0.0);
    x.decision = m.value("decision", "");
    x.guardrail = m.value("guardrail", "");
    x.note = m.value("note", "");
    v.metrics.push_back(x);
  }
  return v;
}

}  // namespace tunectl

#include "core/experiment.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/estimate.h"
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
    return Status::InvalidArgument(
        "--expect: \"" + raw +
        "\" is not understood; the forms are METRIC +N% or METRIC -N% (\"samples_per_s +10%\"), "
        "METRIC up|down, METRIC unchanged, or a level METRIC >= X, > X, <= X, < X "
        "(\"samples_per_s >= 300\")");
  };
  // A level may be written without blanks: "samples_per_s>=300".
  if (const size_t op = text.find_first_of("<>");
      op != std::string::npos && op > 0 && text.find_first_of(" \t") > op)
    text = text.substr(0, op) + " " + text.substr(op);
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
  } else if (rest[0] == '<' || rest[0] == '>') {
    const bool eq = rest.size() > 1 && rest[1] == '=';
    e.op = rest.substr(0, eq ? 2 : 1);
    e.direction = rest[0] == '>' ? 1 : -1;
    std::string num = Trim(rest.substr(e.op.size()));
    double v = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (num.empty() || ec != std::errc() || end != num.data() + num.size() || !std::isfinite(v))
      return Status::InvalidArgument("--expect: \"" + raw + "\": after " + e.op +
                                     " a number is expected (the level in the metric's unit), "
                                     "got \"" +
                                     num + "\"");
    e.level = v;
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

std::string FormatLevel(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string PrimaryEffect(const Verdict& v) {
  for (const auto& m : v.metrics)
    if (m.metric == v.primary && m.estimated)
      return FormatEffect(m.ratio) + " " + m.metric + " [" + FormatEffect(m.ci_low) + ", " +
             FormatEffect(m.ci_high) + "]";
  return "";
}

std::string FormatEffect(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (ratio - 1) * 100);
  return buf;
}

namespace {

std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

template <typename T>
const std::vector<T>& Of(const std::map<std::string, std::vector<T>>& m, const std::string& k) {
  static const std::vector<T> kEmpty;
  auto it = m.find(k);
  return it == m.end() ? kEmpty : it->second;
}

}  // namespace

std::string DecideEffect(double d, double se, double b, double b_eq, double margin_unit,
                         bool higher, double margin) {
  const double dg = higher ? d : -d;  // > 0 = better
  const double lo_g = dg - b * se, hi_g = dg + b * se;
  if (lo_g >= margin * margin_unit && dg >= margin_unit) return "improved";
  if (hi_g <= -margin * margin_unit && -dg >= margin_unit) return "regressed";
  if (d - b_eq * se >= -margin_unit && d + b_eq * se <= margin_unit) return "unchanged";
  return "inconclusive";
}

std::string DecideSplit(const SplitEstimate& e, double b, double b_eq, double margin_unit,
                        bool higher, double margin, std::string* why) {
  const std::string d =
      DecideEffect(e.delivered.est, e.delivered.se, b, b_eq, margin_unit, higher, margin);
  auto within = [&](const PartEstimate& x) {
    return std::fabs(x.est) + b_eq * x.se <= margin_unit;
  };
  if (d == "unchanged" && !(within(e.pace) && within(e.lost))) {
    if (why)
      *why = within(e.pace) ? "the delivered value is equivalent, but the time lost beyond the "
                              "pace (stalls, throttling) is not shown equivalent"
                            : "the delivered value is equivalent, but the pace is not shown "
                              "equivalent";
    return "inconclusive";
  }
  return d;
}

namespace {

MetricVerdict CompareMetric(const MetricSpec& m, const ArmData& C, const ArmData& V,
                            const VerdictOptions& o) {
  const std::vector<double>& c_all = Of(C.values, m.name);
  const std::vector<double>& v_all = Of(V.values, m.name);
  const std::vector<double>& c_pace = Of(C.pace, m.name);
  const std::vector<double>& v_pace = Of(V.pace, m.name);
  const std::vector<int>& c_pairs = Of(C.pairs, m.name);
  const std::vector<int>& v_pairs = Of(V.pairs, m.name);
  const std::vector<int64_t>& c_ids = Of(C.ids, m.name);
  const std::vector<int64_t>& v_ids = Of(V.ids, m.name);
  const std::vector<std::string>& c_how = Of(C.how, m.name);
  const std::vector<std::string>& v_how = Of(V.how, m.name);
  MetricVerdict r;
  r.metric = m.name;
  r.unit = m.unit;
  r.better = BetterName(m.better);
  r.role = RoleName(m.role);
  auto runs_of = [](const std::vector<double>& x, const std::vector<double>& pace,
                    const std::vector<int>& pairs, const std::vector<int64_t>& ids,
                    const std::vector<std::string>& how) {
    std::vector<ComparedRun> out;
    for (size_t i = 0; i < x.size(); ++i) {
      ComparedRun run;
      run.run = i < ids.size() ? ids[i] : 0;
      run.pair = i < pairs.size() ? pairs[i] : -1;
      run.value = x[i];
      if (i < pace.size()) run.pace = pace[i];
      if (i < how.size()) run.how = how[i];
      out.push_back(run);
    }
    return out;
  };
  r.control_runs = runs_of(c_all, c_pace, c_pairs, c_ids, c_how);
  r.variant_runs = runs_of(v_all, v_pace, v_pairs, v_ids, v_how);
  for (const auto* a : {&C, &V})
    if (auto it = a->resolution.find(m.name); it != a->resolution.end())
      r.resolution = std::max(r.resolution, it->second);

  auto positive = [](const std::vector<double>& x) {
    return std::all_of(x.begin(), x.end(), [](double v) { return v > 0 && std::isfinite(v); });
  };
  const bool logs_ok = positive(c_all) && positive(v_all) && positive(c_pace) && positive(v_pace);
  const bool paired = o.paired && !c_all.empty() && !v_all.empty() &&
                      c_pairs.size() == c_all.size() && v_pairs.size() == v_all.size();
  const int needed =
      o.design ? std::max(kFirstLookPairs, o.design->min_pairs) : std::max(2, o.min_runs);
  std::vector<double> c, v;    // the compared runs' values
  std::vector<double> dp, dl;  // paired: per pair, log pace ratio and log lost-part ratio
  if (paired) {
    // Every complete pair counts: a run whose partner has no value (failed, no sample) is the
    // only one not compared.
    std::map<int, size_t> ci;
    for (size_t i = 0; i < c_all.size(); ++i) ci[c_pairs[i]] = i;
    std::set<size_t> partnered_c;
    for (size_t i = 0; i < v_all.size(); ++i) {
      auto it = ci.find(v_pairs[i]);
      if (it == ci.end()) {
        r.variant_runs[i].compared = false;
        r.variant_runs[i].why = "its pair's control run has no value";
        continue;
      }
      const size_t j = it->second;
      partnered_c.insert(j);
      c.push_back(c_all[j]);
      v.push_back(v_all[i]);
      if (logs_ok) {
        const double cp = j < c_pace.size() ? c_pace[j] : c_all[j];
        const double vp = i < v_pace.size() ? v_pace[i] : v_all[i];
        dp.push_back(std::log(vp / cp));
        dl.push_back(std::log(v_all[i] / c_all[j]) - dp.back());
      }
    }
    for (size_t i = 0; i < c_all.size(); ++i)
      if (!partnered_c.count(i)) {
        r.control_runs[i].compared = false;
        r.control_runs[i].why = "its pair's variant run has no value";
      }
    r.method = "split paired: Huber pace + mean lost time, on log ratios";
    r.note = "paired: " + std::to_string(c.size()) + " control/variant pairs";
  } else {
    c = c_all;
    v = v_all;
    r.method = "Welch t on logs";
  }
  r.n_control = static_cast<int>(c.size());
  r.n_variant = static_cast<int>(v.size());
  r.control_median = Median(c);
  r.variant_median = Median(v);
  if (!logs_ok) {
    r.decision = "inconclusive";
    if (m.role == MetricRole::kGuardrail) r.guardrail = "inconclusive";
    r.note = "values <= 0: no ratio can be estimated (ratios are compared on the log scale)";
    return r;
  }
  const int have = paired ? static_cast<int>(c.size()) : std::min(r.n_control, r.n_variant);
  // The estimate on the log scale, its standard error and degrees of freedom.
  double d = 0, se = 0, df = 0;
  SplitEstimate split;
  if (paired) {
    if (have >= 2) {
      split = SplitPaired(dp, dl);
      d = split.delivered.est;
      se = split.delivered.se;
      df = have - 1;
      r.split = true;
      r.downweighted = split.downweighted;
    }
  } else if (have >= 2) {
    std::vector<double> lc, lv;
    for (double x : c) lc.push_back(std::log(x));
    for (double x : v) lv.push_back(std::log(x));
    const WelchResult w = Welch(lc, lv);
    d = w.diff, se = w.se, df = w.df;
  }
  if (have < 2) {
    r.decision = "inconclusive";
    if (m.role == MetricRole::kGuardrail) r.guardrail = "inconclusive";
    r.note = paired ? std::to_string(have) + " complete pair(s): no estimate yet"
                    : "too few runs with a value (control " + std::to_string(r.n_control) +
                          ", variant " + std::to_string(r.n_variant) + "): no estimate yet";
    return r;
  }
  double b = o.critical > 0 ? o.critical : StudentTQuantile(1 - o.alpha / 2, df);
  double b_eq = StudentTQuantile(1 - o.alpha, df);
  if (o.design && have >= needed) {
    // The boundary calibrated for the statistic and the pairs actually compared.
    SequentialOptions design = *o.design;
    design.paired = paired;
    b = Boundary(design, have);
    b_eq = EquivalenceBoundary(design, have);
  }
  r.estimated = true;
  r.tested = true;
  r.critical = b;
  r.df = df;
  const double t = se > 0 ? d / se : 0;
  r.p_value = se > 0 ? RegularizedBeta(df / (df + t * t), df / 2, 0.5) : (d == 0 ? 1 : 0);
  if (o.cross_checks) r.mw_p = MannWhitney(c, v).p;
  if (o.cross_checks && r.n_control >= 10 && r.n_variant >= 10) {
    Interval boot = BootstrapRatioOfMediansBca(c, v, 0.05, 4000, 1);
    r.boot_low = boot.lo;
    r.boot_high = boot.hi;
  }
  r.ratio = std::exp(d);
  r.ci_low = std::exp(d - b * se);
  r.ci_high = std::exp(d + b * se);
  r.ci90_low = std::exp(d - b_eq * se);
  r.ci90_high = std::exp(d + b_eq * se);
  if (r.split) {
    for (auto [part, est] : {std::pair{&r.pace, &split.pace}, std::pair{&r.lost, &split.lost}})
      *part = {std::exp(est->est), std::exp(est->est - b * est->se),
               std::exp(est->est + b * est->se)};
    if (split.downweighted > 0)
      r.note += "; " + std::to_string(split.downweighted) +
                " pair(s) with a pace far from the others (a slow node?) count with bounded "
                "weight";
  }
  const double margin_unit = std::log1p(m.min_effect), tol_unit = std::log1p(m.tolerance);
  const bool higher = m.better == Better::kHigher;
  const double dg = higher ? d : -d;  // > 0 = better
  if (have < needed) {
    r.decision = "inconclusive";
    if (m.role == MetricRole::kGuardrail) r.guardrail = "inconclusive";
    r.note = std::to_string(have) + (paired ? " pair(s)" : " run(s) per side") +
             "; a decision needs " + std::to_string(needed) + " (the estimate is a fixed-sample " +
             "95% CI)";
    return r;
  }
  std::string why;
  r.decision = r.split ? DecideSplit(split, b, b_eq, margin_unit, higher, o.margin, &why)
                       : DecideEffect(d, se, b, b_eq, margin_unit, higher, o.margin);
  if (!why.empty()) r.note += "; " + why;
  if (r.decision == "inconclusive" && why.empty() && (dg - b * se > 0 || dg + b * se < 0))
    r.note +=
        "; a real change, not shown to reach the minimum effect " + FormatEffect(1 + m.min_effect);
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
      r.note = "worse by up to " + FormatEffect(std::exp(worst)) + " (allowed " +
               FormatEffect(std::exp(allowed)) + ")";
  }
  // Resolution: a metric printed more coarsely than the effect it must resolve cannot be called
  // either way (a 0.02 → 0.01 ms step is the printing, not the job); nor can runs that do not vary.
  const double need =
      m.role == MetricRole::kGuardrail && m.tolerance > 0 ? m.tolerance : m.min_effect;
  const double level = std::fabs(r.control_median);
  std::string coarse;
  if (r.resolution > 0 && level > 0 && r.resolution / level > need) {
    coarse = "below the metric's resolution: values are printed in steps of " + Num(r.resolution) +
             (m.unit.empty() ? "" : " " + m.unit) + " (" +
             FormatEffect(1 + r.resolution / level).substr(1) + " of the control's " + Num(level) +
             "), coarser than the " + FormatEffect(1 + need).substr(1) +
             " it must resolve; log it with more digits";
  } else if (se == 0 && d != 0) {
    coarse =
        "the runs do not vary (zero spread): the values are quantised or constant, so the "
        "noise cannot be estimated";
  }
  if (!coarse.empty()) {
    r.decision = "inconclusive";
    if (m.role == MetricRole::kGuardrail) r.guardrail = "inconclusive";
    r.note = coarse;
  }
  if (!r.note.empty() && r.note.rfind("; ", 0) == 0) r.note = r.note.substr(2);
  return r;
}

// Variant failures with the same cause, twice, when the control never failed that way.
std::string RepeatedCause(const ArmData& control, const ArmData& variant) {
  std::map<std::string, int> n;
  for (const auto& c : variant.causes)
    if (!c.empty()) ++n[c];
  for (const auto& [cause, count] : n)
    if (count >= 2 && std::count(control.causes.begin(), control.causes.end(), cause) == 0)
      return cause;
  return "";
}

}  // namespace

Verdict ComputeVerdict(const WorkloadSpec& spec, const ArmData& control, const ArmData& variant,
                       const std::optional<Expectation>& expectation, const VerdictOptions& o) {
  Verdict out;
  out.critical = o.critical;
  for (const auto& m : spec.metrics) out.metrics.push_back(CompareMetric(m, control, variant, o));
  const MetricVerdict* primary = nullptr;
  for (const auto& mv : out.metrics)
    if (mv.role == "primary") primary = &mv;
  if (!primary && !out.metrics.empty()) {
    primary = &out.metrics[0];
    out.reasons.push_back("no primary metric declared; decided on " + primary->metric);
  }
  out.primary = primary ? primary->metric : "";
  out.decision = primary ? primary->decision : "inconclusive";
  if (primary && primary->critical > 0) out.critical = primary->critical;

  for (const auto* arm : {&control, &variant}) {
    for (const auto& x : arm->excluded) out.reasons.push_back("not compared: " + x);
    for (const auto& x : arm->notes) out.reasons.push_back("counted with a note: " + x);
    for (const auto& x : arm->nonfinite) out.reasons.push_back(x);
  }
  if (variant.failed_runs > 0) {
    out.reasons.push_back(std::to_string(variant.failed_runs) +
                          " variant run(s) failed: " + Join(variant.failures, "; "));
    if (const std::string cause = RepeatedCause(control, variant); !cause.empty()) {
      out.decision = "regressed";
      out.stopped = "failed: " + cause;
      out.reasons.insert(
          out.reasons.begin(),
          "failed: " + cause + " in " +
              std::to_string(std::count(variant.causes.begin(), variant.causes.end(), cause)) +
              " variant runs, never in the control's");
    } else if (out.decision == "improved") {
      out.decision = "inconclusive";
      out.reasons.push_back("a variant run failed: not improved until its cause is known");
    }
  }
  // Runs with something off are counted and reported; they decide nothing on their own: their
  // delivered values carry what happened to them.
  out.control_unusable = control.Unusable();
  out.control_finished = control.runs;
  out.variant_unusable = variant.Unusable();
  out.variant_finished = variant.runs;
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
    if (!mv || !mv->estimated) {
      out.hypothesis = "inconclusive";
      out.hypothesis_note = "no estimate of " + expectation->metric + " yet (" +
                            std::to_string(mv ? std::min(mv->n_control, mv->n_variant) : 0) +
                            " compared run(s) per side): nothing was measured to judge it by";
    } else if (!expectation->op.empty()) {
      // The variant's level: the control's median moved by the ratio, with the ratio's CI.
      const double at = mv->control_median * mv->ratio, lo = mv->control_median * mv->ci_low,
                   hi = mv->control_median * mv->ci_high, t = expectation->level;
      const std::string& op = expectation->op;
      auto holds = [&](double x) {
        return op == ">=" ? x >= t : op == ">" ? x > t : op == "<=" ? x <= t : x < t;
      };
      const bool all = holds(lo) && holds(hi), none = !holds(lo) && !holds(hi);
      out.hypothesis = all ? "confirmed" : none ? "refuted" : "inconclusive";
      out.hypothesis_note = "expected " + op + " " + FormatLevel(t) + ", the variant's level " +
                            FormatLevel(at) + " [" + FormatLevel(lo) + ", " + FormatLevel(hi) +
                            "] (the control's median " + FormatLevel(mv->control_median) +
                            " times the ratio and its 95 % CI)" +
                            (all || none ? "" : ": the CI spans the level; add runs");
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

namespace {

// The primary's estimate after a sequential stop, adjusted for it: median-unbiased under the
// sample-mean ordering (core/estimate.h), simulated with this design's own stopping rule on the
// primary (the boundary for n pairs, the margin and the minimum effect). The interval's sd is
// widened by t(n-1)/z for the plug-in sd. Paired comparisons only.
void AdjustForEarlyStopping(const WorkloadSpec& spec, const SequentialOptions& design,
                            const VerdictOptions& o, Verdict* v) {
  for (auto& m : v->metrics) {
    if (m.metric != v->primary || !m.split || !m.estimated) continue;
    const MetricSpec* ms = spec.FindMetric(m.metric);
    int n = 0;
    for (const auto& r : m.variant_runs) n += r.compared;
    if (!ms || n < design.min_pairs || m.critical <= 0) return;
    const double mean = std::log(m.ratio);
    const double se = (std::log(m.ci_high) - mean) / m.critical;
    const double sd = se * std::sqrt(static_cast<double>(n));
    if (!(sd > 1e-9 * std::max(1.0, std::fabs(mean)))) return;  // no spread: nothing to adjust
    SequentialOptions paired = design;
    paired.paired = true;
    std::vector<double> bound(static_cast<size_t>(design.max_pairs) + 1, 0), eq = bound;
    for (int k = paired.min_pairs; k <= design.max_pairs; ++k) {
      bound[static_cast<size_t>(k)] = Boundary(paired, k);
      eq[static_cast<size_t>(k)] = EquivalenceBoundary(paired, k);
    }
    const double unit = std::log1p(ms->min_effect);
    const bool higher = ms->better == Better::kHigher;
    const StopRule stop = [&](double mu, double s, int k) {
      return DecideEffect(mu, s, bound[static_cast<size_t>(k)], eq[static_cast<size_t>(k)], unit,
                          higher, o.margin) != "inconclusive";
    };
    const int first = paired.min_pairs, last = std::max(design.max_pairs, first);
    const SequentialEstimate e = MedianUnbiasedEstimate(mean, sd, n, first, last, stop);
    const double widen = StudentTQuantile(0.975, n - 1) / NormalQuantile(0.975);
    const SequentialEstimate ci = MedianUnbiasedEstimate(mean, sd * widen, n, first, last, stop);
    if (!e.valid || !ci.valid) return;
    m.adjusted = true;
    m.adj_ratio = std::exp(e.estimate);
    m.adj_low = std::exp(std::min(ci.ci_low, e.estimate));
    m.adj_high = std::exp(std::max(ci.ci_high, e.estimate));
    return;
  }
}

}  // namespace

SequentialStep EvaluateSequential(const WorkloadSpec& spec, const ArmData& control,
                                  const ArmData& variant,
                                  const std::optional<Expectation>& expectation,
                                  const SequentialOptions& design, const VerdictOptions& opts) {
  SequentialStep step;
  const int finished = std::min(control.runs, variant.runs);
  const bool at_cap = finished >= design.max_pairs;
  VerdictOptions o = opts;
  SequentialOptions d = design;
  d.min_pairs = std::max(kFirstLookPairs, d.min_pairs);
  o.design = &d;
  step.verdict = ComputeVerdict(spec, control, variant, expectation, o);
  Verdict& v = step.verdict;
  v.pairs = UsablePairs(spec, control, variant);
  v.finished_pairs = finished;
  v.min_pairs = d.min_pairs;
  v.max_pairs = design.max_pairs;
  if (at_cap || !v.stopped.empty()) {
    step.stop = true;
  } else if (v.pairs >= d.min_pairs) {
    step.stop = v.decision != "inconclusive";
  }
  // Only a stop before the cap selects the estimate: one that ran to the cap keeps its own.
  if (step.stop && !at_cap && v.stopped.empty() && opts.adjust_estimate)
    AdjustForEarlyStopping(spec, d, o, &v);
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
  j["finished_pairs"] = v.finished_pairs;
  j["min_pairs"] = v.min_pairs;
  j["max_pairs"] = v.max_pairs;
  j["critical"] = v.critical;
  j["drift"] = v.drift;
  j["unusable"] = {{"control", v.control_unusable},
                   {"control_finished", v.control_finished},
                   {"variant", v.variant_unusable},
                   {"variant_finished", v.variant_finished}};
  j["stopped"] = v.stopped;
  j["advice"] = v.advice;
  if (!v.correction.empty()) {
    j["correction"] = v.correction;
    j["unadjusted_decision"] = v.unadjusted_decision;
    if (v.adjusted_p) j["adjusted_p"] = *v.adjusted_p;
  }
  auto& ms = j["metrics"] = nlohmann::ordered_json::array();
  for (const auto& m : v.metrics) {
    // No figure without an estimate: null where none was made, never a placeholder.
    auto est = [&m](double x) { return m.estimated ? nlohmann::ordered_json(x) : nullptr; };
    ms.push_back({{"metric", m.metric},
                  {"unit", m.unit},
                  {"better", m.better},
                  {"role", m.role},
                  {"n_control", m.n_control},
                  {"n_variant", m.n_variant},
                  {"control_median", m.n_control ? nlohmann::ordered_json(m.control_median)
                                                 : nlohmann::ordered_json(nullptr)},
                  {"variant_median", m.n_variant ? nlohmann::ordered_json(m.variant_median)
                                                 : nlohmann::ordered_json(nullptr)},
                  {"estimated", m.estimated},
                  {"ratio", est(m.ratio)},
                  {"ci_low", est(m.ci_low)},
                  {"ci_high", est(m.ci_high)},
                  {"ci90_low", est(m.ci90_low)},
                  {"ci90_high", est(m.ci90_high)},
                  {"p_value", m.tested ? nlohmann::ordered_json(m.p_value) : nullptr},
                  {"mw_p", m.tested && m.mw_p < 1 ? nlohmann::ordered_json(m.mw_p) : nullptr},
                  {"boot_low", m.boot_high > 0 ? nlohmann::ordered_json(m.boot_low) : nullptr},
                  {"boot_high", m.boot_high > 0 ? nlohmann::ordered_json(m.boot_high) : nullptr},
                  {"decision", m.decision},
                  {"guardrail", m.guardrail},
                  {"note", m.note},
                  {"method", m.method},
                  {"critical", m.estimated ? nlohmann::ordered_json(m.critical) : nullptr},
                  {"df", m.estimated ? nlohmann::ordered_json(m.df) : nullptr},
                  {"resolution", m.resolution}});
    if (m.split && m.estimated) {
      for (auto [key, part] : {std::pair{"pace", &m.pace}, std::pair{"lost", &m.lost}})
        ms.back()[key] = {
            {"ratio", part->ratio}, {"ci_low", part->ci_low}, {"ci_high", part->ci_high}};
      ms.back()["downweighted"] = m.downweighted;
    }
    auto& x = ms.back();
    if (m.adjusted)
      x["adjusted"] = {{"ratio", m.adj_ratio},
                       {"ci_low", m.adj_low},
                       {"ci_high", m.adj_high},
                       {"method", "median-unbiased for early stopping (sample-mean ordering)"}};
    for (const auto& [key, runs] :
         {std::pair{"control_runs", &m.control_runs}, std::pair{"variant_runs", &m.variant_runs}}) {
      auto& arr = x[key] = nlohmann::ordered_json::array();
      for (const auto& r : *runs) {
        nlohmann::ordered_json e = {
            {"run", r.run}, {"pair", r.pair}, {"value", r.value}, {"compared", r.compared}};
        if (r.pace) e["pace"] = *r.pace;
        if (!r.how.empty()) e["how"] = r.how;
        if (!r.why.empty()) e["why"] = r.why;
        arr.push_back(e);
      }
    }
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
  v.finished_pairs = j.value("finished_pairs", v.pairs);
  v.min_pairs = j.value("min_pairs", 0);
  if (auto u = j.find("unusable"); u != j.end() && u->is_object()) {
    v.control_unusable = u->value("control", 0);
    v.control_finished = u->value("control_finished", 0);
    v.variant_unusable = u->value("variant", 0);
    v.variant_finished = u->value("variant_finished", 0);
  }
  v.stopped = j.value("stopped", "");
  v.advice = j.value("advice", std::vector<std::string>{});
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
    auto num = [&m](const char* key, double fallback) {
      auto it = m.find(key);
      return it != m.end() && it->is_number() ? it->get<double>() : fallback;
    };
    x.control_median = num("control_median", 0.0);
    x.variant_median = num("variant_median", 0.0);
    x.ratio = num("ratio", 1.0);
    x.ci_low = num("ci_low", 1.0);
    x.ci_high = num("ci_high", 1.0);
    x.ci90_low = num("ci90_low", 1.0);
    x.ci90_high = num("ci90_high", 1.0);
    x.p_value = num("p_value", 1.0);
    x.mw_p = num("mw_p", 1.0);
    x.boot_low = num("boot_low", 0.0);
    x.boot_high = num("boot_high", 0.0);
    if (m.contains("estimated")) {
      x.estimated = m.value("estimated", false);
      x.tested = m.contains("p_value") && m["p_value"].is_number();
    } else {
      // Stored before `estimated` existed: the placeholder was ratio 1 with a CI of [1, 1].
      x.estimated =
          x.n_control > 0 && x.n_variant > 0 && !(x.ratio == 1 && x.ci_low == 1 && x.ci_high == 1);
      x.tested = x.estimated;
    }
    x.decision = m.value("decision", "");
    x.guardrail = m.value("guardrail", "");
    x.note = m.value("note", "");
    x.method = m.value("method", "");
    x.critical = num("critical", 0.0);
    x.df = num("df", 0.0);
    x.resolution = num("resolution", 0.0);
    for (auto [key, part] : {std::pair{"pace", &x.pace}, std::pair{"lost", &x.lost}})
      if (auto p = m.find(key); p != m.end() && p->is_object()) {
        x.split = true;
        part->ratio = p->value("ratio", 1.0);
        part->ci_low = p->value("ci_low", 1.0);
        part->ci_high = p->value("ci_high", 1.0);
      }
    x.downweighted = m.value("downweighted", 0);
    if (auto a = m.find("adjusted"); a != m.end() && a->is_object()) {
      x.adjusted = true;
      x.adj_ratio = a->value("ratio", 1.0);
      x.adj_low = a->value("ci_low", 1.0);
      x.adj_high = a->value("ci_high", 1.0);
    }
    for (auto [key, runs] :
         {std::pair{"control_runs", &x.control_runs}, std::pair{"variant_runs", &x.variant_runs}}) {
      for (const auto& e : m.value(key, nlohmann::json::array())) {
        ComparedRun r;
        r.run = e.value("run", int64_t{0});
        r.pair = e.value("pair", -1);
        r.value = e.value("value", 0.0);
        if (e.contains("pace") && e["pace"].is_number()) r.pace = e["pace"].get<double>();
        r.how = e.value("how", "");
        r.compared = e.value("compared", true);
        r.why = e.value("why", "");
        runs->push_back(r);
      }
    }
    v.metrics.push_back(x);
  }
  return v;
}

}  // namespace tunectl

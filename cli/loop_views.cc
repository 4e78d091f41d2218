#include <cstdio>
#include <map>

#include "cli/views.h"
#include "core/experiment.h"
#include "core/spec.h"
#include "core/template.h"

namespace tunectl {
namespace {

// Where a figure would be an estimate and none was made: never a placeholder number.
constexpr const char* kNoEstimate = "—";

ojson ChangeJson(const v1::Change& c, const ParamTypes& types) {
  ojson j;
  j["description"] = c.description();
  j["from"] = ParamsJson(c.from(), types);
  j["to"] = ParamsJson(c.to(), types);
  j["coupled"] = c.coupled();
  return j;
}

std::string ShellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string FormatP(double p) {
  char buf[32];
  if (p < 1e-4)
    std::snprintf(buf, sizeof buf, "%.1e", p);
  else
    std::snprintf(buf, sizeof buf, "%.4f", p);
  return buf;
}

std::string FormatCi(double lo, double hi) {
  return "[" + FormatEffect(lo) + ", " + FormatEffect(hi) + "]";
}

ojson HypothesisJson(const v1::Hypothesis& h, const ParamTypes& types) {
  ojson j;
  j["id"] = h.id();
  j["workload"] = h.workload();
  j["baseline_id"] = h.baseline_id();
  j["change"] = ChangeJson(h.change(), types);
  j["expect"] = h.expect();
  j["earlier"] = ojson(std::vector<std::string>(h.earlier().begin(), h.earlier().end()));
  j["evidence"] = h.evidence();
  j["statement"] = h.statement();
  j["locked"] = h.locked();
  j["experiment_id"] = IdOrNull(h.experiment_id());
  j["actor"] = h.actor();
  j["created_at"] = h.created_at();
  return j;
}

Table HypothesesTable(const v1::ListHypothesesResponse& r) {
  Table t{{"id", "workload", "baseline", "change", "expect", "experiment", "statement"}, {}};
  for (const auto& h : r.hypotheses())
    t.rows.push_back({std::to_string(h.id()), h.workload(), std::to_string(h.baseline_id()),
                      h.change().description(), h.expect(),
                      h.experiment_id() ? std::to_string(h.experiment_id()) : "-", h.statement()});
  return t;
}

std::string HypothesisDetail(const v1::Hypothesis& h) {
  std::string out = "Hypothesis " + std::to_string(h.id()) + "  workload " + h.workload() +
                    "  against baseline " + std::to_string(h.baseline_id()) + "\n";
  out += "statement: " + (h.statement().empty() ? std::string("-") : h.statement()) + "\n";
  out += "evidence:  " + (h.evidence().empty() ? std::string("-") : h.evidence()) + "\n";
  out += "change:    " + h.change().description() + "\n";
  out += "expect:    " + h.expect() + "\n";
  out += "status:    " +
         (h.locked() ? "locked, tested by experiment " + std::to_string(h.experiment_id())
                     : std::string("open (run: tunectl experiment run --hypothesis ") +
                           std::to_string(h.id()) + ")") +
         "\n";
  out += "by " + h.actor() + " at " + h.created_at() + "\n";
  if (h.earlier_size() > 0) {
    out += "tried before on the same parameter:\n";
    for (const auto& e : h.earlier()) out += "  " + e + "\n";
  }
  return out;
}

ojson AdvisorJson(const v1::AdvisorReport& r) {
  ojson j;
  j["baseline_id"] = r.baseline_id();
  j["workload"] = r.workload();
  ojson advice = ojson::array();
  for (const auto& a : r.advice()) {
    ojson x;
    x["rule"] = a.rule();
    x["bottleneck"] = a.bottleneck();
    x["score"] = a.score();
    x["evidence"] = ojson(std::vector<std::string>(a.evidence().begin(), a.evidence().end()));
    ojson changes = ojson::array();
    for (const auto& c : a.changes())
      changes.push_back({{"param", c.param()}, {"value", c.value()}, {"why", c.why()}});
    x["changes"] = changes;
    x["missing_params"] = a.missing_params();
    x["direction"] = a.direction();
    x["expected"] = a.expected();
    x["expect"] = a.expect_arg();
    x["command"] = a.command();
    advice.push_back(x);
  }
  j["advice"] = advice;
  ojson nc = ojson::array();
  for (const auto& n : r.not_checked()) nc.push_back({{"rule", n.rule()}, {"needs", n.needs()}});
  j["not_checked"] = nc;
  j["checked_fine"] =
      ojson(std::vector<std::string>(r.checked_fine().begin(), r.checked_fine().end()));
  return j;
}

ojson AuditHeadJson(const v1::AuditReport& r) {
  ojson j = {{"seq", r.head_seq()}, {"hash", r.head_hash()}, {"sealed_at", r.head_sealed_at()}};
  if (!r.head_signature().empty()) {
    j["signature"] = r.head_signature();
    j["public_key"] = r.public_key();
  }
  return j;
}

ojson AuditJson(const v1::AuditReport& r) {
  ojson j;
  j["ok"] = r.ok();
  j["links"] = r.links();
  j["rows"] = r.rows();
  j["pending"] = r.pending();
  j["head"] = AuditHeadJson(r);
  if (!r.ok())
    j["broken"] = {{"seq", r.broken().seq()},
                   {"source", r.broken().source()},
                   {"row_id", r.broken().row_id()},
                   {"kind", r.broken().kind()},
                   {"detail", r.broken().detail()}};
  else
    j["broken"] = nullptr;
  return j;
}

std::string AuditDetail(const v1::AuditReport& r) {
  std::string out;
  if (r.ok())
    out = "audit chain OK: " + std::to_string(r.links()) +
          " link(s) cover the audit trail and the "
          "tuning log";
  else
    out = "audit chain BROKEN at " +
          (r.broken().seq() > 0 ? "link " + std::to_string(r.broken().seq())
                                : std::string("a row outside the chain")) +
          ": " + r.broken().kind() + " — " + r.broken().detail();
  out += "\n";
  if (r.pending() > 0)
    out += std::to_string(r.pending()) +
           " newer row(s) not sealed yet (the server seals about once "
           "a second)\n";
  out += "head: link " + std::to_string(r.head_seq()) + " " + r.head_hash() +
         (r.head_sealed_at().empty() ? "" : " sealed " + r.head_sealed_at()) + "\n";
  out += r.public_key().empty()
             ? std::string("the server signs no heads (no --audit-key)\n")
             : "heads signed by the server's Ed25519 key " + r.public_key() + "\n";
  return out;
}

Table AuditExportTable(const v1::ExportAuditResponse& r) {
  Table t{{"seq", "source", "id", "at", "actor", "kind", "subject", "hash"}, {}};
  for (const auto& e : r.entries()) {
    std::string subject = e.source() == "log" ? "workload " + e.workload_id() : e.entity();
    if (e.source() == "log" && !e.experiment_id().empty())
      subject += " experiment " + e.experiment_id();
    if (e.source() != "log" && !e.entity_id().empty() && e.entity_id() != "0")
      subject += " " + e.entity_id();
    t.rows.push_back({e.seq() > 0 ? std::to_string(e.seq()) : "-", e.source(),
                      std::to_string(e.id()), e.at(), e.actor(), e.kind(), subject,
                      e.hash().empty() ? "(not sealed)" : e.hash().substr(0, 12)});
  }
  return t;
}

Table AuditExportCsv(const v1::ExportAuditResponse& r) {
  Table t{{"seq", "source", "id", "at", "at_us", "actor", "kind", "entity", "entity_id",
           "workload_id", "experiment_id", "payload", "hash", "prev_hash"},
          {}};
  for (const auto& e : r.entries())
    t.rows.push_back({e.seq() > 0 ? std::to_string(e.seq()) : "", e.source(),
                      std::to_string(e.id()), e.at(), std::to_string(e.at_us()), e.actor(),
                      e.kind(), e.entity(), e.entity_id(), e.workload_id(), e.experiment_id(),
                      e.payload(), e.hash(), e.prev_hash()});
  return t;
}

ojson AuditEntryJson(const v1::AuditEntry& e) {
  const bool sealed = e.seq() > 0;
  ojson j;
  j["seq"] = sealed ? ojson(e.seq()) : ojson(nullptr);
  j["source"] = e.source();
  j["id"] = e.id();
  j["at"] = e.at();
  j["at_us"] = e.at_us();
  j["actor"] = e.actor();
  j["kind"] = e.kind();
  j["entity"] = e.entity();
  j["entity_id"] = e.entity_id();
  j["workload_id"] = e.workload_id();
  j["experiment_id"] = e.experiment_id();
  j["payload"] = e.payload();
  j["hash"] = sealed ? ojson(e.hash()) : ojson(nullptr);
  j["prev_hash"] = sealed ? ojson(e.prev_hash()) : ojson(nullptr);
  return j;
}

ojson GoalJson(const v1::Goal& g) {
  ojson j;
  j["workload"] = g.workload();
  j["metric"] = g.metric();
  j["target"] = g.target();
  j["better"] = g.better();
  j["guardrails"] = ojson(std::vector<std::string>(g.guardrails().begin(), g.guardrails().end()));
  ojson cur;
  cur["config_version"] = g.config_version();
  cur["baseline"] = g.baseline_id();
  if (g.measured()) {
    cur["level"] = g.level();
    cur["ci"] = {g.ci_low(), g.ci_high()};
    cur["n"] = g.n();
    cur["attained"] = g.attained();
    cur["reached"] = g.reached();
    cur["reached_surely"] = g.reached_surely();
  } else {
    cur["level"] = nullptr;
  }
  j["current"] = cur;
  ojson steps = ojson::array();
  for (const auto& s : g.steps()) {
    ojson x = {{"version", s.version()}, {"change", s.change()}, {"experiment", s.experiment_id()}};
    if (s.measured()) {
      x["ratio"] = s.ratio();
      x["ci"] = {s.ci_low(), s.ci_high()};
    } else {
      x["ratio"] = nullptr;
    }
    steps.push_back(x);
  }
  j["steps"] = steps;
  j["moved"] = g.moved();
  j["summary"] = g.summary();
  j["set_by"] = g.actor();
  j["set_at"] = g.created_at();
  return j;
}

std::string GoalDetail(const v1::Goal& g) {
  auto effect = [](double r) { return FormatEffect(r); };
  std::string out = "Goal of " + g.workload() + ": " + g.metric() + " " +
                    (g.better() == "lower" ? "down to " : "up to ") + FormatNumber(g.target()) +
                    "\n";
  for (const auto& x : g.guardrails()) out += "guardrail: " + x + "\n";
  out += "now:       " + g.summary() + "\n";
  if (g.measured())
    out += "           (baseline " + std::to_string(g.baseline_id()) + ": mean of " +
           std::to_string(g.n()) + " runs, 95 % t CI)\n";
  if (g.steps().empty()) {
    out += "frozen changes: none yet\n";
  } else {
    Table t;
    t.headers = {"VERSION", "CHANGE", "EXPERIMENT", g.metric()};
    for (const auto& s : g.steps())
      t.rows.push_back(
          {"v" + std::to_string(s.version()), s.change(), std::to_string(s.experiment_id()),
           s.measured()
               ? effect(s.ratio()) + " [" + effect(s.ci_low()) + ", " + effect(s.ci_high()) + "]"
               : std::string("not measured")});
    out += "frozen changes (each as its experiment measured it; together " + effect(g.moved()) +
           "):\n" + RenderTable(t);
  }
  out += "set by " + g.actor() + " at " + g.created_at() + "\n";
  return out;
}

std::string AdvisorDetail(const v1::AdvisorReport& r) {
  std::string out =
      "Advice on baseline " + std::to_string(r.baseline_id()) + " (" + r.workload() + "): " +
      (r.advice().empty() ? std::string("no bottleneck crossed its threshold")
                          : std::to_string(r.advice_size()) + " likely bottleneck" +
                                (r.advice_size() == 1 ? "" : "s") + ", most likely first") +
      "\n";
  int i = 0;
  for (const auto& a : r.advice()) {
    out += "\n" + std::to_string(++i) + ". " + a.bottleneck() + "  [" + a.rule() + "]\n";
    for (const auto& e : a.evidence()) out += "   evidence: " + e + "\n";
    for (const auto& c : a.changes())
      out += "   try:      " + c.param() + "=" + c.value() +
             (c.why().empty() ? "" : "  (" + c.why() + ")") + "\n";
    if (a.changes().empty() && !a.missing_params().empty())
      out += "   try:      nothing declared to vary: " + a.missing_params() + "\n";
    if (!a.expected().empty()) out += "   expected: " + a.expected() + "\n";
    if (!a.command().empty()) out += "   record:   " + a.command() + "\n";
  }
  if (!r.checked_fine().empty()) {
    out += "\nchecked, below threshold:\n";
    for (const auto& f : r.checked_fine()) out += "  - " + f + "\n";
  }
  if (!r.not_checked().empty()) {
    out += "\nnot checked (a figure is missing):\n";
    for (const auto& n : r.not_checked()) out += "  - " + n.rule() + ": needs " + n.needs() + "\n";
  }
  return out;
}

ojson VerdictOf(const v1::Experiment& e) {
  if (e.verdict_json().empty()) return ojson::object();
  ojson v = ojson::parse(e.verdict_json(), nullptr, false);
  return v.is_object() ? v : ojson::object();
}

namespace {

// "2 done, 1 running, 3 queued" (a count of 0 left out; "none yet" when all are 0).
std::string ArmLine(const v1::ArmProgress& a) {
  std::vector<std::string> parts;
  if (a.succeeded()) parts.push_back(std::to_string(a.succeeded()) + " done");
  if (a.failed()) parts.push_back(std::to_string(a.failed()) + " failed");
  if (a.active()) parts.push_back(std::to_string(a.active()) + " running");
  if (a.queued()) parts.push_back(std::to_string(a.queued()) + " queued");
  if (a.cancelled()) parts.push_back(std::to_string(a.cancelled()) + " cancelled");
  std::string out;
  for (const auto& x : parts) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "none yet" : out;
}

ojson ArmJson(const v1::ArmProgress& a) {
  return {{"queued", a.queued()}, {"active", a.active()},       {"succeeded", a.succeeded()},
          {"failed", a.failed()}, {"cancelled", a.cancelled()}, {"compared", a.compared()}};
}

// The primary metric's interim estimate in one phrase, or why there is none yet.
std::string InterimPhrase(const v1::Experiment& e) {
  const std::string look = std::to_string(e.interim_pairs()) + " usable pair(s), first look at " +
                           std::to_string(e.min_pairs());
  for (const auto& m : e.interim()) {
    if (m.metric() != e.primary() || !m.estimated()) continue;
    return m.metric() + " " + FormatEffect(m.ratio()) + " " + FormatCi(m.ci_low(), m.ci_high()) +
           " so far on " + look;
  }
  return "no estimate yet: " + look;
}

}  // namespace

ojson ExperimentJson(const v1::Experiment& e, const ParamTypes& types) {
  const ojson verdict = VerdictOf(e);
  ojson j;
  j["id"] = e.id();
  j["workload"] = e.workload();
  j["baseline_id"] = e.baseline_id();
  j["config_version"] = e.config_version();
  j["spec_revision"] = e.spec_revision();
  j["batch_id"] = IdOrNull(e.batch_id());
  j["change"] = ChangeJson(e.change(), types);
  j["hypothesis_id"] = IdOrNull(e.hypothesis_id());
  j["hypothesis_expect"] = TextOrNull(e.hypothesis_expect());
  j["repeats"] = e.repeats();
  j["state"] = e.state();
  j["decision"] = TextOrNull(e.decision());
  j["correction"] = e.correction().empty()
                        ? ojson(nullptr)
                        : ojson({{"method", e.correction()},
                                 {"unadjusted_decision", e.unadjusted_decision()},
                                 {"adjusted_p", e.adjusted_p()}});
  j["runs"] = {{"total", e.runs_total()},
               {"done", e.runs_done()},
               {"failed", e.runs_failed()},
               {"active", e.runs_active()}};
  j["arms"] = {{"control", ArmJson(e.control_arm())}, {"variant", ArmJson(e.variant_arm())}};
  if (e.state() == "running") {
    // The estimate so far from the finished runs: each metric's CI at the boundary for the pairs
    // it compares. Not a decision; null before the arms have values.
    ojson im = ojson::array();
    for (const auto& m : e.interim()) {
      const bool have = m.estimated();
      im.push_back({{"metric", m.metric()},
                    {"n_control", m.n_control()},
                    {"n_variant", m.n_variant()},
                    {"control_median", OrNull(m.n_control() > 0, m.control_median())},
                    {"variant_median", OrNull(m.n_variant() > 0, m.variant_median())},
                    {"estimated", have},
                    {"ratio", OrNull(have, m.ratio())},
                    {"ci_low", OrNull(have, m.ci_low())},
                    {"ci_high", OrNull(have, m.ci_high())}});
    }
    j["interim"] = {{"usable_pairs", e.interim_pairs()},
                    {"min_pairs", e.min_pairs()},
                    {"ci", e.interim_ci()},
                    {"metrics", im}};
  } else {
    j["interim"] = nullptr;  // only while it runs
  }
  j["agent"] = TextOrNull(e.agent());
  j["placement"] = TextOrNull(e.placement());
  j["goal"] = TextOrNull(e.goal_note());
  j["again_reason"] = TextOrNull(e.again_reason());
  ojson ms = ojson::array();
  for (const auto& m : e.metrics()) {
    // A median needs runs on its side; a ratio, CI and p need runs on both.
    const bool both = m.estimated();
    const bool boot = m.boot_high() > 0;  // only with >= 10 runs per side
    ojson x;
    x["metric"] = m.metric();
    x["unit"] = m.unit();
    x["better"] = m.better();
    x["role"] = m.role();
    x["n_control"] = m.n_control();
    x["n_variant"] = m.n_variant();
    x["control_median"] = OrNull(m.n_control() > 0, m.control_median());
    x["variant_median"] = OrNull(m.n_variant() > 0, m.variant_median());
    x["estimated"] = both;
    x["ratio"] = OrNull(both, m.ratio());
    x["ci_low"] = OrNull(both, m.ci_low());
    x["ci_high"] = OrNull(both, m.ci_high());
    x["ci90_low"] = OrNull(both, m.ci90_low());
    x["ci90_high"] = OrNull(both, m.ci90_high());
    x["p_value"] = OrNull(both && m.tested(), m.p_value());
    x["decision"] = m.decision();
    x["guardrail"] = TextOrNull(m.guardrail());
    x["note"] = TextOrNull(m.note());
    x["mw_p"] = OrNull(both && boot, m.mw_p());
    x["boot_low"] = OrNull(boot, m.boot_low());
    x["boot_high"] = OrNull(boot, m.boot_high());
    // What anyone needs to recompute it: the method, the critical value and df, and the runs.
    for (const auto& vm : verdict.value("metrics", ojson::array())) {
      if (vm.value("metric", "") != m.metric()) continue;
      for (const char* k : {"method", "critical", "df", "resolution", "adjusted", "pace", "lost",
                            "downweighted", "control_runs", "variant_runs"})
        if (vm.contains(k)) x[k] = vm[k];
    }
    ms.push_back(x);
  }
  j["metrics"] = ms;
  j["look"] = {{"usable_pairs", e.pairs()},
               {"finished_pairs", verdict.value("finished_pairs", e.pairs())},
               {"queued_pairs", e.runs_total() / 2},
               {"min_pairs", verdict.value("min_pairs", 0)},
               {"max_pairs", e.max_pairs()}};
  j["unusable"] = verdict.contains("unusable") ? verdict["unusable"] : ojson(nullptr);
  j["stopped"] = TextOrNull(verdict.value("stopped", ""));
  j["advice"] = verdict.value("advice", std::vector<std::string>{});
  j["primary"] = TextOrNull(e.primary());
  j["reasons"] = std::vector<std::string>(e.reasons().begin(), e.reasons().end());
  j["pairs"] = e.pairs();
  j["max_pairs"] = e.max_pairs();
  j["drift"] = TextOrNull(e.drift());
  j["critical"] = OrNull(e.critical() > 0, e.critical());  // null: fixed-sample CIs
  j["hypothesis_result"] = TextOrNull(e.hypothesis_result());
  j["hypothesis_note"] = TextOrNull(e.hypothesis_note());
  j["frozen_version"] = OrNull(e.frozen_version() > 0, e.frozen_version());
  j["frozen_by"] = TextOrNull(e.frozen_by());
  j["freeze_reason"] = TextOrNull(e.freeze_reason());
  j["actor"] = e.actor();
  j["created_at"] = e.created_at();
  j["decided_at"] = TextOrNull(e.decided_at());
  j["frozen_at"] = TextOrNull(e.frozen_at());
  return j;
}

Table ExperimentsTable(const v1::ListExperimentsResponse& r) {
  Table t{{"id", "workload", "change", "baseline", "state", "decision", "primary effect", "runs",
           "hypothesis"},
          {}};
  for (const auto& e : r.experiments()) {
    std::string effect = kNoEstimate;
    for (const auto& m : e.metrics())
      if (m.metric() == e.primary() && m.estimated())
        effect = FormatEffect(m.ratio()) + " " + FormatCi(m.ci_low(), m.ci_high());
    t.rows.push_back(
        {std::to_string(e.id()), e.workload(), e.change().description(),
         std::to_string(e.baseline_id()), e.state(), e.decision().empty() ? "-" : e.decision(),
         effect, std::to_string(e.runs_done()) + "/" + std::to_string(e.runs_total()),
         e.hypothesis_id() ? std::to_string(e.hypothesis_id()) + " " + e.hypothesis_result()
                           : "-"});
  }
  return t;
}

Table VerdictTable(const v1::Experiment& e) {
  Table t{{"metric", "role", "n", "control", "variant", "effect", "95% ci", "p", "decision"}, {}};
  if (e.critical() > 0) t.headers[6] = "95% ci (seq)";
  for (const auto& m : e.metrics()) {
    std::string decision = m.decision();
    if (!m.guardrail().empty()) decision += " (guardrail " + m.guardrail() + ")";
    const bool have = m.estimated();
    t.rows.push_back({m.metric(), m.role(),
                      std::to_string(m.n_control()) + "/" + std::to_string(m.n_variant()),
                      m.n_control() ? FormatNumber(m.control_median()) : kNoEstimate,
                      m.n_variant() ? FormatNumber(m.variant_median()) : kNoEstimate,
                      have ? FormatEffect(m.ratio()) : kNoEstimate,
                      have ? FormatCi(m.ci_low(), m.ci_high()) : kNoEstimate,
                      m.tested() ? FormatP(m.p_value()) : kNoEstimate, decision});
  }
  return t;
}

std::string ExperimentDetail(const v1::Experiment& e) {
  std::string out = "Experiment " + std::to_string(e.id()) + "  workload " + e.workload() + "  " +
                    e.change().description() + "  against baseline " +
                    std::to_string(e.baseline_id()) + " (config v" +
                    std::to_string(e.config_version()) + ")\n";
  out += "state:  " + e.state() + (e.decision().empty() ? "" : " — " + e.decision()) + "\n";
  if (e.state() == "measured")
    out += "batch:  " + std::to_string(e.batch_id()) +
           " still running; this experiment is decided with the batch's correction when it "
           "completes\n";
  if (!e.correction().empty())
    out += "batch:  " + std::to_string(e.batch_id()) + ", " +
           (e.correction() == "bh" ? "Benjamini-Hochberg" : "Holm") +
           "-corrected: " + e.unadjusted_decision() + " alone, adjusted p " +
           FormatP(e.adjusted_p()) + " → " + e.decision() + "\n";
  out += "runs:   " + std::to_string(e.runs_done()) + "/" + std::to_string(e.runs_total()) +
         " succeeded, interleaved ABBA, at most " + std::to_string(e.repeats()) + " per arm";
  const ojson verdict = VerdictOf(e);
  if (!verdict.empty()) {
    const int finished = verdict.value("finished_pairs", e.pairs());
    out += "; decided after " + std::to_string(e.pairs()) + " usable pair(s) of " +
           std::to_string(e.runs_total() / 2) + " queued (" + std::to_string(finished) +
           " finished; first look at " + std::to_string(verdict.value("min_pairs", 0)) + ", cap " +
           std::to_string(e.max_pairs()) + ")";
    const std::string stopped = verdict.value("stopped", "");
    if (!stopped.empty())
      out += "; stopped at once: " + stopped;
    else if (finished < e.max_pairs())
      out += " (stopped early)";
  }
  if (e.runs_failed()) out += ", " + std::to_string(e.runs_failed()) + " failed";
  if (e.runs_active()) out += ", " + std::to_string(e.runs_active()) + " active";
  if (!e.agent().empty()) out += ", on " + e.agent();
  out += "\n";
  if (e.state() == "running") {
    out += "control: " + ArmLine(e.control_arm()) + "\nvariant: " + ArmLine(e.variant_arm()) +
           "\ninterim (not a decision): " + InterimPhrase(e) +
           (e.interim_ci().empty() ? "" : "; CI: " + e.interim_ci()) + "\n";
    if (e.interim_size()) {
      Table t{{"metric", "n", "control", "variant", "effect", "ci so far"}, {}};
      for (const auto& m : e.interim()) {
        const bool have = m.estimated();
        t.rows.push_back({m.metric(),
                          std::to_string(m.n_control()) + "/" + std::to_string(m.n_variant()),
                          m.n_control() ? FormatNumber(m.control_median()) : kNoEstimate,
                          m.n_variant() ? FormatNumber(m.variant_median()) : kNoEstimate,
                          have ? FormatEffect(m.ratio()) : kNoEstimate,
                          have ? FormatCi(m.ci_low(), m.ci_high()) : kNoEstimate});
      }
      out += RenderTable(t) + "\n";
    }
  }
  if (!e.placement().empty()) out += "placed: " + e.placement() + "\n";
  if (!e.goal_note().empty()) out += e.goal_note() + "\n";
  if (!e.again_reason().empty()) out += "tested again: " + e.again_reason() + "\n";
  if (e.hypothesis_id())
    out += "hypothesis " + std::to_string(e.hypothesis_id()) + ": expected " +
           e.hypothesis_expect() +
           (e.hypothesis_result().empty()
                ? ""
                : " → " + e.hypothesis_result() + " (" + e.hypothesis_note() + ")") +
           "\n";
  if (e.metrics_size()) {
    out += "\n" + RenderTable(VerdictTable(e)) + "\n";
    for (const auto& m : e.metrics()) {
      if (!m.note().empty()) out += "note: " + m.metric() + ": " + m.note() + "\n";
      if (m.boot_high() > 0)
        out += "cross-check: " + m.metric() + " bootstrap CI of the median ratio " +
               FormatCi(m.boot_low(), m.boot_high()) + ", Mann-Whitney p " + FormatP(m.mw_p()) +
               "\n";
    }
    for (const auto& r : e.reasons()) out += "why: " + r + "\n";
    if (!e.drift().empty()) out += "drift: " + e.drift() + "\n";
    if (auto u = verdict.find("unusable"); u != verdict.end() && u->is_object() &&
                                           (u->value("control", 0) + u->value("variant", 0)) > 0)
      out += "runs with something off (failed, no value, no steady state, slowed down): control " +
             std::to_string(u->value("control", 0)) + "/" +
             std::to_string(u->value("control_finished", 0)) + ", variant " +
             std::to_string(u->value("variant", 0)) + "/" +
             std::to_string(u->value("variant_finished", 0)) +
             " (the succeeded ones count with what they delivered)\n";
    for (const auto& a : verdict.value("advice", std::vector<std::string>{}))
      out += "advice: " + a + "\n";
    for (const auto& vm : verdict.value("metrics", ojson::array())) {
      if (vm.contains("adjusted") && vm["adjusted"].is_object()) {
        const auto& a = vm["adjusted"];
        out += "adjusted: " + vm.value("metric", "") + " " + FormatEffect(a.value("ratio", 1.0)) +
               " " + FormatCi(a.value("ci_low", 1.0), a.value("ci_high", 1.0)) +
               " after early stopping (median-unbiased); the tuning log records this\n";
      }
    }
    for (const auto& vm : verdict.value("metrics", ojson::array())) {
      const std::string method = vm.value("method", "");
      const bool has = vm.contains("critical") && vm["critical"].is_number() && vm.contains("df") &&
                       vm["df"].is_number();
      if (method.empty() || !has || vm["critical"].get<double>() <= 0) continue;
      char df[32];
      std::snprintf(df, sizeof df, "%g", vm["df"].get<double>());
      out += "method: " + vm.value("metric", "") + ": " + method + ", critical value " +
             FormatNumber(vm.value("critical", 0.0)) + " (df " + df + ")" +
             (e.critical() > 0 ? ", the sequential boundary for the pairs compared" : "") + "\n";
    }
    out +=
        "control/variant = medians of the runs' delivered values (n = runs compared); effect = "
        "variant/control of what the runs delivered (pace x lost time, docs/statistics.md); p "
        "unadjusted; every run's value and how it was computed: -o json\n";
  }
  if (e.state() == "frozen") {
    out += "\nfrozen as config v" + std::to_string(e.frozen_version()) + " by " + e.frozen_by() +
           " at " + e.frozen_at() +
           (e.freeze_reason().empty() ? "" : " (forced: " + e.freeze_reason() + ")") + "\n";
  } else if (e.state() == "decided" && e.decision() == "improved") {
    out += "\nnext: tunectl experiment freeze " + std::to_string(e.id()) + "\n";
  }
  return out;
}

std::string ExperimentProgress(const v1::Experiment& e, double elapsed_s) {
  std::string out = "experiment " + std::to_string(e.id()) + ": control " +
                    ArmLine(e.control_arm()) + "; variant " + ArmLine(e.variant_arm());
  if (e.state() == "running") out += "; " + InterimPhrase(e);
  return out + " [" + FormatDuration(static_cast<int64_t>(elapsed_s)) + "]";
}

ojson ConfigJson(const v1::Config& c) {
  const ParamTypes types = ParamTypesOf(c.spec_json());
  ojson j;
  j["workload"] = c.workload();
  j["version"] = c.current().version();
  j["params"] = ParamsJson(c.current().params(), types);
  ojson lineage = ojson::array();
  for (const auto& v : c.lineage()) {
    ojson x;
    x["version"] = v.version();
    x["current"] = v.current();
    x["params"] = ParamsJson(v.params(), types);
    x["change"] = v.has_change() ? ChangeJson(v.change(), types) : ojson(nullptr);
    x["experiment_id"] = IdOrNull(v.experiment_id());
    x["reason"] = TextOrNull(v.reason());
    x["created_at"] = v.created_at();
    lineage.push_back(x);
  }
  j["lineage"] = lineage;
  return j;
}

std::string ConfigDetail(const v1::Config& c) {
  std::string out =
      "Config of " + c.workload() + ": v" + std::to_string(c.current().version()) + "\n";
  out += "params: " + FormatParams(c.current().params()) + "\n\nlineage:\n";
  Table t{{"version", "change", "experiment", "reason", "created"}, {}};
  for (const auto& v : c.lineage())
    t.rows.push_back({"v" + std::to_string(v.version()) + (v.current() ? " *" : ""),
                      v.has_change() ? v.change().description() : "-",
                      v.experiment_id() ? std::to_string(v.experiment_id()) : "-", v.reason(),
                      v.created_at()});
  std::string lineage;
  for (const auto& v : c.lineage())
    lineage += (lineage.empty() ? "" : " → ") + ("v" + std::to_string(v.version()));
  return out + RenderTable(t) + "\n" + lineage + "\n";
}

Result<std::string> ConfigExport(const v1::Config& c, const std::string& format) {
  auto spec = ParseWorkloadSpec(c.spec_json(), "workload " + c.workload());
  if (!spec.ok()) return spec.status();
  ParamValues params(c.current().params().begin(), c.current().params().end());
  if (format == "json" || format == "yaml") {
    ojson j = ojson::object();
    std::string yaml =
        "# " + c.workload() + " config v" + std::to_string(c.current().version()) + "\n";
    for (const auto& p : spec->params) {
      auto it = params.find(p.name);
      if (it == params.end()) continue;
      const std::string& v = it->second;
      switch (p.type) {
        case ParamType::kInt: j[p.name] = std::stoll(v); break;
        case ParamType::kFloat: j[p.name] = std::stod(v); break;
        case ParamType::kBool: j[p.name] = v == "true"; break;
        default: j[p.name] = v;
      }
      yaml += p.name + ": " +
              (p.type == ParamType::kString || p.type == ParamType::kEnum ? ojson(v).dump() : v) +
              "\n";
    }
    return format == "json" ? j.dump(2) + "\n" : yaml;
  }
  if (format == "env") {
    std::string out;
    for (const auto& p : spec->params) {
      std::string name = p.name;
      for (auto& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      out += name + "=" + ShellQuote(params[p.name]) + "\n";
    }
    return out;
  }
  if (format == "args") {
    auto l = BindLaunch(*spec, params);
    if (!l.ok()) return l.status();
    std::string out;
    for (const auto& [k, v] : l->env) out += k + "=" + ShellQuote(v) + " ";
    for (size_t i = 0; i < l->argv.size(); ++i) out += (i ? " " : "") + ShellQuote(l->argv[i]);
    return out + "\n";
  }
  return Status::InvalidArgument("--format: \"" + format +
                                 "\" is not allowed; allowed: json, yaml, env, args");
}

ojson LogJson(const v1::LogEntry& e) {
  ojson j = ojson::parse(e.entry_json(), nullptr, false);
  if (!j.is_object()) j = ojson::object();
  if (!j.contains("kind")) j["kind"] = e.kind().empty() ? "decided" : e.kind();
  j["frozen"] = e.frozen().empty() ? ojson(nullptr) : ojson(e.frozen());
  j["at"] = e.at();
  return j;
}

Table LogTable(const v1::ListLogResponse& r) {
  Table t{{"experiment", "at", "workload", "change", "expected", "hypothesis", "primary", "effect",
           "95% ci", "others", "guardrails", "decision", "frozen", "by"},
          {}};
  for (const auto& e : r.entries()) {
    // Regression and resolution entries have no experiment: no CI, and an effect only when the
    // levels before and after are known.
    const bool decided = e.kind().empty() || e.kind() == "decided";
    t.rows.push_back({e.experiment_id() ? std::to_string(e.experiment_id()) : "-", e.at(),
                      e.workload(), e.change(), e.expected().empty() ? "-" : e.expected(),
                      e.hypothesis_result().empty() ? "-" : e.hypothesis_result(),
                      e.primary_metric().empty() ? "-" : e.primary_metric(),
                      e.ratio() > 0 ? FormatEffect(e.ratio()) : kNoEstimate,
                      decided && e.ci_high() > 0 ? FormatCi(e.ci_low(), e.ci_high()) : kNoEstimate,
                      e.others().empty() ? "-" : e.others(),
                      e.guardrails().empty() ? "-" : e.guardrails(), e.decision(),
                      !decided             ? "-"
                      : e.frozen().empty() ? "no"
                                           : e.frozen(),
                      e.actor()});
  }
  return t;
}

Table LogCsv(const v1::ListLogResponse& r) {
  Table t{{"experiment_id", "at", "kind", "workload", "change", "expected", "hypothesis_result",
           "primary_metric", "ratio", "ci_low", "ci_high", "decision", "frozen", "actor"},
          {}};
  for (const auto& e : r.entries()) {
    const bool decided = e.kind().empty() || e.kind() == "decided";
    const bool ratio = e.ratio() > 0;  // 0: no estimate (or a regression's unknown levels)
    t.rows.push_back(
        {e.experiment_id() ? std::to_string(e.experiment_id()) : "", e.at(),
         e.kind().empty() ? "decided" : e.kind(), e.workload(), e.change(), e.expected(),
         e.hypothesis_result(), e.primary_metric(), ratio ? CsvNumber(e.ratio()) : "",
         decided && ratio ? CsvNumber(e.ci_low()) : "",
         decided && ratio ? CsvNumber(e.ci_high()) : "", e.decision(), e.frozen(), e.actor()});
  }
  return t;
}

Table LogParamTable(const v1::ListLogResponse& r) {
  Table t{{"experiment", "config", "change", "decision", "primary effect", "other metrics",
           "hypothesis", "frozen"},
          {}};
  for (const auto& e : r.entries()) {
    if (!(e.kind().empty() || e.kind() == "decided")) continue;
    const ojson entry = ojson::parse(e.entry_json(), nullptr, false);
    const std::string config = entry.is_object() && entry.contains("config_version")
                                   ? "v" + std::to_string(entry.value("config_version", 0))
                                   : std::string("-");
    t.rows.push_back(
        {std::to_string(e.experiment_id()), config, e.change(), e.decision(),
         e.primary_metric().empty() ? "-"
                                    : e.primary_metric() + " " + FormatEffect(e.ratio()) + " " +
                                          FormatCi(e.ci_low(), e.ci_high()),
         e.others().empty() ? "-" : e.others(),
         e.hypothesis_result().empty() ? "-" : e.expected() + ": " + e.hypothesis_result(),
         e.frozen().empty() ? "no" : e.frozen()});
  }
  return t;
}

ojson ScheduleJson(const v1::Schedule& s) {
  ojson j;
  j["name"] = s.name();
  j["window"] = TextOrNull(s.window());
  j["cron"] = TextOrNull(s.cron());
  j["duration_s"] = OrNull(!s.cron().empty(), s.duration_s());  // a cron window's length
  j["tz"] = s.tz();
  j["max_agents"] = OrNull(s.max_agents() > 0, s.max_agents());  // null: any number
  j["on_window_end"] = s.on_window_end();
  j["status"] = s.status();
  j["created_at"] = s.created_at();
  return j;
}

Table SchedulesTable(const v1::ListSchedulesResponse& r) {
  Table t{{"name", "when", "tz", "at window end", "max agents", "status"}, {}};
  for (const auto& s : r.schedules())
    t.rows.push_back(
        {s.name(),
         s.window().empty() ? s.cron() + " for " + FormatDuration(s.duration_s()) : s.window(),
         s.tz(), s.on_window_end(), s.max_agents() ? std::to_string(s.max_agents()) : "any",
         s.status()});
  return t;
}

namespace {

// What a batch is, in its full view and in a list alike.
ojson BatchHeadJson(const v1::Batch& b) {
  ojson j;
  j["id"] = b.id();
  j["workload"] = b.workload();
  j["baseline_id"] = b.baseline_id();
  j["schedule"] = TextOrNull(b.schedule());
  j["state"] = b.state();
  j["correction"] = b.correction();
  j["waiting"] = TextOrNull(b.waiting());
  return j;
}

}  // namespace

ojson BatchJson(const v1::Batch& b, const ParamTypes& types) {
  ojson j = BatchHeadJson(b);
  ojson es = ojson::array();
  for (int i = 0; i < b.experiments_size(); ++i) {
    ojson e = ExperimentJson(b.experiments(i), types);
    // Null until the batch is complete: the correction is made once, across all members.
    const bool corrected = i < b.adjusted_decision_size() && !b.adjusted_decision(i).empty();
    e["adjusted_p"] = corrected && i < b.adjusted_p_size() ? ojson(b.adjusted_p(i)) : ojson();
    e["adjusted_decision"] = corrected ? ojson(b.adjusted_decision(i)) : ojson(nullptr);
    es.push_back(e);
  }
  j["experiments"] = es;
  j["created_at"] = b.created_at();
  return j;
}

namespace {

// "improved 2, unchanged 1" (in name order); "-" when empty.
std::string Counts(const google::protobuf::Map<std::string, int32_t>& m) {
  std::map<std::string, int32_t> sorted(m.begin(), m.end());
  std::string out;
  for (const auto& [k, n] : sorted) out += (out.empty() ? "" : ", ") + k + " " + std::to_string(n);
  return out.empty() ? "-" : out;
}

}  // namespace

ojson BatchSummaryJson(const v1::Batch& b) {
  ojson j = BatchHeadJson(b);
  j["members"] = {{"total", b.members()},
                  {"by_state", std::map<std::string, int32_t>(b.members_by_state().begin(),
                                                              b.members_by_state().end())},
                  {"by_decision", std::map<std::string, int32_t>(b.members_by_decision().begin(),
                                                                 b.members_by_decision().end())}};
  j["created_at"] = b.created_at();
  return j;
}

Table BatchesTable(const v1::ListBatchesResponse& r) {
  Table t{{"id", "workload", "baseline", "schedule", "state", "experiments", "done", "decisions"},
          {}};
  for (const auto& b : r.batches()) {
    const auto running = b.members_by_state().find("running");
    const int active = running == b.members_by_state().end() ? 0 : running->second;
    t.rows.push_back({std::to_string(b.id()), b.workload(), std::to_string(b.baseline_id()),
                      b.schedule().empty() ? "-" : b.schedule(), b.state(),
                      std::to_string(b.members()), std::to_string(b.members() - active),
                      Counts(b.members_by_decision())});
  }
  return t;
}

std::string BatchDetail(const v1::Batch& b) {
  std::string out = "Batch " + std::to_string(b.id()) + "  workload " + b.workload() +
                    "  against baseline " + std::to_string(b.baseline_id()) + "  " + b.state() +
                    "\n";
  out +=
      "schedule: " + (b.schedule().empty() ? std::string("none (runs any time)") : b.schedule()) +
      "\n";
  if (!b.waiting().empty()) out += "waiting:  " + b.waiting() + "\n";
  Table t{{"experiment", "change", "state", "runs", "effect", "p", "adjusted p", "decision"}, {}};
  for (int i = 0; i < b.experiments_size(); ++i) {
    const auto& e = b.experiments(i);
    const bool corrected = i < b.adjusted_decision_size() && !b.adjusted_decision(i).empty();
    std::string effect = "-", p = "-";
    for (const auto& m : e.metrics())
      if (m.metric() == e.primary()) {
        effect = FormatEffect(m.ratio());
        p = FormatP(m.p_value());
      }
    t.rows.push_back({std::to_string(e.id()), e.change().description(), e.state(),
                      std::to_string(e.runs_done()) + "/" + std::to_string(e.runs_total()), effect,
                      p, corrected && i < b.adjusted_p_size() ? FormatP(b.adjusted_p(i)) : "-",
                      corrected ? b.adjusted_decision(i) : "-"});
  }
  out += "\n" + RenderTable(t);
  out += "\nadjusted p: " + std::string(b.correction() == "bh" ? "Benjamini-Hochberg" : "Holm") +
         " across the batch's primary comparisons (guardrails are not corrected; CIs are "
         "unadjusted)\n";
  return out;
}

ojson RegressionJson(const v1::Regression& r) {
  ojson j;
  j["workload"] = r.workload();
  j["config_version"] = r.config_version();
  j["metric"] = r.metric();
  j["unit"] = r.unit();
  j["better"] = r.better();
  ojson pts = ojson::array();
  for (const auto& p : r.points())
    pts.push_back({{"run_id", p.run_id()}, {"at", p.at()}, {"value", p.value()}});
  j["series"] = pts;
  j["more_points"] = r.more_points();  // older runs exist: --limit N shows more
  ojson cps = ojson::array();
  for (const auto& c : r.changes())
    cps.push_back({{"first_run_id", c.first_run_id()},
                   {"at", c.at()},
                   {"before", c.before()},
                   {"after", c.after()},
                   {"p", c.p()},
                   {"regression", c.regression()}});
  j["change_points"] = cps;
  const bool checked = r.latest_history() >= 3;
  j["latest"] = {{"regression", r.latest_regression()},
                 {"checked_against", r.latest_history()},
                 {"level", checked ? ojson(r.latest_level()) : ojson(nullptr)},
                 {"bound", checked ? ojson(r.latest_bound()) : ojson(nullptr)}};
  j["alerts"] = std::vector<std::string>(r.alerts().begin(), r.alerts().end());
  ojson rec = ojson::array();
  for (const auto& g : r.recorded()) rec.push_back(RecordedRegressionJson(g));
  j["regressions"] = rec;
  ojson st = ojson::array();
  for (const auto& s : r.stability()) st.push_back(StabilityJson(s));
  j["stability_runs"] = st;
  j["watch"] = r.has_watch() ? WatchJson(r.watch()) : ojson(nullptr);
  return j;
}

Table RegressionSeriesTable(const v1::Regression& r) {
  Table t{{"run", "finished", r.metric(), "level", "change"}, {}};
  std::map<int64_t, const v1::RegressionChange*> starts;
  for (const auto& c : r.changes()) starts[c.first_run_id()] = &c;
  double level = r.changes_size() > 0 ? r.changes(0).before() : 0;
  if (r.changes_size() == 0 && r.points_size() > 0) {
    for (const auto& p : r.points()) level += p.value();
    level /= r.points_size();
  }
  for (const auto& p : r.points()) {
    std::string change;
    if (auto it = starts.find(p.run_id()); it != starts.end()) {
      level = it->second->after();
      change = it->second->regression() ? "regression" : "improvement";
    }
    auto exact = [](double v) {  // for spreadsheets and plots: all the digits that matter
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.10g", v);
      return std::string(buf);
    };
    t.rows.push_back({std::to_string(p.run_id()), p.at(), exact(p.value()), exact(level), change});
  }
  return t;
}

ojson RecordedRegressionJson(const v1::RecordedRegression& g) {
  ojson x;
  x["id"] = g.id();
  x["type"] = g.kind();  // "kind" is the document's kind (docs/output.md)
  x["metric"] = g.metric();
  x["config_version"] = g.config_version();
  x["first_bad_run"] = g.first_bad_run();
  x["before"] = g.kind() == "change_point" ? ojson(g.before()) : ojson(nullptr);
  x["after"] = g.kind() == "change_point" ? ojson(g.after()) : ojson(nullptr);
  x["p"] = g.kind() == "change_point" ? ojson(g.p()) : ojson(nullptr);
  x["message"] = g.message();
  x["detected_at"] = g.detected_at();
  x["state"] = g.resolved_at().empty() ? "open" : "resolved";
  x["resolved_at"] = g.resolved_at().empty() ? ojson(nullptr) : ojson(g.resolved_at());
  x["resolved_by"] = g.resolved_by().empty() ? ojson(nullptr) : ojson(g.resolved_by());
  x["resolution"] = g.resolution().empty() ? ojson(nullptr) : ojson(g.resolution());
  return x;
}

ojson StabilityJson(const v1::StabilityRun& s) {
  ojson j;
  j["run_id"] = s.run_id();
  j["baseline_id"] = s.baseline_id();
  j["config_version"] = s.config_version();
  j["duration_s"] = s.duration_s();
  j["state"] = s.state();
  j["verdict"] = s.verdict();
  j["message"] = s.message();
  j["started_at"] = TextOrNull(s.started_at());
  j["finished_at"] = TextOrNull(s.finished_at());
  return j;
}

std::string StabilityDetail(const v1::StabilityRun& s) {
  std::string out = "stability run " + std::to_string(s.run_id()) + " (config v" +
                    std::to_string(s.config_version()) + ", " + FormatDuration(s.duration_s()) +
                    "): " + s.verdict();
  if (!s.message().empty()) out += ": " + s.message();
  return out + "\n";
}

std::string StabilityProgress(const v1::StabilityRun& s, const v1::Run* run,
                              const std::string& metric, double elapsed_s) {
  std::string out = "stability run " + std::to_string(s.run_id()) + ": " + s.state();
  if (run)
    for (const auto& m : run->metrics()) {
      if (m.metric() != metric) continue;
      out += ", " + metric + " " + (m.steady() > 0 ? FormatNumber(m.median()) : "-") +
             " (median of " + std::to_string(m.steady()) + " steady of " +
             std::to_string(m.samples()) + " samples" + (run->live() ? " so far" : "") + ")";
      if (!m.warnings().empty()) out += "; " + m.warnings();
    }
  return out + " [" + FormatDuration(static_cast<int64_t>(elapsed_s)) + " of " +
         FormatDuration(s.duration_s()) + "]";
}

ojson WatchJson(const v1::Watch& w) {
  ojson j;
  j["id"] = w.id();
  j["workload"] = w.workload();
  j["schedule"] = w.schedule();
  j["repeats"] = w.repeats();
  j["state"] = w.state();
  j["status"] = w.status();
  j["checks"] = w.checks();
  j["actor"] = w.actor();
  j["created_at"] = w.created_at();
  return j;
}

std::string WatchLine(const v1::Watch& w) {
  std::string out = "periodic check " + std::to_string(w.id()) + " of " + w.workload() + ": " +
                    std::to_string(w.repeats()) + " run(s) of the current config in each window " +
                    "of " + w.schedule() + ", " + w.state() + ", " + std::to_string(w.checks()) +
                    " check(s) so far";
  if (!w.status().empty()) out += "; " + w.status();
  return out;
}

std::string RegressionDetail(const v1::Regression& r) {
  std::string out = "Regression watch: " + r.workload() + " config v" +
                    std::to_string(r.config_version()) + ", " + r.metric() + " (" + r.better() +
                    " is better), " +
                    (r.more_points() ? "the newest " + std::to_string(r.points_size()) +
                                           " comparable runs (older ones: --limit N shows more)"
                                     : std::to_string(r.points_size()) + " comparable runs") +
                    "\n";
  if (r.changes_size() == 0) {
    out += "change points: none\n";
  } else {
    Table t{{"first run", "at", "before", "after", "change", "p", "kind"}, {}};
    for (const auto& c : r.changes())
      t.rows.push_back({std::to_string(c.first_run_id()), c.at(), FormatNumber(c.before()),
                        FormatNumber(c.after()), FormatEffect(c.after() / c.before()),
                        FormatP(c.p()), c.regression() ? "REGRESSION" : "improvement"});
    out += "change points (E-divisive, p < 0.001, at least the minimum effect):\n" + RenderTable(t);
  }
  if (r.points_size() >= 1) {
    const auto& last = r.points(r.points_size() - 1);
    out += "latest run " + std::to_string(last.run_id()) + ": " + FormatNumber(last.value());
    if (r.latest_history() >= 3)
      out += " against level " + FormatNumber(r.latest_level()) + " of " +
             std::to_string(r.latest_history()) + " runs (regression bound " +
             FormatNumber(r.latest_bound()) +
             "): " + (r.latest_regression() ? "REGRESSION" : "ok") + "\n";
    else
      out += ": not checked yet (" + std::to_string(r.latest_history()) +
             " runs since the last change; 3 needed)\n";
  }
  for (const auto& a : r.alerts()) out += "ALERT: " + a + "\n";
  if (r.recorded_size() > 0) {
    Table t{{"id", "detected", "config", "kind", "metric", "first bad run", "state", "what"}, {}};
    for (const auto& g : r.recorded())
      t.rows.push_back(
          {std::to_string(g.id()), g.detected_at(), "v" + std::to_string(g.config_version()),
           g.kind(), g.metric(), std::to_string(g.first_bad_run()),
           g.resolved_at().empty() ? "OPEN" : "resolved: " + g.resolution(), g.message()});
    out += "recorded regressions (in the tuning log):\n" + RenderTable(t);
  }
  if (r.stability_size() > 0) {
    Table t{{"run", "baseline", "config", "duration", "state", "verdict", "finding"}, {}};
    for (const auto& s : r.stability())
      t.rows.push_back({std::to_string(s.run_id()), std::to_string(s.baseline_id()),
                        "v" + std::to_string(s.config_version()), FormatDuration(s.duration_s()),
                        s.state(), s.verdict(), s.message().empty() ? "-" : s.message()});
    out += "stability runs:\n" + RenderTable(t);
  }
  if (r.has_watch()) out += WatchLine(r.watch()) + "\n";
  return out;
}

// --- CSV with raw values ----------------------------------------------------------------------

namespace {

std::string CsvOr(bool have, double v) {
  return have ? CsvNumber(v) : "";
}
std::string CsvId(int64_t id) {
  return id ? std::to_string(id) : "";
}

// A change's parameters, old and new values, aligned: "a;b", "1;2", "8;4" (one each, usually).
struct ChangeCells {
  std::string params, from, to;
};
ChangeCells ChangeCsv(const v1::Change& c) {
  std::map<std::string, std::string> to(c.to().begin(), c.to().end());
  ChangeCells out;
  for (const auto& [k, v] : to) {
    const bool first = out.params.empty();
    auto f = c.from().find(k);
    out.params += (first ? "" : ";") + k;
    out.from += (first ? "" : ";") + (f == c.from().end() ? std::string() : f->second);
    out.to += (first ? "" : ";") + v;
  }
  return out;
}

const v1::MetricVerdict* PrimaryOf(const v1::Experiment& e) {
  for (const auto& m : e.metrics())
    if (m.metric() == e.primary()) return &m;
  return nullptr;
}

}  // namespace

Table VerdictCsv(const v1::Experiment& e) {
  Table t{
      {"experiment_id", "metric", "unit", "better", "role", "control_median", "control_n",
       "variant_median", "variant_n", "ratio", "ci_low", "ci_high", "p", "decision", "guardrail"},
      {}};
  for (const auto& m : e.metrics()) {
    const bool both = m.estimated();
    t.rows.push_back({std::to_string(e.id()), m.metric(), m.unit(), m.better(), m.role(),
                      CsvOr(m.n_control() > 0, m.control_median()), std::to_string(m.n_control()),
                      CsvOr(m.n_variant() > 0, m.variant_median()), std::to_string(m.n_variant()),
                      CsvOr(both, m.ratio()), CsvOr(both, m.ci_low()), CsvOr(both, m.ci_high()),
                      CsvOr(both, m.p_value()), m.decision(), m.guardrail()});
  }
  return t;
}

Table ExperimentsCsv(const v1::ListExperimentsResponse& r) {
  Table t{{"id", "workload", "baseline_id", "batch_id", "hypothesis_id", "param", "from", "to",
           "state", "decision", "primary_metric", "ratio", "ci_low", "ci_high", "p", "runs_done",
           "runs_total", "created_at", "decided_at"},
          {}};
  for (const auto& e : r.experiments()) {
    const auto c = ChangeCsv(e.change());
    const v1::MetricVerdict* m = PrimaryOf(e);
    const bool both = m && m->estimated();
    t.rows.push_back({std::to_string(e.id()), e.workload(), std::to_string(e.baseline_id()),
                      CsvId(e.batch_id()), CsvId(e.hypothesis_id()), c.params, c.from, c.to,
                      e.state(), e.decision(), e.primary(), CsvOr(both, both ? m->ratio() : 0),
                      CsvOr(both, both ? m->ci_low() : 0), CsvOr(both, both ? m->ci_high() : 0),
                      CsvOr(both, both ? m->p_value() : 0), std::to_string(e.runs_done()),
                      std::to_string(e.runs_total()), e.created_at(), e.decided_at()});
  }
  return t;
}

Table BatchCsv(const v1::Batch& b) {
  Table t{{"batch_id", "experiment_id", "param", "from", "to", "state", "runs_done", "runs_total",
           "primary_metric", "ratio", "ci_low", "ci_high", "p", "adjusted_p", "decision",
           "adjusted_decision"},
          {}};
  for (int i = 0; i < b.experiments_size(); ++i) {
    const auto& e = b.experiments(i);
    const auto c = ChangeCsv(e.change());
    const v1::MetricVerdict* m = PrimaryOf(e);
    const bool both = m && m->estimated();
    const bool corrected = i < b.adjusted_decision_size() && !b.adjusted_decision(i).empty();
    t.rows.push_back(
        {std::to_string(b.id()), std::to_string(e.id()), c.params, c.from, c.to, e.state(),
         std::to_string(e.runs_done()), std::to_string(e.runs_total()), e.primary(),
         CsvOr(both, both ? m->ratio() : 0), CsvOr(both, both ? m->ci_low() : 0),
         CsvOr(both, both ? m->ci_high() : 0), CsvOr(both, both ? m->p_value() : 0),
         CsvOr(corrected && i < b.adjusted_p_size(), i < b.adjusted_p_size() ? b.adjusted_p(i) : 0),
         e.correction().empty() ? e.decision() : e.unadjusted_decision(),
         corrected ? b.adjusted_decision(i) : ""});
  }
  return t;
}

Table ConfigCsv(const v1::Config& c) {
  Table t{{"param", "value"}, {}};
  std::map<std::string, std::string> sorted(c.current().params().begin(),
                                            c.current().params().end());
  for (const auto& [k, v] : sorted) t.rows.push_back({k, v});
  return t;
}

Table HypothesisCsv(const v1::Hypothesis& h) {
  const auto c = ChangeCsv(h.change());
  return Table{{"id", "workload", "baseline_id", "param", "from", "to", "expect", "locked",
                "experiment_id", "statement", "evidence", "actor", "created_at"},
               {{std::to_string(h.id()), h.workload(), std::to_string(h.baseline_id()), c.params,
                 c.from, c.to, h.expect(), h.locked() ? "true" : "false", CsvId(h.experiment_id()),
                 h.statement(), h.evidence(), h.actor(), h.created_at()}}};
}

}  // namespace tunectl

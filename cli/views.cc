#include "cli/views.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "core/text.h"

namespace tunectl {

std::string FormatParams(const google::protobuf::Map<std::string, std::string>& p) {
  std::map<std::string, std::string> sorted(p.begin(), p.end());
  std::string out;
  for (const auto& [k, v] : sorted) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

static ojson MapJson(const google::protobuf::Map<std::string, std::string>& p) {
  std::map<std::string, std::string> sorted(p.begin(), p.end());
  ojson j = ojson::object();
  for (const auto& [k, v] : sorted) j[k] = v;
  return j;
}

ojson Document(const std::string& kind, const ojson& body) {
  ojson j;
  j["apiVersion"] = kApiVersion;
  j["kind"] = kind;
  if (body.is_object())
    for (const auto& [k, v] : body.items())
      if (k != "apiVersion" && k != "kind") j[k] = v;
  return j;
}

ojson ListDocument(const std::string& item_kind, ojson items, const std::string& next_page_token) {
  ojson j;
  j["apiVersion"] = kApiVersion;
  j["kind"] = item_kind + "List";
  j["items"] = items.is_array() ? std::move(items) : ojson::array();
  j["next_page_token"] = next_page_token.empty() ? ojson(nullptr) : ojson(next_page_token);
  return j;
}

std::string NameOf(const v1::Workload& w) {
  return "workload/" + w.name();
}
std::string NameOf(const v1::Baseline& b) {
  return "baseline/" + std::to_string(b.id());
}
std::string NameOf(const v1::Run& r) {
  return "run/" + std::to_string(r.id());
}
std::string NameOf(const v1::Agent& a) {
  return "agent/" + a.name();
}
std::string NameOf(const v1::Hypothesis& h) {
  return "hypothesis/" + std::to_string(h.id());
}
std::string NameOf(const v1::Experiment& e) {
  return "experiment/" + std::to_string(e.id());
}
std::string NameOf(const v1::Config& c) {
  return "config/" + c.workload();
}
std::string NameOf(const v1::Schedule& s) {
  return "schedule/" + s.name();
}
std::string NameOf(const v1::Batch& b) {
  return "batch/" + std::to_string(b.id());
}
std::string NameOf(const v1::Token& t) {
  return "token/" + t.name();
}
std::string NameOf(const v1::Goal& g) {
  return "goal/" + g.workload();
}
std::string NameOf(const v1::RecordedRegression& g) {
  return "regression/" + std::to_string(g.id());
}
std::string NameOf(const v1::StabilityRun& s) {
  return "run/" + std::to_string(s.run_id());
}
std::string NameOf(const v1::Watch& w) {
  return "watch/" + std::to_string(w.id());
}

ParamTypes ParamTypesOf(const std::string& spec_json) {
  ParamTypes out;
  const ojson spec = ojson::parse(spec_json, nullptr, false);
  if (!spec.is_object() || !spec.contains("params") || !spec["params"].is_object()) return out;
  for (const auto& [name, p] : spec["params"].items())
    if (p.is_object() && p.contains("type") && p["type"].is_string())
      out[name] = p["type"].get<std::string>();
  return out;
}

namespace {

std::optional<int64_t> IntLiteral(const std::string& v) {
  int64_t x = 0;
  const char* end = v.data() + v.size();
  auto r = std::from_chars(v.data() + (!v.empty() && v[0] == '+'), end, x);
  if (v.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return x;
}

std::optional<double> FloatLiteral(const std::string& v) {
  double x = 0;
  const char* end = v.data() + v.size();
  auto r = std::from_chars(v.data() + (!v.empty() && v[0] == '+'), end, x);
  if (v.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(x)) return std::nullopt;
  return x;
}

}  // namespace

ojson ParamValueJson(const std::string& value, const std::string& type) {
  if (type == "string" || type == "enum") return value;
  if (type == "int" || type.empty())
    if (auto i = IntLiteral(value)) return *i;
  if (type == "float" || type == "int" || type.empty())
    if (auto d = FloatLiteral(value)) return *d;
  if (type == "bool" || type.empty()) {
    if (value == "true") return true;
    if (value == "false") return false;
  }
  return value;  // a value its type does not read (or a string): as it is
}

ojson ParamsJson(const google::protobuf::Map<std::string, std::string>& params,
                 const ParamTypes& types) {
  std::map<std::string, std::string> sorted(params.begin(), params.end());
  ojson j = ojson::object();
  for (const auto& [k, v] : sorted) {
    auto t = types.find(k);
    j[k] = ParamValueJson(v, t == types.end() ? std::string() : t->second);
  }
  return j;
}

namespace {

void FlattenInto(const std::string& prefix, const ojson& j, Table* t) {
  for (const auto& [k, v] : j.items()) {
    const std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      FlattenInto(key, v, t);
      continue;
    }
    t->headers.push_back(key);
    std::string cell;
    if (v.is_string())
      cell = v.get<std::string>();
    else if (v.is_number_float())
      cell = CsvNumber(v.get<double>());
    else if (!v.is_null())
      cell = v.dump(-1, ' ', false, ojson::error_handler_t::replace);
    t->rows.back().push_back(cell);
  }
}

}  // namespace

Table DocumentCsv(const ojson& doc) {
  Table t;
  t.rows.emplace_back();
  if (doc.is_object()) FlattenInto("", doc, &t);
  return t;
}

ojson WorkloadJson(const v1::Workload& w) {
  ojson j;
  j["name"] = w.name();
  j["description"] = w.description();
  j["config_version"] = w.config_version();
  j["spec_revision"] = w.spec_revision();
  j["repeats"] = w.repeats();
  j["created_at"] = w.created_at();
  j["spec"] = ojson::parse(w.spec_json(), nullptr, false);
  return j;
}

std::string NextPageHint(const std::string& next_page_token) {
  return "more: the next page with --page-token " + next_page_token;
}

ojson TokenJson(const v1::Token& t) {
  ojson j;
  j["name"] = t.name();
  j["role"] = t.role();
  j["agent"] = TextOrNull(t.agent());
  j["created_at"] = t.created_at();
  j["created_by"] = t.created_by();
  j["revoked_at"] = TextOrNull(t.revoked_at());
  j["revoked_by"] = TextOrNull(t.revoked_by());
  if (!t.secret().empty()) j["secret"] = t.secret();
  return j;
}

Table TokensTable(const v1::ListTokensResponse& r) {
  Table t{{"name", "role", "agent", "created", "by", "revoked"}, {}};
  for (const auto& k : r.tokens())
    t.rows.push_back({k.name(), k.role(), k.agent().empty() ? "-" : k.agent(), k.created_at(),
                      k.created_by(),
                      k.revoked_at().empty() ? "-" : k.revoked_at() + " by " + k.revoked_by()});
  return t;
}

ojson WhoAmIJson(const v1::WhoAmIResponse& w) {
  ojson j;
  j["name"] = w.name();
  j["role"] = w.role();
  j["actor"] = w.actor();
  j["agent"] = TextOrNull(w.agent());
  j["tls"] = w.tls();
  j["server_version"] = w.version();
  return j;
}

Table WorkloadsTable(const v1::ListWorkloadsResponse& r) {
  Table t{{"name", "config", "revision", "repeats", "description"}, {}};
  for (const auto& w : r.workloads())
    t.rows.push_back({w.name(), "v" + std::to_string(w.config_version()),
                      std::to_string(w.spec_revision()), std::to_string(w.repeats()),
                      w.description()});
  return t;
}

ojson BaselineJson(const v1::Baseline& b, const ParamTypes& types) {
  ojson j;
  j["id"] = b.id();
  j["workload"] = b.workload();
  j["purpose"] = b.purpose();
  j["config_version"] = b.config_version();
  j["spec_revision"] = b.spec_revision();
  j["state"] = b.state();
  j["reason"] = TextOrNull(b.reason());
  j["repeats"] = b.repeats();
  j["runs"] = {
      {"succeeded", b.runs_succeeded()}, {"failed", b.runs_failed()}, {"active", b.runs_active()}};
  j["params"] = ParamsJson(b.params(), types);
  ojson sums = ojson::array();
  for (const auto& s : b.summaries()) {
    const bool have = s.n() > 0;  // no run had a steady-state value: no figures
    ojson m;
    m["metric"] = s.metric();
    m["unit"] = s.unit();
    m["better"] = s.better();
    m["role"] = s.role();
    m["n"] = s.n();
    m["median"] = OrNull(have, s.median());
    m["mean"] = OrNull(have, s.mean());
    m["stddev"] = OrNull(s.n() > 1, s.stddev());
    m["cv"] = OrNull(s.n() > 1 && s.mean() != 0, s.cv());
    m["min"] = OrNull(have, s.min());
    m["max"] = OrNull(have, s.max());
    sums.push_back(m);
  }
  j["summary"] = sums;
  j["created_at"] = b.created_at();
  j["finished_at"] = TextOrNull(b.finished_at());
  return j;
}

Table BaselinesTable(const v1::ListBaselinesResponse& r) {
  Table t{{"id", "workload", "config", "state", "runs", "primary", "median", "cv", "created"}, {}};
  for (const auto& b : r.baselines()) {
    std::string metric, median, cv;
    for (const auto& s : b.summaries()) {
      if (s.role() == "primary" || metric.empty()) {
        metric = s.metric();
        median = FormatNumber(s.median());
        cv = FormatPercent(s.cv());
        if (s.role() == "primary") break;
      }
    }
    t.rows.push_back({std::to_string(b.id()), b.workload(),
                      "v" + std::to_string(b.config_version()), b.state(),
                      std::to_string(b.runs_succeeded()) + "/" + std::to_string(b.repeats()),
                      metric, median, cv, b.created_at()});
  }
  return t;
}

Table BaselineSummaryTable(const v1::Baseline& b) {
  Table t{{"metric", "unit", "better", "role", "n", "median", "mean", "stddev", "cv", "min", "max"},
          {}};
  for (const auto& s : b.summaries())
    t.rows.push_back({s.metric(), s.unit(), s.better(), s.role(), std::to_string(s.n()),
                      FormatNumber(s.median()), FormatNumber(s.mean()), FormatNumber(s.stddev()),
                      FormatPercent(s.cv()), FormatNumber(s.min()), FormatNumber(s.max())});
  return t;
}

std::string BaselineDetail(const v1::Baseline& b) {
  const std::string kind = b.purpose() == "check"       ? " (a periodic regression check)"
                           : b.purpose() == "stability" ? " (a stability run)"
                                                        : "";
  std::string out = "Baseline " + std::to_string(b.id()) + kind + "  workload " + b.workload() +
                    "  config v" + std::to_string(b.config_version()) + "  " + b.state() + "\n";
  if (!b.reason().empty()) out += "reason: " + b.reason() + "\n";
  out += "runs:   " + std::to_string(b.runs_succeeded()) + " succeeded, " +
         std::to_string(b.runs_failed()) + " failed, " + std::to_string(b.runs_active()) +
         " active (of " + std::to_string(b.repeats()) + ")\n";
  out += "params: " + FormatParams(b.params()) + "\n";
  out += "created " + b.created_at() +
         (b.finished_at().empty() ? "" : ", finished " + b.finished_at()) + "\n\n";
  if (b.summaries_size() == 0) {
    out += b.state() == "running" ? "(no summary until every run has finished)\n"
                                  : "(no metric values: see `tunectl run list --baseline " +
                                        std::to_string(b.id()) + "`)\n";
  } else {
    out += RenderTable(BaselineSummaryTable(b));
    out +=
        "\nper metric over runs: each run's median of its steady-state samples (warm-up dropped)\n";
  }
  return out;
}

std::string BaselineProgress(const v1::Baseline& b, const v1::ListRunsResponse& runs,
                             double elapsed_s) {
  int queued = 0, running = 0, done = 0, failed = 0;
  std::string wait;
  for (const auto& r : runs.runs()) {
    const std::string& s = r.state();
    if (s == "queued") {
      ++queued;
      if (wait.empty()) wait = r.wait_reason();
    } else if (s == "assigned" || s == "running") {
      ++running;
    } else if (s == "succeeded") {
      ++done;
    } else {
      ++failed;
    }
  }
  char el[32];
  std::snprintf(el, sizeof el, "%.0fs", elapsed_s);
  std::string out = "baseline " + std::to_string(b.id()) + ": " + std::to_string(done) + "/" +
                    std::to_string(b.repeats()) + " runs done";
  if (failed) out += ", " + std::to_string(failed) + " failed";
  out += ", " + std::to_string(running) + " running, " + std::to_string(queued) + " queued [" + el +
         "]";
  if (queued && running == 0 && !wait.empty()) out += " - " + wait;
  return out;
}

ojson RunLogLineJson(int64_t run, int attempt, const std::string& agent, const std::string& line) {
  return Document("RunLogLine", {{"run", run},
                                 {"attempt", attempt},
                                 {"agent", TextOrNull(agent)},
                                 {"line", SanitizeUtf8(line)}});
}

ojson RunJson(const v1::Run& r, const ParamTypes& types) {
  const bool ended = r.state() == "succeeded" || r.state() == "failed";
  ojson j;
  j["id"] = r.id();
  j["baseline_id"] = IdOrNull(r.baseline_id());
  j["workload"] = r.workload();
  j["experiment_id"] = IdOrNull(r.experiment_id());
  j["arm"] = TextOrNull(r.arm());
  j["purpose"] = TextOrNull(r.purpose());
  j["index"] = r.index();
  j["attempt"] = r.attempt();
  j["state"] = r.state();
  j["live"] = r.live();  // metrics from the samples so far (a running run)
  j["agent"] = TextOrNull(r.agent());
  j["node"] = TextOrNull(r.node());
  j["slot"] = OrNull(!r.agent().empty() && r.slot() >= 0, r.slot());
  j["external_id"] = TextOrNull(r.external_id());
  j["placement"] = TextOrNull(r.placement());
  j["params"] = ParamsJson(r.params(), types);
  // An exit code only for a process that exited; a signal only for one that was killed.
  j["exit_code"] = OrNull(ended && r.signal() == 0, r.exit_code());
  j["signal"] = OrNull(r.signal() != 0, r.signal());
  j["reason"] = TextOrNull(r.reason());
  j["wait_reason"] = TextOrNull(r.wait_reason());
  j["samples"] = r.samples();
  ojson ms = ojson::array();
  for (const auto& m : r.metrics()) {
    const bool have = m.steady() > 0;  // no steady-state sample: no median, min or max
    ms.push_back({{"metric", m.metric()},
                  {"samples", m.samples()},
                  {"steady", m.steady()},
                  {"value", OrNull(m.has_value(), m.value())},
                  {"pace", OrNull(m.has_value() && m.pace() > 0, m.pace())},
                  {"value_how", TextOrNull(m.value_how())},
                  {"median", OrNull(have, m.median())},
                  {"min", OrNull(have, m.min())},
                  {"max", OrNull(have, m.max())},
                  {"usable", m.usable()},
                  {"detected_warmup", m.detected_warmup()},
                  {"warnings", m.warnings()},
                  {"source", TextOrNull(m.source())}});
  }
  j["metrics"] = ms;
  j["stderr_tail"] = r.stderr_tail();
  j["created_at"] = r.created_at();
  j["started_at"] = TextOrNull(r.started_at());
  j["finished_at"] = TextOrNull(r.finished_at());
  return j;
}

std::string RunOwner(const v1::Run& x) {
  if (x.experiment_id()) return "exp " + std::to_string(x.experiment_id()) + " " + x.arm();
  if (!x.baseline_id()) return "-";
  const std::string kind = x.purpose() == "check"       ? "check"
                           : x.purpose() == "stability" ? "stability"
                                                        : "baseline";
  return kind + " " + std::to_string(x.baseline_id());
}

Table RunsTable(const v1::ListRunsResponse& r) {
  Table t{{"id", "for", "#", "attempt", "state", "agent", "samples", "detail"}, {}};
  for (const auto& x : r.runs()) {
    std::string detail =
        x.state() == "queued" || (x.state() == "assigned" && !x.wait_reason().empty())
            ? x.wait_reason()
            : x.reason();
    if (detail.empty() && x.state() == "succeeded") detail = x.finished_at();
    t.rows.push_back({std::to_string(x.id()), RunOwner(x), std::to_string(x.index()),
                      std::to_string(x.attempt()), x.state(), x.agent().empty() ? "-" : x.agent(),
                      std::to_string(x.samples()), detail});
  }
  return t;
}

std::string RunDetail(const v1::Run& r) {
  std::string out = "Run " + std::to_string(r.id()) + "  workload " + r.workload() + "  " +
                    RunOwner(r) + " #" + std::to_string(r.index()) + "  attempt " +
                    std::to_string(r.attempt()) + "\n";
  out += "state:   " + r.state();
  if (r.state() == "failed" || r.state() == "succeeded")
    out += r.signal() ? " (signal " + std::to_string(r.signal()) + ")"
                      : " (exit " + std::to_string(r.exit_code()) + ")";
  out += "\n";
  if (!r.reason().empty()) out += "reason:  " + r.reason() + "\n";
  if (!r.wait_reason().empty()) out += "waiting: " + r.wait_reason() + "\n";
  out += "agent:   " + (r.agent().empty() ? std::string("-") : r.agent());
  if (!r.node().empty() && r.node() != r.agent()) out += " on " + r.node();
  if (!r.external_id().empty()) out += " (job " + r.external_id() + ")";
  if (!r.placement().empty()) out += ", " + r.placement();
  out += "\n";
  out += "params:  " + FormatParams(r.params()) + "\n";
  out += "times:   created " + r.created_at() +
         (r.started_at().empty() ? "" : ", started " + r.started_at()) +
         (r.finished_at().empty() ? "" : ", finished " + r.finished_at()) + "\n";
  out += "samples: " + std::to_string(r.samples()) + "\n";
  if (r.metrics_size()) {
    Table t{{"metric", "samples", "warm-up", "steady", "value", "median", "min", "max", "health"},
            {}};
    for (const auto& m : r.metrics())
      t.rows.push_back(
          {m.metric(), std::to_string(m.samples()), std::to_string(m.samples() - m.steady()),
           std::to_string(m.steady()), m.has_value() ? FormatNumber(m.value()) : "—",
           m.steady() ? FormatNumber(m.median()) : "-", m.steady() ? FormatNumber(m.min()) : "-",
           m.steady() ? FormatNumber(m.max()) : "-", m.warnings().empty() ? "ok" : m.warnings()});
    if (r.live()) out += "\nso far (the run is still going; final when it ends):";
    out += "\n" + RenderTable(t);
    out +=
        "\nvalue = what the run delivered (compared by experiments), median = of its steady "
        "window (a diagnostic)\nsources:\n";
    for (const auto& m : r.metrics())
      out += "  " + m.metric() + ": " + (m.source().empty() ? "-" : m.source()) +
             (m.value_how().empty() ? "" : "; value: " + m.value_how()) + "\n";
  }
  if (!r.stderr_tail().empty()) out += "\nstderr (last lines):\n" + r.stderr_tail();
  return out;
}

ojson RunSamplesJson(const v1::RunSamples& r) {
  ojson j;
  j["run_id"] = r.run_id();
  j["workload"] = r.workload();
  j["attempt"] = r.attempt();
  j["state"] = r.state();
  j["live"] = r.live();
  j["max_points"] = r.max_points();
  ojson ms = ojson::array();
  for (const auto& m : r.metrics()) {
    ojson points = ojson::array(), skipped = ojson::array(), outliers = ojson::array();
    for (const auto& p : m.points()) points.push_back({{"step", p.step()}, {"value", p.value()}});
    for (const auto& k : m.skipped())
      skipped.push_back({{"step", k.step()},
                         {"value", OrNull(std::isfinite(k.value()), k.value())},
                         {"reason", k.skip_step() ? "skip_step" : "nonfinite"},
                         {"tag", TextOrNull(k.tag())}});
    for (const auto& p : m.outliers())
      outliers.push_back({{"step", p.step()}, {"value", p.value()}});
    const bool window = m.steady() > 0;
    ms.push_back({{"metric", m.metric()},
                  {"samples", m.samples()},
                  {"points_total", m.points_total()},
                  {"decimated", m.points_size() < m.points_total()},
                  {"points", std::move(points)},
                  {"declared_warmup_steps", m.declared_warmup_steps()},
                  {"detected_warmup", m.detected_warmup()},
                  {"warmup_end", OrNull(m.warmup_samples() > 0, m.warmup_end())},
                  {"steady", m.steady()},
                  {"steady_from", OrNull(window, m.steady_from())},
                  {"steady_to", OrNull(window, m.steady_to())},
                  {"median", OrNull(window, m.median())},
                  {"usable", m.usable()},
                  {"skipped_total", m.skipped_total()},
                  {"skipped", std::move(skipped)},
                  {"outliers_total", m.outliers_total()},
                  {"outliers", std::move(outliers)}});
  }
  j["metrics"] = std::move(ms);
  return j;
}

namespace {

std::string SkippedText(const v1::SkippedSample& k) {
  return "step " + std::to_string(k.step()) +
         (k.skip_step() ? " (skip_steps" + (k.tag().empty() ? "" : " " + k.tag()) + ")"
                        : " (NaN/Inf)");
}

}  // namespace

std::string RunSamplesDetail(const v1::RunSamples& r) {
  std::string out = "Run " + std::to_string(r.run_id()) + "  workload " + r.workload() +
                    "  attempt " + std::to_string(r.attempt()) + "  " + r.state() + "\n";
  if (r.live()) out += "so far (the run is still going; final when it ends)\n";
  for (const auto& m : r.metrics()) {
    out += "\n" + m.metric() + ": " + std::to_string(m.samples()) + " samples";
    if (m.points_size() < m.points_total())
      out += "; " + std::to_string(m.points_size()) + " of " + std::to_string(m.points_total()) +
             " points shown (decimated: the lowest and highest of each bucket)";
    out += "\n  warm-up: ";
    if (m.warmup_samples() > 0)
      out += "to step " + std::to_string(m.warmup_end()) + " (declared: steps up to " +
             std::to_string(m.declared_warmup_steps()) +
             "; detected: " + std::to_string(m.detected_warmup()) + " samples)";
    else
      out += "none";
    out += "\n  steady:  ";
    if (m.steady() > 0)
      out += "steps " + std::to_string(m.steady_from()) + ".." + std::to_string(m.steady_to()) +
             " (" + std::to_string(m.steady()) + " samples), median " + FormatNumber(m.median()) +
             (m.usable() ? "" : ", not usable");
    else
      out += "no window";
    if (m.skipped_total() > 0) {
      out += "\n  left out (" + std::to_string(m.skipped_total()) + "): ";
      for (int i = 0; i < m.skipped_size() && i < 10; ++i)
        out += (i ? ", " : "") + SkippedText(m.skipped(i));
      if (m.skipped_total() > 10) out += ", …";
    }
    if (m.outliers_total() > 0) {
      out += "\n  outliers beyond 5 MADs, counted (" + std::to_string(m.outliers_total()) + "): ";
      for (int i = 0; i < m.outliers_size() && i < 10; ++i)
        out += (i ? ", " : "") + std::string("step ") + std::to_string(m.outliers(i).step());
      if (m.outliers_total() > 10) out += ", …";
    }
    out += "\n";
    if (m.points_size() == 0) continue;
    Table t{{"step", "value", "phase"}, {}};
    for (const auto& p : m.points())
      t.rows.push_back({std::to_string(p.step()), FormatNumber(p.value()), p.phase()});
    out += RenderTable(t);
  }
  return out;
}

ojson AgentJson(const v1::Agent& a) {
  ojson j;
  j["name"] = a.name();
  j["labels"] = MapJson(a.labels());
  j["slots"] = a.slots();
  j["running"] = a.running();
  j["connected"] = a.connected();
  j["busy"] = a.busy();
  j["unhealthy"] = TextOrNull(a.unhealthy());
  j["executor"] = a.executor().empty() ? "local" : a.executor();
  j["isolated_slots"] = a.isolated_slots();
  j["last_seen"] = TextOrNull(a.last_seen());
  j["version"] = a.version();
  return j;
}

Table AgentsTable(const v1::ListAgentsResponse& r) {
  Table t{{"name", "status", "executor", "slots", "running", "labels", "last seen", "version"}, {}};
  for (const auto& a : r.agents())
    t.rows.push_back({a.name(),
                      !a.connected()           ? "disconnected"
                      : !a.unhealthy().empty() ? "unhealthy: " + a.unhealthy()
                      : a.busy()               ? "busy (idle probe)"
                                               : "connected",
                      a.executor().empty() ? "local" : a.executor(),
                      std::to_string(a.slots()) + (a.isolated_slots() ? " isolated" : ""),
                      std::to_string(a.running()), FormatParams(a.labels()), a.last_seen(),
                      a.version()});
  return t;
}

// --- workload show, workload list --all (issue 16) --------------------------------------------

ojson WorkloadListJson(const v1::Workload& w) {
  ojson j = WorkloadJson(w);
  j["archived"] = w.archived();
  j["archived_at"] = w.archived_at().empty() ? ojson(nullptr) : ojson(w.archived_at());
  return j;
}

Table WorkloadsTableWithArchived(const v1::ListWorkloadsResponse& r) {
  Table t = WorkloadsTable(r);
  t.headers.insert(t.headers.begin() + 1, "archived");
  for (int i = 0; i < r.workloads_size() && i < static_cast<int>(t.rows.size()); ++i) {
    const auto& w = r.workloads(i);
    t.rows[static_cast<size_t>(i)].insert(t.rows[static_cast<size_t>(i)].begin() + 1,
                                          w.archived() ? w.archived_at() : "-");
  }
  return t;
}

ojson WorkloadDetailJson(const v1::WorkloadDetail& d) {
  const v1::Workload& w = d.workload();
  ojson j;
  j["name"] = w.name();
  j["description"] = w.description();
  j["archived"] = w.archived();
  j["archived_at"] = w.archived_at().empty() ? ojson(nullptr) : ojson(w.archived_at());
  j["archived_by"] = d.archived_by().empty() ? ojson(nullptr) : ojson(d.archived_by());
  j["config_version"] = w.config_version();
  j["spec_revision"] = w.spec_revision();
  j["created_at"] = w.created_at();
  ojson params = ojson::array();
  for (const auto& p : d.params()) {
    ojson pj;
    pj["name"] = p.name();
    pj["type"] = p.type();
    pj["default"] = p.default_value();
    pj["range"] = p.range().empty() ? ojson(nullptr) : ojson(p.range());
    pj["current"] = p.current();
    if (!p.description().empty()) pj["description"] = p.description();
    params.push_back(pj);
  }
  j["params"] = params;
  j["coupled"] = ojson::array();
  for (const auto& g : d.coupled()) j["coupled"].push_back(g);
  ojson metrics = ojson::array();
  for (const auto& m : d.metrics()) {
    ojson mj;
    mj["name"] = m.name();
    mj["role"] = m.role();
    mj["better"] = m.better();
    mj["unit"] = m.unit();
    mj["source"] = m.source();
    mj["min_effect"] = m.min_effect();
    mj["tolerance"] = m.tolerance();
    metrics.push_back(mj);
  }
  j["metrics"] = metrics;
  j["run_policy"] = d.run_policy();
  j["history"] = {{"baselines", d.baselines()},
                  {"experiments", d.experiments()},
                  {"runs", d.runs()},
                  {"log_entries", d.log_entries()}};
  return j;
}

// One row per parameter and per metric (kind says which); the columns that do not apply are "".
Table WorkloadDetailCsv(const v1::WorkloadDetail& d) {
  Table t{{"kind", "name", "type", "default", "range", "current", "role", "better", "unit",
           "source", "min_effect"},
          {}};
  for (const auto& p : d.params())
    t.rows.push_back({"param", p.name(), p.type(), p.default_value(), p.range(), p.current(), "",
                      "", "", "", ""});
  for (const auto& m : d.metrics())
    t.rows.push_back({"metric", m.name(), "", "", "", "", m.role(), m.better(), m.unit(),
                      m.source(), FormatNumber(m.min_effect())});
  return t;
}

std::string WorkloadDetailText(const v1::WorkloadDetail& d) {
  const v1::Workload& w = d.workload();
  std::string out =
      "Workload " + w.name() + (w.description().empty() ? "" : ": " + w.description()) + "\n";
  if (w.archived())
    out += "archived: " + w.archived_at() +
           (d.archived_by().empty() ? "" : " by " + d.archived_by()) +
           " (hidden from workload list; tunectl workload unarchive " + w.name() + ")\n";
  out += "config: v" + std::to_string(w.config_version()) + ", spec revision " +
         std::to_string(w.spec_revision()) + ", created " + w.created_at() + "\n";
  out += "run policy: " + d.run_policy() + "\n";
  out += "history: " + std::to_string(d.baselines()) + " baseline(s), " +
         std::to_string(d.experiments()) + " experiment(s), " + std::to_string(d.runs()) +
         " run(s), " + std::to_string(d.log_entries()) + " log entr" +
         (d.log_entries() == 1 ? "y" : "ies") + "\n\nparams:\n";
  Table params{{"name", "type", "default", "range", "current"}, {}};
  for (const auto& p : d.params())
    params.rows.push_back({p.name(), p.type(), p.default_value(),
                           p.range().empty() ? "-" : p.range(),
                           p.current() + (p.current() != p.default_value() ? " *" : "")});
  out += RenderTable(params);
  if (d.coupled_size() > 0) {
    out += "coupled:";
    for (const auto& g : d.coupled()) out += " " + g;
    out += "\n";
  }
  out += "\nmetrics:\n";
  Table metrics{{"name", "role", "better", "unit", "min effect", "source"}, {}};
  for (const auto& m : d.metrics())
    metrics.rows.push_back({m.name(), m.role(), m.better(), m.unit().empty() ? "-" : m.unit(),
                            FormatPercent(m.min_effect()), m.source()});
  out += RenderTable(metrics);
  return out;
}

// --- CSV with raw values ----------------------------------------------------------------------

namespace {

std::string CsvCount(int64_t n) {
  return std::to_string(n);
}
std::string CsvOr(bool have, double v) {
  return have ? CsvNumber(v) : "";
}
std::string CsvId(int64_t id) {
  return id ? std::to_string(id) : "";
}
std::string CsvBool(bool b) {
  return b ? "true" : "false";
}

}  // namespace

Table RunSamplesCsv(const v1::RunSamples& r) {
  Table t{{"run_id", "attempt", "metric", "step", "value", "phase", "skipped", "tag"}, {}};
  for (const auto& m : r.metrics()) {
    std::map<int64_t, std::string> tag_of;  // skipped steps' tags
    std::vector<const v1::SkippedSample*> nonfinite;
    for (const auto& k : m.skipped()) {
      if (k.skip_step()) tag_of.emplace(k.step(), k.tag());
      if (!k.skip_step()) nonfinite.push_back(&k);
    }
    const auto row = [&](int64_t step, double value, const std::string& phase,
                         const std::string& skipped, const std::string& tag) {
      t.rows.push_back({std::to_string(r.run_id()), std::to_string(r.attempt()), m.metric(),
                        std::to_string(step), CsvNumber(value), phase, skipped, tag});
    };
    size_t k = 0;  // the points and the non-finite samples, merged in step order
    for (const auto& p : m.points()) {
      for (; k < nonfinite.size() && nonfinite[k]->step() < p.step(); ++k)
        row(nonfinite[k]->step(), nonfinite[k]->value(), "skipped", "nonfinite", "");
      const bool skip = p.phase() == "skipped";
      row(p.step(), p.value(), p.phase(), skip ? "skip_step" : "",
          skip && tag_of.count(p.step()) ? tag_of[p.step()] : "");
    }
    for (; k < nonfinite.size(); ++k)
      row(nonfinite[k]->step(), nonfinite[k]->value(), "skipped", "nonfinite", "");
  }
  return t;
}

Table BaselineCsv(const v1::Baseline& b) {
  Table t{{"baseline_id", "workload", "config_version", "metric", "unit", "better", "role", "n",
           "median", "mean", "stddev", "cv", "min", "max"},
          {}};
  for (const auto& s : b.summaries()) {
    const bool have = s.n() > 0;
    t.rows.push_back({std::to_string(b.id()), b.workload(), std::to_string(b.config_version()),
                      s.metric(), s.unit(), s.better(), s.role(), CsvCount(s.n()),
                      CsvOr(have, s.median()), CsvOr(have, s.mean()), CsvOr(s.n() > 1, s.stddev()),
                      CsvOr(s.n() > 1 && s.mean() != 0, s.cv()), CsvOr(have, s.min()),
                      CsvOr(have, s.max())});
  }
  return t;
}

Table BaselinesCsv(const v1::ListBaselinesResponse& r) {
  Table t{{"id", "workload", "config_version", "purpose", "state", "repeats", "runs_succeeded",
           "runs_failed", "primary_metric", "n", "median", "cv", "created_at", "finished_at"},
          {}};
  for (const auto& b : r.baselines()) {
    const v1::MetricSummary* primary = b.summaries_size() ? &b.summaries(0) : nullptr;
    for (const auto& s : b.summaries())
      if (s.role() == "primary") {
        primary = &s;
        break;
      }
    const bool have = primary && primary->n() > 0;
    t.rows.push_back(
        {std::to_string(b.id()), b.workload(), std::to_string(b.config_version()), b.purpose(),
         b.state(), std::to_string(b.repeats()), std::to_string(b.runs_succeeded()),
         std::to_string(b.runs_failed()), primary ? primary->metric() : "",
         primary ? CsvCount(primary->n()) : "", have ? CsvNumber(primary->median()) : "",
         have && primary->n() > 1 && primary->mean() != 0 ? CsvNumber(primary->cv()) : "",
         b.created_at(), b.finished_at()});
  }
  return t;
}

Table RunCsv(const v1::Run& r) {
  Table t{
      {"run_id", "workload", "baseline_id", "experiment_id", "arm", "attempt", "state", "metric",
       "samples", "warmup", "steady", "median", "min", "max", "usable", "warnings", "value"},
      {}};
  for (const auto& m : r.metrics()) {
    const bool have = m.steady() > 0;
    t.rows.push_back({std::to_string(r.id()), r.workload(), CsvId(r.baseline_id()),
                      CsvId(r.experiment_id()), r.arm(), std::to_string(r.attempt()), r.state(),
                      m.metric(), CsvCount(m.samples()), CsvCount(m.samples() - m.steady()),
                      CsvCount(m.steady()), CsvOr(have, m.median()), CsvOr(have, m.min()),
                      CsvOr(have, m.max()), CsvBool(m.usable()), m.warnings(),
                      CsvOr(m.has_value(), m.value())});
  }
  return t;
}

}  // namespace tunectl

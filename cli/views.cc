#include "cli/views.h"

#include <map>

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

ojson PageJson(ojson items, const std::string& next_page_token) {
  ojson j;
  j["items"] = std::move(items);
  j["next_page_token"] = next_page_token.empty() ? ojson(nullptr) : ojson(next_page_token);
  return j;
}

std::string NextPageHint(const std::string& next_page_token) {
  return "more: the next page with --page-token " + next_page_token;
}

namespace {
ojson StringOrNull(const std::string& s) {
  return s.empty() ? ojson() : ojson(s);
}
}  // namespace

ojson TokenJson(const v1::Token& t) {
  ojson j;
  j["name"] = t.name();
  j["role"] = t.role();
  j["agent"] = StringOrNull(t.agent());
  j["created_at"] = t.created_at();
  j["created_by"] = t.created_by();
  j["revoked_at"] = StringOrNull(t.revoked_at());
  j["revoked_by"] = StringOrNull(t.revoked_by());
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
  j["agent"] = StringOrNull(w.agent());
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

ojson BaselineJson(const v1::Baseline& b) {
  ojson j;
  j["id"] = b.id();
  j["workload"] = b.workload();
  j["purpose"] = b.purpose();
  j["config_version"] = b.config_version();
  j["spec_revision"] = b.spec_revision();
  j["state"] = b.state();
  if (!b.reason().empty()) j["reason"] = b.reason();
  j["repeats"] = b.repeats();
  j["runs"] = {
      {"succeeded", b.runs_succeeded()}, {"failed", b.runs_failed()}, {"active", b.runs_active()}};
  j["params"] = MapJson(b.params());
  ojson sums = ojson::array();
  for (const auto& s : b.summaries()) {
    ojson m;
    m["metric"] = s.metric();
    m["unit"] = s.unit();
    m["better"] = s.better();
    m["role"] = s.role();
    m["n"] = s.n();
    m["median"] = s.median();
    m["mean"] = s.mean();
    m["stddev"] = s.stddev();
    m["cv"] = s.cv();
    m["min"] = s.min();
    m["max"] = s.max();
    sums.push_back(m);
  }
  j["summary"] = sums;
  j["created_at"] = b.created_at();
  j["finished_at"] = b.finished_at();
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

ojson RunJson(const v1::Run& r) {
  ojson j;
  j["id"] = r.id();
  j["baseline_id"] = r.baseline_id();
  j["workload"] = r.workload();
  j["experiment_id"] = r.experiment_id();
  j["arm"] = r.arm();
  j["purpose"] = r.purpose();
  j["index"] = r.index();
  j["attempt"] = r.attempt();
  j["state"] = r.state();
  j["live"] = r.live();  // metrics from the samples so far (a running run)
  j["agent"] = r.agent();
  j["node"] = r.node();
  j["slot"] = r.slot();
  j["external_id"] = r.external_id();
  j["placement"] = r.placement();
  j["params"] = MapJson(r.params());
  j["exit_code"] = r.exit_code();
  j["signal"] = r.signal();
  j["reason"] = r.reason();
  j["wait_reason"] = r.wait_reason();
  j["samples"] = r.samples();
  ojson ms = ojson::array();
  for (const auto& m : r.metrics())
    ms.push_back({{"metric", m.metric()},
                  {"samples", m.samples()},
                  {"steady", m.steady()},
                  {"median", m.median()},
                  {"min", m.min()},
                  {"max", m.max()},
                  {"usable", m.usable()},
                  {"detected_warmup", m.detected_warmup()},
                  {"warnings", m.warnings()},
                  {"source", m.source()}});
  j["metrics"] = ms;
  j["stderr_tail"] = r.stderr_tail();
  j["created_at"] = r.created_at();
  j["started_at"] = r.started_at();
  j["finished_at"] = r.finished_at();
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
    Table t{{"metric", "samples", "warm-up", "steady", "median", "min", "max", "health"}, {}};
    for (const auto& m : r.metrics())
      t.rows.push_back(
          {m.metric(), std::to_string(m.samples()), std::to_string(m.samples() - m.steady()),
           std::to_string(m.steady()), m.steady() ? FormatNumber(m.median()) : "-",
           m.steady() ? FormatNumber(m.min()) : "-", m.steady() ? FormatNumber(m.max()) : "-",
           m.warnings().empty() ? "ok" : m.warnings()});
    if (r.live()) out += "\nso far (the run is still going; final when it ends):";
    out += "\n" + RenderTable(t);
    out += "\nsources:\n";
    for (const auto& m : r.metrics())
      out += "  " + m.metric() + ": " + (m.source().empty() ? "-" : m.source()) + "\n";
  }
  if (!r.stderr_tail().empty()) out += "\nstderr (last lines):\n" + r.stderr_tail();
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
  j["unhealthy"] = a.unhealthy();
  j["executor"] = a.executor();
  j["isolated_slots"] = a.isolated_slots();
  j["last_seen"] = a.last_seen();
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

}  // namespace tunectl

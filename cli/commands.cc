#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "cli/tool_commands.h"
#include "cli/views.h"
#include "core/audit_chain.h"
#include "core/auth.h"
#include "core/lifecycle.h"
#include "core/run_logs.h"
#include "core/spec.h"
#include "sys/ed25519.h"

namespace tunectl {
namespace {

int Fail(std::ostream& err, const Status& s) {
  err << "error: " << s.message() << "\n";
  return ExitCode(s);
}

// The page a list command asks for: --limit (0 = all of them, within the server's cap),
// --page-token, --since (where the list has a time).
template <typename Req>
void SetPage(const CliOptions& o, Req* r) {
  if (o.limit_given && o.limit == 0)
    r->set_all(true);
  else
    r->set_limit(o.limit);
  r->set_page_token(o.page_token);
  if constexpr (requires { r->set_since(o.since); }) r->set_since(o.since);
}

// The declared parameter types of workloads (GetConfig carries the spec), asked once per
// workload and only for -o json; without them (an error, an old server) values are typed by
// their literals (ParamValueJson).
class ParamTypesFor {
 public:
  ParamTypesFor(Client& c, const CliOptions& o) : c_(c), json_(o.output == "json") {}
  const ParamTypes& operator()(const std::string& workload) {
    if (auto it = cache_.find(workload); it != cache_.end()) return it->second;
    ParamTypes types;
    if (json_ && !workload.empty()) {
      v1::GetConfigRequest req;
      req.set_workload(workload);
      if (auto cfg = c_.GetConfig(req); cfg.ok()) types = ParamTypesOf(cfg->spec_json());
    }
    return cache_.emplace(workload, std::move(types)).first->second;
  }

 private:
  Client& c_;
  bool json_;
  std::map<std::string, ParamTypes> cache_;
};

int NoName(std::ostream& err, const std::string& kind) {
  return Fail(err, Status::InvalidArgument("-o name: a " + kind +
                                           " has no name of its own; use -o json or -o csv"));
}

// -o json: the document ({"apiVersion", "kind", ...}); -o name: kind/id. Returns -1 for the
// other formats (the caller prints its own text), else the exit code.
template <typename Msg, typename Json>
int PrintDocument(const CliOptions& o, std::ostream& out, std::ostream& err, const Msg& m,
                  Json json) {
  if (o.output == "json") {
    out << Document(DocKind<Msg>::kName, json(m)).dump(2) << "\n";
    return 0;
  }
  if (o.output == "name") {
    if constexpr (requires { NameOf(m); }) {
      out << NameOf(m) << "\n";
      return 0;
    } else {
      return NoName(err, DocKind<Msg>::kName);
    }
  }
  return -1;
}

// Renders a list result as table, JSON, CSV or names. Its JSON is {"apiVersion", "kind":
// "<Kind>List", "items": [...], "next_page_token": ...}; in a table or CSV the token is a hint
// line on stderr. `csv` (when given) is the list with raw values, else the table's cells.
template <typename Resp, typename Item, typename Json>
int Emit(const CliOptions& o, std::ostream& out, std::ostream& err, const Resp& resp,
         Table (*table)(const Resp&), const google::protobuf::RepeatedPtrField<Item>& items,
         Json json, Table (*csv)(const Resp&) = nullptr) {
  auto f = ParseOutputFormat(o.output);
  if (!f.ok()) return Fail(err, f.status());
  std::string token;
  if constexpr (requires { resp.next_page_token(); }) token = resp.next_page_token();
  switch (*f) {
    case OutputFormat::kJson: {
      ojson arr = ojson::array();
      for (const auto& i : items) arr.push_back(json(i));
      out << ListDocument(DocKind<Item>::kName, std::move(arr), token).dump(2) << "\n";
      return 0;
    }
    case OutputFormat::kName:
      if constexpr (requires(const Item& i) { NameOf(i); }) {
        for (const auto& i : items) out << NameOf(i) << "\n";
        break;
      } else {
        return NoName(err, DocKind<Item>::kName);
      }
    case OutputFormat::kCsv: out << RenderCsv(csv ? csv(resp) : table(resp)); break;
    case OutputFormat::kTable: out << RenderTable(table(resp)); break;
  }
  if (!token.empty()) err << NextPageHint(token) << "\n";
  return 0;
}

// One object as a table (its detail text), JSON document, name, or CSV: `csv` when given (raw
// values), else the JSON document's scalar fields as one row.
template <typename Msg, typename Json>
int ShowOne(const Msg& m, const CliOptions& o, std::ostream& out, std::ostream& err, Json json,
            std::string (*detail)(const Msg&), Table (*csv)(const Msg&) = nullptr) {
  auto f = ParseOutputFormat(o.output);
  if (!f.ok()) return Fail(err, f.status());
  if (int rc = PrintDocument(o, out, err, m, json); rc >= 0) return rc;
  if (*f == OutputFormat::kCsv)
    out << RenderCsv(csv ? csv(m) : DocumentCsv(json(m)));
  else
    out << detail(m);
  return 0;
}

// Parses --timeout for --wait; 0 = no limit.
Result<int64_t> WaitTimeout(const CliOptions& o) {
  if (o.timeout.empty()) return int64_t{0};
  auto t = ParseDurationMs(o.timeout);
  if (!t.ok()) return Status::InvalidArgument("--timeout: " + t.status().message());
  return *t;
}

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void OnInterrupt(int) {
  g_interrupted = 1;
}

// SIGINT sets g_interrupted while it lives, unless SIGINT is ignored; the previous handler is put
// back after.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted = 0;
    previous_ = std::signal(SIGINT, OnInterrupt);
    // Ignored (a background job of a shell script): it stays ignored.
    if (previous_ == SIG_IGN) std::signal(SIGINT, SIG_IGN);
  }
  ~InterruptScope() { std::signal(SIGINT, previous_); }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  void (*previous_)(int);
};

// What a wait is for: `what` ("experiment 7") keeps running on the server when the wait ends
// early; `follow` is the command that waits for it again, `stop` the one that stops it.
struct WaitFor {
  std::string what, follow, stop;
};

// Polls every 500 ms until `poll` reports done, showing its progress line on stderr (redrawn in
// place on a terminal, a new line per change otherwise). `poll(elapsed_s, &line)` returns true
// when done. Returns 0, or the exit code of an error, of the --timeout (1) or of Ctrl-C (130),
// the last two saying that the work goes on and how to follow it again.
template <typename Poll>
int WaitWithProgress(const CliOptions& o, std::ostream& err, int64_t timeout_ms, const WaitFor& w,
                     Poll poll) {
  const auto start = std::chrono::steady_clock::now();
  const InterruptScope interrupt;
  const std::string goes_on = w.what +
                              " keeps running on the server; follow it again: " + w.follow +
                              (w.stop.empty() ? "" : "; stop it: " + w.stop);
  std::string last;
  for (;;) {
    if (g_interrupted) {
      if (o.interactive) err << "\n";
      err << "interrupted: only the waiting stopped; " << goes_on << "\n";
      return 130;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string line;
    Result<bool> done = poll(elapsed, &line);
    if (!done.ok()) return Fail(err, done.status());
    if (o.interactive)
      err << "\r\033[K" << line << std::flush;
    else if (line.substr(0, line.rfind(" [")) != last.substr(0, last.rfind(" [")))
      err << line << "\n";
    last = line;
    if (*done) break;
    if (timeout_ms && elapsed * 1000 > static_cast<double>(timeout_ms)) {
      if (o.interactive) err << "\n";
      err << "error: --timeout " << o.timeout << " reached; " << goes_on << "\n";
      return 1;
    }
    for (int i = 0; i < 5 && !g_interrupted; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (o.interactive) err << "\n";
  return 0;
}

// Waits for baseline `cur` to finish, showing progress; `cur` ends as last seen.
int WaitBaseline(Client& c, const CliOptions& o, std::ostream& err, int64_t timeout_ms,
                 v1::Baseline* cur) {
  const int64_t bid = cur->id();
  const std::string id = std::to_string(bid);
  const WaitFor what{"baseline " + id, "tunectl baseline show " + id + " --wait",
                     "tunectl baseline cancel " + id};
  return WaitWithProgress(o, err, timeout_ms, what,
                          [&](double elapsed, std::string* line) -> Result<bool> {
                            auto now = c.GetBaseline(bid);
                            if (!now.ok()) return now.status();
                            *cur = *now;
                            v1::ListRunsRequest list;
                            list.set_baseline_id(bid);
                            list.set_all(true);  // a baseline has at most 1000 runs
                            auto runs = c.ListRuns(list);
                            if (!runs.ok()) return runs.status();
                            *line = BaselineProgress(*cur, *runs, elapsed);
                            return cur->state() != "running";
                          });
}

// Waits for experiment `cur` to be decided, showing each arm and the estimate so far.
int WaitExperiment(Client& c, const CliOptions& o, std::ostream& err, int64_t timeout_ms,
                   v1::Experiment* cur) {
  const int64_t eid = cur->id();
  const std::string id = std::to_string(eid);
  const WaitFor what{"experiment " + id, "tunectl experiment show " + id + " --wait",
                     "tunectl experiment cancel " + id};
  return WaitWithProgress(o, err, timeout_ms, what,
                          [&](double elapsed, std::string* line) -> Result<bool> {
                            auto now = c.GetExperiment(eid);
                            if (!now.ok()) return now.status();
                            *cur = *now;
                            *line = ExperimentProgress(*cur, elapsed);
                            return cur->state() != "running";
                          });
}

int WorkloadApply(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.file.empty())
    return Fail(err,
                Status::InvalidArgument(
                    "-f: missing; pass the workload file, e.g. -f examples/workloads/demo.yaml"));
  std::string text;
  if (o.file == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(o.file);
    if (!in) return Fail(err, Status::InvalidArgument("-f: cannot read " + o.file));
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  // Validate locally first: same parser as the server, so errors come without a round trip.
  auto spec = ParseWorkloadSpec(text, o.file);
  if (!spec.ok()) return Fail(err, spec.status());
  if (Status st = CheckSpecToApply(*spec, o.file); !st.ok()) return Fail(err, st);
  v1::ApplyWorkloadRequest req;
  req.set_spec(text);
  req.set_source(o.file);
  auto r = c.ApplyWorkload(req);
  if (!r.ok()) return Fail(err, r.status());
  if (r->workload().archived())
    err << "note: workload " << r->workload().name()
        << " is archived: it takes no new baselines or experiments until tunectl workload "
           "unarchive "
        << r->workload().name() << "\n";
  const auto with_action = [&](const v1::Workload& w) {
    ojson j = WorkloadJson(w);
    j["action"] = r->action();
    return j;
  };
  if (PrintDocument(o, out, err, r->workload(), with_action) < 0) {
    out << "workload " << r->workload().name() << " " << r->action() << " (config v"
        << r->workload().config_version() << ", revision " << r->workload().spec_revision()
        << ")\n";
  }
  return 0;
}

int WorkloadList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListWorkloadsRequest req;
  SetPage(o, &req);
  req.set_include_archived(o.all);
  auto r = c.ListWorkloads(req);
  if (!r.ok()) return Fail(err, r.status());
  return Emit(o, out, err, *r, o.all ? &WorkloadsTableWithArchived : &WorkloadsTable,
              r->workloads(), &WorkloadListJson);
}

// The workload a verb of one workload names (positional or --workload): required.
Status NeedWorkload(const CliOptions& o, const char* verb) {
  if (!o.workload.empty()) return Status::Ok();
  return Status::InvalidArgument(std::string("workload: missing; name it: tunectl workload ") +
                                 verb + " NAME (tunectl workload list)");
}

int WorkloadShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto f = ParseOutputFormat(o.output);
  if (!f.ok()) return Fail(err, f.status());
  if (Status st = NeedWorkload(o, "show"); !st.ok()) return Fail(err, st);
  auto d = c.GetWorkload(o.workload);
  if (!d.ok()) return Fail(err, d.status());
  switch (*f) {
    case OutputFormat::kJson:
      out << Document("WorkloadDetail", WorkloadDetailJson(*d)).dump(2) << "\n";
      break;
    case OutputFormat::kName: out << "workload/" << o.workload << "\n"; break;
    case OutputFormat::kCsv: out << RenderCsv(WorkloadDetailCsv(*d)); break;
    case OutputFormat::kTable: out << WorkloadDetailText(*d); break;
  }
  return 0;
}

int WorkloadDelete(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (Status st = NeedWorkload(o, "delete"); !st.ok()) return Fail(err, st);
  auto w = c.DeleteWorkload(o.workload);
  if (!w.ok()) return Fail(err, w.status());
  if (PrintDocument(o, out, err, *w, &WorkloadListJson) < 0)
    out << "workload " << w->name() << " deleted\n";
  return 0;
}

int WorkloadArchive(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (Status st = NeedWorkload(o, "archive"); !st.ok()) return Fail(err, st);
  auto w = c.ArchiveWorkload(o.workload);
  if (!w.ok()) return Fail(err, w.status());
  if (PrintDocument(o, out, err, *w, &WorkloadListJson) < 0)
    out << "workload " << w->name() << " archived (" << w->archived_at()
        << "): its history is kept; it is hidden from workload list (--all shows it) and takes "
           "no new baselines, experiments or regression runs until tunectl workload unarchive "
        << w->name() << "\n";
  return 0;
}

int WorkloadUnarchive(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (Status st = NeedWorkload(o, "unarchive"); !st.ok()) return Fail(err, st);
  auto w = c.UnarchiveWorkload(o.workload);
  if (!w.ok()) return Fail(err, w.status());
  if (PrintDocument(o, out, err, *w, &WorkloadListJson) < 0)
    out << "workload " << w->name() << " unarchived: listed again and open to new baselines and "
        << "experiments\n";
  return 0;
}

int ShowBaseline(Client& c, const v1::Baseline& b, const CliOptions& o, std::ostream& out,
                 std::ostream& err) {
  ParamTypesFor types_of(c, o);
  const ParamTypes& types = types_of(b.workload());
  return ShowOne(
      b, o, out, err, [&](const v1::Baseline& x) { return BaselineJson(x, types); },
      &BaselineDetail, &BaselineCsv);
}

int BaselineCreate(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  auto timeout_ms = WaitTimeout(o);
  if (!timeout_ms.ok()) return Fail(err, timeout_ms.status());
  if (o.workload.empty()) {
    v1::ListWorkloadsRequest two;
    two.set_limit(2);
    auto all = c.ListWorkloads(two);
    if (!all.ok()) return Fail(err, all.status());
    if (all->workloads_size() > 1) {
      err << "error: --workload: several workloads exist; name one:\n"
          << RenderTable(WorkloadsTable(*all));
      return 2;
    }
  }
  v1::CreateBaselineRequest req;
  req.set_workload(o.workload);
  req.set_repeats(o.repeats);
  req.set_request_id(o.request_id);
  auto b = c.CreateBaseline(req);
  if (!b.ok()) return Fail(err, b.status());
  err << "baseline " << b->id() << " created: " << b->workload() << " config v"
      << b->config_version() << ", " << b->repeats() << " runs queued\n";
  if (!o.wait) {
    ParamTypesFor types(c, o);
    auto json = [&](const v1::Baseline& x) { return BaselineJson(x, types(x.workload())); };
    if (PrintDocument(o, out, err, *b, json) < 0) out << b->id() << "\n";
    return 0;
  }
  v1::Baseline cur = *b;
  int waited = WaitBaseline(c, o, err, *timeout_ms, &cur);
  if (waited != 0) return waited;
  int rc = ShowBaseline(c, cur, o, out, err);
  if (rc == 0 && cur.state() == "completed" && (o.output == "table" || o.output == "wide")) {
    // Step 2 of the loop follows from step 1: what the figures point at.
    if (auto advice = c.AdviseBaseline(cur.id()); advice.ok())
      out << "\n" << AdvisorDetail(*advice);
    else
      err << "note: no advice: " << advice.status().message() << "\n";
  }
  if (rc == 0 && cur.state() == "failed") {
    err << "error: baseline " << cur.id()
        << " failed: " << (cur.reason().empty() ? "no run succeeded" : cur.reason())
        << " (tunectl run list --baseline " << cur.id() << ")\n";
    return 1;
  }
  return rc;
}

int BaselineShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto timeout_ms = WaitTimeout(o);
  if (!timeout_ms.ok()) return Fail(err, timeout_ms.status());
  auto b = c.GetBaseline(o.id);
  if (!b.ok()) return Fail(err, b.status());
  if (o.wait && b->state() == "running")
    if (int waited = WaitBaseline(c, o, err, *timeout_ms, &*b); waited != 0) return waited;
  return ShowBaseline(c, *b, o, out, err);
}

int BaselineList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListBaselinesRequest req;
  req.set_workload(o.workload);
  SetPage(o, &req);
  auto r = c.ListBaselines(req);
  if (!r.ok()) return Fail(err, r.status());
  ParamTypesFor types(c, o);
  return Emit(
      o, out, err, *r, &BaselinesTable, r->baselines(),
      [&](const v1::Baseline& x) { return BaselineJson(x, types(x.workload())); }, &BaselinesCsv);
}

int RunList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.baseline != 0 && o.experiment != 0)
    return Fail(err, Status::InvalidArgument(
                         "--baseline and --experiment: give one (an experiment's runs are its own "
                         "control and variant runs, not its baseline's)"));
  if (o.baseline < 0 || o.experiment < 0)
    return Fail(err,
                Status::InvalidArgument(
                    std::string(o.baseline < 0 ? "--baseline: " + std::to_string(o.baseline)
                                               : "--experiment: " + std::to_string(o.experiment)) +
                    " is not an id; allowed: a positive id"));
  v1::ListRunsRequest req;
  req.set_baseline_id(o.baseline);
  req.set_experiment_id(o.experiment);
  SetPage(o, &req);
  auto r = c.ListRuns(req);
  if (!r.ok()) return Fail(err, r.status());
  ParamTypesFor types(c, o);
  return Emit(o, out, err, *r, &RunsTable, r->runs(),
              [&](const v1::Run& x) { return RunJson(x, types(x.workload())); });
}

int RunShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto r = c.GetRun(o.id);
  if (!r.ok()) return Fail(err, r.status());
  ParamTypesFor types(c, o);
  return ShowOne(
      *r, o, out, err, [&](const v1::Run& x) { return RunJson(x, types(x.workload())); },
      &RunDetail, &RunCsv);
}

int RunSamples(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::GetRunSamplesRequest req;
  req.set_run_id(o.id);
  req.set_metric(o.metric);
  req.set_attempt(o.attempt);
  req.set_max_points(o.max_points);
  auto r = c.GetRunSamples(req);
  if (!r.ok()) return Fail(err, r.status());
  return ShowOne(*r, o, out, err, &RunSamplesJson, &RunSamplesDetail, &RunSamplesCsv);
}

int RunLogs(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.output != "table" && o.output != "json")
    return Fail(err, Status::InvalidArgument(
                         "-o: \"" + o.output +
                         "\" is not allowed for run logs; allowed: table (the output as the job "
                         "wrote it) or json (one RunLogLine object per line)"));
  v1::StreamRunLogsRequest req;
  req.set_run_id(o.id);
  req.set_attempt(o.attempt);
  req.set_follow(o.follow);
  req.set_tail_lines(o.tail);
  const bool json = o.output == "json";
  std::string carry;  // -o json: the line not ended yet
  int attempt = 0;
  std::string agent;
  auto emit_lines = [&](const std::vector<std::string>& lines) {
    for (const auto& l : lines) out << RunLogLineJson(o.id, attempt, agent, l).dump() << "\n";
  };
  Status st = c.StreamRunLogs(req, [&](const v1::RunLogChunk& ch) {
    if (!ch.note().empty()) {
      err << "run logs: " << ch.note() << "\n";
      return true;
    }
    if (json && ch.attempt() != attempt && !carry.empty()) {  // a new attempt: end the old line
      emit_lines({carry});
      carry.clear();
    }
    attempt = ch.attempt();
    agent = ch.agent();
    if (json)
      emit_lines(TakeLines(&carry, ch.data()));
    else
      out << ch.data();
    out.flush();
    return static_cast<bool>(out);
  });
  if (json && !carry.empty()) emit_lines({carry});
  out.flush();
  if (!st.ok()) return Fail(err, st);
  return 0;
}

int AgentList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto r = c.ListAgents();
  if (!r.ok()) return Fail(err, r.status());
  return Emit(o, out, err, *r, &AgentsTable, r->agents(), &AgentJson);
}

int AgentRemove(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.name.empty())
    return Fail(err,
                Status::InvalidArgument(
                    "agent: missing; name it: tunectl agent remove NAME (tunectl agent list)"));
  auto r = c.RemoveAgent(o.name);
  if (!r.ok()) return Fail(err, r.status());
  const auto json = [&](const v1::Agent& a) {
    ojson j = AgentJson(a);
    j["requeued"] = r->requeued();
    return j;
  };
  if (PrintDocument(o, out, err, r->agent(), json) < 0) {
    out << "agent " << r->agent().name() << " removed from agent list";
    if (r->requeued() > 0) out << "; " << r->requeued() << " unfinished run(s) it held requeued";
    out << " (it is listed again if it registers again)\n";
  }
  return 0;
}

// --- the loop ---------------------------------------------------------------------------------

int BaselineAdvise(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto r = c.AdviseBaseline(o.id);
  if (!r.ok()) return Fail(err, r.status());
  return ShowOne(*r, o, out, err, &AdvisorJson, &AdvisorDetail);
}

int HypothesisCreate(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::CreateHypothesisRequest req;
  req.set_baseline_id(o.baseline);
  req.set_workload(o.workload);
  for (const auto& p : o.param_values) req.add_vary(p);
  req.set_expect(o.expect);
  req.set_evidence(o.evidence);
  req.set_statement(o.statement);
  req.set_request_id(o.request_id);
  auto h = c.CreateHypothesis(req);
  if (!h.ok()) return Fail(err, h.status());
  ParamTypesFor types(c, o);
  auto json = [&](const v1::Hypothesis& x) { return HypothesisJson(x, types(x.workload())); };
  if (PrintDocument(o, out, err, *h, json) < 0) {
    err << "hypothesis " << h->id() << " recorded: " << h->change().description() << ", expect "
        << h->expect() << "\n";
    if (auto full = c.GetHypothesis(h->id()); full.ok() && full->earlier_size() > 0) {
      err << "tried before on the same parameter:\n";
      for (const auto& e : full->earlier()) err << "  " << e << "\n";
    }
    err << "next: tunectl experiment run --hypothesis " << h->id() << " --wait\n";
    out << h->id() << "\n";
  }
  return 0;
}

int HypothesisShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto h = c.GetHypothesis(o.id);
  if (!h.ok()) return Fail(err, h.status());
  ParamTypesFor types(c, o);
  return ShowOne(
      *h, o, out, err,
      [&](const v1::Hypothesis& x) { return HypothesisJson(x, types(x.workload())); },
      &HypothesisDetail, &HypothesisCsv);
}

int HypothesisList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListHypothesesRequest req;
  req.set_workload(o.workload);
  SetPage(o, &req);
  auto r = c.ListHypotheses(req);
  if (!r.ok()) return Fail(err, r.status());
  ParamTypesFor types(c, o);
  return Emit(o, out, err, *r, &HypothesesTable, r->hypotheses(),
              [&](const v1::Hypothesis& x) { return HypothesisJson(x, types(x.workload())); });
}

int ExperimentRun(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  auto timeout_ms = WaitTimeout(o);
  if (!timeout_ms.ok()) return Fail(err, timeout_ms.status());
  v1::RunExperimentRequest req;
  req.set_workload(o.workload);
  req.set_baseline_id(o.baseline);
  for (const auto& v : o.vary) req.add_vary(v);
  req.set_hypothesis_id(o.hypothesis);
  req.set_repeats(o.repeats);
  req.set_request_id(o.request_id);
  req.set_again(o.again);
  req.set_again_reason(o.reason);
  auto e = c.RunExperiment(req);
  if (!e.ok()) return Fail(err, e.status());
  err << "experiment " << e->id() << " started: " << e->workload() << " "
      << e->change().description() << " against baseline " << e->baseline_id() << ", "
      << e->repeats() << " control + " << e->repeats() << " variant runs interleaved\n";
  ParamTypesFor types(c, o);
  auto json = [&](const v1::Experiment& x) { return ExperimentJson(x, types(x.workload())); };
  if (!o.wait) {
    if (PrintDocument(o, out, err, *e, json) < 0) out << e->id() << "\n";
    return 0;
  }
  v1::Experiment cur = *e;
  int waited = WaitExperiment(c, o, err, *timeout_ms, &cur);
  if (waited != 0) return waited;
  return ShowOne(cur, o, out, err, json, &ExperimentDetail, &VerdictCsv);
}

int ExperimentShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto timeout_ms = WaitTimeout(o);
  if (!timeout_ms.ok()) return Fail(err, timeout_ms.status());
  auto e = c.GetExperiment(o.id);
  if (!e.ok()) return Fail(err, e.status());
  if (o.wait && e->state() == "running")
    if (int waited = WaitExperiment(c, o, err, *timeout_ms, &*e); waited != 0) return waited;
  ParamTypesFor types(c, o);
  return ShowOne(
      *e, o, out, err,
      [&](const v1::Experiment& x) { return ExperimentJson(x, types(x.workload())); },
      &ExperimentDetail, &VerdictCsv);
}

int ExperimentList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto state = ParseExperimentStateFilter(o.state); !state.ok())
    return Fail(err, state.status());
  v1::ListExperimentsRequest req;
  req.set_workload(o.workload);
  req.set_state(o.state);
  SetPage(o, &req);
  auto r = c.ListExperiments(req);
  if (!r.ok()) return Fail(err, r.status());
  ParamTypesFor types(c, o);
  return Emit(
      o, out, err, *r, &ExperimentsTable, r->experiments(),
      [&](const v1::Experiment& x) { return ExperimentJson(x, types(x.workload())); },
      &ExperimentsCsv);
}

int BaselineCancel(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  auto b = c.CancelBaseline(o.id);
  if (!b.ok()) return Fail(err, b.status());
  err << "baseline " << b->id() << " cancelled; " << b->runs_active()
      << " running run(s) are being stopped\n";
  ParamTypesFor types(c, o);
  auto json = [&](const v1::Baseline& x) { return BaselineJson(x, types(x.workload())); };
  return std::max(0, PrintDocument(o, out, err, *b, json));
}

int ExperimentCancel(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto e = c.CancelExperiment(o.id);
  if (!e.ok()) return Fail(err, e.status());
  err << "experiment " << e->id() << " cancelled; " << e->runs_active()
      << " running run(s) are being stopped\n";
  ParamTypesFor types(c, o);
  auto json = [&](const v1::Experiment& x) { return ExperimentJson(x, types(x.workload())); };
  return std::max(0, PrintDocument(o, out, err, *e, json));
}

int ExperimentFreeze(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.reason.empty() && !o.force)
    return Fail(err,
                Status::InvalidArgument(
                    "--reason goes with --force (an improved experiment freezes without one)"));
  v1::FreezeExperimentRequest req;
  req.set_id(o.id);
  req.set_force(o.force);
  req.set_reason(o.reason);
  auto e = c.FreezeExperiment(req);
  if (!e.ok()) return Fail(err, e.status());
  ParamTypesFor types(c, o);
  auto json = [&](const v1::Experiment& x) { return ExperimentJson(x, types(x.workload())); };
  if (PrintDocument(o, out, err, *e, json) < 0) {
    out << "experiment " << e->id() << " frozen: " << e->workload() << " config v"
        << e->frozen_version() << " = v" << e->config_version() << " + "
        << e->change().description() << "\n";
  }
  return 0;
}

int ConfigShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::GetConfigRequest req;
  req.set_workload(o.workload);
  auto cfg = c.GetConfig(req);
  if (!cfg.ok()) return Fail(err, cfg.status());
  return ShowOne(*cfg, o, out, err, &ConfigJson, &ConfigDetail, &ConfigCsv);
}

int ConfigExportCmd(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.version < 0)
    return Fail(err, Status::InvalidArgument("--version: " + std::to_string(o.version) +
                                             " is not a config version; allowed: 1 or more (0 or "
                                             "none = the current one)"));
  v1::GetConfigRequest req;
  req.set_workload(o.workload);
  req.set_version(o.version);
  auto cfg = c.GetConfig(req);
  if (!cfg.ok()) return Fail(err, cfg.status());
  // The version asked for (the server's `selected`), exported as the current one is.
  v1::Config shown = *cfg;
  if (cfg->has_selected()) *shown.mutable_current() = cfg->selected();
  if (o.version > 0 && shown.current().version() != o.version)
    return Fail(err, Status::NotFound("workload " + cfg->workload() + " has no config version " +
                                      std::to_string(o.version)));
  auto text = ConfigExport(shown, o.format);
  if (!text.ok()) return Fail(err, text.status());
  out << *text;
  return 0;
}

int Log(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListLogRequest req;
  req.set_workload(o.workload);
  req.set_param(o.param);
  SetPage(o, &req);
  auto r = c.ListLog(req);
  if (!r.ok()) return Fail(err, r.status());
  if (!r->goal().empty() && o.output == "table") out << "goal: " << r->goal() << "\n\n";
  return Emit(o, out, err, *r, o.param.empty() ? &LogTable : &LogParamTable, r->entries(), &LogJson,
              &LogCsv);
}

// --- audit ------------------------------------------------------------------------------------

int AuditVerify(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::VerifyAuditRequest req;
  std::string against_key;
  if (!o.against.empty()) {
    std::ifstream in(o.against);
    const ojson head = in ? ojson::parse(in, nullptr, false) : ojson();
    if (!head.is_object() || !head.contains("seq") || !head["seq"].is_number_integer() ||
        !head.contains("hash") || !head["hash"].is_string())
      return Fail(err,
                  Status::InvalidArgument("--against: " + o.against +
                                          " is not a head written by `tunectl audit head -o json` "
                                          "({\"seq\": N, \"hash\": \"…\"})"));
    req.set_against_seq(head["seq"].get<int64_t>());
    req.set_against_hash(head["hash"].get<std::string>());
    // A signed head: the file itself must be what the server signed.
    if (head.contains("signature")) {
      auto good = Ed25519Verify(head.value("public_key", std::string()),
                                AuditHeadMessage(req.against_seq(), req.against_hash()),
                                head.value("signature", std::string()));
      if (!good.ok())
        return Fail(err, Status::InvalidArgument("--against: " + good.status().message()));
      if (!*good) {
        err << "error: --against " << o.against
            << ": its signature does not match its seq and hash: the kept head was altered\n";
        return 1;
      }
      against_key = head.value("public_key", std::string());
    }
  }
  auto r = c.VerifyAudit(req);
  if (!r.ok()) return Fail(err, r.status());
  if (!against_key.empty() && against_key != r->public_key())
    err << "warning: the kept head was signed by key " << against_key
        << ", the server now signs with " << (r->public_key().empty() ? "none" : r->public_key())
        << "\n";
  int rc = ShowOne(*r, o, out, err, &AuditJson, &AuditDetail);
  if (rc == 0 && !r->ok()) {
    err << "error: the audit chain is broken: " << r->broken().kind() << " — "
        << r->broken().detail() << "\n";
    return 1;
  }
  return rc;
}

int AuditHead(Client& c, const CliOptions& /*o: always JSON, to keep*/, std::ostream& out,
              std::ostream& err) {
  auto r = c.VerifyAudit(v1::VerifyAuditRequest());
  if (!r.ok()) return Fail(err, r.status());
  if (!r->ok())
    err << "warning: the chain is broken (" << r->broken().kind()
        << "); this head covers a broken chain: tunectl audit verify\n";
  out << Document("AuditHead", AuditHeadJson(*r)).dump(2) << "\n";
  return 0;
}

// Every audit event and log entry in the window, page by page as the server gives them, each
// page written as it comes: an AuditEntryList (its items one object a line; next_page_token
// null, as the export is whole), CSV with one header, or a table whose first page sets the widths.
// On a terminal, stderr counts the rows while more pages come.
int AuditExport(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto f = ParseOutputFormat(o.output);
  if (!f.ok()) return Fail(err, f.status());
  if (*f == OutputFormat::kName) return NoName(err, "audit entry");
  // The server resolves --since/--until on its clock and refuses bad ones before anything is
  // written here.
  v1::ExportAuditRequest req;
  req.set_since(o.since);
  req.set_until(o.until);
  std::vector<size_t> widths;
  int64_t rows = 0, sealed = 0;
  bool progress = false;
  for (int page = 0;; ++page) {
    auto r = c.ExportAudit(req);
    if (!r.ok()) {
      if (progress) err << "\r\033[K";
      if (page > 0)
        err << "error: the export stopped after " << rows << " row(s); the output is "
            << "incomplete\n";
      return Fail(err, r.status());
    }
    switch (*f) {
      case OutputFormat::kJson:
        if (page == 0) {
          const std::string head = ListDocument(DocKind<v1::AuditEntry>::kName, {}, "").dump();
          out << head.substr(0, head.find("\"items\":") + 8) << "[";  // {"apiVersion":…,"items":[
        }
        for (const auto& e : r->entries())
          out << (rows++ == 0 ? "\n" : ",\n")
              << AuditEntryJson(e).dump(-1, ' ', false, ojson::error_handler_t::replace);
        break;
      case OutputFormat::kCsv:
        out << RenderCsv(AuditExportCsv(*r), page == 0);
        rows += r->entries_size();
        break;
      case OutputFormat::kTable:
      case OutputFormat::kName:
        out << RenderTablePage(AuditExportTable(*r), &widths);
        rows += r->entries_size();
        break;
    }
    for (const auto& e : r->entries()) sealed += e.seq() > 0;
    out.flush();
    if (r->next_page_token().empty()) break;
    req.set_page_token(r->next_page_token());
    if (o.interactive) {
      err << "\r\033[Kexporting: " << rows << " row(s) so far" << std::flush;
      progress = true;
    }
  }
  if (*f == OutputFormat::kJson) out << (rows == 0 ? "]" : "\n]") << ",\"next_page_token\":null}\n";
  if (progress) err << "\r\033[K";
  err << "exported " << rows << " row(s): " << sealed << " sealed, " << rows - sealed
      << " not sealed yet\n";
  return 0;
}

// --- identities -------------------------------------------------------------------------------

int TokenCreate(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  if (o.output == "name")  // the secret is shown once: a name alone would lose it
    return Fail(err, Status::InvalidArgument(
                         "-o name: token create prints the secret (or -o json with it)"));
  if (auto spec = ParseTokenSpec(o.name, o.role, o.agent); !spec.ok())
    return Fail(err, spec.status());
  v1::CreateTokenRequest req;
  req.set_name(o.name);
  req.set_role(o.role);
  req.set_agent(o.agent);
  auto t = c.CreateToken(req);
  if (!t.ok()) return Fail(err, t.status());
  if (int rc = PrintDocument(o, out, err, *t, &TokenJson); rc >= 0) return rc;
  out << t->secret() << "\n";
  err << "token \"" << t->name() << "\" (role " << t->role()
      << (t->agent().empty() ? "" : ", agent " + t->agent())
      << ") created; this is the only time its secret is shown: give it to its holder as a file "
         "or $TUNECTL_TOKEN, never as an argument\n";
  return 0;
}

int TokenList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListTokensRequest req;
  req.set_include_revoked(o.all);
  auto r = c.ListTokens(req);
  if (!r.ok()) return Fail(err, r.status());
  return Emit(o, out, err, *r, &TokensTable, r->tokens(), &TokenJson);
}

int TokenRevoke(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  auto t = c.RevokeToken(o.name);
  if (!t.ok()) return Fail(err, t.status());
  if (PrintDocument(o, out, err, *t, &TokenJson) < 0)
    out << "token \"" << t->name() << "\" revoked; calls with it are refused from now on\n";
  return 0;
}

int AuthWhoAmI(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  auto w = c.WhoAmI();
  if (!w.ok()) return Fail(err, w.status());
  if (int rc = PrintDocument(o, out, err, *w, &WhoAmIJson); rc >= 0) return rc;
  if (o.output == "csv")
    out << RenderCsv(DocumentCsv(WhoAmIJson(*w)));
  else
    out << w->actor() << " (role " << w->role() << ") on " << o.server << ", "
        << (w->tls() ? "TLS" : "PLAINTEXT") << ", server " << w->version() << "\n";
  return 0;
}

// --- goals ------------------------------------------------------------------------------------

int GoalSet(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::SetGoalRequest req;
  req.set_workload(o.workload);
  req.set_metric(o.metric);
  req.set_target(o.target);
  for (const auto& g : o.guardrails) req.add_guardrails(g);
  auto g = c.SetGoal(req);
  if (!g.ok()) return Fail(err, g.status());
  err << "goal of " << g->workload() << " set\n";
  return ShowOne(*g, o, out, err, &GoalJson, &GoalDetail);
}

int GoalShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto g = c.GetGoal(o.workload);
  if (!g.ok()) return Fail(err, g.status());
  return ShowOne(*g, o, out, err, &GoalJson, &GoalDetail);
}

// --- schedules and batches ------------------------------------------------------------------

int ScheduleCreate(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (o.window.empty() == o.cron.empty())
    return Fail(err, Status::InvalidArgument("give exactly one of --window \"Mon-Fri 01:00-06:00\" "
                                             "or --cron \"0 22 * * Sat\" --duration 20h"));
  v1::CreateScheduleRequest req;
  req.set_name(o.name);
  req.set_window(o.window);
  req.set_cron(o.cron);
  req.set_duration(o.duration);
  req.set_tz(o.tz);
  req.set_max_agents(o.max_agents);
  req.set_on_window_end(o.on_window_end);
  auto s = c.CreateSchedule(req);
  if (!s.ok()) return Fail(err, s.status());
  if (PrintDocument(o, out, err, *s, &ScheduleJson) < 0)
    out << "schedule " << s->name() << " created: " << s->status() << "\n";
  return 0;
}

int ScheduleList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto r = c.ListSchedules();
  if (!r.ok()) return Fail(err, r.status());
  return Emit(o, out, err, *r, &SchedulesTable, r->schedules(), &ScheduleJson);
}

int BatchCreate(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::CreateBatchRequest req;
  req.set_workload(o.workload);
  req.set_baseline_id(o.baseline);
  for (const auto& v : o.vary) req.add_vary(v);
  req.set_schedule(o.schedule);
  req.set_repeats(o.repeats);
  req.set_correction(o.correction);
  req.set_request_id(o.request_id);
  req.set_again(o.again);
  req.set_again_reason(o.reason);
  auto b = c.CreateBatch(req);
  if (!b.ok()) return Fail(err, b.status());
  err << "batch " << b->id() << " created: " << b->experiments_size()
      << " experiments against baseline " << b->baseline_id()
      << (b->waiting().empty() ? "" : "; " + b->waiting()) << "\n";
  ParamTypesFor types(c, o);
  auto json = [&](const v1::Batch& x) { return BatchJson(x, types(x.workload())); };
  if (PrintDocument(o, out, err, *b, json) < 0) out << b->id() << "\n";
  return 0;
}

int BatchShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto b = c.GetBatch(o.id);
  if (!b.ok()) return Fail(err, b.status());
  ParamTypesFor types(c, o);
  return ShowOne(
      *b, o, out, err, [&](const v1::Batch& x) { return BatchJson(x, types(x.workload())); },
      &BatchDetail, &BatchCsv);
}

int BatchList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListBatchesRequest req;
  SetPage(o, &req);
  auto r = c.ListBatches(req);
  if (!r.ok()) return Fail(err, r.status());
  return Emit(o, out, err, *r, &BatchesTable, r->batches(), &BatchSummaryJson);
}

int BatchCancel(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto b = c.CancelBatch(o.id);
  if (!b.ok()) return Fail(err, b.status());
  err << "batch " << b->id() << " cancelled\n";
  ParamTypesFor types(c, o);
  auto json = [&](const v1::Batch& x) { return BatchJson(x, types(x.workload())); };
  return std::max(0, PrintDocument(o, out, err, *b, json));
}

int RegressRun(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  v1::RegressRunRequest req;
  req.set_workload(o.workload);
  req.set_duration(o.duration);
  req.set_schedule(o.schedule);
  req.set_request_id(o.request_id);
  auto s = c.RegressRun(req);
  if (!s.ok()) return Fail(err, s.status());
  err << "stability run " << s->run_id() << " of config v" << s->config_version()
      << " queued: " << o.duration
      << (o.schedule.empty() ? "" : " inside a window of " + o.schedule)
      << "; judged within itself when it ends (tunectl regress show " << o.workload << ")\n";
  v1::StabilityRun cur = *s;
  if (o.wait) {
    const WaitFor what{"stability run " + std::to_string(s->run_id()),
                       "tunectl regress show " + o.workload + " (or: tunectl run show " +
                           std::to_string(s->run_id()) + ")",
                       ""};
    int waited =
        WaitWithProgress(o, err, 0, what, [&](double elapsed, std::string* line) -> Result<bool> {
          v1::GetRegressionRequest get;
          get.set_workload(o.workload);
          auto r = c.GetRegression(get);
          if (!r.ok()) return r.status();
          for (const auto& x : r->stability())
            if (x.run_id() == s->run_id()) cur = x;
          auto run = c.GetRun(s->run_id());
          *line = StabilityProgress(cur, run.ok() ? &*run : nullptr, r->metric(), elapsed);
          return cur.verdict() != "pending";
        });
    if (waited != 0) return waited;
  }
  const int printed = PrintDocument(o, out, err, cur, &StabilityJson);
  if (printed > 0) return printed;
  if (printed < 0) out << (o.wait ? StabilityDetail(cur) : std::to_string(s->run_id()) + "\n");
  if (o.wait && cur.verdict() == "ended early") {
    // No evidence either way: a CI gate must not pass on a check that did not run its course.
    err << "stability run " << cur.run_id() << " " << cur.message() << "\n";
    return 1;
  }
  return o.wait && cur.verdict() == "regression" ? 1 : 0;
}

int EmitWatch(const CliOptions& o, std::ostream& out, std::ostream& err,
              const Result<v1::Watch>& w) {
  if (!w.ok()) return Fail(err, w.status());
  if (int rc = PrintDocument(o, out, err, *w, &WatchJson); rc >= 0) return rc;
  out << WatchLine(*w) << "\n";
  return 0;
}

int RegressSchedule(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  v1::RegressScheduleRequest req;
  req.set_workload(o.workload);
  req.set_schedule(o.schedule);
  req.set_repeats(o.repeats);
  return EmitWatch(o, out, err, c.RegressSchedule(req));
}

int RegressStop(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  return EmitWatch(o, out, err, c.RegressStop(o.workload));
}

int RegressResolve(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  auto g = c.ResolveRegression(o.id, o.reason);
  if (!g.ok()) return Fail(err, g.status());
  if (int rc = PrintDocument(o, out, err, *g, &RecordedRegressionJson); rc >= 0) return rc;
  out << "regression " << g->id() << " (" << g->metric() << ", first bad run " << g->first_bad_run()
      << ") resolved: " << g->resolution() << "\n";
  return 0;
}

int RegressShow(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err) {
  v1::GetRegressionRequest req;
  req.set_workload(o.workload);
  if (o.limit_given && o.limit == 0)
    req.set_all(true);
  else
    req.set_limit(o.limit);
  auto r = c.GetRegression(req);
  if (!r.ok()) return Fail(err, r.status());
  return ShowOne(*r, o, out, err, &RegressionJson, &RegressionDetail, &RegressionSeriesTable);
}

}  // namespace

int Execute(const Command& cmd, Client& client, const CliOptions& o, std::ostream& out,
            std::ostream& err) {
  if (auto f = ParseOutputFormat(o.output); !f.ok()) return Fail(err, f.status());
  return cmd.run(client, o, out, err);
}

int ExitCode(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk: return 0;
    case Status::Code::kInvalidArgument:
    case Status::Code::kFailedPrecondition:
    case Status::Code::kAlreadyExists: return 2;
    case Status::Code::kNotFound: return 3;
    case Status::Code::kUnavailable: return 4;
    case Status::Code::kUnauthenticated:
    case Status::Code::kPermissionDenied: return 5;
    default: return 1;
  }
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> k = {
      {"workload", "apply", "create or update a workload from a YAML/JSON file", &WorkloadApply},
      {"workload", "list", "list workloads (--all: archived ones too)", &WorkloadList},
      {"workload", "show",
       "a workload's params (type, default, range, current value), metrics, run policy, config "
       "version and history counts",
       &WorkloadShow},
      {"workload", "delete",
       "delete a workload with no history (one with baselines, experiments, runs or log entries is "
       "archived instead)",
       &WorkloadDelete},
      {"workload", "archive",
       "keep a workload's history but hide it from workload list and refuse new baselines, "
       "experiments and regression runs",
       &WorkloadArchive},
      {"workload", "unarchive", "list an archived workload again and let it take new work",
       &WorkloadUnarchive},
      {"baseline", "create", "measure the current config: queue N runs (and --wait for them)",
       &BaselineCreate},
      {"baseline", "list", "list baselines", &BaselineList},
      {"baseline", "show", "per-metric summary of a baseline", &BaselineShow},
      {"token", "create",
       "create a token (admin): NAME --role viewer|operator|admin|agent [--agent NAME]; prints "
       "the secret once",
       &TokenCreate},
      {"token", "list", "list tokens (admin; --all includes revoked ones)", &TokenList},
      {"token", "revoke", "revoke a token by NAME (admin)", &TokenRevoke},
      {"auth", "whoami", "who the server takes this client for: token, role, TLS", &AuthWhoAmI},
      {"audit", "verify",
       "walk the hash chain over the audit trail and the tuning log; name the first broken entry",
       &AuditVerify},
      {"audit", "head",
       "the chain's head as JSON, to keep elsewhere and check later with audit verify --against",
       &AuditHead},
      {"audit", "export",
       "every audit event and tuning-log entry since a time, in the chain's order, with each "
       "link's hash (admin): --since WHEN [--until WHEN] [-o json|csv]",
       &AuditExport},
      {"goal", "set",
       "the workload's quantified goal: a metric's target, optionally with guardrails", &GoalSet},
      {"goal", "show",
       "where the current config stands against the goal, what each frozen change moved, what is "
       "left",
       &GoalShow},
      {"baseline", "advise",
       "likely bottlenecks from a baseline's figures, the parameter to vary for each, and the "
       "command that records it as a hypothesis",
       &BaselineAdvise},
      {"baseline", "cancel",
       "stop a baseline, a periodic check or a stability run (queued runs cancelled, running ones "
       "stopped)",
       &BaselineCancel},
      {"run", "list", "list runs, with why queued runs wait", &RunList},
      {"run", "show", "one run: state, exit, metrics, stderr tail", &RunShow},
      {"run", "samples",
       "a run's samples per metric: warm-up, steady window and median, what was left out",
       &RunSamples},
      {"run", "logs",
       "a run's output (stdout and stderr) from the agent that holds it; -f follows it live",
       &RunLogs},
      {"agent", "list", "list agents and their slots", &AgentList},
      {"agent", "remove",
       "take a disconnected agent off agent list (its unfinished runs are requeued); it comes back "
       "when it registers again",
       &AgentRemove},
      {"hypothesis", "create",
       "record a suspected bottleneck and the expected effect before testing it",
       &HypothesisCreate},
      {"hypothesis", "list", "list hypotheses", &HypothesisList},
      {"hypothesis", "show", "one hypothesis", &HypothesisShow},
      {"experiment", "run",
       "change one parameter against a baseline (control and variant runs interleaved)",
       &ExperimentRun},
      {"experiment", "show", "an experiment's verdict per metric", &ExperimentShow},
      {"experiment", "list", "list experiments", &ExperimentList},
      {"experiment", "cancel", "stop a running experiment", &ExperimentCancel},
      {"experiment", "freeze", "make an improved experiment's change the new config version",
       &ExperimentFreeze},
      {"config", "show", "the current config of a workload and its lineage", &ConfigShow},
      {"config", "export",
       "the current config (or --version N, a past one) as json, yaml, env or args",
       &ConfigExportCmd},
      {"log", "", "the tuning log: every change tried, expected vs actual, decision", &Log},
      {"schedule", "create", "an off-peak window for batches (--window or --cron --duration, --tz)",
       &ScheduleCreate},
      {"schedule", "list", "schedules and whether their window is open", &ScheduleList},
      {"batch", "create", "single-variable experiments, one per value, run inside a schedule",
       &BatchCreate},
      {"batch", "show", "a batch's experiments, corrected across the batch, and what waits",
       &BatchShow},
      {"batch", "list", "list batches", &BatchList},
      {"batch", "cancel", "stop a batch", &BatchCancel},
      {"regress", "run",
       "one long stability run of the current config, judged within itself (slowdown, no "
       "steady state)",
       &RegressRun},
      {"regress", "schedule",
       "periodic checks: N runs of the current config in each window of a schedule",
       &RegressSchedule},
      {"regress", "stop", "stop the periodic checks of a workload", &RegressStop},
      {"regress", "resolve", "close a recorded regression (its alert stops) and say what fixed it",
       &RegressResolve},
      {"regress", "show",
       "the current config's run series, change points, recorded regressions, stability runs",
       &RegressShow},
      {"version", "", "the client's version and the server's (also --version)", &VersionCmd},
      {"context", "list", "the contexts of the client config (server, CA, whether a token)",
       &ContextList, /*local=*/true},
      {"context", "use", "make NAME the current context", &ContextUse, /*local=*/true},
      {"completion", "", "shell completion: source <(tunectl completion bash|zsh)", &CompletionCmd,
       /*local=*/true},
      {"__complete", "", "names and ids for the completion script", &CompleteCmd, false,
       /*hidden=*/true},
  };
  return k;
}

}  // namespace tunectl

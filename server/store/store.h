// Store: every read and write of tunectl state in PostgreSQL. Each method is one transaction;
// every state change writes its audit event in that same transaction. It decides nothing itself:
// it loads rows, calls the rule in core/ (runs.h, decisions.h, experiment.h, tuning_log.h …) and
// writes what the rule returns. libpqxx exceptions are caught here and mapped once to Status
// (NotFound, InvalidArgument, Unavailable, Internal). One file per aggregate (see
// store_internal.h). Thread-safe (connections come from the pool).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/advisor.h"
#include "core/audit_chain.h"
#include "core/auth.h"
#include "core/clock.h"
#include "core/experiment.h"
#include "core/goal.h"
#include "core/lifecycle.h"
#include "core/metrics.h"
#include "core/paging.h"
#include "core/run_series.h"
#include "core/runs.h"
#include "core/selector.h"
#include "core/spec.h"
#include "core/stats.h"
#include "core/status.h"

namespace tunectl {

class ConnectionPool;  // server/store/pool.h

// One page of a list (core/paging.h): the rows oldest first (workloads: by name), and whether
// more follow past them (older rows, or names after the last), from where the next page starts.
template <typename T>
struct Paged {
  std::vector<T> rows;
  bool more = false;
  int64_t next_before = 0;  // lists keyed by id: the next page has the ids below this
  std::string next_after;   // workloads: the next page has the names after this
};

struct WorkloadRow {
  int64_t id = 0;
  std::string name;
  std::string description;
  WorkloadSpec spec;
  std::string spec_json;
  int spec_revision = 0;
  int64_t config_id = 0;  // current config version
  int config_version = 0;
  ParamValues config_params;
  std::string created_at;
  std::string archived_at, archived_by;  // "" unless archived
  bool archived() const { return !archived_at.empty(); }
};

// `workload show`: the workload and what it has recorded.
struct WorkloadDetailRow {
  WorkloadRow workload;
  WorkloadHistory history;
};

struct ApplyResult {
  WorkloadRow workload;
  std::string action;  // created | updated | unchanged
};

struct MetricSummaryRow {
  std::string metric;
  Descriptive stats;
};

struct BaselineRow {
  int64_t id = 0;
  std::string workload;
  std::string purpose = "baseline";  // baseline | check (a periodic check) | stability
  int config_version = 0;
  int spec_revision = 0;  // the spec its summary uses
  ParamValues params;
  int repeats = 0;
  std::string state;
  std::string reason;  // why it failed ("metric loss has no value in any run: …"); "" otherwise
  int runs_succeeded = 0, runs_failed = 0, runs_active = 0;
  std::vector<MetricSummaryRow> summaries;  // in the workload's metric order
  WorkloadSpec spec;                        // for units / roles
  std::string created_at, finished_at;
};

struct RunMetricRow {
  std::string metric;
  int samples = 0, steady = 0;
  std::optional<double> median, min, max;
  bool usable = true;
  int detected_warmup = 0;
  std::string warnings;
  std::string source;  // where its values came from (LaunchRecord::SourceOf)
  // The run's value and pace (RunMetricFacts::delivered, pace) and how it was computed.
  std::optional<double> value, pace;
  std::string value_how;
};

struct RunRow {
  int64_t id = 0;
  int64_t baseline_id = 0;
  int64_t experiment_id = 0;
  std::string arm;
  int64_t schedule_id = 0;  // runs only inside this schedule's windows (0 = any time)
  std::string purpose;      // of its baseline: baseline | check | stability ("" = experiment)
  std::string workload;
  int idx = 0;
  int attempt = 0;
  std::string state;
  std::string agent;
  ParamValues params;
  LabelMap selector;
  std::optional<int> exit_code, signal;
  std::string reason, stderr_tail, wait_reason;
  // Where it ran, as its agent reported: the node, the agent's slot (-1 = none), the cluster's
  // id (Slurm job id, Kubernetes Job), how it was placed, and why the cluster keeps it pending.
  std::string node;
  int slot = -1;
  std::string external_id, placement, pending_reason;
  std::string executor;  // of its agent: local | slurm | kubernetes ("" = not assigned)
  int64_t samples = 0;
  std::vector<RunMetricRow> metrics;
  bool live = false;  // metrics computed from the samples so far (GetRun of a running run)
  std::string created_at, started_at, finished_at;
};

// `run samples`: one attempt's samples per metric with what its summary decided about each
// (core/run_series.h).
struct RunSamplesRow {
  int64_t run_id = 0;
  std::string workload, state;
  int attempt = 0;
  bool live = false;   // the run's current attempt, still active: more samples may come
  int max_points = 0;  // the bound each metric's points were decimated to
  std::vector<MetricSeries> metrics;
};

struct AgentRow {
  int64_t id = 0;
  std::string name;
  LabelMap labels;
  int slots = 0;
  int running = 0;
  bool connected = false;
  bool busy = false;
  std::string unhealthy;  // why the node cannot run jobs now; "" = healthy
  std::string version;
  std::string last_seen;
  bool isolated_slots = false;
  std::string executor = "local";
};

struct AgentRemoval {
  AgentRow agent;
  int requeued = 0;  // runs it still held: queued again as a new attempt (or lost)
};

// What an agent needs to execute a claimed run.
struct LaunchPlan {
  int64_t run_id = 0;
  int attempt = 0;
  std::string workload;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  std::vector<MetricRule> metrics;
  int64_t timeout_ms = 0;
  int64_t duration_ms = 0;  // stability run: stopped at this age and counted as succeeded
  std::string profile;      // "", torch, nsys: a trace to summarise when the run ends
  Resources resources;
  int64_t experiment_id = 0;  // 0 = a baseline's run
  std::string arm;            // control | variant
};

// Where a run started, as its agent says (RunStarted).
struct RunStartInfo {
  std::string node;
  int slot = -1;  // -1 = none (cluster executors)
  std::string external_id, placement;
};

struct RunRef {
  int64_t run_id = 0;
  int attempt = 0;
  bool operator<(const RunRef& o) const {
    return run_id != o.run_id ? run_id < o.run_id : attempt < o.attempt;
  }
};

using PendingCancelList = std::vector<RunRef>;

struct Reconciled {
  int requeued = 0;          // held runs it did not report: requeued or lost
  std::vector<RunRef> stop;  // runs it reported that are not its current attempt any more
};

// One agent session asking for runs in a dispatch pass.
struct ClaimRequest {
  int64_t agent_id = 0;
  std::string session;  // the claim holds only while the agent row names this session ("" = any)
  LabelMap labels;
  int slots = 0;
};

struct AgentBeat {
  int64_t agent_id = 0;
  std::string session;
  bool busy = false;
  std::string unhealthy;  // "" = healthy
};

struct SampleIn {
  std::string metric;
  int64_t step = 0;
  double value = 0;
  int64_t line_no = 0;
};

struct RunResult {
  int exit_code = 0;
  int signal = 0;
  std::string reason;  // "", timeout, cancelled, launch_failed: …
  std::string stderr_tail;
  int64_t batches = 0;
  int64_t lines = 0;
  bool duration_reached = false;  // stability run stopped by the agent at its duration
  bool infra_failure = false;     // the node could not run it: retried as a new attempt
  std::map<std::string, std::string> metric_notes;  // metric -> what its side source went through
};

struct HypothesisRow {
  int64_t id = 0;
  std::string workload;
  int64_t baseline_id = 0;
  Change change;
  std::string expect, evidence, statement, actor, created_at;
  bool locked = false;
  int64_t experiment_id = 0;
  // Experiments on the same parameter(s), on any config, other than its own (DescribeTry);
  // GetHypothesis only.
  std::vector<std::string> earlier;
};

struct HypothesisIn {
  std::string workload;     // optional when baseline_id is set or only one workload exists
  int64_t baseline_id = 0;  // 0 = latest completed baseline of the current config
  std::vector<std::string> vary;
  std::string expect, evidence, statement;
  std::string request_id;  // the client's key: a retry does not create twice
};

struct ExperimentRow {
  int64_t id = 0;
  std::string workload;
  int64_t baseline_id = 0;
  int64_t hypothesis_id = 0;
  std::string hypothesis_expect;
  int config_version = 0;
  int spec_revision = 0;  // the spec its verdict uses
  int64_t batch_id = 0;
  Change change;
  int repeats = 0;
  std::string state, decision;
  std::optional<Verdict> verdict;
  int runs_total = 0, runs_done = 0, runs_failed = 0, runs_active = 0;
  int frozen_version = 0;
  std::string frozen_by, freeze_reason, actor, created_at, decided_at, frozen_at, agent;
  std::string placement;  // how its runs were placed (core DescribePlacement); GetExperiment only
  std::string goal_note;  // against the workload's goal (core GoalNote); GetExperiment only
  std::string again_reason;
  ExperimentArms arms;                     // runs per arm by state; GetExperiment only
  std::optional<InterimEstimate> interim;  // the estimate so far while it runs; GetExperiment only
};

// `audit verify`: the chain walked against every row of the audit trail and the tuning log.
struct AuditCheck {
  ChainReport report;
  int64_t rows = 0;     // audit events + log entries
  int64_t pending = 0;  // rows not sealed yet (the sealer runs about once a second)
  std::string head_sealed_at;
};

// `audit export`: one row of the audit trail or the tuning log, in the chain's order.
struct AuditExportRow {
  int64_t seq = 0;  // the link that covers it; 0 = not sealed (as of the export's first page)
  ChainEntry entry;
  std::string at;               // RFC 3339, UTC, microseconds
  std::string hash, prev_hash;  // "" when not sealed
};
struct AuditExportPage {
  std::vector<AuditExportRow> rows;
  bool more = false;
  ChainPage next;  // where the next page starts (with the window and last link fixed), when more
};

// A workload's current goal and what its progress is computed from.
struct GoalRow {
  std::string workload;
  Goal goal;
  std::vector<std::string> guardrails;  // as written
  std::string actor, created_at;
  GoalProgress progress;
};

// A bearer token as stored: never the secret, only its hash.
struct TokenRow {
  int64_t id = 0;
  std::string name, role, agent;  // agent: the bound agent name ("" unless role agent)
  std::string created_at, created_by, revoked_at, revoked_by;  // revoked_at "" = live
};

struct ExperimentIn {
  std::string workload;
  int64_t baseline_id = 0;
  std::vector<std::string> vary;
  int64_t hypothesis_id = 0;
  int repeats = 0;          // per arm; 0 = the workload's run.repeats
  int64_t batch_id = 0;     // set by CreateBatch
  int64_t schedule_id = 0;  // runs only inside this schedule's windows
  std::string request_id;   // the client's key: a retry does not create twice
  // The same change was decided on this config before (CheckRepeatedChange): test it again
  // anyway, for this reason (kept with the experiment and in its log entry).
  bool again = false;
  std::string again_reason;
};

struct ConfigVersionRow {
  int version = 0;
  ParamValues params;
  std::optional<Change> change;
  int64_t experiment_id = 0;
  std::string created_at, reason;
  bool current = false;
};

struct ConfigRow {
  std::string workload;
  std::string spec_json;
  std::vector<ConfigVersionRow> lineage;  // v1 first; exactly one is current
};

struct LogRow {
  int64_t id = 0;  // the entry's position in the log
  int64_t experiment_id = 0;
  std::string workload, at, actor;
  std::string entry_json;  // the immutable 'decided' entry
  std::string frozen;      // from a later 'frozen' entry: "v2" or "v2 (forced: …)"; "" if none
  std::string kind = "decided";  // decided | regression | resolved (experiment_id 0)
};

struct ScheduleRow {
  int64_t id = 0;
  std::string name, window, cron;  // exactly one of window / cron
  int64_t duration_s = 0;
  std::string tz;
  int max_agents = 0;                    // 0 = no limit on agents running its runs at once
  std::string on_window_end = "finish";  // finish | requeue (cancel at window end, run again)
  std::string actor, created_at;
};

struct BatchIn {
  std::string workload;
  int64_t baseline_id = 0;
  std::vector<std::string> vary;  // "NAME=V1,V2": one experiment per value
  std::string schedule;           // "" = no window
  int repeats = 0;
  std::string correction = "holm";
  std::string request_id;  // the client's key: a retry does not create twice
  bool again = false;      // as ExperimentIn: members decided before are tested again, for
  std::string again_reason;
};

struct BatchRow {
  int64_t id = 0;
  std::string workload, schedule, state, correction, actor, created_at;
  int64_t baseline_id = 0;
  int64_t schedule_id = 0;
  std::vector<ExperimentRow> experiments;  // GetBatch; empty in ListBatches (a summary)
  int members = 0;
  std::map<std::string, int> members_by_state, members_by_decision;
};

struct SeriesPoint {
  int64_t run_id = 0;
  std::string at;  // finished
  double value = 0;
};

struct RegressionRecord {
  int64_t id = 0;
  std::string kind;  // change_point | stability
  std::string metric, message, detected_at;
  int64_t first_bad_run = 0;
  std::optional<double> before, after, p;
  int config_version = 0;
  std::string resolved_at, resolved_by, resolution;  // "" while open
};

struct StabilityRow {
  int64_t baseline_id = 0, run_id = 0;
  int config_version = 0;
  int64_t duration_s = 0;
  std::string state, started_at, finished_at;
  std::string verdict;  // pending | stable | regression | failed
  std::string message;
};

struct WatchRow {
  int64_t id = 0;
  std::string workload, schedule, state, actor, created_at;
  int64_t schedule_id = 0;
  int repeats = 0;
  int checks = 0;  // check baselines queued so far
};

// The primary metric over the succeeded, comparable runs of the workload's current config
// (baselines, periodic checks and the variant runs it was frozen from; not stability runs), and
// what the watch has recorded.
struct RegressionSeries {
  std::string workload;
  int config_version = 0;
  MetricSpec metric;
  std::vector<SeriesPoint> points;  // the newest of the series, in finishing order
  bool more_points = false;         // older points exist than `points` holds
  std::vector<RegressionRecord> recorded;
  std::vector<StabilityRow> stability;
  std::optional<WatchRow> watch;
};

// For /metrics.
struct StoreSnapshot {
  std::map<std::string, int64_t> runs_by_state;
  std::map<std::string, int64_t> experiments_by_state;
  int64_t agents_connected = 0;
  struct Regressions {
    std::string workload, metric, kind;
    int64_t current_config = 0;  // open (unresolved), against the workload's current config
    int64_t total = 0;
  };
  std::vector<Regressions> regressions;
};

// Who claims an agent name. A name whose row is connected, held by another `instance`, seen
// within `live_ms` and whose session `session_live` does not call dead is refused with
// AlreadyExists naming the host that holds it. Empty `instance` (tests, old agents): no check.
struct AgentNameClaim {
  std::string instance;
  std::string host;
  int64_t live_ms = 0;
  std::function<bool(const std::string& session)> session_live;  // null: live if seen recently
};

// What a node said about itself when it connected (its Hello); later changes come as beats.
struct AgentNodeState {
  bool busy = false;      // its idle probe fails: production work on the node
  std::string unhealthy;  // empty = it can run jobs; otherwise why not
  bool isolated_slots = false;
  std::string executor = "local";
};

class Store {
 public:
  // `pool` and `clock` are not owned and outlive the Store; `clock` null = the system clock. The
  // clock is the time of every decision and record (SQL included: tunectl_now()).
  explicit Store(ConnectionPool* pool, const Clock* clock = nullptr);

  // Workloads
  Result<ApplyResult> ApplyWorkload(const WorkloadSpec& spec, const std::string& text,
                                    const std::string& actor);
  // Lists page (core/paging.h): `page` is validated by the caller (ResolvePage); each list reads
  // only its page, newest first by id (workloads by name), from indexes (migrations/0011).
  // Archived workloads only with `include_archived`.
  Result<Paged<WorkloadRow>> ListWorkloads(const Page& page = Page(),
                                           bool include_archived = false);
  Result<WorkloadRow> GetWorkload(const std::string& name);
  // The workload and its history counted (baselines, experiments, runs, log entries).
  Result<WorkloadDetailRow> DescribeWorkload(const std::string& name);
  // Deletes a workload with no history (its config versions and goals go with it; its spec
  // revisions stay, append-only). With history: FailedPrecondition from core's
  // CheckWorkloadDeletable, naming what it has and the archive command. Audited workload.deleted.
  Result<WorkloadRow> DeleteWorkload(const std::string& name, const std::string& actor);
  // Archives (or unarchives) a workload: its history stays; while archived it is hidden from
  // ListWorkloads and new baselines, experiments, periodic checks and stability runs are refused
  // (core's CheckNotArchived). Archiving an archived workload (or unarchiving one that is not)
  // changes nothing and writes no audit event. Audited workload.archived / workload.unarchived.
  Result<WorkloadRow> SetWorkloadArchived(const std::string& name, bool archived,
                                          const std::string& actor);

  // Baselines: creates the baseline and its queued runs at the workload's current config.
  // A `request_id` (the client's key, "" = none) makes a retry return the baseline the first
  // request created instead of creating another; likewise for every create below.
  Result<int64_t> CreateBaseline(const std::string& workload, int repeats, const std::string& actor,
                                 const std::string& request_id = "");
  Result<BaselineRow> GetBaseline(int64_t id);
  // What the bottleneck advisor reads of a completed baseline: its spec, config and metric medians
  // plus the medians over its succeeded runs of the profiler's profile_* figures.
  // FailedPrecondition while it runs or when it failed or was cancelled.
  Result<AdvisorInput> AdvisorInputOf(int64_t baseline_id);
  // Stops a running baseline, periodic check or stability run: queued runs are cancelled,
  // running ones are stopped by their agents (their results count as cancelled, not failed).
  Result<BaselineRow> CancelBaseline(int64_t id, const std::string& actor);
  // Baselines measured by `baseline create` (not periodic checks or stability runs).
  Result<Paged<BaselineRow>> ListBaselines(const std::string& workload, const Page& page = Page());

  // Runs
  // `baseline_id` 0 = every run.
  // `experiment_id` 0 = every run; else only that experiment's runs, both arms (NotFound when
  // there is no such experiment).
  Result<Paged<RunRow>> ListRuns(int64_t baseline_id, const Page& page = Page(),
                                 int64_t experiment_id = 0);
  Result<RunRow> GetRun(int64_t id);
  // The run's row only (state, attempt, agent, node): no metrics, no live analysis. Cheap enough
  // for a follower to call several times a second.
  Result<RunRow> GetRunHeader(int64_t id);
  // The samples of attempt `attempt` (0 = the current one) of run `id`, per metric (`metric` ""
  // = every one), analysed as its summary is and decimated to `max_points` (already resolved:
  // core's ResolveMaxPoints). NotFound for an unknown run; InvalidArgument naming the field for an
  // attempt the run has not had or a metric it does not have.
  Result<RunSamplesRow> GetRunSamples(int64_t id, int attempt, const std::string& metric,
                                      int max_points);

  // Agents
  Result<int64_t> RegisterAgent(const std::string& name, const LabelMap& labels, int slots,
                                const std::string& version, const std::string& session,
                                const AgentNameClaim& claim = AgentNameClaim(),
                                const AgentNodeState& node = AgentNodeState());
  // Liveness of many agents in one statement (a dispatcher flushes its sessions' heartbeats once
  // per interval): last_seen = now, busy and unhealthy as reported. A row whose session is no
  // longer `session` (another process took the name) is left alone.
  Status TouchAgents(const std::vector<AgentBeat>& beats);
  // Marks the agent disconnected if `session` still owns it. `fresh`: last_seen = now, so it has
  // a full --agent-timeout to come back with its runs (a stream that ended); false when the
  // session is closed because the agent already went silent (its lease runs from its last beat).
  Status DisconnectAgent(int64_t agent_id, const std::string& session, bool fresh = true);
  // Agents not removed (RemoveAgent), connected or not.
  Result<std::vector<AgentRow>> ListAgents();
  // Takes a disconnected agent off ListAgents: the runs it still holds (assigned/running, kept
  // for it while it might come back) are requeued as a new attempt first, so none is orphaned.
  // Its row stays for the runs that name it; registering again brings it back. A connected
  // agent: FailedPrecondition (core's CheckAgentRemovable); unknown or removed: NotFound.
  // Audited agent.removed.
  Result<AgentRemoval> RemoveAgent(const std::string& name, const std::string& actor);

  // After a Hello: runs this agent holds (assigned/running) that it did not report are requeued
  // (new attempt) or lost when out of attempts; runs it reported that are no longer its current
  // attempt (the server gave up on them while it was away) are returned for it to stop.
  Result<Reconciled> ReconcileAgentRuns(int64_t agent_id, const std::vector<RunRef>& active);
  // Agents silent for longer than `timeout_s`: disconnect them and reconcile their runs.
  Result<int> ExpireAgents(int timeout_s);

  // Dispatch, for every agent with free slots in one transaction: queued runs whose selector
  // matches its labels, up to its free slots (`slots` minus its assigned/running runs), planned
  // by core's PlanClaims and claimed atomically (FOR UPDATE SKIP LOCKED: two servers never get
  // the same run). A claim holds only while the agent row is connected under `session` ("" = no
  // check). Runs of scheduled experiments are claimed only when their schedule is in
  // `open_windows` ({"schedule id": seconds left in its window}) with at least their expected
  // duration left. Returns the plans by agent id, oldest run first. `free_after` (optional):
  // every asking agent's free slots once these plans are sent (0 = full).
  Result<std::map<int64_t, std::vector<LaunchPlan>>> ClaimRunsFor(
      const std::vector<ClaimRequest>& agents, const std::string& open_windows = "{}",
      std::map<int64_t, int>* free_after = nullptr);
  // One agent's claim (ClaimRunsFor with one request and no session check).
  Result<std::vector<LaunchPlan>> ClaimRuns(int64_t agent_id, const LabelMap& labels, int slots,
                                            const std::string& open_windows = "{}");
  // Runs claimed for an agent whose stream ended before they reached it: queued again as the
  // same attempt (it never started). Returns how many.
  Result<int> ReleaseClaims(int64_t agent_id, const std::vector<RunRef>& runs);
  Status MarkRunStarted(int64_t run_id, int attempt, int64_t agent_id,
                        const RunStartInfo& info = RunStartInfo());
  // The agent's executor accepted the run but the cluster keeps it pending (`reason` in the
  // cluster's words). Only for an assigned run of that agent; anything else is ignored.
  Status MarkRunPending(int64_t run_id, int attempt, int64_t agent_id,
                        const std::string& external_id, const std::string& reason);
  // Stores a batch once: returns false when (run, attempt, seq) was already stored. With
  // `reporter` (an agent session's agent id), only a batch for the run's current attempt, assigned
  // to that agent and still assigned or running, is stored; any other is FailedPrecondition and
  // changes nothing (a stale attempt, another agent's run, a run that does not exist).
  Result<bool> StoreMetricBatch(int64_t run_id, int attempt, int64_t seq,
                                const std::vector<SampleIn>& samples,
                                std::optional<int64_t> reporter = std::nullopt);
  // Terminal state for the attempt, run summary, and baseline completion when it was the last;
  // then, in a transaction of its own, the regression watch over the series the run extends (an
  // error there is returned after the finish committed: sending the finish again runs the watch
  // again). A stale attempt (superseded) changes nothing. Idempotent. With `reporter`, a result
  // for a run assigned to another agent is FailedPrecondition and changes nothing.
  Status FinishRun(int64_t run_id, int attempt, const RunResult& result, const std::string& actor,
                   std::optional<int64_t> reporter = std::nullopt);
  // Runs on these agents that were asked to stop: the dispatcher sends Cancel for them.
  Result<std::map<int64_t, PendingCancelList>> PendingCancelsFor(
      const std::vector<int64_t>& agent_ids);
  Result<PendingCancelList> PendingCancels(int64_t agent_id);

  // The loop.
  Result<int64_t> CreateHypothesis(const HypothesisIn& in, const std::string& actor);
  Result<HypothesisRow> GetHypothesis(int64_t id);
  Result<Paged<HypothesisRow>> ListHypotheses(const std::string& workload,
                                              const Page& page = Page());
  // Queues control and variant runs interleaved in ABBA blocks; locks the hypothesis.
  Result<int64_t> CreateExperiment(const ExperimentIn& in, const std::string& actor);
  Result<ExperimentRow> GetExperiment(int64_t id);
  // `state`: only experiments in that state.
  Result<Paged<ExperimentRow>> ListExperiments(const std::string& workload,
                                               const Page& page = Page(),
                                               std::optional<ExperimentState> state = std::nullopt);
  Result<ExperimentRow> CancelExperiment(int64_t id, const std::string& actor);
  // New config version = control config + the change; the variant runs become its baseline.
  Result<ExperimentRow> FreezeExperiment(int64_t id, bool force, const std::string& reason,
                                         const std::string& actor);
  Result<ConfigRow> GetConfig(const std::string& workload);
  // `param`: only entries whose change sets it (filtered in SQL).
  // The workload's goal, replacing its current one (the old one is kept, marked replaced).
  // InvalidArgument from core ParseGoal against the workload's current spec.
  Result<GoalRow> SetGoal(const std::string& workload, const std::string& metric, double target,
                          const std::vector<std::string>& guardrails, const std::string& actor);
  // NotFound (with the command that sets one) when the workload has none.
  Result<GoalRow> GetGoal(const std::string& workload);
  // Seals up to `max_rows` rows of the audit trail and the tuning log that no link covers yet
  // into the hash chain (core/audit_chain.h), oldest first; returns how many. The leader calls it
  // about once a second; one sealer at a time (an advisory lock).
  Result<int> SealAudit(int max_rows = 5000);
  // Walks the chain against every row; `against_seq`/`against_hash`: a head kept elsewhere
  // (`audit head`) the chain must still extend. The report names the first break, if any.
  Result<AuditCheck> VerifyAudit(int64_t against_seq = 0, const std::string& against_hash = "");
  // One page of `audit export` (core/paging.h ChainPage): the links in the window by seq, then
  // the rows in it no link covers, by (source, id); at most `page.limit` rows and about
  // kMaxPageBytes. The first page (upto_seq -1) fixes the last link the export reads.
  Result<AuditExportPage> ExportAudit(const ChainPage& page);
  // Tokens (core/auth.h). `spec` comes from ParseTokenSpec; `hash` = TokenHash(secret), the
  // caller made the secret. AlreadyExists when a live token has the name. Audited as
  // token.create / token.revoke by `actor`.
  Result<TokenRow> CreateToken(const TokenSpec& spec, const std::string& hash,
                               const std::string& actor);
  Result<std::vector<TokenRow>> ListTokens(bool include_revoked);
  // NotFound when no live token has the name.
  Result<TokenRow> RevokeToken(const std::string& name, const std::string& actor);
  // The live token with this hash; nullopt when none (unknown or revoked).
  Result<std::optional<Identity>> FindToken(const std::string& hash);
  // Whether any live admin token exists (the server makes one at start when not).
  Result<bool> HasLiveAdmin();
  // An audit event for a refused call: kind auth.refused, the method and why, by `actor` (the
  // token's identity, or "anonymous" with the peer); `suppressed` > 0: how many refusals of this
  // source before it were counted instead of recorded (detail suppressed_before).
  Status AuditRefusal(const std::string& actor, const std::string& method,
                      const std::string& reason, const std::string& peer, int64_t suppressed = 0);
  Result<Paged<LogRow>> ListLog(const std::string& workload, const std::string& param,
                                const Page& page = Page());

  // Off-peak schedules and batches. The schedule is validated by the caller (core + tz data).
  Result<int64_t> CreateSchedule(const ScheduleRow& s, const std::string& actor);
  Result<std::vector<ScheduleRow>> ListSchedules();
  // One single-variable experiment per value, all against the same baseline, in one transaction.
  Result<int64_t> CreateBatch(const BatchIn& in, const std::string& actor);
  Result<BatchRow> GetBatch(int64_t id);
  // Summaries: members counted by state and decision, from one query (GetBatch has them all).
  Result<Paged<BatchRow>> ListBatches(const Page& page = Page());
  Result<BatchRow> CancelBatch(int64_t id, const std::string& actor);

  // Regression watch: the newest `points` of the current config's run series and what the watch
  // recorded.
  Result<RegressionSeries> GetRegressionSeries(const std::string& workload,
                                               int points = kDefaultSeriesPoints);
  // One long run of the current config, stopped at `duration_s` and judged within itself.
  // `schedule` (optional) gates its start to a window with at least the duration left.
  Result<StabilityRow> CreateStabilityRun(const std::string& workload, int64_t duration_s,
                                          const std::string& schedule, const std::string& actor,
                                          const std::string& request_id = "");
  // Periodic checks: `repeats` runs of the current config in each window of `schedule`.
  Result<WatchRow> CreateWatch(const std::string& workload, const std::string& schedule,
                               int repeats, const std::string& actor);
  Result<WatchRow> StopWatch(const std::string& workload, const std::string& actor);
  // Closes a recorded regression (its alert stops) with what fixed it, as a 'resolved' entry in
  // the tuning log. Refused when unknown, already resolved, or without a reason.
  Result<RegressionRecord> ResolveRegression(int64_t id, const std::string& reason,
                                             const std::string& actor);

  // Scheduler duties (run by the leader only). `window_starts`: {schedule id: start (Unix s) of
  // its open window}. Queues one check per active watch per window (never two while one is
  // still running); returns how many were queued.
  Result<int> QueueDueChecks(const std::map<int64_t, int64_t>& window_starts,
                             const std::string& actor);
  // Asks agents to stop the running runs of 'requeue' schedules whose window is closed; they
  // come back queued (a new attempt that does not count against max_attempts). Returns how many.
  Result<int> RequeueAtWindowEnd(const std::map<int64_t, int64_t>& window_starts);

  Result<StoreSnapshot> Snapshot();
  Status Ping();

 private:
  ConnectionPool* pool_;
  const Clock* clock_;
};

}  // namespace tunectl

// Helpers shared by the Store's translation units (one per aggregate: workloads, runs, agents,
// experiments, freeze, batches, watch). Not for use outside server/store.
//
// Lock order, in every transaction that takes more than one: batch → baseline → experiment →
// run (LockRunOwners) → the workload's watch lock (advisory; a stability run's judgement) → a
// baseline's completion lock (MaybeCompleteBaseline; advisory, in baseline id order). Agent rows
// are locked only first (ExpireAgents) or alone, and nothing that holds a batch, baseline,
// experiment or run waits for one. ClaimRuns never waits on an experiment (it skips locked ones),
// so a cancel or a decision cannot deadlock with dispatch.
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/changepoint.h"
#include "core/clock.h"
#include "core/lifecycle.h"
#include "core/runs.h"
#include "core/states.h"
#include "core/template.h"
#include "server/store/pool.h"
#include "server/store/store.h"

// A baseline's runs: its own, or for a frozen config the variant runs of its experiment.
#define BASELINE_RUNS                                                                   \
  "(r.baseline_id = b.id OR (b.source_experiment_id IS NOT NULL AND r.experiment_id = " \
  "b.source_experiment_id AND r.arm = 'variant'))"

namespace tunectl::internal {

using json = nlohmann::json;

// Runs `f` in one transaction; commits when it returns ok. A serialization failure or deadlock
// is retried (the whole of `f`, up to kTxAttempts times), so `f` must only touch the database.
// All libpqxx exceptions end here and become a Status once; anything else is Internal and says
// what it was.
constexpr int kTxAttempts = 3;
// With a `clock`, the transaction's tunectl_now() is the clock's time (else PostgreSQL's now()).
template <typename T, typename F>
Result<T> InTx(ConnectionPool* pool, const Clock* clock, F&& f) {
  for (int attempt = 1;; ++attempt) {
    auto lease = pool->Acquire();
    if (!lease.ok()) return lease.status();
    try {
      pqxx::work w(**lease);
      if (clock)
        w.exec_params("SELECT set_config('tunectl.now', $1, true)", std::to_string(clock->NowMs()));
      Result<T> r = f(w);
      if (r.ok()) w.commit();
      return r;
    } catch (const pqxx::transaction_rollback& e) {
      const bool retry = (dynamic_cast<const pqxx::serialization_failure*>(&e) ||
                          dynamic_cast<const pqxx::deadlock_detected*>(&e)) &&
                         attempt < kTxAttempts;
      if (!retry)
        return Status::Unavailable(std::string("database conflict, not retried further: ") +
                                   e.what());
    } catch (const pqxx::broken_connection& e) {
      return Status::Unavailable(std::string("database unavailable: connection lost: ") + e.what());
    } catch (const pqxx::foreign_key_violation& e) {
      return Status::InvalidArgument(std::string("reference to an unknown entity: ") + e.what());
    } catch (const pqxx::unique_violation& e) {
      return Status::AlreadyExists(std::string("already exists: ") + e.what());
    } catch (const pqxx::failure& e) {
      return Status::Internal(std::string("database error: ") + e.what());
    } catch (const pqxx::pqxx_exception& e) {  // usage, conversion and range errors
      return Status::Internal(std::string("database client error: ") + e.base().what());
    } catch (const std::exception& e) {
      return Status::Internal(std::string("internal error in the store (") + typeid(e).name() +
                              "): " + e.what());
    }
  }
}

// Create requests that carry a client's key (requests table, migration 0010). Claim: checks the
// key (8..128 of [A-Za-z0-9_-]), serializes requests with the same key for this transaction and
// returns the id an earlier request with it created (NotFound-free: nullopt when it is new; a key
// used for another kind is InvalidArgument). Record: remembers what this one created.
Result<std::optional<int64_t>> ClaimRequestKey(pqxx::work& w, const std::string& key,
                                               const std::string& kind);
void RecordRequestKey(pqxx::work& w, const std::string& key, const std::string& kind, int64_t id);

// InTx for a create request with a client key (empty = none): a retry of a request that already
// committed returns what it created (`load` from its id) instead of creating it again.
template <typename T, typename F, typename IdOf, typename Load>
Result<T> InTxOnce(ConnectionPool* pool, const Clock* clock, const std::string& key,
                   const std::string& kind, F&& f, IdOf&& id_of, Load&& load) {
  return InTx<T>(pool, clock, [&](pqxx::work& w) -> Result<T> {
    if (key.empty()) return f(w);
    auto seen = ClaimRequestKey(w, key, kind);
    if (!seen.ok()) return seen.status();
    if (*seen) return load(w, **seen);
    Result<T> r = f(w);
    if (r.ok()) RecordRequestKey(w, key, kind, id_of(*r));
    return r;
  });
}
template <typename F>
Result<int64_t> InTxOnce(ConnectionPool* pool, const Clock* clock, const std::string& key,
                         const std::string& kind, F&& f) {
  return InTxOnce<int64_t>(
      pool, clock, key, kind, std::forward<F>(f), [](int64_t id) { return id; },
      [](pqxx::work&, int64_t id) -> Result<int64_t> { return id; });
}

Status ToStatus(const Result<bool>& r);
std::string MapToJson(const std::map<std::string, std::string>& m);
std::map<std::string, std::string> JsonToMap(const std::string& text);
void Audit(pqxx::work& w, const std::string& actor, const std::string& kind,
           const std::string& entity, int64_t id, const json& detail);
// Appends an entry to the tuning log (append-only; one 'decided' and one 'frozen' per
// experiment, enforced by the schema). `experiment_id` 0 = none.
void AppendLog(pqxx::work& w, int64_t workload_id, int64_t experiment_id, LogKind kind,
               const std::string& actor, const std::string& entry_json);

// PostgreSQL array literals for one-statement bulk operations ($1::bigint[], unnest(…)).
std::string PgArray(const std::vector<int64_t>& v);
std::string PgArray(const std::vector<std::string>& v);  // text[]: every element quoted
std::string PgArray(const std::vector<bool>& v);
// One page of a list keyed by an id column with a time column (core/paging.h): the conditions
// " AND id < before AND at >= since" (those set) and " ORDER BY id DESC LIMIT limit + 1", so the
// query walks an index newest first and stops after one row past the page. Only integers go in,
// so they are written into the query text: PageWhere(p, "e.id", "e.created_at").
std::string PageWhere(const Page& p, const std::string& id, const std::string& at);
std::string PageOrder(const Page& p, const std::string& id);
// The rows such a query returned (newest first, up to limit + 1) as the page: oldest first, and
// where the next page starts when more follow.
template <typename T, typename IdOf>
Paged<T> MakePage(std::vector<T> newest_first, const Page& p, IdOf id_of) {
  Paged<T> out;
  if (newest_first.size() > static_cast<size_t>(p.limit)) {
    out.more = true;
    newest_first.resize(static_cast<size_t>(p.limit));
  }
  std::reverse(newest_first.begin(), newest_first.end());
  if (out.more && !newest_first.empty()) out.next_before = id_of(newest_first.front());
  out.rows = std::move(newest_first);
  return out;
}

// SQL lists of run states, built from core's one list.
const std::string& ActiveStatesSql();  // ('queued','assigned','running')
const std::string& HeldStatesSql();    // ('assigned','running')
// `text` with {active}, {held} and {failed} replaced by those lists (core/states.h), so no
// query spells a lifecycle of its own.
std::string Sql(std::string text);

// --- workloads (workloads.cc) ---
Result<WorkloadRow> LoadWorkload(pqxx::work& w, const std::string& name);
// The workload of a run and, in the same statement, the columns `extra` (SQL over the run `r`
// and its baseline `b`, if any); NotFound without the run.
Result<std::pair<WorkloadRow, pqxx::row>> LoadWorkloadOfRun(pqxx::work& w, int64_t run_id,
                                                            const std::string& extra);
// The workload named, or the only one when `name` is empty.
Result<WorkloadRow> ResolveWorkload(pqxx::work& w, const std::string& name);
// The spec a baseline or experiment was started under (its recorded revision).
Result<WorkloadSpec> LoadSpecRevision(pqxx::work& w, int64_t workload_id, int revision);

// --- goals (goals.cc) ---
// The workload's current goal, parsed against its current spec; none when it has no goal.
Result<std::optional<GoalRow>> LoadGoal(pqxx::work& w, const WorkloadRow& wl);

// --- runs (runs.cc) ---
// The runs matching `condition` (SQL over `runs r`, with $1 = `id`) as core's rules see them,
// in `order` (SQL over r). `finished_at`, when given, gets each run's finishing time; `metric`,
// when given, loads only that metric's summary (the series needs the primary one).
std::vector<RunFacts> LoadRunFacts(pqxx::work& w, const std::string& condition, int64_t id,
                                   const std::string& order = "r.id",
                                   std::vector<std::string>* finished_at = nullptr,
                                   const std::string& metric = "");
// Locks, in the store's lock order (batch → baseline → experiment → run), the batches and
// experiments the runs belong to (FOR UPDATE) and their baselines (FOR KEY SHARE: shared by
// finishes, excluded by a cancel). Returns them for the caller to re-evaluate, and in `found` how
// many of the runs exist.
struct RunOwners {
  std::vector<int64_t> batches, baselines, experiments;
  size_t found = 0;
};
RunOwners LockRunOwners(pqxx::work& w, const std::vector<int64_t>& run_ids);
// Completes the baseline (summary over its counting runs) once no run is active. The caller
// holds the baseline's row lock (KEY SHARE at least) and has written its runs' changes; this
// takes the baseline's completion lock (advisory, to the commit), the last lock of the order.
void MaybeCompleteBaseline(pqxx::work& w, int64_t baseline_id, const std::string& actor);
// Requeues assigned/running runs as new attempts (or marks them lost when out of attempts), each
// for its reason (run id → why), then re-evaluates their baselines and experiments. All of their
// locks are taken before the first completion lock: call it once per transaction.
int RequeueRuns(pqxx::work& w, const std::map<int64_t, std::string>& why_of_run,
                const std::string& actor);
int RequeueRuns(pqxx::work& w, const std::vector<int64_t>& run_ids, const std::string& why,
                const std::string& actor);

struct BaselineExtras {
  std::string purpose = "baseline";  // baseline | check | stability
  int64_t schedule_id = 0;           // its runs start only inside this schedule's windows
  int expected_s = 0;                // a run's expected duration (window fit)
  int64_t duration_s = 0;            // stability: stop the run at this age
  int64_t watch_id = 0;
};
// Creates a baseline of the workload's current config and its queued runs.
Result<int64_t> CreateBaselineTx(pqxx::work& w, const WorkloadRow& wl, int repeats,
                                 const std::string& actor, const BaselineExtras& x = {});
// The median duration of the counting runs of the workload's current config (0 = unknown).
int ExpectedSecondsOfCurrentConfig(pqxx::work& w, const WorkloadRow& wl);

// --- experiments (experiments.cc) ---
// Takes the next look once none of the experiment's runs is active: queues one more pair, or
// stores the verdict — decided (with its tuning-log entry), or measured when it belongs to a
// batch, which then decides. The caller holds the experiment row lock (and its batch's).
void MaybeDecideExperiment(pqxx::work& w, int64_t experiment_id, const std::string& actor);
Result<ExperimentRow> LoadExperimentById(pqxx::work& w, int64_t id);
// Creates an experiment (and its first pairs) inside the caller's transaction.
Result<int64_t> CreateExperimentTx(pqxx::work& w, const ExperimentIn& in, const std::string& actor);
// Writes an experiment's final decision: state decided, its verdict and the 'decided' log entry.
void RecordDecision(pqxx::work& w, int64_t experiment_id, const Verdict& v,
                    const std::string& actor);

// --- schedules and batches (batches.cc) ---
// The schedule's id; NotFound naming the schedules there are (for --schedule).
Result<int64_t> ScheduleId(pqxx::work& w, const std::string& name);
// Once no member of the batch is running: every measured member gets its decision after the
// batch's correction (core::DecideBatch) and its log entry; the batch is done. The caller holds
// the batch row lock.
void MaybeFinishBatch(pqxx::work& w, int64_t batch_id, const std::string& actor);

// --- watch (watch.cc) ---
// In the transaction that stores a run's summaries (the caller holds the run's row lock): a
// stability run is judged within itself (`analyses`, one per metric in `names`) and what it
// confirms recorded, once, with its tuning-log entry and audit event (actor "watch"). Returns
// whether the run extends the series that change-point detection watches (a succeeded run of the
// current config), i.e. whether WatchSeries is due once the transaction committed.
bool JudgeRunForWatch(pqxx::work& w, int64_t run_id, const std::vector<std::string>& names,
                      const std::vector<SteadyState>& analyses);
// The change-point watch for a finished run, in a transaction of its own after the run's
// finish committed: records the regressions the series (its newest points) confirms that are not
// recorded yet, each once. Takes the workload's watch lock only when there is one to record.
void WatchSeries(pqxx::work& w, int64_t run_id);

}  // namespace tunectl::internal

// Helpers shared by the Store's translation units (store.cc, experiments.cc). Not for use
// outside server/store.
#pragma once

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <typeinfo>

#include "core/changepoint.h"
#include "core/template.h"
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
template <typename T, typename F>
Result<T> InTx(ConnectionPool* pool, F&& f) {
  for (int attempt = 1;; ++attempt) {
    auto lease = pool->Acquire();
    if (!lease.ok()) return lease.status();
    try {
      pqxx::work w(**lease);
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
      return Status::Unavailable(std::string("database connection lost: ") + e.what());
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

Status ToStatus(const Result<bool>& r);
std::string MapToJson(const std::map<std::string, std::string>& m);
std::map<std::string, std::string> JsonToMap(const std::string& text);
void Audit(pqxx::work& w, const std::string& actor, const std::string& kind,
           const std::string& entity, int64_t id, const json& detail);
std::string LaunchJson(const WorkloadSpec& spec, const Launch& l);
Result<WorkloadRow> LoadWorkload(pqxx::work& w, const std::string& name);
// The workload named, or the only one when `name` is empty.
Result<WorkloadRow> ResolveWorkload(pqxx::work& w, const std::string& name);
bool IsTerminal(const std::string& state);
void MaybeCompleteBaseline(pqxx::work& w, int64_t baseline_id, const std::string& actor);
// Decides the experiment (verdict, tuning-log entry) once none of its runs is active. The
// caller holds the experiment row lock.
void MaybeDecideExperiment(pqxx::work& w, int64_t experiment_id, const std::string& actor);
Result<ExperimentRow> LoadExperimentById(pqxx::work& w, int64_t id);
// Creates an experiment (and its first pairs) inside the caller's transaction.
Result<int64_t> CreateExperimentTx(pqxx::work& w, const ExperimentIn& in, const std::string& actor);

// Requeues assigned/running runs as new attempts (or marks them lost when out of attempts).
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
// After a run's summaries are stored (the caller holds the run's row lock): records the
// regressions the run confirms, each once, with its tuning-log entry and audit event (actor
// "watch"). A stability run is judged within itself (`analyses`, one per metric in `names`); any
// other succeeded run of the current config extends the series that change-point detection
// watches.
void WatchRun(pqxx::work& w, int64_t run_id, const std::vector<std::string>& names,
              const std::vector<SteadyState>& analyses);

}  // namespace tunectl::internal

// Helpers shared by the Store's translation units (store.cc, experiments.cc). Not for use
// outside server/store.
#pragma once

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>

#include "core/template.h"
#include "server/store/store.h"

// A baseline's runs: its own, or for a frozen config the variant runs of its experiment.
#define BASELINE_RUNS                                                                   \
  "(r.baseline_id = b.id OR (b.source_experiment_id IS NOT NULL AND r.experiment_id = " \
  "b.source_experiment_id AND r.arm = 'variant'))"

namespace tunectl::internal {

using json = nlohmann::json;

// Runs `f` in one transaction; commits when it returns ok. All libpqxx exceptions end here.
template <typename T, typename F>
Result<T> InTx(ConnectionPool* pool, F&& f) {
  auto lease = pool->Acquire();
  if (!lease.ok()) return lease.status();
  try {
    pqxx::work w(**lease);
    Result<T> r = f(w);
    if (r.ok()) w.commit();
    return r;
  } catch (const pqxx::broken_connection& e) {
    return Status::Unavailable(std::string("database connection lost: ") + e.what());
  } catch (const pqxx::foreign_key_violation& e) {
    return Status::InvalidArgument(std::string("reference to an unknown entity: ") + e.what());
  } catch (const pqxx::unique_violation& e) {
    return Status::AlreadyExists(std::string("already exists: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Internal(std::string("database error: ") + e.what());
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

}  // namespace tunectl::internal

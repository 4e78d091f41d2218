// Store helpers shared by every aggregate's file: codecs, audit events, loading run facts.
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "server/store/store.h"
#include "server/store/store_internal.h"
#include "sys/clock.h"

namespace tunectl {
namespace internal {

Status ToStatus(const Result<bool>& r) {
  return r.ok() ? Status::Ok() : r.status();
}

std::string MapToJson(const std::map<std::string, std::string>& m) {
  return json(m).dump();
}

std::map<std::string, std::string> JsonToMap(const std::string& text) {
  std::map<std::string, std::string> out;
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it)
    out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  return out;
}

void Audit(pqxx::work& w, const std::string& actor, const std::string& kind,
           const std::string& entity, int64_t id, const json& detail) {
  w.exec_params0(
      "INSERT INTO audit_events(actor, kind, entity, entity_id, detail) VALUES "
      "($1,$2,$3,$4,$5::jsonb)",
      actor, kind, entity, id, detail.dump());
}

void AppendLog(pqxx::work& w, int64_t workload_id, int64_t experiment_id, LogKind kind,
               const std::string& actor, const std::string& entry_json) {
  w.exec_params0(
      "INSERT INTO tuning_log(workload_id, experiment_id, kind, actor, entry) "
      "VALUES ($1, $2, $3, $4, $5::json)",
      workload_id, experiment_id ? std::optional<int64_t>(experiment_id) : std::nullopt, Name(kind),
      actor, entry_json);
}

const std::string& ActiveStatesSql() {
  static const std::string s = SqlList(kActiveRunStates);
  return s;
}

const std::string& HeldStatesSql() {
  static const std::string s = SqlList(kHeldRunStates);
  return s;
}

std::string Sql(std::string text) {
  static const std::string failed = SqlList(kFailedRunStates);
  const std::pair<const char*, const std::string*> lists[] = {
      {"{active}", &ActiveStatesSql()}, {"{held}", &HeldStatesSql()}, {"{failed}", &failed}};
  for (const auto& [key, list] : lists)
    for (size_t p; (p = text.find(key)) != std::string::npos;)
      text.replace(p, std::string_view(key).size(), *list);
  return text;
}

}  // namespace internal

Store::Store(ConnectionPool* pool, const Clock* clock)
    : pool_(pool), clock_(clock ? clock : &RealClock()) {}

}  // namespace tunectl

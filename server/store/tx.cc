// Store helpers shared by every aggregate's file: codecs, audit events, loading run facts.
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "server/store/store.h"
#include "server/store/store_internal.h"
#include "sys/clock.h"

namespace tunectl {
namespace internal {

Result<std::optional<int64_t>> ClaimRequestKey(pqxx::work& w, const std::string& key,
                                               const std::string& kind) {
  const bool ok_chars = std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
  if (key.size() < 8 || key.size() > 128 || !ok_chars)
    return Status::InvalidArgument("request_id: \"" + key.substr(0, 140) +
                                   "\" is not allowed; allowed 8 to 128 letters, digits, '-' "
                                   "or '_' (the CLI makes one per command; --request-id reuses "
                                   "one)");
  w.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 7325002))", key);
  auto r = w.exec_params("SELECT kind, entity_id FROM requests WHERE key = $1", key);
  if (r.empty()) return std::optional<int64_t>();
  if (r[0]["kind"].as<std::string>() != kind)
    return Status::InvalidArgument("request_id: \"" + key + "\" was already used to create a " +
                                   r[0]["kind"].as<std::string>() + "; use a new one");
  return std::optional<int64_t>(r[0]["entity_id"].as<int64_t>());
}

void RecordRequestKey(pqxx::work& w, const std::string& key, const std::string& kind, int64_t id) {
  w.exec_params0("INSERT INTO requests(key, kind, entity_id) VALUES ($1, $2, $3)", key, kind, id);
}

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

std::string PgArray(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

std::string PgArray(const std::vector<std::string>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    s += i ? ",\"" : "\"";
    for (char c : v[i]) {
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    }
    s += '"';
  }
  return s + "}";
}

std::string PgArray(const std::vector<bool>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::string(v[i] ? "t" : "f");
  return s + "}";
}

std::string PageWhere(const Page& p, const std::string& id, const std::string& at) {
  std::string sql;
  if (p.before_id > 0) sql += " AND " + id + " < " + std::to_string(p.before_id);
  if (p.since_ms > 0)
    sql += " AND " + at + " >= to_timestamp(" + std::to_string(p.since_ms) + " / 1000.0)";
  return sql;
}

std::string PageOrder(const Page& p, const std::string& id) {
  return " ORDER BY " + id + " DESC LIMIT " + std::to_string(p.limit + 1);
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

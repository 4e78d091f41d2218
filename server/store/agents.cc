// Store: agents, their sessions and dispatch (claiming runs, cancels).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>

#include "core/launch.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

Result<int64_t> Store::RegisterAgent(const std::string& name, const LabelMap& labels, int slots,
                                     const std::string& version, const std::string& session,
                                     const AgentNameClaim& claim) {
  return InTx<int64_t>(pool_, clock_, [&](pqxx::work& w) -> Result<int64_t> {
    if (!claim.instance.empty()) {
      auto held = w.exec_params(
          "SELECT session, instance, host, (EXTRACT(EPOCH FROM tunectl_now() - last_seen) * "
          "1000)::bigint AS age_ms FROM agents WHERE name = $1 AND connected FOR UPDATE",
          name);
      if (!held.empty()) {
        const std::string other = held[0]["instance"].as<std::string>();
        const std::string old_session =
            held[0]["session"].is_null() ? std::string() : held[0]["session"].as<std::string>();
        const int64_t age = held[0]["age_ms"].as<int64_t>();
        const bool live =
            age < claim.live_ms && (!claim.session_live || claim.session_live(old_session));
        if (!other.empty() && other != claim.instance && live) {
          const std::string host = held[0]["host"].as<std::string>();
          return Status::AlreadyExists(
              "agent name " + name + " is held by a live agent on " +
              (host.empty() ? std::string("another host") : "host " + host) + " (seen " +
              std::to_string(age / 1000) + "s ago); give this agent its own --name (e.g. " + name +
              "-2), or stop the other one");
        }
      }
    }
    auto r = w.exec_params1(
        "INSERT INTO agents(name, labels, slots, version, connected, session, last_seen, instance, "
        "host) VALUES ($1, $2::jsonb, $3, $4, true, $5, tunectl_now(), $6, $7) ON CONFLICT (name) "
        "DO UPDATE SET labels = EXCLUDED.labels, slots = EXCLUDED.slots, version = "
        "EXCLUDED.version, connected = true, session = EXCLUDED.session, last_seen = "
        "tunectl_now(), instance = EXCLUDED.instance, host = EXCLUDED.host RETURNING id",
        name, MapToJson(labels), slots, version, session, claim.instance, claim.host);
    const int64_t id = r[0].as<int64_t>();
    Audit(w, "agent:" + name, "agent.connected", "agent", id,
          {{"labels", labels}, {"slots", slots}, {"version", version}});
    return id;
  });
}

Status Store::TouchAgent(int64_t agent_id, bool busy) {
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    w.exec_params0("UPDATE agents SET last_seen = tunectl_now(), busy = $2 WHERE id = $1", agent_id,
                   busy);
    return true;
  }));
}

Status Store::DisconnectAgent(int64_t agent_id, const std::string& session) {
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    auto r = w.exec_params(
        "UPDATE agents SET connected = false, last_seen = tunectl_now() WHERE id = $1 AND session "
        "= $2 "
        "RETURNING name",
        agent_id, session);
    if (!r.empty())
      Audit(w, "agent:" + r[0][0].as<std::string>(), "agent.disconnected", "agent", agent_id,
            json::object());
    return true;
  }));
}

Result<std::vector<AgentRow>> Store::ListAgents() {
  return InTx<std::vector<AgentRow>>(
      pool_, clock_, [&](pqxx::work& w) -> Result<std::vector<AgentRow>> {
        std::vector<AgentRow> out;
        auto r = w.exec(
            Sql("SELECT a.id AS id, a.name AS name, a.labels::text AS labels, a.slots AS slots, "
                "a.connected AS connected, a.version AS version, tunectl_ts(a.last_seen) AS "
                "last_seen, (SELECT count(*) FROM runs r WHERE r.agent_id = a.id AND r.state IN "
                "{held}) AS running, a.busy AS busy FROM agents a ORDER BY a.name"));
        for (const auto& row : r) {
          AgentRow a;
          a.id = row["id"].as<int64_t>();
          a.name = row["name"].as<std::string>();
          a.labels = JsonToMap(row["labels"].as<std::string>());
          a.slots = row["slots"].as<int>();
          a.connected = row["connected"].as<bool>();
          a.version = row["version"].as<std::string>();
          a.last_seen = row["last_seen"].as<std::string>();
          a.running = row["running"].as<int>();
          a.busy = row["busy"].as<bool>();
          out.push_back(a);
        }
        return out;
      });
}

Result<int> Store::ReconcileAgentRuns(int64_t agent_id, const std::vector<RunRef>& active) {
  return InTx<int>(pool_, clock_, [&](pqxx::work& w) -> Result<int> {
    std::set<RunRef> keep(active.begin(), active.end());
    std::vector<int64_t> stale;
    auto r = w.exec_params(
        Sql("SELECT id, attempt FROM runs WHERE agent_id = $1 AND state IN {held}"), agent_id);
    for (const auto& row : r) {
      RunRef ref{row[0].as<int64_t>(), row[1].as<int>()};
      if (!keep.count(ref)) stale.push_back(ref.run_id);
    }
    return RequeueRuns(w, stale, "was not running on its agent after a reconnect", "server");
  });
}

Result<int> Store::ExpireAgents(int timeout_s) {
  return InTx<int>(pool_, clock_, [&](pqxx::work& w) -> Result<int> {
    auto agents = w.exec_params(
        Sql("SELECT a.id, a.name FROM agents a WHERE a.last_seen < tunectl_now() - "
            "make_interval(secs => $1) AND (a.connected OR EXISTS (SELECT 1 FROM runs r WHERE "
            "r.agent_id = a.id AND r.state IN {held})) FOR UPDATE SKIP LOCKED"),
        timeout_s);
    int n = 0;
    for (const auto& a : agents) {
      const int64_t id = a[0].as<int64_t>();
      auto was = w.exec_params(
          "UPDATE agents SET connected = false WHERE id = $1 AND connected RETURNING id", id);
      if (!was.empty())
        Audit(w, "server", "agent.expired", "agent", id, {{"silent_for_s", timeout_s}});
      std::vector<int64_t> runs;
      for (const auto& r :
           w.exec_params(Sql("SELECT id FROM runs WHERE agent_id = $1 AND state IN {held}"), id))
        runs.push_back(r[0].as<int64_t>());
      n += RequeueRuns(w, runs, "lost: agent " + a[1].as<std::string>() + " went silent", "server");
    }
    return n;
  });
}

Result<std::vector<LaunchPlan>> Store::ClaimRuns(int64_t agent_id, const LabelMap& labels,
                                                 int slots, const std::string& open_windows) {
  return InTx<std::vector<
      LaunchPlan>>(pool_, clock_, [&](pqxx::work& w) -> Result<std::vector<LaunchPlan>> {
    std::vector<LaunchPlan> out;
    if (slots <= 0) return out;
    // A schedule's agent cap is checked against the runs active now; claims that could raise
    // it are serialized so two agents cannot both take the last place.
    if (!w.exec("SELECT 1 FROM schedules WHERE max_agents > 0 LIMIT 1").empty())
      w.exec("SELECT pg_advisory_xact_lock(7325001)");
    auto r = w.exec_params(
        Sql("WITH c AS (SELECT r.id FROM runs r LEFT JOIN experiments e ON e.id = r.experiment_id "
            "LEFT JOIN schedules s ON s.id = r.schedule_id WHERE r.state = 'queued' AND r.selector "
            "<@ $1::jsonb AND (e.agent_id IS NULL OR e.agent_id = $3 OR NOT EXISTS (SELECT 1 FROM "
            "agents a WHERE a.id = e.agent_id AND a.connected)) AND (r.schedule_id IS NULL OR "
            "(COALESCE(($4::jsonb ->> r.schedule_id::text)::bigint, -1) >= r.expected_s AND "
            "(s.max_agents = 0 OR EXISTS (SELECT 1 FROM runs x WHERE x.schedule_id = r.schedule_id "
            "AND x.agent_id = $3 AND x.state IN {held}) OR (SELECT count(DISTINCT x.agent_id) FROM "
            "runs x WHERE x.schedule_id = r.schedule_id AND x.state IN {held}) < s.max_agents))) "
            "ORDER BY r.id LIMIT GREATEST(0, $2 - (SELECT count(*) FROM runs b WHERE b.agent_id = "
            "$3 AND b.state IN {held})) FOR UPDATE OF r SKIP LOCKED) UPDATE runs SET state = "
            "'assigned', agent_id = $3, assigned_at = tunectl_now(), reason = '' FROM c, workloads "
            "wl WHERE runs.id = c.id AND wl.id = runs.workload_id RETURNING runs.id, runs.attempt, "
            "runs.launch::text AS launch, wl.name AS workload"),
        MapToJson(labels), slots, agent_id, open_windows);
    for (const auto& row : r) {
      LaunchPlan p;
      p.run_id = row["id"].as<int64_t>();
      p.attempt = row["attempt"].as<int>();
      p.workload = row["workload"].as<std::string>();
      auto rec = LaunchRecordFromJson(row["launch"].as<std::string>());
      if (!rec.ok())
        return Status::Internal("run " + std::to_string(p.run_id) + ": " + rec.status().message());
      p.argv = rec->argv;
      p.env = rec->env;
      p.files = rec->files;
      p.metrics = rec->Rules();
      p.timeout_ms = rec->timeout_ms;
      p.duration_ms = rec->duration_ms;
      Audit(w, "server", "run.assigned", "run", p.run_id,
            {{"agent_id", agent_id}, {"attempt", p.attempt}});
      out.push_back(std::move(p));
    }
    // Keep an experiment's control and variant runs on one agent where possible (same node,
    // same noise); another agent takes over only while this one is disconnected. Best effort:
    // an experiment locked by a cancel or a decision is skipped, never waited for (lock order).
    if (!out.empty())
      w.exec_params0(
          "UPDATE experiments SET agent_id = $1 WHERE id IN (SELECT e.id FROM experiments e "
          "WHERE (e.agent_id IS NULL OR NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = "
          "e.agent_id AND a.connected)) AND e.id IN (SELECT experiment_id FROM runs WHERE "
          "agent_id = $1 AND state = 'assigned' AND experiment_id IS NOT NULL) "
          "FOR UPDATE SKIP LOCKED)",
          agent_id);
    std::sort(out.begin(), out.end(),
              [](const LaunchPlan& a, const LaunchPlan& b) { return a.run_id < b.run_id; });
    return out;
  });
}

Status Store::MarkRunStarted(int64_t run_id, int attempt, int64_t agent_id) {
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    auto r = w.exec_params(
        "UPDATE runs SET state = 'running', started_at = tunectl_now() WHERE id = $1 AND attempt = "
        "$2 "
        "AND agent_id = $3 AND state = 'assigned' RETURNING id",
        run_id, attempt, agent_id);
    if (!r.empty()) Audit(w, "server", "run.started", "run", run_id, {{"attempt", attempt}});
    return true;
  }));
}

Result<PendingCancelList> Store::PendingCancels(int64_t agent_id) {
  return InTx<PendingCancelList>(pool_, clock_, [&](pqxx::work& w) -> Result<PendingCancelList> {
    PendingCancelList out;
    for (const auto& r : w.exec_params(Sql("SELECT id, attempt FROM runs WHERE agent_id = $1 AND "
                                           "cancel_requested AND state IN {held}"),
                                       agent_id))
      out.push_back({r[0].as<int64_t>(), r[1].as<int>()});
    return out;
  });
}

}  // namespace tunectl

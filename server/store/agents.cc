// Store: agents, their sessions and dispatch (claiming runs, cancels).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>

#include "core/agent_messages.h"
#include "core/dispatch.h"
#include "core/launch.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

Result<int64_t> Store::RegisterAgent(const std::string& name, const LabelMap& labels, int slots,
                                     const std::string& version, const std::string& session,
                                     const AgentNameClaim& claim, const AgentNodeState& node) {
  // Before any statement: libpq would cut a name at a NUL, jsonb refuses one in a label.
  if (Status st = CheckAgentHello(name, slots, labels); !st.ok()) return st;
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
        "host, busy, unhealthy, isolated_slots, executor) VALUES ($1, $2::jsonb, $3, $4, true, "
        "$5, tunectl_now(), $6, $7, $8, $9, $10, $11) ON CONFLICT (name) DO UPDATE SET labels = "
        "EXCLUDED.labels, slots = EXCLUDED.slots, version = EXCLUDED.version, connected = true, "
        "session = EXCLUDED.session, last_seen = tunectl_now(), instance = EXCLUDED.instance, "
        "host = EXCLUDED.host, busy = EXCLUDED.busy, unhealthy = EXCLUDED.unhealthy, "
        "isolated_slots = EXCLUDED.isolated_slots, executor = EXCLUDED.executor, removed_at = "
        "NULL RETURNING id",
        name, MapToJson(labels), slots, version, session, claim.instance, claim.host, node.busy,
        node.unhealthy, node.isolated_slots, node.executor.empty() ? "local" : node.executor);
    const int64_t id = r[0].as<int64_t>();
    Audit(w, "agent:" + name, "agent.connected", "agent", id,
          {{"labels", labels},
           {"slots", slots},
           {"version", version},
           {"isolated_slots", node.isolated_slots},
           {"executor", node.executor.empty() ? "local" : node.executor}});
    return id;
  });
}

Status Store::TouchAgents(const std::vector<AgentBeat>& beats) {
  std::vector<int64_t> ids;
  std::vector<std::string> sessions, unhealthy;
  std::vector<bool> busy;
  for (const auto& b : beats) {
    ids.push_back(b.agent_id);
    sessions.push_back(b.session);
    busy.push_back(b.busy);
    unhealthy.push_back(b.unhealthy);
  }
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    // connected = true: a live session here is the truth, also after an outage in which the
    // agent was expired from its stale last_seen.
    w.exec_params0(
        "UPDATE agents a SET last_seen = tunectl_now(), connected = true, busy = b.busy, "
        "unhealthy = b.unhealthy, removed_at = NULL FROM unnest($1::bigint[], $2::text[], "
        "$3::bool[], $4::text[]) "
        "AS b(id, session, busy, unhealthy) WHERE a.id = b.id AND a.session = b.session",
        PgArray(ids), PgArray(sessions), PgArray(busy), PgArray(unhealthy));
    return true;
  }));
}

Status Store::DisconnectAgent(int64_t agent_id, const std::string& session, bool fresh) {
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    auto r = w.exec_params(
        "UPDATE agents SET connected = false, last_seen = CASE WHEN $3 THEN tunectl_now() ELSE "
        "last_seen END WHERE id = $1 AND session = $2 RETURNING name",
        agent_id, session, fresh);
    if (!r.empty())
      Audit(w, "agent:" + r[0][0].as<std::string>(), "agent.disconnected", "agent", agent_id,
            json::object());
    return true;
  }));
}

namespace {

// The agents not removed, by name (ListAgents; RemoveAgent reports the one it removes).
std::vector<AgentRow> ListAgentsTx(pqxx::work& w, const std::string& where = "true") {
  std::vector<AgentRow> out;
  auto r = w.exec(
      Sql("SELECT a.id AS id, a.name AS name, a.labels::text AS labels, a.slots AS slots, "
          "a.connected AS connected, a.version AS version, tunectl_ts(a.last_seen) AS "
          "last_seen, (SELECT count(*) FROM runs r WHERE r.agent_id = a.id AND r.state IN "
          "{held}) AS running, a.busy AS busy, a.unhealthy AS unhealthy, a.isolated_slots AS "
          "isolated_slots, a.executor AS executor FROM agents a WHERE a.removed_at IS NULL AND ") +
      where + " ORDER BY a.name");
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
    a.unhealthy = row["unhealthy"].as<std::string>();
    a.isolated_slots = row["isolated_slots"].as<bool>();
    a.executor = row["executor"].as<std::string>();
    out.push_back(a);
  }
  return out;
}

}  // namespace

Result<std::vector<AgentRow>> Store::ListAgents() {
  return InTx<std::vector<AgentRow>>(
      pool_, clock_,
      [&](pqxx::work& w) -> Result<std::vector<AgentRow>> { return ListAgentsTx(w); });
}

Result<AgentRemoval> Store::RemoveAgent(const std::string& name, const std::string& actor) {
  return InTx<AgentRemoval>(pool_, clock_, [&](pqxx::work& w) -> Result<AgentRemoval> {
    // The agent row first, alone (the lock order of ExpireAgents), then its runs' owners.
    auto a = w.exec_params(
        "SELECT id, connected FROM agents WHERE name = $1 AND removed_at IS NULL FOR UPDATE", name);
    if (a.empty()) {
      std::string known;
      for (const auto& r : w.exec("SELECT name FROM agents WHERE removed_at IS NULL ORDER BY name"))
        known += (known.empty() ? "" : ", ") + r[0].as<std::string>();
      return Status::NotFound("agent \"" + name + "\" not found; known agents: " +
                              (known.empty() ? std::string("none") : known));
    }
    const int64_t id = a[0]["id"].as<int64_t>();
    if (Status st = CheckAgentRemovable(name, a[0]["connected"].as<bool>()); !st.ok()) return st;
    AgentRemoval out;
    for (const auto& row : ListAgentsTx(w, "a.id = " + std::to_string(id))) out.agent = row;
    // Runs kept for it while it might come back (a disconnect within --agent-timeout) go back to
    // the queue now, as ExpireAgents would put them.
    std::vector<int64_t> runs;
    for (const auto& r :
         w.exec_params(Sql("SELECT id FROM runs WHERE agent_id = $1 AND state IN {held}"), id))
      runs.push_back(r[0].as<int64_t>());
    out.requeued = RequeueRuns(w, runs, "agent " + name + " was removed", actor);
    w.exec_params0("UPDATE agents SET removed_at = tunectl_now() WHERE id = $1", id);
    Audit(w, actor, "agent.removed", "agent", id, {{"name", name}, {"requeued", out.requeued}});
    return out;
  });
}

Result<Reconciled> Store::ReconcileAgentRuns(int64_t agent_id, const std::vector<RunRef>& active) {
  return InTx<Reconciled>(pool_, clock_, [&](pqxx::work& w) -> Result<Reconciled> {
    Reconciled out;
    std::set<RunRef> keep(active.begin(), active.end());
    std::vector<int64_t> stale;
    auto r = w.exec_params(
        Sql("SELECT id, attempt FROM runs WHERE agent_id = $1 AND state IN {held}"), agent_id);
    std::set<RunRef> held;
    for (const auto& row : r) {
      RunRef ref{row[0].as<int64_t>(), row[1].as<int>()};
      held.insert(ref);
      if (!keep.count(ref)) stale.push_back(ref.run_id);
    }
    for (const auto& a : active)
      if (!held.count(a)) out.stop.push_back(a);
    out.requeued =
        RequeueRuns(w, stale, "was not running on its agent after a reconnect", "server");
    return out;
  });
}

Result<int> Store::ExpireAgents(int timeout_s) {
  return InTx<int>(pool_, clock_, [&](pqxx::work& w) -> Result<int> {
    auto agents = w.exec_params(
        Sql("SELECT a.id, a.name FROM agents a WHERE a.last_seen < tunectl_now() - "
            "make_interval(secs => $1) AND (a.connected OR EXISTS (SELECT 1 FROM runs r WHERE "
            "r.agent_id = a.id AND r.state IN {held})) FOR UPDATE SKIP LOCKED"),
        timeout_s);
    // Every expired agent's runs in one requeue: their owners' and rows' locks all come before
    // the first baseline's completion lock (store_internal.h's order), as in a finish.
    std::map<int64_t, std::string> why_of_run;
    for (const auto& a : agents) {
      const int64_t id = a[0].as<int64_t>();
      auto was = w.exec_params(
          "UPDATE agents SET connected = false WHERE id = $1 AND connected RETURNING id", id);
      if (!was.empty())
        Audit(w, "server", "agent.expired", "agent", id, {{"silent_for_s", timeout_s}});
      for (const auto& r :
           w.exec_params(Sql("SELECT id FROM runs WHERE agent_id = $1 AND state IN {held}"), id))
        why_of_run[r[0].as<int64_t>()] = "lost: agent " + a[1].as<std::string>() + " went silent";
    }
    return RequeueRuns(w, why_of_run, "server");
  });
}

Result<std::map<int64_t, std::vector<LaunchPlan>>> Store::ClaimRunsFor(
    const std::vector<ClaimRequest>& agents, const std::string& open_windows,
    std::map<int64_t, int>* free_after) {
  using Plans = std::map<int64_t, std::vector<LaunchPlan>>;
  std::map<int64_t, int> free_of;  // of this attempt of the transaction
  auto plans = InTx<Plans>(pool_, clock_, [&](pqxx::work& w) -> Result<Plans> {
    Plans out;
    free_of.clear();
    std::vector<int64_t> ids;
    for (const auto& a : agents)
      if (a.slots > 0) ids.push_back(a.agent_id);
    if (ids.empty()) return out;
    // Per agent: the runs it holds, the experiments they belong to, and whether its slots are
    // isolated (PlanClaims runs one run of an experiment at a time on a node that is not).
    std::map<int64_t, int> held;
    std::map<int64_t, std::set<int64_t>> held_experiments;
    std::set<int64_t> isolated;
    for (const auto& r : w.exec_params(
             Sql("SELECT a.id AS agent_id, a.isolated_slots AS isolated, count(r.id) AS n, "
                 "COALESCE(string_agg(DISTINCT r.experiment_id::text, ','), '') AS experiments "
                 "FROM agents a LEFT JOIN runs r ON r.agent_id = a.id AND r.state IN {held} WHERE "
                 "a.id = ANY($1::bigint[]) GROUP BY a.id"),
             PgArray(ids))) {
      const int64_t agent = r["agent_id"].as<int64_t>();
      held[agent] = r["n"].as<int>();
      if (r["isolated"].as<bool>()) isolated.insert(agent);
      const std::string exps = r["experiments"].as<std::string>();
      for (size_t i = 0; i < exps.size();) {
        size_t end = exps.find(',', i);
        if (end == std::string::npos) end = exps.size();
        held_experiments[agent].insert(std::stoll(exps.substr(i, end - i)));
        i = end + 1;
      }
    }
    std::vector<ClaimSlot> slots;
    std::map<int64_t, const ClaimRequest*> by_id;
    for (const auto& a : agents) {
      const int free = a.slots - held[a.agent_id];
      free_of[a.agent_id] = std::max(0, free);
      if (free <= 0 || by_id.count(a.agent_id)) continue;
      slots.push_back({a.agent_id, a.labels, free, isolated.count(a.agent_id) > 0,
                       held_experiments[a.agent_id]});
      by_id[a.agent_id] = &a;
    }
    if (slots.empty()) return out;
    // A schedule's agent cap is checked against the runs active now; claims that could raise it
    // are serialized so two servers cannot both take the last place.
    std::map<int64_t, ScheduleCap> caps;
    if (!w.exec("SELECT 1 FROM schedules WHERE max_agents > 0 LIMIT 1").empty()) {
      w.exec("SELECT pg_advisory_xact_lock(7325001)");
      for (const auto& r :
           w.exec(Sql("SELECT s.id AS id, s.max_agents AS max_agents, x.agent_id AS agent_id FROM "
                      "schedules s LEFT JOIN runs x ON x.schedule_id = s.id AND x.state IN {held} "
                      "WHERE s.max_agents > 0"))) {
        ScheduleCap& c = caps[r["id"].as<int64_t>()];
        c.max_agents = r["max_agents"].as<int>();
        if (!r["agent_id"].is_null()) c.agents.insert(r["agent_id"].as<int64_t>());
      }
    }
    // The oldest queued runs some agent here could take: a selector one of them satisfies, a
    // window open long enough, not kept on another server's agent, and no more of the runs kept
    // on one of these agents than it has free slots (so they cannot crowd out the others).
    // Runs already picked in an earlier round of this pass ($6) are left out. Free runs and kept
    // runs are found apart: free ones in id order up to a limit (never the whole queue, and a plan
    // that stays cheap once PostgreSQL switches to a generic plan), kept ones through their
    // experiment's agent. The free part takes twice the limit and 64 more (ids only; only the
    // limit is locked) so runs other claims have locked (SKIP LOCKED) — other servers', or this
    // server's claims for other agents at the same moment — do not cut the answer short.
    // MATERIALIZED: each part runs once, whatever the planner believes of the queue's size (stale
    // statistics had it re-run per queued run). Free runs are found per selector: the queue's
    // distinct selectors (a skip scan of the index runs_queued_selector, one probe per selector),
    // those some asking agent satisfies, then the oldest runs of each — one table, in id order, so
    // the scan stops at the limit whatever plan is chosen (the experiment check is a per-row
    // subquery, not a join that would need a sort of the whole queue) —, so an agent with a narrow
    // selector does not read a long queue of runs it cannot take. The runs are then locked by id:
    // `COALESCE(r.state, '')` keeps the partial indexes out of that step (with a queue the
    // statistics think empty, PostgreSQL chose to walk one of them whole instead of looking the ids
    // up). Kept runs are looked for only when an asking agent keeps an experiment at all (a
    // one-time filter).
    // A queued run not picked in an earlier round ($6) whose window ($4) is open long enough.
    static const char kQueuedRunFilter[] =
        "r.state = 'queued' AND NOT r.id = ANY($6::bigint[]) AND (r.schedule_id IS NULL OR "
        "COALESCE(($4::jsonb ->> r.schedule_id::text)::bigint, -1) >= r.expected_s)";
    w.conn().prepare("tunectl_claim_candidates", std::string(R"SQL(
WITH RECURSIVE f AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS f(agent_id, free)),
sels AS (
  (SELECT r.selector FROM runs r WHERE r.state = 'queued' ORDER BY r.selector LIMIT 1)
  UNION ALL
  SELECT (SELECT r.selector FROM runs r WHERE r.state = 'queued' AND r.selector > s.selector
          ORDER BY r.selector LIMIT 1)
  FROM sels s WHERE s.selector IS NOT NULL),
wanted AS MATERIALIZED (
  SELECT s.selector FROM sels s WHERE s.selector IS NOT NULL
  AND EXISTS (SELECT 1 FROM jsonb_array_elements($3::jsonb) l WHERE s.selector <@ l)),
free_runs AS MATERIALIZED (
  SELECT x.id, NULL::bigint AS pinned FROM wanted w, LATERAL (
    SELECT r.id FROM runs r WHERE r.selector = w.selector AND )SQL") +
                                                     kQueuedRunFilter + R"SQL(
    AND (r.experiment_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM experiments e JOIN agents p ON p.id = e.agent_id
      WHERE e.id = r.experiment_id AND p.connected AND p.unhealthy = ''))
    ORDER BY r.id LIMIT 2 * $5 + 64) x
  ORDER BY x.id LIMIT 2 * $5 + 64),
kept AS MATERIALIZED (
  SELECT r.id, p.id AS pinned, row_number() OVER (PARTITION BY p.id ORDER BY r.id) AS rn
  FROM agents p JOIN experiments e ON e.agent_id = p.id JOIN runs r ON r.experiment_id = e.id
  WHERE EXISTS (SELECT 1 FROM experiments e0 WHERE e0.agent_id = ANY($1::bigint[]))
  AND p.id = ANY($1::bigint[]) AND p.connected AND p.unhealthy = ''
  AND EXISTS (SELECT 1 FROM jsonb_array_elements($3::jsonb) l WHERE r.selector <@ l) AND )SQL" +
                                                     kQueuedRunFilter + R"SQL(),
c AS MATERIALIZED (
  SELECT id, pinned FROM free_runs
  UNION ALL
  SELECT k.id, k.pinned FROM kept k JOIN f ON f.agent_id = k.pinned WHERE k.rn <= f.free)
SELECT r.id AS id, r.selector::text AS selector, COALESCE(r.experiment_id, 0) AS experiment_id,
  COALESCE(r.schedule_id, 0) AS schedule_id,
  COALESCE((SELECT c.pinned FROM c WHERE c.id = r.id LIMIT 1), 0) AS pinned
FROM runs r WHERE r.id = ANY(ARRAY(SELECT id FROM c)) AND COALESCE(r.state, '') = 'queued'
ORDER BY r.id LIMIT $5 FOR UPDATE OF r SKIP LOCKED)SQL");
    // Rounds: the candidates are the oldest runs any free agent could take, as many as the free
    // slots (and a margin); when those fit only some of the agents (the oldest runs all want one
    // pool), the next round asks again for the agents still free alone, so a run only they can take
    // (a pinned experiment, a narrow selector) is not starved behind a long queue for the others.
    // The claim's steps all have an index to go by; a plan built on statistics from when `runs`
    // was nearly empty (a new database, or one analysed between bursts) seq-scanned the whole
    // table to lock the few ids found (5 ms at 3,000 runs, and growing with them). For the rest of
    // this transaction only.
    w.exec("SET LOCAL enable_seqscan = off");
    std::vector<ClaimPick> picks;
    std::vector<int64_t> seen;             // every candidate of an earlier round, picked or not
    std::map<int64_t, int64_t> exp_agent;  // experiment -> agent, from earlier rounds' picks
    std::vector<ClaimSlot> remaining = slots;
    for (int round = 0; round < 4 && !remaining.empty(); ++round) {
      std::set<LabelMap> sets;
      std::vector<int64_t> free_ids, free_counts;
      int free_now = 0;
      for (const auto& sl : remaining) {
        sets.insert(sl.labels);
        free_ids.push_back(sl.agent_id);
        free_counts.push_back(sl.free);
        free_now += sl.free;
      }
      json labels = json::array();
      for (const auto& l : sets) labels.push_back(l);
      // Spare candidates for picks PlanClaims turns down; few for a small claim, whose locks on
      // runs it does not take would hold them back from claims running beside it.
      const int limit = free_now + std::min(16, 2 + 2 * free_now);
      std::vector<ClaimCandidate> candidates;
      std::map<int64_t, int64_t> schedule_of;
      for (const auto& r :
           w.exec_prepared("tunectl_claim_candidates", PgArray(free_ids), PgArray(free_counts),
                           labels.dump(), open_windows, limit, PgArray(seen))) {
        ClaimCandidate c;
        c.run_id = r["id"].as<int64_t>();
        c.selector = JsonToMap(r["selector"].as<std::string>());
        c.experiment_id = r["experiment_id"].as<int64_t>();
        c.schedule_id = r["schedule_id"].as<int64_t>();
        c.pinned_agent = r["pinned"].as<int64_t>();
        if (c.pinned_agent == 0 && exp_agent.count(c.experiment_id))
          c.pinned_agent = exp_agent[c.experiment_id];
        schedule_of[c.run_id] = c.schedule_id;
        seen.push_back(c.run_id);
        candidates.push_back(std::move(c));
      }
      // Fewer than asked for: no older run was cut off, the next round would find nothing new.
      const bool all_seen = static_cast<int>(candidates.size()) < limit;
      const std::vector<ClaimPick> round_picks = PlanClaims(remaining, candidates, caps);
      std::map<int64_t, int64_t> picked_exp;
      for (const auto& c : candidates) picked_exp[c.run_id] = c.experiment_id;
      for (const auto& p : round_picks) {
        picks.push_back(p);
        if (picked_exp[p.run_id] != 0) exp_agent.emplace(picked_exp[p.run_id], p.agent_id);
        if (int64_t sc = schedule_of[p.run_id]; sc != 0 && caps.count(sc))
          caps[sc].agents.insert(p.agent_id);
        for (auto& sl : remaining)
          if (sl.agent_id == p.agent_id) --sl.free;
      }
      remaining.erase(std::remove_if(remaining.begin(), remaining.end(),
                                     [](const ClaimSlot& sl) { return sl.free <= 0; }),
                      remaining.end());
      if (all_seen) break;
    }
    if (picks.empty()) return out;
    std::vector<int64_t> runs, owners;
    std::vector<std::string> sessions;
    for (const auto& p : picks) {
      runs.push_back(p.run_id);
      owners.push_back(p.agent_id);
      sessions.push_back(by_id[p.agent_id]->session);
    }
    // One statement claims every pick, each only while its agent is still held by the session
    // that asked, and audits it. The picks are found by primary key: `COALESCE` keeps the
    // partial index runs_queued out (with statistics from an empty queue the planner hashed the
    // whole queue through it to update a run or two).
    w.conn().prepare(
        "tunectl_claim",
        "WITH p AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS p(run_id, "
        "agent_id, session)), u AS (UPDATE runs SET state = 'assigned', agent_id = p.agent_id, "
        "assigned_at = tunectl_now(), reason = '' FROM p, agents a WHERE runs.id = p.run_id AND "
        "COALESCE(runs.state, '') = 'queued' AND a.id = p.agent_id AND (p.session = '' OR "
        "(a.connected AND a.session = p.session)) RETURNING runs.id, runs.attempt, runs.agent_id, "
        "runs.launch, runs.workload_id, runs.experiment_id, runs.arm), au AS (INSERT INTO "
        "audit_events(actor, kind, entity, entity_id, detail) SELECT 'server', 'run.assigned', "
        "'run', u.id, jsonb_build_object('agent_id', u.agent_id, 'attempt', u.attempt) FROM u) "
        "SELECT u.id AS id, u.attempt AS attempt, u.agent_id AS agent_id, u.launch::text AS "
        "launch, u.experiment_id AS experiment_id, COALESCE(u.arm, '') AS arm, wl.name AS "
        "workload FROM u JOIN workloads wl ON wl.id = u.workload_id ORDER BY u.id");
    std::map<int64_t, int64_t> first_agent;  // experiment -> the agent of its first claimed run
    for (const auto& row :
         w.exec_prepared("tunectl_claim", PgArray(runs), PgArray(owners), PgArray(sessions))) {
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
      p.profile = rec->profile;
      p.resources = rec->resources;
      p.arm = row["arm"].as<std::string>();
      const int64_t agent = row["agent_id"].as<int64_t>();
      if (!row["experiment_id"].is_null()) {
        p.experiment_id = row["experiment_id"].as<int64_t>();
        first_agent.emplace(p.experiment_id, agent);
      }
      out[agent].push_back(std::move(p));
      --free_of[agent];
    }
    // Keep an experiment's control and variant runs on one agent where possible (same node,
    // same noise); another agent takes over only while this one is disconnected. Best effort:
    // an experiment locked by a cancel or a decision is skipped, never waited for (lock order).
    if (!first_agent.empty()) {
      std::vector<int64_t> exps, exp_agents;
      for (const auto& [e, a] : first_agent) {
        exps.push_back(e);
        exp_agents.push_back(a);
      }
      w.exec_params0(
          "UPDATE experiments SET agent_id = x.agent_id FROM (SELECT e.id, s.agent_id FROM "
          "experiments e JOIN unnest($1::bigint[], $2::bigint[]) AS s(experiment_id, agent_id) ON "
          "s.experiment_id = e.id WHERE e.agent_id IS NULL OR (e.agent_id <> s.agent_id AND NOT "
          "EXISTS (SELECT 1 FROM agents a WHERE a.id = e.agent_id AND a.connected AND a.unhealthy "
          "= '')) FOR UPDATE OF e SKIP LOCKED) x WHERE experiments.id = x.id",
          PgArray(exps), PgArray(exp_agents));
    }
    return out;
  });
  if (plans.ok() && free_after) *free_after = std::move(free_of);
  return plans;
}

Result<std::vector<LaunchPlan>> Store::ClaimRuns(int64_t agent_id, const LabelMap& labels,
                                                 int slots, const std::string& open_windows) {
  auto plans = ClaimRunsFor({{agent_id, "", labels, slots}}, open_windows);
  if (!plans.ok()) return plans.status();
  return std::move((*plans)[agent_id]);
}

Result<int> Store::ReleaseClaims(int64_t agent_id, const std::vector<RunRef>& runs) {
  if (runs.empty()) return 0;
  std::vector<int64_t> ids, attempts;
  for (const auto& r : runs) {
    ids.push_back(r.run_id);
    attempts.push_back(r.attempt);
  }
  return InTx<int>(pool_, clock_, [&](pqxx::work& w) -> Result<int> {
    auto r = w.exec_params(
        "UPDATE runs SET state = 'queued', agent_id = NULL, assigned_at = NULL, reason = '' "
        "FROM unnest($1::bigint[], $2::bigint[]) AS x(id, attempt) WHERE runs.id = x.id AND "
        "runs.attempt = x.attempt AND runs.agent_id = $3 AND runs.state = 'assigned' RETURNING "
        "runs.id, runs.attempt",
        PgArray(ids), PgArray(attempts), agent_id);
    for (const auto& row : r)
      Audit(w, "server", "run.released", "run", row[0].as<int64_t>(),
            {{"agent_id", agent_id},
             {"attempt", row[1].as<int>()},
             {"why", "the agent's stream ended before the run reached it"}});
    return static_cast<int>(r.size());
  });
}

Status Store::MarkRunStarted(int64_t run_id, int attempt, int64_t agent_id,
                             const RunStartInfo& info) {
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    auto r = w.exec_params(
        "UPDATE runs SET state = 'running', started_at = tunectl_now(), node = $4, slot = $5, "
        "external_id = CASE WHEN $6 = '' THEN external_id ELSE $6 END, placement = $7, "
        "pending_reason = '' WHERE id = $1 AND attempt = $2 AND agent_id = $3 AND state = "
        "'assigned' RETURNING id",
        run_id, attempt, agent_id, info.node, info.slot, info.external_id, info.placement);
    if (!r.empty()) {
      json detail = {{"attempt", attempt}};
      if (!info.node.empty()) detail["node"] = info.node;
      if (info.slot >= 0) detail["slot"] = info.slot;
      if (!info.external_id.empty()) detail["external_id"] = info.external_id;
      if (!info.placement.empty()) detail["placement"] = info.placement;
      Audit(w, "server", "run.started", "run", run_id, detail);
    }
    return true;
  }));
}

Status Store::MarkRunPending(int64_t run_id, int attempt, int64_t agent_id,
                             const std::string& external_id, const std::string& reason) {
  return ToStatus(InTx<bool>(pool_, clock_, [&](pqxx::work& w) -> Result<bool> {
    w.exec_params0(
        "UPDATE runs SET external_id = $4, pending_reason = $5 WHERE id = $1 AND attempt = $2 AND "
        "agent_id = $3 AND state = 'assigned'",
        run_id, attempt, agent_id, external_id, reason);
    return true;
  }));
}

Result<std::map<int64_t, PendingCancelList>> Store::PendingCancelsFor(
    const std::vector<int64_t>& agent_ids) {
  using Out = std::map<int64_t, PendingCancelList>;
  return InTx<Out>(pool_, clock_, [&](pqxx::work& w) -> Result<Out> {
    Out out;
    if (agent_ids.empty()) return out;
    // All pending cancels (a few, from runs_cancel_pending), kept for the agents asked about:
    // `agent_id = ANY(every connected agent)` would probe the index once per agent, every pass.
    const std::set<int64_t> wanted(agent_ids.begin(), agent_ids.end());
    for (const auto& r : w.exec(Sql("SELECT agent_id, id, attempt FROM runs WHERE "
                                    "cancel_requested AND state IN {held} ORDER BY id")))
      if (wanted.count(r[0].as<int64_t>()))
        out[r[0].as<int64_t>()].push_back({r[1].as<int64_t>(), r[2].as<int>()});
    return out;
  });
}

Result<PendingCancelList> Store::PendingCancels(int64_t agent_id) {
  auto all = PendingCancelsFor({agent_id});
  if (!all.ok()) return all.status();
  return std::move((*all)[agent_id]);
}

}  // namespace tunectl

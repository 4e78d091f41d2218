// Store: off-peak schedules and batches of experiments.
#include <set>

#include "core/decisions.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

namespace {

const char* const kScheduleSelect =
    "SELECT id AS id, name AS name, COALESCE(window_spec, '') AS window, COALESCE(cron, '') "
    "AS cron, duration_s AS duration_s, tz AS tz, max_agents AS max_agents, actor AS actor, "
    "tunectl_ts(created_at) AS created_at, on_window_end AS on_window_end FROM schedules ";

ScheduleRow ScheduleFromRow(const pqxx::row& r) {
  ScheduleRow s;
  s.id = r["id"].as<int64_t>();
  s.name = r["name"].as<std::string>();
  s.window = r["window"].as<std::string>();
  s.cron = r["cron"].as<std::string>();
  s.duration_s = r["duration_s"].as<int64_t>();
  s.tz = r["tz"].as<std::string>();
  s.max_agents = r["max_agents"].as<int>();
  s.actor = r["actor"].as<std::string>();
  s.created_at = r["created_at"].as<std::string>();
  s.on_window_end = r["on_window_end"].as<std::string>();
  return s;
}

const char* const kBatchColumns =
    "SELECT b.id AS id, wl.name AS workload, COALESCE(s.name, '') AS schedule, b.state AS state, "
    "b.correction AS correction, b.actor AS actor, tunectl_ts(b.created_at) AS created_at, "
    "b.baseline_id AS baseline_id, COALESCE(b.schedule_id, 0) AS schedule_id";
const char* const kBatchFrom =
    " FROM batches b JOIN workloads wl ON wl.id = b.workload_id LEFT JOIN schedules s ON s.id = "
    "b.schedule_id ";

BatchRow BatchFromRow(const pqxx::row& r) {
  BatchRow b;
  b.id = r["id"].as<int64_t>();
  b.workload = r["workload"].as<std::string>();
  b.schedule = r["schedule"].as<std::string>();
  b.state = r["state"].as<std::string>();
  b.correction = r["correction"].as<std::string>();
  b.actor = r["actor"].as<std::string>();
  b.created_at = r["created_at"].as<std::string>();
  b.baseline_id = r["baseline_id"].as<int64_t>();
  b.schedule_id = r["schedule_id"].as<int64_t>();
  return b;
}

// A running batch none of whose members runs any more is shown as done (it is marked done when
// its last member's decision is recorded).
std::string ShownBatchState(const std::string& state, bool member_running) {
  return state == "running" && !member_running ? "done" : state;
}

Result<BatchRow> LoadBatch(pqxx::work& w, int64_t id) {
  auto r = w.exec(std::string(kBatchColumns) + kBatchFrom + "WHERE b.id = " + std::to_string(id));
  if (r.empty()) return Status::NotFound("batch " + std::to_string(id) + " not found");
  BatchRow b = BatchFromRow(r[0]);
  bool running = false;
  for (const auto& e :
       w.exec_params("SELECT id FROM experiments WHERE batch_id = $1 ORDER BY id", id)) {
    auto x = LoadExperimentById(w, e[0].as<int64_t>());
    if (!x.ok()) return x.status();
    running |= x->state == "running";
    b.members_by_state[x->state]++;
    if (!x->decision.empty()) b.members_by_decision[x->decision]++;
    b.experiments.push_back(*x);
  }
  b.members = static_cast<int>(b.experiments.size());
  b.state = ShownBatchState(b.state, running);
  return b;
}

}  // namespace

Result<int64_t> Store::CreateSchedule(const ScheduleRow& s, const std::string& actor) {
  return InTx<int64_t>(pool_, clock_, [&](pqxx::work& w) -> Result<int64_t> {
    if (!w.exec_params("SELECT 1 FROM schedules WHERE name = $1", s.name).empty())
      return Status::AlreadyExists("schedule \"" + s.name + "\" exists already; pick another name");
    const int64_t id =
        w.exec_params1(
             "INSERT INTO schedules(name, window_spec, cron, duration_s, tz, max_agents, actor, "
             "on_window_end) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
             s.name, s.window.empty() ? std::nullopt : std::optional<std::string>(s.window),
             s.cron.empty() ? std::nullopt : std::optional<std::string>(s.cron), s.duration_s, s.tz,
             s.max_agents, actor, s.on_window_end)[0]
            .as<int64_t>();
    Audit(w, actor, "schedule.created", "schedule", id,
          {{"name", s.name},
           {"window", s.window},
           {"cron", s.cron},
           {"tz", s.tz},
           {"max_agents", s.max_agents},
           {"on_window_end", s.on_window_end}});
    return id;
  });
}

Result<std::vector<ScheduleRow>> Store::ListSchedules() {
  return InTx<std::vector<ScheduleRow>>(
      pool_, clock_, [&](pqxx::work& w) -> Result<std::vector<ScheduleRow>> {
        std::vector<ScheduleRow> out;
        for (const auto& r : w.exec(std::string(kScheduleSelect) + "ORDER BY name"))
          out.push_back(ScheduleFromRow(r));
        return out;
      });
}

Result<int64_t> Store::CreateBatch(const BatchIn& in, const std::string& actor) {
  return InTxOnce(pool_, clock_, in.request_id, "batch", [&](pqxx::work& w) -> Result<int64_t> {
    if (in.correction != "holm" && in.correction != "bh")
      return Status::InvalidArgument("--correction: \"" + in.correction +
                                     "\" is not allowed; allowed: holm, bh");
    int64_t schedule_id = 0;
    if (!in.schedule.empty()) {
      auto sid = ScheduleId(w, in.schedule);
      if (!sid.ok()) return sid.status();
      schedule_id = *sid;
    }
    auto singles = ExpandBatchVary(in.vary);
    if (!singles.ok()) return singles.status();
    // The first experiment resolves the baseline (its rules: --baseline, else the latest
    // completed one of the current config); the others use the same one.
    ExperimentIn e;
    e.workload = in.workload;
    e.baseline_id = in.baseline_id;
    e.repeats = in.repeats;
    e.schedule_id = schedule_id;
    e.again = in.again;
    e.again_reason = in.again_reason;
    std::vector<int64_t> ids;
    for (const auto& one : *singles) {
      e.vary = {one};
      auto id = CreateExperimentTx(w, e, actor);
      if (!id.ok()) {
        const auto code = id.status().code();
        if (code == Status::Code::kInvalidArgument)
          return Status::InvalidArgument("batch: " + one + ": " + id.status().message());
        if (code == Status::Code::kFailedPrecondition)  // e.g. a change decided before
          return Status::FailedPrecondition("batch: " + one + ": " + id.status().message());
        return id.status();
      }
      ids.push_back(*id);
      if (e.baseline_id == 0)
        e.baseline_id = w.exec_params1("SELECT baseline_id FROM experiments WHERE id = $1", *id)[0]
                            .as<int64_t>();
    }
    const int64_t batch =
        w.exec_params1(
             "INSERT INTO batches(workload_id, baseline_id, schedule_id, correction, actor) "
             "SELECT workload_id, id, $2, $3, $4 FROM baselines WHERE id = $1 RETURNING id",
             e.baseline_id, schedule_id ? std::optional<int64_t>(schedule_id) : std::nullopt,
             in.correction, actor)[0]
            .as<int64_t>();
    for (int64_t id : ids)
      w.exec_params0("UPDATE experiments SET batch_id = $1 WHERE id = $2", batch, id);
    Audit(w, actor, "batch.created", "batch", batch,
          {{"experiments", ids}, {"schedule", in.schedule}, {"correction", in.correction}});
    return batch;
  });
}

Result<BatchRow> Store::GetBatch(int64_t id) {
  return InTx<BatchRow>(pool_, clock_, [&](pqxx::work& w) { return LoadBatch(w, id); });
}

Result<Paged<BatchRow>> Store::ListBatches(const Page& page) {
  return InTx<Paged<BatchRow>>(pool_, clock_, [&](pqxx::work& w) -> Result<Paged<BatchRow>> {
    // One query: each batch with its members counted by state and by decision (an index scan of
    // experiments_batch per batch), never the members' verdicts.
    std::vector<BatchRow> rows;
    for (const auto& r :
         w.exec(std::string(kBatchColumns) +
                ", COALESCE((SELECT json_object_agg(x.state, x.n)::text FROM (SELECT e.state, "
                "count(*) AS n FROM experiments e WHERE e.batch_id = b.id GROUP BY e.state) x), "
                "'{}') AS by_state, COALESCE((SELECT json_object_agg(x.decision, x.n)::text FROM "
                "(SELECT e.decision, count(*) AS n FROM experiments e WHERE e.batch_id = b.id AND "
                "e.decision IS NOT NULL GROUP BY e.decision) x), '{}') AS by_decision" +
                kBatchFrom + "WHERE true" + PageWhere(page, "b.id", "b.created_at") +
                PageOrder(page, "b.id"))) {
      BatchRow b = BatchFromRow(r);
      for (const auto& [key, n] : JsonToMap(r["by_state"].as<std::string>())) {
        b.members_by_state[key] = std::stoi(n);
        b.members += std::stoi(n);
      }
      for (const auto& [key, n] : JsonToMap(r["by_decision"].as<std::string>()))
        b.members_by_decision[key] = std::stoi(n);
      b.state = ShownBatchState(b.state, b.members_by_state.count("running") > 0);
      rows.push_back(std::move(b));
    }
    return MakePage(std::move(rows), page, [](const BatchRow& b) { return b.id; });
  });
}

Result<BatchRow> Store::CancelBatch(int64_t id, const std::string& actor) {
  return InTx<BatchRow>(pool_, clock_, [&](pqxx::work& w) -> Result<BatchRow> {
    // Lock order: the batch, then its experiments, then their runs.
    if (w.exec_params("SELECT 1 FROM batches WHERE id = $1 FOR UPDATE", id).empty())
      return Status::NotFound("batch " + std::to_string(id) + " not found");
    auto b = LoadBatch(w, id);
    if (!b.ok()) return b.status();
    if (b->state != "running")
      return Status::FailedPrecondition("batch " + std::to_string(id) + " is " + b->state +
                                        "; only a running one can be cancelled");
    w.exec_params("SELECT 1 FROM experiments WHERE batch_id = $1 ORDER BY id FOR UPDATE", id);
    w.exec_params0(
        "UPDATE batches SET state = 'cancelled', finished_at = tunectl_now() WHERE id = $1", id);
    w.exec_params0(
        "UPDATE runs SET state = 'cancelled', finished_at = tunectl_now(), reason = 'batch "
        "cancelled' WHERE state = 'queued' AND experiment_id IN (SELECT id FROM experiments WHERE "
        "batch_id = $1 AND state = 'running')",
        id);
    w.exec_params0(
        "UPDATE runs SET cancel_requested = true, cancel_reason = '' WHERE state IN " +
            HeldStatesSql() +
            " AND experiment_id IN (SELECT id FROM experiments WHERE batch_id = $1 AND state = "
            "'running')",
        id);
    w.exec_params0(
        "UPDATE experiments SET state = 'cancelled' WHERE batch_id = $1 AND state = 'running'", id);
    Audit(w, actor, "batch.cancelled", "batch", id, json::object());
    // Members already measured are decided now, corrected across the whole batch.
    MaybeFinishBatch(w, id, actor);
    return LoadBatch(w, id);
  });
}

namespace internal {

Result<int64_t> ScheduleId(pqxx::work& w, const std::string& name) {
  auto r = w.exec_params("SELECT id FROM schedules WHERE name = $1", name);
  if (!r.empty()) return r[0]["id"].as<int64_t>();
  std::string known;
  for (const auto& row : w.exec("SELECT name FROM schedules ORDER BY name"))
    known += (known.empty() ? "" : ", ") + row["name"].as<std::string>();
  return Status::NotFound(
      "--schedule: no schedule named \"" + name + "\"; " +
      (known.empty() ? "there are none yet (tunectl schedule create …)" : "schedules: " + known));
}

void MaybeFinishBatch(pqxx::work& w, int64_t batch_id, const std::string& actor) {
  auto b =
      w.exec_params("SELECT state, correction FROM batches WHERE id = $1 FOR UPDATE", batch_id);
  if (b.empty()) return;
  const std::string method = b[0]["correction"].as<std::string>();
  std::vector<int64_t> ids;
  std::vector<BatchMember> members;
  std::vector<std::optional<Verdict>> verdicts;
  for (const auto& r : w.exec_params(
           "SELECT id, state, COALESCE(verdict::text, '') AS verdict FROM experiments WHERE "
           "batch_id = $1 ORDER BY id",
           batch_id)) {
    BatchMember m;
    m.state = ParseExperimentState(r["state"].as<std::string>()).value_or(ExperimentState::kClosed);
    std::optional<Verdict> v;
    if (const std::string t = r["verdict"].as<std::string>(); !t.empty()) {
      if (auto parsed = VerdictFromJson(t); parsed.ok()) v = *parsed;
    }
    if (v) {
      m.decision = v->correction.empty() ? v->decision : v->unadjusted_decision;
      m.p_value = v->PrimaryP();
    }
    ids.push_back(r["id"].as<int64_t>());
    members.push_back(m);
    verdicts.push_back(v);
  }
  const auto decided = DecideBatch(members, method);
  if (!decided) return;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (members[i].state != ExperimentState::kMeasured || !verdicts[i]) continue;
    RecordDecision(w, ids[i], ApplyBatchDecision(*verdicts[i], (*decided)[i], method), actor);
  }
  if (b[0]["state"].as<std::string>() == "running") {
    w.exec_params0("UPDATE batches SET state = 'done', finished_at = tunectl_now() WHERE id = $1",
                   batch_id);
    Audit(w, actor, "batch.done", "batch", batch_id, {{"correction", method}});
  }
}

}  // namespace internal

}  // namespace tunectl

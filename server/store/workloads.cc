// Store: workloads, their spec revisions and config versions.
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {
namespace internal {

#define TUNECTL_WORKLOAD_COLUMNS                                                            \
  "w.id AS id, w.name AS name, w.description AS description, w.spec::text AS spec_json, "   \
  "w.spec_revision AS spec_revision, c.id AS config_id, c.version AS config_version, "      \
  "c.params::text AS config_params, tunectl_ts(w.created_at) AS created_at, "               \
  "COALESCE(tunectl_ts(w.archived_at), '') AS archived_at, COALESCE(w.archived_by, '') AS " \
  "archived_by "
#define TUNECTL_WORKLOAD_FROM \
  "workloads w JOIN config_versions c ON c.workload_id = w.id AND c.is_current "
const char* const kWorkloadSelect =
    "SELECT " TUNECTL_WORKLOAD_COLUMNS "FROM " TUNECTL_WORKLOAD_FROM;

Result<WorkloadRow> WorkloadFromRow(const pqxx::row& r) {
  WorkloadRow w;
  w.id = r["id"].as<int64_t>();
  w.name = r["name"].as<std::string>();
  w.description = r["description"].as<std::string>();
  w.spec_json = r["spec_json"].as<std::string>();
  auto spec = ParseWorkloadSpec(w.spec_json, "stored spec of " + w.name);
  if (!spec.ok()) return Status::Internal(spec.status().message());
  w.spec = *spec;
  w.spec_revision = r["spec_revision"].as<int>();
  w.config_id = r["config_id"].as<int64_t>();
  w.config_version = r["config_version"].as<int>();
  w.config_params = JsonToMap(r["config_params"].as<std::string>());
  w.created_at = r["created_at"].as<std::string>();
  w.archived_at = r["archived_at"].as<std::string>();
  w.archived_by = r["archived_by"].as<std::string>();
  return w;
}

// What a workload has recorded (a delete would lose it). Runs are counted by config version, down
// the index the regression series walks.
WorkloadHistory LoadHistory(pqxx::work& w, int64_t workload_id) {
  auto r = w.exec_params1(
      "SELECT (SELECT count(*) FROM baselines WHERE workload_id = $1), (SELECT count(*) FROM "
      "experiments WHERE workload_id = $1), (SELECT count(*) FROM runs WHERE config_id IN (SELECT "
      "id FROM config_versions WHERE workload_id = $1)), (SELECT count(*) FROM tuning_log WHERE "
      "workload_id = $1)",
      workload_id);
  WorkloadHistory h;
  h.baselines = r[0].as<int64_t>();
  h.experiments = r[1].as<int64_t>();
  h.runs = r[2].as<int64_t>();
  h.log_entries = r[3].as<int64_t>();
  return h;
}

Result<WorkloadRow> LoadWorkload(pqxx::work& w, const std::string& name) {
  auto r = w.exec_params(std::string(kWorkloadSelect) + "WHERE w.name = $1", name);
  if (r.empty()) {
    auto all = w.exec("SELECT name FROM workloads ORDER BY name");
    std::string known;
    for (const auto& row : all) known += (known.empty() ? "" : ", ") + row[0].as<std::string>();
    return Status::NotFound(
        "workload \"" + name + "\" not found; known workloads: " +
        (known.empty() ? "none (apply one with tunectl workload apply -f FILE)" : known));
  }
  return WorkloadFromRow(r[0]);
}

Result<std::pair<WorkloadRow, pqxx::row>> LoadWorkloadOfRun(pqxx::work& w, int64_t run_id,
                                                            const std::string& extra) {
  auto r = w.exec_params("SELECT " TUNECTL_WORKLOAD_COLUMNS ", " + extra +
                             " FROM " TUNECTL_WORKLOAD_FROM
                             "JOIN runs r ON r.workload_id = w.id LEFT JOIN baselines b ON b.id = "
                             "r.baseline_id WHERE r.id = $1",
                         run_id);
  if (r.empty()) return Status::NotFound("run " + std::to_string(run_id) + " not found");
  auto wl = WorkloadFromRow(r[0]);
  if (!wl.ok()) return wl.status();
  return std::make_pair(std::move(*wl), r[0]);
}

Result<WorkloadRow> ResolveWorkload(pqxx::work& w, const std::string& workload) {
  std::string name = workload;
  if (name.empty()) {
    auto all = w.exec("SELECT name FROM workloads WHERE archived_at IS NULL ORDER BY name");
    if (all.empty())
      return Status::FailedPrecondition(
          "no workloads yet; apply one first: tunectl workload apply -f FILE");
    if (all.size() > 1) {
      std::string names;
      for (const auto& r : all) names += (names.empty() ? "" : ", ") + r[0].as<std::string>();
      return Status::InvalidArgument("--workload: several workloads exist (" + names +
                                     "); name one with --workload NAME");
    }
    name = all[0][0].as<std::string>();
  }
  return LoadWorkload(w, name);
}

Result<WorkloadSpec> LoadSpecRevision(pqxx::work& w, int64_t workload_id, int revision) {
  auto r = w.exec_params(
      "SELECT spec::text AS spec FROM workload_revisions WHERE workload_id = $1 AND revision = $2",
      workload_id, revision);
  if (r.empty())
    return Status::Internal("workload " + std::to_string(workload_id) + " has no spec revision " +
                            std::to_string(revision));
  auto spec = ParseWorkloadSpec(r[0]["spec"].as<std::string>(),
                                "stored spec revision " + std::to_string(revision));
  if (!spec.ok()) return Status::Internal(spec.status().message());
  return spec;
}

// Values of the current config carried over to a changed spec: kept where still valid,
// otherwise the new default.
ParamValues CarryOver(const WorkloadSpec& spec, const ParamValues& old) {
  ParamValues out;
  for (const auto& p : spec.params) {
    auto it = old.find(p.name);
    if (it != old.end()) {
      auto c = CanonicalParamValue(p, it->second);
      if (c.ok()) {
        out[p.name] = *c;
        continue;
      }
    }
    out[p.name] = p.default_value;
  }
  return out;
}

}  // namespace internal

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

Result<ApplyResult> Store::ApplyWorkload(const WorkloadSpec& spec, const std::string& text,
                                         const std::string& actor) {
  return InTx<ApplyResult>(pool_, clock_, [&](pqxx::work& w) -> Result<ApplyResult> {
    const std::string spec_json = WorkloadSpecToJson(spec);
    auto cur = w.exec_params(
        "SELECT id AS id, spec::text AS spec FROM workloads WHERE name = $1 FOR "
        "UPDATE",
        spec.name);
    std::string action;
    if (cur.empty()) {
      int64_t id = w.exec_params1(
                        "INSERT INTO workloads(name, description, spec, spec_text) VALUES "
                        "($1,$2,$3::json,$4) "
                        "RETURNING id",
                        spec.name, spec.description, spec_json, text)[0]
                       .as<int64_t>();
      int64_t cfg = w.exec_params1(
                         "INSERT INTO config_versions(workload_id, version, params) VALUES ($1, 1, "
                         "$2::jsonb) "
                         "RETURNING id",
                         id, MapToJson(DefaultParamValues(spec)))[0]
                        .as<int64_t>();
      w.exec_params0(
          "INSERT INTO workload_revisions(workload_id, revision, spec) VALUES ($1, 1, $2::json)",
          id, spec_json);
      Audit(w, actor, "workload.created", "workload", id,
            {{"name", spec.name}, {"config_id", cfg}});
      action = "created";
    } else {
      const int64_t id = cur[0]["id"].as<int64_t>();
      if (json::parse(cur[0]["spec"].as<std::string>()) == json::parse(spec_json)) {
        action = "unchanged";
      } else {
        w.exec_params0(
            "UPDATE workloads SET description = $2, spec = $3::json, spec_text = $4, "
            "spec_revision = spec_revision + 1, updated_at = tunectl_now() WHERE id = $1",
            id, spec.description, spec_json, text);
        // Running baselines and experiments keep the revision they started under.
        w.exec_params0(
            "INSERT INTO workload_revisions(workload_id, revision, spec) SELECT id, "
            "spec_revision, spec FROM workloads WHERE id = $1",
            id);
        auto c = w.exec_params1(
            "SELECT id, version, params::text FROM config_versions WHERE workload_id = $1 AND "
            "is_current",
            id);
        ParamValues old = JsonToMap(c[2].as<std::string>());
        ParamValues now = CarryOver(spec, old);
        json detail = {{"name", spec.name}};
        if (now != old) {
          w.exec_params0("UPDATE config_versions SET is_current = false WHERE id = $1",
                         c[0].as<int64_t>());
          int64_t cfg =
              w.exec_params1(
                   "INSERT INTO config_versions(workload_id, version, params, parent_id, change) "
                   "VALUES ($1, $2, $3::jsonb, $4, $5::jsonb) RETURNING id",
                   id, c[1].as<int>() + 1, MapToJson(now), c[0].as<int64_t>(),
                   json({{"reason", "workload spec changed its parameters"}}).dump())[0]
                  .as<int64_t>();
          detail["config_id"] = cfg;
        }
        Audit(w, actor, "workload.updated", "workload", id, detail);
        action = "updated";
      }
    }
    auto row = LoadWorkload(w, spec.name);
    if (!row.ok()) return row.status();
    return ApplyResult{*row, action};
  });
}

Result<Paged<WorkloadRow>> Store::ListWorkloads(const Page& page, bool include_archived) {
  return InTx<Paged<WorkloadRow>>(pool_, clock_, [&](pqxx::work& w) -> Result<Paged<WorkloadRow>> {
    Paged<WorkloadRow> out;
    std::string where = include_archived ? "WHERE true" : "WHERE w.archived_at IS NULL";
    if (!page.after_key.empty()) where += " AND w.name > " + w.quote(page.after_key);
    for (const auto& r : w.exec(std::string(kWorkloadSelect) + where + " ORDER BY w.name LIMIT " +
                                std::to_string(page.limit + 1))) {
      if (out.rows.size() == static_cast<size_t>(page.limit)) {
        out.more = true;
        out.next_after = out.rows.back().name;
        break;
      }
      auto row = WorkloadFromRow(r);
      if (!row.ok()) return row.status();
      out.rows.push_back(*row);
    }
    return out;
  });
}

Result<WorkloadRow> Store::GetWorkload(const std::string& name) {
  return InTx<WorkloadRow>(pool_, clock_, [&](pqxx::work& w) { return LoadWorkload(w, name); });
}

Result<WorkloadDetailRow> Store::DescribeWorkload(const std::string& name) {
  return InTx<WorkloadDetailRow>(pool_, clock_, [&](pqxx::work& w) -> Result<WorkloadDetailRow> {
    auto wl = LoadWorkload(w, name);
    if (!wl.ok()) return wl.status();
    return WorkloadDetailRow{*wl, LoadHistory(w, wl->id)};
  });
}

Result<WorkloadRow> Store::DeleteWorkload(const std::string& name, const std::string& actor) {
  return InTx<WorkloadRow>(pool_, clock_, [&](pqxx::work& w) -> Result<WorkloadRow> {
    auto wl = LoadWorkload(w, name);
    if (!wl.ok()) return wl.status();
    // A baseline or experiment being created now waits for this lock (its row references the
    // workload), and its insert then fails; one committed before it is counted below.
    w.exec_params("SELECT 1 FROM workloads WHERE id = $1 FOR UPDATE", wl->id);
    if (Status st = CheckWorkloadDeletable(wl->name, LoadHistory(w, wl->id)); !st.ok()) return st;
    // What a workload without history may have beside its config versions: a goal, a watch
    // (hypotheses, batches and regressions need baselines or runs). Its spec revisions stay.
    w.exec_params0("DELETE FROM goals WHERE workload_id = $1", wl->id);
    w.exec_params0("DELETE FROM watches WHERE workload_id = $1", wl->id);
    w.exec_params0("DELETE FROM config_versions WHERE workload_id = $1", wl->id);
    w.exec_params0("DELETE FROM workloads WHERE id = $1", wl->id);
    Audit(w, actor, "workload.deleted", "workload", wl->id,
          {{"name", wl->name},
           {"spec_revision", wl->spec_revision},
           {"config_version", wl->config_version}});
    return *wl;
  });
}

Result<WorkloadRow> Store::SetWorkloadArchived(const std::string& name, bool archived,
                                               const std::string& actor) {
  return InTx<WorkloadRow>(pool_, clock_, [&](pqxx::work& w) -> Result<WorkloadRow> {
    auto wl = LoadWorkload(w, name);
    if (!wl.ok()) return wl.status();
    w.exec_params("SELECT 1 FROM workloads WHERE id = $1 FOR UPDATE", wl->id);
    auto now = LoadWorkload(w, name);  // as of the lock
    if (!now.ok()) return now.status();
    if (now->archived() == archived) return now;
    if (archived)
      w.exec_params0(
          "UPDATE workloads SET archived_at = tunectl_now(), archived_by = $2 WHERE id = $1",
          wl->id, actor);
    else
      w.exec_params0("UPDATE workloads SET archived_at = NULL, archived_by = NULL WHERE id = $1",
                     wl->id);
    Audit(w, actor, archived ? "workload.archived" : "workload.unarchived", "workload", wl->id,
          {{"name", wl->name}});
    return LoadWorkload(w, name);
  });
}

Result<ConfigRow> Store::GetConfig(const std::string& workload) {
  return InTx<ConfigRow>(pool_, clock_, [&](pqxx::work& w) -> Result<ConfigRow> {
    auto wl = ResolveWorkload(w, workload);
    if (!wl.ok()) return wl.status();
    ConfigRow c;
    c.workload = wl->name;
    c.spec_json = wl->spec_json;
    for (const auto& r : w.exec_params(
             "SELECT version AS version, params::text AS params, COALESCE(change::text, '') AS "
             "change, tunectl_ts(created_at) AS created_at, is_current AS is_current FROM "
             "config_versions WHERE workload_id = $1 ORDER BY version",
             wl->id)) {
      ConfigVersionRow v;
      v.version = r["version"].as<int>();
      v.params = JsonToMap(r["params"].as<std::string>());
      v.created_at = r["created_at"].as<std::string>();
      v.current = r["is_current"].as<bool>();
      if (const std::string ch = r["change"].as<std::string>(); !ch.empty()) {
        auto j = json::parse(ch, nullptr, false);
        if (j.contains("to")) {
          auto parsed = ChangeFromJson(ch);
          if (parsed.ok()) v.change = *parsed;
        }
        v.experiment_id = j.value("experiment", int64_t{0});
        v.reason = j.contains("forced") ? "forced: " + j.value("forced", std::string())
                                        : j.value("reason", std::string());
      } else {
        v.reason = "workload defaults";
      }
      c.lineage.push_back(v);
    }
    return c;
  });
}

}  // namespace tunectl

#include "server/store/migrations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "tests/db/test_db.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

// The recorded history and the public schema's relations and constraints: what a refused
// ApplyMigrations must leave as it was.
std::string Fingerprint(TestDb& db) {
  return db.Scalar(
      "SELECT (SELECT string_agg(version || ':' || COALESCE(checksum, ''), ',' ORDER BY version) "
      "FROM schema_migrations) || ' | ' || (SELECT string_agg(relname, ',' ORDER BY relname) FROM "
      "pg_class WHERE relnamespace = 'public'::regnamespace) || ' | ' || (SELECT "
      "string_agg(conname, ',' ORDER BY conname) FROM pg_constraint WHERE connamespace = "
      "'public'::regnamespace)");
}

// All embedded migrations but the newest, as the previous binary knew them.
MigrationList AllButNewest() {
  const MigrationList& all = EmbeddedMigrations();
  return MigrationList(all.begin(), all.end() - 1);
}

// "t" when schema_migrations records `name` with the md5 of `sql`.
std::string RecordedWithChecksumOf(TestDb& db, const std::string& name, const std::string& sql) {
  pqxx::connection c(db.dsn());
  pqxx::nontransaction n(c);
  auto r = n.exec_params(
      "SELECT (checksum IS NOT DISTINCT FROM md5($2))::text FROM schema_migrations WHERE "
      "version = $1",
      name, sql);
  return r.empty() ? "missing" : r[0][0].as<std::string>();
}

TEST(Migrations, ApplyTwiceWithoutError) {
  TUNECTL_TEST_DB(db);
  auto again = ApplyMigrations(db->pool(), EmbeddedMigrations());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, 0);
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM schema_migrations"),
            std::to_string(EmbeddedMigrations().size()));
}

TEST(Migrations, ConcurrentServersDoNotRace) {
  TUNECTL_TEST_EMPTY_DB(db);
  ASSERT_EQ(db->Scalar("SELECT to_regclass('schema_migrations') IS NULL"), "t");
  // Two servers, each with its own pool, migrate the same empty database at once.
  std::vector<std::unique_ptr<ConnectionPool>> pools;
  for (int i = 0; i < 2; ++i) {
    auto p = ConnectionPool::Open(db->dsn(), 2);
    ASSERT_TRUE(p.ok()) << p.status().message();
    pools.push_back(std::move(*p));
  }
  std::vector<Result<int>> results(2, Status::Internal("not run"));
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&, i] { results[i] = ApplyMigrations(*pools[i], EmbeddedMigrations()); });
  for (auto& t : ts) t.join();
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*results[0] + *results[1], static_cast<int>(EmbeddedMigrations().size()));
  std::string names;
  for (const auto& m : EmbeddedMigrations()) names += (names.empty() ? "" : ",") + m.first;
  EXPECT_EQ(db->Scalar("SELECT string_agg(version, ',' ORDER BY version) FROM schema_migrations"),
            names);
}

TEST(Migrations, RecordsTheChecksumOfEachMigrationsText) {
  TUNECTL_TEST_DB(db);
  for (const auto& [name, sql] : EmbeddedMigrations())
    EXPECT_EQ(RecordedWithChecksumOf(*db, name, sql), "true") << name;
}

TEST(Migrations, RefusesADatabaseWithANewerMigration) {
  TUNECTL_TEST_EMPTY_DB(db);
  ASSERT_GE(EmbeddedMigrations().size(), 2u);
  ASSERT_TRUE(ApplyMigrations(db->pool(), AllButNewest()).ok());
  db->Scalar("INSERT INTO schema_migrations(version, checksum) VALUES ('9999_future.sql', 'x')");
  const std::string before = Fingerprint(*db);

  auto applied = ApplyMigrations(db->pool(), EmbeddedMigrations());
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(applied.status().message(),
              HasSubstr("database schema is newer than this binary: migration 9999_future.sql is "
                        "applied but this tunectl-server knows up to " +
                        EmbeddedMigrations().back().first + "; upgrade tunectl-server"));
  EXPECT_EQ(Fingerprint(*db), before);  // the newest embedded migration was not applied
}

TEST(Migrations, RefusesAChangedMigration) {
  TUNECTL_TEST_EMPTY_DB(db);
  ASSERT_GE(EmbeddedMigrations().size(), 3u);
  ASSERT_TRUE(ApplyMigrations(db->pool(), AllButNewest()).ok());
  const std::string before = Fingerprint(*db);
  MigrationList edited = EmbeddedMigrations();
  edited[2].second += "\n-- edited after it was applied\n";

  auto applied = ApplyMigrations(db->pool(), edited);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(
      applied.status().message(),
      HasSubstr("migration " + edited[2].first + " was changed after it was applied (checksum "));
  EXPECT_THAT(applied.status().message(), HasSubstr("migrations are forward-only: add a new one"));
  EXPECT_EQ(Fingerprint(*db), before);  // neither re-recorded nor the newest applied
}

TEST(Migrations, RefusalReleasesTheAdvisoryLock) {
  TUNECTL_TEST_DB(db);
  db->Scalar("INSERT INTO schema_migrations(version, checksum) VALUES ('9999_future.sql', 'x')");
  ASSERT_FALSE(ApplyMigrations(db->pool(), EmbeddedMigrations()).ok());
  // The pool keeps the connection open, so a leaked session lock would still be listed.
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = "
                       "l.database WHERE l.locktype = 'advisory' AND d.datname = "
                       "current_database()"),
            "0");
}

TEST(Migrations, AddsChecksumsToAnOldDatabase) {
  TUNECTL_TEST_EMPTY_DB(db);
  // What the previous binary left: no checksum column, all but the newest migration applied.
  db->Scalar(
      "CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT "
      "NULL DEFAULT now())");
  {
    pqxx::connection c(db->dsn());
    for (const auto& [name, sql] : AllButNewest()) {
      pqxx::work w(c);
      w.exec(sql);
      w.exec_params0("INSERT INTO schema_migrations(version) VALUES ($1)", name);
      w.commit();
    }
  }

  auto applied = ApplyMigrations(db->pool(), EmbeddedMigrations());
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  EXPECT_EQ(*applied, 1);
  for (const auto& [name, sql] : EmbeddedMigrations())
    EXPECT_EQ(RecordedWithChecksumOf(*db, name, sql), "true") << name;
}

// Schema invariants (migrations/0006_invariants.sql): rows made by the Store, then plain SQL
// that breaks one rule.

WorkloadSpec Spec() {
  auto s = ParseWorkloadSpec(R"(
name: demo
command: [train, "{nw}"]
params:
  nw: {type: int, default: 1, min: 0, max: 64}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
run: {repeats: 2, warmup_steps: 0}
)");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

struct Seeded {
  std::string workload, config, baseline, experiment;
};

// A workload, a completed baseline (runs idx 1 and 2) and a running experiment against it (nw=8,
// queued runs idx 1 to 4), all made by the Store.
Seeded Seed(TestDb& db) {
  Store& st = db.store();
  EXPECT_TRUE(st.ApplyWorkload(Spec(), "t", "user:t").ok());
  auto agent = st.RegisterAgent("n1", {}, 100, "t", "s1");
  auto baseline = st.CreateBaseline("demo", 2, "user:t");
  EXPECT_TRUE(agent.ok() && baseline.ok());
  if (!agent.ok() || !baseline.ok()) return {};
  auto plans = st.ClaimRuns(*agent, {}, 100);
  EXPECT_TRUE(plans.ok()) << plans.status().message();
  for (const auto& p : plans.ok() ? *plans : std::vector<LaunchPlan>{}) {
    std::vector<SampleIn> samples;
    for (int k = 1; k <= 5; ++k) samples.push_back({"sps", k, 100.0 + k % 2, k});
    EXPECT_TRUE(st.StoreMetricBatch(p.run_id, p.attempt, 1, samples).ok());
    EXPECT_TRUE(st.FinishRun(p.run_id, p.attempt, {0, 0, "", "", 1, 5}, "agent:t").ok());
  }
  auto experiment = st.CreateExperiment({"", *baseline, {"nw=8"}, 0, 4}, "user:t");
  EXPECT_TRUE(experiment.ok()) << experiment.status().message();
  const std::string b = std::to_string(*baseline);
  return {db.Scalar("SELECT workload_id FROM baselines WHERE id = " + b),
          db.Scalar("SELECT config_id FROM baselines WHERE id = " + b), b,
          std::to_string(experiment.ok() ? *experiment : 0)};
}

std::string InsertRun(TestDb& db, const Seeded& s, const std::string& baseline,
                      const std::string& experiment, int idx) {
  return db.Scalar(
      "INSERT INTO runs(workload_id, config_id, baseline_id, experiment_id, idx, params, launch, "
      "state) VALUES (" +
      s.workload + ", " + s.config + ", " + baseline + ", " + experiment + ", " +
      std::to_string(idx) + ", '{}', '{}', 'queued') RETURNING id");
}

std::string InsertLog(TestDb& db, const Seeded& s, const std::string& kind) {
  return db.Scalar(
      "INSERT INTO tuning_log(workload_id, experiment_id, kind, actor, entry) VALUES (" +
      s.workload + ", " + s.experiment + ", '" + kind + "', 't', '{}') RETURNING id");
}

TEST(Schema, RunWithNeitherBaselineNorExperimentFails) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  EXPECT_THROW(InsertRun(*db, s, "NULL", "NULL", 9), pqxx::check_violation);
}

TEST(Schema, RunWithBothBaselineAndExperimentFails) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  EXPECT_THROW(InsertRun(*db, s, s.baseline, s.experiment, 9), pqxx::check_violation);
}

TEST(Schema, SecondRunWithTheSameIdxInABaselineFails) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  EXPECT_NO_THROW(InsertRun(*db, s, s.baseline, "NULL", 3));
  EXPECT_THROW(InsertRun(*db, s, s.baseline, "NULL", 1), pqxx::unique_violation);
}

TEST(Schema, SecondRunWithTheSameIdxInAnExperimentFails) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  EXPECT_NO_THROW(InsertRun(*db, s, "NULL", s.experiment, 9));  // 4 pairs queued: idx 1..8
  EXPECT_THROW(InsertRun(*db, s, "NULL", s.experiment, 1), pqxx::unique_violation);
}

TEST(Schema, SecondExperimentForOneHypothesisFails) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  Store& st = db->store();
  auto h =
      st.CreateHypothesis({"", std::stoll(s.baseline), {"nw=4"}, "sps +10%", "", ""}, "user:t");
  ASSERT_TRUE(h.ok()) << h.status().message();
  ASSERT_TRUE(st.CreateExperiment({"", 0, {}, *h, 4}, "user:t").ok());
  // The Store refuses a locked hypothesis; the schema refuses the second experiment regardless.
  EXPECT_THROW(db->Scalar("UPDATE experiments SET hypothesis_id = " + std::to_string(*h) +
                          " WHERE id = " + s.experiment + " RETURNING id"),
               pqxx::unique_violation);
}

TEST(Schema, SecondDecidedLogEntryForAnExperimentFails) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  ASSERT_NO_THROW(InsertLog(*db, s, "decided"));
  EXPECT_THROW(InsertLog(*db, s, "decided"), pqxx::unique_violation);
}

TEST(Schema, SecondFrozenLogEntryForAnExperimentFails) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  ASSERT_NO_THROW(InsertLog(*db, s, "frozen"));
  EXPECT_THROW(InsertLog(*db, s, "frozen"), pqxx::unique_violation);
}

TEST(Schema, AnExperimentHasOneDecidedAndOneFrozenEntry) {
  TUNECTL_TEST_DB(db);
  const Seeded s = Seed(*db);
  EXPECT_NO_THROW(InsertLog(*db, s, "decided"));
  EXPECT_NO_THROW(InsertLog(*db, s, "frozen"));
  EXPECT_EQ(db->Scalar("SELECT count(*) FROM tuning_log WHERE experiment_id = " + s.experiment),
            "2");
}

}  // namespace
}  // namespace tunectl

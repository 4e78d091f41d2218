-- One clock, analyses fixed to the spec they started under, and a batch's correction as the
-- decision (issue "one rule in one place").

-- The server's clock for the transaction: Store sets tunectl.now (Unix ms) at the start of each
-- transaction that decides anything; without it (psql, ingest) this is now().
CREATE FUNCTION tunectl_now() RETURNS timestamptz LANGUAGE sql STABLE AS
$$ SELECT COALESCE(to_timestamp(NULLIF(current_setting('tunectl.now', true), '')::double precision
                                / 1000), now()) $$;

ALTER TABLE workloads ALTER COLUMN created_at SET DEFAULT tunectl_now(),
                      ALTER COLUMN updated_at SET DEFAULT tunectl_now();
ALTER TABLE config_versions ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE agents ALTER COLUMN last_seen SET DEFAULT tunectl_now(),
                   ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE baselines ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE runs ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE audit_events ALTER COLUMN at SET DEFAULT tunectl_now();
ALTER TABLE hypotheses ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE experiments ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE tuning_log ALTER COLUMN at SET DEFAULT tunectl_now();
ALTER TABLE schedules ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE batches ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE watches ALTER COLUMN created_at SET DEFAULT tunectl_now();
ALTER TABLE regressions ALTER COLUMN detected_at SET DEFAULT tunectl_now();

-- Every revision of a workload's spec, so a baseline or experiment is analysed with the metrics,
-- roles, min effects and tolerances it was started under.
CREATE TABLE workload_revisions (
  workload_id bigint NOT NULL REFERENCES workloads(id),
  revision    int NOT NULL,
  spec        json NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT tunectl_now(),
  PRIMARY KEY (workload_id, revision)
);
INSERT INTO workload_revisions(workload_id, revision, spec)
  SELECT id, spec_revision, spec FROM workloads;
CREATE TRIGGER workload_revisions_append_only BEFORE UPDATE OR DELETE ON workload_revisions
  FOR EACH ROW EXECUTE FUNCTION tunectl_append_only();

ALTER TABLE baselines ADD COLUMN spec_revision int;
ALTER TABLE experiments ADD COLUMN spec_revision int;
UPDATE baselines b SET spec_revision = w.spec_revision FROM workloads w WHERE w.id = b.workload_id;
UPDATE experiments e SET spec_revision = w.spec_revision FROM workloads w
  WHERE w.id = e.workload_id;
ALTER TABLE baselines ALTER COLUMN spec_revision SET NOT NULL;
ALTER TABLE experiments ALTER COLUMN spec_revision SET NOT NULL;
ALTER TABLE baselines ADD FOREIGN KEY (workload_id, spec_revision)
  REFERENCES workload_revisions(workload_id, revision);
ALTER TABLE experiments ADD FOREIGN KEY (workload_id, spec_revision)
  REFERENCES workload_revisions(workload_id, revision);

-- A batch member whose sequential design has stopped waits as 'measured' until its batch is
-- complete; then the batch's correction is its decision.
ALTER TABLE experiments DROP CONSTRAINT experiments_state_check;
ALTER TABLE experiments ADD CONSTRAINT experiments_state_check
  CHECK (state IN ('running', 'measured', 'decided', 'frozen', 'closed', 'cancelled'));
ALTER TABLE batches ADD COLUMN finished_at timestamptz;

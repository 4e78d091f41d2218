-- Issue 16: the verbs a user reaches for in week one. A workload with history is archived (kept,
-- hidden from `workload list`, no new baselines, experiments or regression runs); one without
-- history may be deleted. An agent that is gone may be removed from `agent list` (its row stays
-- for the runs that name it, and comes back when the agent registers again).
ALTER TABLE workloads ADD COLUMN archived_at timestamptz,
                      ADD COLUMN archived_by text;
ALTER TABLE agents ADD COLUMN removed_at timestamptz;
-- A deleted workload's spec revisions stay: the table is append-only (its trigger refuses a
-- DELETE, and the server's role has no DELETE on it), so it no longer references workloads; a
-- workload id is never reused (bigserial).
ALTER TABLE workload_revisions DROP CONSTRAINT workload_revisions_workload_id_fkey;

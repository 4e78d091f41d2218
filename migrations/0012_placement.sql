-- Where runs go (issue 12): an agent says which executor it drives and whether its slots are
-- isolated; a run records where it ran (node, slot), the cluster's id for it (Slurm job id,
-- Kubernetes Job name), how it was placed, and why the cluster keeps it pending.
ALTER TABLE agents ADD COLUMN isolated_slots boolean NOT NULL DEFAULT false;
ALTER TABLE agents ADD COLUMN executor text NOT NULL DEFAULT 'local';
ALTER TABLE runs ADD COLUMN node text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN slot integer NOT NULL DEFAULT -1;
ALTER TABLE runs ADD COLUMN external_id text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN placement text NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN pending_reason text NOT NULL DEFAULT '';
